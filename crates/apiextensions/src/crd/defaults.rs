//! Defaulting of apiextensions.k8s.io/v1 CustomResourceDefinitions (upstream's
//! `SetObjectDefaults_CustomResourceDefinition`), and the shape a typed v1 object writes:
//! fields without `omitempty` always present, `omitempty` fields dropped when zero.

use serde_json::{Map, Value, json};

/// The port a conversion webhook service is called on when none is given.
const DEFAULT_SERVICE_PORT: i64 = 443;

/// Applies the v1 defaults to a CRD in place: `names.singular` (the lowercased kind),
/// `names.listKind` (kind + `List`), `conversion` (`strategy: None`), a webhook service's
/// port (443) and, when empty, `status.storedVersions` (the storage version).
pub fn set_defaults(crd: &mut Value) {
    if !crd.is_object() {
        return;
    }
    default_names(object_at(crd, "spec"));
    default_conversion(object_at(crd, "spec"));
    default_stored_versions(crd);
}

/// `names.singular` and `names.listKind` from `names.kind`.
fn default_names(spec: &mut Map<String, Value>) {
    let names = entry_object(spec, "names");
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if is_empty_str(names.get("singular")) {
        names.insert("singular".into(), Value::from(kind.to_lowercase()));
    }
    if is_empty_str(names.get("listKind")) && !kind.is_empty() {
        names.insert("listKind".into(), Value::from(format!("{kind}List")));
    }
}

/// `conversion: {strategy: None}` when absent; port 443 for a webhook's service.
fn default_conversion(spec: &mut Map<String, Value>) {
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    let service = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut);
    if let Some(service) = service
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), Value::from(DEFAULT_SERVICE_PORT));
    }
}

/// `status.storedVersions = [storage version]` when it is empty.
fn default_stored_versions(crd: &mut Value) {
    let stored_empty = crd["status"]["storedVersions"]
        .as_array()
        .is_none_or(Vec::is_empty);
    if !stored_empty {
        return;
    }
    if let Some(storage) = super::access::storage_version(crd).map(str::to_string) {
        let status = object_at(crd, "status");
        status.insert("storedVersions".into(), json!([storage]));
    }
}

/// Writes `crd` as a typed v1 CustomResourceDefinition encodes: the fields without
/// `omitempty` are present (`status.conditions` as `null` when unset, empty names in
/// `status.acceptedNames`), and zero `omitempty` fields (`deprecated: false`,
/// `preserveUnknownFields: false`, a column's `priority: 0`) are dropped.
pub fn normalize(crd: &mut Value) {
    if !crd.is_object() {
        return;
    }
    normalize_spec(object_at(crd, "spec"));
    normalize_status(object_at(crd, "status"));
}

fn normalize_spec(spec: &mut Map<String, Value>) {
    for key in ["group", "scope"] {
        ensure(spec, key, Value::from(""));
    }
    ensure(spec, "versions", Value::Null);
    drop_if(spec, "preserveUnknownFields", &Value::Bool(false));
    let names = entry_object(spec, "names");
    ensure(names, "plural", Value::from(""));
    ensure(names, "kind", Value::from(""));
    if let Some(webhook) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(Value::as_object_mut)
    {
        ensure(webhook, "conversionReviewVersions", Value::Null);
    }
    let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) else {
        return;
    };
    for version in versions.iter_mut().filter_map(Value::as_object_mut) {
        normalize_version(version);
    }
}

fn normalize_version(version: &mut Map<String, Value>) {
    if let Some(schema) = version
        .get_mut("schema")
        .and_then(|s| s.get_mut("openAPIV3Schema"))
    {
        normalize_schema(schema);
    }
    ensure(version, "name", Value::from(""));
    ensure(version, "served", Value::Bool(false));
    ensure(version, "storage", Value::Bool(false));
    drop_if(version, "deprecated", &Value::Bool(false));
    let Some(columns) = version
        .get_mut("additionalPrinterColumns")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for column in columns.iter_mut().filter_map(Value::as_object_mut) {
        drop_if(column, "priority", &Value::from(0));
        drop_if(column, "format", &Value::from(""));
        drop_if(column, "description", &Value::from(""));
    }
}

/// JSONSchemaProps fields written only when not their zero value: strings, bools, lists
/// and maps (pointer fields such as `maximum` are dropped only when null).
const SCHEMA_OMITEMPTY: [&str; 24] = [
    "id",
    "$schema",
    "description",
    "type",
    "format",
    "title",
    "pattern",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "uniqueItems",
    "nullable",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "enum",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "properties",
    "patternProperties",
    "dependencies",
    "definitions",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
];

/// A validation rule's string fields written only when not empty.
const RULE_OMITEMPTY: [&str; 3] = ["message", "messageExpression", "fieldPath"];

/// Writes a schema (and every schema in it) as the typed JSONSchemaProps encodes it: zero
/// `omitempty` fields dropped, a validation rule's `rule` always present.
fn normalize_schema(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    node.retain(|key, value| !omitted(value, key, &SCHEMA_OMITEMPTY));
    for key in [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ] {
        if let Some(map) = node.get_mut(key).and_then(Value::as_object_mut) {
            map.values_mut().for_each(normalize_schema);
        }
    }
    for key in ["allOf", "oneOf", "anyOf", "items"] {
        if let Some(list) = node.get_mut(key).and_then(Value::as_array_mut) {
            list.iter_mut().for_each(normalize_schema);
        }
    }
    for key in ["items", "not", "additionalProperties", "additionalItems"] {
        if let Some(inner) = node.get_mut(key).filter(|v| v.is_object()) {
            normalize_schema(inner);
        }
    }
    if let Some(rules) = node
        .get_mut("x-kubernetes-validations")
        .and_then(Value::as_array_mut)
    {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            rule.retain(|key, value| !omitted(value, key, &RULE_OMITEMPTY));
            ensure(rule, "rule", Value::from(""));
        }
    }
}

/// Whether a typed encoding leaves out the field `key` holding `value`: null (a nil pointer,
/// list or map), or zero in one of the `omitempty` fields.
fn omitted(value: &Value, key: &str, omitempty: &[&str]) -> bool {
    value.is_null() || (omitempty.contains(&key) && is_zero(value))
}

/// Whether Go's `omitempty` leaves a field out: null, false, "", or an empty list or map.
pub(crate) fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

fn normalize_status(status: &mut Map<String, Value>) {
    ensure(status, "conditions", Value::Null);
    ensure(status, "storedVersions", Value::Null);
    let accepted = entry_object(status, "acceptedNames");
    ensure(accepted, "plural", Value::from(""));
    ensure(accepted, "kind", Value::from(""));
}

/// Inserts `value` at `key` when the key is missing.
fn ensure(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key).or_insert(value);
}

/// Removes `key` when it holds `zero` (or null).
fn drop_if(map: &mut Map<String, Value>, key: &str, zero: &Value) {
    if map.get(key).is_some_and(|v| v == zero || v.is_null()) {
        map.remove(key);
    }
}

fn is_empty_str(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_none_or(str::is_empty)
}

/// The object at `object[key]`, made an (empty) object when it is not one.
pub(crate) fn object_at<'a>(object: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let map = object
        .as_object_mut()
        .expect("object_at is called on JSON objects");
    entry_object(map, key)
}

/// The object at `map[key]`, made an (empty) object when it is not one.
fn entry_object<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(inner) => inner,
        _ => unreachable!("made an object above"),
    }
}
