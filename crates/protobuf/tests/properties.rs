//! Property-based tests of the protobuf request body decoder.
//!
//! A protobuf body is client input decoded before anything else looks at it, so hostile
//! bytes must never panic the server. Properties:
//! - arbitrary bytes, and arbitrary bytes behind the `k8s\0` magic, never panic;
//! - messages generated from the schema table itself, for every kind it supports (unknown
//!   fields, packed lists, repeated messages, maps, times, embedded objects and invalid
//!   UTF-8 included), always decode, to an object naming the envelope's kind and version;
//! - the same messages with wrong wire types, bad values, overwritten bytes and
//!   truncation never panic, and what decodes names the envelope's kind and version;
//! - objects encoded by the generated Kubernetes messages of the k8s-pb crate (ConfigMap,
//!   Secret, Lease) decode to exactly the JSON encoding/json writes for them: fields left
//!   out or kept by Go's `omitempty` and pointer rules, bytes as base64.
//!
//! - encoding (JSON to protobuf, for responses) is the decoder's inverse: a generated message
//!   decoded, encoded and decoded again gives the same object, for every kind;
//! - what kapi encodes is read by the generated Kubernetes messages of k8s-pb (upstream's
//!   field numbers and wire types) without losing a field: k8s-pb decodes it, encodes it
//!   again, and that decodes to the same object.
//!
//! Generated messages come from a "tape" of random numbers that a deterministic encoder
//! consumes while it walks the schema, so proptest shrinks a failure to a short tape.
//!
//! Each property runs proptest's default of 256 cases (a few seconds in CI). For a long
//! run: `PROPTEST_CASES=100000 cargo test -p kapi-protobuf --test properties`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kapi_protobuf::schema::{KINDS, Kind, Message, Shape};
use kapi_protobuf::{MAGIC, decode, decode_object, encode, encode_json_into};
use proptest::prelude::*;
use prost::Message as _;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// A schema-driven encoder of random messages
// ---------------------------------------------------------------------------------------

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// How deep generated messages nest (the decoder refuses more than 100 levels).
const MAX_GEN_DEPTH: usize = 5;

/// The random choices the encoder makes, in order; zeros once used up, which ends every
/// loop, so any tape gives a finite message.
struct Tape<'a> {
    choices: &'a [u32],
    pos: usize,
}

impl Tape<'_> {
    fn next(&mut self) -> u32 {
        let c = self.choices.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        c
    }

    /// A choice below `n` (non-zero).
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }

    /// A 64-bit value: small ones often, extremes sometimes.
    fn wide(&mut self) -> u64 {
        match self.below(4) {
            0 => u64::from(self.below(300)),
            1 => (u64::from(self.next()) << 32) | u64::from(self.next()),
            2 => (-i64::from(self.below(300))) as u64,
            _ => [
                0,
                u64::MAX,
                i64::MAX as u64,
                i64::MIN as u64,
                253_402_300_800,
            ][self.below(5) as usize],
        }
    }

    /// Up to 8 bytes, sometimes invalid UTF-8.
    fn bytes(&mut self) -> Vec<u8> {
        let n = self.below(9);
        (0..n)
            .map(|_| match self.below(4) {
                0 => 0xff,
                1 => 0xc3,
                _ => b"aZ-./:0 "[self.below(8) as usize],
            })
            .collect()
    }
}

/// The generator's mode: only well-formed encodings, or hostile ones too.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Valid,
    Hostile,
}

struct Encoder<'a, 't> {
    tape: &'a mut Tape<'t>,
    mode: Mode,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, num: u32, wire_type: u8) {
    put_varint(out, (u64::from(num) << 3) | u64::from(wire_type));
}

