//! Table-driven tests of CRD defaulting, preparation and validation, with upstream's
//! messages and field paths.

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::resource::{Strategy, SubresourceKind};
use serde_json::{Value, json};

use super::access::{self, Condition};
use super::{CLEANUP_FINALIZER, CrdStrategy, defaults, definition, validation};

mod schemas;
mod validate;

/// upstream's DNS-1035 label message, for names that are not one.
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// A valid single-version CRD, as stored after defaulting.
fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "color": {"type": "string"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}
            }],
            "conversion": {"strategy": "None"}
        },
        "status": {"storedVersions": ["v1"]}
    })
}

/// `crd()` with a second version `v2` (the storage one) differing in its schema.
fn two_versions() -> Value {
    let mut crd = crd();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["schema"]["openAPIV3Schema"]["description"] = json!("v2");
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    crd["status"]["storedVersions"] = json!(["v2"]);
    crd
}

/// Sets the JSON pointer `pointer` of `object` to `value` (creating objects on the way).
fn set(object: &mut Value, pointer: &str, value: Value) {
    let mut current = object;
    for part in pointer.trim_start_matches('/').split('/') {
        current = match current {
            Value::Array(items) => &mut items[part.parse::<usize>().unwrap()],
            other => &mut other[part],
        };
    }
    *current = value;
}

fn strings(errs: &FieldErrors) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn definition_is_upstreams_resource() {
    let def = definition();
    assert_eq!(def.group_version.api_version(), "apiextensions.k8s.io/v1");
    assert_eq!(def.plural, "customresourcedefinitions");
    assert_eq!(def.short_names, ["crd", "crds"]);
    assert_eq!(def.categories, ["api-extensions"]);
    assert!(!def.namespaced);
    assert_eq!(def.verbs.names().len(), 8);
    assert_eq!(
        def.storage.key_prefix,
        "apiextensions.k8s.io/customresourcedefinitions"
    );
    assert!(matches!(
        def.subresource("status").map(|s| &s.kind),
        Some(SubresourceKind::Status)
    ));
    assert!(
        def.table.is_none(),
        "upstream's default table: Name, Created At"
    );
}

#[test]
fn request_decoder_knows_the_kind() {
    assert!(
        kapi_api::kind_schema("apiextensions.k8s.io", "v1", "CustomResourceDefinition").is_some()
    );
}

/// JSON pointers and the values set there before a test.
type Changes = Vec<(&'static str, Value)>;

#[test]
fn defaulting() {
    // (what is set before defaulting, pointer, expected value after)
    let cases: Vec<(Changes, &str, Value)> = vec![
        (
            vec![("/spec/names/singular", Value::Null)],
            "/spec/names/singular",
            json!("widget"),
        ),
        (
            vec![("/spec/names/singular", json!(""))],
            "/spec/names/singular",
            json!("widget"),
        ),
        (
            vec![("/spec/names/singular", json!("thing"))],
            "/spec/names/singular",
            json!("thing"),
        ),
        (
            vec![("/spec/names/listKind", Value::Null)],
            "/spec/names/listKind",
            json!("WidgetList"),
        ),
        (
            vec![
                ("/spec/names/listKind", Value::Null),
                ("/spec/names/kind", json!("")),
            ],
            "/spec/names/listKind",
            Value::Null,
        ),
        (
            vec![("/spec/conversion", Value::Null)],
            "/spec/conversion",
            json!({"strategy": "None"}),
        ),
        (
            vec![(
                "/spec/conversion",
                json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}),
            )],
            "/spec/conversion/webhook/clientConfig/service/port",
            json!(443),
        ),
        (
            vec![(
                "/spec/conversion",
                json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n", "port": 8443}}}}),
            )],
            "/spec/conversion/webhook/clientConfig/service/port",
            json!(8443),
        ),
        (
            vec![("/status/storedVersions", json!([]))],
            "/status/storedVersions",
            json!(["v1"]),
        ),
        (
            vec![("/status", Value::Null)],
            "/status/storedVersions",
            json!(["v1"]),
        ),
        (
            vec![("/status/storedVersions", json!(["v0"]))],
            "/status/storedVersions",
            json!(["v0"]),
        ),
    ];
    for (changes, pointer, expected) in cases {
        let mut object = crd();
        for (at, value) in &changes {
            set(&mut object, at, value.clone());
        }
        defaults::set_defaults(&mut object);
        assert_eq!(
            object.pointer(pointer).cloned().unwrap_or(Value::Null),
            expected,
            "{changes:?}"
        );
    }
}

