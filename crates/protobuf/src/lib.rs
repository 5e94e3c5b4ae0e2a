//! Decoding of Kubernetes protobuf request bodies
//! (`Content-Type: application/vnd.kubernetes.protobuf`) into the JSON object
//! kube-apiserver would have decoded from them.
//!
//! A body is the 4-byte magic `k8s\0` followed by a `runtime.Unknown` message:
//! `typeMeta` (1: `{apiVersion = 1, kind = 2}`), `raw` (2: the object's own
//! message), `contentEncoding` (3) and `contentType` (4). [`decode`] reads the
//! envelope, looks the apiVersion/kind up in the [`schema`] table and decodes
//! `raw` with a small generic wire-format reader driven by that table.
//!
//! The JSON is what Go's `encoding/json` writes for the decoded Go object:
//! Kubernetes JSON field names, `apiVersion`/`kind` set, int64 as numbers,
//! `Time` as `2024-01-02T03:04:05Z`, `MicroTime` with 6 fractional digits,
//! `IntOrString` as a number or string, `Quantity` as its string, `[]byte` as
//! base64, maps as objects, `FieldsV1` and `RawExtension` as the JSON they hold,
//! and unset or zero fields left out or shown exactly as Go's `omitempty`
//! rules (and pointers, and non-omitempty fields) say.

mod decode;
mod encode;
mod format;
pub mod schema;
mod transcode;
mod wire;

use serde_json::{Map, Value};

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8] = b"k8s\0";

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body does not start with the `k8s\0` magic.
    #[error(
        "the body is not a Kubernetes protobuf message: it does not start with the \"k8s\\x00\" prefix"
    )]
    NotProtobuf,
    /// The envelope names a kind the table has no message for.
    #[error("no protobuf decoding for kind {kind:?} in apiVersion {api_version:?}")]
    UnknownKind { api_version: String, kind: String },
    /// The envelope says the object is compressed or in another format.
    #[error("unsupported protobuf envelope: {0}")]
    Unsupported(String),
    /// The bytes are not a valid encoding of the message.
    #[error("malformed protobuf body: {0}")]
    Malformed(String),
}

impl DecodeError {
    /// The HTTP status for the request: 415 for a kind or envelope encoding
    /// this decoder does not handle, 400 for a body that is not valid.
    pub fn status_code(&self) -> u16 {
        match self {
            DecodeError::UnknownKind { .. } | DecodeError::Unsupported(_) => 415,
            DecodeError::NotProtobuf | DecodeError::Malformed(_) => 400,
        }
    }
}

/// Why an object could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The table has no message for the kind.
    #[error("no protobuf encoding for kind {kind:?} in apiVersion {api_version:?}")]
    UnknownKind { api_version: String, kind: String },
    /// A value does not fit its field (a damaged object: admitted ones always fit).
    #[error("{kind} cannot be encoded as protobuf: {message}")]
    Invalid { kind: String, message: String },
}

fn message_for(api_version: &str, kind: &str) -> Result<&'static schema::Message, EncodeError> {
    schema::lookup(api_version, kind).ok_or_else(|| EncodeError::UnknownKind {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
    })
}

fn invalid(kind: &str) -> impl Fn(String) -> EncodeError + '_ {
    move |message| EncodeError::Invalid {
        kind: kind.to_string(),
        message,
    }
}

/// Encodes `object`, a JSON object of `apiVersion`/`kind`, as a Kubernetes protobuf body:
/// the magic and a `runtime.Unknown` holding the object's message, as kube-apiserver's
/// protobuf serializer writes it.
pub fn encode(api_version: &str, kind: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    encode_into(&mut out, api_version, kind, object)?;
    Ok(out)
}

/// [`encode`], appending to `out`.
pub fn encode_into(
    out: &mut Vec<u8>,
    api_version: &str,
    kind: &str,
    object: &Value,
) -> Result<(), EncodeError> {
    let msg = message_for(api_version, kind)?;
    let map = object
        .as_object()
        .ok_or_else(|| invalid(kind)("not an object".into()))?;
    let mut raw = encode::Rev::with_capacity(256);
    encode::message(&mut raw, msg, map, 0).map_err(invalid(kind))?;
    out.reserve(raw.len() + api_version.len() + kind.len() + 24);
    envelope_head(out, api_version, kind, raw.len());
    raw.finish_into(out);
    envelope_tail(out);
    Ok(())
}