fn put_len(out: &mut Vec<u8>, num: u32, payload: &[u8]) {
    put_tag(out, num, LEN);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// JSON texts for `FieldsV1` and `RawExtension`: valid ones first, then broken ones.
const JSON_SAMPLES: &[&str] = &[
    "{}",
    "{\"f:metadata\":{\"f:name\":{}}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}",
    "[1,2]",
    "null",
    "\"x\"",
    "{",
    "",
    "{\"a\":1}}",
    "\u{ff}",
];
const VALID_JSON_SAMPLES: u32 = 6;

impl Encoder<'_, '_> {
    fn hostile(&mut self, one_in: u32) -> bool {
        self.mode == Mode::Hostile && self.tape.below(one_in) == 0
    }

    /// A valid quantity, in any of its notations, canonical or not.
    fn quantity(&mut self) -> String {
        const SUFFIXES: [&str; 10] = ["", "m", "k", "Ki", "Mi", "Gi", "e3", "E-2", "n", "u"];
        let sign = ["", "-", "+"][self.tape.below(3) as usize];
        let number = self.tape.below(100_000);
        let fraction = match self.tape.below(3) {
            0 => format!(".{}", self.tape.below(1000)),
            _ => String::new(),
        };
        let suffix = SUFFIXES[self.tape.below(SUFFIXES.len() as u32) as usize];
        format!("{sign}{number}{fraction}{suffix}")
    }

    /// A message of `msg`: a few fields chosen from its table, and unknown fields.
    fn message(&mut self, msg: &'static Message, depth: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..self.tape.below(6) {
            let c = self.tape.next();
            if msg.fields.is_empty() || c.is_multiple_of(8) {
                self.unknown_field(&mut out);
                continue;
            }
            let field = &msg.fields[(c / 8) as usize % msg.fields.len()];
            if self.hostile(12) {
                put_tag(&mut out, field.num, self.tape.below(8) as u8);
                out.extend(self.tape.bytes());
                continue;
            }
            match field.shape {
                Shape::Map => {
                    let mut entry = Vec::new();
                    if self.tape.below(4) != 0 {
                        put_len(&mut entry, 1, &self.tape.bytes());
                    }
                    if self.tape.below(4) != 0 {
                        self.value(&mut entry, 2, field.kind, depth);
                    }
                    put_len(&mut out, field.num, &entry);
                }
                Shape::Rep if self.tape.below(3) == 0 => {
                    self.packed(&mut out, field.num, field.kind)
                }
                Shape::Rep | Shape::One => self.value(&mut out, field.num, field.kind, depth),
            }
        }
        out
    }

    /// A field the table does not know, of any wire type (groups included).
    fn unknown_field(&mut self, out: &mut Vec<u8>) {
        let num = 900 + self.tape.below(20);
        match self.tape.below(5) {
            0 => {
                put_tag(out, num, VARINT);
                put_varint(out, self.tape.wide());
            }
            1 => {
                put_tag(out, num, FIXED64);
                out.extend(self.tape.wide().to_le_bytes());
            }
            2 => put_len(out, num, &self.tape.bytes()),
            3 => {
                put_tag(out, num, FIXED32);
                out.extend(self.tape.next().to_le_bytes());
            }
            _ => {
                put_tag(out, num, 3);
                put_tag(out, 1, VARINT);
                put_varint(out, self.tape.wide());
                put_tag(out, num, 4);
            }
        }
    }

    /// A packed repeated field of numbers (an empty one for other kinds).
    fn packed(&mut self, out: &mut Vec<u8>, num: u32, kind: Kind) {
        let mut payload = Vec::new();
        for _ in 0..self.tape.below(4) {
            match kind {
                Kind::Double => payload.extend(self.double().to_le_bytes()),
                Kind::Bool | Kind::Int32 | Kind::Int64 => {
                    put_varint(&mut payload, self.tape.wide())
                }
                _ => {}
            }
        }
        if matches!(kind, Kind::Double | Kind::Bool | Kind::Int32 | Kind::Int64) {
            put_len(out, num, &payload);
        } else {
            self.value(out, num, kind, MAX_GEN_DEPTH);
        }
    }

    /// The bits of a double: finite unless hostile.
    fn double(&mut self) -> u64 {
        if self.hostile(4) {
            [f64::NAN, f64::INFINITY][self.tape.below(2) as usize].to_bits()
        } else {
            (f64::from(self.tape.next()) / 7.0 - 1e6).to_bits()
        }
    }

    fn json_sample(&mut self) -> &'static [u8] {
        let n = if self.mode == Mode::Valid {
            VALID_JSON_SAMPLES
        } else {
            JSON_SAMPLES.len() as u32
        };
        JSON_SAMPLES[self.tape.below(n) as usize].as_bytes()
    }

    /// One value of `kind` as field `num`.
    fn value(&mut self, out: &mut Vec<u8>, num: u32, kind: Kind, depth: usize) {
        match kind {
            Kind::Str | Kind::Bytes => put_len(out, num, &self.tape.bytes()),
            Kind::Bool | Kind::Int32 | Kind::Int64 => {
                put_tag(out, num, VARINT);
                put_varint(out, self.tape.wide());
            }
            Kind::Double => {
                put_tag(out, num, FIXED64);
                out.extend(self.double().to_le_bytes());
            }
            Kind::StrList => {
                let mut list = Vec::new();
                for _ in 0..self.tape.below(3) {
                    put_len(&mut list, 1, &self.tape.bytes());
                }
                put_len(out, num, &list);
            }
            Kind::Msg(inner) if depth < MAX_GEN_DEPTH => {
                let payload = self.message(inner, depth + 1);
                put_len(out, num, &payload);
            }
            Kind::Msg(_) => put_len(out, num, &[]),
            Kind::Time | Kind::MicroTime => self.small(out, num, &[1, 2]),
            Kind::Duration => self.small(out, num, &[1]),
            Kind::IntOrString => self.int_or_string(out, num),
            Kind::Quantity => {
                let mut q = Vec::new();
                let text = match self.hostile(4) {
                    true => self.tape.bytes(),
                    false => self.quantity().into_bytes(),
                };
                put_len(&mut q, 1, &text);
                put_len(out, num, &q);
            }
            Kind::FieldsV1 => {
                let mut f = Vec::new();
                put_len(&mut f, 1, self.json_sample());
                put_len(out, num, &f);
            }
            Kind::RawExtension => self.raw_extension(out, num, depth),
            Kind::SchemaOrBool(schema)
            | Kind::SchemaOrArray(schema)
            | Kind::SchemaOrStrings(schema) => self.schema_union(out, num, kind, schema, depth),
        }
    }

    /// An apiextensions schema union: its bool, one schema and the list, each maybe.
    fn schema_union(
        &mut self,
        out: &mut Vec<u8>,
        num: u32,
        kind: Kind,
        schema: &'static Message,
        depth: usize,
    ) {
        let mut m = Vec::new();
        let or_bool = matches!(kind, Kind::SchemaOrBool(_));
        if or_bool && self.tape.below(2) == 0 {
            put_tag(&mut m, 1, VARINT);
            put_varint(&mut m, u64::from(self.tape.below(2)));
        }
        if depth < MAX_GEN_DEPTH && self.tape.below(2) == 0 {
            let payload = self.message(schema, depth + 1);
            put_len(&mut m, if or_bool { 2 } else { 1 }, &payload);
        }
        if !or_bool {
            for _ in 0..self.tape.below(3) {
                match kind {
                    Kind::SchemaOrArray(_) if depth < MAX_GEN_DEPTH => {
                        let payload = self.message(schema, depth + 1);
                        put_len(&mut m, 2, &payload);
                    }
                    Kind::SchemaOrArray(_) => put_len(&mut m, 2, &[]),
                    _ => put_len(&mut m, 2, &self.tape.bytes()),
                }
            }
        }
        put_len(out, num, &m);
    }

    /// A small message of varint fields (Time, MicroTime, Duration).
    fn small(&mut self, out: &mut Vec<u8>, num: u32, fields: &[u32]) {
        let mut m = Vec::new();
        for &f in fields {
            if self.tape.below(4) != 0 {
                put_tag(&mut m, f, VARINT);
                put_varint(&mut m, self.tape.wide());
            }
        }
        put_len(out, num, &m);
    }

    fn int_or_string(&mut self, out: &mut Vec<u8>, num: u32) {
        let mut m = Vec::new();
        let kind = if self.hostile(4) {
            self.tape.wide()
        } else {
            u64::from(self.tape.below(2))
        };
        put_tag(&mut m, 1, VARINT);
        put_varint(&mut m, kind);
        put_tag(&mut m, 2, VARINT);
        put_varint(&mut m, self.tape.wide());
        put_len(&mut m, 3, &self.tape.bytes());
        put_len(out, num, &m);
    }

    /// A `RawExtension`: JSON, or a whole protobuf body of some kind.
    fn raw_extension(&mut self, out: &mut Vec<u8>, num: u32, depth: usize) {
        let raw = if depth < MAX_GEN_DEPTH && self.tape.below(2) == 0 {
            let index = self.tape.below(KINDS.len() as u32) as usize;
            let payload = self.message(KINDS[index].message, depth + 1);
            body(api_version(index), KINDS[index].kind, &payload)
        } else {
            self.json_sample().to_vec()
        };
        let mut m = Vec::new();
        put_len(&mut m, 1, &raw);
        put_len(out, num, &m);
    }
}

