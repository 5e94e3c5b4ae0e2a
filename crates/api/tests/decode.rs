//! Schema-driven decoding (kapi-schema) of built-in kinds: unknown fields, type errors and
//! duplicates as kube-apiserver's typed decoding reports them.

use kapi_schema::decode::*;
use kapi_schema::{SchemaRef, StrictError};
use serde_json::Value;
use serde_json::json;

/// A built-in kind's root schema, kept for the whole test run.
fn kind(group: &str, version: &str, kind: &str) -> SchemaRef<'static> {
    let schema = kapi_api::kind_schema(group, version, kind).unwrap();
    Box::leak(Box::new(schema)).schema()
}

fn deployment() -> SchemaRef<'static> {
    kind("apps", "v1", "Deployment")
}

fn deployment_with(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec})
}

fn strict(errors: &[StrictError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn unknown_fields_are_dropped_and_reported_with_paths() {
    let mut object = deployment_with(json!({
        "replicas": 2,
        "foo": 1,
        "selector": {"matchLabels": {"app": "x"}, "bar": true},
        "template": {"spec": {"containers": [
            {"name": "a", "image": "i"},
            {"name": "b", "image": "i", "baz": "q", "ports": [{"containerPort": 80, "p": 1}]}
        ]}}
    }));
    object["metadata"]["labels"] = json!({"any": "key"});
    object["status"] = json!({"unknownStatus": 1});
    let errors = decode(&mut object, deployment()).unwrap();
    assert_eq!(
        strict(&errors),
        [
            r#"unknown field "spec.foo""#,
            r#"unknown field "spec.selector.bar""#,
            r#"unknown field "spec.template.spec.containers[1].baz""#,
            r#"unknown field "spec.template.spec.containers[1].ports[0].p""#,
            r#"unknown field "status.unknownStatus""#,
        ]
    );
    assert_eq!(object["spec"].get("foo"), None);
    assert_eq!(
        object["spec"]["template"]["spec"]["containers"][1].get("baz"),
        None
    );
    assert_eq!(object["spec"]["replicas"], 2);
    assert_eq!(object["metadata"]["labels"]["any"], "key");
    assert_eq!(
        strict_message(&errors[..2]),
        r#"strict decoding error: unknown field "spec.foo", unknown field "spec.selector.bar""#
    );
}

#[test]
fn type_errors_have_go_messages() {
    let cases = [
        (
            json!({"replicas": "3"}),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            json!({"replicas": 3000000000i64}),
            "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            json!({"replicas": 1.5}),
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            json!({"paused": "yes"}),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
        ),
        (
            json!({"template": {"spec": {"containers": {}}}}),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
        (
            json!({"template": {"spec": {"containers": [{"name": 1}]}}}),
            "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.name of type string",
        ),
        (
            json!({"template": {"spec": {"nodeSelector": {"a": 1}}}}),
            "json: cannot unmarshal number into Go struct field PodSpec.spec.template.spec.nodeSelector of type string",
        ),
        (
            json!({"strategy": {"rollingUpdate": {"maxSurge": true}}}),
            "json: cannot unmarshal bool into Go value of type int32",
        ),
        (
            json!({"template": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "x1"}}}]}}}),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ];
    for (spec, message) in cases {
        let mut object = deployment_with(spec.clone());
        let err = decode(&mut object, deployment()).unwrap_err();
        assert_eq!(err.to_string(), message, "{spec}");
    }
    let mut object = json!({"metadata": "x"});
    assert_eq!(
        decode(&mut object, deployment()).unwrap_err().to_string(),
        "json: cannot unmarshal string into Go struct field Deployment.metadata of type v1.ObjectMeta"
    );
}

#[test]
fn valid_values_pass() {
    let mut object = deployment_with(json!({
        "replicas": null,
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        "template": {"spec": {"containers": [{"name": "a", "resources": {
            "limits": {"cpu": "100m", "memory": 1e3, "x": 2}
        }}]}}
    }));
    object["metadata"]["creationTimestamp"] = json!("2024-01-02T03:04:05.123Z");
    object["metadata"]["managedFields"] = json!([{"fieldsV1": {"f:spec": {}}}]);
    let before = object.clone();
    assert_eq!(decode(&mut object, deployment()), Ok(vec![]));
    assert_eq!(object, before);
}

#[test]
fn duplicate_fields_are_found_in_structs_maps_and_lists() {
    let body = br#"{"apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"name":"a","name":"b","labels":{"x":"1","x":"2"}},
        "spec":{"foo":1,"foo":2,"template":{"spec":{"containers":[{"name":"c","image":"i","image":"j"}]}}},
        "status":{}}"#;
    let found = duplicate_fields(body, deployment());
    assert_eq!(
        strict(&found),
        [
            r#"duplicate field "metadata.name""#,
            r#"duplicate field "metadata.labels.x""#,
            r#"duplicate field "spec.template.spec.containers[0].image""#,
        ]
    );
}

#[test]
fn untyped_documents_count_every_duplicate() {
    let body = br#"{"a":1,"a":2,"m":{"x":[{"k":1,"k":2}]},"m":{}}"#;
    assert_eq!(
        strict(&duplicate_fields_untyped(body)),
        [
            r#"duplicate field "a""#,
            r#"duplicate field "m.x[0].k""#,
            r#"duplicate field "m""#,
        ]
    );
}

#[test]
fn free_form_values_are_kept_whole() {
    let crd = kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let mut object = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
        "type": "object", "default": {"any": 1}, "x-kubernetes-preserve-unknown-fields": true
    }}}]}});
    let before = object.clone();
    assert_eq!(decode(&mut object, crd), Ok(vec![]));
    assert_eq!(object, before);
}

#[test]
fn go_type_names() {
    let pod_spec = kind("", "v1", "Pod").property("spec").unwrap();
    let name = |field: &str| go_type(pod_spec.property(field).unwrap());
    assert_eq!(name("containers"), "[]v1.Container");
    assert_eq!(name("nodeSelector"), "map[string]string");
    assert_eq!(name("activeDeadlineSeconds"), "int64");
    assert_eq!(name("overhead"), "map[string]resource.Quantity");
    assert_eq!(name("securityContext"), "v1.PodSecurityContext");
}
