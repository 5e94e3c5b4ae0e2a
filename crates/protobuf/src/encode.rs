//! Encodes a JSON object into its protobuf message, driven by the schema table: the inverse
//! of `decode.rs`, writing what Go's generated `Marshal` writes for the Go object that JSON
//! decodes to.
//!
//! Go's generated code writes every non-pointer field, zero or not (strings, numbers, bools,
//! structs; a zero `Time` as an empty message), a pointer only when set, each element of a
//! slice, map entries in key order, and `[]byte`/`RawExtension`/`FieldsV1` bytes only when
//! non-nil. Fields go out in field-number order.
//!
//! The message is built back to front in a reversed buffer ([`Rev`]): a length-delimited
//! field's payload is written before its length and tag, so no length is computed twice and
//! nothing is moved; one reversal at the end puts the bytes in order.

use base64::Engine as _;
use kapi_apimachinery::{goduration, gotime, quantity::Quantity};
use serde_json::{Map, Value};

use crate::schema::{Emit, Field, Kind, Message, Shape};
use crate::wire::{FIXED64, LEN, VARINT};

/// Objects nested deeper than this are refused, as in decoding.
const MAX_DEPTH: usize = 100;

/// Why an object could not be encoded: a value whose JSON type is not what its field holds
/// (a damaged stored object; admitted objects always fit their schema).
pub(crate) type Error = String;

/// Bytes written back to front.
#[derive(Default)]
pub(crate) struct Rev {
    buf: Vec<u8>,
}

