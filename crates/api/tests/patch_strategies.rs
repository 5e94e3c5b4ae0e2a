//! Strategic merge patch strategies (kapi-patch) read from built-in kinds' schemas.

use kapi_patch::PatchType;
use kapi_patch::{ListStrategy, MapStrategy, PatchSchema};
use serde_json::{Value, json};

fn smp(kind: (&str, &str), original: Value, patch: Value) -> Value {
    let schema = kapi_api::kind_schema(kind.0, "v1", kind.1).unwrap();
    let body = serde_json::to_vec(&patch).unwrap();
    kapi_patch::apply(PatchType::StrategicMerge, &original, &body, &schema).unwrap()
}

fn deployment(containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"template": {"spec": {"containers": containers}}}})
}

fn containers(object: &Value) -> &Value {
    &object["spec"]["template"]["spec"]["containers"]
}

#[test]
fn strategies_come_from_the_schema() {
    let pod = kapi_api::kind_schema("", "v1", "Pod").unwrap();
    let cases: &[(&[&str], ListStrategy)] = &[
        (&["spec", "containers"], ListStrategy::merge_by("name")),
        (
            &["spec", "containers", "ports"],
            ListStrategy::merge_by("containerPort"),
        ),
        (
            &["spec", "containers", "env"],
            ListStrategy::merge_by("name"),
        ),
        (&["spec", "containers", "args"], ListStrategy::Replace),
        (&["spec", "tolerations"], ListStrategy::Replace),
        (&["metadata", "finalizers"], ListStrategy::set()),
        (
            &["metadata", "ownerReferences"],
            ListStrategy::merge_by("uid"),
        ),
        (&["spec", "volumes"], ListStrategy::merge_by("name")),
        (&["spec", "nothing"], ListStrategy::Replace),
    ];
    for (path, strategy) in cases {
        assert_eq!(&pod.list_strategy(path), strategy, "{path:?}");
    }
    assert_eq!(pod.map_strategy(&["spec", "volumes"]), MapStrategy::Merge);
    let deployment = kapi_api::kind_schema("apps", "v1", "Deployment").unwrap();
    assert_eq!(
        deployment.list_strategy(&["spec", "template", "spec", "containers", "volumeMounts"]),
        ListStrategy::merge_by("mountPath")
    );
}

#[test]
fn containers_merge_by_name() {
    let original = deployment(json!([
        {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}, {"containerPort": 81}]},
        {"name": "b", "image": "b:1"}
    ]));
    let patched = smp(
        ("apps", "Deployment"),
        original,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "b", "image": "b:2"},
            {"name": "a", "ports": [{"containerPort": 81, "protocol": "UDP"}]}
        ]}}}}),
    );
    // Without $setElementOrder the patch's elements come first, in the patch's order.
    assert_eq!(
        containers(&patched),
        &json!([
            {"name": "b", "image": "b:2"},
            {"name": "a", "image": "a:1", "ports": [
                {"containerPort": 80}, {"containerPort": 81, "protocol": "UDP"}
            ]}
        ])
    );
}

#[test]
fn delete_directive_removes_a_container() {
    let original = deployment(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]));
    let patched = smp(
        ("apps", "Deployment"),
        original,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "$patch": "delete"}
        ]}}}}),
    );
    assert_eq!(containers(&patched), &json!([{"name": "b", "image": "b"}]));
}

#[test]
fn set_element_order_orders_the_merged_list() {
    let original = deployment(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]));
    let patched = smp(
        ("apps", "Deployment"),
        original,
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "a:2"}]
        }}}}),
    );
    assert_eq!(
        containers(&patched),
        &json!([{"name": "b", "image": "b"}, {"name": "a", "image": "a:2"}])
    );
}

#[test]
fn retain_keys_on_the_deployment_strategy() {
    let original = json!({"spec": {"strategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}
    }}});
    let patched = smp(
        ("apps", "Deployment"),
        original,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(patched["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn delete_from_primitive_list_on_pod_finalizers() {
    let original = json!({"metadata": {"name": "p", "finalizers": ["a", "b", "c"]},
                          "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let patched = smp(
        ("", "Pod"),
        original,
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["d"]}}),
    );
    assert_eq!(patched["metadata"]["finalizers"], json!(["d", "a", "c"]));
}

#[test]
fn pod_volumes_and_env_merge_by_name() {
    let original = json!({"spec": {
        "volumes": [{"name": "v1", "emptyDir": {}}],
        "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]
    }});
    let patched = smp(
        ("", "Pod"),
        original,
        json!({"spec": {
            "volumes": [{"name": "v2", "emptyDir": {}}],
            "containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]
        }}),
    );
    assert_eq!(
        patched["spec"]["volumes"],
        json!([{"name": "v2", "emptyDir": {}}, {"name": "v1", "emptyDir": {}}])
    );
    assert_eq!(
        patched["spec"]["containers"][0]["env"],
        json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
    );
}