/// The apiVersion to send kind `index` under (any, for the meta/v1 kinds that take any).
fn api_version(index: usize) -> &'static str {
    KINDS[index].api_version.unwrap_or("v1")
}

/// A protobuf body: the magic, then `runtime.Unknown` holding `raw`.
fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw.to_vec()),
        content_encoding: None,
        content_type: None,
    };
    [MAGIC, &unknown.encode_to_vec()].concat()
}

/// A kind of the table, and a body of it generated from `tape` in `mode`.
fn generated(index: usize, tape: &[u32], mode: Mode) -> Vec<u8> {
    let mut tape = Tape {
        choices: tape,
        pos: 0,
    };
    let mut encoder = Encoder {
        tape: &mut tape,
        mode,
    };
    let raw = encoder.message(KINDS[index].message, 0);
    body(api_version(index), KINDS[index].kind, &raw)
}

fn kind_index() -> impl Strategy<Value = usize> {
    0..KINDS.len()
}

fn tape() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<u32>(), 0..400)
}

/// Whether `decoded` is an object of the kind at `index`.
fn names_kind(decoded: &Value, index: usize) -> bool {
    decoded["kind"] == KINDS[index].kind && decoded["apiVersion"] == api_version(index)
}

proptest! {
    /// Arbitrary bytes, bare or behind the magic, never panic; without the magic they are
    /// "not protobuf".
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if !bytes.starts_with(MAGIC) {
            prop_assert_eq!(decode(&bytes), Err(kapi_protobuf::DecodeError::NotProtobuf));
        }
        let _ = decode(&[MAGIC, &bytes].concat());
    }

    /// Every well-formed message of every kind in the table decodes, to an object naming
    /// the envelope's kind and apiVersion.
    #[test]
    fn well_formed_messages_decode(index in kind_index(), tape in tape()) {
        let body = generated(index, &tape, Mode::Valid);
        let decoded = decode(&body);
        let kind = KINDS[index].kind;
        prop_assert!(decoded.is_ok(), "{} {}: {:?}", api_version(index), kind, decoded);
        prop_assert!(names_kind(&decoded.unwrap(), index));
    }

    /// Hostile messages (wrong wire types, NaN, impossible IntOrString types, broken JSON),
    /// with bytes overwritten and the body cut short, never panic; a success still names the
    /// envelope's kind and apiVersion, and a failure is a 400 or 415.
    #[test]
    fn hostile_messages_never_panic(
        index in kind_index(),
        tape in tape(),
        writes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut body = generated(index, &tape, Mode::Hostile);
        for (at, byte) in writes {
            let at = MAGIC.len() + at.index(body.len() - MAGIC.len());
            body[at] = byte;
        }
        if let Some(cut) = cut {
            body.truncate(cut.index(body.len() + 1));
        }
        match decode(&body) {
            Ok(decoded) => prop_assert!(decoded.is_object()),
            Err(err) => prop_assert!(matches!(err.status_code(), 400 | 415)),
        }
    }
}

