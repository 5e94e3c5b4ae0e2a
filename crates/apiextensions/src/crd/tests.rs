//! Table-driven tests of CRD defaulting, preparation and validation, with upstream's
//! messages and field paths.

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::resource::{Strategy, SubresourceKind};
use serde_json::{Value, json};

use super::access::{self, Condition};
use super::{CLEANUP_FINALIZER, CrdStrategy, defaults, definition, validation};

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

#[test]
fn validate_valid() {
    run(crd, vec![(vec![], vec![])]);
    run(two_versions, vec![(vec![], vec![])]);
}

#[test]
fn validate_name_group_scope() {
    run(
        crd,
        vec![
            (
                vec![("/metadata/name", json!("widgets.example.org"))],
                vec![s(
                    r#"metadata.name: Invalid value: "widgets.example.org": must be spec.names.plural+"."+spec.group"#,
                )],
            ),
            (
                vec![
                    ("/spec/group", json!("")),
                    ("/metadata/name", json!("widgets.")),
                ],
                vec![s("spec.group: Required value")],
            ),
            (
                vec![
                    ("/spec/group", json!("example")),
                    ("/metadata/name", json!("widgets.example")),
                ],
                vec![s(
                    r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
                )],
            ),
            (
                vec![
                    ("/spec/group", json!("Example.com")),
                    ("/metadata/name", json!("widgets.Example.com")),
                ],
                vec![s(
                    r#"spec.group: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                )],
            ),
            (
                vec![("/spec/scope", json!(""))],
                vec![s("spec.scope: Required value")],
            ),
            (
                vec![("/spec/scope", json!("Global"))],
                vec![s(
                    r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
                )],
            ),
        ],
    );
}

#[test]
fn validate_names() {
    run(
        crd,
        vec![
            (
                vec![
                    ("/spec/names/plural", json!("")),
                    ("/metadata/name", json!(".example.com")),
                ],
                vec![s("spec.names.plural: Required value")],
            ),
            (
                vec![
                    ("/spec/names/singular", json!("")),
                    ("/spec/names/kind", json!("")),
                    ("/spec/names/listKind", json!("")),
                ],
                vec![
                    s("spec.names.singular: Required value"),
                    s("spec.names.kind: Required value"),
                    s("spec.names.listKind: Required value"),
                ],
            ),
            (
                vec![
                    ("/spec/names/plural", json!("Widgets")),
                    ("/metadata/name", json!("Widgets.example.com")),
                ],
                vec![format!(
                    r#"spec.names.plural: Invalid value: "Widgets": {DNS1035}"#
                )],
            ),
            (
                vec![("/spec/names/kind", json!("Wid_get"))],
                vec![format!(
                    r#"spec.names.kind: Invalid value: "Wid_get": may have mixed case, but should otherwise match: {DNS1035}"#
                )],
            ),
            (
                vec![("/spec/names/listKind", json!("Widget"))],
                vec![s(
                    r#"spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same"#,
                )],
            ),
            (
                vec![
                    ("/spec/names/shortNames", json!(["ok", "Not-OK"])),
                    ("/spec/names/categories", json!(["all", "a.b"])),
                ],
                vec![
                    format!(r#"spec.names.shortNames[1]: Invalid value: "Not-OK": {DNS1035}"#),
                    format!(r#"spec.names.categories[1]: Invalid value: "a.b": {DNS1035}"#),
                ],
            ),
            (
                vec![(
                    "/status/acceptedNames",
                    json!({"plural": "Bad", "kind": "Widget"}),
                )],
                vec![format!(
                    r#"status.acceptedNames.plural: Invalid value: "Bad": {DNS1035}"#
                )],
            ),
        ],
    );
}

#[test]
fn validate_versions() {
    run(
        crd,
        vec![
            (
                vec![("/spec/versions", json!([]))],
                vec![
                    s(
                        "spec.versions: Invalid value: []: must have exactly one version marked as storage version",
                    ),
                    s(
                        "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions",
                    ),
                ],
            ),
            (
                vec![("/spec/versions/0/storage", json!(false))],
                vec![s(
                    r#"spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must have exactly one version marked as storage version"#,
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/name", json!("V1")),
                    ("/status/storedVersions", json!(["V1"])),
                ],
                vec![
                    format!(r#"spec.versions[0].name: Invalid value: "V1": {DNS1035}"#),
                    format!(r#"spec.version: Invalid value: "V1": {DNS1035}"#),
                ],
            ),
            (
                vec![("/spec/versions/0/schema", Value::Null)],
                vec![s("spec.versions[0].schema.openAPIV3Schema: Required value")],
            ),
            (
                vec![("/spec/versions/0/deprecationWarning", json!("old"))],
                vec![s(
                    r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#,
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/deprecated", json!(true)),
                    ("/spec/versions/0/deprecationWarning", json!("a\u{7}b")),
                ],
                vec![s(
                    "spec.versions[0].deprecationWarning: Invalid value: \"a\\ab\": must only contain printable UTF-8 characters; non-printable character found at index 1",
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/deprecated", json!(true)),
                    ("/spec/versions/0/deprecationWarning", json!("")),
                ],
                vec![s(
                    r#"spec.versions[0].deprecationWarning: Invalid value: "": must not be an empty string"#,
                )],
            ),
        ],
    );
    run(
        two_versions,
        vec![
            (
                vec![
                    ("/spec/versions/1/name", json!("v1")),
                    ("/status/storedVersions", json!(["v1"])),
                    // Identical schemas: hoisted to spec.validation, nil in the versions.
                    (
                        "/spec/versions/0/schema/openAPIV3Schema/description",
                        json!("v2"),
                    ),
                ],
                vec![s(
                    r#"spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null},{"Name":"v1","Served":true,"Storage":true,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must contain unique version names"#,
                )],
            ),
            (
                vec![("/spec/versions/1/schema", Value::Null)],
                vec![s("spec.versions[1].schema.openAPIV3Schema: Required value")],
            ),
        ],
    );
}

#[test]
fn validate_stored_versions() {
    run(
        crd,
        vec![
            (
                vec![("/status/storedVersions", json!([]))],
                vec![s(
                    "status.storedVersions: Invalid value: []: must have at least one stored version",
                )],
            ),
            (
                vec![("/status/storedVersions", json!(["v0"]))],
                vec![
                    s(
                        r#"status.storedVersions: Invalid value: ["v0"]: must have the storage version v1"#,
                    ),
                    s(
                        "status.storedVersions[0]: Invalid value: \"v0\": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions",
                    ),
                ],
            ),
        ],
    );
}

#[test]
fn validate_schema_root() {
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/schema/openAPIV3Schema/nullable",
                    json!(true),
                )],
                vec![s(
                    "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/subresources", json!({"status": {}})),
                    (
                        "/spec/versions/0/schema/openAPIV3Schema/type",
                        json!("array"),
                    ),
                ],
                vec![
                    s(
                        r#"spec.validation.openAPIV3Schema.type: Invalid value: "array": only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    ),
                    s("spec.validation.openAPIV3Schema.items: Required value: must be specified"),
                    s(
                        r#"spec.validation.openAPIV3Schema.type: Invalid value: "array": must be object at the root"#,
                    ),
                ],
            ),
            (
                vec![
                    ("/spec/versions/0/subresources", json!({"status": {}})),
                    (
                        "/spec/versions/0/schema/openAPIV3Schema",
                        json!({"type": "object", "minProperties": 1}),
                    ),
                ],
                vec![s(
                    r#"spec.validation.openAPIV3Schema: Invalid value: {"minProperties":1,"type":"object"}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"#,
                )],
            ),
            (
                vec![
                    ("/spec/preserveUnknownFields", json!(true)),
                    (
                        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/default",
                        json!({}),
                    ),
                ],
                vec![
                    s(
                        "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
                    ),
                    s(
                        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                    ),
                ],
            ),
        ],
    );
    run(
        two_versions,
        vec![(
            vec![(
                "/spec/versions/1/schema/openAPIV3Schema/nullable",
                json!(true),
            )],
            vec![s(
                "spec.versions[1].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
            )],
        )],
    );
}

#[test]
fn validate_subresources() {
    let scale = |spec: &str, status: &str, selector: &str| json!({"scale": {"specReplicasPath": spec, "statusReplicasPath": status, "labelSelectorPath": selector}});
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/subresources",
                    scale(".spec.size", ".status.replicas", ".status.selector"),
                )],
                vec![],
            ),
            (
                vec![("/spec/versions/0/subresources", scale("", "", ""))],
                vec![
                    s("spec.subresources.scale.specReplicasPath: Required value"),
                    s("spec.subresources.scale.statusReplicasPath: Required value"),
                ],
            ),
            (
                vec![(
                    "/spec/versions/0/subresources",
                    scale("spec.size", ".spec.replicas", "status"),
                )],
                vec![
                    s(
                        r#"spec.subresources.scale.specReplicasPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
                    ),
                    s(
                        r#"spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under .status"#,
                    ),
                    s(
                        r#"spec.subresources.scale.labelSelectorPath: Invalid value: "status": must be a simple json path starting with ."#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/versions/0/subresources",
                    scale(".status.size", ".status.replicas", ".metadata.labels"),
                )],
                vec![
                    s(
                        r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.size": should be a json path under .spec"#,
                    ),
                    s(
                        r#"spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec or .status"#,
                    ),
                ],
            ),
        ],
    );
    run(
        two_versions,
        vec![(
            vec![("/spec/versions/1/subresources", scale(".spec.size", "", ""))],
            vec![s(
                "spec.versions[1].subresources.scale.statusReplicasPath: Required value",
            )],
        )],
    );
}

