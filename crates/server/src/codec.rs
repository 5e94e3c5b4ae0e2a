//! How objects are stored and how stored objects become responses.
//!
//! An object is stored as JSON without `metadata.resourceVersion` (the store's mod revision
//! is the resourceVersion, as in kube-apiserver), with `apiVersion`, `kind` and `metadata`
//! first: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{...},...}`. That layout lets a
//! response insert `"resourceVersion":"<rv>"` right after `"metadata":{` by copying bytes,
//! without parsing the object: GETs, LISTs and watch events of JSON are served that way.
//! Values not in that layout (written by hand into etcd, say) still work through a full parse.

use bytes::Bytes;
use kapi_storage::Revision;
use serde_json::{Map, Value};

mod parts;

pub use parts::decode_parts;

/// The keys that lead a stored object, in order.
const LEADING: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Encodes `object` for storage: leading keys first, `metadata.resourceVersion` dropped.
pub fn encode(object: &Value) -> Bytes {
    let mut out = Vec::with_capacity(256);
    let Some(fields) = object.as_object() else {
        return Bytes::from(serde_json::to_vec(object).unwrap_or_default());
    };
    out.push(b'{');
    let mut first = true;
    let mut write = |out: &mut Vec<u8>, key: &str, value: &Value| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        write_json(out, &Value::String(key.to_string()));
        out.push(b':');
        write_json(out, value);
    };
    for key in LEADING {
        match (key, fields.get(key)) {
            ("metadata", Some(Value::Object(meta))) => {
                let mut meta = meta.clone();
                meta.remove("resourceVersion");
                write(&mut out, key, &Value::Object(meta));
            }
            (_, Some(value)) => write(&mut out, key, value),
            (_, None) => {}
        }
    }
    for (key, value) in fields
        .iter()
        .filter(|(key, _)| !LEADING.contains(&key.as_str()))
    {
        write(&mut out, key, value);
    }
    out.push(b'}');
    // Stored bytes live in memory (the store, the watch cache) for as long as the object:
    // give back the growth slack.
    out.shrink_to_fit();
    Bytes::from(out)
}

/// Decodes a stored object and sets its resourceVersion.
pub fn decode(stored: &[u8], revision: Revision) -> Result<Value, serde_json::Error> {
    let mut object: Value = serde_json::from_slice(stored)?;
    set_resource_version(&mut object, revision);
    Ok(object)
}

/// Appends the stored object with its resourceVersion set to `out`, as JSON.
pub fn write_with_revision(stored: &[u8], revision: Revision, out: &mut Vec<u8>) {
    match metadata_body_offset(stored) {
        Some(offset) => {
            out.extend_from_slice(&stored[..offset]);
            out.extend_from_slice(b"\"resourceVersion\":\"");
            out.extend_from_slice(revision.to_string().as_bytes());
            out.push(b'"');
            if stored.get(offset) != Some(&b'}') {
                out.push(b',');
            }
            out.extend_from_slice(&stored[offset..]);
        }
        None => match decode(stored, revision) {
            Ok(object) => write_json(out, &object),
            Err(_) => out.extend_from_slice(stored),
        },
    }
}

/// Sets `metadata.resourceVersion` of `object` to `revision`.
pub fn set_resource_version(object: &mut Value, revision: Revision) {
    if let Some(fields) = object.as_object_mut() {
        let meta = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "resourceVersion".into(),
                Value::String(revision.to_string()),
            );
        }
    }
}

/// Appends `value` as compact JSON.
pub fn write_json(out: &mut Vec<u8>, value: &Value) {
    // Writing to a Vec cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(out, value);
}

/// The offset just after `"metadata":{` when `stored` has the leading layout of [`encode`]:
/// `{"apiVersion":"<s>","kind":"<s>","metadata":{`, with plain strings.
fn metadata_body_offset(stored: &[u8]) -> Option<usize> {
    let rest = stored.strip_prefix(b"{\"apiVersion\":\"")?;
    let api_version_end = plain_string_end(rest)?;
    let rest = rest[api_version_end..].strip_prefix(b",\"kind\":\"")?;
    let kind_end = plain_string_end(rest)?;
    let rest = rest[kind_end..].strip_prefix(b",\"metadata\":{")?;
    Some(stored.len() - rest.len())
}

/// The offset just after the closing quote of a string without escapes.
fn plain_string_end(bytes: &[u8]) -> Option<usize> {
    let end = bytes.iter().position(|&b| b == b'"' || b == b'\\')?;
    (bytes[end] == b'"').then_some(end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spliced(stored: &[u8], revision: Revision) -> Value {
        let mut out = Vec::new();
        write_with_revision(stored, revision, &mut out);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn encode_orders_leading_keys_and_drops_resource_version() {
        let object = json!({"data": {"a": "1"}, "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "x", "resourceVersion": "7"}});
        let stored = encode(&object);
        assert!(
            stored.starts_with(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}"#)
        );
        assert_eq!(metadata_body_offset(&stored), Some(50));
    }

    #[test]
    fn splicing_equals_decoding() {
        for object in [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "no-api-version"}}),
            json!({"apiVersion": "v\"1", "kind": "K", "metadata": {"name": "escaped"}}),
        ] {
            let stored = encode(&object);
            assert_eq!(
                spliced(&stored, 42),
                decode(&stored, 42).unwrap(),
                "{object}"
            );
            assert_eq!(spliced(&stored, 42)["metadata"]["resourceVersion"], "42");
        }
    }

    #[test]
    fn foreign_layouts_are_parsed() {
        let stored = br#"{"metadata":{"name":"x"},"kind":"ConfigMap","apiVersion":"v1"}"#;
        assert_eq!(spliced(stored, 5)["metadata"]["resourceVersion"], "5");
    }
}
