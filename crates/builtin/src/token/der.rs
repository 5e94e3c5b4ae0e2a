//! The PEM and DER the token keys need: PEM blocks and SubjectPublicKeyInfos read with
//! x509-parser, and the SubjectPublicKeyInfo of an RSA or ECDSA P-256 key written as Go's
//! MarshalPKIXPublicKey writes it (to compute its key ID).

use x509_parser::oid_registry::{OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_PKCS1_RSAENCRYPTION};
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;
use x509_parser::public_key::RSAPublicKey;
use x509_parser::x509::SubjectPublicKeyInfo;

/// The rsaEncryption algorithm identifier's OID.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// The id-ecPublicKey OID.
const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// The prime256v1 (P-256) curve's OID.
const PRIME256V1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

const SEQUENCE: u8 = 0x30;
const BIT_STRING: u8 = 0x03;
const OID: u8 = 0x06;
const NULL: u8 = 0x05;

/// The blocks of a PEM document: each label and its decoded bytes (undecodable blocks are
/// skipped).
pub(super) fn pem_blocks(pem: &str) -> Vec<(String, Vec<u8>)> {
    Pem::iter_from_buffer(pem.as_bytes())
        .filter_map(Result::ok)
        .map(|block| (block.label, block.contents))
        .collect()
}

/// The modulus and public exponent of a PKCS#1 RSAPublicKey (big-endian, no leading zero).
pub(super) fn rsa_modulus_exponent(der: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (_, key) = RSAPublicKey::from_der(der).ok()?;
    let strip = |n: &[u8]| n.strip_prefix(&[0]).unwrap_or(n).to_vec();
    Some((strip(key.modulus), strip(key.exponent)))
}

/// Reads a SubjectPublicKeyInfo: whether it is RSA, and the key (the PKCS#1 RSAPublicKey
/// DER, or the P-256 point); `None` for other algorithms and curves.
pub(super) fn parse_subject_public_key_info(der: &[u8]) -> Option<(bool, Vec<u8>)> {
    let (_, info) = SubjectPublicKeyInfo::from_der(der).ok()?;
    let key = info.subject_public_key.data.to_vec();
    let algorithm = &info.algorithm;
    if algorithm.algorithm == OID_PKCS1_RSAENCRYPTION {
        return Some((true, key));
    }
    let curve = algorithm.parameters.as_ref()?.as_oid().ok()?;
    (algorithm.algorithm == OID_KEY_TYPE_EC_PUBLIC_KEY && curve == OID_EC_P256)
        .then_some((false, key))
}

/// A DER element of `tag` around `contents`.
fn encode(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let length = contents.len();
    if length < 0x80 {
        out.push(length as u8);
    } else {
        let bytes: Vec<u8> = length
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// The SubjectPublicKeyInfo DER of an RSA key (PKCS#1 DER) or a P-256 point, as Go's
/// MarshalPKIXPublicKey writes it.
pub(super) fn subject_public_key_info(rsa: bool, key: &[u8]) -> Vec<u8> {
    let algorithm = if rsa {
        [encode(OID, RSA_ENCRYPTION), encode(NULL, &[])].concat()
    } else {
        [encode(OID, EC_PUBLIC_KEY), encode(OID, PRIME256V1)].concat()
    };
    let bits = [&[0u8][..], key].concat();
    let info = [encode(SEQUENCE, &algorithm), encode(BIT_STRING, &bits)].concat();
    encode(SEQUENCE, &info)
}
