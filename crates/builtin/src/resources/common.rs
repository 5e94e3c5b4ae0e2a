//! What the kinds of this module share: printer cells as upstream's printers format them,
//! quantities compared as `resource.Quantity` does, defaulting and validation shorthands.

use kapi_apimachinery::Quantity;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::resource::{PrinterColumn, TableConvertor};
use serde_json::{Map, Value};
use std::borrow::Cow;

use crate::printers::{age_column, column, name_column};

/// A printer whose first column is NAME, then `rest`, with its cells.
pub(crate) fn table(rest: Vec<PrinterColumn>, cells: fn(&Value) -> Vec<Value>) -> TableConvertor {
    let mut columns = vec![name_column(0)];
    columns.extend(rest);
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(cells),
    }
}

/// A column of the default view.
pub(crate) const fn col(name: &'static str, description: &'static str) -> PrinterColumn {
    column(name, description, 0)
}

/// A column of the default view whose cells are not strings (`integer`, `boolean`, `date`).
pub(crate) const fn typed(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
) -> PrinterColumn {
    PrinterColumn {
        name: Cow::Borrowed(name),
        type_: Cow::Borrowed(type_),
        format: Cow::Borrowed(""),
        description: Cow::Borrowed(description),
        priority: 0,
    }
}

/// A column of the wide view only (priority 1).
pub(crate) const fn wide(name: &'static str, description: &'static str) -> PrinterColumn {
    column(name, description, 1)
}

/// The AGE column, re-exported for the kinds' column lists.
pub(crate) const fn age() -> PrinterColumn {
    age_column()
}

/// A string cell.
pub(crate) fn text(value: impl Into<String>) -> Value {
    Value::String(value.into())
}

/// `s`, or `<none>` when it is empty.
pub(crate) fn or_none(s: impl Into<String>) -> Value {
    let s = s.into();
    if s.is_empty() {
        text("<none>")
    } else {
        Value::String(s)
    }
}

/// A metav1 label selector as `metav1.FormatLabelSelector` prints it (`<none>` when it
/// selects everything or nothing, `<error>` when it is invalid).
pub(crate) fn format_selector(selector: &Value) -> String {
    match kapi_apimachinery::labels::from_label_selector(selector) {
        Ok(selector) if selector.to_string().is_empty() => "<none>".to_string(),
        Ok(selector) => selector.to_string(),
        Err(_) => "<error>".to_string(),
    }
}

/// The items of a list at a JSON pointer (empty when absent).
pub(crate) fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at a JSON pointer, or "".
pub(crate) fn text_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The object at a JSON pointer, created along the way when missing (or not an object).
pub(crate) fn object_at<'a>(object: &'a mut Value, pointer: &str) -> &'a mut Map<String, Value> {
    let mut current = object;
    for key in pointer.split('/').skip(1) {
        current = crate::util::fields_mut(current)
            .entry(key.to_string())
            .or_insert(Value::Null);
    }
    crate::util::fields_mut(current)
}

/// Sets `key` to `value` when it is absent or `null` (a nil pointer or empty enum defaulted).
pub(crate) fn default_field(fields: &mut Map<String, Value>, key: &str, value: Value) {
    let unset = match fields.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    if unset {
        fields.insert(key.to_string(), value);
    }
}

/// Applies `f` to every object of the list at `key` of `fields`.
pub(crate) fn each_item(fields: &mut Map<String, Value>, key: &str, f: impl Fn(&mut Value)) {
    if let Some(Value::Array(list)) = fields.get_mut(key) {
        list.iter_mut().filter(|v| v.is_object()).for_each(f);
    }
}

/// A Required error unless the string at `key` of `object` is set.
pub(crate) fn require_str(object: &Value, key: &str, path: &Path, errs: &mut FieldErrors) {
    if crate::util::str_of(object, key).is_empty() {
        errs.push(FieldError::required(&path.child(key), ""));
    }
}

/// One Invalid error per message of a name/value check.
pub(crate) fn invalid_each(path: &Path, value: &str, messages: Vec<String>) -> FieldErrors {
    messages
        .into_iter()
        .map(|msg| FieldError::invalid(path, value, msg))
        .collect()
}

/// A NotSupported error unless the string at `key` is one of `valid` (absent: Required when
/// `required`).
pub(crate) fn enum_field(
    object: &Value,
    key: &str,
    valid: &[&str],
    required: bool,
    path: &Path,
    errs: &mut FieldErrors,
) {
    let value = crate::util::str_of(object, key);
    if value.is_empty() {
        if required {
            errs.push(FieldError::required(&path.child(key), ""));
        }
    } else if !valid.contains(&value) {
        errs.push(FieldError::not_supported(&path.child(key), value, valid));
    }
}

/// The quantity at a JSON pointer (`None` when absent or unreadable).
pub(crate) fn quantity_at(object: &Value, pointer: &str) -> Option<Quantity> {
    Quantity::of_field(object.pointer(pointer)?)
}

/// A quantity as printed in a cell: as stored, `0` when absent.
pub(crate) fn quantity_text(object: &Value, pointer: &str) -> String {
    match object.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// The access modes of a volume as `GetAccessModesAsString` abbreviates them, in its fixed
/// order.
pub(crate) fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The `Created At` column: the creation time in RFC 3339.
pub(crate) const fn created_at_column() -> PrinterColumn {
    typed("Created At", "date", crate::printers::AGE_DESCRIPTION)
}

/// A metav1.Time as `Created At` columns print it (UTC, seconds), or as given.
pub(crate) fn created_at(object: &Value) -> Value {
    text(text_at(object, "/metadata/creationTimestamp"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities_compare_like_resource_quantity() {
        let cases = [
            ("1Gi", Some(1073741824.0)),
            ("500m", Some(0.5)),
            ("2", Some(2.0)),
            ("1e3", Some(1000.0)),
            ("1.5k", Some(1500.0)),
            ("-1", Some(-1.0)),
            ("1X", None),
            ("", None),
        ];
        for (text, want) in cases {
            let value = Quantity::of_field(&json!(text)).map(|q| q.as_approximate_f64());
            assert_eq!(value, want, "{text}");
        }
    }

    #[test]
    fn cells_format_like_upstream() {
        assert_eq!(format_selector(&json!({})), "<none>");
        assert_eq!(
            format_selector(&json!({"matchLabels": {"b": "2", "a": "1"}})),
            "a=1,b=2"
        );
        let modes = [json!("ReadWriteMany"), json!("ReadWriteOnce")];
        assert_eq!(access_modes(&modes), "RWO,RWX");
        assert_eq!(or_none(""), json!("<none>"));
        let mut v = json!({});
        object_at(&mut v, "/a/b").insert("c".into(), json!(1));
        assert_eq!(v, json!({"a": {"b": {"c": 1}}}));
    }
}