proptest! {
    /// Decoding, encoding and decoding again gives the same object, for every kind.
    #[test]
    fn encoding_inverts_decoding(index in kind_index(), tape in tape()) {
        let decoded = decode(&generated(index, &tape, Mode::Valid)).unwrap();
        let kind = KINDS[index].kind;
        let encoded = encode(api_version(index), kind, &decoded);
        prop_assert!(encoded.is_ok(), "{} {}: {:?}", api_version(index), kind, encoded);
        prop_assert_eq!(without_nulls(decode(&encoded.unwrap()).unwrap()), without_nulls(decoded));
    }

    /// Encoding from JSON text (the response path) means what encoding the parsed value
    /// means, for every kind; k8s-pb's messages read it without losing a field.
    #[test]
    fn encoding_json_text_matches_encoding_values(index in kind_index(), tape in tape()) {
        let decoded = decode(&generated(index, &tape, Mode::Valid)).unwrap();
        let kind = KINDS[index].kind;
        let text = serde_json::to_vec(&decoded).unwrap();
        let mut encoded = Vec::new();
        let result = encode_json_into(&mut encoded, api_version(index), kind, &text);
        prop_assert!(result.is_ok(), "{} {}: {:?}", api_version(index), kind, result);
        prop_assert_eq!(without_nulls(decode(&encoded).unwrap()), without_nulls(decoded.clone()));
        let unknown = Unknown::decode(&encoded[MAGIC.len()..]).unwrap();
        let name = KINDS[index].message.name;
        let again = kapi_testing::k8s_pb::reencode(name, &unknown.raw.unwrap_or_default());
        let again = again.map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        let redecoded = decode_object(api_version(index), kind, &again).unwrap();
        prop_assert_eq!(without_nulls(redecoded), without_nulls(decoded));
    }

    /// A `null` element of a list is the element type's zero value, from JSON text as from
    /// a parsed value (Go's JSON decoding makes it so): the list keeps its length.
    #[test]
    fn null_list_elements_are_zero_values(index in kind_index(), tape in tape()) {
        let mut decoded = decode(&generated(index, &tape, Mode::Valid)).unwrap();
        with_null_elements(&mut decoded);
        let kind = KINDS[index].kind;
        let from_value = encode(api_version(index), kind, &decoded);
        prop_assert!(from_value.is_ok(), "{} {}: {:?}", api_version(index), kind, from_value);
        let mut from_text = Vec::new();
        let text = serde_json::to_vec(&decoded).unwrap();
        let result = encode_json_into(&mut from_text, api_version(index), kind, &text);
        prop_assert!(result.is_ok(), "{} {}: {:?}", api_version(index), kind, result);
        prop_assert_eq!(
            without_nulls(decode(&from_text).unwrap()),
            without_nulls(decode(&from_value.unwrap()).unwrap())
        );
    }

    /// k8s-pb's messages read kapi's encoding of every kind without losing a field.
    #[test]
    fn k8s_pb_reads_what_kapi_encodes(index in kind_index(), tape in tape()) {
        let decoded = decode(&generated(index, &tape, Mode::Valid)).unwrap();
        let encoded = encode(api_version(index), KINDS[index].kind, &decoded).unwrap();
        let unknown = Unknown::decode(&encoded[MAGIC.len()..]).unwrap();
        let type_meta = unknown.type_meta.unwrap_or_default();
        prop_assert_eq!(type_meta.kind.as_deref(), Some(KINDS[index].kind));
        let again = kapi_testing::k8s_pb::reencode(KINDS[index].message.name, &unknown.raw.unwrap_or_default());
        let again = again.map_err(|e| TestCaseError::fail(format!("{}: {e}", KINDS[index].message.name)))?;
        let redecoded = decode_object(api_version(index), KINDS[index].kind, &again).unwrap();
        prop_assert_eq!(without_nulls(redecoded), without_nulls(decoded));
    }
}