#[test]
fn normalize_writes_the_typed_form() {
    let mut object = crd();
    set(&mut object, "/spec/versions/0/deprecated", json!(false));
    set(&mut object, "/spec/preserveUnknownFields", json!(false));
    set(
        &mut object,
        "/spec/versions/0/additionalPrinterColumns",
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 0}]),
    );
    defaults::normalize(&mut object);
    assert_eq!(
        object["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert!(object["spec"]["versions"][0].get("deprecated").is_none());
    assert!(object["spec"].get("preserveUnknownFields").is_none());
    assert_eq!(
        object["spec"]["versions"][0]["additionalPrinterColumns"][0],
        json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"})
    );
}

#[test]
fn prepare_for_create_resets_status() {
    let mut object = crd();
    object["status"] = json!({"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v0", "v1"]});
    object["metadata"]["generation"] = json!(7);
    CrdStrategy.prepare_for_create(&mut object);
    assert_eq!(object["metadata"]["generation"], json!(1));
    assert_eq!(
        object["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert_eq!(object["spec"]["conversion"], json!({"strategy": "None"}));
}

#[test]
fn prepare_for_update() {
    let mut old = two_versions();
    old["metadata"]["generation"] = json!(3);
    CrdStrategy.prepare_for_create(&mut old);
    old["metadata"]["generation"] = json!(3);
    access::set_condition_at(&mut old, &established(), "2026-01-01T00:00:00Z");

    // A status written with the main resource is ignored; no spec change keeps the generation.
    let mut same = old.clone();
    same["status"] = json!({"storedVersions": ["x"]});
    CrdStrategy.prepare_for_update(&mut same, &old);
    assert_eq!(same["status"], old["status"]);
    assert_eq!(same["metadata"]["generation"], json!(3));

    // A new storage version is added to storedVersions; the spec change bumps the generation.
    let mut moved = old.clone();
    moved["spec"]["versions"][0]["storage"] = json!(true);
    moved["spec"]["versions"][1]["storage"] = json!(false);
    CrdStrategy.prepare_for_update(&mut moved, &old);
    assert_eq!(moved["status"]["storedVersions"], json!(["v2", "v1"]));
    assert_eq!(moved["metadata"]["generation"], json!(4));
}

fn established() -> Condition {
    Condition {
        type_: "Established".into(),
        status: "True".into(),
        reason: "InitialNamesAccepted".into(),
        message: "the initial names have been accepted".into(),
    }
}

#[test]
fn set_condition_moves_transition_time_only_on_status_change() {
    let mut object = crd();
    access::set_condition_at(&mut object, &established(), "2026-01-01T00:00:00Z");
    let mut changed = established();
    changed.message = String::new();
    access::set_condition_at(&mut object, &changed, "2026-01-02T00:00:00Z");
    assert_eq!(
        object["status"]["conditions"],
        json!([{"type": "Established", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "InitialNamesAccepted"}])
    );
    changed.status = "False".into();
    access::set_condition_at(&mut object, &changed, "2026-01-03T00:00:00Z");
    assert_eq!(
        object["status"]["conditions"][0]["lastTransitionTime"],
        json!("2026-01-03T00:00:00Z")
    );
    assert!(!access::is_condition_true(&object, "Established"));
    access::remove_condition(&mut object, "Established");
    assert_eq!(object["status"]["conditions"], json!([]));
}

#[test]
fn accessors() {
    let mut object = two_versions();
    set(
        &mut object,
        "/spec/versions/1/subresources",
        json!({"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.replicas"}}),
    );
    set(&mut object, "/spec/versions/0/served", json!(false));
    set(&mut object, "/spec/names/shortNames", json!(["wd"]));
    let names = access::CrdNames::spec(&object);
    assert_eq!(
        (
            names.group.as_str(),
            names.plural.as_str(),
            names.list_kind.as_str()
        ),
        ("example.com", "widgets", "WidgetList")
    );
    assert_eq!(names.short_names, ["wd"]);
    assert_eq!(access::storage_version(&object), Some("v2"));
    assert!(access::is_namespaced(&object));
    let served: Vec<_> = access::served_versions(&object)
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(served, ["v2"]);
    assert!(access::has_status_subresource(&object, "v2"));
    assert!(!access::has_status_subresource(&object, "v1"));
    let scale = access::scale_subresource(&object, "v2").unwrap();
    assert_eq!(scale.spec_replicas_path, ".spec.size");
    assert_eq!(scale.label_selector_path, None);
    assert!(access::version_schema(&object, "v1").is_some());
    assert!(access::printer_columns(&object, "v1").is_empty());
}

#[test]
fn pending_deletion_adds_the_cleanup_finalizer() {
    let mut object = crd();
    assert!(CrdStrategy.has_pending_finalizers(&object));
    object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    CrdStrategy.prepare_for_pending_deletion(&mut object);
    assert_eq!(object["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
    let terminating = access::find_condition(&object, "Terminating").unwrap();
    assert_eq!(terminating["reason"], json!("InstanceDeletionPending"));
    assert!(!CrdStrategy.has_pending_finalizers(&object));
    CrdStrategy.prepare_for_pending_deletion(&mut object);
    assert_eq!(object["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
}

/// (changes to `base`, expected errors of create validation)
type Case = (Changes, Vec<String>);

fn run(base: fn() -> Value, cases: Vec<Case>) {
    for (changes, expected) in cases {
        let mut object = base();
        for (at, value) in &changes {
            set(&mut object, at, value.clone());
        }
        assert_eq!(
            strings(&validation::validate_create(&object)),
            expected,
            "{changes:?}"
        );
    }
}

fn s(text: &str) -> String {
    text.to_string()
}
