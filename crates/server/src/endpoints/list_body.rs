//! LIST responses encoded as they are sent, so that a request's memory is a chunk, not the
//! list: the body holds the page's items (their stored bytes are shared with the store and
//! the watch cache, not copied) and encodes the next items only when hyper asks for more,
//! which it does as the client reads. Upstream streams JSON and protobuf lists the same way
//! (StreamingCollectionsEncodingToJSON, on by default since 1.33).
//!
//! Every output has the shape `<prefix><item>,<item>...<suffix>`: JSON lists, Tables and
//! PartialObjectMetadataLists put their array last (in Go's field order: kind, apiVersion,
//! metadata, then items, or columnDefinitions then rows); YAML, whose keys upstream sorts,
//! has `items` between `apiVersion` and `kind`, each item a block sequence entry.
//!
//! A page small enough for one chunk is sent whole, with its length. An item that cannot be
//! decoded midway (damaged stored bytes) ends the body with an error, which aborts the
//! response: a damaged object is never sent as if it were whole.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use kapi_apimachinery::goyaml;
use kapi_apimachinery::status::ApiError;
use kapi_protobuf::ListEncoder;
use serde_json::{Value, json};

use super::negotiation::Output;
use super::render::{IncludeObject, Renderer, meta_api_version, partial_metadata};
use crate::body::{Body, BoxError};
use crate::codec;
use crate::registry::{Item, ListResult};
use crate::resource::ResourceDefinition;

/// How much one frame holds, at least (an item is never split), over HTTP/1.1: hyper queues
/// up to 16 frames per connection before it stops asking for more (and writes them with one
/// vectored write), so a client that does not read holds 16 frames of its response in kapi.
pub(super) const HTTP1_CHUNK: usize = 8 * 1024;
/// The same over HTTP/2, where a stream that is not read holds its flow-control window
/// (256 KiB) and one frame: larger frames cost less per byte sent.
pub(super) const HTTP2_CHUNK: usize = 64 * 1024;

/// One item of the page: stored bytes, or an object already in the served version (when
/// the version converts: conversions run for the whole page before the response starts, so
/// that a failing conversion is still an error status), or, in a protobuf list, an item
/// already encoded, the message of one (to be framed as an item), or one whose encoded
/// length is known.
enum Entry {
    Stored(Item),
    Served(Value),
    Encoded(Bytes),
    Message(Bytes),
    Measured(Item, usize),
}

/// The body of a LIST response; see the module documentation.
pub(super) struct ListBody {
    definition: Arc<ResourceDefinition>,
    output: Output,
    include_object: IncludeObject,
    /// A chunk encoded but not sent yet.
    pending: Option<Bytes>,
    prefix: Option<Vec<u8>>,
    entries: std::vec::IntoIter<Entry>,
    suffix: Option<Vec<u8>>,
    first: bool,
    /// How much a frame holds, at least.
    chunk: usize,
    /// The encoder of a protobuf list's items.
    protobuf: Option<ListEncoder>,
    /// A protobuf item's message and its JSON with its resourceVersion, reused from item
    /// to item.
    scratch: (Vec<u8>, Vec<u8>),
}

