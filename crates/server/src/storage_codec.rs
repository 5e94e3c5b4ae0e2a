//! The codec between a registry and the store (upstream's storage codec): a [`Store`] that
//! writes a collection's values in the form `--storage-media-type` chooses and reads any
//! form kube-apiserver or kapi may have written, so that the registry and its watch cache
//! always see kapi's stored JSON (see [`crate::codec`]).
//!
//! Reads recognise the value as kube-apiserver's recognizer does: `k8s\0` is protobuf (the
//! `runtime.Unknown` envelope), `{` after whitespace JSON, anything else YAML, and last
//! base64-wrapped protobuf (etcd2-era values). JSON passes through untouched, so a JSON store
//! costs one byte test per value. A value that is none of them, or does not decode, is
//! [`StorageError::Damaged`], naming its key: never served, never silently dropped.
//!
//! With encryption at rest (`--encryption-provider-config`) the collection's transformer
//! encrypts the encoded value last on its way to storage and decrypts it first on its way
//! back, authenticating the etcd key; a value encrypted for a collection kapi has no
//! transformer for is refused with upstream's `identity transformer tried to read encrypted
//! data`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;
use futures::StreamExt as _;
use kapi_encryption::{ENCRYPTED_PREFIX, IDENTITY_READ_ENCRYPTED, Transformer};
use kapi_storage::{
    DeleteResponse, Event, GetResponse, KeyValue, ListOptions, ListResponse, Result, Revision,
    StorageError, Store, WatchOptions, WatchResponse, WatchStream,
};

use crate::resource::{Converter, EarlierVersions, Strategy};
use kapi_apimachinery::schema::GroupVersionKind;
use serde_json::Value;

/// The forms objects can be stored in (`--storage-media-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageMediaType {
    Json,
    Yaml,
    Protobuf,
}

impl StorageMediaType {
    /// The media type's name, as the flag takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageMediaType::Json => "application/json",
            StorageMediaType::Yaml => "application/yaml",
            StorageMediaType::Protobuf => kapi_protobuf::MEDIA_TYPE,
        }
    }
}

impl std::str::FromStr for StorageMediaType {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "application/json" => Ok(StorageMediaType::Json),
            "application/yaml" => Ok(StorageMediaType::Yaml),
            kapi_protobuf::MEDIA_TYPE => Ok(StorageMediaType::Protobuf),
            other => Err(format!(
                "{other:?} is not a storage media type: application/json, application/yaml or {}",
                kapi_protobuf::MEDIA_TYPE
            )),
        }
    }
}

/// A store whose values are one collection's objects, written as `media_type` says (as JSON
/// where the form cannot hold the kind: protobuf for kinds without a message) and read from
/// any form.
#[derive(Clone)]
pub struct StorageCodec {
    inner: Arc<dyn Store>,
    media_type: StorageMediaType,
    /// The stored kind's `apiVersion` and `kind`, for protobuf's envelope.
    api_version: String,
    kind: String,
    /// How kapi's own stored JSON of that kind begins: such values pass untouched
    /// ([`StorageCodec::passed_through`]).
    own_prefix: String,
    /// Whether JSON values passed untouched are checked to be JSON first: those of a store
    /// other writers share, which may hold any bytes after kapi's prefix.
    check_json: bool,
    /// The collection's encryption, if the encryption configuration names it.
    transformer: Option<Arc<Transformer>>,
    /// The stored version's strategy, which converts values stored in another version and
    /// defaults every value read in another form or layout than kapi's JSON, as upstream's
    /// decoder defaults what it reads (protobuf drops, for one, the apiVersion and kind of
    /// embedded objects, which defaulting sets again).
    defaults: Option<Arc<dyn Strategy>>,
    /// The converters of the collection's other versions, by `apiVersion` and `kind`: a
    /// value stored in one of them (by an older kube-apiserver, before the stored version
    /// changed) is converted on read, as upstream's decoder converts it.
    versions: Vec<(GroupVersionKind, Arc<dyn Converter>)>,
    /// Reads values stored in versions of the kind that are not served any more.
    earlier: Option<EarlierVersions>,
}

