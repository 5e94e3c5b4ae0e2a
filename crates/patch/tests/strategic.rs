//! Strategic merge patch vectors: each directive and list strategy, the patches kubectl
//! apply and edit send for this resources, and upstream's errors.

use kapi_patch::{
    ListStrategy, MapStrategy, MetadataSchema, NoSchema, PatchError, PatchSchema, PatchType,
    UNPROCESSABLE_MESSAGE, apply,
};
use kapi_schema::KindSchema;
use serde_json::{Value, json};

fn smp(original: &Value, patch: &Value, schema: &dyn PatchSchema) -> Result<Value, PatchError> {
    let body = serde_json::to_vec(patch).expect("patch");
    apply(PatchType::StrategicMerge, original, &body, schema)
}

/// The schema of the core/v1 kind `kind`, as the server patches it.
fn core_v1(kind: &str) -> KindSchema {
    kapi_api::kind_schema("", "v1", kind).unwrap_or_else(|| panic!("core/v1 {kind} has a schema"))
}

/// (name, original, patch, expected result).
type Vector = (&'static str, Value, Value, Value);

fn run(schema: &dyn PatchSchema, vectors: Vec<Vector>) {
    let mut failures = Vec::new();
    for (name, original, patch, expected) in vectors {
        match smp(&original, &patch, schema) {
            Ok(got) if got == expected => {}
            Ok(got) => failures.push(format!("{name}: expected {expected}, got {got}")),
            Err(err) => failures.push(format!("{name}: unexpected error {err:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A schema with one list of each kind, for the directive tables.
struct Lists;

impl PatchSchema for Lists {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match path.last().copied() {
            Some("byName") => ListStrategy::merge_by("name"),
            Some("set") => ListStrategy::set(),
            _ => ListStrategy::Replace,
        }
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        if path == ["raw"] {
            MapStrategy::Replace
        } else {
            MapStrategy::Merge
        }
    }
}

#[test]
fn maps() {
    run(
        &Lists,
        vec![
            (
                "merge recursively",
                json!({"a": {"b": 1, "c": {"d": 2}}}),
                json!({"a": {"c": {"e": 3}}}),
                json!({"a": {"b": 1, "c": {"d": 2, "e": 3}}}),
            ),
            (
                "null deletes a member",
                json!({"a": 1, "b": 2}),
                json!({"a": null}),
                json!({"b": 2}),
            ),
            (
                "null of a missing member is ignored",
                json!({"a": 1}),
                json!({"z": null}),
                json!({"a": 1}),
            ),
            (
                "nulls inside a new member are dropped",
                json!({}),
                json!({"a": {"b": null, "c": 1, "d": [{"e": null}]}}),
                json!({"a": {"c": 1, "d": [{}]}}),
            ),
            (
                "a scalar replaces an object",
                json!({"a": {"b": 1}}),
                json!({"a": "x"}),
                json!({"a": "x"}),
            ),
            (
                "an object replaces a scalar, without its nulls",
                json!({"a": "x"}),
                json!({"a": {"b": 1, "c": null}}),
                json!({"a": {"b": 1}}),
            ),
            (
                "patchStrategy replace on an object",
                json!({"raw": {"a": 1, "b": 2}}),
                json!({"raw": {"c": 3}}),
                json!({"raw": {"c": 3}}),
            ),
            (
                "$patch: replace on an object",
                json!({"a": {"b": 1, "c": 2}, "x": 1}),
                json!({"a": {"$patch": "replace", "d": 4}}),
                json!({"a": {"d": 4}, "x": 1}),
            ),
            (
                "$patch: replace at the root",
                json!({"a": 1, "b": 2}),
                json!({"$patch": "replace", "c": 3}),
                json!({"c": 3}),
            ),
            (
                "$patch: delete on an object leaves it empty",
                json!({"a": {"b": 1}, "x": 1}),
                json!({"a": {"$patch": "delete"}}),
                json!({"a": {}, "x": 1}),
            ),
            (
                "$patch: delete on a missing object adds nothing",
                json!({"x": 1}),
                json!({"a": {"$patch": "delete"}}),
                json!({"x": 1}),
            ),
            (
                "$patch: delete on a scalar member deletes it",
                json!({"a": "s", "x": 1}),
                json!({"a": {"$patch": "delete"}}),
                json!({"x": 1}),
            ),
            (
                "$retainKeys drops unlisted members",
                json!({"s": {"type": "A", "a": {"x": 1}, "b": 2}}),
                json!({"s": {"$retainKeys": ["type", "c"], "type": "C", "c": 3}}),
                json!({"s": {"type": "C", "c": 3}}),
            ),
            (
                "$retainKeys with a null for an unlisted member",
                json!({"s": {"a": 1, "b": 2}}),
                json!({"s": {"$retainKeys": ["a"], "b": null}}),
                json!({"s": {"a": 1}}),
            ),
            (
                "unknown $ keys are kept as members, as upstream does",
                json!({"a": 1}),
                json!({"$foo": "bar"}),
                json!({"a": 1, "$foo": "bar"}),
            ),
            (
                "a null patch changes nothing",
                json!({"a": 1}),
                Value::Null,
                json!({"a": 1}),
            ),
            (
                "an empty patch changes nothing",
                json!({"a": 1}),
                json!({}),
                json!({"a": 1}),
            ),
        ],
    );
}

#[test]
fn lists() {
    run(
        &Lists,
        vec![
            (
                "atomic list replaced",
                json!({"atomic": [1, 2, 3]}),
                json!({"atomic": [4]}),
                json!({"atomic": [4]}),
            ),
            (
                "atomic list of objects replaced as sent",
                json!({"atomic": [{"name": "a", "v": 1}]}),
                json!({"atomic": [{"name": "a"}, {"name": "b", "x": null}]}),
                json!({"atomic": [{"name": "a"}, {"name": "b", "x": null}]}),
            ),
            (
                "set adds and keeps order",
                json!({"set": ["a", "b"]}),
                json!({"set": ["b", "c"]}),
                json!({"set": ["a", "b", "c"]}),
            ),
            (
                "set in patch order first",
                json!({"set": ["a", "b", "c"]}),
                json!({"set": ["c", "a"]}),
                json!({"set": ["b", "c", "a"]}),
            ),
            (
                "merge by key merges and appends",
                json!({"byName": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}),
                json!({"byName": [{"name": "b", "v": 3}, {"name": "c", "v": 4}]}),
                json!({"byName": [{"name": "a", "v": 1}, {"name": "b", "v": 3}, {"name": "c", "v": 4}]}),
            ),
            (
                "merge by key deletes a member of an element",
                json!({"byName": [{"name": "a", "v": 1, "w": 2}]}),
                json!({"byName": [{"name": "a", "w": null}]}),
                json!({"byName": [{"name": "a", "v": 1}]}),
            ),
            (
                "$patch: delete element",
                json!({"byName": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}),
                json!({"byName": [{"name": "a", "$patch": "delete"}]}),
                json!({"byName": [{"name": "b"}]}),
            ),
            (
                "$patch: replace element replaces the list",
                json!({"byName": [{"name": "a", "v": 1}, {"name": "b"}]}),
                json!({"byName": [{"$patch": "replace"}, {"name": "c"}]}),
                json!({"byName": [{"name": "c"}]}),
            ),
            (
                "$deleteFromPrimitiveList",
                json!({"set": ["a", "b", "c", "b"]}),
                json!({"$deleteFromPrimitiveList/set": ["b", "z"]}),
                json!({"set": ["a", "c"]}),
            ),
            (
                "$deleteFromPrimitiveList on a missing list",
                json!({"x": 1}),
                json!({"$deleteFromPrimitiveList/set": ["b"]}),
                json!({"x": 1}),
            ),
            (
                "$setElementOrder orders a set",
                json!({"set": ["a", "b", "c"]}),
                json!({"$setElementOrder/set": ["c", "b", "a"]}),
                json!({"set": ["c", "b", "a"]}),
            ),
            (
                "$setElementOrder with additions and deletions of a set",
                json!({"set": ["a", "b", "c"]}),
                json!({
                    "$setElementOrder/set": ["d", "a", "c"],
                    "$deleteFromPrimitiveList/set": ["b"],
                    "set": ["d"]
                }),
                json!({"set": ["d", "a", "c"]}),
            ),
            (
                "$setElementOrder orders merged objects, server-only ones kept in place",
                json!({"byName": [{"name": "a", "v": 1}, {"name": "s"}, {"name": "b"}]}),
                json!({
                    "$setElementOrder/byName": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
                    "byName": [{"name": "a", "v": 2}, {"name": "c"}]
                }),
                json!({"byName": [{"name": "s"}, {"name": "b"}, {"name": "a", "v": 2}, {"name": "c"}]}),
            ),
            (
                "$setElementOrder for a list the object does not have yet",
                json!({}),
                json!({
                    "$setElementOrder/byName": [{"name": "b"}, {"name": "a"}],
                    "byName": [{"name": "b"}, {"name": "a"}, {"name": "x", "$patch": "delete"}]
                }),
                json!({"byName": [{"name": "b"}, {"name": "a"}]}),
            ),
            (
                "a null list is deleted",
                json!({"set": ["a"], "x": 1}),
                json!({"set": null}),
                json!({"x": 1}),
            ),
            (
                "a list replaces a scalar",
                json!({"set": "a"}),
                json!({"set": ["b"]}),
                json!({"set": ["b"]}),
            ),
        ],
    );
}

#[test]
fn no_schema_lists_are_atomic() {
    run(
        &NoSchema,
        vec![(
            "finalizers replaced without metadata schema",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
        )],
    );
}

fn configmap() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm",
            "namespace": "default",
            "uid": "2f3c1d5e-0000-4000-8000-000000000001",
            "resourceVersion": "42",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"labels\":{\"app\":\"web\",\"tier\":\"front\"},\"name\":\"cm\",\"namespace\":\"default\"}}\n"
            },
            "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update"}]
        },
        "data": {"a": "1", "b": "2"}
    })
}