impl ListBody {
    /// The body of `list` rendered by `renderer` (whose definition `definition` is), in
    /// frames of at least `chunk` bytes.
    pub(super) fn body(
        renderer: &Renderer<'_>,
        definition: Arc<ResourceDefinition>,
        list: ListResult,
        chunk: usize,
    ) -> Result<Body, ApiError> {
        let meta = super::render::list_meta(&list);
        let mut entries: Vec<Entry> = if definition.converter.is_some() {
            let served = renderer.served_items(&list)?;
            served.into_iter().map(Entry::Served).collect()
        } else {
            list.items.into_iter().map(Entry::Stored).collect()
        };
        let order = definition.table.as_ref().and_then(|table| table.order);
        if let (Output::Table { .. }, Some(order)) = (renderer.output, order) {
            // Rows the printer sorts (FlowSchemas by precedence) need the whole page.
            let mut served = entries
                .into_iter()
                .map(|entry| entry.served(renderer))
                .collect::<Result<Vec<Value>, ApiError>>()?;
            served.sort_by(order);
            entries = served.into_iter().map(Entry::Served).collect();
        }
        let mut protobuf = None;
        let (prefix, suffix) = if renderer.output.is_protobuf() {
            let encoder = protobuf_encoder(renderer, &definition)?;
            let total;
            (entries, total) = measure(renderer, &encoder, entries)?;
            let envelope = encoder.envelope(&json!({ "metadata": meta }), total);
            protobuf = Some(encoder);
            envelope.map_err(ApiError::internal)?
        } else {
            envelope(renderer, &definition, meta, entries.is_empty())?
        };
        let mut body = ListBody {
            definition,
            output: renderer.output,
            include_object: renderer.include_object,
            pending: None,
            prefix: Some(prefix),
            entries: entries.into_iter(),
            suffix: Some(suffix),
            first: true,
            chunk,
            protobuf,
            scratch: (Vec::new(), Vec::new()),
        };
        let first = body.next_chunk().map_err(ApiError::internal)?;
        if body.suffix.is_none() {
            // It all fit in one chunk: send it whole, with its length.
            return Ok(crate::body::full(first.unwrap_or_default()));
        }
        body.pending = first;
        Ok(body.boxed_unsync())
    }

    /// The next chunk: at least `chunk` bytes unless the list ends; `None` once sent.
    fn next_chunk(&mut self) -> Result<Option<Bytes>, BoxError> {
        let next = self.prefix.take();
        let Some(mut out) = next.or_else(|| self.suffix.as_ref().map(|_| Vec::new())) else {
            return Ok(None);
        };
        out.reserve(self.chunk);
        while out.len() < self.chunk {
            let Some(entry) = self.entries.next() else {
                out.extend(self.suffix.take().unwrap_or_default());
                break;
            };
            self.write_entry(entry, &mut out)?;
        }
        // A frame lives in hyper's queue as long as the client takes to read it: give back
        // what the last item's growth left unused.
        if out.capacity() - out.len() > self.chunk / 2 {
            out.shrink_to_fit();
        }
        Ok(Some(Bytes::from(out)))
    }

    /// Appends one item in the output's form, after a separator unless it is the first.
    fn write_entry(&mut self, entry: Entry, out: &mut Vec<u8>) -> Result<(), BoxError> {
        if let Some(encoder) = &self.protobuf {
            return write_protobuf_entry(encoder, entry, out, &mut self.scratch);
        }
        let first = std::mem::take(&mut self.first);
        if !first && self.output != Output::Yaml {
            out.push(b',');
        }
        let renderer = Renderer {
            definition: &self.definition,
            output: self.output,
            include_object: self.include_object,
        };
        let served = match (entry, self.output) {
            (Entry::Stored(item), Output::Json) => {
                codec::write_with_revision(&item.stored, item.revision, out);
                return Ok(());
            }
            (entry, _) => entry.served(&renderer).map_err(|err| err.to_string())?,
        };
        match self.output {
            Output::Json | Output::Protobuf => codec::write_json(out, &served),
            Output::Yaml => write_yaml_entry(out, &served),
            Output::Table { .. } => codec::write_json(out, &renderer.row(&served)),
            Output::PartialMetadata { v1beta1, .. } => {
                codec::write_json(out, &partial_metadata(&served, v1beta1))
            }
        }
        Ok(())
    }
}

impl Entry {
    /// The object in the served version.
    fn served(self, renderer: &Renderer<'_>) -> Result<Value, ApiError> {
        match self {
            Entry::Stored(item) | Entry::Measured(item, _) => renderer.served(&item),
            Entry::Served(object) => Ok(object),
            Entry::Encoded(_) | Entry::Message(_) => {
                Err(ApiError::internal("an encoded item has no served form"))
            }
        }
    }
}

/// How many bytes of encoded items a protobuf LIST keeps from measuring them to sending them.
/// A protobuf list writes its items' total length before the first item, so every item's
/// length must be known before the response starts. Items whose encoding the watch cache
/// keeps are shared with it, as JSON items share their stored bytes. Items measured by an
/// earlier response (the cache remembers their lengths) are encoded as the client reads,
/// as JSON items are; the others are encoded to be measured, and kept up to this much,
/// beyond which they are encoded again when sent, so that a LIST's memory stays bounded.
const PROTOBUF_KEPT: usize = 1 << 20;

