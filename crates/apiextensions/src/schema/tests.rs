//! The structural-schema corpus: pruning, defaulting, each validation keyword,
//! int-or-string, embedded resources, list and map types, ratcheting and the structural
//! check, each with what upstream (apiextensions-apiserver 1.35 and kube-openapi) gives.

use kapi_apimachinery::validation::field::Path;
use serde_json::{Value, json};

use super::*;

fn structural(schema: Value) -> Structural {
    Structural::new(&schema).unwrap_or_else(|errors| panic!("{schema}: {errors}"))
}

/// A root schema whose `spec` is `spec`.
fn with_spec(spec: Value) -> Structural {
    structural(json!({"type": "object", "properties": {"spec": spec}}))
}

fn errors(schema: &Structural, object: Value, old: Option<Value>) -> Vec<String> {
    validate(&object, old.as_ref(), schema)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// (name, spec schema, spec value, expected errors).
fn validation_cases() -> Vec<(&'static str, Value, Value, Vec<&'static str>)> {
    vec![
        (
            "type integer",
            json!({"type": "integer"}),
            json!("3"),
            vec![
                r#"spec: Invalid value: "string": spec in body must be of type integer: "string""#,
            ],
        ),
        (
            "type integer refuses fractions",
            json!({"type": "integer"}),
            json!(1.5),
            vec![
                r#"spec: Invalid value: "number": spec in body must be of type integer: "number""#,
            ],
        ),
        (
            "type number takes integers",
            json!({"type": "number"}),
            json!(3),
            vec![],
        ),
        (
            "type string",
            json!({"type": "string"}),
            json!(true),
            vec![
                r#"spec: Invalid value: "boolean": spec in body must be of type string: "boolean""#,
            ],
        ),
        (
            "type object",
            json!({"type": "object"}),
            json!([1]),
            vec![r#"spec: Invalid value: "array": spec in body must be of type object: "array""#],
        ),
        (
            "null is not nullable",
            json!({"type": "string"}),
            Value::Null,
            vec![r#"spec: Invalid value: "null": spec in body must be of type string: "null""#],
        ),
        (
            "nullable accepts null",
            json!({"type": "string", "nullable": true}),
            Value::Null,
            vec![],
        ),
        (
            "enum",
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("c"),
            vec![r#"spec: Unsupported value: "c": supported values: "a", "b""#],
        ),
        (
            "enum of numbers",
            json!({"type": "integer", "enum": [1, 2]}),
            json!(3),
            vec![r#"spec: Unsupported value: 3: supported values: "1", "2""#],
        ),
        (
            "pattern",
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("A1"),
            vec![r#"spec: Invalid value: "A1": spec in body should match '^[a-z]+$'"#],
        ),
        (
            "maxLength",
            json!({"type": "string", "maxLength": 3}),
            json!("abcd"),
            vec!["spec: Too long: may not be more than 3 bytes"],
        ),
        (
            "minLength counts characters",
            json!({"type": "string", "minLength": 3}),
            json!("éé"),
            vec![r#"spec: Invalid value: "éé": spec in body should be at least 3 chars long"#],
        ),
        (
            "minimum",
            json!({"type": "integer", "minimum": 1}),
            json!(0),
            vec!["spec: Invalid value: 0: spec in body should be greater than or equal to 1"],
        ),
        (
            "exclusiveMinimum",
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
            json!(1),
            vec!["spec: Invalid value: 1: spec in body should be greater than 1"],
        ),
        (
            "maximum",
            json!({"type": "number", "maximum": 2.5}),
            json!(3),
            vec!["spec: Invalid value: 3: spec in body should be less than or equal to 2.5"],
        ),
        (
            "exclusiveMaximum",
            json!({"type": "integer", "maximum": 5, "exclusiveMaximum": true}),
            json!(5),
            vec!["spec: Invalid value: 5: spec in body should be less than 5"],
        ),
        (
            "multipleOf",
            json!({"type": "integer", "multipleOf": 5}),
            json!(7),
            vec!["spec: Invalid value: 7: spec in body should be a multiple of 5"],
        ),
        (
            "maxItems",
            json!({"type": "array", "maxItems": 1, "items": {"type": "string"}}),
            json!(["a", "b"]),
            vec!["spec: Too many: 2: must have at most 1 item"],
        ),
        (
            "minItems",
            json!({"type": "array", "minItems": 2, "items": {"type": "string"}}),
            json!(["a"]),
            vec!["spec: Invalid value: 1: spec in body should have at least 2 items"],
        ),
        (
            "uniqueItems",
            json!({"type": "array", "uniqueItems": true, "items": {"type": "integer"}}),
            json!([1, 1]),
            vec!["spec: Invalid value: [1,1]: spec in body shouldn't contain duplicates"],
        ),
        (
            "maxProperties",
            json!({"type": "object", "maxProperties": 1,
            "additionalProperties": {"type": "string"}}),
            json!({"a": "x", "b": "y"}),
            vec!["spec: Too many: 2: must have at most 1 item"],
        ),
        (
            "minProperties",
            json!({"type": "object", "minProperties": 2,
            "additionalProperties": {"type": "string"}}),
            json!({"a": "x"}),
            vec![r#"spec: Invalid value: 1: spec in body should have at least 2 properties"#],
        ),
        (
            "required",
            json!({"type": "object", "required": ["image"],
            "properties": {"image": {"type": "string"}}}),
            json!({}),
            vec!["spec.image: Required value"],
        ),
        (
            "nested paths",
            json!({"type": "object", "properties": {"items": {"type": "array",
            "items": {"type": "object", "properties": {"port": {"type": "integer", "maximum": 10}}}}}}),
            json!({"items": [{"port": 1}, {"port": 11}]}),
            vec![
                "spec.items[1].port: Invalid value: 11: spec.items[1].port in body should be less than or equal to 10",
            ],
        ),
        (
            "map values",
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({"a": 1, "b": "x"}),
            vec![
                r#"spec.b: Invalid value: "string": spec.b in body must be of type integer: "string""#,
            ],
        ),
        (
            "format date-time",
            json!({"type": "string", "format": "date-time"}),
            json!("yesterday"),
            vec![
                r#"spec: Invalid value: "yesterday": spec in body must be of type date-time: "yesterday""#,
            ],
        ),
        (
            "format date-time accepts RFC 3339",
            json!({"type": "string", "format": "date-time"}),
            json!("2024-05-01T10:00:00Z"),
            vec![],
        ),
        (
            "format ipv4",
            json!({"type": "string", "format": "ipv4"}),
            json!("300.1.1.1"),
            vec![
                r#"spec: Invalid value: "300.1.1.1": spec in body must be of type ipv4: "300.1.1.1""#,
            ],
        ),
        (
            "format uuid",
            json!({"type": "string", "format": "uuid"}),
            json!("123e4567-e89b-12d3-a456-426614174000"),
            vec![],
        ),
        (
            "format duration",
            json!({"type": "string", "format": "duration"}),
            json!("1h30m"),
            vec![],
        ),
        (
            "int-or-string takes both",
            json!({"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!("25%"),
            vec![],
        ),
        (
            "int-or-string refuses others",
            json!({"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!(true),
            vec![
                "spec: Invalid value: \"boolean\": spec in body must be of type integer,string: \"boolean\"",
                "spec: Invalid value: true: spec in body must validate at least one schema (anyOf)",
            ],
        ),
        (
            "int-or-string alone refuses others",
            json!({"x-kubernetes-int-or-string": true}),
            json!(1.5),
            vec![
                "spec: Invalid value: \"number\": spec in body must be of type integer,string: \"number\"",
            ],
        ),
        (
            "oneOf",
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"a": "x", "b": "y"}),
            vec![
                r#"spec: Invalid value: {"a":"x","b":"y"}: spec in body must validate one and only one schema (oneOf)"#,
            ],
        ),
        (
            "not",
            json!({"type": "object", "properties": {"a": {"type": "string"}},
            "not": {"required": ["a"]}}),
            json!({"a": "x"}),
            vec![
                r#"spec: Invalid value: {"a":"x"}: spec in body must not validate the schema (not)"#,
            ],
        ),
        (
            "allOf",
            json!({"type": "integer", "allOf": [{"minimum": 2}, {"maximum": 4}]}),
            json!(5),
            vec!["spec: Invalid value: 5: spec in body should be less than or equal to 4"],
        ),
        (
            "list-type set",
            json!({"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "string"}}),
            json!(["a", "b", "a"]),
            vec![r#"spec[2]: Duplicate value: "a""#],
        ),
        (
            "list-type map",
            json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}),
            json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}]),
            vec![r#"spec[1]: Duplicate value: {"name":"a"}"#],
        ),
        (
            "embedded resources need apiVersion and kind",
            json!({"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
            json!({"metadata": {"name": "x"}}),
            vec![
                "spec.apiVersion: Required value",
                "spec.kind: Required value",
            ],
        ),
        (
            "embedded resources' type and metadata are checked",
            json!({"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
            json!({"apiVersion": "a/b/c", "kind": "Po_d",
                "metadata": {"name": "a/b", "labels": {"-x": "y"}}}),
            vec![
                r#"spec.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                r#"spec.kind: Invalid value: "Po_d": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
                r#"spec.metadata.name: Invalid value: "a/b": may not contain '/'"#,
                r#"spec.metadata.labels: Invalid value: "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ],
        ),
        (
            "embedded resources' apiVersion and kind are non-empty strings",
            json!({"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
            json!({"apiVersion": "", "kind": 5}),
            vec![
                r#"spec.apiVersion: Invalid value: "": must not be empty"#,
                "spec.kind: Invalid value: 5: must be a string",
            ],
        ),
        (
            "preserve-unknown-fields without type",
            json!({"x-kubernetes-preserve-unknown-fields": true}),
            json!({"anything": [1, "two"]}),
            vec![],
        ),
    ]
}

#[test]
fn validation_corpus() {
    for (name, spec, value, want) in validation_cases() {
        let schema = with_spec(spec);
        let got = errors(&schema, json!({"spec": value}), None);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let schema = with_spec(json!({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 2}, "b": {"type": "integer", "minimum": 0}}}));
    let old = json!({"spec": {"a": "too long", "b": 1}});
    assert!(
        errors(
            &schema,
            json!({"spec": {"a": "too long", "b": 2}}),
            Some(old.clone())
        )
        .is_empty()
    );
    let changed = errors(
        &schema,
        json!({"spec": {"a": "longer still", "b": 2}}),
        Some(old.clone()),
    );
    assert_eq!(changed, ["spec.a: Too long: may not be more than 2 bytes"]);
    let new_error = errors(
        &schema,
        json!({"spec": {"a": "too long", "b": -1}}),
        Some(old),
    );
    assert_eq!(
        new_error,
        ["spec.b: Invalid value: -1: spec.b in body should be greater than or equal to 0"]
    );
}

#[test]
fn ratcheting_correlates_list_map_items_by_key() {
    let item = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}});
    let mut list_map = json!({"type": "array", "items": item.clone(),
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]});
    let schema = with_spec(json!({"type": "object", "properties": {"ports": list_map.clone()}}));
    let old = json!({"spec": {"ports": [{"name": "a", "port": 1000}]}});
    // The invalid item moved to index 1 behind a new one: unchanged by its key.
    let moved = json!({"spec": {"ports": [{"name": "b", "port": 1}, {"name": "a", "port": 1000}]}});
    assert!(errors(&schema, moved, Some(old.clone())).is_empty());
    // Items of an atomic list are only unchanged with their whole list.
    list_map
        .as_object_mut()
        .unwrap()
        .remove("x-kubernetes-list-type");
    list_map
        .as_object_mut()
        .unwrap()
        .remove("x-kubernetes-list-map-keys");
    let schema = with_spec(json!({"type": "object", "properties": {"ports": list_map}}));
    let same = json!({"spec": {"ports": [{"name": "a", "port": 1000}]}});
    assert!(errors(&schema, same, Some(old.clone())).is_empty());
    let grown = json!({"spec": {"ports": [{"name": "a", "port": 1000}, {"name": "b", "port": 1}]}});
    assert_eq!(
        errors(&schema, grown, Some(old)),
        [
            "spec.ports[0].port: Invalid value: 1000: spec.ports[0].port in body should be less than or equal to 100"
        ]
    );
}

/// (name, schema of spec, object's spec, spec after pruning, pruned paths).
fn pruning_cases() -> Vec<(&'static str, Value, Value, Value, Vec<&'static str>)> {
    vec![
        (
            "unknown fields go",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({"a": "x", "b": 1}),
            json!({"a": "x"}),
            vec!["spec.b"],
        ),
        (
            "nested in lists",
            json!({"type": "array", "items": {"type": "object",
            "properties": {"a": {"type": "string"}}}}),
            json!([{"a": "x", "z": 1}]),
            json!([{"a": "x"}]),
            vec!["spec[0].z"],
        ),
        (
            "preserved",
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"a": {"type": "object", "properties": {}}}}),
            json!({"a": {"drop": 1}, "keep": 2}),
            json!({"a": {}, "keep": 2}),
            vec!["spec.a.drop"],
        ),
        (
            "maps keep their keys",
            json!({"type": "object", "additionalProperties": {"type": "object",
            "properties": {"v": {"type": "integer"}}}}),
            json!({"k": {"v": 1, "w": 2}}),
            json!({"k": {"v": 1}}),
            vec!["spec.k.w"],
        ),
        (
            "embedded resources keep apiVersion, kind and metadata",
            json!({"type": "object",
            "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {}, "x": 1}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}),
            vec!["spec.metadata.bogus", "spec.x"],
        ),
        (
            "type mismatches are left to validation",
            json!({"type": "object",
            "properties": {"a": {"type": "string"}}}),
            json!("text"),
            json!("text"),
            vec![],
        ),
    ]
}

#[test]
fn pruning_corpus() {
    for (name, spec, value, want, pruned) in pruning_cases() {
        let schema = with_spec(spec);
        let mut object = json!({"apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "n", "unknownMeta": 1}, "spec": value, "extra": true});
        let mut got = prune(&mut object, &schema);
        got.retain(|p| p.starts_with("spec"));
        assert_eq!(object["spec"], want, "{name}");
        assert_eq!(got, pruned, "{name}");
        assert!(object.get("extra").is_none(), "{name}");
        assert_eq!(object["metadata"], json!({"name": "n"}), "{name}");
    }
}

/// (name, schema of spec, object's spec, spec after defaulting).
fn defaulting_cases() -> Vec<(&'static str, Value, Value, Value)> {
    vec![
        (
            "missing fields get defaults",
            json!({"type": "object",
            "properties": {"replicas": {"type": "integer", "default": 1}}}),
            json!({}),
            json!({"replicas": 1}),
        ),
        (
            "given values stay",
            json!({"type": "object",
            "properties": {"replicas": {"type": "integer", "default": 1}}}),
            json!({"replicas": 3}),
            json!({"replicas": 3}),
        ),
        (
            "defaults nest",
            json!({"type": "object", "properties": {"o": {"type": "object", "default": {},
            "properties": {"a": {"type": "string", "default": "x"}}}}}),
            json!({}),
            json!({"o": {"a": "x"}}),
        ),
        (
            "list items are defaulted",
            json!({"type": "array", "items": {"type": "object",
            "properties": {"p": {"type": "string", "default": "TCP"}}}}),
            json!([{}, {"p": "UDP"}]),
            json!([{"p": "TCP"}, {"p": "UDP"}]),
        ),
        (
            "null takes the default",
            json!({"type": "object",
            "properties": {"a": {"type": "string", "default": "d"}}}),
            json!({"a": null}),
            json!({"a": "d"}),
        ),
        (
            "non-nullable nulls go",
            json!({"type": "object",
            "properties": {"a": {"type": "string"}}}),
            json!({"a": null}),
            json!({}),
        ),
        (
            "nullable nulls stay",
            json!({"type": "object",
            "properties": {"a": {"type": "string", "nullable": true, "default": "d"}}}),
            json!({"a": null}),
            json!({"a": null}),
        ),
        (
            "map values are defaulted",
            json!({"type": "object", "additionalProperties": {"type": "object",
            "properties": {"w": {"type": "integer", "default": 5}}}}),
            json!({"k": {}}),
            json!({"k": {"w": 5}}),
        ),
    ]
}

#[test]
fn defaulting_corpus() {
    for (name, spec, value, want) in defaulting_cases() {
        let schema = with_spec(spec);
        let mut object = json!({"spec": value});
        default(&mut object, &schema);
        assert_eq!(object["spec"], want, "{name}");
    }
}

/// (name, schema, expected structural errors).
fn structural_cases() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        (
            "structural",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            vec![],
        ),
        (
            "root type",
            json!({"properties": {}}),
            vec!["openAPIV3Schema.type: Required value: must not be empty at the root"],
        ),
        (
            "root must be an object",
            json!({"type": "string"}),
            vec![r#"openAPIV3Schema.type: Invalid value: "string": must be object at the root"#],
        ),
        (
            "field types",
            json!({"type": "object", "properties": {"a": {}}}),
            vec![
                "openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields",
            ],
        ),
        (
            "item types",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {}}}}),
            vec![
                "openAPIV3Schema.properties[a].items.type: Required value: must not be empty for specified array items",
            ],
        ),
        (
            "arrays need items",
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            vec!["openAPIV3Schema.properties[a].items: Required value: must be specified"],
        ),
        (
            "value validations carry no types",
            json!({"type": "object",
            "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}}),
            vec![
                "openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
            ],
        ),
        (
            "int-or-string pattern",
            json!({"type": "object", "properties": {"a": {
            "x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
            vec![],
        ),
        (
            "metadata only name and generateName",
            json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            vec![
                "openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ],
        ),
        (
            "embedded resources are objects",
            json!({"type": "object", "properties": {"a": {
            "type": "string", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true}}}),
            vec![
                r#"openAPIV3Schema.properties[a].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#,
            ],
        ),
        (
            "no additionalProperties at the root",
            json!({"type": "object",
            "additionalProperties": {"type": "string"}}),
            vec!["openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root"],
        ),
    ]
}

#[test]
fn structural_corpus() {
    for (name, schema, want) in structural_cases() {
        let got: Vec<String> = validate_structural(&schema, &Path::root("openAPIV3Schema"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn the_corpus_has_at_least_forty_cases() {
    let count = validation_cases().len()
        + pruning_cases().len()
        + defaulting_cases().len()
        + structural_cases().len()
        + 1;
    assert!(count >= 40, "{count}");
}