impl StorageCodec {
    /// `inner` with values of `api_version`/`kind` written as `media_type`.
    pub fn new(
        inner: Arc<dyn Store>,
        media_type: StorageMediaType,
        api_version: String,
        kind: String,
    ) -> StorageCodec {
        let media_type = match media_type {
            StorageMediaType::Protobuf if !kapi_protobuf::supports(&api_version, &kind) => {
                StorageMediaType::Json
            }
            other => other,
        };
        let own_prefix =
            format!("{{\"apiVersion\":\"{api_version}\",\"kind\":\"{kind}\",\"metadata\":");
        StorageCodec {
            check_json: !inner.values_trusted(),
            inner,
            media_type,
            api_version,
            kind,
            own_prefix,
            transformer: None,
            defaults: None,
            versions: Vec::new(),
            earlier: None,
        }
    }

    /// The codec reading values stored in the versions `versions` name, through their
    /// converters.
    pub fn converting(mut self, versions: Vec<(GroupVersionKind, Arc<dyn Converter>)>) -> Self {
        self.versions = versions;
        self
    }

    /// The codec reading values stored in versions that are not served any more through
    /// `earlier`.
    pub fn reading_earlier(mut self, earlier: Option<EarlierVersions>) -> Self {
        self.earlier = earlier;
        self
    }

    /// The codec with `strategy`'s defaulting applied to values read from other forms.
    pub fn defaulted(mut self, strategy: Arc<dyn Strategy>) -> StorageCodec {
        self.defaults = Some(strategy);
        self
    }

    /// The codec with values encrypted by `transformer`.
    pub fn encrypted(mut self, transformer: Option<Arc<Transformer>>) -> StorageCodec {
        self.transformer = transformer;
        self
    }

    /// A value from the registry (kapi's stored JSON) in the stored form, encrypted.
    fn encode(&self, key: &str, json: Bytes) -> Result<Bytes> {
        let encoded = self.encode_media(key, json)?;
        match &self.transformer {
            None => Ok(encoded),
            Some(transformer) => transformer
                .to_storage(&encoded, key)
                .map(Bytes::from)
                .map_err(|err| transform_error(&err)),
        }
    }

    /// Whether the plaintext `value` is in the form this codec writes.
    fn written_form(&self, value: &[u8]) -> bool {
        match self.media_type {
            StorageMediaType::Json => is_json(value),
            StorageMediaType::Protobuf => value.starts_with(kapi_protobuf::MAGIC),
            StorageMediaType::Yaml => !is_json(value) && !value.starts_with(kapi_protobuf::MAGIC),
        }
    }

    /// A value from the registry in the stored media type.
    fn encode_media(&self, key: &str, json: Bytes) -> Result<Bytes> {
        let failed = |err: String| StorageError::Internal(format!("encoding {key}: {err}"));
        match self.media_type {
            StorageMediaType::Json => Ok(json),
            StorageMediaType::Yaml => {
                let value: Value =
                    serde_json::from_slice(&json).map_err(|e| failed(e.to_string()))?;
                Ok(Bytes::from(kapi_apimachinery::goyaml::to_string(&value)))
            }
            StorageMediaType::Protobuf => {
                let mut out = Vec::with_capacity(json.len());
                kapi_protobuf::encode_json_into(&mut out, &self.api_version, &self.kind, &json)
                    .map_err(|e| failed(e.to_string()))?;
                Ok(Bytes::from(out))
            }
        }
    }
}

impl StorageCodec {
    /// A stored value decrypted: the plaintext, and whether it must be written again.
    async fn decrypt(&self, key: &str, value: Bytes) -> Result<(Bytes, bool)> {
        match &self.transformer {
            Some(transformer) if !value.is_empty() => {
                let read = transformer
                    .from_storage(&value, key)
                    .await
                    .map_err(|err| transform_error(&err))?;
                Ok((Bytes::from(read.data), read.stale))
            }
            _ if value.starts_with(ENCRYPTED_PREFIX) => {
                Err(transform_error(IDENTITY_READ_ENCRYPTED))
            }
            _ => Ok((value, false)),
        }
    }

    /// `kv` with its value decrypted and decoded.
    async fn decode_kv(&self, mut kv: KeyValue) -> Result<KeyValue> {
        let (plain, _) = self.decrypt(&kv.key, kv.value).await?;
        kv.value = match &self.defaults {
            Some(strategy) => self.decode_stored(&kv.key, plain, strategy.as_ref())?,
            None if is_json(&plain) => self.passed_through(&kv.key, plain)?,
            None => decode(&kv.key, plain)?,
        };
        Ok(kv)
    }