#[test]
fn validate_printer_columns() {
    let column = |name: &str, type_: &str, format: &str, path: &str| json!([{"name": name, "type": type_, "format": format, "jsonPath": path}]);
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/additionalPrinterColumns",
                    column("Size", "integer", "int32", ".spec.size"),
                )],
                vec![],
            ),
            (
                vec![(
                    "/spec/versions/0/additionalPrinterColumns",
                    column("", "", "", ""),
                )],
                vec![
                    s("spec.additionalPrinterColumns[0].name: Required value"),
                    s(
                        "spec.additionalPrinterColumns[0].type: Required value: must be one of boolean,date,integer,number,string",
                    ),
                    s("spec.additionalPrinterColumns[0].JSONPath: Required value"),
                ],
            ),
            (
                vec![(
                    "/spec/versions/0/additionalPrinterColumns",
                    column("Size", "int", "uint", "spec.size"),
                )],
                vec![
                    s(
                        r#"spec.additionalPrinterColumns[0].type: Invalid value: "int": must be one of boolean,date,integer,number,string"#,
                    ),
                    s(
                        r#"spec.additionalPrinterColumns[0].format: Invalid value: "uint": must be one of byte,date,date-time,double,float,int32,int64,password"#,
                    ),
                    s(
                        r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
                    ),
                ],
            ),
        ],
    );
    run(
        two_versions,
        vec![(
            vec![(
                "/spec/versions/0/additionalPrinterColumns",
                column("Size", "integer", "", ""),
            )],
            vec![s(
                "spec.versions[0].additionalPrinterColumns[0].JSONPath: Required value",
            )],
        )],
    );
}

