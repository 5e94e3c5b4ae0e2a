//! The little PEM and DER the token keys need: PEM blocks, and the SubjectPublicKeyInfo of
//! an RSA or ECDSA P-256 key (read to verify with it, written to compute its key ID).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

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
const INTEGER: u8 = 0x02;

/// The blocks of a PEM document: each label and its decoded bytes (undecodable blocks are
/// skipped).
pub(super) fn pem_blocks(pem: &str) -> Vec<(String, Vec<u8>)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in pem.lines().map(str::trim) {
        if let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        {
            current = Some((label.to_string(), String::new()));
        } else if line.starts_with("-----END ") {
            if let Some((label, body)) = current.take()
                && let Ok(der) = STANDARD.decode(body)
            {
                blocks.push((label, der));
            }
        } else if let Some((_, body)) = current.as_mut()
            && !line.contains(':')
        {
            body.push_str(line);
        }
    }
    blocks
}

/// One PEM block.
pub(super) fn pem_encode(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|chunk| std::str::from_utf8(chunk).unwrap_or_default())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// One DER element: its tag, its contents and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (length, &rest[count..])
    };
    (rest.len() >= length).then(|| (tag, &rest[..length], &rest[length..]))
}

/// The modulus and public exponent of a PKCS#1 RSAPublicKey (big-endian, no leading zero).
pub(super) fn rsa_modulus_exponent(der: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (SEQUENCE, key, _) = element(der)? else {
        return None;
    };
    let (INTEGER, modulus, rest) = element(key)? else {
        return None;
    };
    let (INTEGER, exponent, _) = element(rest)? else {
        return None;
    };
    let strip = |n: &[u8]| n.strip_prefix(&[0]).unwrap_or(n).to_vec();
    Some((strip(modulus), strip(exponent)))
}

/// Reads a SubjectPublicKeyInfo: whether it is RSA, and the key (the PKCS#1 RSAPublicKey
/// DER, or the P-256 point); `None` for other algorithms.
pub(super) fn parse_subject_public_key_info(der: &[u8]) -> Option<(bool, Vec<u8>)> {
    let (SEQUENCE, info, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, algorithm, rest) = element(info)? else {
        return None;
    };
    let (BIT_STRING, bits, _) = element(rest)? else {
        return None;
    };
    let (OID, oid, parameters) = element(algorithm)? else {
        return None;
    };
    let key = bits.strip_prefix(&[0])?.to_vec();
    if oid == RSA_ENCRYPTION {
        return Some((true, key));
    }
    let curve = element(parameters).filter(|(tag, _, _)| *tag == OID)?.1;
    (oid == EC_PUBLIC_KEY && curve == PRIME256V1).then_some((false, key))
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
