//! What upstream's printers (kubernetes/pkg/printers/internalversion) share: the human
//! durations of AGE columns and the NAME and AGE column definitions.

use kapi_server::resource::PrinterColumn;
use serde_json::Value;
use std::borrow::Cow;

use crate::util::{Timestamp, parse_rfc3339};

/// The description of NAME columns (ObjectMeta's `name` documentation).
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// The description of AGE columns (ObjectMeta's `creationTimestamp` documentation).
pub const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A column of upstream's printers.
pub(crate) const fn column(
    name: &'static str,
    description: &'static str,
    priority: i32,
) -> PrinterColumn {
    PrinterColumn {
        name: Cow::Borrowed(name),
        type_: Cow::Borrowed("string"),
        format: Cow::Borrowed(""),
        description: Cow::Borrowed(description),
        priority,
    }
}

/// The NAME column: format `name`.
pub(crate) const fn name_column(priority: i32) -> PrinterColumn {
    PrinterColumn {
        name: Cow::Borrowed("Name"),
        type_: Cow::Borrowed("string"),
        format: Cow::Borrowed("name"),
        description: Cow::Borrowed(NAME_DESCRIPTION),
        priority,
    }
}

/// The AGE column.
pub(crate) const fn age_column() -> PrinterColumn {
    column("Age", AGE_DESCRIPTION, 0)
}

pub use kapi_apimachinery::gotime::human_duration;

/// The age of a timestamp field as upstream's `translateTimestampSince` prints it:
/// `<unknown>` when unset (or unreadable).
pub fn translate_timestamp_since(timestamp: &Value) -> String {
    translate_since(timestamp, Timestamp::now())
}

/// [`translate_timestamp_since`] at a given `now`.
pub(crate) fn translate_since(timestamp: &Value, now: Timestamp) -> String {
    match timestamp.as_str().and_then(parse_rfc3339) {
        Some(then) => human_duration(now.nanos_since(then)),
        None => "<unknown>".to_string(),
    }
}

/// The AGE cell of an object.
pub(crate) fn age_cell(object: &Value) -> Value {
    Value::String(translate_timestamp_since(
        &object["metadata"]["creationTimestamp"],
    ))
}

/// The NAME cell of an object.
pub(crate) fn name_cell(object: &Value) -> Value {
    Value::String(crate::util::str_at(object, &["metadata", "name"]).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_since() {
        let now = parse_rfc3339("2024-01-01T00:10:00Z").unwrap();
        let at = |s: &str| translate_since(&Value::from(s), now);
        assert_eq!(at("2024-01-01T00:00:00Z"), "10m");
        assert_eq!(at("2024-01-01T00:09:30Z"), "30s");
        assert_eq!(at("2024-01-01T00:10:01Z"), "0s");
        assert_eq!(at("2024-01-01T00:10:05Z"), "<invalid>");
        assert_eq!(translate_since(&Value::Null, now), "<unknown>");
        assert_eq!(at("nope"), "<unknown>");
    }
}
