//! Decoding an object against its schema as kube-apiserver's typed JSON decoding does
//! (sigs.k8s.io/json into the Go types): unknown fields are dropped and reported as strict
//! decoding errors with their paths, duplicate fields are reported, and a value of the wrong
//! JSON type fails with Go's `json: cannot unmarshal ...` message.
//!
//! Paths are the decoder's: field names joined with `.`, map keys as fields, list indexes as
//! `[i]` (`spec.template.spec.containers[0].foo`). Type errors name, as Go does, the innermost
//! struct and the struct fields from the root (`DeploymentSpec.spec.replicas`).

use std::fmt;

use serde_json::{Map, Value};

use crate::{NodeType, SchemaRef};

/// What a strict decoding error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrictKind {
    /// A field the type does not have (dropped from the object).
    Unknown,
    /// A field given more than once (the last one wins).
    Duplicate,
}

/// One strict decoding error: `unknown field "spec.foo"` or `duplicate field "metadata.name"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictError {
    /// Unknown or duplicate.
    pub kind: StrictKind,
    /// The field's path.
    pub path: String,
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            StrictKind::Unknown => "unknown field",
            StrictKind::Duplicate => "duplicate field",
        };
        write!(f, "{kind} {}", kapi_apimachinery::quote(&self.path))
    }
}

/// The message of several strict decoding errors, as upstream's `StrictDecodingError`:
/// `strict decoding error: unknown field "a", duplicate field "b"`.
pub fn strict_message(errors: &[StrictError]) -> String {
    let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!("strict decoding error: {}", list.join(", "))
}

/// A value that does not fit its field's type; decoding fails with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    message: String,
}

