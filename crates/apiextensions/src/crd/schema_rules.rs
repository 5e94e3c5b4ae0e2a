//! The OpenAPI rules of a CRD version's schema beyond structural-ness (upstream's
//! ValidateCustomResourceDefinitionOpenAPISchema without the CEL compilation): supported
//! keywords and types, where defaults may be, properties vs additionalProperties, the
//! `x-kubernetes-*` list and map extensions, and the shape of `x-kubernetes-validations`.

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::{Map, Value};

use super::fieldpath::resolve_field_path;
use super::gojson;

/// The types a property may have (sorted, as upstream lists them).
const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// The reasons a validation rule may give (sorted).
const RULE_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Which rules are enforced: all on create; on update, upstream does not tighten validation
/// of stored data, so a rule the stored CRD's schemas already break is not enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Strictness {
    /// The schema must be structural (always, unless a legacy CRD preserves unknown fields
    /// and uses no defaults or `x-kubernetes-*` extensions); CEL rules are compiled only then.
    pub structural: bool,
    /// Every `type` must be one of [`TYPES`].
    pub valid_types: bool,
    /// Items of `set` lists must be atomic.
    pub atomic_set_items: bool,
    /// Items of set and map lists and map keys are not nullable; keys need a default or
    /// must be required.
    pub map_list_keys: bool,
    /// Defaults must not have fields their node does not specify.
    pub pruned_defaults: bool,
}

impl Strictness {
    /// Every rule (creates).
    pub(crate) const ALL: Strictness = Strictness {
        structural: true,
        valid_types: true,
        atomic_set_items: true,
        map_list_keys: true,
        pruned_defaults: true,
    };

    /// The rules the stored CRD's schemas (`old_spec.versions[*].schema`) all satisfy.
    pub(crate) fn for_update(old_spec: &Value) -> Strictness {
        let schemas: Vec<&Value> = old_spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| &v["schema"]["openAPIV3Schema"])
            .collect();
        let any = |pred: &dyn Fn(&Map<String, Value>) -> bool| {
            schemas.iter().any(|schema| schema_has(schema, pred))
        };
        Strictness {
            structural: true,
            valid_types: !any(&|node| {
                let type_ = text(node, "type");
                !type_.is_empty() && !TYPES.contains(&type_)
            }),
            atomic_set_items: !any(&|node| {
                text(node, "x-kubernetes-list-type") == "set"
                    && !set_items_atomic(&node["items"], &Path::root("")).is_empty()
            }),
            map_list_keys: !any(&|node| !map_list_keys(node, &Path::root("")).is_empty()),
            pruned_defaults: !schemas
                .iter()
                .any(|schema| super::schema_defaults::has_unpruned_defaults(schema)),
        }
    }
}

/// Whether `pred` holds for `schema` or any schema nested in it (upstream's SchemaHas).
pub(crate) fn schema_has(schema: &Value, pred: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    let Some(node) = schema.as_object() else {
        return false;
    };
    if pred(node) {
        return true;
    }
    let nested_map = |key: &str| {
        node.get(key)
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(|s| schema_has(s, pred)))
    };
    let nested_list = |key: &str| list(node, key).iter().any(|s| schema_has(s, pred));
    [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ]
    .into_iter()
    .any(nested_map)
        || ["allOf", "anyOf", "oneOf", "items"]
            .into_iter()
            .any(nested_list)
        || ["additionalProperties", "additionalItems", "not", "items"]
            .into_iter()
            .any(|key| node.get(key).is_some_and(|s| schema_has(s, pred)))
}

/// Where in the schema the walk is (upstream's specStandardValidator state).
#[derive(Clone, Debug)]
struct Context {
    /// The rules enforced.
    strictness: Strictness,
    /// Why `default` is forbidden here (`None`: allowed).
    forbidden_defaults: Option<String>,
    /// Inside the schema of an object's `metadata`, `kind` or `apiVersion`.
    inside_resource_meta: bool,
}

/// The errors of `schema` (the root `openAPIV3Schema`) at `path`.
pub(crate) fn validate(schema: &Value, path: &Path, strictness: Strictness) -> FieldErrors {
    let context = Context {
        strictness,
        forbidden_defaults: None,
        inside_resource_meta: false,
    };
    walk(schema, path, &context, true)
}