/// `value` with a `null` first in each of its non-empty lists.
fn with_null_elements(value: &mut Value) {
    match value {
        Value::Object(map) => map.values_mut().for_each(with_null_elements),
        Value::Array(items) if !items.is_empty() => {
            items.iter_mut().for_each(with_null_elements);
            items.insert(0, Value::Null);
        }
        _ => {}
    }
}

/// `value` without the `null` and `[]` members of its objects: a pointer to a zero time
/// shows as `null`, which JSON (Go's or kapi's) reads back as an unset pointer, shown by
/// leaving it out; an empty list message in a map entry is the entry's default value, which
/// protobuf encoders (prost's) may leave out, and Go then shows `null`.
fn without_nulls(value: Value) -> Value {
    let empty = |v: &Value| v.is_null() || v.as_array().is_some_and(Vec::is_empty);
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !empty(v))
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// Without the writes and the cut, hostile generation with a tape of zeros is still well
/// formed: the hostile paths are taken only when the tape says so.
#[test]
fn empty_tape_gives_empty_messages() {
    for index in 0..KINDS.len() {
        let decoded = decode(&generated(index, &[], Mode::Hostile)).unwrap();
        assert!(names_kind(&decoded, index), "{decoded}");
    }
}

// ---------------------------------------------------------------------------------------
// Round trips through the generated Kubernetes messages
// ---------------------------------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9.-]{0,12}", "\\PC{0,6}"]
}