/// [`encode_into`] from JSON text rather than a parsed value: faster (no tree is built), and
/// the message holds only the fields the JSON has (Go's zero values left out, which a reader
/// takes the same way).
pub fn encode_json_into(
    out: &mut Vec<u8>,
    api_version: &str,
    kind: &str,
    json: &[u8],
) -> Result<(), EncodeError> {
    let encoding = MessageEncoding::new(api_version, kind)?;
    let mut message = Vec::with_capacity(json.len());
    encoding.message_json(json, &mut message)?;
    encoding.body(&message, out);
    Ok(())
}

/// The encoding of one apiVersion/kind's objects from their JSON text, in two steps: the
/// object's own message ([`MessageEncoding::message_json`], the costly part), and the body
/// around it ([`MessageEncoding::body`]). A message may be kept and framed again: as a body
/// (a GET, a watch event's object) or as a list's item ([`ListEncoder::put_item`]).
pub struct MessageEncoding {
    api_version: String,
    kind: String,
    message: &'static schema::Message,
}

impl MessageEncoding {
    /// The encoding of `apiVersion`/`kind` objects.
    pub fn new(api_version: &str, kind: &str) -> Result<MessageEncoding, EncodeError> {
        Ok(MessageEncoding {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            message: message_for(api_version, kind)?,
        })
    }

    /// A nonzero number that tells this kind's message from every other's, the same as
    /// [`ListEncoder::encoding`] for lists of the kind: a key for remembering messages.
    pub fn id(&self) -> u32 {
        message_id(self.message)
    }

    /// Appends the message of the JSON object `json` (see [`encode_json_into`]).
    pub fn message_json(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        transcode::message(out, self.message, json).map_err(invalid(&self.kind))
    }

    /// Appends a body holding `message`: the magic and a `runtime.Unknown`.
    pub fn body(&self, message: &[u8], out: &mut Vec<u8>) {
        out.reserve(message.len() + self.api_version.len() + self.kind.len() + 24);
        envelope_head(out, &self.api_version, &self.kind, message.len());
        out.extend_from_slice(message);
        envelope_tail(out);
    }
}

/// A message's number for memos: its static's address (statics of one binary differ in
/// their low 32 bits), never zero.
fn message_id(message: &'static schema::Message) -> u32 {
    (std::ptr::from_ref(message) as usize as u32) | 1
}

/// The magic, the Unknown's typeMeta and the tag and length of its `raw` field.
fn envelope_head(out: &mut Vec<u8>, api_version: &str, kind: &str, raw_len: usize) {
    out.extend_from_slice(MAGIC);
    let type_meta_len = 2
        + wire::varint_len(api_version.len() as u64)
        + api_version.len()
        + wire::varint_len(kind.len() as u64)
        + kind.len();
    wire::put_len_tag(out, 1, type_meta_len);
    wire::put_len_tag(out, 1, api_version.len());
    out.extend_from_slice(api_version.as_bytes());
    wire::put_len_tag(out, 2, kind.len());
    out.extend_from_slice(kind.as_bytes());
    wire::put_len_tag(out, 2, raw_len);
}

/// The Unknown's empty contentEncoding and contentType, which Go writes.
fn envelope_tail(out: &mut Vec<u8>) {
    wire::put_len_tag(out, 3, 0);
    wire::put_len_tag(out, 4, 0);
}

/// Encodes a list body in pieces, so that its items can be encoded one at a time: the bytes
/// before the items ([`ListEncoder::envelope`], which needs their total length), each item
/// ([`ListEncoder::item`]), and the bytes after them.
pub struct ListEncoder {
    api_version: String,
    kind: String,
    list: &'static schema::Message,
    items: &'static schema::Field,
    item: &'static schema::Message,
}