    /// The JSON value `value`, served as it is stored: checked first to be JSON (valid UTF-8,
    /// one value and nothing after it) when the store is shared with other writers, whose
    /// bytes are damage naming `key` when they are not. A syntax check, building nothing.
    fn passed_through(&self, key: &str, value: Bytes) -> Result<Bytes> {
        if self.check_json {
            std::str::from_utf8(&value).map_err(|err| not_json(key, &err))?;
            serde_json::from_slice::<serde::de::IgnoredAny>(&value)
                .map_err(|err| not_json(key, &err))?;
        }
        Ok(value)
    }

    /// A stored value of a type kapi knows as kapi's stored JSON of its stored version:
    /// kapi's own JSON as it is; any other form or layout decoded, converted from the
    /// version it was stored in (refused, naming the key, when the type has no conversion)
    /// and defaulted.
    fn decode_stored(&self, key: &str, value: Bytes, strategy: &dyn Strategy) -> Result<Bytes> {
        if value.is_empty() {
            return Ok(value);
        }
        if value.starts_with(self.own_prefix.as_bytes()) {
            return self.passed_through(key, value);
        }
        let mut object = match is_json(&value) {
            true => serde_json::from_slice(&value).map_err(|e| not_json(key, &e))?,
            false => decode_object(key, value)?,
        };
        let stored = (object["apiVersion"].as_str(), object["kind"].as_str());
        if stored != (Some(self.api_version.as_str()), Some(self.kind.as_str())) {
            let shown = format!("{} {}", stored.0.unwrap_or("?"), stored.1.unwrap_or("?"));
            let converter = self.versions.iter().find(|(gvk, _)| {
                let api_version = gvk.group_version().api_version();
                stored == (Some(api_version.as_str()), Some(gvk.kind.as_str()))
            });
            object = match converter {
                Some((_, converter)) => converter.stored_form(object).map_err(|err| {
                    StorageError::Damaged(format!(
                        "the value of {key}, a {shown}, does not convert to {} {}: {}",
                        self.api_version,
                        self.kind,
                        err.message()
                    ))
                })?,
                None => self.read_earlier(object).ok_or_else(|| {
                    StorageError::Damaged(format!(
                        "the value of {key} is a {shown}, which kapi does not read as {} {}",
                        self.api_version, self.kind
                    ))
                })?,
            };
        }
        strategy.default(&mut object);
        Ok(crate::codec::encode(&object))
    }

    /// `object`, stored in an earlier version, as this codec's kind, if it converts to it (a
    /// value of another kind at this collection's key does not).
    fn read_earlier(&self, object: Value) -> Option<Value> {
        let read = self.earlier?(object)?;
        let kind = (read["apiVersion"].as_str(), read["kind"].as_str());
        (kind == (Some(self.api_version.as_str()), Some(self.kind.as_str()))).then_some(read)
    }

    async fn decode_event(&self, mut event: Event) -> Result<Event> {
        event.kv = self.decode_kv(event.kv).await?;
        event.prev_kv = match event.prev_kv {
            Some(kv) => Some(self.decode_kv(kv).await?),
            None => None,
        };
        Ok(event)
    }

    /// `err` with the value a conflict carries decoded.
    async fn decode_error(&self, err: StorageError) -> StorageError {
        match err {
            StorageError::Conflict {
                key,
                expected,
                current,
            } => match self.decode_kv(*current).await {
                Ok(current) => StorageError::Conflict {
                    key,
                    expected,
                    current: Box::new(current),
                },
                Err(damaged) => damaged,
            },
            other => other,
        }
    }
}

/// A transformation failure as a get, an update or a delete reports it: the transformer's
/// words alone (a list names the key, see [`in_list`]).
fn transform_error(err: &str) -> StorageError {
    StorageError::Transform(err.to_string())
}

/// `err` of reading the value of `key` as a list reports it: a transformation failure
/// names its key, as upstream's `unable to transform key`.
fn in_list(key: &str, err: StorageError) -> StorageError {
    match err {
        StorageError::Transform(err) => {
            StorageError::Transform(format!("unable to transform key {key:?}: {err}"))
        }
        other => other,
    }
}

/// The damage of a value at `key` that is not the JSON it looks like.
fn not_json(key: &str, err: &dyn std::fmt::Display) -> StorageError {
    StorageError::Damaged(format!("the value of {key} is not JSON: {err}"))
}

/// A stored value as JSON, whatever form it was written in (JSON as it is). Empty values
/// (deletion events) stay empty.
pub fn decode(key: &str, value: Bytes) -> Result<Bytes> {
    if value.is_empty() || is_json(&value) {
        return Ok(value);
    }
    Ok(crate::codec::encode(&decode_object(key, value)?))
}

