//! Small helpers shared by the built-in types: reading JSON objects the way Go reads typed
//! fields (absent, `null` and the zero value are the same), the metav1 time formats, and the
//! validation pieces core types add to the generic metadata checks.

use kapi_apimachinery::validation::FIELD_IMMUTABLE_ERROR_MSG;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::{Map, Value};

pub(crate) use kapi_apimachinery::gotime::{Timestamp, ZERO_TIME, parse_rfc3339};
pub(crate) use kapi_apimachinery::value::{int_of, is_true, map_of, str_at, str_of, strings_of};

/// The object's fields, made an object first if it is not one.
pub(crate) fn fields_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    match object {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// The object under `key`, created (or replaced, if it is not an object) as needed.
pub(crate) fn child_mut<'a>(object: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let entry = fields_mut(object)
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    fields_mut(entry)
}

/// Removes `key` when it holds an empty object or list, or `null` (how an `omitempty` map or
/// slice reads back from storage).
pub(crate) fn drop_if_empty(fields: &mut Map<String, Value>, key: &str) {
    let empty = match fields.get(key) {
        Some(Value::Object(map)) => map.is_empty(),
        Some(Value::Array(list)) => list.is_empty(),
        Some(Value::Null) => true,
        _ => false,
    };
    if empty {
        fields.remove(key);
    }
}

/// The value of a map field for comparisons, with absent, `null` and empty alike.
pub(crate) fn map_value(object: &Value, key: &str) -> Map<String, Value> {
    map_of(object, key).cloned().unwrap_or_default()
}

/// The core/v1 validation of `metadata.finalizers` that built-in core types add to the generic
/// metadata checks (upstream's core ValidateObjectMeta and ValidateObjectMetaUpdate): a
/// finalizer without a '/' must be a standard one. Errors name the indexed path.
pub(crate) fn validate_core_metadata_finalizers(object: &Value) -> FieldErrors {
    kapi_apimachinery::validation::validate_kube_finalizers(
        &object["metadata"],
        &Path::root("metadata"),
    )
}