impl ListEncoder {
    /// The encoder of `apiVersion`/`list_kind` lists, whose message has a repeated `items`.
    pub fn new(api_version: &str, list_kind: &str) -> Result<ListEncoder, EncodeError> {
        let list = message_for(api_version, list_kind)?;
        let items = list.fields.iter().find(|f| f.json == "items");
        let Some((items, schema::Kind::Msg(item))) = items.map(|f| (f, f.kind)) else {
            return Err(invalid(list_kind)("not a list".into()));
        };
        Ok(ListEncoder {
            api_version: api_version.to_string(),
            kind: list_kind.to_string(),
            list,
            items,
            item,
        })
    }

    /// A nonzero number that tells this encoder's item encoding from every other list
    /// encoder's (two encoders of the same list kind share it, and the [`MessageEncoding`]
    /// of the item kind): a key for remembering items and their messages.
    pub fn encoding(&self) -> u32 {
        message_id(self.item)
    }

    /// Appends the message of the item `json` (JSON text): what [`ListEncoder::put_item`]
    /// frames as one of the list's items.
    pub fn message_json(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        transcode::message(out, self.item, json).map_err(invalid(&self.kind))
    }

    /// The length of an item whose message is `message_len` bytes long.
    pub fn item_len(&self, message_len: usize) -> usize {
        wire::varint_len(u64::from(self.items.num) << 3 | u64::from(wire::LEN))
            + wire::varint_len(message_len as u64)
            + message_len
    }

    /// Appends `message` (an item's message) as one entry of the list's items.
    pub fn put_item(&self, message: &[u8], out: &mut Vec<u8>) {
        wire::put_len_tag(out, self.items.num, message.len());
        out.extend_from_slice(message);
    }

    /// Appends `item` (a JSON object) as one entry of the list's items.
    pub fn item(&self, item: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let map = item
            .as_object()
            .ok_or_else(|| invalid(&self.kind)("item is not an object".into()))?;
        let mut w = encode::Rev::with_capacity(512);
        encode::message(&mut w, self.item, map, 1).map_err(invalid(&self.kind))?;
        wire::put_len_tag(out, self.items.num, w.len());
        w.finish_into(out);
        Ok(())
    }

    /// The bytes before and after `items_len` bytes of items, for a list whose other fields
    /// (its ListMeta) are those of `list` (a JSON object; its `items` are not read).
    pub fn envelope(
        &self,
        list: &Value,
        items_len: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), EncodeError> {
        let map = list
            .as_object()
            .ok_or_else(|| invalid(&self.kind)("not an object".into()))?;
        let mut without_items = map.clone();
        without_items.remove("items");
        let part = |nums| -> Result<Vec<u8>, EncodeError> {
            let mut w = encode::Rev::default();
            encode::fields(&mut w, self.list, &without_items, 0, nums)
                .map_err(invalid(&self.kind))?;
            let mut out = Vec::with_capacity(w.len());
            w.finish_into(&mut out);
            Ok(out)
        };
        let before = part(0..=self.items.num - 1)?;
        let after = part(self.items.num + 1..=u32::MAX)?;
        let mut prefix = Vec::with_capacity(before.len() + 64);
        let raw_len = before.len() + items_len + after.len();
        envelope_head(&mut prefix, &self.api_version, &self.kind, raw_len);
        prefix.extend_from_slice(&before);
        let mut suffix = after;
        envelope_tail(&mut suffix);
        Ok((prefix, suffix))
    }
}

/// Appends one frame of a protobuf watch stream: a 4-byte big-endian length and a
/// meta/v1 `WatchEvent` of `event_type` whose object is `object`, an encoded body (as
/// [`encode`] writes it).
pub fn watch_frame(out: &mut Vec<u8>, event_type: &str, object: &[u8]) {
    let raw_ext_len = 1 + wire::varint_len(object.len() as u64) + object.len();
    let len = 1
        + wire::varint_len(event_type.len() as u64)
        + event_type.len()
        + 1
        + wire::varint_len(raw_ext_len as u64)
        + raw_ext_len;
    out.reserve(4 + len);
    out.extend_from_slice(&(len as u32).to_be_bytes());
    wire::put_len_tag(out, 1, event_type.len());
    out.extend_from_slice(event_type.as_bytes());
    wire::put_len_tag(out, 2, raw_ext_len);
    wire::put_len_tag(out, 1, object.len());
    out.extend_from_slice(object);
}

