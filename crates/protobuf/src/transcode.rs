//! JSON text straight to protobuf, driven by the schema table, without building a
//! `serde_json::Value`: the path of responses served from stored JSON, where decoding into a
//! tree and encoding it (`encode.rs`) costs several times what sending the JSON does.
//!
//! The JSON is read by serde_json's streaming deserializer; each object is written as its
//! message as its members arrive, forward, with a one-byte length placeholder that is widened
//! (moving the message's bytes) when the message is 128 bytes or more. Members go out in the
//! JSON's order, and fields the JSON leaves out are not written: a protobuf reader (Go's
//! generated `Unmarshal` too) takes an absent field as its zero value, so the message means
//! what `encode.rs`'s, which writes Go's zeros, means. `null` is an absent field, and the zero
//! value in a list. The members
//! of an inlined struct (`json:",inline"`) are gathered into their own message.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use kapi_apimachinery::{goduration, gotime, quantity::Quantity};
use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::schema::{Emit, Field, Kind, Message, Shape};
use crate::wire::{self, FIXED64, LEN, VARINT};

/// Writes the JSON object `json` as the fields of `msg`, appended to `out`.
pub(crate) fn message(out: &mut Vec<u8>, msg: &'static Message, json: &[u8]) -> Result<(), String> {
    // Checked as UTF-8 once, whole, so that the reader need not check each string.
    let json = std::str::from_utf8(json).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut de = serde_json::Deserializer::from_str(json);
    MessageSeed { out, msg, depth: 0 }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())
}

/// Objects nested deeper than this are refused (serde_json stops at 128 anyway).
const MAX_DEPTH: usize = 100;

/// Opens a length-delimited field: its tag and a one-byte length placeholder. Returns where
/// the payload starts.
fn open(out: &mut Vec<u8>, num: u32) -> usize {
    wire::put_varint(out, u64::from(num) << 3 | u64::from(LEN));
    out.push(0);
    out.len()
}

/// Closes the field opened at `start`: its length in the placeholder, widened if need be.
fn close(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len < 0x80 {
        out[start - 1] = len as u8;
        return;
    }
    let mut varint = Vec::with_capacity(5);
    wire::put_varint(&mut varint, len as u64);
    out.splice(start - 1..start, varint);
}

fn varint_field(out: &mut Vec<u8>, num: u32, v: u64) {
    wire::put_varint(out, u64::from(num) << 3 | u64::from(VARINT));
    wire::put_varint(out, v);
}

fn bytes_field(out: &mut Vec<u8>, num: u32, data: &[u8]) {
    wire::put_len_tag(out, num, data.len());
    out.extend_from_slice(data);
}

/// The field of `msg` named `key` in JSON, and the inlined fields it sits under (outermost
/// first).
fn find(msg: &'static Message, key: &str) -> Option<(Vec<&'static Field>, &'static Field)> {
    for field in msg.fields {
        if field.emit == Emit::Inline {
            if let Kind::Msg(inner) = field.kind
                && let Some((mut path, found)) = find(inner, key)
            {
                path.insert(0, field);
                return Some((path, found));
            }
        } else if field.json == key {
            return Some((Vec::new(), field));
        }
    }
    None
}

/// A member's name, borrowed from the JSON text unless it has escapes (serde's own
/// `Cow<str>` always copies, an allocation per member).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}

/// A JSON object written as a message's fields.
struct MessageSeed<'a> {
    out: &'a mut Vec<u8>,
    msg: &'static Message,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for MessageSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom("objects nested too deep"));
        }
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object ({})", self.msg.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // The members of inlined structs, by the (outermost) inline field.
        let mut inlined: Vec<(&'static Field, Vec<u8>)> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let Some((path, field)) = find(self.msg, &key) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let out = match path.first() {
                None => &mut *self.out,
                Some(outer) => {
                    let i = match inlined.iter().position(|(f, _)| f.num == outer.num) {
                        Some(i) => i,
                        None => {
                            inlined.push((outer, Vec::new()));
                            inlined.len() - 1
                        }
                    };
                    &mut inlined[i].1
                }
            };
            // An inline struct inside an inline struct: its own nested message.
            let mut opened = Vec::new();
            for inner in path.iter().skip(1) {
                opened.push(open(out, inner.num));
            }
            map.next_value_seed(FieldSeed {
                out: &mut *out,
                field,
                depth: self.depth,
            })?;
            for start in opened.into_iter().rev() {
                close(out, start);
            }
        }
        for (field, bytes) in inlined {
            bytes_field(self.out, field.num, &bytes);
        }
        Ok(())
    }
}