#[test]
fn validate_selectable_fields() {
    let fields =
        |paths: &[&str]| Value::Array(paths.iter().map(|p| json!({"jsonPath": p})).collect());
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/selectableFields",
                    fields(&[".spec.color", ".spec.size", ".spec.labels.app"]),
                )],
                vec![],
            ),
            (
                vec![(
                    "/spec/versions/0/selectableFields",
                    fields(&[
                        "",
                        ".spec.shape",
                        ".spec[0]",
                        "spec.color",
                        ".spec",
                        ".spec.color",
                        ".spec.color",
                        ".metadata.name",
                    ]),
                )],
                vec![
                    s("spec.selectableFields[0].jsonPath: Required value"),
                    s(
                        r#"spec.selectableFields[1].jsonPath: Invalid value: ".spec.shape": is an invalid path: does not refer to a valid field"#,
                    ),
                    s(
                        r#"spec.selectableFields[2].jsonPath: Invalid value: ".spec[0]": is an invalid path: array notation is not allowed"#,
                    ),
                    s(
                        r#"spec.selectableFields[3].jsonPath: Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec"#,
                    ),
                    s(
                        r#"spec.selectableFields[4].jsonPath: Invalid value: ".spec": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
                    ),
                    s(r#"spec.selectableFields[6].jsonPath: Duplicate value: ".spec.color""#),
                    s(
                        r#"spec.selectableFields[7].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field"#,
                    ),
                ],
            ),
        ],
    );
    let nine: Vec<String> = (0..9).map(|i| format!(".spec.labels.l{i}")).collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    run(
        crd,
        vec![(
            vec![("/spec/versions/0/selectableFields", fields(&nine))],
            vec![s(
                "spec.selectableFields: Too many: 9: must have at most 8 items",
            )],
        )],
    );
    run(
        || {
            let mut object = two_versions();
            object["spec"]["versions"][1]["schema"] =
                object["spec"]["versions"][0]["schema"].clone();
            object
        },
        vec![(
            vec![(
                "/spec/versions/1/selectableFields",
                fields(&[".spec.color"]),
            )],
            vec![s(
                "spec.versions[1].selectableFields: Invalid value: \"\": may only be set when `version.schema.openAPIV3Schema` is not included",
            )],
        )],
    );
    run(
        two_versions,
        vec![(
            vec![("/spec/versions/1/selectableFields", fields(&[".spec.nope"]))],
            vec![s(
                r#"spec.versions[1].selectableFields[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#,
            )],
        )],
    );
}

