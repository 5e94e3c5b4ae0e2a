//! Decodes a protobuf message into JSON, driven by the schema table.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use crate::format;
use crate::schema::{Emit, Field, Kind, Message, Shape};
use crate::wire::{FIXED64, LEN, Reader, VARINT};

/// Messages nested deeper than this are refused (only recursive types and
/// embedded objects can nest; this keeps hostile input off the stack).
const MAX_DEPTH: usize = 100;

/// A malformed-input message, with the JSON path where it was found.
pub(crate) type Error = String;

fn at(path: &str, err: impl std::fmt::Display) -> Error {
    if path.is_empty() {
        err.to_string()
    } else {
        format!("{path}: {err}")
    }
}

/// The value collected for one field while reading a message.
enum Slot<'a> {
    Unset,
    One(Value),
    /// A singular message field: proto merges repeated occurrences, which is
    /// the same as decoding their concatenation.
    Chunks(Vec<&'a [u8]>),
    List(Vec<Value>),
    Map(Map<String, Value>),
}

/// Decodes `data` as `msg` into the JSON object Go's encoding/json would write.
pub(crate) fn message(
    msg: &'static Message,
    data: &[u8],
    path: &str,
    depth: usize,
) -> Result<Map<String, Value>, Error> {
    if depth > MAX_DEPTH {
        return Err(at(path, "messages nested too deep"));
    }
    let mut slots: Vec<Slot<'_>> = msg.fields.iter().map(|_| Slot::Unset).collect();
    let mut r = Reader::new(data);
    while !r.at_end() {
        let (num, wire_type) = r.tag().map_err(|e| at(path, e))?;
        let Ok(i) = msg.fields.binary_search_by_key(&num, |f| f.num) else {
            r.skip(num, wire_type).map_err(|e| at(path, e))?;
            continue;
        };
        let field = &msg.fields[i];
        let fpath = join(path, field.json);
        read_field(field, &mut slots[i], &mut r, wire_type, &fpath, depth)?;
    }

    let mut out = Map::new();
    for (field, slot) in msg.fields.iter().zip(slots) {
        let fpath = join(path, field.json);
        let value = match slot {
            Slot::Unset => None,
            Slot::One(v) => Some(v),
            Slot::Chunks(chunks) => {
                let Kind::Msg(inner) = field.kind else {
                    unreachable!("chunks only for messages")
                };
                let joined;
                let data = if chunks.len() == 1 {
                    chunks[0]
                } else {
                    joined = chunks.concat();
                    &joined
                };
                Some(Value::Object(message(inner, data, &fpath, depth + 1)?))
            }
            Slot::List(items) => Some(Value::Array(items)),
            Slot::Map(map) => Some(Value::Object(map)),
        };
        emit(&mut out, field, value);
    }
    Ok(out)
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn wire_error(path: &str, wire_type: u8, kind: &str) -> Error {
    at(
        path,
        format!("wrong wire type {wire_type} for a {kind} field"),
    )
}

fn read_field<'a>(
    field: &'static Field,
    slot: &mut Slot<'a>,
    r: &mut Reader<'a>,
    wire_type: u8,
    path: &str,
    depth: usize,
) -> Result<(), Error> {
    match field.shape {
        Shape::One => {
            if let Kind::Msg(_) = field.kind {
                if wire_type != LEN {
                    return Err(wire_error(path, wire_type, "message"));
                }
                let data = r.bytes().map_err(|e| at(path, e))?;
                match slot {
                    Slot::Chunks(chunks) => chunks.push(data),
                    _ => *slot = Slot::Chunks(vec![data]),
                }
            } else {
                *slot = Slot::One(value(field.kind, r, wire_type, path, depth)?);
            }
        }
        Shape::Rep => {
            let Slot::List(items) = slot else {
                *slot = Slot::List(Vec::new());
                return read_field(field, slot, r, wire_type, path, depth);
            };
            let packable = matches!(
                field.kind,
                Kind::Bool | Kind::Int32 | Kind::Int64 | Kind::Double
            );
            if packable && wire_type == LEN {
                let data = r.bytes().map_err(|e| at(path, e))?;
                let mut packed = Reader::new(data);
                let inner = if matches!(field.kind, Kind::Double) {
                    FIXED64
                } else {
                    VARINT
                };
                while !packed.at_end() {
                    items.push(value(field.kind, &mut packed, inner, path, depth)?);
                }
            } else {
                items.push(value(field.kind, r, wire_type, path, depth)?);
            }
        }
        Shape::Map => {
            if wire_type != LEN {
                return Err(wire_error(path, wire_type, "map"));
            }
            let Slot::Map(map) = slot else {
                *slot = Slot::Map(Map::new());
                return read_field(field, slot, r, wire_type, path, depth);
            };
            let entry = r.bytes().map_err(|e| at(path, e))?;
            let mut er = Reader::new(entry);
            let (mut key, mut val) = (String::new(), None);
            while !er.at_end() {
                let (num, wt) = er.tag().map_err(|e| at(path, e))?;
                match num {
                    1 => match value(Kind::Str, &mut er, wt, path, depth)? {
                        Value::String(s) => key = s,
                        _ => unreachable!("strings decode to strings"),
                    },
                    2 => val = Some(value(field.kind, &mut er, wt, &join(path, &key), depth)?),
                    _ => er.skip(num, wt).map_err(|e| at(path, e))?,
                }
            }
            let val = match val {
                Some(v) => v,
                // Go's generated code fills a missing map value with a fresh zero
                // value (an empty, non-nil []byte for bytes).
                None if matches!(field.kind, Kind::Bytes) => Value::String(String::new()),
                None => zero(field.kind),
            };
            map.insert(key, val);
        }
    }
    Ok(())
}