#[test]
fn kubectl_apply_configmap() {
    let last_applied = "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"c\":\"3\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"labels\":{\"app\":\"api\"},\"name\":\"cm\",\"namespace\":\"default\"}}\n";
    // What kubectl apply sends when the file changes label app, drops label tier and data
    // key b, and adds data key c.
    let patch = json!({
        "data": {"b": null, "c": "3"},
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied},
            "labels": {"app": "api", "tier": null}
        }
    });
    let mut expected = configmap();
    expected["data"] = json!({"a": "1", "c": "3"});
    expected["metadata"]["labels"] = json!({"app": "api"});
    expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        json!(last_applied);
    let schema = core_v1("ConfigMap");
    assert_eq!(smp(&configmap(), &patch, &schema).unwrap(), expected);
}

#[test]
fn metadata_lists() {
    let schema = core_v1("ConfigMap");
    let owner = |uid: &str, name: &str| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid});
    run(
        &schema,
        vec![
            (
                "kubectl edit adds a finalizer",
                json!({"metadata": {"finalizers": ["a.io/x"]}}),
                json!({"metadata": {"$setElementOrder/finalizers": ["a.io/x", "b.io/y"], "finalizers": ["b.io/y"]}}),
                json!({"metadata": {"finalizers": ["a.io/x", "b.io/y"]}}),
            ),
            (
                "kubectl edit removes a finalizer",
                json!({"metadata": {"finalizers": ["a.io/x", "b.io/y"]}}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"], "$setElementOrder/finalizers": ["b.io/y"]}}),
                json!({"metadata": {"finalizers": ["b.io/y"]}}),
            ),
            (
                "finalizers patch merges as a set",
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"finalizers": ["a", "b"]}}),
            ),
            (
                "ownerReferences merge by uid",
                json!({"metadata": {"ownerReferences": [owner("u1", "one")]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "u1", "controller": true}, owner("u2", "two")]}}),
                json!({"metadata": {"ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "one", "uid": "u1", "controller": true},
                    owner("u2", "two")
                ]}}),
            ),
            (
                "ownerReferences $patch: delete by uid",
                json!({"metadata": {"ownerReferences": [owner("u1", "one"), owner("u2", "two")]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "u1", "$patch": "delete"}]}}),
                json!({"metadata": {"ownerReferences": [owner("u2", "two")]}}),
            ),
            (
                "managedFields are atomic",
                json!({"metadata": {"managedFields": [{"manager": "a"}, {"manager": "b"}]}}),
                json!({"metadata": {"managedFields": [{"manager": "c"}]}}),
                json!({"metadata": {"managedFields": [{"manager": "c"}]}}),
            ),
            (
                "deleting all labels",
                json!({"metadata": {"labels": {"a": "1"}, "name": "x"}}),
                json!({"metadata": {"labels": null}}),
                json!({"metadata": {"name": "x"}}),
            ),
        ],
    );
}