impl Rev {
    pub(crate) fn with_capacity(capacity: usize) -> Rev {
        Rev {
            buf: Vec::with_capacity(capacity),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend(b.iter().rev());
    }

    pub(crate) fn varint(&mut self, mut v: u64) {
        let mut tmp = [0u8; 10];
        let mut n = 0;
        while v >= 0x80 {
            tmp[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        tmp[n] = v as u8;
        self.bytes(&tmp[..=n]);
    }

    pub(crate) fn tag(&mut self, num: u32, wire_type: u8) {
        self.varint(u64::from(num) << 3 | u64::from(wire_type));
    }

    /// Closes a length-delimited field whose payload was written since `start`.
    pub(crate) fn close(&mut self, num: u32, start: usize) {
        let len = self.buf.len() - start;
        self.varint(len as u64);
        self.tag(num, LEN);
    }

    pub(crate) fn string_field(&mut self, num: u32, s: &[u8]) {
        let start = self.len();
        self.bytes(s);
        self.close(num, start);
    }

    /// The bytes in order, appended to `out`.
    pub(crate) fn finish_into(self, out: &mut Vec<u8>) {
        out.extend(self.buf.iter().rev());
    }
}

fn at(path: &str, err: impl std::fmt::Display) -> Error {
    if path.is_empty() {
        err.to_string()
    } else {
        format!("{path}: {err}")
    }
}

/// Writes the fields of `msg` from `object` (in reverse field order: the buffer is reversed).
pub(crate) fn message(
    w: &mut Rev,
    msg: &'static Message,
    object: &Map<String, Value>,
    depth: usize,
) -> Result<(), Error> {
    fields(w, msg, object, depth, 0..=u32::MAX)
}

/// Writes the fields of `msg` numbered in `nums` from `object`.
pub(crate) fn fields(
    w: &mut Rev,
    msg: &'static Message,
    object: &Map<String, Value>,
    depth: usize,
    nums: std::ops::RangeInclusive<u32>,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(format!("{}: objects nested too deep", msg.name));
    }
    for field in msg.fields.iter().rev().filter(|f| nums.contains(&f.num)) {
        if field.emit == Emit::Inline {
            let Kind::Msg(inner) = field.kind else {
                unreachable!("the generator inlines only messages")
            };
            let start = w.len();
            message(w, inner, object, depth + 1)?;
            w.close(field.num, start);
            continue;
        }
        let value = object.get(field.json).filter(|v| !v.is_null());
        write_field(w, field, value, depth).map_err(|e| at(field.json, e))?;
    }
    Ok(())
}

fn write_field(
    w: &mut Rev,
    field: &'static Field,
    value: Option<&Value>,
    depth: usize,
) -> Result<(), Error> {
    match field.shape {
        Shape::Rep => {
            let Some(value) = value else { return Ok(()) };
            let items = value.as_array().ok_or("not an array")?;
            for item in items.iter().rev() {
                match (item, field.kind) {
                    // A nil element of [][]byte is still written, empty.
                    (Value::Null, Kind::Bytes) => w.string_field(field.num, b""),
                    _ => one(w, field.num, field.kind, item, depth)?,
                }
            }
        }
        Shape::Map => {
            let Some(value) = value else { return Ok(()) };
            let map = value.as_object().ok_or("not an object")?;
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for key in keys.into_iter().rev() {
                let start = w.len();
                one(w, 2, field.kind, &map[key], depth).map_err(|e| at(key, e))?;
                w.string_field(1, key.as_bytes());
                w.close(field.num, start);
            }
        }
        Shape::One => match (value, field.emit) {
            (Some(v), _) => one(w, field.num, field.kind, v, depth)?,
            (None, Emit::Ptr | Emit::PtrNull) => {}
            // Go writes nil slices and []byte not at all, every other non-pointer field
            // as its zero value.
            (None, _) if matches!(field.kind, Kind::Bytes | Kind::StrList) => {}
            (None, _) => zero(w, field.num, field.kind, depth)?,
        },
    }
    Ok(())
}

/// Writes the zero value of a non-pointer field.
fn zero(w: &mut Rev, num: u32, kind: Kind, depth: usize) -> Result<(), Error> {
    match kind {
        Kind::Str => w.string_field(num, b""),
        Kind::Bool | Kind::Int32 | Kind::Int64 => {
            w.varint(0);
            w.tag(num, VARINT);
        }
        Kind::Double => {
            w.bytes(&0f64.to_bits().to_le_bytes());
            w.tag(num, FIXED64);
        }
        Kind::Msg(inner) => {
            let start = w.len();
            message(w, inner, &Map::new(), depth + 1)?;
            w.close(num, start);
        }
        // The zero time is an empty message; FieldsV1 and RawExtension have nil bytes, the
        // schema unions nothing set.
        Kind::Time
        | Kind::MicroTime
        | Kind::FieldsV1
        | Kind::RawExtension
        | Kind::SchemaOrBool(_)
        | Kind::SchemaOrArray(_)
        | Kind::SchemaOrStrings(_) => w.close(num, w.len()),
        Kind::Duration => one(w, num, kind, &Value::from("0s"), depth)?,
        Kind::IntOrString => one(w, num, kind, &Value::from(0), depth)?,
        Kind::Quantity => one(w, num, kind, &Value::from("0"), depth)?,
        Kind::Bytes | Kind::StrList => {}
    }
    Ok(())
}

fn int(value: &Value, min: i64, max: i64) -> Result<i64, Error> {
    value
        .as_i64()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| format!("{value} is not an integer in [{min}, {max}]"))
}

fn str_of(value: &Value) -> Result<&str, Error> {
    value.as_str().ok_or_else(|| "not a string".to_string())
}

/// Writes one value of `kind` as field `num`; `null` (in a list or map) as Go's JSON decodes
/// it: the zero value.
fn one(w: &mut Rev, num: u32, kind: Kind, value: &Value, depth: usize) -> Result<(), Error> {
    if value.is_null() {
        return zero(w, num, kind, depth);
    }
    match kind {
        Kind::Str => w.string_field(num, str_of(value)?.as_bytes()),
        Kind::Bool => {
            w.varint(u64::from(value.as_bool().ok_or("not a boolean")?));
            w.tag(num, VARINT);
        }
        Kind::Int32 => {
            // Go sign-extends a negative int32 to ten bytes.
            w.varint(int(value, i32::MIN.into(), i32::MAX.into())? as u64);
            w.tag(num, VARINT);
        }
        Kind::Int64 => {
            w.varint(int(value, i64::MIN, i64::MAX)? as u64);
            w.tag(num, VARINT);
        }
        Kind::Double => {
            let f = value.as_f64().ok_or("not a number")?;
            w.bytes(&f.to_bits().to_le_bytes());
            w.tag(num, FIXED64);
        }
        Kind::Bytes => {
            let data = base64::engine::general_purpose::STANDARD
                .decode(str_of(value)?)
                .map_err(|e| format!("not base64: {e}"))?;
            w.string_field(num, &data);
        }
        Kind::StrList => {
            let start = w.len();
            for item in value.as_array().ok_or("not an array")?.iter().rev() {
                // A null element is Go's zero string.
                let text = if item.is_null() { "" } else { str_of(item)? };
                w.string_field(1, text.as_bytes());
            }
            w.close(num, start);
        }
        Kind::Msg(inner) => {
            let object = value.as_object().ok_or("not an object")?;
            let start = w.len();
            message(w, inner, object, depth + 1)?;
            w.close(num, start);
        }
        Kind::Time | Kind::MicroTime => {
            let start = w.len();
            let text = str_of(value)?;
            let t =
                gotime::parse_formatted(text).ok_or_else(|| format!("{text:?} is not a time"))?;
            if t != gotime::ZERO_TIME {
                w.varint(u64::from(t.nanos));
                w.tag(2, VARINT);
                w.varint(t.seconds as u64);
                w.tag(1, VARINT);
            }
            w.close(num, start);
        }
        Kind::Duration => {
            let text = str_of(value)?;
            let nanos = goduration::parse_nanos(text).map_err(|e| e.to_string())?;
            let start = w.len();
            w.varint(nanos as u64);
            w.tag(1, VARINT);
            w.close(num, start);
        }
        Kind::IntOrString => {
            let start = w.len();
            let (kind, int_val, str_val) = match value {
                Value::String(s) => (1, 0, s.as_str()),
                v => (0, int(v, i32::MIN.into(), i32::MAX.into())?, ""),
            };
            w.string_field(3, str_val.as_bytes());
            w.varint(int_val as u64);
            w.tag(2, VARINT);
            w.varint(kind);
            w.tag(1, VARINT);
            w.close(num, start);
        }
        Kind::Quantity => {
            // Go's Marshal writes `q.String()`: the canonical form, whatever was parsed.
            let canonical = Quantity::from_json(value)
                .map_err(|e| e.to_string())?
                .canonical();
            let start = w.len();
            w.string_field(1, canonical.as_bytes());
            w.close(num, start);
        }
        Kind::FieldsV1 | Kind::RawExtension => {
            let start = w.len();
            let raw = serde_json::to_vec(value).map_err(|e| e.to_string())?;
            w.string_field(1, &raw);
            w.close(num, start);
        }
        Kind::SchemaOrBool(schema)
        | Kind::SchemaOrArray(schema)
        | Kind::SchemaOrStrings(schema) => {
            let start = w.len();
            schema_union(w, kind, schema, value, depth)?;
            w.close(num, start);
        }
    }
    Ok(())
}

/// The fields of an apiextensions schema union from its JSON (apiextensions v1 marshal.go):
/// an object is the schema (and, for JSONSchemaPropsOrBool, `allows`), a bool `allows`, a
/// list the schemas or strings.
fn schema_union(
    w: &mut Rev,
    kind: Kind,
    schema: &'static Message,
    value: &Value,
    depth: usize,
) -> Result<(), Error> {
    let or_bool = matches!(kind, Kind::SchemaOrBool(_));
    match value {
        Value::Object(object) => {
            let start = w.len();
            message(w, schema, object, depth + 1)?;
            w.close(if or_bool { 2 } else { 1 }, start);
            if or_bool {
                w.varint(1);
                w.tag(1, VARINT);
            }
        }
        Value::Bool(allows) if or_bool => {
            w.varint(u64::from(*allows));
            w.tag(1, VARINT);
        }
        Value::Array(items) if !or_bool => {
            for item in items.iter().rev() {
                // A null element is Go's zero value: an empty schema, an empty string.
                match kind {
                    Kind::SchemaOrArray(_) => {
                        let empty = serde_json::Map::new();
                        let object = match item {
                            Value::Null => &empty,
                            item => item.as_object().ok_or("a schema is not an object")?,
                        };
                        let start = w.len();
                        message(w, schema, object, depth + 1)?;
                        w.close(2, start);
                    }
                    _ if item.is_null() => w.string_field(2, b""),
                    _ => w.string_field(2, str_of(item)?.as_bytes()),
                }
            }
        }
        _ => return Err("not a schema or what stands for one".into()),
    }
    Ok(())
}
