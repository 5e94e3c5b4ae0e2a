//! OpenAPI validation of custom resources: kube-openapi's keyword checks with its messages
//! (`spec.replicas in body should be greater than or equal to 1`), turned into field errors
//! as upstream's apiextensions validation does (Required, NotSupported, TooLong, TooMany,
//! TypeInvalid, Invalid), list-type uniqueness, embedded resources' apiVersion and kind, and
//! ratcheting: on an update, errors in values the update did not change are dropped.

use std::collections::HashSet;

use base64::Engine;
use kapi_apimachinery::validation::{
    self,
    field::{FieldError, FieldErrors, Path},
};
use serde_json::Value;

use super::{Structural, additional_properties, flag, join, properties};

/// Validates `new` against the schema; with `old` (an update), only errors in changed values
/// remain.
pub fn validate(new: &Value, old: Option<&Value>, schema: &Structural) -> FieldErrors {
    let mut found = Vec::new();
    let mut walk = Walk { errors: &mut found };
    walk.value(new, &schema.root, "");
    let mut errors = FieldErrors::new();
    for (location, error) in found {
        let unchanged = old.is_some_and(|old| unchanged(new, old, &schema.root, &location));
        if !unchanged {
            errors.push(error);
        }
    }
    errors
}

/// Whether the value at `location` is unchanged from its correlated old value, as upstream's
/// ratcheting correlates them: fields and map entries by name, list-map items by their keys,
/// items of other lists only through their whole list being unchanged.
fn unchanged(new: &Value, old: &Value, node: &Value, location: &[Step]) -> bool {
    if new == old {
        return true;
    }
    let Some((step, rest)) = location.split_first() else {
        return false;
    };
    let next = match step {
        Step::Field(name) => {
            let child = properties(node)
                .and_then(|p| p.get(name))
                .or_else(|| additional_properties(node));
            new.get(name).zip(old.get(name)).zip(child)
        }
        Step::Index(i) => {
            let keys = list_map_keys(node);
            let item = new.get(*i);
            let old_item = item.zip(old.as_array()).and_then(|(item, olds)| {
                let keys = keys?;
                olds.iter()
                    .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
            });
            item.zip(old_item).zip(node.get("items"))
        }
    };
    match next {
        Some(((new, old), child)) => unchanged(new, old, child, rest),
        None => false,
    }
}

