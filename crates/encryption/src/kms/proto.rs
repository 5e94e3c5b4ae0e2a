//! The KMS v2 messages: the plugin's gRPC API (`k8s.io/kms/apis/v2/api.proto`, package `v2`)
//! and the `EncryptedObject` kube-apiserver stores after its `k8s:enc:kms:v2:<name>:` prefix
//! (`k8s.io/apiserver/.../kmsv2/v2/api.proto`). Maps are ordered so that kapi's encoding is
//! deterministic.

use std::collections::BTreeMap;

/// The gRPC service every KMS v2 plugin serves.
pub const SERVICE: &str = "v2.KeyManagementService";
/// The path of each method, as the operation metrics name it.
pub const STATUS: &str = "/v2.KeyManagementService/Status";
pub const ENCRYPT: &str = "/v2.KeyManagementService/Encrypt";
pub const DECRYPT: &str = "/v2.KeyManagementService/Decrypt";

#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    /// `v2` (or the older `v2beta1`).
    #[prost(string, tag = "1")]
    pub version: String,
    /// `ok` when the plugin is healthy.
    #[prost(string, tag = "2")]
    pub healthz: String,
    /// The key the plugin encrypts with now; a change makes kube-apiserver rotate its seed.
    #[prost(string, tag = "3")]
    pub key_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DecryptRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub ciphertext: Vec<u8>,
    /// A fresh UUID per call, for the plugin's logs.
    #[prost(string, tag = "2")]
    pub uid: String,
    #[prost(string, tag = "3")]
    pub key_id: String,
    #[prost(btree_map = "string, bytes", tag = "4")]
    pub annotations: BTreeMap<String, Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DecryptResponse {
    #[prost(bytes = "vec", tag = "1")]
    pub plaintext: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub plaintext: Vec<u8>,
    #[prost(string, tag = "2")]
    pub uid: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptResponse {
    #[prost(bytes = "vec", tag = "1")]
    pub ciphertext: Vec<u8>,
    #[prost(string, tag = "2")]
    pub key_id: String,
    #[prost(btree_map = "string, bytes", tag = "3")]
    pub annotations: BTreeMap<String, Vec<u8>>,
}

/// How the DEK source of an [`EncryptedObject`] makes the key of its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum EncryptedDekSourceType {
    /// The source is the AES-GCM key itself (written by kube-apiserver 1.27 and 1.28).
    AesGcmKey = 0,
    /// The source is a seed; each value's key is HKDF-SHA256(seed, info) with a random info
    /// (what 1.29 and later, and kapi, write).
    HkdfSha256XnonceAesGcmSeed = 1,
}

/// What a KMS v2 provider stores after its prefix.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptedObject {
    #[prost(bytes = "vec", tag = "1")]
    pub encrypted_data: Vec<u8>,
    #[prost(string, tag = "2")]
    pub key_id: String,
    /// The DEK source as the plugin encrypted it.
    #[prost(bytes = "vec", tag = "3")]
    pub encrypted_dek_source: Vec<u8>,
    #[prost(btree_map = "string, bytes", tag = "4")]
    pub annotations: BTreeMap<String, Vec<u8>>,
    #[prost(enumeration = "EncryptedDekSourceType", tag = "5")]
    pub encrypted_dek_source_type: i32,
}
