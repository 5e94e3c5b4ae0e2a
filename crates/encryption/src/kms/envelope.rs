//! The bytes a KMS v2 provider stores (after `k8s:enc:kms:v2:<name>:`): an
//! [`EncryptedObject`] holding the plugin-encrypted DEK source, its key ID and annotations,
//! and the data encrypted under the DEK, as kube-apiserver's `kmsv2/envelope.go` and
//! `aes/aes_extended_nonce.go` write them. Seeds (what kapi writes) give each value its own
//! AES-256-GCM key, HKDF-SHA256-Expand(seed, info) with a random 32-byte info stored first;
//! plain AES-GCM keys (what kube-apiserver 1.27 and 1.28 wrote) are read too. Both
//! authenticate the etcd key.

use std::collections::BTreeMap;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use prost::Message as _;
use ring::aead::{Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf;

use super::proto::{EncryptedDekSourceType, EncryptedObject};
use crate::ciphers::{Cipher, random};

/// The largest key ID and encrypted DEK source a value may carry.
pub(crate) const KEY_ID_MAX: usize = 1024;
const DEK_SOURCE_MAX: usize = 1024;
/// The largest total of annotation keys and values.
const ANNOTATIONS_MAX: usize = 32 * 1024;
/// The seed's size, and the size of the random info stored before each value.
pub(crate) const SEED_SIZE: usize = 32;
const INFO_SIZE: usize = 32;
const SHORT: &str = "the stored data was shorter than the required size";

/// Decodes and validates what follows a provider's prefix.
pub(crate) fn decode(stored: &[u8]) -> Result<EncryptedObject, String> {
    let object = EncryptedObject::decode(stored).map_err(|err| err.to_string())?;
    validate(&object)?;
    Ok(object)
}

/// Validates and encodes a value.
pub(crate) fn encode(object: &EncryptedObject) -> Result<Vec<u8>, String> {
    validate(object)?;
    Ok(object.encode_to_vec())
}

/// Upstream's `ValidateEncryptedObject`, with its messages and order.
pub(crate) fn validate(object: &EncryptedObject) -> Result<(), String> {
    if EncryptedDekSourceType::try_from(object.encrypted_dek_source_type).is_err() {
        return Err(format!(
            "unknown encryptedDEKSourceType: {}",
            object.encrypted_dek_source_type
        ));
    }
    if object.encrypted_data.is_empty() {
        return Err("encrypted data is empty".into());
    }
    let source = object.encrypted_dek_source.len();
    if source == 0 {
        return Err(
            "failed to validate encrypted DEK source: encrypted DEK source is empty".into(),
        );
    }
    if source > DEK_SOURCE_MAX {
        return Err(format!(
            "failed to validate encrypted DEK source: encrypted DEK source is {source} bytes, which exceeds the max size of {DEK_SOURCE_MAX}"
        ));
    }
    validate_key_id(&object.key_id)
        .map_err(|(_, err)| format!("failed to validate key id: {err}"))?;
    validate_annotations(&object.annotations)
        .map_err(|err| format!("failed to validate annotations: {err}"))
}

/// Why a key ID is refused: the metrics' code (`empty`, `too_long`) and the message.
pub(crate) fn validate_key_id(key_id: &str) -> Result<(), (&'static str, String)> {
    if key_id.is_empty() {
        return Err(("empty", "keyID is empty".into()));
    }
    if key_id.len() > KEY_ID_MAX {
        let message = format!(
            "keyID is {} bytes, which exceeds the max size of {KEY_ID_MAX}",
            key_id.len()
        );
        return Err(("too_long", message));
    }
    Ok(())
}

/// Annotation keys must be fully qualified domain names; keys and values together at most
/// 32 KiB.
fn validate_annotations(annotations: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let mut errors: Vec<String> = Vec::new();
    let path = Path::root("annotations");
    for key in annotations.keys() {
        let mut invalid = FieldErrors::new();
        let trimmed = key.strip_suffix('.').unwrap_or(key);
        if trimmed.split('.').count() < 2 {
            invalid.push(FieldError::invalid(
                &path,
                key.as_str(),
                "should be a domain with at least two segments separated by dots",
            ));
        } else {
            for detail in kapi_apimachinery::validation::is_dns1123_subdomain(trimmed) {
                invalid.push(FieldError::invalid(&path, key.as_str(), detail));
            }
        }
        errors.extend(invalid.aggregate_message());
    }
    let total: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > ANNOTATIONS_MAX {
        errors.push(format!(
            "total size of annotations is {total}, which exceeds the max size of {ANNOTATIONS_MAX}"
        ));
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// What identifies a DEK source in the cache of decrypted ones, upstream's
/// `generateCacheKey` (its SHA-256 is the cache's key).
pub(crate) fn cache_key(object: &EncryptedObject) -> [u8; 32] {
    let mut key = Vec::with_capacity(64 + object.encrypted_dek_source.len());
    key.extend_from_slice(&(object.encrypted_dek_source_type as u32).to_be_bytes());
    let mut prefixed = |bytes: &[u8]| {
        key.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        key.extend_from_slice(bytes);
    };
    prefixed(&object.encrypted_dek_source);
    prefixed(object.key_id.as_bytes());
    if !object.annotations.is_empty() {
        key.extend_from_slice(&(object.annotations.len() as u32).to_be_bytes());
        for (name, value) in &object.annotations {
            key.extend_from_slice(&(name.len() as u16).to_be_bytes());
            key.extend_from_slice(name.as_bytes());
            key.extend_from_slice(&(value.len() as u16).to_be_bytes());
            key.extend_from_slice(value);
        }
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, &key);
    digest.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// A decrypted DEK source: what encrypts and decrypts the data of the values carrying it.
pub(crate) enum DataKey {
    /// A seed (type 1): each value's key derived with its own info.
    Seed([u8; SEED_SIZE]),
    /// An AES-GCM key (type 0, read only).
    Key(Cipher),
}

impl DataKey {
    /// The data key of a decrypted DEK source of `kind`.
    pub(crate) fn new(kind: EncryptedDekSourceType, source: &[u8]) -> Result<DataKey, String> {
        match kind {
            EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed => {
                let seed = source.try_into().map_err(|_| {
                    format!(
                        "invalid seed length {} used for key generation",
                        source.len()
                    )
                })?;
                Ok(DataKey::Seed(seed))
            }
            EncryptedDekSourceType::AesGcmKey => match source.len() {
                16 | 24 | 32 => Ok(DataKey::Key(Cipher::gcm(source)?)),
                n => Err(format!("crypto/aes: invalid key size {n}")),
            },
        }
    }

    /// `plain` encrypted for the etcd key `aad`: info ‖ nonce ‖ ciphertext ‖ tag.
    pub(crate) fn seal(&self, plain: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            DataKey::Seed(seed) => {
                let info = random::<INFO_SIZE>()?;
                let nonce = random::<NONCE_LEN>()?;
                seal_derived(seed, &info, &nonce, plain, aad)
            }
            DataKey::Key(cipher) => cipher.seal(plain, aad),
        }
    }

    /// Decrypts what [`DataKey::seal`] (or kube-apiserver) wrote for the etcd key `aad`.
    pub(crate) fn open(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            DataKey::Seed(seed) => {
                if data.len() < INFO_SIZE {
                    return Err(SHORT.into());
                }
                let (info, sealed) = data.split_at(INFO_SIZE);
                if sealed.len() < NONCE_LEN {
                    return Err(SHORT.into());
                }
                let (nonce, sealed) = sealed.split_at(NONCE_LEN);
                let key = derive(seed, info)?;
                let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SHORT)?;
                let mut buffer = sealed.to_vec();
                let plain = key
                    .open_in_place(nonce, Aad::from(aad), &mut buffer)
                    .map_err(|_| "cipher: message authentication failed".to_string())?;
                Ok(plain.to_vec())
            }
            DataKey::Key(cipher) => cipher.open(data, aad),
        }
    }
}

/// `plain` sealed with the key derived from `seed` and `info`, under `nonce`.
fn seal_derived(
    seed: &[u8; SEED_SIZE],
    info: &[u8; INFO_SIZE],
    nonce: &[u8; NONCE_LEN],
    plain: &[u8],
    aad: &[u8],
) -> Result<Vec<u8>, String> {
    let key = derive(seed, info)?;
    let mut out = Vec::with_capacity(INFO_SIZE + NONCE_LEN + plain.len() + 16);
    out.extend_from_slice(info);
    out.extend_from_slice(nonce);
    out.extend_from_slice(plain);
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(*nonce),
            Aad::from(aad),
            &mut out[INFO_SIZE + NONCE_LEN..],
        )
        .map_err(|_| "AES-GCM sealing failed".to_string())?;
    out.extend_from_slice(tag.as_ref());
    Ok(out)
}

