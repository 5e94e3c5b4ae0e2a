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
/// and the full key to start from, which is always under `prefix`. Rejects malformed tokens
/// as upstream's DecodeContinue does, with the detail of its "continue key is not valid"
/// errors; a start key that would climb out of the prefix (`../`) among them.
pub fn decode_continue(prefix: &str, token: &str) -> Result<(Revision, String)> {
    let invalid = |why: String| StorageError::InvalidContinue(why);
    let raw = URL_SAFE_NO_PAD.decode(token).map_err(|err| {
        invalid(format!(
            "illegal base64 data at input byte {}",
            bad_byte(token, &err)
        ))
    })?;
    let token: Token = serde_json::from_slice(&raw).map_err(|err| invalid(err.to_string()))?;
    if token.v != TOKEN_VERSION {
        return Err(invalid(format!(
            "server does not recognize this encoded version {}",
            token.v
        )));
    }
    if token.rv == 0 {
        return Err(invalid(format!(
            "incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
        )));
    }
    if token.start.is_empty() {
        return Err(invalid(format!(
            "encoded start key empty (version {TOKEN_VERSION})"
        )));
    }
    let start = token.start.strip_prefix('/').unwrap_or(&token.start);
    if !is_clean(start) {
        return Err(invalid(token.start.clone()));
    }
    Ok((token.rv, format!("{prefix}{start}")))
}

/// Whether `/<relative>` is its own clean path (Go's `path.Clean`): no empty, `.` or `..`
/// segment, so the key stays below the prefix it is appended to.
fn is_clean(relative: &str) -> bool {
    relative.is_empty()
        || relative
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
}

/// The offset Go's decoder reports for a token that is not unpadded URL-safe base64: the
/// first byte outside the alphabet (the base64 crate names the last byte of a 4n+1-byte
/// token even when an earlier one is bad).
fn bad_byte(token: &str, err: &base64::DecodeError) -> usize {
    let outside = token
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    match err {
        base64::DecodeError::InvalidByte(offset, _)
        | base64::DecodeError::InvalidLastSymbol(offset, _) => {
            outside.map_or(*offset, |first| first.min(*offset))
        }
        base64::DecodeError::InvalidPadding => token.find('=').unwrap_or(token.len()),
        base64::DecodeError::InvalidLength(length) => length.saturating_sub(1),
    }
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
    fn start_keys_never_leave_the_prefix_and_errors_read_as_upstream_s() {
        let why = |token: &str| match decode_continue("/registry/configmaps/", token) {
            Err(StorageError::InvalidContinue(why)) => why,
            other => panic!("{other:?}"),
        };
        let token = |json: &str| URL_SAFE_NO_PAD.encode(json);
        for start in ["../secrets/x", "a/../../b", "a//b", "./a", "a/."] {
            let forged = token(&format!(
                r#"{{"v":"meta.k8s.io/v1","rv":5,"start":"{start}"}}"#
            ));
            assert_eq!(why(&forged), start);
        }
        let padded = format!(
            "{}==",
            token(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"a"}"#)
        );
        assert_eq!(why(&padded), "illegal base64 data at input byte 55");
        assert_eq!(
            why(&token(r#"{"v":"meta.k8s.io/v2","rv":5,"start":"a"}"#)),
            "server does not recognize this encoded version meta.k8s.io/v2"
        );
        assert_eq!(
            why(&token(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            why(&token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#)),
            "encoded start key empty (version meta.k8s.io/v1)"
        );
        let rooted = token(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"/default/a"}"#);
        assert_eq!(
            decode_continue("/registry/configmaps/", &rooted).unwrap(),
            (5, "/registry/configmaps/default/a".to_string())
        );
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
