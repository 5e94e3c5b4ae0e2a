//! YAML as kube-apiserver writes it: its YAML serializer turns the JSON of an object into
//! YAML with sigs.k8s.io/yaml, that is go-yaml v2 over libyaml's emitter. What matters to a
//! reader is go-yaml's YAML 1.1 view of plain scalars: a string that would read back as
//! anything else (`yes`, `on`, `~`, `0x1F`, `1_000`, `1:20`, a date such as every
//! `creationTimestamp`) is double-quoted, so that YAML 1.1 readers (PyYAML, go-yaml v2
//! itself) get the string back. YAML 1.2 serializers quote only what YAML 1.2 would misread.
//!
//! The layout is go-yaml's: block mappings with keys in its order (numbers within keys
//! compared as numbers, other characters before letters), two-space indentation, sequences
//! at their key's indentation, `{}` and `[]` for empty collections, multi-line strings as
//! literal blocks, and plain, single- or double-quoted scalars as libyaml's analysis allows.
//! Long scalars are not folded at 80 columns as libyaml folds them: the same strings, on one
//! line.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// How deep a block collection indents its content.
const INDENT: usize = 2;

/// `value` as a YAML document (no `---`, a trailing newline).
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    node(&mut out, value, 0, Context::Document);
    out
}

/// Appends `value` as an entry of a block sequence at the document's top level (the items
/// of a list written one at a time): exactly what [`to_string`] writes for each element of a
/// sequence under a top-level key.
pub fn write_sequence_entry(out: &mut String, value: &Value) {
    out.push('-');
    node(out, value, INDENT, Context::SequenceEntry);
}

/// Where a node is written: what precedes it on its line.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    /// At the start of the document.
    Document,
    /// After a mapping key's `:`.
    MappingValue,
    /// After a sequence entry's `-`.
    SequenceEntry,
}

/// Writes `value`; `indent` is its content's indentation.
fn node(out: &mut String, value: &Value, indent: usize, context: Context) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            match context {
                Context::Document => {}
                Context::MappingValue => out.push('\n'),
                Context::SequenceEntry => out.push(' '),
            }
            mapping(out, map, indent, context == Context::SequenceEntry);
        }
        Value::Array(items) if !items.is_empty() => {
            // A sequence under a key is not indented further than the key.
            let indent = match context {
                Context::MappingValue => {
                    out.push('\n');
                    indent - INDENT
                }
                Context::SequenceEntry => {
                    out.push(' ');
                    indent
                }
                Context::Document => indent,
            };
            sequence(out, items, indent, context == Context::SequenceEntry);
        }
        scalar => match context {
            // A literal block is indented even at the top level.
            Context::Document => write_scalar(out, scalar, INDENT),
            _ => {
                out.push(' ');
                write_scalar(out, scalar, indent);
            }
        },
    }
}

/// A block mapping at `indent`, its first key on the current line when `inline`.
fn mapping(out: &mut String, map: &Map<String, Value>, indent: usize, inline: bool) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_by(|a, b| key_order(a, b));
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 || !inline {
            pad(out, indent);
        }
        write_key(out, key);
        out.push(':');
        node(out, &map[key], indent + INDENT, Context::MappingValue);
    }
}

/// A block sequence at `indent`, its first entry on the current line when `inline`.
fn sequence(out: &mut String, items: &[Value], indent: usize, inline: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline {
            pad(out, indent);
        }
        out.push('-');
        node(out, item, indent + INDENT, Context::SequenceEntry);
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A scalar and its line's end; `indent` is where a literal block's lines start.
fn write_scalar(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::String(s) => write_string(out, s, indent),
        Value::Object(_) => out.push_str("{}\n"),
        Value::Array(_) => out.push_str("[]\n"),
        other => {
            // null, booleans and numbers are their JSON text.
            let _ = writeln!(out, "{other}");
        }
    }
}

/// A mapping key: a string in the style a value would get, but never a literal block.
fn write_key(out: &mut String, key: &str) {
    let analysis = Analysis::of(key);
    match style(key, &analysis, false) {
        Style::Plain => out.push_str(key),
        Style::Single => single_quoted(out, key),
        Style::Double | Style::Literal => double_quoted(out, key),
    }
}