/// Upstream's ValidateImmutableField for values whose bad value prints as JSON (strings,
/// numbers): an Invalid error with the new value when they differ.
pub(crate) fn validate_immutable(new: &Value, old: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if new != old {
        errs.push(FieldError::invalid(
            path,
            new.clone(),
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs
}

/// An immutability error whose bad value is already rendered (structs of internal types,
/// which upstream prints with their Go field names).
pub(crate) fn immutable_rendered(path: &Path, rendered: String) -> FieldError {
    FieldError::invalid_rendered(path, rendered, FIELD_IMMUTABLE_ERROR_MSG)
}

/// Whether a time field is unset: absent, `null`, empty or Go's zero time.
pub(crate) fn is_zero_time(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty() || parse_rfc3339(text) == Some(ZERO_TIME),
        _ => false,
    }
}

/// A string as Go's `encoding/json` writes it (`<`, `>`, `&`, U+2028 and U+2029 escaped).
pub(crate) fn go_json_string(text: &str) -> String {
    kapi_apimachinery::go_json(&Value::from(text))
}

/// A metav1.Time as it is written: UTC, whole seconds.
pub(crate) fn format_time(timestamp: Timestamp) -> String {
    kapi_apimachinery::gotime::format_rfc3339(timestamp.seconds)
}

/// A metav1.MicroTime as it is written: UTC, six fractional digits.
pub(crate) fn format_micro_time(timestamp: Timestamp) -> String {
    let base = format_time(timestamp);
    let micros = timestamp.nanos / 1000;
    format!("{}.{micros:06}Z", base.trim_end_matches('Z'))
}

/// Rewrites a metav1.Time field as the API writes it back (UTC, seconds), and makes a zero
/// time `null`. Values that do not parse are left for validation to see.
pub(crate) fn normalize_time(object: &mut Value, key: &str, micro: bool) {
    let Some(fields) = object.as_object_mut() else {
        return;
    };
    let normalized = match fields.get(key) {
        None => Value::Null,
        Some(Value::String(text)) if text.is_empty() => Value::Null,
        Some(Value::String(text)) => match parse_rfc3339(text) {
            Some(timestamp) if timestamp == ZERO_TIME => Value::Null,
            Some(timestamp) if micro => Value::String(format_micro_time(timestamp)),
            Some(timestamp) => Value::String(format_time(timestamp)),
            None => return,
        },
        Some(_) => return,
    };
    fields.insert(key.to_string(), normalized);
}

/// Field errors as the (field, reason, message) of their status causes, for tests.
/// The differences between two JSON values as `- path: old` / `+ path: new` lines (kapi's
/// stand-in for the Go struct diff upstream appends to some messages).
pub(crate) fn json_diff(old: &Value, new: &Value) -> String {
    let mut lines = Vec::new();
    diff_into(old, new, "", &mut lines);
    lines.join("\n")
}

/// Appends the differences under `prefix`.
fn diff_into(old: &Value, new: &Value, prefix: &str, lines: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let null = Value::Null;
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                diff_into(
                    a.get(key).unwrap_or(&null),
                    b.get(key).unwrap_or(&null),
                    &path,
                    lines,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_into(x, y, &format!("{prefix}[{i}]"), lines);
            }
        }
        (a, b) if a != b => {
            if !a.is_null() {
                lines.push(format!("- {prefix}: {a}"));
            }
            if !b.is_null() {
                lines.push(format!("+ {prefix}: {b}"));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
pub(crate) fn causes(errs: &FieldErrors) -> Vec<(String, String, String)> {
    errs.iter()
        .map(|e| (e.field.clone(), e.error_type.as_str().to_string(), e.body()))
        .collect()
}

/// Table-driven validation cases: an input and the expected (field, reason, message)s.
#[cfg(test)]
pub(crate) type Cases<'a> = Vec<(Value, Vec<(&'a str, &'a str, &'a str)>)>;

/// Expected causes from string triples, for tests.
#[cfg(test)]
pub(crate) fn expect(want: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    want.iter()
        .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
        .collect()
}

/// Creates each of `objects` (cluster-scoped, of `definition`) that does not exist, as
/// kube-apiserver's bootstrap post-start hooks do: existing objects (looked up first, as
/// upstream looks in its informer's cache) are left alone, every object is attempted, and
/// the first error is returned. The objects are written together, so that a first start
/// commits them in one batch.
pub(crate) async fn create_missing(
    registry: &kapi_server::registry::Registry,
    definition: &kapi_server::resource::ResourceDefinition,
    objects: Vec<Value>,
) -> Result<(), kapi_apimachinery::ApiError> {
    let created = objects
        .into_iter()
        .map(|object| create_if_missing(registry, definition, object));
    futures::future::join_all(created)
        .await
        .into_iter()
        .collect()
}

/// Creates `object` unless it exists.
async fn create_if_missing(
    registry: &kapi_server::registry::Registry,
    definition: &kapi_server::resource::ResourceDefinition,
    object: Value,
) -> Result<(), kapi_apimachinery::ApiError> {
    use kapi_server::registry::{KUBE_APISERVER, ReadVersion, Write};
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let resource = definition.group_resource();
    match registry
        .get(&resource, "", name, &ReadVersion::MostRecent)
        .await
    {
        Ok(_) => return Ok(()),
        Err(err) if err.is_not_found() => {}
        Err(err) => return Err(err),
    }
    match registry
        .create(definition, "", object, Write::own(KUBE_APISERVER))
        .await
    {
        Err(err) if !err.is_already_exists() => Err(err),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339_like_go() {
        let t = parse_rfc3339("2024-02-29T12:34:56Z").unwrap();
        assert_eq!(format_time(t), "2024-02-29T12:34:56Z");
        let t = parse_rfc3339("2024-03-01T01:00:00.123456789+02:00").unwrap();
        assert_eq!(format_time(t), "2024-02-29T23:00:00Z");
        assert_eq!(t.nanos, 123_456_789);
        assert_eq!(format_micro_time(t), "2024-02-29T23:00:00.123456Z");
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z").unwrap().seconds, 0);
        assert!(parse_rfc3339("2023-02-29T00:00:00Z").is_none());
        assert!(parse_rfc3339("2023-01-01 00:00:00Z").is_none());
        assert!(parse_rfc3339("2023-01-01T00:00:00").is_none());
        assert!(parse_rfc3339("2023-01-01T00:00:00.Z").is_none());
        assert!(parse_rfc3339("garbage").is_none());
    }

    #[test]
    fn zero_times() {
        assert_eq!(parse_rfc3339("0001-01-01T00:00:00Z"), Some(ZERO_TIME));
        assert!(is_zero_time(&Value::Null));
        assert!(is_zero_time(&Value::from("0001-01-01T00:00:00Z")));
        assert!(!is_zero_time(&Value::from("2001-01-01T00:00:00Z")));
        assert_eq!(go_json_string("a<b>&\"c"), r#""a\u003cb\u003e\u0026\"c""#);
    }

    #[test]
    fn normalizes_times() {
        let mut v = serde_json::json!({"a": "2024-01-01T01:00:00.5+01:00", "b": "", "c": "x"});
        normalize_time(&mut v, "a", false);
        normalize_time(&mut v, "b", true);
        normalize_time(&mut v, "c", true);
        normalize_time(&mut v, "d", true);
        assert_eq!(
            v,
            serde_json::json!({"a": "2024-01-01T00:00:00Z", "b": null, "c": "x", "d": null})
        );
        let mut v = serde_json::json!({"a": "2024-01-01T00:00:00Z"});
        normalize_time(&mut v, "a", true);
        assert_eq!(v["a"], "2024-01-01T00:00:00.000000Z");
    }
}