/// One member's value written as its field (every element of a list, every entry of a map).
struct FieldSeed<'a> {
    out: &'a mut Vec<u8>,
    field: &'static Field,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the value of {}", self.field.json)
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let (field, depth) = (self.field, self.depth);
        match field.shape {
            Shape::One => ValueSeed {
                out: self.out,
                num: field.num,
                kind: field.kind,
                depth,
            }
            .deserialize(d),
            Shape::Rep => d.deserialize_seq(ListSeed {
                out: self.out,
                num: field.num,
                kind: field.kind,
                depth,
            }),
            Shape::Map => d.deserialize_map(EntriesSeed {
                out: self.out,
                num: field.num,
                kind: field.kind,
                depth,
            }),
        }
    }
}

/// A JSON array: each element as one occurrence of field `num`.
struct ListSeed<'a> {
    out: &'a mut Vec<u8>,
    num: u32,
    kind: Kind,
    depth: usize,
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        elements(self.out, self.num, self.kind, self.depth, seq)
    }
}

/// The elements of a JSON array, each as one occurrence of field `num`. A `null` element is
/// the element type's zero value, as Go's JSON decoding makes it (a value writes nothing only
/// when it is `null`: every other value writes at least its tag).
fn elements<'de, A: SeqAccess<'de>>(
    out: &mut Vec<u8>,
    num: u32,
    kind: Kind,
    depth: usize,
    mut seq: A,
) -> Result<(), A::Error> {
    loop {
        let before = out.len();
        let seed = ValueSeed {
            out: &mut *out,
            num,
            kind,
            depth,
        };
        if seq.next_element_seed(seed)?.is_none() {
            return Ok(());
        }
        if out.len() == before {
            zero(out, num, kind);
        }
    }
}

/// The zero value of `kind` as field `num`. Messages are written empty: a protobuf reader
/// takes their absent fields as zeros.
fn zero(out: &mut Vec<u8>, num: u32, kind: Kind) {
    match kind {
        Kind::Str | Kind::Bytes => bytes_field(out, num, b""),
        Kind::Bool | Kind::Int32 | Kind::Int64 => varint_field(out, num, 0),
        Kind::Double => {
            wire::put_varint(out, u64::from(num) << 3 | u64::from(FIXED64));
            out.extend_from_slice(&0f64.to_bits().to_le_bytes());
        }
        Kind::Quantity => {
            let start = open(out, num);
            bytes_field(out, 1, b"0");
            close(out, start);
        }
        _ => {
            let start = open(out, num);
            close(out, start);
        }
    }
}

/// A JSON object of a `map<string, V>` field: each member as an entry `{key = 1, value = 2}`.
struct EntriesSeed<'a> {
    out: &'a mut Vec<u8>,
    num: u32,
    kind: Kind,
    depth: usize,
}

impl<'de> Visitor<'de> for EntriesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let start = open(self.out, self.num);
            bytes_field(self.out, 1, key.as_bytes());
            map.next_value_seed(ValueSeed {
                out: &mut *self.out,
                num: 2,
                kind: self.kind,
                depth: self.depth,
            })?;
            close(self.out, start);
        }
        Ok(())
    }
}

/// One value of `kind` as field `num`; `null` writes nothing.
struct ValueSeed<'a> {
    out: &'a mut Vec<u8>,
    num: u32,
    kind: Kind,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let (out, num, depth) = (self.out, self.num, self.depth);
        match self.kind {
            Kind::Msg(msg) => {
                let before = out.len();
                let start = open(out, num);
                let written = d.deserialize_option(Nullable(MessageSeed {
                    out: &mut *out,
                    msg,
                    depth: depth + 1,
                }))?;
                match written {
                    true => close(out, start),
                    false => out.truncate(before),
                }
                Ok(())
            }
            Kind::FieldsV1 | Kind::RawExtension => {
                let raw = <&RawValue>::deserialize(d)?;
                if raw.get() != "null" {
                    let start = open(out, num);
                    bytes_field(out, 1, raw.get().as_bytes());
                    close(out, start);
                }
                Ok(())
            }
            kind => d.deserialize_any(Scalar {
                out,
                num,
                kind,
                depth,
            }),
        }
    }
}

/// A seed that may meet `null`: true when it was given a value.
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de, Value = ()>> Visitor<'de> for Nullable<S> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        self.0.deserialize(d).map(|()| true)
    }
}

/// Any other kind, from whatever JSON value it was given.
struct Scalar<'a> {
    out: &'a mut Vec<u8>,
    num: u32,
    kind: Kind,
    depth: usize,
}