/// The keys of a `x-kubernetes-list-type: map` list; `None` for other lists.
fn list_map_keys(node: &Value) -> Option<Vec<&str>> {
    (node["x-kubernetes-list-type"] == "map").then(|| {
        node["x-kubernetes-list-map-keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    })
}

/// A step of a value's location: a field or a list index.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
}

/// The location of a kube-openapi field name such as `spec.items[0].name`.
fn location(name: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in name.split('.').filter(|p| !p.is_empty()) {
        let (field, rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !field.is_empty() {
            steps.push(Step::Field(field.to_string()));
        }
        for index in rest.split(['[', ']']).filter(|s| !s.is_empty()) {
            match index.parse() {
                Ok(i) => steps.push(Step::Index(i)),
                Err(_) => steps.push(Step::Field(index.to_string())),
            }
        }
    }
    steps
}

/// The field path of a kube-openapi name (the root is upstream's nil path).
fn field_path(name: &str) -> Path {
    match name {
        "" => Path::root("<nil>"),
        name => Path::root(name),
    }
}

/// Go's `%v` of a float64 as kube-openapi prints limits.
fn go_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e21 {
        format!("{}", value as i64)
    } else {
        value.to_string()
    }
}

/// The JSON type name of a value, as kube-openapi names it in type errors.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

struct Walk<'a> {
    errors: &'a mut Vec<(Vec<Step>, FieldError)>,
}

impl Walk<'_> {
    fn push(&mut self, name: &str, error: FieldError) {
        self.errors.push((location(name), error));
    }

    fn invalid(&mut self, name: &str, value: Value, detail: String) {
        let error = FieldError::invalid(&field_path(name), value, detail);
        self.push(name, error);
    }

    fn value(&mut self, value: &Value, node: &Value, name: &str) {
        if value.is_null() {
            let typed = node.get("type").is_some() || flag(node, "x-kubernetes-int-or-string");
            if !flag(node, "nullable") && typed {
                self.type_error(name, node, value);
            }
            return;
        }
        if !self.check_type(value, node, name) {
            return;
        }
        self.enumeration(value, node, name);
        self.combinators(value, node, name);
        match value {
            Value::String(s) => self.string(s, node, name),
            Value::Number(_) => self.number(value, node, name),
            Value::Array(items) => self.array(items, node, name),
            Value::Object(_) => self.object(value, node, name),
            _ => {}
        }
    }

    fn type_error(&mut self, name: &str, node: &Value, value: &Value) {
        let want = match flag(node, "x-kubernetes-int-or-string") {
            true => "integer,string",
            false => node["type"].as_str().unwrap_or_default(),
        };
        let actual = type_name(value);
        let detail = format!("{name} in body must be of type {want}: \"{actual}\"");
        let error = FieldError::type_invalid(&field_path(name), actual, detail);
        self.push(name, error);
    }

    /// Whether the value has the node's type, so that the type's own checks apply (an
    /// int-or-string is checked on, whatever its type).
    fn check_type(&mut self, value: &Value, node: &Value, name: &str) -> bool {
        if flag(node, "x-kubernetes-int-or-string") {
            // Upstream's validators all run on such a value: its anyOf reports too.
            if !matches!(type_name(value), "integer" | "string") {
                self.type_error(name, node, value);
            }
            return true;
        }
        let Some(want) = node.get("type").and_then(Value::as_str) else {
            return true;
        };
        let actual = type_name(value);
        let fits = want == actual || (want == "number" && actual == "integer");
        if !fits {
            self.type_error(name, node, value);
        }
        fits
    }

    fn enumeration(&mut self, value: &Value, node: &Value, name: &str) {
        let Some(allowed) = node.get("enum").and_then(Value::as_array) else {
            return;
        };
        if allowed.contains(value) {
            return;
        }
        let names: Vec<String> = allowed
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let error = FieldError::not_supported(&field_path(name), value.clone(), names);
        self.push(name, error);
    }

    fn combinators(&mut self, value: &Value, node: &Value, name: &str) {
        for branch in node["allOf"].as_array().into_iter().flatten() {
            self.value(value, branch, name);
        }
        let passes = |branch: &Value| {
            let mut found = Vec::new();
            Walk { errors: &mut found }.value(value, branch, name);
            found.is_empty()
        };
        if let Some(branches) = node["anyOf"].as_array()
            && !branches.iter().any(passes)
        {
            let detail = format!("{name} in body must validate at least one schema (anyOf)");
            self.invalid(name, value.clone(), detail);
        }
        if let Some(branches) = node["oneOf"].as_array()
            && branches.iter().filter(|b| passes(b)).count() != 1
        {
            let detail = format!("{name} in body must validate one and only one schema (oneOf)");
            self.invalid(name, value.clone(), detail);
        }
        if let Some(not) = node.get("not")
            && passes(not)
        {
            let detail = format!("{name} in body must not validate the schema (not)");
            self.invalid(name, value.clone(), detail);
        }
    }

    fn string(&mut self, text: &str, node: &Value, name: &str) {
        let length = text.chars().count() as u64;
        if let Some(max) = node["maxLength"].as_u64()
            && length > max
        {
            let error = FieldError::too_long(&field_path(name), max as usize);
            self.push(name, error);
        }
        if let Some(min) = node["minLength"].as_u64()
            && length < min
        {
            let detail = format!("{name} in body should be at least {min} chars long");
            self.invalid(name, Value::from(text), detail);
        }
        if let Some(pattern) = node["pattern"].as_str()
            && regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(text))
        {
            let detail = format!("{name} in body should match '{pattern}'");
            self.invalid(name, Value::from(text), detail);
        }
        if let Some(format) = node["format"].as_str()
            && !flag(node, "x-kubernetes-int-or-string")
            && !valid_format(format, text)
        {
            let detail = format!("{name} in body must be of type {format}: {text:?}");
            let error = FieldError::type_invalid(&field_path(name), text, detail);
            self.push(name, error);
        }
    }

    fn number(&mut self, value: &Value, node: &Value, name: &str) {
        let n = value.as_f64().unwrap_or_default();
        let limit = |key: &str| node[key].as_f64();
        if let Some(max) = limit("maximum") {
            let exclusive = flag(node, "exclusiveMaximum");
            if n > max || (exclusive && n == max) {
                let relation = match exclusive {
                    true => "less than",
                    false => "less than or equal to",
                };
                let detail = format!("{name} in body should be {relation} {}", go_number(max));
                self.invalid(name, value.clone(), detail);
            }
        }
        if let Some(min) = limit("minimum") {
            let exclusive = flag(node, "exclusiveMinimum");
            if n < min || (exclusive && n == min) {
                let relation = match exclusive {
                    true => "greater than",
                    false => "greater than or equal to",
                };
                let detail = format!("{name} in body should be {relation} {}", go_number(min));
                self.invalid(name, value.clone(), detail);
            }
        }
        if let Some(factor) = limit("multipleOf")
            && factor > 0.0
            && (n / factor).fract() != 0.0
        {
            let detail = format!(
                "{name} in body should be a multiple of {}",
                go_number(factor)
            );
            self.invalid(name, value.clone(), detail);
        }
    }

    fn array(&mut self, items: &[Value], node: &Value, name: &str) {
        let count = items.len();
        if let Some(max) = node["maxItems"].as_u64()
            && count as u64 > max
        {
            let error = FieldError::too_many(&field_path(name), Some(count), max as usize);
            self.push(name, error);
        }
        if let Some(min) = node["minItems"].as_u64()
            && (count as u64) < min
        {
            let detail = format!("{name} in body should have at least {min} items");
            self.invalid(name, Value::from(count), detail);
        }
        if flag(node, "uniqueItems") && has_duplicates(items) {
            let detail = format!("{name} in body shouldn't contain duplicates");
            self.invalid(name, Value::Array(items.to_vec()), detail);
        }
        self.list_type(items, node, name);
        if let Some(item_schema) = node.get("items") {
            for (i, item) in items.iter().enumerate() {
                self.value(item, item_schema, &format!("{name}[{i}]"));
            }
        }
    }

    /// `x-kubernetes-list-type`: set items and map keys must be unique (upstream's listtype
    /// validation: a Duplicate at the repeated element).
    fn list_type(&mut self, items: &[Value], node: &Value, name: &str) {
        let keys: Vec<&str> = node["x-kubernetes-list-map-keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let identity = |item: &Value| -> Value {
            match node["x-kubernetes-list-type"].as_str() {
                Some("map") => {
                    let mut key = serde_json::Map::new();
                    for k in &keys {
                        if let Some(v) = item.get(*k) {
                            key.insert((*k).to_string(), v.clone());
                        }
                    }
                    Value::Object(key)
                }
                _ => item.clone(),
            }
        };
        if !matches!(node["x-kubernetes-list-type"].as_str(), Some("set" | "map")) {
            return;
        }
        let mut seen = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let key = identity(item);
            if !seen.insert(key.to_string()) {
                let at = format!("{name}[{i}]");
                let error = FieldError::duplicate(&field_path(&at), key);
                self.push(&at, error);
            }
        }
    }

    fn object(&mut self, value: &Value, node: &Value, name: &str) {
        let fields = value.as_object().expect("an object");
        let count = fields.len();
        if let Some(max) = node["maxProperties"].as_u64()
            && count as u64 > max
        {
            let error = FieldError::too_many(&field_path(name), Some(count), max as usize);
            self.push(name, error);
        }
        if let Some(min) = node["minProperties"].as_u64()
            && (count as u64) < min
        {
            let detail = format!("{name} in body should have at least {min} properties");
            self.invalid(name, Value::from(count), detail);
        }
        for required in node["required"].as_array().into_iter().flatten() {
            let Some(key) = required.as_str() else {
                continue;
            };
            if !fields.contains_key(key) {
                let at = join(name, key);
                self.push(&at, FieldError::required(&field_path(&at), ""));
            }
        }
        if flag(node, "x-kubernetes-embedded-resource") {
            self.embedded_resource(fields, name);
        }
        let declared = properties(node);
        let additional = additional_properties(node);
        for (key, child_value) in fields {
            if name.is_empty() && ["apiVersion", "kind", "metadata"].contains(&key.as_str()) {
                continue;
            }
            if let Some(child) = declared.and_then(|d| d.get(key)).or(additional) {
                self.value(child_value, child, &join(name, key));
            }
        }
    }
}