/// The encoder of a protobuf list of the resource, or of its PartialObjectMetadataList.
fn protobuf_encoder(
    renderer: &Renderer<'_>,
    definition: &ResourceDefinition,
) -> Result<ListEncoder, ApiError> {
    match renderer.output {
        Output::PartialMetadata { v1beta1, .. } => {
            ListEncoder::new(meta_api_version(v1beta1), "PartialObjectMetadataList")
        }
        _ => ListEncoder::new(
            &definition.group_version.api_version(),
            &definition.list_kind,
        ),
    }
    .map_err(ApiError::internal)
}

/// The entries of a protobuf list, each encoded or measured (see [`PROTOBUF_KEPT`]), and
/// their total length. Objects that are not sent as stored (converted, or reduced to their
/// metadata) are encoded from their served form here, and kept. Any item that cannot be
/// encoded is an error status before the response starts.
fn measure(
    renderer: &Renderer<'_>,
    encoder: &ListEncoder,
    entries: Vec<Entry>,
) -> Result<(Vec<Entry>, usize), ApiError> {
    let partial = match renderer.output {
        Output::PartialMetadata { v1beta1, .. } => Some(v1beta1),
        _ => None,
    };
    let encoding = encoder.encoding();
    let (mut kept, mut total) = (0, 0);
    let (mut scratch, mut json) = (Vec::new(), Vec::new());
    let mut measured = Vec::with_capacity(entries.len());
    for entry in entries {
        scratch.clear();
        let entry = match (entry, partial) {
            (Entry::Stored(item), None) => {
                let memo = item.cached.as_ref().map(|cached| &cached.encodings);
                if let Some(message) = memo.and_then(|memo| memo.bytes(encoding)) {
                    total += encoder.item_len(message.len());
                    measured.push(Entry::Message(message));
                    continue;
                }
                let len = match memo.and_then(|memo| memo.len(encoding)) {
                    Some(len) => len,
                    None => {
                        encode_stored(encoder, &item, &mut scratch, &mut json)?;
                        let len = encoder.item_len(scratch.len());
                        if let Some(memo) = memo {
                            memo.set_len(encoding, len);
                        }
                        len
                    }
                };
                total += len;
                let shared = memo
                    .filter(|_| !scratch.is_empty())
                    .and_then(|memo| memo.keep(encoding, &scratch));
                match shared {
                    Some(message) => Entry::Message(message),
                    None if scratch.is_empty() || kept >= PROTOBUF_KEPT => {
                        Entry::Measured(item, len)
                    }
                    None => {
                        kept += len;
                        Entry::Message(Bytes::copy_from_slice(&scratch))
                    }
                }
            }
            (entry, partial) => {
                let served = entry.served(renderer)?;
                let encoded = match partial {
                    Some(v1beta1) => {
                        encoder.item(&partial_metadata(&served, v1beta1), &mut scratch)
                    }
                    None => encoder.item(&served, &mut scratch),
                };
                encoded.map_err(ApiError::internal)?;
                total += scratch.len();
                Entry::Encoded(Bytes::copy_from_slice(&scratch))
            }
        };
        measured.push(entry);
    }
    Ok((measured, total))
}

/// Appends the message of a stored item, straight from its JSON text (no tree is built);
/// `json` is a scratch buffer for the text with its resourceVersion.
fn encode_stored(
    encoder: &ListEncoder,
    item: &Item,
    out: &mut Vec<u8>,
    json: &mut Vec<u8>,
) -> Result<(), ApiError> {
    json.clear();
    codec::write_with_revision(&item.stored, item.revision, json);
    encoder.message_json(json, out).map_err(ApiError::internal)
}