#[test]
fn validate_conversion() {
    let webhook = |config: Value, versions: Value| json!({"strategy": "Webhook", "webhook": {"clientConfig": config, "conversionReviewVersions": versions}});
    let service = json!({"name": "conv", "namespace": "ns", "port": 443});
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/conversion",
                    webhook(
                        json!({"url": "https://conv.example.com/convert"}),
                        json!(["v1"]),
                    ),
                )],
                vec![],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"service": service}), json!(["v1beta1", "v1"])),
                )],
                vec![],
            ),
            (
                vec![("/spec/conversion", json!({"strategy": ""}))],
                vec![s("spec.conversion.strategy: Required value")],
            ),
            (
                vec![("/spec/conversion", json!({"strategy": "Magic"}))],
                vec![s(
                    r#"spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook""#,
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}),
                )],
                vec![s(
                    "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(
                        json!({"url": "https://a", "service": service}),
                        json!(["v1"]),
                    ),
                )],
                vec![s(
                    "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"url": "http://u:p@host/x?q=1#f"}), json!(["v1"])),
                )],
                vec![
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "u:p": user information is not permitted in the URL"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(
                        json!({"service": {"port": 0, "path": "/a//B"}}),
                        json!(["v1"]),
                    ),
                )],
                vec![
                    s("spec.conversion.webhookClientConfig.service.name: Required value"),
                    s("spec.conversion.webhookClientConfig.service.namespace: Required value"),
                    s(
                        "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//B": segment[1] may not be empty"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//B": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"service": service}), json!([])),
                )],
                vec![s(
                    "spec.conversion.conversionReviewVersions: Required value",
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"service": service}), json!(["v2", "v2", "V3"])),
                )],
                vec![
                    s(
                        r#"spec.conversion.conversionReviewVersions[1]: Invalid value: "v2": duplicate version"#,
                    ),
                    format!(
                        r#"spec.conversion.conversionReviewVersions[2]: Invalid value: "V3": {DNS1035}"#
                    ),
                    s(
                        r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2","v2","V3"]: must include at least one of v1, v1beta1"#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/conversion",
                    json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://a"}, "conversionReviewVersions": ["v1"]}}),
                )],
                vec![
                    s(
                        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                    ),
                    s(
                        "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
                    ),
                ],
            ),
        ],
    );
}

#[test]
fn validate_api_approval() {
    let protected = |object: &mut Value| {
        object["spec"]["group"] = json!("widgets.k8s.io");
        object["metadata"]["name"] = json!("widgets.widgets.k8s.io");
    };
    let annotation = "metadata.annotations[api-approved.kubernetes.io]";
    let cases: Vec<(Option<&str>, Vec<String>)> = vec![
        (
            None,
            vec![format!(
                r#"{annotation}: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
            )],
        ),
        (
            Some("yes"),
            vec![format!(
                r#"{annotation}: Invalid value: "yes": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111"#
            )],
        ),
        (Some("unapproved, experimental"), vec![]),
        (
            Some("https://github.com/kubernetes/kubernetes/pull/78458"),
            vec![],
        ),
    ];
    for (value, expected) in cases {
        let mut object = crd();
        protected(&mut object);
        if let Some(value) = value {
            object["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": value});
        }
        assert_eq!(
            strings(&validation::validate_create(&object)),
            expected,
            "{value:?}"
        );
    }
    // An update that keeps the (missing) approval is not rejected.
    let mut old = crd();
    protected(&mut old);
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&new, &old).is_empty());
}

