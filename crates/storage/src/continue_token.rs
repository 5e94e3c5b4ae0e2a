//! List continue tokens in kube-apiserver's form: URL-safe base64 (no padding) of
//! `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<next key, relative to the prefix>"}`.
//! A token names the revision of the first page, so every page is read at that revision;
//! a negative revision ([`LATEST`]) continues at the latest one instead (what a 410 for a
//! token that outlived compaction offers).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::{Result, Revision, StorageError};

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// The revision of a token that continues at the latest revision (upstream encodes -1).
pub const LATEST: Revision = -1;

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: Revision,
    start: String,
}

/// Encodes the token for the page that starts at `next_key` (a key under `prefix`), read at
/// `revision`.
pub fn encode_continue(prefix: &str, next_key: &str, revision: Revision) -> String {
    let start = next_key.strip_prefix(prefix).unwrap_or(next_key);
    let token = Token {
        v: TOKEN_VERSION.to_string(),
        rv: revision,
        start: start.to_string(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).expect("token serializes"))
}

/// Decodes a token for a list of `prefix`: the revision to read at (negative: the latest)
/// and the full key to start from, which is always under `prefix`. Rejects malformed
/// tokens.
pub fn decode_continue(prefix: &str, token: &str) -> Result<(Revision, String)> {
    let invalid = |why: &str| StorageError::InvalidContinue(why.to_string());
    let raw = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid("not base64"))?;
    let token: Token = serde_json::from_slice(&raw).map_err(|_| invalid("not a continue token"))?;
    if token.v != TOKEN_VERSION {
        return Err(invalid("unknown continue token version"));
    }
    if token.rv == 0 {
        return Err(invalid("continue token has no resource version"));
    }
    if token.start.is_empty() {
        return Err(invalid("continue token has no start key"));
    }
    let key = format!("{prefix}{}", token.start);
    Ok((token.rv, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let token = encode_continue("/registry/configmaps/", "/registry/configmaps/a/b", 42);
        let (rv, key) = decode_continue("/registry/configmaps/", &token).unwrap();
        assert_eq!((rv, key.as_str()), (42, "/registry/configmaps/a/b"));
    }

    #[test]
    fn rejects_escapes_and_garbage() {
        for bad in [
            "",
            "!!",
            "e30",
            &URL_SAFE_NO_PAD.encode(r#"{"v":"x","rv":1,"start":"a"}"#),
        ] {
            assert!(decode_continue("/p/", bad).is_err(), "{bad}");
        }
        let empty = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#);
        assert!(decode_continue("/p/", &empty).is_err());
        let no_revision = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#);
        assert!(decode_continue("/p/", &no_revision).is_err());
    }

    #[test]
    fn latest_tokens_decode() {
        let token = encode_continue("/p/", "/p/a", LATEST);
        assert_eq!(
            decode_continue("/p/", &token).unwrap(),
            (LATEST, "/p/a".into())
        );
    }
}