fn string_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(text(), text(), 0..4)
}

fn bytes_map() -> impl Strategy<Value = BTreeMap<String, Vec<u8>>> {
    prop::collection::btree_map(text(), prop::collection::vec(any::<u8>(), 0..12), 0..4)
}

/// ObjectMeta with the fields clients set on create.
fn object_meta() -> impl Strategy<Value = meta::ObjectMeta> {
    (
        (text(), text(), text(), text(), text()),
        prop_oneof![Just(0i64), any::<i64>()],
        string_map(),
        string_map(),
        prop::collection::vec(text(), 0..3),
    )
        .prop_map(
            |(
                (name, generate_name, namespace, uid, rv),
                generation,
                labels,
                annotations,
                finalizers,
            )| {
                meta::ObjectMeta {
                    name: Some(name),
                    generate_name: Some(generate_name),
                    namespace: Some(namespace),
                    uid: Some(uid),
                    resource_version: Some(rv),
                    generation: Some(generation),
                    labels,
                    annotations,
                    finalizers,
                    ..Default::default()
                }
            },
        )
}

/// Inserts `key: value` when `keep` (Go's omitempty, decided by the caller).
fn put(out: &mut Map<String, Value>, key: &str, value: impl Into<Value>, keep: bool) {
    if keep {
        out.insert(key.into(), value.into());
    }
}

fn map_json<V: Clone + Into<Value>>(m: &BTreeMap<String, V>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect(),
    )
}

/// The JSON encoding/json writes for the ObjectMeta: empty strings, zero numbers and empty
/// maps and lists left out.
fn object_meta_json(m: &meta::ObjectMeta) -> Value {
    let mut out = Map::new();
    for (key, v) in [
        ("name", &m.name),
        ("generateName", &m.generate_name),
        ("namespace", &m.namespace),
        ("uid", &m.uid),
        ("resourceVersion", &m.resource_version),
    ] {
        let v = v.clone().unwrap_or_default();
        put(&mut out, key, v.clone(), !v.is_empty());
    }
    let generation = m.generation.unwrap_or(0);
    put(&mut out, "generation", generation, generation != 0);
    put(
        &mut out,
        "labels",
        map_json(&m.labels),
        !m.labels.is_empty(),
    );
    put(
        &mut out,
        "annotations",
        map_json(&m.annotations),
        !m.annotations.is_empty(),
    );
    put(
        &mut out,
        "finalizers",
        m.finalizers.clone(),
        !m.finalizers.is_empty(),
    );
    Value::Object(out)
}

fn base64_map(m: &BTreeMap<String, Vec<u8>>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), STANDARD.encode(v).into()))
            .collect(),
    )
}

/// The object's JSON with `apiVersion`, `kind` and `metadata` in front of `fields`.
fn object(
    api_version: &str,
    kind: &str,
    m: &meta::ObjectMeta,
    fields: Map<String, Value>,
) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), api_version.into());
    out.insert("kind".into(), kind.into());
    out.insert("metadata".into(), object_meta_json(m));
    out.extend(fields);
    Value::Object(out)
}