impl Walk<'_> {
    /// An embedded resource's type and object metadata, as upstream's
    /// validateEmbeddedResource checks them: apiVersion and kind required strings, the
    /// apiVersion a group/version, the kind a DNS-1035 label but for its case, the metadata
    /// valid object metadata (a name a path segment, when there is one).
    fn embedded_resource(&mut self, fields: &serde_json::Map<String, Value>, name: &str) {
        for key in ["apiVersion", "kind"] {
            if !fields.contains_key(key) {
                let at = join(name, key);
                self.push(&at, FieldError::required(&field_path(&at), ""));
            }
        }
        for (key, value) in fields {
            let at = join(name, key);
            let detail = match (key.as_str(), value) {
                ("apiVersion" | "kind", Value::String(text)) if text.is_empty() => {
                    Some("must not be empty".to_string())
                }
                ("apiVersion" | "kind", value) if !value.is_string() => {
                    Some("must be a string".to_string())
                }
                ("apiVersion", Value::String(text)) if text.matches('/').count() > 1 => {
                    Some(format!("unexpected GroupVersion string: {text}"))
                }
                ("kind", Value::String(text)) => {
                    let errors = validation::is_dns1035_label(&text.to_lowercase());
                    (!errors.is_empty()).then(|| {
                        let errors = errors.join(",");
                        format!("may have mixed case, but should otherwise match: {errors}")
                    })
                }
                ("metadata", Value::Object(_)) => {
                    self.embedded_metadata(value, &at);
                    None
                }
                _ => None,
            };
            if let Some(detail) = detail {
                self.invalid(&at, value.clone(), detail);
            }
        }
    }

    /// An embedded resource's metadata, validated as a created object's, with a stand-in
    /// name when it has none.
    fn embedded_metadata(&mut self, meta: &Value, name: &str) {
        let mut meta = meta.clone();
        if meta["name"].as_str().is_none_or(str::is_empty) {
            meta["name"] = Value::from("fakename");
        }
        let namespaced = meta["namespace"].as_str().is_some_and(|n| !n.is_empty());
        let errors = validation::validate_object_meta(
            &meta,
            namespaced,
            validation::validate_path_segment_name,
            &Path::root(name),
        );
        for error in errors.iter() {
            self.push(name, error.clone());
        }
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    let mut seen = HashSet::new();
    items.iter().any(|item| !seen.insert(item.to_string()))
}