impl Scalar<'_> {
    fn int<E: de::Error>(self, v: i128) -> Result<(), E> {
        let (min, max) = match self.kind {
            Kind::Int32 | Kind::IntOrString => (i128::from(i32::MIN), i128::from(i32::MAX)),
            Kind::Int64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
            Kind::Double => return self.double(v as f64),
            Kind::Quantity => return self.quantity(&v.to_string()),
            _ => return Err(E::custom(format!("{v} where a {:?} belongs", self.kind))),
        };
        if !(min..=max).contains(&v) {
            return Err(E::custom(format!("{v} is out of range")));
        }
        match self.kind {
            Kind::IntOrString => {
                let start = open(self.out, self.num);
                varint_field(self.out, 1, 0);
                varint_field(self.out, 2, v as i64 as u64);
                close(self.out, start);
            }
            _ => varint_field(self.out, self.num, v as i64 as u64),
        }
        Ok(())
    }

    fn double<E: de::Error>(self, v: f64) -> Result<(), E> {
        match self.kind {
            Kind::Double => {
                wire::put_varint(self.out, u64::from(self.num) << 3 | u64::from(FIXED64));
                self.out.extend_from_slice(&v.to_bits().to_le_bytes());
                Ok(())
            }
            Kind::Quantity => {
                let text = serde_json::Number::from_f64(v).map(|n| n.to_string());
                self.quantity(&text.ok_or_else(|| E::custom("not a number"))?)
            }
            _ => Err(E::custom(format!("{v} where a {:?} belongs", self.kind))),
        }
    }

    fn quantity<E: de::Error>(self, number: &str) -> Result<(), E> {
        let value = serde_json::from_str(number).map_err(E::custom)?;
        let canonical = Quantity::from_json(&value).map_err(E::custom)?.canonical();
        let start = open(self.out, self.num);
        bytes_field(self.out, 1, canonical.as_bytes());
        close(self.out, start);
        Ok(())
    }

    fn time<E: de::Error>(self, text: &str) -> Result<(), E> {
        let t = gotime::parse_formatted(text)
            .ok_or_else(|| E::custom(format!("{text:?} is not a time")))?;
        let start = open(self.out, self.num);
        if t != gotime::ZERO_TIME {
            varint_field(self.out, 1, t.seconds as u64);
            varint_field(self.out, 2, u64::from(t.nanos));
        }
        close(self.out, start);
        Ok(())
    }
}

impl<'de> Visitor<'de> for Scalar<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {:?}", self.kind)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        match self.kind {
            Kind::Bool => varint_field(self.out, self.num, u64::from(v)),
            Kind::SchemaOrBool(_) => {
                let start = open(self.out, self.num);
                varint_field(self.out, 1, u64::from(v));
                close(self.out, start);
            }
            _ => return Err(E::custom(format!("{v} where a {:?} belongs", self.kind))),
        }
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.int(i128::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.int(i128::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.double(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        match self.kind {
            Kind::Str => bytes_field(self.out, self.num, v.as_bytes()),
            Kind::Bytes => {
                let data = base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|e| E::custom(format!("not base64: {e}")))?;
                bytes_field(self.out, self.num, &data);
            }
            Kind::Time | Kind::MicroTime => return self.time(v),
            Kind::Duration => {
                let nanos = goduration::parse_nanos(v).map_err(E::custom)?;
                let start = open(self.out, self.num);
                varint_field(self.out, 1, nanos as u64);
                close(self.out, start);
            }
            Kind::IntOrString => {
                let start = open(self.out, self.num);
                varint_field(self.out, 1, 1);
                bytes_field(self.out, 3, v.as_bytes());
                close(self.out, start);
            }
            Kind::Quantity => {
                let canonical = Quantity::parse(v).map_err(E::custom)?.canonical();
                let start = open(self.out, self.num);
                bytes_field(self.out, 1, canonical.as_bytes());
                close(self.out, start);
            }
            kind => return Err(E::custom(format!("a string where a {kind:?} belongs"))),
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let start = open(self.out, self.num);
        let (item_num, item_kind) = match self.kind {
            Kind::StrList | Kind::SchemaOrStrings(_) => (
                if matches!(self.kind, Kind::StrList) {
                    1
                } else {
                    2
                },
                Kind::Str,
            ),
            Kind::SchemaOrArray(schema) => (2, Kind::Msg(schema)),
            kind => {
                return Err(de::Error::custom(format!(
                    "an array where a {kind:?} belongs"
                )));
            }
        };
        elements(self.out, item_num, item_kind, self.depth + 1, seq)?;
        close(self.out, start);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let (schema, schema_num, allows) = match self.kind {
            Kind::SchemaOrBool(schema) => (schema, 2, true),
            Kind::SchemaOrArray(schema) | Kind::SchemaOrStrings(schema) => (schema, 1, false),
            kind => {
                return Err(de::Error::custom(format!(
                    "an object where a {kind:?} belongs"
                )));
            }
        };
        let start = open(self.out, self.num);
        if allows {
            varint_field(self.out, 1, 1);
        }
        let inner = open(self.out, schema_num);
        MessageSeed {
            out: &mut *self.out,
            msg: schema,
            depth: self.depth + 1,
        }
        .visit_map(map)?;
        close(self.out, inner);
        close(self.out, start);
        Ok(())
    }
}