#[test]
fn validate_update_immutable_fields() {
    let mut old = crd();
    let mut established = old.clone();
    access::set_condition_at(
        &mut established,
        &super::access::Condition {
            type_: "Established".into(),
            status: "True".into(),
            reason: String::new(),
            message: String::new(),
        },
        "2026-01-01T00:00:00Z",
    );
    let mut new = crd();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["names"]["kind"] = json!("Gadget");
    new["spec"]["names"]["listKind"] = json!("GadgetList");
    new["spec"]["names"]["plural"] = json!("gadgets");
    new["spec"]["group"] = json!("example.org");
    // Not established yet: scope and kind may change; group and plural never.
    assert_eq!(
        strings(&validation::validate_update(&new, &old)),
        vec![
            s(r#"spec.group: Invalid value: "example.org": field is immutable"#),
            s(r#"spec.names.plural: Invalid value: "gadgets": field is immutable"#),
        ]
    );
    assert_eq!(
        strings(&validation::validate_update(&new, &established)),
        vec![
            s(r#"spec.scope: Invalid value: "Cluster": field is immutable"#),
            s(r#"spec.names.kind: Invalid value: "Gadget": field is immutable"#),
            s(r#"spec.group: Invalid value: "example.org": field is immutable"#),
            s(r#"spec.names.plural: Invalid value: "gadgets": field is immutable"#),
        ]
    );
    // preserveUnknownFields may stay true only where it already was.
    old["spec"]["preserveUnknownFields"] = json!(true);
    let mut kept = old.clone();
    kept["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&kept, &old).is_empty());
}

#[test]
fn validate_update_review_versions_and_selectable_fields() {
    let conversion = |versions: Value| json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://c"}, "conversionReviewVersions": versions}});
    // A stored CRD without a known review version may keep it.
    let mut old = crd();
    old["spec"]["conversion"] = conversion(json!(["v9"]));
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&new, &old).is_empty());
    // More selectable fields than allowed survive unchanged, not when changed.
    let nine: Vec<Value> = (0..9)
        .map(|i| json!({"jsonPath": format!(".spec.labels.l{i}")}))
        .collect();
    let mut old = crd();
    old["spec"]["versions"][0]["selectableFields"] = Value::Array(nine.clone());
    let mut same = old.clone();
    same["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&same, &old).is_empty());
    let mut changed = old.clone();
    changed["spec"]["versions"][0]["selectableFields"][8] = json!({"jsonPath": ".spec.labels.l99"});
    assert_eq!(
        strings(&validation::validate_update(&changed, &old)),
        vec![s(
            "spec.selectableFields: Too many: 9: must have at most 8 items"
        )]
    );
}

#[test]
fn status_update_validates_accepted_names_only() {
    let mut new = crd();
    new["spec"]["group"] = json!("");
    new["status"]["acceptedNames"] =
        json!({"plural": "widgets", "kind": "Widget", "listKind": "Widget"});
    let errs = CrdStrategy.validate_subresource_update(&SubresourceKind::Status, &new, &crd());
    assert_eq!(
        strings(&errs),
        vec![s(
            r#"status.acceptedNames.listKind: Invalid value: "Widget": kind and listKind may not be the same"#
        )]
    );
}

#[test]
fn validate_schema_keywords() {
    let at = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color";
    let root = "spec.validation.openAPIV3Schema";
    let color = format!("{root}.properties[spec].properties[color]");
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({"type": "string", "format": "email"}), vec![]),
        (
            json!({"type": "text"}),
            vec![format!(
                r#"{color}.type: Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string""#
            )],
        ),
        (
            json!({"type": "null"}),
            vec![
                format!(
                    r#"{color}.type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#
                ),
                format!(
                    "{color}.type: Forbidden: type cannot be set to null, use nullable as an alternative"
                ),
            ],
        ),
        (
            json!({"type": "string", "id": "x", "$ref": "#/definitions/a", "additionalItems": false}),
            vec![
                format!("{color}.id: Forbidden: id is not supported"),
                format!("{color}.additionalItems: Forbidden: additionalItems is not supported"),
                format!("{color}.$ref: Forbidden: $ref is not supported"),
            ],
        ),
        (
            json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}),
            vec![format!(
                "{color}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )],
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            vec![format!(
                "{color}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            )],
        ),
        (
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}),
            vec![format!(
                "{color}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            )],
        ),
        (
            json!({"type": "string", "x-kubernetes-map-type": "loose"}),
            vec![
                format!(
                    r#"{color}.type: Invalid value: "string": must be object if x-kubernetes-map-type is specified"#
                ),
                format!(
                    r#"{color}.x-kubernetes-map-type: Unsupported value: "loose": supported values: "atomic", "granular""#
                ),
            ],
        ),
        (
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
            vec![format!(
                r#"{color}.x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#
            )],
        ),
        (
            json!({"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"}),
            vec![format!(
                "{color}.items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
            )],
        ),
        (
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["name"]}),
            vec![format!(
                "{color}.x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
            )],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port", "name"],
                   "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "object", "nullable": true}}}}),
            vec![
                format!(
                    r#"{color}.items.properties[port].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map"#
                ),
                format!(
                    r#"{color}.x-kubernetes-list-map-keys: Invalid value: ["name","port","name"]: must not contain duplicate entries"#
                ),
                format!(
                    "{color}.items.properties[port].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    "{color}.items.properties[port].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
                ),
            ],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}}),
            vec![
                format!(
                    "{color}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                ),
                format!(
                    r#"{color}.items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map"#
                ),
            ],
        ),
        (
            json!({"type": "string", "x-kubernetes-validations": [
                {"rule": " "},
                {"rule": "self != ''", "message": " "},
                {"rule": "self != ''", "message": "a\nb"},
                {"rule": "self !=\n''"},
                {"rule": "self != ''", "messageExpression": " ", "reason": "FieldValueBad"},
                {"rule": "self != ''", "fieldPath": ".nope"}]}),
            vec![
                format!(
                    "{color}.x-kubernetes-validations[0].rule: Required value: rule is not specified"
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[1].message: Invalid value: " ": must be non-empty if specified"#
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[2].message: Invalid value: "a\nb": must not contain line breaks"#
                ),
                format!(
                    "{color}.x-kubernetes-validations[3].message: Required value: message must be specified if rule contains line breaks"
                ),
                format!(
                    "{color}.x-kubernetes-validations[4].messageExpression: Required value: messageExpression must be non-empty if specified"
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[4].reason: Unsupported value: "FieldValueBad": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[5].fieldPath: Invalid value: ".nope": must be a valid path"#
                ),
            ],
        ),
        (
            json!({"type": "object", "properties": {"a b": {"type": "string"}},
                   "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".a"}, {"rule": "true", "fieldPath": "['a b']"}]}),
            vec![format!(
                r#"{color}.x-kubernetes-validations[0].fieldPath: Invalid value: ".a": must be a valid path"#
            )],
        ),
    ];
    for (schema, expected) in cases {
        let mut object = crd();
        set(&mut object, at, schema.clone());
        assert_eq!(
            strings(&validation::validate_create(&object)),
            expected,
            "{schema}"
        );
    }
}

#[test]
fn validate_schema_defaults_placement() {
    let mut object = crd();
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/metadata",
        json!({"type": "object", "default": {}, "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}}}}),
    );
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/default",
        json!(3),
    );
    assert_eq!(
        strings(&validation::validate_create(&object)),
        vec![
            s(
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            ),
            s(
                "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata"
            ),
            s(
                "spec.validation.openAPIV3Schema.properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata"
            ),
        ]
    );
}

#[test]
fn validate_update_keeps_stored_leniency() {
    let color = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color";
    let tags = json!({"type": "array", "x-kubernetes-list-type": "set",
                      "items": {"type": "object", "nullable": true}});
    let mut old = crd();
    set(&mut old, color, json!({"type": "text"}));
    set(
        &mut old,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags",
        tags,
    );
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert_eq!(
        strings(&validation::validate_create(&new)).len(),
        3,
        "a new CRD gets every rule"
    );
    assert!(validation::validate_update(&new, &old).is_empty());

    // A stored CRD without a schema in some version needs one only where it is served.
    let mut old = two_versions();
    old["spec"]["versions"][0]["schema"] = Value::Null;
    old["spec"]["versions"][0]["served"] = json!(false);
    let mut new = old.clone();
    assert_eq!(
        strings(&validation::validate_update(&new, &old)),
        Vec::<String>::new()
    );
    new["spec"]["versions"][1]["schema"] = Value::Null;
    assert_eq!(
        strings(&validation::validate_update(&new, &old)),
        vec![s(
            "spec.versions[1].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
        ),]
    );
}

#[test]
fn normalize_writes_schemas_as_typed() {
    let mut object = crd();
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size",
        json!({"type": "integer", "nullable": false, "description": "", "maximum": 0, "default": null,
               "x-kubernetes-preserve-unknown-fields": false,
               "x-kubernetes-validations": [{"rule": "self >= 0", "message": "", "reason": null, "optionalOldSelf": false}]}),
    );
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/required",
        json!([]),
    );
    defaults::normalize(&mut object);
    let spec = &object["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert!(spec.get("required").is_none());
    assert_eq!(
        spec["properties"]["size"],
        json!({"type": "integer", "maximum": 0, "x-kubernetes-preserve-unknown-fields": false,
               "x-kubernetes-validations": [{"rule": "self >= 0", "optionalOldSelf": false}]})
    );
}

#[test]
fn validate_remaining_rules() {
    run(
        crd,
        vec![
            (
                vec![
                    ("/spec/versions/0/deprecated", json!(true)),
                    (
                        "/spec/versions/0/deprecationWarning",
                        json!("x".repeat(257)),
                    ),
                ],
                vec![format!(
                    r#"spec.versions[0].deprecationWarning: Invalid value: "{}": must be <= 256 characters long"#,
                    "x".repeat(257)
                )],
            ),
            (
                vec![
                    ("/spec/preserveUnknownFields", json!(true)),
                    (
                        "/spec/conversion",
                        json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://c"}, "conversionReviewVersions": ["v1"]}}),
                    ),
                ],
                vec![
                    s(
                        r#"spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true"#,
                    ),
                    s(
                        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                    ),
                ],
            ),
        ],
    );
    // Identical selectable fields are validated at the top level, where they need a
    // top-level (identical) schema.
    run(
        two_versions,
        vec![(
            vec![
                (
                    "/spec/versions/0/selectableFields",
                    json!([{"jsonPath": ".spec.color"}]),
                ),
                (
                    "/spec/versions/1/selectableFields",
                    json!([{"jsonPath": ".spec.color"}]),
                ),
            ],
            vec![s(
                r#"spec.selectableFields: Invalid value: "": may only be set when validations.schema is included"#,
            )],
        )],
    );
}

#[test]
fn validate_schema_structural_and_rules() {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    let mut object = crd();
    set(&mut object, &format!("{spec}/properties/shape"), json!({}));
    set(
        &mut object,
        &format!("{spec}/x-kubernetes-validations"),
        json!([{"rule": "self.size >="}]),
    );
    // The structural error hides the rules, which compile only on a structural schema.
    assert_eq!(
        strings(&validation::validate_create(&object)),
        vec![s(
            "spec.validation.openAPIV3Schema.properties[spec].properties[shape].type: Required value: must not be empty for specified object fields"
        )]
    );
    set(
        &mut object,
        &format!("{spec}/properties/shape"),
        json!({"type": "string"}),
    );
    let errs = strings(&validation::validate_create(&object));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        ),
        "{errs:?}"
    );
    set(
        &mut object,
        &format!("{spec}/x-kubernetes-validations"),
        json!([{"rule": "self.size >= 0"}]),
    );
    assert!(validation::validate_create(&object).is_empty());
}

#[test]
fn rules_are_held_to_the_cost_limits() {
    let labels = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/labels";
    let rule_at = "spec.validation.openAPIV3Schema.properties[spec].properties[labels].x-kubernetes-validations[0].rule";
    let mut object = crd();
    set(
        &mut object,
        &format!("{labels}/x-kubernetes-validations"),
        json!([{"rule": "self.all(k, self.all(j, self[k].contains(self[j])))"}]),
    );
    let errs = strings(&validation::validate_create(&object));
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs[0].starts_with(&format!(
            "{rule_at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"
        )),
        "{errs:?}"
    );
    // An update that leaves the schema as it was is only held to the total.
    let mut changed = object.clone();
    set(&mut changed, "/spec/names/shortNames", json!(["wd"]));
    let errs = strings(&validation::validate_update(&changed, &object));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].starts_with(&format!("{rule_at}: Forbidden: contributed")));
    // Bounds make it affordable.
    set(&mut object, &format!("{labels}/maxProperties"), json!(20));
    set(
        &mut object,
        &format!("{labels}/additionalProperties/maxLength"),
        json!(63),
    );
    assert!(validation::validate_create(&object).is_empty());
}

