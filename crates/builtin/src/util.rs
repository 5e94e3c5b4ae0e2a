//! Small helpers shared by the built-in types: reading JSON objects the way Go reads typed
//! fields (absent, `null` and the zero value are the same), the metav1 time formats, and the
//! validation pieces core types add to the generic metadata checks.

use std::time::{SystemTime, UNIX_EPOCH};

use kapi_apimachinery::Quantity;
use kapi_apimachinery::validation::FIELD_IMMUTABLE_ERROR_MSG;
use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use serde_json::{Map, Value};

/// A quantity field's exact value (`resource.Quantity`), a string (spaces trimmed) or a
/// number as JSON decoding reads it; `None` when it is neither or does not parse.
pub(crate) fn quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::String(_) | Value::Number(_) => Quantity::from_json(value).ok(),
        _ => None,
    }
}

/// A string field, or "" when absent or not a string (Go's zero value).
pub(crate) fn str_of<'a>(object: &'a Value, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A string at a path of object keys, or "".
pub(crate) fn str_at<'a>(object: &'a Value, path: &[&str]) -> &'a str {
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
pub(crate) fn int_of(object: &Value, key: &str) -> i64 {
    object.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// An object field, if it is one.
pub(crate) fn map_of<'a>(object: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    object.get(key).and_then(Value::as_object)
}

/// The strings of a list field.
pub(crate) fn strings_of<'a>(object: &'a Value, key: &str) -> Vec<&'a str> {
    match object.get(key).and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(Value::as_str).collect(),
        None => Vec::new(),
    }
}

/// Whether a field holds `true`.
pub(crate) fn is_true(object: &Value, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool) == Some(true)
}

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
    FieldError {
        error_type: ErrorType::Invalid,
        field: path.to_string(),
        bad_value: Some(rendered),
        detail: FIELD_IMMUTABLE_ERROR_MSG.to_string(),
    }
}

/// A point in time: seconds since the Unix epoch and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    pub seconds: i64,
    pub nanos: u32,
}

impl Timestamp {
    /// The current time.
    pub fn now() -> Timestamp {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp {
                seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                nanos: d.subsec_nanos(),
            },
            Err(_) => Timestamp {
                seconds: 0,
                nanos: 0,
            },
        }
    }

    /// Nanoseconds from `earlier` to `self` (negative if `earlier` is later).
    pub fn nanos_since(self, earlier: Timestamp) -> i128 {
        let a = i128::from(self.seconds) * 1_000_000_000 + i128::from(self.nanos);
        let b = i128::from(earlier.seconds) * 1_000_000_000 + i128::from(earlier.nanos);
        a - b
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The number of days in a month.
fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, ...)` accepts it:
/// `2006-01-02T15:04:05[.fraction](Z|±hh:mm)`.
pub(crate) fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        part.iter()
            .try_fold(0i64, |n, d| Some(n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &b[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let count = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if count == 0 || count > 9 {
            return None;
        }
        for (i, d) in fraction[..count].iter().enumerate() {
            nanos += u32::from(d - b'0') * 10u32.pow(8 - i as u32);
        }
        rest = &fraction[count..];
    }
    let offset = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hh = i64::from(h1.checked_sub(b'0')?) * 10 + i64::from(h2.checked_sub(b'0')?);
            let mm = i64::from(m1.checked_sub(b'0')?) * 10 + i64::from(m2.checked_sub(b'0')?);
            if ![h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) || hh > 23 || mm > 59 {
                return None;
            }
            let total = hh * 3600 + mm * 60;
            if *sign == b'-' { -total } else { total }
        }
        _ => return None,
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(Timestamp { seconds, nanos })
}

/// Go's zero time (`0001-01-01T00:00:00Z`), which metav1 times write as `null`.
pub(crate) const ZERO_TIME: Timestamp = Timestamp {
    seconds: -62_135_596_800,
    nanos: 0,
};

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
    kapi_apimachinery::meta::format_rfc3339(timestamp.seconds)
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