/// The AES-256-GCM key of one value: HKDF-SHA256 *Expand* of the seed (used as the
/// pseudo-random key, no Extract step) with the value's info.
fn derive(seed: &[u8; SEED_SIZE], info: &[u8]) -> Result<LessSafeKey, String> {
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, seed);
    let info = [info];
    let okm = prk
        .expand(&info, &ring::aead::AES_256_GCM)
        .map_err(|_| "failed to KDF expand seed with info".to_string())?;
    Ok(LessSafeKey::new(UnboundKey::from(okm)))
}

#[cfg(test)]
mod tests {
    //! Known answers: upstream's recorded extended-nonce value, and the fixed-randomness
    //! values of docs/research/encryption.md §6.4.

    use super::*;
    use crate::tests::hex;

    #[test]
    fn upstream_extended_nonce_value_opens() {
        let seed = hex("5d40323a820ff95561675e3b95e81867c5fdd561d35a88a2d08b08aa9d4fcf5c");
        let key = DataKey::new(EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed, &seed).unwrap();
        let data = hex(
            "2442759e33945fbad709db577a0f037fd8a709fc76979b8942209debcecb9d57efe3d6ff6a1ef6ee9a5003b9833b3043cec1e47b35175b151107a8d2416b0e296bbf66b5d102fcefdf9a78f293d271",
        );
        assert_eq!(key.open(&data, b"bamboo").unwrap(), b"pandas are the best");
        assert_eq!(
            key.open(&data, b"panda").unwrap_err(),
            "cipher: message authentication failed"
        );
        assert_eq!(key.open(&data[..31], b"bamboo").unwrap_err(), SHORT);
    }

