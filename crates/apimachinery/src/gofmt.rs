//! Go's formatting of values in messages, reproduced so that messages match upstream's
//! byte for byte: `%q` for strings, `%v` for numbers, `encoding/json` for everything else.

use serde_json::Value;

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
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_i64() || n.is_u64()) => float(f),
            _ => n.to_string(),
        },
        _ => json(v),
    }
}

/// Go's `encoding/json` form: compact, with `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn json(v: &Value) -> String {
    let text = serde_json::to_string(v).expect("a JSON value always serializes");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `%v` for a float64: the shortest representation, in exponent form (`1e+06`) when the
/// decimal exponent is below -4 or at least 6.
fn float(f: f64) -> String {
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return f.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
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
}
