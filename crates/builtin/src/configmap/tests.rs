use crate::tests::names;
use base64::Engine as _;
use serde_json::json;

use super::*;
use crate::util::{Cases, causes, expect};

const KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

fn cm(body: Value) -> Value {
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}});
    for (k, v) in body.as_object().unwrap() {
        object[k] = v.clone();
    }
    object
}

#[test]
fn validation() {
    let big = "x".repeat(MAX_DATA_SIZE);
    let bad_key = format!("Invalid value: \"a b\": {KEY_ERR}");
    let cases: Cases = vec![
        (
            json!({"data": {"a.b": "1", "C_D-e": "2"}, "binaryData": {"bin": "AAEC"}}),
            vec![],
        ),
        (
            json!({"data": {"a b": "1"}}),
            vec![("data[a b]", "FieldValueInvalid", &bad_key)],
        ),
        (
            json!({"data": {"..x": "1"}}),
            vec![(
                "data[..x]",
                "FieldValueInvalid",
                "Invalid value: \"..x\": must not start with '..'",
            )],
        ),
        (
            json!({"binaryData": {".": "AA=="}}),
            vec![(
                "binaryData[.]",
                "FieldValueInvalid",
                "Invalid value: \".\": must not be '.'",
            )],
        ),
        (
            json!({"data": {"k": "v"}, "binaryData": {"k": "AA=="}}),
            vec![(
                "data[k]",
                "FieldValueInvalid",
                "Invalid value: \"k\": duplicate of key present in binaryData",
            )],
        ),
        (json!({"data": {"k": big}}), vec![]),
        (
            json!({"data": {"k": big, "l": "1"}}),
            vec![(
                "",
                "FieldValueTooLong",
                "Too long: may not be more than 1048576 bytes",
            )],
        ),
        (
            json!({"data": {"k": big}, "binaryData": {"b": "AA=="}}),
            vec![(
                "",
                "FieldValueTooLong",
                "Too long: may not be more than 1048576 bytes",
            )],
        ),
    ];
    for (body, want) in cases {
        let object = cm(body);
        assert_eq!(causes(&ConfigMapStrategy.validate(&object)), expect(&want));
    }
}

#[test]
fn binary_size_counts_decoded_bytes() {
    let raw = vec![0u8; MAX_DATA_SIZE];
    let encoded = base64::engine::general_purpose::STANDARD.encode(&raw);
    assert!(
        ConfigMapStrategy
            .validate(&cm(json!({"binaryData": {"b": encoded}})))
            .is_empty()
    );
}

#[test]
fn immutable() {
    let old = cm(json!({"immutable": true, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}));
    let msg = "Forbidden: field is immutable when `immutable` is set";
    let cases: Cases = vec![
        (
            json!({"immutable": true, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}),
            vec![],
        ),
        (
            json!({"immutable": true, "data": {"a": "2"}, "binaryData": {"b": "AA=="}}),
            vec![("data", "FieldValueForbidden", msg)],
        ),
        (
            json!({"immutable": false, "data": {"a": "1"}}),
            vec![
                ("immutable", "FieldValueForbidden", msg),
                ("binaryData", "FieldValueForbidden", msg),
            ],
        ),
        (
            json!({"data": {"a": "1"}, "binaryData": {"b": "AA=="}}),
            vec![("immutable", "FieldValueForbidden", msg)],
        ),
    ];
    for (body, want) in cases {
        let new = cm(body);
        assert_eq!(
            causes(&ConfigMapStrategy.validate_update(&new, &old)),
            expect(&want),
            "{new}"
        );
    }
    // A mutable configmap may become immutable, and change its data on the way.
    let mutable = cm(json!({"data": {"a": "1"}}));
    let new = cm(json!({"immutable": true, "data": {"a": "3"}}));
    assert!(ConfigMapStrategy.validate_update(&new, &mutable).is_empty());
    // The metadata finalizer check runs twice on update, as upstream's.
    let new = cm(json!({"metadata": {"name": "c", "namespace": "n", "finalizers": ["f"]}}));
    assert_eq!(ConfigMapStrategy.validate_update(&new, &mutable).len(), 2);
}

#[test]
fn empty_maps_read_back_absent() {
    let mut object = cm(json!({"data": {}, "binaryData": null}));
    ConfigMapStrategy.prepare_for_create(&mut object);
    assert!(object.get("data").is_none() && object.get("binaryData").is_none());
}

#[test]
fn definition_and_cells() {
    let def = crate::definition("", "v1", "configmaps").unwrap();
    assert_eq!(
        (&*def.plural, &*def.singular, &names(&def.short_names)[..]),
        ("configmaps", "configmap", &["cm"][..])
    );
    assert_eq!(def.verbs.names().len(), 8);
    assert_eq!(def.storage.key_prefix, "configmaps");
    assert!(!def.strategy.supports_field("data"));
    let table = def.table.unwrap();
    let names: Vec<&str> = table.columns.iter().map(|c| &*c.name).collect();
    assert_eq!(names, ["Name", "Data", "Age"]);
    let object = cm(json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}));
    assert_eq!((table.cells)(&object)[..2], [json!("c"), json!(3)]);
}