/// Reads one value of `kind` whose tag (of `wire_type`) was just read.
fn value(
    kind: Kind,
    r: &mut Reader<'_>,
    wire_type: u8,
    path: &str,
    depth: usize,
) -> Result<Value, Error> {
    let expect = |want: u8, what: &str| {
        if wire_type == want {
            Ok(())
        } else {
            Err(wire_error(path, wire_type, what))
        }
    };
    let e = |err: String| at(path, err);
    Ok(match kind {
        Kind::Str => {
            expect(LEN, "string")?;
            Value::String(string(r.bytes().map_err(e)?))
        }
        Kind::Bool => {
            expect(VARINT, "bool")?;
            Value::Bool(r.varint().map_err(e)? != 0)
        }
        Kind::Int32 => {
            expect(VARINT, "int32")?;
            Value::from(r.varint().map_err(e)? as i32)
        }
        Kind::Int64 => {
            expect(VARINT, "int64")?;
            Value::from(r.varint().map_err(e)? as i64)
        }
        Kind::Double => {
            expect(FIXED64, "double")?;
            let f = f64::from_bits(r.fixed64().map_err(e)?);
            Value::Number(
                Number::from_f64(f).ok_or_else(|| at(path, format!("{f} has no JSON form")))?,
            )
        }
        Kind::Bytes => {
            expect(LEN, "bytes")?;
            Value::String(base64::engine::general_purpose::STANDARD.encode(r.bytes().map_err(e)?))
        }
        Kind::StrList => {
            expect(LEN, "list")?;
            let mut items = Vec::new();
            let mut lr = Reader::new(r.bytes().map_err(e)?);
            while !lr.at_end() {
                match lr.tag().map_err(e)? {
                    (1, wt) => items.push(value(Kind::Str, &mut lr, wt, path, depth)?),
                    (num, wt) => lr.skip(num, wt).map_err(e)?,
                }
            }
            Value::Array(items)
        }
        Kind::Msg(inner) => {
            expect(LEN, "message")?;
            Value::Object(message(inner, r.bytes().map_err(e)?, path, depth + 1)?)
        }
        special => {
            expect(LEN, "message")?;
            special_value(special, r.bytes().map_err(e)?, path, depth)?
        }
    })
}

/// Go converts bytes to string unchecked and encoding/json replaces invalid
/// UTF-8 with U+FFFD.
fn string(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The scalar fields 1..=3 of a small special message.
#[derive(Default)]
struct Small<'a> {
    ints: [Option<u64>; 4],
    bytes: [Option<&'a [u8]>; 4],
}

fn small<'a>(data: &'a [u8], path: &str) -> Result<Small<'a>, Error> {
    let mut out = Small::default();
    let mut r = Reader::new(data);
    while !r.at_end() {
        let (num, wt) = r.tag().map_err(|e| at(path, e))?;
        match (num, wt) {
            (1..=3, VARINT) => out.ints[num as usize] = Some(r.varint().map_err(|e| at(path, e))?),
            (1..=3, LEN) => out.bytes[num as usize] = Some(r.bytes().map_err(|e| at(path, e))?),
            (1..=3, _) => return Err(at(path, format!("wrong wire type {wt} for field {num}"))),
            _ => r.skip(num, wt).map_err(|e| at(path, e))?,
        }
    }
    Ok(out)
}