#[test]
fn defaults_must_be_valid_values_of_their_schema() {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
    let with = |properties: Value| {
        let mut object = crd();
        set(&mut object, spec, properties);
        strings(&validation::validate_create(&object))
    };
    let properties = |value: Value, object: Value, size: Value| {
        json!({
            "value": {"type": "string", "default": value,
                "x-kubernetes-validations": [{"rule": "self.startsWith('kube')"}]},
            "object": {"type": "object", "default": object,
                "properties": {"field1": {"type": "integer"}, "field2": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.field1 < self.field2"}]},
            "size": {"type": "integer", "maximum": 10, "default": size},
        })
    };
    assert_eq!(
        with(properties(
            json!("kube-everything"),
            json!({"field1": 1, "field2": 2}),
            json!(3)
        )),
        Vec::<String>::new()
    );
    assert_eq!(
        with(properties(
            json!("nope"),
            json!({"field1": 2, "field2": 1, "extra": true}),
            json!(30)
        )),
        vec![
            s(&format!(
                "{at}[object].default: Invalid value: {{\"extra\":true,\"field1\":2,\"field2\":1}}: must not have unknown fields"
            )),
            s(&format!(
                "{at}[object].default: Invalid value: \"object\": failed rule: self.field1 < self.field2"
            )),
            // kube-openapi names the value validated (the default itself) "".
            s(&format!(
                "{at}[size].default: Invalid value: 30:  in body should be less than or equal to 10"
            )),
            s(&format!(
                "{at}[value].default: Invalid value: \"string\": failed rule: self.startsWith('kube')"
            )),
        ]
    );
}

#[test]
fn an_established_crd_keeps_a_loadable_ca_bundle() {
    use base64::Engine;
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let with_bundle = |bundle: &str| {
        let mut object = crd();
        object["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://hook.example.com/convert", "caBundle": encode(bundle)},
            "conversionReviewVersions": ["v1"]}});
        object
    };
    let invalid = with_bundle("no");
    // Creates may carry any bundle (the CRD is not Established yet).
    assert!(validation::validate_create(&invalid).is_empty());
    let mut established = with_bundle("");
    established["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    assert_eq!(
        strings(&validation::validate_update(&invalid, &established)),
        vec![s(
            "spec.conversion.webhookClientConfig.caBundle: Invalid value: \"bm8=\": unable to load root certificates: unable to parse bytes as PEM block"
        )]
    );
    // A bundle that was invalid already may stay so.
    let mut established_invalid = invalid.clone();
    established_invalid["status"] = established["status"].clone();
    assert!(validation::validate_update(&invalid, &established_invalid).is_empty());
}