/// The decoded `runtime.Unknown` envelope.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

fn envelope(body: &[u8]) -> Result<Envelope<'_>, DecodeError> {
    let rest = body.strip_prefix(MAGIC).ok_or(DecodeError::NotProtobuf)?;
    let malformed = |e: String| DecodeError::Malformed(format!("envelope: {e}"));
    let mut out = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
    };
    let (mut encoding, mut content_type) = (String::new(), String::new());
    let mut r = wire::Reader::new(rest);
    let string = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    while !r.at_end() {
        let (num, wt) = r.tag().map_err(malformed)?;
        if (1..=4).contains(&num) && wt != wire::LEN {
            return Err(malformed(format!("wrong wire type {wt} for field {num}")));
        }
        match num {
            1 => {
                let mut tm = wire::Reader::new(r.bytes().map_err(malformed)?);
                while !tm.at_end() {
                    let (num, wt) = tm.tag().map_err(malformed)?;
                    match (num, wt) {
                        (1, wire::LEN) => out.api_version = string(tm.bytes().map_err(malformed)?),
                        (2, wire::LEN) => out.kind = string(tm.bytes().map_err(malformed)?),
                        (1 | 2, _) => {
                            return Err(malformed(format!("wrong wire type {wt} in typeMeta")));
                        }
                        _ => tm.skip(num, wt).map_err(malformed)?,
                    }
                }
            }
            2 => out.raw = r.bytes().map_err(malformed)?,
            3 => encoding = string(r.bytes().map_err(malformed)?),
            4 => content_type = string(r.bytes().map_err(malformed)?),
            _ => r.skip(num, wt).map_err(malformed)?,
        }
    }
    if !encoding.is_empty() {
        return Err(DecodeError::Unsupported(format!(
            "content encoding {encoding:?}"
        )));
    }
    if !content_type.is_empty() && content_type != MEDIA_TYPE {
        return Err(DecodeError::Unsupported(format!(
            "content type {content_type:?}"
        )));
    }
    Ok(out)
}

/// Decodes a protobuf request body into the JSON object kube-apiserver would
/// have decoded, with `apiVersion` and `kind` from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let env = envelope(body)?;
    decode_object(&env.api_version, &env.kind, env.raw)
}

/// Decodes `raw`, the bare protobuf message of an `apiVersion`/`kind` object
/// (what the envelope's `raw` field holds).
pub fn decode_object(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, DecodeError> {
    let msg = schema::lookup(api_version, kind).ok_or_else(|| DecodeError::UnknownKind {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
    })?;
    let map = decode::message(msg, raw, "", 0).map_err(DecodeError::Malformed)?;
    Ok(Value::Object(with_type_meta(api_version, kind, map)))
}

/// Whether [`decode`] handles `apiVersion`/`kind`.
pub fn supports(api_version: &str, kind: &str) -> bool {
    schema::lookup(api_version, kind).is_some()
}

fn with_type_meta(api_version: &str, kind: &str, map: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    if !kind.is_empty() {
        out.insert("kind".into(), Value::String(kind.into()));
    }
    if !api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(api_version.into()));
    }
    out.extend(map);
    out
}

/// An object embedded in a `RawExtension` as a protobuf body of its own.
pub(crate) fn decode_nested(body: &[u8], path: &str, depth: usize) -> Result<Value, String> {
    let at = |e: &dyn std::fmt::Display| format!("{path}: {e}");
    let env = envelope(body).map_err(|e| at(&e))?;
    let msg = schema::lookup(&env.api_version, &env.kind).ok_or_else(|| {
        at(&DecodeError::UnknownKind {
            api_version: env.api_version.clone(),
            kind: env.kind.clone(),
        })
    })?;
    let map = decode::message(msg, env.raw, path, depth)?;
    Ok(Value::Object(with_type_meta(
        &env.api_version,
        &env.kind,
        map,
    )))
}