proptest! {
    /// A ConfigMap decodes to its JSON: `data` and `binaryData` (base64) left out when
    /// empty, `immutable` (a pointer) shown whenever set.
    #[test]
    fn configmaps_round_trip(
        metadata in object_meta(),
        data in string_map(),
        binary_data in bytes_map(),
        immutable in prop::option::of(any::<bool>()),
    ) {
        let cm = core::ConfigMap {
            metadata: Some(metadata.clone()),
            data: data.clone(),
            binary_data: binary_data.clone(),
            immutable,
        };
        let mut fields = Map::new();
        put(&mut fields, "data", map_json(&data), !data.is_empty());
        put(&mut fields, "binaryData", base64_map(&binary_data), !binary_data.is_empty());
        put(&mut fields, "immutable", immutable, immutable.is_some());
        let want = object("v1", "ConfigMap", &metadata, fields);
        prop_assert_eq!(decode(&body("v1", "ConfigMap", &cm.encode_to_vec())), Ok(want));
    }

    /// A Secret decodes to its JSON: `data` as base64, `stringData` and `type` left out when
    /// empty.
    #[test]
    fn secrets_round_trip(
        metadata in object_meta(),
        data in bytes_map(),
        string_data in string_map(),
        secret_type in text(),
        immutable in prop::option::of(any::<bool>()),
    ) {
        let secret = core::Secret {
            metadata: Some(metadata.clone()),
            immutable,
            data: data.clone(),
            string_data: string_data.clone(),
            r#type: Some(secret_type.clone()),
        };
        let mut fields = Map::new();
        put(&mut fields, "immutable", immutable, immutable.is_some());
        put(&mut fields, "data", base64_map(&data), !data.is_empty());
        put(&mut fields, "stringData", map_json(&string_data), !string_data.is_empty());
        put(&mut fields, "type", secret_type.clone(), !secret_type.is_empty());
        let want = object("v1", "Secret", &metadata, fields);
        prop_assert_eq!(decode(&body("v1", "Secret", &secret.encode_to_vec())), Ok(want));
    }

    /// A Lease's spec (pointers only) shows exactly the fields that are set, zero values
    /// included; the spec itself (a struct) is always shown.
    #[test]
    fn leases_round_trip(
        metadata in object_meta(),
        holder in prop::option::of(text()),
        duration in prop::option::of(prop_oneof![Just(0), any::<i32>()]),
        transitions in prop::option::of(prop_oneof![Just(0), any::<i32>()]),
        strategy in prop::option::of(text()),
    ) {
        let lease = coordination::Lease {
            metadata: Some(metadata.clone()),
            spec: Some(coordination::LeaseSpec {
                holder_identity: holder.clone(),
                lease_duration_seconds: duration,
                lease_transitions: transitions,
                strategy: strategy.clone(),
                ..Default::default()
            }),
        };
        let mut spec = Map::new();
        put(&mut spec, "holderIdentity", holder.clone(), holder.is_some());
        put(&mut spec, "leaseDurationSeconds", duration, duration.is_some());
        put(&mut spec, "leaseTransitions", transitions, transitions.is_some());
        put(&mut spec, "strategy", strategy.clone(), strategy.is_some());
        let fields = Map::from_iter([("spec".to_string(), Value::Object(spec))]);
        let want = object("coordination.k8s.io/v1", "Lease", &metadata, fields);
        let got = decode(&body("coordination.k8s.io/v1", "Lease", &lease.encode_to_vec()));
        prop_assert_eq!(got, Ok(want));
    }
}

/// The JSON helpers agree with a hand-written expectation (a check of the test's model).
#[test]
fn object_meta_model() {
    let m = meta::ObjectMeta {
        name: Some("n".into()),
        namespace: Some(String::new()),
        generation: Some(0),
        labels: [("a".to_string(), String::new())].into(),
        ..Default::default()
    };
    assert_eq!(
        object_meta_json(&m),
        json!({"name": "n", "labels": {"a": ""}})
    );
}