/// One schema node and, depth first, the schemas in it.
fn walk(schema: &Value, path: &Path, context: &Context, is_root: bool) -> FieldErrors {
    let Some(node) = schema.as_object() else {
        return FieldErrors::new();
    };
    let mut errs = keywords(node, path, context);
    if flag(node, "uniqueItems") {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    errs.extend(children(node, path, context, is_root));
    errs.extend(extensions(node, path, context.strictness));
    if context.strictness.map_list_keys {
        errs.extend(map_list_keys(node, path));
    }
    errs.extend(rules(schema, path));
    errs
}

fn flag(node: &Map<String, Value>, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(node: &'a Map<String, Value>, key: &str) -> &'a str {
    node.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn non_empty_map(node: &Map<String, Value>, key: &str) -> bool {
    node.get(key)
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
}

/// Upstream's specStandardValidatorV3.validate: the keywords and types kapi does not
/// support, and defaults where pruning could not apply them.
fn keywords(node: &Map<String, Value>, path: &Path, context: &Context) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let type_ = text(node, "type");
    if context.strictness.valid_types && !type_.is_empty() && !TYPES.contains(&type_) {
        errs.push(FieldError::not_supported(&path.child("type"), type_, TYPES));
    }
    if node.get("default").is_some_and(|d| !d.is_null())
        && let Some(reason) = &context.forbidden_defaults
    {
        errs.push(FieldError::forbidden(
            &path.child("default"),
            format!("must not be set {reason}"),
        ));
    }
    if !text(node, "id").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("id"),
            "id is not supported",
        ));
    }
    let unsupported = [
        (
            "additionalItems",
            node.get("additionalItems").is_some_and(|v| !v.is_null()),
        ),
        (
            "patternProperties",
            non_empty_map(node, "patternProperties"),
        ),
        ("definitions", non_empty_map(node, "definitions")),
        (
            "dependencies",
            node.get("dependencies").is_some_and(|v| !v.is_null()),
        ),
        ("$ref", node.get("$ref").is_some_and(|v| !v.is_null())),
    ];
    for (key, present) in unsupported {
        if present {
            errs.push(FieldError::forbidden(
                &path.child(key),
                format!("{key} is not supported"),
            ));
        }
    }
    if type_ == "null" {
        errs.push(FieldError::forbidden(
            &path.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if node.get("items").is_some_and(Value::is_array) {
        errs.push(FieldError::forbidden(
            &path.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if context.inside_resource_meta && flag(node, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    errs
}

/// The schemas nested in `node`, with the context each is validated in.
fn children(
    node: &Map<String, Value>,
    path: &Path,
    context: &Context,
    is_root: bool,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(additional) = node.get("additionalProperties").filter(|v| !v.is_null()) {
        let schema_or_false = additional.is_object() || additional == &Value::Bool(false);
        if non_empty_map(node, "properties") && schema_or_false {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let mut inner = context.clone();
        if context.inside_resource_meta {
            inner.forbidden_defaults =
                Some("inside additionalProperties applying to object metadata".into());
        }
        errs.extend(walk(
            additional,
            &path.child("additionalProperties"),
            &inner,
            false,
        ));
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        let embedded = flag(node, "x-kubernetes-embedded-resource");
        for (name, property) in properties {
            let mut inner = context.clone();
            if (is_root || embedded) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion")
            {
                inner.inside_resource_meta = true;
                if is_root {
                    inner.forbidden_defaults = Some(format!("in top-level {name}"));
                }
            }
            errs.extend(walk(
                property,
                &path.child("properties").key(name),
                &inner,
                false,
            ));
        }
    }
    errs.extend(walk(
        node.get("not").unwrap_or(&Value::Null),
        &path.child("not"),
        context,
        false,
    ));
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, schema) in list(node, key).iter().enumerate() {
            errs.extend(walk(schema, &path.child(key).index(i), context, false));
        }
    }
    for key in ["definitions", "dependencies"] {
        if let Some(map) = node.get(key).and_then(Value::as_object) {
            for (name, schema) in map {
                errs.extend(walk(schema, &path.child(key).key(name), context, false));
            }
        }
    }
    match node.get("items") {
        Some(Value::Array(schemas)) => {
            for (i, schema) in schemas.iter().enumerate() {
                errs.extend(walk(schema, &path.child("items").index(i), context, false));
            }
        }
        Some(schema) => errs.extend(walk(schema, &path.child("items"), context, false)),
        None => {}
    }
    errs
}

fn list<'a>(node: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    node.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `x-kubernetes-preserve-unknown-fields`, `-map-type`, `-list-type` and
/// `-list-map-keys`: their values and the types they need.
fn extensions(node: &Map<String, Value>, path: &Path, strictness: Strictness) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let type_ = text(node, "type");
    if let Some(map_type) = node.get("x-kubernetes-map-type").and_then(Value::as_str) {
        errs.extend(type_needed(type_, "object", "x-kubernetes-map-type", path));
        if !matches!(map_type, "atomic" | "granular") {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-map-type"),
                map_type,
                ["atomic", "granular"],
            ));
        }
    }
    let list_type = node.get("x-kubernetes-list-type").and_then(Value::as_str);
    if let Some(list_type) = list_type {
        if type_ != "array" {
            errs.extend(type_needed(type_, "array", "x-kubernetes-list-type", path));
        } else if list_type == "set" && strictness.atomic_set_items {
            errs.extend(set_items_atomic(&node["items"], path));
        }
        if !matches!(list_type, "atomic" | "set" | "map") {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-list-type"),
                list_type,
                ["atomic", "set", "map"],
            ));
        }
    }
    let keys = list(node, "x-kubernetes-list-map-keys");
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                detail,
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                other,
                detail,
            )),
        }
    }
    if list_type == Some("map") {
        errs.extend(map_list(node, path));
    }
    errs
}