#[test]
fn rules_select_only_declared_fields() {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    let mut object = crd();
    set(
        &mut object,
        &format!("{spec}/x-kubernetes-validations"),
        json!([{"rule": "self.sise >= 0"}, {"rule": "self.size == "},
            {"rule": "self.size >= 0", "optionalOldSelf": true},
            {"rule": "self.size >= 0", "messageExpression": "'size ' + self.zz"}]),
    );
    // Every rule's errors, in order, each with the rule as upstream prints it.
    let rule = |rule: &str, rest: &str| {
        format!(
            r#"{{"Rule":"{rule}","Message":"","MessageExpression":"{rest}","Reason":null,"FieldPath":"","OptionalOldSelf":null}}"#
        )
    };
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    let errors = strings(&validation::validate_create(&object));
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert_eq!(
        errors[0],
        format!(
            "{at}[0].rule: Invalid value: {}: compilation failed: ERROR: <input>:1:5: undefined field 'sise'\n | self.sise >= 0\n | ....^",
            rule("self.sise >= 0", "")
        )
    );
    assert!(
        errors[1].starts_with(&format!(
            "{at}[1].rule: Invalid value: {}: compilation failed: ",
            rule("self.size == ", "")
        )),
        "{}",
        errors[1]
    );
    assert_eq!(
        errors[2],
        format!(
            "{at}[2].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
        )
    );
    assert_eq!(
        errors[3],
        format!(
            "{at}[3].messageExpression: Invalid value: {}: messageExpression compilation failed: ERROR: <input>:1:15: undefined field 'zz'\n | 'size ' + self.zz\n | ..............^",
            rule("self.size >= 0", "'size ' + self.zz")
        )
    );
}
