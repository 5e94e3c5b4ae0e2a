//! Go's printing of values, reproduced so that messages match upstream's byte for byte:
//! `%q`, `%v` and `%s` of decoded JSON values, Go's float formats (`strconv`'s shortest `%g`
//! and `encoding/json`'s), Go type names, and `encoding/json`'s compact form. The one place
//! kapi formats a value the way Go does; every crate's messages use it.

use std::fmt::Write;

use serde_json::{Map, Number, Value};

/// Quotes a string as Go's `%q` (and `strconv.Quote`) does: `"a\"b"`, with escapes for
/// control and other non-printable characters.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` for the characters that occur in practice: the ASCII space and
/// everything that is not a control, a non-ASCII space, a format character or private use.
pub(crate) fn is_printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(
                c,
                '\u{ad}'
                    | '\u{600}'..='\u{605}'
                    | '\u{200b}'..='\u{200f}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2060}'..='\u{206f}'
                    | '\u{feff}'
                    | '\u{fff9}'..='\u{fffb}'
                    | '\u{e000}'..='\u{f8ff}'
            ))
}

/// Renders a value as upstream's field errors print their bad values: strings quoted with
/// `%q`, numbers and booleans with `%v`, anything else as Go's `encoding/json` writes it.
pub(crate) fn value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        _ => json(v),
    }
}

/// The Go type a decoded JSON value has (`reflect.TypeOf`), or `None` for `null`. Integers
/// are `int64` and other numbers `float64`, as the apiserver's integer-preserving decoder
/// (sigs.k8s.io/json) produces them.
pub fn type_name(v: &Value) -> Option<&'static str> {
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
pub fn type_string(v: &Value) -> String {
    match type_name(v) {
        Some(name) => name.to_string(),
        None => "%!s(<nil>)".to_string(),
    }
}

/// The word `encoding/json` uses for a JSON value in "cannot unmarshal X into ...".
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A decoded value printed with `%v` (and `%+v`): `map[a:1 b:[x <nil>]]`, keys sorted,
/// strings bare.
pub fn v(value: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, value, 'v');
    out
}

/// An object printed with `%v`: `map[k1:v1 k2:v2]`, keys sorted.
pub fn map_v(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, map, 'v');
    out
}

/// A list printed with `%v`: `[a b c]`.
pub fn list_v(list: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, list, 'v');
    out
}

/// A value printed with `%s`: strings as they are, anything else as Go's bad-verb form
/// (`%!s(int64=1)`), element by element inside maps and lists.
pub fn s(value: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, value, 's');
    out
}