/// An extension that needs `type: <needed>`.
fn type_needed(type_: &str, needed: &str, extension: &str, path: &Path) -> FieldErrors {
    if type_ == needed {
        return FieldErrors::new();
    }
    let detail = format!("must be {needed} if {extension} is specified");
    FieldErrors::from(if type_.is_empty() {
        FieldError::required(&path.child("type"), detail)
    } else {
        FieldError::invalid(&path.child("type"), type_, detail)
    })
}

/// The items of a set list must be atomic.
fn set_items_atomic(items: &Value, path: &Path) -> FieldErrors {
    let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
    let list_type = &items["x-kubernetes-list-type"];
    match items["type"].as_str() {
        Some("array") if list_type.as_str().is_some_and(|t| t != "atomic") => {
            FieldErrors::from(FieldError::invalid(
                &path.child("items").child("x-kubernetes-list-type"),
                list_type.clone(),
                detail,
            ))
        }
        // Upstream reports the item's list type (usually unset) as the value here.
        Some("object") if items["x-kubernetes-map-type"].as_str() != Some("atomic") => {
            FieldErrors::from(FieldError::invalid(
                &path.child("items").child("x-kubernetes-map-type"),
                list_type.clone(),
                detail,
            ))
        }
        _ => FieldErrors::new(),
    }
}

