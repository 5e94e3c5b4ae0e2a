//! The structural check: what makes an OpenAPI schema structural (upstream's
//! ValidateStructural), with upstream's messages.

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use super::{additional_properties, flag, properties};

/// Where a node is: its type's requirement is worded by it.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The reasons `schema` (at `path`) is not structural; empty if it is.
pub fn validate_structural(schema: &Value, path: &Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    invariants(schema, Level::Root, path, &mut errors);
    errors
}

fn invariants(node: &Value, level: Level, path: &Path, errors: &mut FieldErrors) {
    let type_ = node["type"].as_str().unwrap_or_default();
    if type_ == "array" && node.get("items").is_none() {
        errors.push(FieldError::required(
            &path.child("items"),
            "must be specified",
        ));
    }
    if let Some(items) = node.get("items") {
        invariants(items, Level::Item, &path.child("items"), errors);
    }
    for (name, child) in properties(node).into_iter().flatten() {
        invariants(
            child,
            Level::Field,
            &path.child("properties").key(name),
            errors,
        );
    }
    if node.get("additionalProperties").is_some() && level == Level::Root {
        let at = path.child("additionalProperties");
        errors.push(FieldError::forbidden(&at, "must not be used at the root"));
    }
    if let Some(additional) = additional_properties(node) {
        invariants(
            additional,
            Level::Field,
            &path.child("additionalProperties"),
            errors,
        );
    }
    value_validations(node, path, errors);
    types(node, type_, level, path, errors);
    if let Some(metadata) = properties(node).and_then(|p| p.get("metadata")) {
        let check = level == Level::Root || flag(node, "x-kubernetes-embedded-resource");
        let at = path.child("properties").key("metadata");
        metadata_invariants(metadata, check, level, &at, errors);
    }
}

/// The rules on `type` and on embedded resources.
fn types(node: &Value, type_: &str, level: Level, path: &Path, errors: &mut FieldErrors) {
    let embedded = flag(node, "x-kubernetes-embedded-resource");
    let type_path = path.child("type");
    if embedded && type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errors.push(match type_ {
            "" => FieldError::required(&type_path, detail),
            other => FieldError::invalid(&type_path, other, detail),
        });
    } else if type_.is_empty()
        && !flag(node, "x-kubernetes-int-or-string")
        && !flag(node, "x-kubernetes-preserve-unknown-fields")
    {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(&type_path, detail));
    }
    if embedded && node.get("additionalProperties").is_some() {
        let at = path.child("additionalProperties");
        let detail = "must not be used if x-kubernetes-embedded-resource is set";
        errors.push(FieldError::forbidden(&at, detail));
    }
    if level == Level::Root && !type_.is_empty() && type_ != "object" {
        errors.push(FieldError::invalid(
            &type_path,
            type_,
            "must be object at the root",
        ));
    }
    let check_metadata = level == Level::Root || embedded;
    for key in ["kind", "apiVersion"] {
        if let Some(child) = properties(node).and_then(|p| p.get(key))
            && check_metadata
            && child["type"] != "string"
        {
            let at = path.child("properties").key(key).child("type");
            let found = child["type"].as_str().unwrap_or_default();
            errors.push(FieldError::invalid(&at, found, "must be string"));
        }
    }
    let empty_properties = properties(node).is_none_or(|p| p.is_empty());
    if embedded && !flag(node, "x-kubernetes-preserve-unknown-fields") && empty_properties {
        let detail = "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        errors.push(FieldError::required(&path.child("properties"), detail));
    }
}

/// `metadata` at the root may only restrict name and generateName.
fn metadata_invariants(
    metadata: &Value,
    check: bool,
    level: Level,
    path: &Path,
    errors: &mut FieldErrors,
) {
    if check && metadata["type"] != "object" {
        let found = metadata["type"].as_str().unwrap_or_default();
        errors.push(FieldError::invalid(
            &path.child("type"),
            found,
            "must be object",
        ));
    }
    if level != Level::Root {
        return;
    }
    let allowed = ["type", "properties", "description", "default"];
    let extra_keys = metadata
        .as_object()
        .is_some_and(|m| m.keys().any(|k| !allowed.contains(&k.as_str())));
    let extra_properties =
        properties(metadata).is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName"));
    if extra_keys || extra_properties {
        let detail = "must not specify anything other than name and generateName, but metadata is implicitly specified";
        errors.push(FieldError::forbidden(path, detail));
    }
}

/// What a value validation (`allOf`, `anyOf`, `oneOf`, `not` and their subtrees) must not
/// specify, with the words of upstream's check.
const FORBIDDEN_IN_VALUE_VALIDATION: &[(&str, &str)] = &[
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "must be false to be structural",
    ),
    (
        "x-kubernetes-embedded-resource",
        "must be false to be structural",
    ),
    (
        "x-kubernetes-int-or-string",
        "must be false to be structural",
    ),
    (
        "x-kubernetes-list-map-keys",
        "must be empty to be structural",
    ),
    (
        "x-kubernetes-list-type",
        "must be undefined to be structural",
    ),
    (
        "x-kubernetes-map-type",
        "must be undefined to be structural",
    ),
    ("x-kubernetes-validations", "must be empty to be structural"),
];

/// The `allOf`/`anyOf`/`oneOf`/`not` of a node, except upstream's int-or-string patterns
/// (`anyOf: [{type: integer}, {type: string}]`, also as the first `allOf`'s `anyOf`).
fn value_validations(node: &Value, path: &Path, errors: &mut FieldErrors) {
    let int_or_string = flag(node, "x-kubernetes-int-or-string");
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in node[key].as_array().into_iter().flatten().enumerate() {
            let skip_types = int_or_string && (key == "anyOf" || (key == "allOf" && i == 0));
            value_validation(branch, skip_types, &path.child(key).index(i), errors);
        }
    }
    if let Some(not) = node.get("not") {
        value_validation(not, false, &path.child("not"), errors);
    }
}

fn value_validation(node: &Value, skip_types: bool, path: &Path, errors: &mut FieldErrors) {
    let Some(fields) = node.as_object() else {
        return;
    };
    for (key, detail) in FORBIDDEN_IN_VALUE_VALIDATION {
        let allowed = skip_types && *key == "type";
        let set = match fields.get(*key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if set && !allowed {
            errors.push(FieldError::forbidden(&path.child(key), *detail));
        }
    }
    if properties(node).is_some_and(|p| p.contains_key("metadata")) {
        let at = path.child("properties").key("metadata");
        errors.push(FieldError::forbidden(
            &at,
            "must not be specified in a nested context",
        ));
    }
    for (name, child) in properties(node).into_iter().flatten() {
        value_validation(child, false, &path.child("properties").key(name), errors);
    }
    if let Some(items) = node.get("items") {
        value_validation(items, false, &path.child("items"), errors);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in node[key].as_array().into_iter().flatten().enumerate() {
            let skip = skip_types && key == "anyOf";
            value_validation(branch, skip, &path.child(key).index(i), errors);
        }
    }
    if let Some(not) = node.get("not") {
        value_validation(not, false, &path.child("not"), errors);
    }
}