fn special_value(kind: Kind, data: &[u8], path: &str, depth: usize) -> Result<Value, Error> {
    Ok(match kind {
        Kind::Time | Kind::MicroTime => {
            // Go's metav1.Time marshals the zero time as an empty message.
            if data.is_empty() {
                return Ok(Value::Null);
            }
            let m = small(data, path)?;
            let seconds = m.ints[1].unwrap_or(0) as i64;
            let nanos = m.ints[2].unwrap_or(0) as i32;
            format::timestamp(seconds, i64::from(nanos), matches!(kind, Kind::MicroTime))
                .map_or(Value::Null, Value::String)
        }
        Kind::Duration => Value::String(kapi_apimachinery::goduration::format_nanos(
            small(data, path)?.ints[1].unwrap_or(0) as i64,
        )),
        Kind::IntOrString => {
            let m = small(data, path)?;
            match m.ints[1].unwrap_or(0) as i64 {
                0 => Value::from(m.ints[2].unwrap_or(0) as i32),
                1 => Value::String(m.bytes[3].map(string).unwrap_or_default()),
                t => return Err(at(path, format!("impossible IntOrString type {t}"))),
            }
        }
        // Go's Unmarshal parses the text (refusing what is not a quantity) and shows it
        // canonical; an absent text is the zero quantity.
        Kind::Quantity => match small(data, path)?.bytes[1] {
            Some(s) => {
                let text = std::str::from_utf8(s).map_err(|e| at(path, e))?;
                let q = kapi_apimachinery::quantity::Quantity::parse(text);
                Value::String(q.map_err(|e| at(path, e))?.canonical())
            }
            None => Value::String("0".into()),
        },
        Kind::FieldsV1 => match small(data, path)?.bytes[1] {
            Some(raw) => serde_json::from_slice(raw)
                .map_err(|e| at(path, format!("fieldsV1 is not JSON: {e}")))?,
            None => Value::Null,
        },
        Kind::RawExtension => match small(data, path)?.bytes[1] {
            Some([]) => Value::Null,
            Some(raw) if raw.starts_with(crate::MAGIC) => {
                crate::decode_nested(raw, path, depth + 1)?
            }
            Some(raw) => serde_json::from_slice(raw)
                .map_err(|e| at(path, format!("embedded object is not JSON: {e}")))?,
            None => Value::Null,
        },
        Kind::SchemaOrBool(schema)
        | Kind::SchemaOrArray(schema)
        | Kind::SchemaOrStrings(schema) => schema_union(kind, schema, data, path, depth)?,
        Kind::Str
        | Kind::Bool
        | Kind::Int32
        | Kind::Int64
        | Kind::Double
        | Kind::Bytes
        | Kind::StrList
        | Kind::Msg(_) => {
            unreachable!("not a special kind")
        }
    })
}

/// An apiextensions schema union as Go's JSON shows it (apiextensions v1 marshal.go): the
/// schema when set (for lists, only when the list is empty), else the bool, the list, or
/// `null`.
fn schema_union(
    kind: Kind,
    schema: &'static Message,
    data: &[u8],
    path: &str,
    depth: usize,
) -> Result<Value, Error> {
    if depth > MAX_DEPTH {
        return Err(at(path, "messages nested too deep"));
    }
    let or_bool = matches!(kind, Kind::SchemaOrBool(_));
    let schema_num = if or_bool { 2 } else { 1 };
    let (mut allows, mut chunks, mut items) = (false, Vec::new(), Vec::new());
    let mut r = Reader::new(data);
    while !r.at_end() {
        let (num, wt) = r.tag().map_err(|e| at(path, e))?;
        match (num, wt) {
            (n, LEN) if n == schema_num => chunks.push(r.bytes().map_err(|e| at(path, e))?),
            (1, VARINT) if or_bool => allows = r.varint().map_err(|e| at(path, e))? != 0,
            (2, LEN) if !or_bool => {
                let bytes = r.bytes().map_err(|e| at(path, e))?;
                items.push(match kind {
                    Kind::SchemaOrArray(_) => {
                        Value::Object(message(schema, bytes, path, depth + 1)?)
                    }
                    _ => Value::String(string(bytes)),
                });
            }
            (1 | 2, _) => return Err(wire_error(path, wt, "schema union")),
            _ => r.skip(num, wt).map_err(|e| at(path, e))?,
        }
    }
    let single = match chunks.as_slice() {
        [] => None,
        chunks => Some(Value::Object(message(
            schema,
            &chunks.concat(),
            path,
            depth + 1,
        )?)),
    };
    Ok(match (or_bool, single) {
        (true, Some(schema)) => schema,
        (true, None) => Value::Bool(allows),
        (false, _) if !items.is_empty() => Value::Array(items),
        (false, single) => single.unwrap_or(Value::Null),
    })
}