/// A map list: keys given, object items with scalar key properties.
fn map_list(node: &Map<String, Value>, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let keys_value = node
        .get("x-kubernetes-list-map-keys")
        .unwrap_or(&Value::Null);
    let keys = list(node, "x-kubernetes-list-map-keys");
    if keys.is_empty() {
        errs.push(FieldError::required(
            &path.child("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let items = node.get("items").unwrap_or(&Value::Null);
    match items {
        Value::Null => errs.push(FieldError::required(
            &path.child("items"),
            "must have a schema if x-kubernetes-list-type is map",
        )),
        Value::Array(_) => errs.push(FieldError::invalid(
            &path.child("items"),
            items.clone(),
            "must only have a single schema if x-kubernetes-list-type is map",
        )),
        _ => {}
    }
    if !items.is_object() {
        return errs;
    }
    let item_type = items["type"].as_str().unwrap_or_default();
    if item_type != "object" {
        errs.push(FieldError::invalid(
            &path.child("items").child("type"),
            item_type,
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return errs;
    }
    let mut seen = Vec::new();
    for key in keys.iter().map(|k| k.as_str().unwrap_or_default()) {
        match items["properties"].get(key) {
            Some(property) => {
                if matches!(property["type"].as_str(), Some("array" | "object")) {
                    errs.push(FieldError::invalid(
                        &path
                            .child("items")
                            .child("properties")
                            .key(key)
                            .child("type"),
                        item_type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => errs.push(FieldError::invalid_rendered(
                &path.child("x-kubernetes-list-map-keys"),
                gojson::string_slice(keys_value),
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&key) {
            errs.push(FieldError::invalid_rendered(
                &path.child("x-kubernetes-list-map-keys"),
                gojson::string_slice(keys_value),
                "must not contain duplicate entries",
            ));
        }
        seen.push(key);
    }
    errs
}

/// Items of set and map lists, and map keys, cannot be nullable; keys need a default or
/// must be required (upstream's validateMapListKeysMapSet).
fn map_list_keys(node: &Map<String, Value>, path: &Path) -> FieldErrors {
    let items = node.get("items").unwrap_or(&Value::Null);
    let list_type = text(node, "x-kubernetes-list-type");
    if !items.is_object() || !matches!(list_type, "set" | "map") {
        return FieldErrors::new();
    }
    let mut errs = FieldErrors::new();
    if items["nullable"].as_bool() == Some(true) {
        errs.push(FieldError::forbidden(
            &path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type != "map" {
        return errs;
    }
    let required: Vec<&str> = items["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in list(node, "x-kubernetes-list-map-keys")
        .iter()
        .filter_map(Value::as_str)
    {
        let Some(property) = items["properties"].get(key) else {
            continue;
        };
        let key_path = path.child("items").child("properties").key(key);
        if !required.contains(&key) && property["default"].is_null() {
            errs.push(FieldError::required(
                &key_path.child("default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if property["nullable"].as_bool() == Some(true) {
            errs.push(FieldError::forbidden(
                &key_path.child("nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
    errs
}

fn has_newlines(text: &str) -> bool {
    text.contains(['\r', '\n'])
}

/// The shape of each `x-kubernetes-validations` entry (its compilation is the CEL
/// module's).
fn rules(schema: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let rules = schema["x-kubernetes-validations"].as_array();
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let rule_path = path.child("x-kubernetes-validations").index(i);
        errs.extend(rule_shape(rule, &rule_path));
        let field_path = rule["fieldPath"].as_str().unwrap_or_default();
        if !field_path.is_empty() && resolve_field_path(field_path, schema, true).is_err() {
            errs.push(FieldError::invalid(
                &rule_path.child("fieldPath"),
                field_path,
                "must be a valid path",
            ));
        }
    }
    errs
}

fn rule_shape(rule: &Value, path: &Path) -> FieldErrors {
    let field = |key: &str| rule[key].as_str().unwrap_or_default();
    let (text_rule, message) = (field("rule").trim(), field("message"));
    let mut errs = FieldErrors::new();
    if text_rule.is_empty() {
        errs.push(FieldError::required(
            &path.child("rule"),
            "rule is not specified",
        ));
    } else if !message.is_empty() && message.trim().is_empty() {
        errs.push(FieldError::invalid(
            &path.child("message"),
            message,
            "must be non-empty if specified",
        ));
    } else if has_newlines(message.trim()) {
        errs.push(FieldError::invalid(
            &path.child("message"),
            message,
            "must not contain line breaks",
        ));
    } else if has_newlines(text_rule) && message.trim().is_empty() {
        errs.push(FieldError::required(
            &path.child("message"),
            "message must be specified if rule contains line breaks",
        ));
    }
    let message_expression = field("messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(FieldError::required(
            &path.child("messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = rule["reason"].as_str()
        && !RULE_REASONS.contains(&reason)
    {
        errs.push(FieldError::not_supported(
            &path.child("reason"),
            reason,
            RULE_REASONS,
        ));
    }
    let field_path = field("fieldPath");
    if !field_path.is_empty() && field_path.trim().is_empty() {
        errs.push(FieldError::invalid(
            &path.child("fieldPath"),
            field_path,
            "must be non-empty if specified",
        ));
    }
    if has_newlines(field_path) {
        errs.push(FieldError::invalid(
            &path.child("fieldPath"),
            field_path,
            "must not contain line breaks",
        ));
    }
    errs
}