#[test]
fn serviceaccount_and_namespace_lists() {
    // ServiceAccount's `secrets` merge by name (core/v1 struct tags); the rest is atomic.
    let sa = core_v1("ServiceAccount");
    run(
        &sa,
        vec![
            (
                "kubectl apply adds a secret",
                json!({"secrets": [{"name": "s1"}], "imagePullSecrets": [{"name": "p1"}]}),
                json!({"$setElementOrder/secrets": [{"name": "s1"}, {"name": "s2"}], "secrets": [{"name": "s2"}]}),
                json!({"secrets": [{"name": "s1"}, {"name": "s2"}], "imagePullSecrets": [{"name": "p1"}]}),
            ),
            (
                "kubectl apply removes a secret",
                json!({"secrets": [{"name": "s1"}, {"name": "s2"}]}),
                json!({"$setElementOrder/secrets": [{"name": "s2"}], "secrets": [{"$patch": "delete", "name": "s1"}]}),
                json!({"secrets": [{"name": "s2"}]}),
            ),
            (
                "imagePullSecrets are atomic",
                json!({"imagePullSecrets": [{"name": "p1"}, {"name": "p2"}]}),
                json!({"imagePullSecrets": [{"name": "p3"}]}),
                json!({"imagePullSecrets": [{"name": "p3"}]}),
            ),
        ],
    );
    // Namespace's `status.conditions` merge by type; `spec.finalizers` is atomic.
    let ns = core_v1("Namespace");
    run(
        &ns,
        vec![
            (
                "namespace conditions merge by type",
                json!({"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}]}}),
                json!({"status": {"conditions": [{"type": "B", "status": "True"}]}}),
                json!({"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}}),
            ),
            (
                "namespace spec.finalizers are atomic",
                json!({"spec": {"finalizers": ["kubernetes", "x"]}}),
                json!({"spec": {"finalizers": ["x"]}}),
                json!({"spec": {"finalizers": ["x"]}}),
            ),
        ],
    );
}

fn error_of(original: Value, patch: Value) -> PatchError {
    smp(&original, &patch, &Lists).expect_err("expected an error")
}

#[test]
fn errors_answer_as_upstream() {
    // (original, patch, status, message); 422s carry upstream's fixed message.
    let cases: Vec<(Value, Value, u16, &str)> = vec![
        (
            json!({}),
            json!([1]),
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            json!({}),
            json!("x"),
            400,
            "json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
        (
            json!({"a": {}}),
            json!({"a": {"$retainKeys": "x"}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            json!({"a": {}}),
            json!({"a": {"$retainKeys": ["b"], "c": 1}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            json!({}),
            json!({"$setElementOrderX/set": []}),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            json!({}),
            json!({"$deleteFromPrimitiveList": ["a"]}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            json!({"set": [["a"]]}),
            json!({"set": [["b"]]}),
            422,
            UNPROCESSABLE_MESSAGE,
        ),
        (
            json!({"a": {}}),
            json!({"a": {"$patch": "merge"}}),
            500,
            "unknown patch type: merge in map: map[$patch:merge]",
        ),
        (
            json!({"a": {}}),
            json!({"a": {"$patch": 1, "b": "c"}}),
            500,
            "unknown patch type: %!s(int64=1) in map: map[$patch:1 b:c]",
        ),
        (
            json!({"byName": [{"name": "a"}]}),
            json!({"byName": [{"$patch": "merge"}]}),
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            json!({"byName": [{"name": "a"}]}),
            json!({"byName": [{"$patch": "bogus", "name": "a"}]}),
            500,
            "unknown patch type: bogus in map: map[$patch:bogus name:a]",
        ),
        (
            json!({"byName": [{"name": "a"}]}),
            json!({"byName": [{"value": "b"}]}),
            500,
            "map: map[value:b] does not contain declared merge key: name",
        ),
        (
            json!({"byName": [{"name": "a"}]}),
            json!({"byName": [{"$patch": "delete"}]}),
            500,
            "map: map[$patch:delete] does not contain declared merge key: name",
        ),
        (
            json!({"set": ["a"]}),
            json!({"set": [1]}),
            500,
            "list element types are not identical: [[a] [1]]",
        ),
        (
            json!({"set": ["a"]}),
            json!({"$setElementOrder/set": "a"}),
            500,
            "expected a []interface {}, but received a string",
        ),
        (
            json!({"set": "a"}),
            json!({"$setElementOrder/set": ["a"]}),
            500,
            "expected a []interface {}, but received a string",
        ),
        (
            json!({"byName": [{"name": "1"}, {"name": "2"}]}),
            json!({"$setElementOrder/byName": [{"name": "1"}, {"name": "2"}], "byName": [{"name": "2"}, {"name": "1", "v": 1}]}),
            500,
            "The order in patch list:\n[map[name:2] map[name:1 v:1]]\n doesn't match $setElementOrder list:\n[map[name:1] map[name:2]]\n",
        ),
    ];
    for (original, patch, status, message) in cases {
        let err = error_of(original.clone(), patch.clone());
        assert_eq!(
            (err.status_code(), err.message().as_str()),
            (status, message),
            "original {original} patch {patch}: {err:?}"
        );
    }
}

#[test]
fn error_status_fields() {
    let err = error_of(json!({"set": [["a"]]}), json!({"set": [["b"]]}));
    assert_eq!(err.reason(), "Invalid");
    assert!(err.has_details());
    assert!(err.causes().is_empty());

    let err = error_of(json!({}), json!({"$deleteFromPrimitiveList": []}));
    assert_eq!((err.reason(), err.has_details()), ("BadRequest", false));

    let err = error_of(json!({"a": {}}), json!({"a": {"$patch": "merge"}}));
    assert_eq!((err.reason(), err.has_details()), ("", false));
}

#[test]
fn metadata_schema_directly() {
    assert_eq!(
        MetadataSchema.list_strategy(&["metadata", "finalizers"]),
        ListStrategy::set()
    );
    assert_eq!(
        MetadataSchema.list_strategy(&["metadata", "ownerReferences"]),
        ListStrategy::merge_by("uid")
    );
    assert_eq!(
        MetadataSchema.list_strategy(&["metadata", "managedFields"]),
        ListStrategy::Replace
    );
    assert_eq!(
        MetadataSchema.list_strategy(&["spec", "finalizers"]),
        ListStrategy::Replace
    );
}