/// A stored value, in whatever form it was written, as an object (for the stores kapi
/// keeps beside the registries: the NodePort bitmap, the master leases).
pub fn decode_value(key: &str, value: Bytes) -> Result<Value> {
    let json = decode(key, value)?;
    serde_json::from_slice(&json)
        .map_err(|err| StorageError::Damaged(format!("the value of {key} is not an object: {err}")))
}

/// Whether `value` is JSON (an object after whitespace), as upstream's recognizer tells.
fn is_json(value: &[u8]) -> bool {
    value.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// A stored value in another form than JSON as an object.
fn decode_object(key: &str, value: Bytes) -> Result<Value> {
    let damaged = |what: String| StorageError::Damaged(format!("the value of {key} {what}"));
    if value.starts_with(kapi_protobuf::MAGIC) {
        return kapi_protobuf::decode(&value)
            .map_err(|e| damaged(format!("is not a protobuf object: {e}")));
    }
    if let Some(object) = yaml_object(&value) {
        return Ok(object);
    }
    let unwrapped = base64::engine::general_purpose::STANDARD.decode(value.trim_ascii());
    match unwrapped {
        Ok(inner) if inner.starts_with(kapi_protobuf::MAGIC) => {
            decode_object(key, Bytes::from(inner))
        }
        _ => Err(damaged(
            "is neither JSON, YAML nor protobuf (an encrypted value kapi has no key for, or damage)"
                .to_string(),
        )),
    }
}

/// The YAML object `value` holds, if it is one.
fn yaml_object(value: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(value).ok()?;
    serde_yaml_ng::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

#[async_trait]
impl Store for StorageCodec {
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn create_expiring(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<Revision> {
        let value = self.encode(key, value)?;
        self.inner.create_expiring(key, value, ttl).await
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse> {
        let mut response = self.inner.get(key, revision).await?;
        if let Some(kv) = response.kv.take() {
            response.kv = Some(self.decode_kv(kv).await?);
        }
        Ok(response)
    }

    async fn list(&self, prefix: &str, options: &ListOptions) -> Result<ListResponse> {
        let mut response = self.inner.list(prefix, options).await?;
        let kvs = std::mem::take(&mut response.kvs);
        response.kvs.reserve(kvs.len());
        for kv in kvs {
            let key = kv.key.clone();
            let decoded = self.decode_kv(kv).await;
            response
                .kvs
                .push(decoded.map_err(|err| in_list(&key, err))?);
        }
        Ok(response)
    }

    async fn update_expiring(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<Revision> {
        let value = self.encode(key, value)?;
        match self.inner.update_expiring(key, value, expected, ttl).await {
            Ok(revision) => Ok(revision),
            Err(err) => Err(self.decode_error(err).await),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse> {
        let mut response = match self.inner.delete(key, expected).await {
            Ok(response) => response,
            Err(err) => return Err(self.decode_error(err).await),
        };
        response.prev_kv = self.decode_kv(response.prev_kv).await?;
        Ok(response)
    }

    async fn watch(&self, key: &str, options: WatchOptions) -> Result<WatchStream> {
        let stream = self.inner.watch(key, options).await?;
        let codec = self.clone();
        let decoded = stream.then(move |item| {
            let codec = codec.clone();
            async move {
                match item? {
                    WatchResponse::Events(events) => {
                        let mut decoded = Vec::with_capacity(events.len());
                        for event in events {
                            let key = event.kv.key.clone();
                            let event = codec.decode_event(event).await;
                            decoded.push(event.map_err(|err| in_list(&key, err))?);
                        }
                        Ok(WatchResponse::Events(decoded))
                    }
                    progress => Ok(progress),
                }
            }
        });
        // An error is the stream's last item, as the trait promises.
        let mut failed = false;
        let decoded = decoded.take_while(move |item| {
            let go_on = !failed;
            failed |= item.is_err();
            std::future::ready(go_on)
        });
        Ok(decoded.boxed())
    }

    async fn request_progress(&self) -> Result<()> {
        self.inner.request_progress().await
    }

    fn ordered_progress(&self) -> bool {
        self.inner.ordered_progress()
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }

    /// Reads the value as stored again to learn whether it must be rewritten: encrypted
    /// with another key than the writing one, or stored in another form than the one
    /// written now (a `--storage-media-type` change, a value kube-apiserver wrote), as
    /// upstream compares the new encoding with the stored bytes.
    async fn is_stale(&self, kv: &KeyValue) -> Result<bool> {
        let stored = self.inner.get(&kv.key, None).await?.kv;
        let Some(stored) = stored.filter(|stored| stored.mod_revision == kv.mod_revision) else {
            return Ok(false);
        };
        let (plain, stale) = self.decrypt(&stored.key, stored.value).await?;
        Ok(stale || !self.written_form(&plain))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "/registry/configmaps/default/c";

    fn decoded(value: &[u8]) -> Result<Value> {
        let json = decode(KEY, Bytes::copy_from_slice(value))?;
        Ok(serde_json::from_slice(&json).expect("kapi's stored JSON"))
    }

    #[test]
    fn json_passes_through_untouched() {
        let json = Bytes::from_static(b"  {\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\"}");
        assert_eq!(decode(KEY, json.clone()).unwrap(), json);
        assert_eq!(decode(KEY, Bytes::new()).unwrap(), Bytes::new());
    }

    #[test]
    fn protobuf_yaml_and_base64_protobuf_read_as_json() {
        let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}});
        let protobuf = kapi_protobuf::encode("v1", "ConfigMap", &object).unwrap();
        let read = decoded(&protobuf).unwrap();
        assert_eq!(read["data"], object["data"]);
        assert_eq!(read["metadata"]["name"], "c");
        // kapi's stored layout: apiVersion, kind and metadata lead.
        let json = decode(KEY, Bytes::from(protobuf.clone())).unwrap();
        assert!(json.starts_with(b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"));
        let wrapped = base64::engine::general_purpose::STANDARD.encode(&protobuf);
        assert_eq!(decoded(wrapped.as_bytes()).unwrap(), read);
        let yaml = serde_yaml_ng::to_string(&object).unwrap();
        assert_eq!(decoded(yaml.as_bytes()).unwrap(), object);
    }

    #[test]
    fn what_is_no_object_is_damage_naming_its_key() {
        let protobuf = kapi_protobuf::encode("v1", "ConfigMap", &serde_json::json!({})).unwrap();
        let cut = &protobuf[..protobuf.len() - 1];
        for value in [
            &b"k8s:enc:aescbc:v1:key1:\x01\x02"[..],
            b"\x00\x01",
            b"- a\n- b\n",
            cut,
        ] {
            match decoded(value) {
                Err(StorageError::Damaged(message)) => assert!(message.contains(KEY), "{message}"),
                other => panic!("{value:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn protobuf_writes_only_kinds_with_a_message() {
        let store: Arc<dyn Store> = Arc::new(Unreachable);
        let codec = StorageCodec::new(
            store.clone(),
            StorageMediaType::Protobuf,
            "example.com/v1".into(),
            "Widget".into(),
        );
        assert_eq!(codec.media_type, StorageMediaType::Json);
        let codec = StorageCodec::new(
            store,
            StorageMediaType::Protobuf,
            "v1".into(),
            "ConfigMap".into(),
        );
        let json = Bytes::from_static(b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},\"data\":{\"a\":\"1\"}}");
        let written = codec.encode(KEY, json).unwrap();
        assert!(written.starts_with(kapi_protobuf::MAGIC));
        assert_eq!(decoded(&written).unwrap()["data"]["a"], "1");
    }

    /// A store the tests never call.
    struct Unreachable;

    #[async_trait]
    impl Store for Unreachable {
        async fn current_revision(&self) -> Result<Revision> {
            unreachable!()
        }
        async fn create_expiring(
            &self,
            _: &str,
            _: Bytes,
            _: Option<Duration>,
        ) -> Result<Revision> {
            unreachable!()
        }
        async fn get(&self, _: &str, _: Option<Revision>) -> Result<GetResponse> {
            unreachable!()
        }
        async fn list(&self, _: &str, _: &ListOptions) -> Result<ListResponse> {
            unreachable!()
        }
        async fn update_expiring(
            &self,
            _: &str,
            _: Bytes,
            _: Revision,
            _: Option<Duration>,
        ) -> Result<Revision> {
            unreachable!()
        }
        async fn delete(&self, _: &str, _: Option<Revision>) -> Result<DeleteResponse> {
            unreachable!()
        }
        async fn watch(&self, _: &str, _: WatchOptions) -> Result<WatchStream> {
            unreachable!()
        }
        async fn request_progress(&self) -> Result<()> {
            unreachable!()
        }
        async fn compact(&self, _: Revision) -> Result<()> {
            unreachable!()
        }
    }
}
