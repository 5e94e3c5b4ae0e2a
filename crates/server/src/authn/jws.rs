//! Compact JWS, the form of JWTs, as kube-apiserver's token authenticators read them: the
//! three base64url parts split and decoded, and RS256 or ES256 signatures verified. Service
//! account tokens (kapi-builtin) and OIDC tokens (`oidc.rs`) both go through it.
//!
//! It verifies with ring, the provider rustls already runs on, rather than a JWT crate:
//! jsonwebtoken 10 brings aws-lc-rs or the RustCrypto stack as a second crypto library for
//! the two algorithms kube-apiserver's tokens use.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

/// The signature algorithms of the tokens kapi issues and accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Algorithm {
    /// The algorithm's name in a JWS header's `alg`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Es256 => "ES256",
            Algorithm::Rs256 => "RS256",
        }
    }
}

/// A public key in the form ring verifies with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyingKey {
    /// An uncompressed P-256 point.
    P256(Vec<u8>),
    /// A PKCS#1 RSAPublicKey, DER.
    Rsa(Vec<u8>),
    /// An RSA key's modulus and public exponent (big-endian), as a JWK gives them.
    RsaComponents {
        /// The modulus.
        n: Vec<u8>,
        /// The public exponent.
        e: Vec<u8>,
    },
}

impl VerifyingKey {
    /// The key of a JSON Web Key: `kty` RSA (`n`, `e`) or EC (`x`, `y`); `None` for any
    /// other key or undecodable coordinates.
    pub fn from_jwk(jwk: &Value) -> Option<VerifyingKey> {
        let decode = |field: &str| URL_SAFE_NO_PAD.decode(jwk[field].as_str()?).ok();
        match jwk["kty"].as_str()? {
            "RSA" => Some(VerifyingKey::RsaComponents {
                n: decode("n")?,
                e: decode("e")?,
            }),
            "EC" => Some(VerifyingKey::P256(
                [&[4u8][..], &decode("x")?, &decode("y")?].concat(),
            )),
            _ => None,
        }
    }

    /// The algorithm the key verifies.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            VerifyingKey::P256(_) => Algorithm::Es256,
            VerifyingKey::Rsa(_) | VerifyingKey::RsaComponents { .. } => Algorithm::Rs256,
        }
    }

    /// Whether `signature` over `message` verifies with this key.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let rsa = &signature::RSA_PKCS1_2048_8192_SHA256;
        match self {
            VerifyingKey::P256(point) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, signature)
                    .is_ok()
            }
            VerifyingKey::Rsa(der) => UnparsedPublicKey::new(rsa, der)
                .verify(message, signature)
                .is_ok(),
            VerifyingKey::RsaComponents { n, e } => RsaPublicKeyComponents { n, e }
                .verify(rsa, message, signature)
                .is_ok(),
        }
    }
}

/// A compact JWS split into its parts; its signature is not checked yet.
pub struct Jws<'a> {
    /// The decoded protected header.
    pub header: Value,
    /// The base64url claims (payload).
    claims: &'a str,
    /// What the signature covers: `<header>.<claims>` as sent.
    signed: &'a str,
    signature: Vec<u8>,
}

impl<'a> Jws<'a> {
    /// Splits `token` into three parts and decodes its header (JSON) and signature; `None`
    /// when it is not a compact JWS.
    pub fn parse(token: &'a str) -> Option<Jws<'a>> {
        let mut parts = token.split('.');
        let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        Some(Jws {
            header: serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?,
            claims,
            signed: &token[..header.len() + 1 + claims.len()],
            signature: URL_SAFE_NO_PAD.decode(signature).ok()?,
        })
    }

    /// The decoded claims (JSON), whether or not the signature verifies.
    pub fn claims(&self) -> Option<Value> {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(self.claims).ok()?).ok()
    }

    /// Whether `key` signed the token with the algorithm its header names.
    pub fn verified_by(&self, key: &VerifyingKey) -> bool {
        self.header["alg"].as_str() == Some(key.algorithm().name())
            && key.verifies(self.signed.as_bytes(), &self.signature)
    }
}

#[cfg(test)]
mod tests {
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use serde_json::json;

    use super::*;

    /// A token signed with a fresh P-256 key, and that key.
    fn signed(alg: &str, claims: &Value) -> (String, VerifyingKey) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let message = format!("{}.{}", encode(&json!({"alg": alg})), encode(claims));
        let signature = key.sign(&rng, message.as_bytes()).unwrap();
        let token = format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature));
        (
            token,
            VerifyingKey::P256(key.public_key().as_ref().to_vec()),
        )
    }

    #[test]
    fn verifies_with_the_signing_key_and_named_algorithm_only() {
        let claims = json!({"sub": "a"});
        let (token, key) = signed("ES256", &claims);
        let jws = Jws::parse(&token).unwrap();
        assert!(jws.verified_by(&key));
        assert_eq!(jws.claims(), Some(claims.clone()));
        let (_, other) = signed("ES256", &claims);
        assert!(!jws.verified_by(&other));
        let (mislabelled, key) = signed("RS256", &claims);
        assert!(!Jws::parse(&mislabelled).unwrap().verified_by(&key));
        let tampered = token.replacen('.', ".e30", 1);
        assert!(Jws::parse(&tampered).is_none_or(|jws| !jws.verified_by(&key)));
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        for token in ["", "a.b", "a.b.c.d", "!!.e30.AA", "e30.e30.!!"] {
            assert!(Jws::parse(token).is_none(), "{token}");
        }
        let jwk = json!({"kty": "EC", "x": "AQ", "y": "Ag"});
        assert_eq!(
            VerifyingKey::from_jwk(&jwk),
            Some(VerifyingKey::P256(vec![4, 1, 2]))
        );
        assert_eq!(VerifyingKey::from_jwk(&json!({"kty": "oct"})), None);
    }
}