impl TypeError {
    /// Go's UnmarshalTypeError; a number that does not fit an integer type is shown with
    /// its literal (`number 1.5`), any other value by its kind.
    fn go(value: &Value, go_type: &str, context: Option<(&str, &str)>) -> TypeError {
        let value = match value {
            Value::Number(n) if go_type.starts_with("int") => format!("number {n}"),
            other => kapi_apimachinery::gofmt::json_kind(other).to_string(),
        };
        let message = match context {
            Some((strukt, field)) => format!(
                "json: cannot unmarshal {value} into Go struct field {strukt}.{field} of type {go_type}"
            ),
            None => format!("json: cannot unmarshal {value} into Go value of type {go_type}"),
        };
        TypeError { message }
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TypeError {}

/// Decodes `object` against `schema`: removes the fields the schema does not know (also in
/// nested objects and list items; not inside objects that preserve unknown fields) and
/// returns them as strict errors, or fails with the first type error.
pub fn decode(object: &mut Value, schema: SchemaRef<'_>) -> Result<Vec<StrictError>, TypeError> {
    let mut walk = Walk::default();
    walk.value(object, schema)?;
    Ok(walk.unknown)
}

/// The state of a walk: the strict path, the struct fields from the root, the innermost
/// struct's name, and the unknown fields found.
#[derive(Default)]
struct Walk {
    path: String,
    fields: Vec<String>,
    strukt: String,
    unknown: Vec<StrictError>,
}

impl Walk {
    fn value(&mut self, value: &mut Value, schema: SchemaRef<'_>) -> Result<(), TypeError> {
        if value.is_null() {
            return Ok(());
        }
        match schema.node_type() {
            NodeType::Object => self.object(value, schema),
            NodeType::Array => self.array(value, schema),
            NodeType::Unknown => Ok(()),
            scalar => self.scalar(value, schema, scalar),
        }
    }

    fn mismatch(&self, value: &Value, schema: SchemaRef<'_>) -> TypeError {
        let field = self.fields.join(".");
        let context = (!self.strukt.is_empty()).then_some((self.strukt.as_str(), field.as_str()));
        TypeError::go(value, &go_type(schema), context)
    }

    fn object(&mut self, value: &mut Value, schema: SchemaRef<'_>) -> Result<(), TypeError> {
        let keep_unknown = schema.preserves_unknown_fields();
        if keep_unknown && schema.properties().next().is_none() {
            // Free-form (RawExtension, JSON, FieldsV1 keep raw JSON of any kind).
            return Ok(());
        }
        let Value::Object(map) = value else {
            return Err(self.mismatch(value, schema));
        };
        let is_map = schema.properties().next().is_none();
        match schema.additional_properties() {
            Some(values) if is_map => self.map(map, values),
            _ => self.structure(map, schema, keep_unknown),
        }
    }

    fn map(
        &mut self,
        map: &mut Map<String, Value>,
        values: SchemaRef<'_>,
    ) -> Result<(), TypeError> {
        for (key, value) in map.iter_mut() {
            let mark = self.enter_key(key);
            self.value(value, values)?;
            self.path.truncate(mark);
        }
        Ok(())
    }

    fn structure(
        &mut self,
        map: &mut Map<String, Value>,
        schema: SchemaRef<'_>,
        keep_unknown: bool,
    ) -> Result<(), TypeError> {
        let strukt = schema
            .definition_name()
            .map(|name| name.rsplit('.').next().unwrap_or(name).to_string())
            .unwrap_or_default();
        let outer = std::mem::replace(&mut self.strukt, strukt);
        let embedded = schema.embedded_resource();
        let mut unknown = Vec::new();
        // Reported in key order as they are met, as the decoder reports them in document order.
        for (key, value) in map.iter_mut() {
            match schema.property(key) {
                Some(field) => {
                    let mark = self.enter_key(key);
                    self.fields.push(key.clone());
                    let result = self.value(value, field);
                    self.fields.pop();
                    self.path.truncate(mark);
                    result?;
                }
                None if keep_unknown => {}
                None if embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") => {}
                None => {
                    let path = self.child_path(key);
                    self.unknown.push(StrictError {
                        kind: StrictKind::Unknown,
                        path,
                    });
                    unknown.push(key.clone());
                }
            }
        }
        for key in unknown {
            map.remove(&key);
        }
        self.strukt = outer;
        Ok(())
    }

    fn array(&mut self, value: &mut Value, schema: SchemaRef<'_>) -> Result<(), TypeError> {
        let Value::Array(items) = value else {
            return Err(self.mismatch(value, schema));
        };
        let Some(item_schema) = schema.items() else {
            return Ok(());
        };
        for (index, item) in items.iter_mut().enumerate() {
            let mark = self.path.len();
            self.path.push_str(&format!("[{index}]"));
            self.value(item, item_schema)?;
            self.path.truncate(mark);
        }
        Ok(())
    }

    fn scalar(
        &mut self,
        value: &mut Value,
        schema: SchemaRef<'_>,
        ty: NodeType,
    ) -> Result<(), TypeError> {
        if is_quantity(schema) {
            return check_quantity(value);
        }
        let fits = match (ty, &*value) {
            (NodeType::String, Value::String(_)) => true,
            (NodeType::Boolean, Value::Bool(_)) => true,
            (NodeType::Number, Value::Number(_)) => true,
            (NodeType::Integer, Value::Number(n)) => integer_fits(n, schema.format()),
            (NodeType::IntOrString, Value::String(_)) => true,
            (NodeType::IntOrString, Value::Number(n)) => {
                return match integer_fits(n, Some("int32")) {
                    true => Ok(()),
                    false => Err(TypeError::go(value, "int32", None)),
                };
            }
            (NodeType::IntOrString, other) => return Err(TypeError::go(other, "int32", None)),
            _ => false,
        };
        if !fits {
            return Err(self.mismatch(value, schema));
        }
        match schema.format() {
            Some("date-time") => check_time(value),
            Some("byte") => check_base64(value),
            _ => Ok(()),
        }
    }

    /// Appends a key to the strict path; returns the length to truncate back to.
    fn enter_key(&mut self, key: &str) -> usize {
        let mark = self.path.len();
        self.path = self.child_path(key);
        mark
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
}

/// Whether a number fits Go's integer type of this format (a fraction or exponent never
/// does: Go parses the literal as an integer).
fn integer_fits(number: &serde_json::Number, format: Option<&str>) -> bool {
    let Some(n) = number.as_i64() else {
        return false;
    };
    match format {
        Some("int32") => i32::try_from(n).is_ok(),
        _ => true,
    }
}

fn is_quantity(schema: SchemaRef<'_>) -> bool {
    schema.definition_name() == Some("io.k8s.apimachinery.pkg.api.resource.Quantity")
}

/// Quantity's own JSON decoding: a string or a number in the quantity syntax.
fn check_quantity(value: &Value) -> Result<(), TypeError> {
    let text = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    if quantity_syntax(&text) {
        return Ok(());
    }
    Err(TypeError {
        message: "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            .into(),
    })
}

/// `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$` with a recognized suffix, as
/// resource.ParseQuantity accepts.
fn quantity_syntax(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let number_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_end);
    if number.is_empty() || number.matches('.').count() > 1 || number == "." {
        return false;
    }
    const SUFFIXES: &[&str] = &[
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E",
    ];
    if SUFFIXES.contains(&suffix) {
        return true;
    }
    let Some(exponent) = suffix.strip_prefix(['e', 'E']) else {
        return false;
    };
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// metav1.Time's decoding: an RFC 3339 time, with Go's parse error otherwise.
/// A `[]byte` field's JSON form: standard base64 with padding, as Go's decoder reads it
/// (newlines ignored).
fn check_base64(value: &Value) -> Result<(), TypeError> {
    let Value::String(text) = value else {
        return Ok(());
    };
    match base64_error(text.as_bytes()) {
        None => Ok(()),
        Some(at) => Err(TypeError {
            message: format!("illegal base64 data at input byte {at}"),
        }),
    }
}

/// Where Go's `base64.StdEncoding.Decode` stops with a CorruptInputError, or `None` when
/// the text decodes.
fn base64_error(src: &[u8]) -> Option<usize> {
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    loop {
        // One quantum of four characters.
        let mut j = 0;
        while j < 4 {
            let Some(&c) = src.get(si) else {
                return match j {
                    0 => None,
                    _ => Some(si - j),
                };
            };
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                // "==" is expected; the first "=" is consumed.
                while src.get(si).copied().is_some_and(newline) {
                    si += 1;
                }
                match src.get(si) {
                    None => return Some(src.len()),
                    Some(b'=') => si += 1,
                    Some(_) => return Some(si - 1),
                }
            }
            while src.get(si).copied().is_some_and(newline) {
                si += 1;
            }
            // Padding ends the data: anything after it is trailing garbage.
            return (si < src.len()).then_some(si);
        }
    }
}

fn check_time(value: &Value) -> Result<(), TypeError> {
    let Value::String(text) = value else {
        return Ok(());
    };
    match rfc3339_error(text) {
        None => Ok(()),
        Some(problem) => Err(TypeError {
            message: format!("parsing time {}{problem}", kapi_apimachinery::quote(text)),
        }),
    }
}

/// What Go's `time.Parse(time.RFC3339, text)` reports after `parsing time "<text>"`, or
/// `None` when the time is valid.
fn rfc3339_error(text: &str) -> Option<String> {
    const LAYOUT: &str = "\"2006-01-02T15:04:05Z07:00\"";
    // (layout element, digits, range)
    const ELEMENTS: &[(&str, &str, usize, u32, u32)] = &[
        ("", "2006", 4, 0, 9999),
        ("-", "01", 2, 1, 12),
        ("-", "02", 2, 1, 31),
        ("T", "15", 2, 0, 23),
        (":", "04", 2, 0, 59),
        (":", "05", 2, 0, 59),
    ];
    const RANGE: &[&str] = &["year", "month", "day", "hour", "minute", "second"];
    let mut rest = text;
    for (i, (literal, element, digits, min, max)) in ELEMENTS.iter().enumerate() {
        let Some(after) = rest.strip_prefix(literal) else {
            return Some(format!(
                " as {LAYOUT}: cannot parse {} as {}",
                kapi_apimachinery::quote(rest),
                kapi_apimachinery::quote(literal)
            ));
        };
        let number = after
            .get(..*digits)
            .filter(|d| d.chars().all(|c| c.is_ascii_digit()));
        let Some(number) = number else {
            return Some(format!(
                " as {LAYOUT}: cannot parse {} as {}",
                kapi_apimachinery::quote(after),
                kapi_apimachinery::quote(element)
            ));
        };
        let n: u32 = number.parse().unwrap_or(0);
        if n < *min || n > *max {
            return Some(format!(": {} out of range", RANGE[i]));
        }
        rest = &after[*digits..];
    }
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        rest = &fraction[end..];
    }
    let zone_ok = rest == "Z" || {
        let b = rest.as_bytes();
        b.len() == 6
            && (b[0] == b'+' || b[0] == b'-')
            && b[1..3].iter().all(u8::is_ascii_digit)
            && b[3] == b':'
            && b[4..6].iter().all(u8::is_ascii_digit)
    };
    (!zone_ok).then(|| {
        format!(
            " as {LAYOUT}: cannot parse {} as \"Z07:00\"",
            kapi_apimachinery::quote(rest)
        )
    })
}

/// Go's name of the type a schema node decodes into, for `cannot unmarshal` messages:
/// `int32`, `string`, `[]v1.Container`, `map[string]string`, `v1.ObjectMeta`, ...
pub fn go_type(schema: SchemaRef<'_>) -> String {
    if let Some(name) = schema.definition_name() {
        let mut parts = name.rsplit('.');
        let (ty, package) = (parts.next().unwrap_or(name), parts.next().unwrap_or(""));
        return format!("{package}.{ty}");
    }
    match schema.node_type() {
        NodeType::Integer => schema.format().unwrap_or("int64").to_string(),
        NodeType::Number => "float64".into(),
        NodeType::Boolean => "bool".into(),
        NodeType::String if schema.format() == Some("byte") => "[]uint8".into(),
        NodeType::String => "string".into(),
        NodeType::IntOrString => "intstr.IntOrString".into(),
        NodeType::Array => match schema.items() {
            Some(items) => format!("[]{}", go_type(items)),
            None => "[]interface {}".into(),
        },
        NodeType::Object => match schema.additional_properties() {
            Some(values) => format!("map[string]{}", go_type(values)),
            None => "map[string]interface {}".into(),
        },
        NodeType::Unknown => "interface {}".into(),
    }
}

/// The duplicate fields of a JSON document (which must be valid JSON), as the strict
/// decoder reports them: known fields of structs and keys of maps, not inside free-form
/// values (which Go keeps as raw JSON).
pub fn duplicate_fields(body: &[u8], schema: SchemaRef<'_>) -> Vec<StrictError> {
    scan(body, Check::Schema(schema))
}

/// The duplicate fields of a JSON document decoded into untyped maps (as upstream decodes
/// merge and strategic merge patches): every key of every object counts.
pub fn duplicate_fields_untyped(body: &[u8]) -> Vec<StrictError> {
    scan(body, Check::All)
}

fn scan(body: &[u8], check: Check<'_>) -> Vec<StrictError> {
    let mut scanner = Scanner {
        data: body,
        at: 0,
        found: Vec::new(),
    };
    scanner.value(check, "");
    scanner.found
}

/// Which duplicates count in a value.
#[derive(Clone, Copy)]
enum Check<'a> {
    /// Those the typed decoding into this schema reports.
    Schema(SchemaRef<'a>),
    /// Every one (untyped maps).
    All,
    /// None (raw JSON, unknown fields).
    Skip,
}

impl<'a> Check<'a> {
    /// The check of the member `key` of an object, and whether a duplicate `key` counts.
    fn member(self, key: &str) -> (Check<'a>, bool) {
        let Check::Schema(schema) = self else {
            return (self, matches!(self, Check::All));
        };
        if schema.properties().next().is_none() {
            return match schema.additional_properties() {
                Some(values) => (Check::Schema(values), true),
                None => (Check::Skip, true),
            };
        }
        match schema.property(key) {
            Some(field) => (Check::Schema(field), true),
            None => (Check::Skip, false),
        }
    }

