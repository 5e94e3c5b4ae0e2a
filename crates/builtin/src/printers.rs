//! What upstream's printers (kubernetes/pkg/printers/internalversion) share: the human
//! durations of AGE columns and the NAME and AGE column definitions.

use kapi_server::resource::PrinterColumn;
use serde_json::Value;

use crate::util::{Timestamp, parse_rfc3339};

/// The description of NAME columns (ObjectMeta's `name` documentation).
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// The description of AGE columns (ObjectMeta's `creationTimestamp` documentation).
pub const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_MINUTE: i128 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: i128 = 60 * NANOS_PER_MINUTE;

/// A column of upstream's printers.
pub(crate) const fn column(
    name: &'static str,
    description: &'static str,
    priority: i32,
) -> PrinterColumn {
    PrinterColumn {
        name,
        type_: "string",
        format: "",
        description,
        priority,
    }
}

/// The NAME column: format `name`.
pub(crate) const fn name_column(priority: i32) -> PrinterColumn {
    PrinterColumn {
        name: "Name",
        type_: "string",
        format: "name",
        description: NAME_DESCRIPTION,
        priority,
    }
}

/// The AGE column.
pub(crate) const fn age_column() -> PrinterColumn {
    column("Age", AGE_DESCRIPTION, 0)
}

/// A duration as upstream's `duration.HumanDuration` prints it: about two or three
/// significant figures (`45s`, `3m20s`, `15m`, `5h3m`, `20h`, `3d4h`, `120d`, `2y30d`,
/// `10y`); `0s` for up to a second in the future, `<invalid>` beyond.
pub fn human_duration(nanos: i128) -> String {
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / NANOS_PER_MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / NANOS_PER_HOUR;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        if days == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{days}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

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

    const S: i128 = NANOS_PER_SECOND;

    #[test]
    fn human_durations_like_upstream() {
        let cases: &[(i128, &str)] = &[
            (-2 * S, "<invalid>"),
            (-S - S / 2, "0s"),
            (-S / 2, "0s"),
            (0, "0s"),
            (S, "1s"),
            (119 * S, "119s"),
            (120 * S, "2m"),
            (121 * S, "2m1s"),
            (9 * 60 * S + 59 * S, "9m59s"),
            (10 * 60 * S, "10m"),
            (179 * 60 * S, "179m"),
            (180 * 60 * S, "3h"),
            (3 * 3600 * S + 59 * 60 * S, "3h59m"),
            (7 * 3600 * S + 60 * S, "7h1m"),
            (8 * 3600 * S, "8h"),
            (47 * 3600 * S, "47h"),
            (48 * 3600 * S, "2d"),
            (49 * 3600 * S, "2d1h"),
            (191 * 3600 * S, "7d23h"),
            (192 * 3600 * S, "8d"),
            (729 * 24 * 3600 * S, "729d"),
            (730 * 24 * 3600 * S, "2y"),
            (731 * 24 * 3600 * S, "2y1d"),
            (8 * 365 * 24 * 3600 * S - 1, "7y364d"),
            (8 * 365 * 24 * 3600 * S, "8y"),
            (100 * 365 * 24 * 3600 * S, "100y"),
        ];
        for (nanos, want) in cases {
            assert_eq!(human_duration(*nanos), *want, "{nanos}ns");
        }
    }

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