/// The JSON of a Go zero value of `kind` (a field shown without being set).
fn zero(kind: Kind) -> Value {
    match kind {
        Kind::Str => Value::String(String::new()),
        Kind::Bool => Value::Bool(false),
        Kind::Int32 | Kind::Int64 | Kind::IntOrString => Value::from(0),
        Kind::Double => Value::from(0.0),
        Kind::Duration => Value::String("0s".into()),
        Kind::Quantity => Value::String("0".into()),
        Kind::Msg(m) => Value::Object(zero_object(m)),
        Kind::Bytes
        | Kind::StrList
        | Kind::Time
        | Kind::MicroTime
        | Kind::FieldsV1
        | Kind::RawExtension
        | Kind::SchemaOrArray(_)
        | Kind::SchemaOrStrings(_) => Value::Null,
        Kind::SchemaOrBool(_) => Value::Bool(false),
    }
}

fn zero_object(msg: &'static Message) -> Map<String, Value> {
    let mut out = Map::new();
    for field in msg.fields {
        emit(&mut out, field, None);
    }
    out
}

/// Whether Go's `omitempty` drops this value.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

/// Puts `field` with its decoded `value` (or `None` when unset) into `out`
/// the way Go's encoding/json shows it.
fn emit(out: &mut Map<String, Value>, field: &'static Field, value: Option<Value>) {
    let listy = field.shape != Shape::One || matches!(field.kind, Kind::Bytes | Kind::StrList);
    let shown = match (field.emit, value) {
        (Emit::Inline, v) => {
            let fields = match v {
                Some(Value::Object(map)) => map,
                _ => match field.kind {
                    Kind::Msg(m) => zero_object(m),
                    _ => Map::new(),
                },
            };
            out.extend(fields);
            return;
        }
        (Emit::Ptr, v) => v,
        (Emit::PtrNull, v) => Some(v.unwrap_or(Value::Null)),
        (Emit::OmitEmpty, v) => v.filter(|v| match v {
            Value::Object(map) if listy => !map.is_empty(),
            v => !is_empty(v),
        }),
        (Emit::OmitZero, v) => v.filter(|v| !v.is_null() && *v != zero(field.kind)),
        (Emit::Always, Some(v)) => Some(v),
        (Emit::Always, None) if listy => Some(Value::Null),
        (Emit::Always, None) => Some(zero(field.kind)),
    };
    if let Some(v) = shown {
        out.insert(field.json.to_string(), v);
    }
}

#[cfg(test)]
mod tests {
    //! The kinds and emit rules the generated table does not use yet, on a
    //! test-only schema.

    use serde_json::json;

    use super::*;
    use crate::schema::{Emit::*, Kind::*, Shape::*, f};

    static INNER: Message = Message {
        name: "test.Inner",
        fields: &[
            f(1, "name", One, Str, Always),
            f(2, "n", One, Int32, OmitEmpty),
        ],
    };

    static TEST: Message = Message {
        name: "test.Test",
        fields: &[
            f(1, "port", One, IntOrString, Always),
            f(2, "portPtr", One, IntOrString, Ptr),
            f(3, "qty", One, Quantity, Always),
            f(4, "limits", Map, Quantity, OmitEmpty),
            f(5, "timeout", One, Duration, Ptr),
            f(6, "object", One, RawExtension, Always),
            f(7, "verbs", One, StrList, OmitEmpty),
            f(8, "selector", One, Msg(&INNER), PtrNull),
            f(9, "ratio", One, Double, Ptr),
            f(10, "nums", Rep, Int32, OmitEmpty),
            f(11, "inner", One, Msg(&INNER), Inline),
            f(12, "byName", Map, Msg(&INNER), OmitEmpty),
            f(13, "stamp", One, Time, OmitZero),
            f(14, "flags", Rep, Bool, Always),
            f(15, "extra", Map, StrList, OmitEmpty),
        ],
    };

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    fn vfield(num: u32, v: u64) -> Vec<u8> {
        [varint(u64::from(num) << 3), varint(v)].concat()
    }

    fn lfield(num: u32, data: &[u8]) -> Vec<u8> {
        [
            varint(u64::from(num) << 3 | 2),
            varint(data.len() as u64),
            data.to_vec(),
        ]
        .concat()
    }

    fn sfield(num: u32, s: &str) -> Vec<u8> {
        lfield(num, s.as_bytes())
    }