fn write_string(out: &mut String, s: &str, indent: usize) {
    let analysis = Analysis::of(s);
    match style(s, &analysis, true) {
        Style::Plain => out.push_str(s),
        Style::Single => single_quoted(out, s),
        Style::Double => double_quoted(out, s),
        Style::Literal => return literal(out, s, indent),
    }
    out.push('\n');
}

#[derive(Debug, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// go-yaml's choice (a literal block for multi-line strings, double quotes for strings that
/// would read as another type, plain otherwise) as libyaml's emitter then allows it.
fn style(s: &str, a: &Analysis, block_allowed: bool) -> Style {
    // Breaks other than `\n` are read back as `\n` or folded: only escapes keep them.
    if s.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        return Style::Double;
    }
    if s.contains('\n') {
        return match block_allowed && a.literal_allowed() {
            true => Style::Literal,
            false => Style::Double,
        };
    }
    if s.is_empty() || resolves_as_other_than_string(s) {
        return Style::Double;
    }
    if a.plain_allowed() {
        Style::Plain
    } else if a.single_quoted_allowed() {
        Style::Single
    } else {
        Style::Double
    }
}

/// What libyaml's emitter notes of a scalar to decide which styles can hold it (in block
/// context).
#[derive(Default)]
struct Analysis {
    indicators: bool,
    special_characters: bool,
    line_breaks: bool,
    leading_space: bool,
    leading_break: bool,
    trailing_space: bool,
    trailing_break: bool,
    space_break: bool,
    break_space: bool,
}

impl Analysis {
    fn of(s: &str) -> Analysis {
        let mut a = Analysis {
            indicators: s.starts_with("---") || s.starts_with("..."),
            ..Analysis::default()
        };
        let chars: Vec<char> = s.chars().collect();
        let blank_or_end = |i: usize| chars.get(i).is_none_or(|c| is_blank(*c) || is_break(*c));
        let (mut previous_space, mut previous_break) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            let first = i == 0;
            let last = i + 1 == chars.len();
            if first {
                match c {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\''
                    | '"' | '%' | '@' | '`' => a.indicators = true,
                    '?' | ':' | '-' if blank_or_end(1) => a.indicators = true,
                    _ => {}
                }
            } else {
                match c {
                    ':' if blank_or_end(i + 1) => a.indicators = true,
                    '#' if is_blank(chars[i - 1]) || is_break(chars[i - 1]) => a.indicators = true,
                    _ => {}
                }
            }
            if !is_printable(c) {
                a.special_characters = true;
            }
            if is_break(c) {
                a.line_breaks = true;
            }
            if c == ' ' {
                a.leading_space |= first;
                a.trailing_space |= last;
                a.break_space |= previous_break;
                (previous_space, previous_break) = (true, false);
            } else if is_break(c) {
                a.leading_break |= first;
                a.trailing_break |= last;
                a.space_break |= previous_space;
                (previous_space, previous_break) = (false, true);
            } else {
                (previous_space, previous_break) = (false, false);
            }
        }
        a
    }

    fn plain_allowed(&self) -> bool {
        !(self.indicators
            || self.special_characters
            || self.line_breaks
            || self.leading_space
            || self.leading_break
            || self.trailing_space
            || self.trailing_break
            || self.space_break
            || self.break_space)
    }

    fn single_quoted_allowed(&self) -> bool {
        !(self.special_characters || self.space_break || self.break_space)
    }

    fn literal_allowed(&self) -> bool {
        !(self.special_characters || self.space_break || self.trailing_space)
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's printable characters (a tab is not one: it makes a scalar double-quoted).
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}')
        && c != '\u{feff}'
}

/// Whether go-yaml v2 reads the plain scalar `s` as something other than a string: YAML
/// 1.1's booleans and nulls, integers (decimal, `0x`, `0o`, `0b`, leading-zero octal,
/// underscores allowed), floats (`.inf`, `.nan`, exponents), base-60 numbers and dates.
pub fn resolves_as_other_than_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if s.is_empty() || WORDS.contains(&s) {
        return true;
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return false;
    }
    let plain = s.replace('_', "");
    is_go_int(&plain)
        || is_go_float(&plain)
        || is_base60(s)
        || (first.is_ascii_digit() && is_date(s))
}