    fn items(self) -> Check<'a> {
        match self {
            Check::Schema(schema) => schema.items().map_or(Check::Skip, Check::Schema),
            other => other,
        }
    }
}

/// A minimal scanner over valid JSON that finds duplicate fields.
struct Scanner<'d> {
    data: &'d [u8],
    at: usize,
    found: Vec<StrictError>,
}

impl Scanner<'_> {
    fn skip_space(&mut self) {
        while self.data.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.data.get(self.at).copied()
    }

    /// Scans one value.
    fn value(&mut self, check: Check<'_>, path: &str) {
        let check = match check {
            Check::Schema(schema) if schema.preserves_unknown_fields() => Check::Skip,
            other => other,
        };
        match self.peek() {
            Some(b'{') => self.object(check, path),
            Some(b'[') => self.array(check.items(), path),
            Some(b'"') => {
                self.string();
            }
            Some(_) => self.scalar(),
            None => {}
        }
    }

    fn object(&mut self, check: Check<'_>, path: &str) {
        self.at += 1;
        let mut seen = std::collections::HashSet::new();
        loop {
            match self.peek() {
                Some(b'}') | None => break,
                Some(b',') => self.at += 1,
                _ => {
                    let key = self.string();
                    self.peek();
                    self.at += 1; // the colon
                    let (child, counts) = check.member(&key);
                    let child_path = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    if counts && !seen.insert(key) {
                        self.found.push(StrictError {
                            kind: StrictKind::Duplicate,
                            path: child_path.clone(),
                        });
                    }
                    self.value(child, &child_path);
                }
            }
        }
        self.at += 1;
    }

    fn array(&mut self, items: Check<'_>, path: &str) {
        self.at += 1;
        let mut index = 0;
        loop {
            match self.peek() {
                Some(b']') | None => break,
                Some(b',') => self.at += 1,
                _ => {
                    self.value(items, &format!("{path}[{index}]"));
                    index += 1;
                }
            }
        }
        self.at += 1;
    }

    /// Scans a string and returns its decoded text.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(&byte) = self.data.get(self.at) {
            self.at += 1;
            match byte {
                b'\\' => self.at += 1,
                b'"' => break,
                _ => {}
            }
        }
        serde_json::from_slice(&self.data[start..self.at.min(self.data.len())]).unwrap_or_default()
    }

    fn scalar(&mut self) {
        while self
            .data
            .get(self.at)
            .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_fails_where_go_decoding_does() {
        for (text, error) in [
            ("YWJj", None),
            ("YWI=", None),
            ("YQ==", None),
            ("YW\nJj", None),
            ("", None),
            ("not base64!", Some(3)),
            ("YQ", Some(0)),
            ("YWJjZA", Some(4)),
            ("Y===", Some(1)),
            ("YQ=", Some(3)),
            ("YQ=x", Some(2)),
            ("YWI=YWJj", Some(4)),
        ] {
            assert_eq!(base64_error(text.as_bytes()), error, "{text:?}");
        }
    }

    #[test]
    fn times_are_rfc3339() {
        let cases = [
            ("2024-01-02T03:04:05Z", None),
            ("2024-01-02T03:04:05+02:00", None),
            (
                "yesterday",
                Some(r#" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#),
            ),
            ("2024-13-02T03:04:05Z", Some(": month out of range")),
            (
                "2024-01-02 03:04:05Z",
                Some(r#" as "2006-01-02T15:04:05Z07:00": cannot parse " 03:04:05Z" as "T""#),
            ),
            (
                "2024-01-02T03:04:05",
                Some(r#" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#),
            ),
        ];
        for (text, problem) in cases {
            assert_eq!(rfc3339_error(text).as_deref(), problem, "{text}");
        }
    }

    #[test]
    fn quantities_follow_the_quantity_syntax() {
        for good in ["1", "100m", "1.5Gi", "+2", "-1", "1e3", "1E-3", ".5", "5."] {
            assert!(quantity_syntax(good), "{good}");
        }
        for bad in ["", "x", "1x", "1..2", "1e", "Gi", "."] {
            assert!(!quantity_syntax(bad), "{bad}");
        }
    }
}
