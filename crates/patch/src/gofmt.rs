//! How Go prints the values that end up in upstream's patch error messages.
//!
//! Upstream decodes JSON into `interface{}` values and formats them with `fmt`'s `%v` and
//! `%s` verbs, `reflect.TypeOf` and `encoding/json`; these helpers reproduce that text so
//! that our messages read the same. Integers are `int64` and other numbers `float64`, as
//! the apiserver's integer-preserving decoder produces them.

use std::fmt::Write;

use serde_json::{Map, Value};

/// The Go type a decoded JSON value has (`reflect.TypeOf`), or `None` for `null`.
pub(crate) fn type_name(v: &Value) -> Option<&'static str> {
    match v {
        Value::Null => None,
        Value::Bool(_) => Some("bool"),
        Value::Number(n) if n.is_i64() => Some("int64"),
        Value::Number(_) => Some("float64"),
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("[]interface {}"),
        Value::Object(_) => Some("map[string]interface {}"),
    }
}

/// `reflect.TypeOf(v)` printed with `%s`, as in "expected a %s, but received a %s".
pub(crate) fn type_string(v: &Value) -> String {
    match type_name(v) {
        Some(name) => name.to_string(),
        None => "%!s(<nil>)".to_string(),
    }
}

/// The word `encoding/json` uses for a JSON value in "cannot unmarshal X into ...".
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value printed with `%v`.
#[cfg(test)]
pub(crate) fn v(value: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, value, 'v');
    out
}

/// An object printed with `%v`: `map[k1:v1 k2:v2]`, keys sorted.
pub(crate) fn map_v(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, map, 'v');
    out
}

/// A list printed with `%v`: `[a b c]`.
pub(crate) fn list_v(list: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, list, 'v');
    out
}

/// A value printed with `%s`: strings as they are, anything else as Go's bad-verb form
/// (`%!s(int64=1)`), element by element inside maps and lists.
pub(crate) fn s(value: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, value, 's');
    out
}

fn write_verb(out: &mut String, value: &Value, verb: char) {
    match value {
        Value::Object(map) => write_map(out, map, verb),
        Value::Array(list) => write_list(out, list, verb),
        Value::String(s) => out.push_str(s),
        scalar => {
            let text = match scalar {
                Value::Null => "<nil>".to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => i.to_string(),
                    None => float_g(n.as_f64().unwrap_or(0.0)),
                },
                _ => unreachable!("composite values are handled above"),
            };
            if verb == 'v' {
                out.push_str(&text);
            } else if let (Some(ty), false) = (type_name(scalar), scalar.is_null()) {
                let _ = write!(out, "%!{verb}({ty}={text})");
            } else {
                let _ = write!(out, "%!{verb}(<nil>)");
            }
        }
    }
}

fn write_map(out: &mut String, map: &Map<String, Value>, verb: char) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push_str("map[");
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        write_verb(out, &map[k.as_str()], verb);
    }
    out.push(']');
}

fn write_list(out: &mut String, list: &[Value], verb: char) {
    out.push('[');
    for (i, item) in list.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_verb(out, item, verb);
    }
    out.push(']');
}

/// A float as `strconv.FormatFloat(f, 'g', -1, 64)` (and so `%v`) writes it: the shortest
/// digits, in exponent form when the decimal exponent is below -4 or at least 6.
fn float_g(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".to_string()
        } else if f > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
    }
    let (mantissa, exp) = shortest_exponent_form(f);
    if !(-4..6).contains(&exp) {
        exponent_text(&mantissa, exp)
    } else {
        format!("{f}")
    }
}

/// Splits Rust's shortest `{:e}` rendering into mantissa text and decimal exponent.
fn shortest_exponent_form(f: f64) -> (String, i32) {
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    (mantissa.to_string(), exp.parse().unwrap_or(0))
}

/// `1.5e+06`, `1e-05`: Go's exponent form, with a sign and at least two digits.
fn exponent_text(mantissa: &str, exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// A value as Go's `encoding/json` marshals it: keys sorted, `<`, `>` and `&` escaped,
/// floats in Go's notation.
pub(crate) fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(u)) => out.push_str(&u.to_string()),
            _ => out.push_str(&json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_json_string(out, s),
        Value::Array(list) => {
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_json(out, &map[k.as_str()]);
            }
            out.push('}');
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as `encoding/json` writes it: plain decimals between 1e-6 and 1e21, exponent
/// form (`1e+21`, `1e-7`) outside.
fn json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (mantissa, exp) = shortest_exponent_form(f);
        let sign = if exp < 0 { '-' } else { '+' };
        if exp < 0 && exp > -10 {
            format!("{mantissa}e{sign}{}", exp.unsigned_abs())
        } else {
            exponent_text(&mantissa, exp)
        }
    } else {
        format!("{f}")
    }
}

/// A string as Go's `%q` writes it (kapi-apimachinery's, which all messages share).
pub(crate) use kapi_apimachinery::quote;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn percent_v_matches_go() {
        assert_eq!(v(&json!({"b": 1, "a": "x"})), "map[a:x b:1]");
        assert_eq!(
            v(&json!([{"name": 1}, null, true])),
            "[map[name:1] <nil> true]"
        );
        assert_eq!(v(&json!(1.5)), "1.5");
        assert_eq!(v(&json!(1e6)), "1e+06");
        assert_eq!(v(&json!(123456.0)), "123456");
        assert_eq!(v(&json!(0.0001)), "0.0001");
        assert_eq!(v(&json!(0.00001)), "1e-05");
    }

    #[test]
    fn percent_s_matches_go() {
        assert_eq!(s(&json!("merge")), "merge");
        assert_eq!(s(&json!(1)), "%!s(int64=1)");
        assert_eq!(s(&json!(true)), "%!s(bool=true)");
        assert_eq!(s(&Value::Null), "%!s(<nil>)");
    }

    #[test]
    fn json_matches_go() {
        assert_eq!(
            json(&json!({"b": "<&>", "a": [1, 2.5]})),
            r#"{"a":[1,2.5],"b":"\u003c\u0026\u003e"}"#
        );
        assert_eq!(json(&json!(1e21)), "1e+21");
        assert_eq!(json(&json!(1e-7)), "1e-7");
        assert_eq!(json(&json!(0.000001)), "0.000001");
    }

    #[test]
    fn quote_matches_go() {
        assert_eq!(quote("a\"b\n\u{1}"), "\"a\\\"b\\n\\x01\"");
    }
}