/// Appends a measured or encoded entry of a protobuf list; `scratch` holds a measured
/// item's message while it is framed. An item whose encoding is not the length measured
/// (which cannot happen: the encoding of the same text is the same) ends the body with an
/// error, as a list whose lengths lie would be read as garbage.
fn write_protobuf_entry(
    encoder: &ListEncoder,
    entry: Entry,
    out: &mut Vec<u8>,
    scratch: &mut (Vec<u8>, Vec<u8>),
) -> Result<(), BoxError> {
    match entry {
        Entry::Encoded(bytes) => out.extend_from_slice(&bytes),
        Entry::Message(message) => encoder.put_item(&message, out),
        Entry::Measured(item, len) => {
            let (message, json) = scratch;
            message.clear();
            encode_stored(encoder, &item, message, json).map_err(|err| err.to_string())?;
            if encoder.item_len(message.len()) != len {
                return Err(
                    "a protobuf list item's encoding changed length between measuring \
                            and sending"
                        .into(),
                );
            }
            encoder.put_item(message, out);
        }
        Entry::Stored(_) | Entry::Served(_) => {
            return Err("a protobuf list item was not measured".into());
        }
    }
    Ok(())
}

/// The bytes before the first item and after the last.
fn envelope(
    renderer: &Renderer<'_>,
    definition: &ResourceDefinition,
    meta: Value,
    empty: bool,
) -> Result<(Vec<u8>, Vec<u8>), ApiError> {
    let json_envelope = |leading: Vec<(&str, Value)>, array: &str| {
        let mut prefix = b"{".to_vec();
        for (key, value) in leading {
            codec::write_json(&mut prefix, &Value::from(key));
            prefix.push(b':');
            codec::write_json(&mut prefix, &value);
            prefix.push(b',');
        }
        codec::write_json(&mut prefix, &Value::from(array));
        prefix.extend_from_slice(b":[");
        (prefix, b"]}".to_vec())
    };
    let api_version = Value::from(definition.group_version.api_version());
    Ok(match renderer.output {
        Output::Json | Output::Protobuf => json_envelope(
            vec![
                ("kind", Value::from(&*definition.list_kind)),
                ("apiVersion", api_version),
                ("metadata", meta),
            ],
            "items",
        ),
        Output::PartialMetadata { v1beta1, .. } => json_envelope(
            vec![
                ("kind", Value::from("PartialObjectMetadataList")),
                ("apiVersion", Value::from(meta_api_version(v1beta1))),
                ("metadata", meta),
            ],
            "items",
        ),
        Output::Table { v1beta1 } => json_envelope(
            vec![
                ("kind", Value::from("Table")),
                ("apiVersion", Value::from(meta_api_version(v1beta1))),
                ("metadata", meta),
                ("columnDefinitions", Value::Array(renderer.columns())),
            ],
            "rows",
        ),
        Output::Yaml => {
            let head = goyaml::to_string(&json!({ "apiVersion": api_version }));
            let tail =
                goyaml::to_string(&json!({ "kind": definition.list_kind, "metadata": meta }));
            let mut prefix = head.into_bytes();
            prefix.extend_from_slice(if empty { b"items: []\n" } else { b"items:\n" });
            (prefix, tail.into_bytes())
        }
    })
}

/// Appends `object` as an entry of the list's top-level `items` sequence, as the whole
/// list's encoding would write it.
fn write_yaml_entry(out: &mut Vec<u8>, object: &Value) {
    let mut text = String::new();
    goyaml::write_sequence_entry(&mut text, object);
    out.extend_from_slice(text.as_bytes());
}

impl http_body::Body for ListBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(chunk) = this.pending.take() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        Poll::Ready(this.next_chunk().transpose().map(|c| c.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_none() && self.prefix.is_none() && self.suffix.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_entries_are_what_the_whole_document_s_encoding_writes() {
        let items = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                "data": {"multi": "line one\nline two\n", "empty": ""}}),
            json!({}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "labels": {"x": "y"}}}),
        ];
        let whole = goyaml::to_string(&json!({"apiVersion": "v1", "items": items,
            "kind": "ConfigMapList", "metadata": {"resourceVersion": "7"}}));
        let mut streamed = goyaml::to_string(&json!({"apiVersion": "v1"})).into_bytes();
        streamed.extend_from_slice(b"items:\n");
        for item in &items {
            write_yaml_entry(&mut streamed, item);
        }
        streamed.extend(
            goyaml::to_string(
                &json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "7"}}),
            )
            .into_bytes(),
        );
        assert_eq!(String::from_utf8(streamed).unwrap(), whole);
    }
}