/// Whether `text` has the string `format` (the formats upstream validates; others pass).
fn valid_format(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => is_date_time(text),
        "date" => is_date(text),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_ok(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(text),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(text),
        "hostname" => is_hostname(text),
        "email" => is_email(text),
        "mac" => is_mac(text),
        "duration" => is_duration(text),
        "uri" => text
            .split_once(':')
            .is_some_and(|(scheme, _)| !scheme.is_empty()),
        _ => true,
    }
}

fn digits(text: &str, count: usize) -> bool {
    text.len() == count && text.bytes().all(|b| b.is_ascii_digit())
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
}

fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't', ' ']) else {
        return false;
    };
    let time = time.trim_end_matches(['Z', 'z']);
    let clock = time.split(['+', '-']).next().unwrap_or_default();
    let clock = clock.split('.').next().unwrap_or_default();
    let parts: Vec<&str> = clock.split(':').collect();
    is_date(date) && parts.len() == 3 && parts.iter().all(|p| digits(p, 2))
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    groups.len() == 5
        && groups
            .iter()
            .zip(lengths)
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_cidr(text: &str) -> bool {
    let Some((ip, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

fn is_hostname(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn is_email(text: &str) -> bool {
    text.split_once('@')
        .is_some_and(|(local, domain)| !local.is_empty() && is_hostname(domain))
}

fn is_mac(text: &str) -> bool {
    let groups: Vec<&str> = text.split([':', '-']).collect();
    matches!(groups.len(), 6 | 8 | 20)
        && groups
            .iter()
            .all(|g| g.len() == 2 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Go's time.ParseDuration syntax (`1h30m`, `300ms`, `-1.5s`), as upstream's `duration`.
fn is_duration(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    if body == "0" {
        return true;
    }
    let mut rest = body;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_end == 0 {
            return false;
        }
        rest = &rest[number_end..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .find(|unit| rest.starts_with(**unit));
        match unit {
            Some(unit) => rest = &rest[unit.len()..],
            None => return false,
        }
    }
    true
}