    #[test]
    fn seeded_values_match_fixed_randomness() {
        let seed: [u8; 32] =
            hex("404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f")
                .try_into()
                .unwrap();
        let info: [u8; 32] =
            hex("606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f")
                .try_into()
                .unwrap();
        let nonce: [u8; 12] = hex("808182838485868788898a8b").try_into().unwrap();
        let aad = b"/registry/secrets/default/s1";
        let data = seal_derived(&seed, &info, &nonce, b"pandas are the best", aad).unwrap();
        let object = EncryptedObject {
            encrypted_data: data,
            key_id: "1".into(),
            encrypted_dek_source: b"QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=".to_vec(),
            annotations: BTreeMap::new(),
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        };
        let value = [
            b"k8s:enc:kms:v2:kms-provider:".as_slice(),
            &encode(&object).unwrap(),
        ]
        .concat();
        assert_eq!(
            value,
            hex(
                "6b38733a656e633a6b6d733a76323a6b6d732d70726f76696465723a0a4f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b10fbffebd08ceeaf2e62bfe8ec7b36d8981abcf48be0cc46af5e4c6b4d4cd081aedff21201311a2c5145464351305246526b64495355704c5445314f54314252556c4e5556565a5857466c6157317864586c383d2801"
            )
        );
    }

    #[test]
    fn plain_dek_values_of_older_servers_open() {
        let stored = hex(
            "0a2fdeadbeef01ca9a3b00000000c2e6722a08387e259fd3808bc592944d4f2262b5b0c1429702c4d201ba9c7b44525f9f1201311a2c5145464351305246526b64495355704c5445314f54314252556c4e5556565a5857466c6157317864586c383d",
        );
        let object = decode(&stored).unwrap();
        assert_eq!(object.encrypted_dek_source_type, 0);
        let dek = hex("404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f");
        let key = DataKey::new(EncryptedDekSourceType::AesGcmKey, &dek).unwrap();
        let plain = key
            .open(&object.encrypted_data, b"/registry/secrets/default/s1")
            .unwrap();
        assert_eq!(plain, b"pandas are the best");
    }

    #[test]
    fn invalid_objects_are_named_as_upstream_names_them() {
        let valid = EncryptedObject {
            encrypted_data: vec![1],
            key_id: "1".into(),
            encrypted_dek_source: vec![2],
            annotations: BTreeMap::new(),
            encrypted_dek_source_type: 1,
        };
        let refused = |change: fn(&mut EncryptedObject)| {
            let mut object = valid.clone();
            change(&mut object);
            validate(&object).unwrap_err()
        };
        assert_eq!(
            refused(|o| o.encrypted_dek_source_type = 7),
            "unknown encryptedDEKSourceType: 7"
        );
        assert_eq!(
            refused(|o| o.encrypted_data.clear()),
            "encrypted data is empty"
        );
        assert_eq!(
            refused(|o| o.encrypted_dek_source = vec![0; 1025]),
            "failed to validate encrypted DEK source: encrypted DEK source is 1025 bytes, which exceeds the max size of 1024"
        );
        assert_eq!(
            refused(|o| o.key_id.clear()),
            "failed to validate key id: keyID is empty"
        );
        assert!(
            refused(|o| {
                o.annotations.insert("local".into(), vec![]);
            })
            .starts_with("failed to validate annotations: annotations: Invalid value: \"local\"")
        );
        assert!(decode(b"\xff\xff").is_err());
        assert!(validate(&valid).is_ok());
    }

    #[test]
    fn cache_keys_cover_type_source_key_id_and_annotations() {
        let object = EncryptedObject {
            encrypted_data: vec![1],
            key_id: "1".into(),
            encrypted_dek_source: vec![2],
            annotations: BTreeMap::new(),
            encrypted_dek_source_type: 1,
        };
        let mut other = object.clone();
        other.encrypted_data = vec![9];
        assert_eq!(cache_key(&object), cache_key(&other));
        for change in [
            |o: &mut EncryptedObject| o.key_id = "2".into(),
            |o: &mut EncryptedObject| o.encrypted_dek_source_type = 0,
            |o: &mut EncryptedObject| {
                o.annotations.insert("a.example".into(), vec![]);
            },
        ] {
            let mut changed = object.clone();
            change(&mut changed);
            assert_ne!(cache_key(&object), cache_key(&changed));
        }
    }
}
