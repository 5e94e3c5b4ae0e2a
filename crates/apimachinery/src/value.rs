//! Reading decoded JSON objects the way Go reads typed fields: absent, `null`, a value of
//! another type and the zero value all read as the zero value.

use serde_json::{Map, Value};

/// A string field, or "" when absent or not a string (Go's zero value).
pub fn str_of<'a>(object: &'a Value, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A string at a path of object keys, or "".
pub fn str_at<'a>(object: &'a Value, path: &[&str]) -> &'a str {
    let mut current = object;
    for key in path {
        match current.get(key) {
            Some(next) => current = next,
            None => return "",
        }
    }
    current.as_str().unwrap_or("")
}

/// An integer field, or 0.
pub fn int_of(object: &Value, key: &str) -> i64 {
    object.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// An object field, if it is one.
pub fn map_of<'a>(object: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    object.get(key).and_then(Value::as_object)
}

/// The strings of a list field.
pub fn strings_of<'a>(object: &'a Value, key: &str) -> Vec<&'a str> {
    match object.get(key).and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(Value::as_str).collect(),
        None => Vec::new(),
    }
}

/// Whether a field holds `true`.
pub fn is_true(object: &Value, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool) == Some(true)
}