/// Go's `strconv.ParseInt(s, 0, 64)` syntax (or `0b` binary, which go-yaml adds): a sign,
/// then digits of the base a prefix names. Range is not checked: a longer integer still reads
/// as a number (a float) to go-yaml.
fn is_go_int(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = digits.to_ascii_lowercase();
    let (body, radix) = if let Some(hex) = lower.strip_prefix("0x") {
        (hex, 16)
    } else if let Some(octal) = lower.strip_prefix("0o") {
        (octal, 8)
    } else if let Some(binary) = lower.strip_prefix("0b") {
        (binary, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    !body.is_empty() && body.chars().all(|c| c.is_digit(radix))
}

/// Go's `strconv.ParseFloat` syntax: decimal with an optional exponent, `inf`, `infinity` and
/// `nan` in any case, and hexadecimal with a `p` exponent.
fn is_go_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return true;
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let Some((mantissa, exponent)) = hex.split_once('p') else {
            return false;
        };
        let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        return !(whole.is_empty() && fraction.is_empty())
            && (whole.chars().chain(fraction.chars())).all(|c| c.is_ascii_hexdigit())
            && !exponent.is_empty()
            && exponent.chars().all(|c| c.is_ascii_digit());
    }
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (lower.as_str(), None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    !(whole.is_empty() && fraction.is_empty())
        && digits(whole)
        && digits(fraction)
        && exponent.is_none_or(|e| !e.is_empty() && digits(e))
}

/// go-yaml's base-60 floats: `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?`.
fn is_base60(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (body, fraction) = body.split_once('.').unwrap_or((body, ""));
    let mut parts = body.split(':');
    let head = parts.next().unwrap_or_default();
    let sixties: Vec<&str> = parts.collect();
    let head_ok = head.starts_with(|c: char| c.is_ascii_digit())
        && head.chars().all(|c| c.is_ascii_digit() || c == '_');
    let sixty = |p: &&str| {
        let b = p.as_bytes();
        match b {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        }
    };
    head_ok
        && !sixties.is_empty()
        && sixties.iter().all(sixty)
        && fraction.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// go-yaml's timestamps: `2006-1-2`, optionally followed by `T`, `t` or a space and
/// `15:4:5`, fractional seconds and a zone (`Z` or `±07:00`).
fn is_date(s: &str) -> bool {
    let numbers = |t: &str, min: usize, max: usize| {
        (min..=max).contains(&t.len()) && t.chars().all(|c| c.is_ascii_digit())
    };
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let date: Vec<&str> = date.split('-').collect();
    let date_ok = matches!(date.as_slice(), [y, m, d]
        if numbers(y, 4, 4) && numbers(m, 1, 2) && numbers(d, 1, 2));
    let Some(time) = time else {
        return date_ok;
    };
    let (clock, zone) = match time.find(['Z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => (time, ""),
    };
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let clock: Vec<&str> = clock.split(':').collect();
    let zone_ok = zone.is_empty()
        || zone == "Z"
        || matches!(zone[1..].split_once(':'), Some((h, m)) if numbers(h, 1, 2) && numbers(m, 2, 2));
    date_ok
        && matches!(clock.as_slice(), [h, m, s]
            if numbers(h, 1, 2) && numbers(m, 1, 2) && numbers(s, 1, 2))
        && numbers(fraction, 1, 9)
        && zone_ok
}

fn single_quoted(out: &mut String, s: &str) {
    out.push('\'');
    out.push_str(&s.replace('\'', "''"));
    out.push('\'');
}

/// A double-quoted scalar with libyaml's escapes.
fn double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
}

/// A literal block (`|`): its header, with an indentation indicator when the text starts with
/// a space or a break and a chomping indicator for how it ends, then its lines at `indent`
/// (empty lines without indentation).
fn literal(out: &mut String, s: &str, indent: usize) {
    out.push('|');
    if s.starts_with([' ', '\n']) {
        let _ = write!(out, "{INDENT}");
    }
    if !s.ends_with('\n') {
        out.push('-');
    } else if s == "\n" || s.ends_with("\n\n") {
        out.push('+');
    }
    out.push('\n');
    let body = s.strip_suffix('\n').unwrap_or(s);
    for line in body.split('\n') {
        if !line.is_empty() {
            pad(out, indent);
            out.push_str(line);
        }
        out.push('\n');
    }
}

/// go-yaml's order of mapping keys: character by character, letters after other characters,
/// runs of digits compared as numbers.
fn key_order(a: &str, b: &str) -> Ordering {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..a.len().min(b.len()) {
        if a[i] == b[i] {
            continue;
        }
        let (a_letter, b_letter) = (a[i].is_alphabetic(), b[i].is_alphabetic());
        if a_letter && b_letter {
            return a[i].cmp(&b[i]);
        }
        if a_letter || b_letter {
            return if b_letter {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        // Runs of digits from here (after leading digits that make a zero significant).
        let mut nonzero_before = false;
        if a[i] == '0' || b[i] == '0' {
            nonzero_before = a[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .any(|c| *c != '0');
        }
        let run = |s: &[char]| {
            let mut n: i64 = i64::from(nonzero_before);
            let mut end = i;
            while end < s.len() && s[end].is_ascii_digit() {
                n = n
                    .saturating_mul(10)
                    .saturating_add(i64::from(s[end] as u8 - b'0'));
                end += 1;
            }
            (n, end)
        };
        let ((an, ai), (bn, bi)) = (run(&a), run(&b));
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return a[i].cmp(&b[i]);
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_read_as_kube_apiserver_writes_them() {
        let object = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "settings",
                "creationTimestamp": "2026-11-29T00:18:51Z",
                "labels": {"yes": "no", "app": "web"},
                "finalizers": [],
                "annotations": {},
            },
            "data": {
                "enabled": "on",
                "octal": "0755",
                "count": "1_000",
                "ratio": "1e3",
                "sexagesimal": "1:20",
                "date": "2026-11-29",
                "empty": "",
                "null": "~",
                "plain": "just words",
                "colon": "a: b",
                "comment": "a #b",
                "leading": " x",
                "quote": "it's",
                "dash": "- item",
                "tab": "a\tb",
                "script": "line one\nline two\n",
                "nobreak": "line one\nline two",
                "breaks": "a\n\n",
                "spacebreak": "a \nb",
            },
            "binaryData": null,
            "immutable": false,
            "items": [{"name": "a", "value": 1}, ["x", "y"], "z", {}],
        });
        let expected = r#"apiVersion: v1
binaryData: null
data:
  breaks: |+
    a

  colon: 'a: b'
  comment: 'a #b'
  count: "1_000"
  dash: '- item'
  date: "2026-11-29"
  empty: ""
  enabled: "on"
  leading: ' x'
  nobreak: |-
    line one
    line two
  "null": "~"
  octal: "0755"
  plain: just words
  quote: it's
  ratio: "1e3"
  script: |
    line one
    line two
  sexagesimal: "1:20"
  spacebreak: "a \nb"
  tab: "a\tb"
immutable: false
items:
- name: a
  value: 1
- - x
  - "y"
- z
- {}
kind: ConfigMap
metadata:
  annotations: {}
  creationTimestamp: "2026-11-29T00:18:51Z"
  finalizers: []
  labels:
    app: web
    "yes": "no"
  name: settings
"#;
        assert_eq!(to_string(&object), expected);
    }

    #[test]
    fn sequence_entries_are_what_the_document_writes() {
        let items = json!([{"a": {"b": ["c"]}, "d": "e\nf\n"}, [], "g"]);
        let mut streamed = String::from("items:\n");
        for item in items.as_array().unwrap() {
            write_sequence_entry(&mut streamed, item);
        }
        assert_eq!(streamed, to_string(&json!({ "items": items })));
    }

    #[test]
    fn keys_are_in_go_yaml_order() {
        let mut keys = vec!["a10", "a9", "_x", "Ax", "b", "a", "a09", "x-1"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["_x", "Ax", "a", "a9", "a09", "a10", "b", "x-1"]);
    }

    #[test]
    fn plain_scalars_that_read_as_other_types_are_recognized() {
        for s in [
            "yes",
            "Off",
            "~",
            "12",
            "-3",
            "+4",
            "0x1F",
            "0o17",
            "0b101",
            "1_000",
            "1.5",
            ".5",
            "1e3",
            "-.inf",
            ".NaN",
            "1:20",
            "2026-11-29",
            "2026-11-29T00:18:51Z",
            "2026-1-2 3:04:05.5",
        ] {
            assert!(resolves_as_other_than_string(s), "{s}");
        }
        for s in [
            "web",
            "yess",
            "1.2.3",
            "v1",
            "10Gi",
            "100m",
            "1-2",
            "0x",
            "-",
            "2026-11-29x",
        ] {
            assert!(!resolves_as_other_than_string(s), "{s}");
        }
    }
}