    fn decode(data: &[u8]) -> Result<Value, Error> {
        message(&TEST, data, "", 0).map(Value::Object)
    }

    #[test]
    fn zero_values() {
        assert_eq!(
            decode(&[]).unwrap(),
            json!({"port": 0, "qty": "0", "object": null, "selector": null, "name": "", "flags": null})
        );
    }

    #[test]
    fn special_kinds() {
        let entry = |k: &str, v: &[u8]| lfield(4, &[sfield(1, k), lfield(2, v)].concat());
        let data = [
            lfield(1, &[vfield(1, 1), sfield(3, "http")].concat()),
            lfield(2, &[vfield(1, 0), vfield(2, 8080)].concat()),
            lfield(3, &sfield(1, "500m")),
            entry("cpu", &sfield(1, "1")),
            entry("memory", &sfield(1, "1Gi")),
            lfield(5, &vfield(1, 90_000_000_000)),
            lfield(6, &lfield(1, br#"{"a":[1,"x"]}"#)),
            lfield(7, &[sfield(1, "get"), sfield(1, "list")].concat()),
            lfield(8, &sfield(1, "sel")),
            [varint(9 << 3 | 1), 0.5f64.to_le_bytes().to_vec()].concat(),
            lfield(10, &[varint(1), varint(-2i64 as u64), varint(3)].concat()),
            vfield(10, 4),
            lfield(11, &[sfield(1, "in"), vfield(2, 5)].concat()),
            lfield(12, &sfield(1, "a")),
            lfield(13, &[]),
            vfield(14, 1),
            vfield(14, 0),
            lfield(
                15,
                &[
                    sfield(1, "groups"),
                    lfield(2, &[sfield(1, "a"), sfield(1, "b")].concat()),
                ]
                .concat(),
            ),
        ]
        .concat();
        assert_eq!(
            decode(&data).unwrap(),
            json!({
                "port": "http",
                "portPtr": 8080,
                "qty": "500m",
                "limits": {"cpu": "1", "memory": "1Gi"},
                "timeout": "1m30s",
                "object": {"a": [1, "x"]},
                "verbs": ["get", "list"],
                "selector": {"name": "sel"},
                "ratio": 0.5,
                "nums": [1, -2, 3, 4],
                "name": "in",
                "n": 5,
                "byName": {"a": {"name": ""}},
                "flags": [true, false],
                "extra": {"groups": ["a", "b"]},
            })
        );
    }

    #[test]
    fn omit_zero_keeps_a_set_time() {
        let data = lfield(13, &[vfield(1, 1_704_164_645), vfield(2, 7)].concat());
        assert_eq!(
            decode(&data).unwrap()["stamp"],
            json!("2024-01-02T03:04:05Z")
        );
    }

    #[test]
    fn raw_extension_holding_a_protobuf_object() {
        let meta = sfield(1, "cm");
        let cm = [
            lfield(1, &meta),
            lfield(2, &[sfield(1, "k"), sfield(2, "v")].concat()),
        ]
        .concat();
        let type_meta = [sfield(1, "v1"), sfield(2, "ConfigMap")].concat();
        let body = [crate::MAGIC.to_vec(), lfield(1, &type_meta), lfield(2, &cm)].concat();
        let got = decode(&lfield(6, &lfield(1, &body))).unwrap();
        assert_eq!(
            got["object"],
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn bad_special_values() {
        let err = decode(&lfield(1, &vfield(1, 2))).unwrap_err();
        assert!(err.contains("port") && err.contains("IntOrString"), "{err}");
        let err = decode(&lfield(6, &lfield(1, b"\x01\x02"))).unwrap_err();
        assert!(err.starts_with("object:"), "{err}");
        let nan = [varint(9 << 3 | 1), f64::NAN.to_le_bytes().to_vec()].concat();
        assert!(decode(&nan).unwrap_err().contains("ratio"));
    }

    #[test]
    fn nesting_is_bounded() {
        static DEEP: Message = Message {
            name: "test.Deep",
            fields: &[f(1, "next", One, Msg(&DEEP), Ptr)],
        };
        let mut data = Vec::new();
        for _ in 0..(MAX_DEPTH + 5) {
            data = lfield(1, &data);
        }
        let err = message(&DEEP, &data, "", 0).unwrap_err();
        assert!(
            err.contains("nested too deep"),
            "{}",
            &err[err.len() - 40..]
        );
        let mut ok = Vec::new();
        for _ in 0..10 {
            ok = lfield(1, &ok);
        }
        assert!(message(&DEEP, &ok, "", 0).is_ok());
    }
}