fn write_verb(out: &mut String, value: &Value, verb: char) {
    match value {
        Value::Object(map) => write_map(out, map, verb),
        Value::Array(list) => write_list(out, list, verb),
        Value::String(s) => out.push_str(s),
        Value::Null if verb == 'v' => out.push_str("<nil>"),
        Value::Null => {
            let _ = write!(out, "%!{verb}(<nil>)");
        }
        scalar => {
            let text = match scalar {
                Value::Number(n) => number_v(n),
                other => other.to_string(),
            };
            match (verb, type_name(scalar)) {
                ('v', _) | (_, None) => out.push_str(&text),
                (_, Some(ty)) => {
                    let _ = write!(out, "%!{verb}({ty}={text})");
                }
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

/// A decoded number with `%v`: integers as they are, other numbers as `float64`.
fn number_v(n: &Number) -> String {
    match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => i.to_string(),
        (None, Some(u)) => u.to_string(),
        _ => format_float_g(n.as_f64().unwrap_or(0.0)),
    }
}

/// A float as `strconv.FormatFloat(f, 'g', -1, 64)` (and so `%v`) writes it: the shortest
/// digits that read back as `f`, in exponent form (`1e+06`, `1e-05`) when the decimal
/// exponent is below -4 or at least 6 (the precision Go's shortest `%g` decides with).
pub fn format_float_g(f: f64) -> String {
    if !f.is_finite() {
        return match f {
            f if f.is_nan() => "NaN",
            f if f > 0.0 => "+Inf",
            _ => "-Inf",
        }
        .to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (mantissa, exp) = shortest_exponent_form(f);
    if (-4..6).contains(&exp) {
        format!("{f}")
    } else {
        exponent_text(&mantissa, exp, 2)
    }
}

/// A float as `encoding/json` writes it: plain decimals from 1e-6 up to 1e21, exponent form
/// outside, with at least one exponent digit for small numbers (`1e-7`) and two for large
/// ones (`1e+21`).
pub fn json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    let (mantissa, exp) = shortest_exponent_form(f);
    exponent_text(&mantissa, exp, if (-9..0).contains(&exp) { 1 } else { 2 })
}

/// Rust's shortest `{:e}` rendering split into mantissa text and decimal exponent.
fn shortest_exponent_form(f: f64) -> (String, i32) {
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    (mantissa.to_string(), exp.parse().unwrap_or(0))
}

/// `1.5e+06`, `1e-05`: Go's exponent form, with a sign and at least `digits` digits.
fn exponent_text(mantissa: &str, exp: i32, digits: usize) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:0digits$}", exp.unsigned_abs())
}

/// A value as Go's `encoding/json` marshals a decoded value: compact, keys sorted, floats
/// in Go's notation, `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c` and so on.
pub fn json(value: &Value) -> String {
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

/// A JSON string as Go (1.22 and later) escapes it.
fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(quote("\x01"), r#""\x01""#);
        assert_eq!(quote("héllo ☃"), "\"héllo ☃\"");
        assert_eq!(quote("\u{200b}"), r#""\u200b""#);
    }

    #[test]
    fn values_like_go() {
        assert_eq!(value(&json!("x")), "\"x\"");
        assert_eq!(value(&json!(-3)), "-3");
        assert_eq!(value(&json!(true)), "true");
        assert_eq!(value(&json!(1.5)), "1.5");
        assert_eq!(value(&json!(1e6)), "1e+06");
        assert_eq!(value(&json!(123456.0)), "123456");
        assert_eq!(value(&json!(0.00001)), "1e-05");
        assert_eq!(value(&json!(null)), "null");
        assert_eq!(value(&json!(["a", "<b>"])), r#"["a","\u003cb\u003e"]"#);
    }

    #[test]
    fn percent_v_matches_go() {
        assert_eq!(v(&json!({"b": 1, "a": "x"})), "map[a:x b:1]");
        assert_eq!(
            v(&json!([{"name": 1}, null, true])),
            "[map[name:1] <nil> true]"
        );
        assert_eq!(
            v(&json!({"b": [1, "x", null], "a": {"c": true}})),
            "map[a:map[c:true] b:[1 x <nil>]]"
        );
        assert_eq!(v(&json!(1.5)), "1.5");
        assert_eq!(v(&json!(1e6)), "1e+06");
        assert_eq!(v(&json!(123456.0)), "123456");
        assert_eq!(v(&json!(0.0001)), "0.0001");
        assert_eq!(v(&json!(0.00001)), "1e-05");
        assert_eq!(v(&json!(1000000)), "1000000");
    }

    #[test]
    fn percent_s_matches_go() {
        assert_eq!(s(&json!("merge")), "merge");
        assert_eq!(s(&json!(1)), "%!s(int64=1)");
        assert_eq!(s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(s(&json!(true)), "%!s(bool=true)");
        assert_eq!(s(&Value::Null), "%!s(<nil>)");
        assert_eq!(s(&json!({"a": 1})), "map[a:%!s(int64=1)]");
    }

    /// `strconv.FormatFloat(f, 'g', -1, 64)`, as Go prints these (outputs taken from Go).
    #[test]
    fn format_float_g_matches_go() {
        let cases = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (100000.0, "100000"),
            (999999.0, "999999"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (1e20, "1e+20"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e-100, "1e-100"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5e-5, "-2.5e-05"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (f, go) in cases {
            assert_eq!(format_float_g(f), go, "{f:e}");
        }
    }

    /// `encoding/json`'s float64 encoding, as Go prints these (outputs taken from Go).
    #[test]
    fn json_float_matches_go() {
        let cases = [
            (0.0, "0"),
            (1e6, "1000000"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-9, "1.5e-9"),
            (1e-10, "1e-10"),
            (-1e-7, "-1e-7"),
            (1e100, "1e+100"),
        ];
        for (f, go) in cases {
            assert_eq!(json_float(f), go, "{f:e}");
        }
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
        assert_eq!(json(&json!("\u{8}\u{c}\u{1}")), r#""\b\f\u0001""#);
        assert_eq!(json(&json!(u64::MAX)), "18446744073709551615");
    }
}
