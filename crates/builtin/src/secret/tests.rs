use crate::tests::pairs;
use base64::Engine as _;
use serde_json::json;

use super::*;
use crate::util::{Cases, causes, expect};

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn secret(body: Value) -> Value {
    let mut object =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}});
    for (k, v) in body.as_object().unwrap() {
        object[k] = v.clone();
    }
    object
}

/// Validates a new secret as the registry would: after the create defaults.
fn validate(body: Value) -> Vec<(String, String, String)> {
    let mut object = secret(body);
    SecretStrategy.prepare_for_create(&mut object);
    causes(&SecretStrategy.validate(&object))
}

#[test]
fn string_data_is_merged_into_data() {
    let mut object = secret(
        json!({"data": {"a": b64("old"), "b": b64("keep")}, "stringData": {"a": "new", "c": "ü"}}),
    );
    SecretStrategy.prepare_for_create(&mut object);
    assert_eq!(
        object["data"],
        json!({"a": b64("new"), "b": b64("keep"), "c": b64("ü")})
    );
    assert!(object.get("stringData").is_none());
    assert_eq!(object["type"], "Opaque");

    let mut object = secret(json!({"type": "kubernetes.io/tls", "stringData": {}, "data": {}}));
    SecretStrategy.prepare_for_create(&mut object);
    assert_eq!(object, secret(json!({"type": "kubernetes.io/tls"})));
}

#[test]
fn type_specific_validation() {
    let required = "Required value";
    let cases: Cases = vec![
        (json!({}), vec![]),
        (json!({"type": "example.com/custom"}), vec![]),
        (
            json!({"type": "kubernetes.io/service-account-token"}),
            vec![(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "FieldValueRequired",
                required,
            )],
        ),
        (
            json!({"type": "kubernetes.io/service-account-token",
                   "metadata": {"name": "s", "namespace": "n", "annotations": {"kubernetes.io/service-account.name": "sa"}}}),
            vec![],
        ),
        (
            json!({"type": "kubernetes.io/dockercfg"}),
            vec![("data[.dockercfg]", "FieldValueRequired", required)],
        ),
        (
            json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("{\"r\": {}}")}}),
            vec![],
        ),
        (
            json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("nope")}}),
            vec![(
                "data[.dockerconfigjson]",
                "FieldValueInvalid",
                "Invalid value: \"<secret contents redacted>\": invalid character 'o' in literal null (expecting 'u')",
            )],
        ),
        (
            json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("[]")}}),
            vec![(
                "data[.dockerconfigjson]",
                "FieldValueInvalid",
                "Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}",
            )],
        ),
        (
            json!({"type": "kubernetes.io/basic-auth"}),
            vec![
                ("data[username]", "FieldValueRequired", required),
                ("data[password]", "FieldValueRequired", required),
            ],
        ),
        (
            json!({"type": "kubernetes.io/basic-auth", "stringData": {"password": ""}}),
            vec![],
        ),
        (
            json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
            vec![("data[ssh-privatekey]", "FieldValueRequired", required)],
        ),
        (
            json!({"type": "kubernetes.io/ssh-auth", "stringData": {"ssh-privatekey": "k"}}),
            vec![],
        ),
        (
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}}),
            vec![("data[tls.key]", "FieldValueRequired", required)],
        ),
        (
            json!({"data": {"bad key": ""}}),
            vec![(
                "data[bad key]",
                "FieldValueInvalid",
                "Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            )],
        ),
    ];
    for (body, want) in cases {
        assert_eq!(validate(body.clone()), expect(&want), "{body}");
    }
}

#[test]
fn size_limit_counts_decoded_bytes() {
    let exactly = base64::engine::general_purpose::STANDARD.encode(vec![7u8; MAX_DATA_SIZE]);
    assert_eq!(validate(json!({"data": {"a": exactly}})), expect(&[]));
    assert_eq!(
        validate(json!({"data": {"a": exactly}, "stringData": {"b": "x"}})),
        expect(&[(
            "data",
            "FieldValueTooLong",
            "Too long: may not be more than 1048576 bytes"
        )])
    );
}

#[test]
fn updates() {
    let msg = "Forbidden: field is immutable when `immutable` is set";
    let old = secret(json!({"type": "Opaque", "immutable": true, "data": {"a": b64("1")}}));
    let update = |body: Value| {
        let mut new = secret(body);
        SecretStrategy.prepare_for_update(&mut new, &old);
        causes(&SecretStrategy.validate_update(&new, &old))
    };
    assert_eq!(
        update(json!({"immutable": true, "data": {"a": b64("1")}})),
        expect(&[])
    );
    assert_eq!(
        update(json!({"immutable": true, "data": {"a": b64("1")}, "stringData": {"a": "2"}})),
        expect(&[("data", "FieldValueForbidden", msg)])
    );
    assert_eq!(
        update(json!({"immutable": false, "data": {"a": b64("1")}})),
        expect(&[("immutable", "FieldValueForbidden", msg)])
    );
    assert_eq!(
        update(
            json!({"type": "kubernetes.io/basic-auth", "immutable": true, "data": {"a": b64("1")}})
        ),
        expect(&[
            (
                "type",
                "FieldValueInvalid",
                "Invalid value: \"kubernetes.io/basic-auth\": field is immutable"
            ),
            ("data[username]", "FieldValueRequired", "Required value"),
            ("data[password]", "FieldValueRequired", "Required value"),
        ])
    );
    // A missing type is decoded as Opaque, so it cannot be dropped from a typed secret.
    let tls = secret(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}));
    let mut new = secret(json!({"data": {"tls.crt": "", "tls.key": ""}}));
    SecretStrategy.prepare_for_update(&mut new, &tls);
    assert_eq!(
        causes(&SecretStrategy.validate_update(&new, &tls)),
        expect(&[(
            "type",
            "FieldValueInvalid",
            "Invalid value: \"Opaque\": field is immutable"
        )])
    );
}

#[test]
fn definition_fields_and_cells() {
    let def = crate::definition("", "v1", "secrets").unwrap();
    assert_eq!((&*def.plural, def.short_names.len()), ("secrets", 0));
    assert_eq!(def.storage.key_prefix, "secrets");
    assert!(def.strategy.supports_field("type"));
    assert!(!def.strategy.supports_field("data"));
    let object =
        secret(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}));
    assert_eq!(
        pairs(&def.strategy.selectable_fields(&object)),
        [("type", "kubernetes.io/tls".to_string())]
    );
    let table = def.table.unwrap();
    let names: Vec<&str> = table.columns.iter().map(|c| &*c.name).collect();
    assert_eq!(names, ["Name", "Type", "Data", "Age"]);
    assert_eq!(
        (table.cells)(&object)[..3],
        [json!("s"), json!("kubernetes.io/tls"), json!(2)]
    );
}
