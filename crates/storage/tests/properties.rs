//! Property-based tests of list continue tokens (`encode_continue` / `decode_continue`).
//!
//! A continue token comes back from the client, so it is untrusted input that picks the key
//! a list resumes from: a forged token must never panic the server and must never name a
//! key outside the list's prefix (another namespace's or another resource's objects).
//! Properties: tokens of keys under a prefix round-trip with their revision; any string,
//! and any base64 of token-shaped JSON, decodes without panicking, and what decodes lies
//! under the prefix and is accepted exactly when Go's `path.Clean` leaves the key unchanged
//! (upstream's check); revision 0 is always refused; bad base64 is reported at the first
//! byte outside the alphabet, as Go reports it.
//!
//! Each property runs proptest's default of 256 cases (well under a second). For a long
//! run: `PROPTEST_CASES=100000 cargo test -p kapi-storage --test properties`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kapi_storage::{LATEST_REVISION, Revision, StorageError, decode_continue, encode_continue};
use proptest::prelude::*;
use serde_json::json;

/// A list prefix as the stores use them: `/registry/<resource>/[<namespace>/]`.
fn prefix() -> impl Strategy<Value = String> {
    "/registry/[a-z.]{1,12}/([a-z0-9-]{1,8}/)?"
}

/// A key relative to the prefix that a list can resume from: non-empty segments, none of
/// them `.` or `..`, of any characters but `/` (NUL included: the stores resume at
/// `<last key>\0`).
fn relative_key() -> impl Strategy<Value = String> {
    let segment = prop_oneof!["[^/]{1,8}", "[a-z0-9]{1,8}\0?"]
        .prop_filter("not a dot segment", |s| s != "." && s != "..");
    prop::collection::vec(segment, 1..5).prop_map(|s| s.join("/"))
}

/// Any revision a token can carry: positive ones and the negative "latest" ones.
fn revision() -> impl Strategy<Value = Revision> {
    prop_oneof![1..=Revision::MAX, Just(LATEST_REVISION), Revision::MIN..0]
}

/// Go's `path.Clean`, written from its documentation: the shortest path equivalent to `p`
/// by purely lexical processing.
fn go_path_clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." if out.last().is_some_and(|s| *s != "..") => {
                out.pop();
            }
            ".." if rooted => {}
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The `start` of a forged token: pieces of path syntax in any order.
fn forged_start() -> impl Strategy<Value = String> {
    let pieces = &["/", "..", ".", "a", "b/", "%2e", "\0", "é", "\\", " ", "//"][..];
    prop_oneof![
        1 => any::<String>(),
        4 => prop::collection::vec(prop::sample::select(pieces), 0..8).prop_map(|p| p.concat()),
    ]
}

/// The text of a `StorageError::InvalidContinue`.
fn invalid_reason(result: kapi_storage::Result<(Revision, String)>) -> Option<String> {
    match result {
        Err(StorageError::InvalidContinue(why)) => Some(why),
        _ => None,
    }
}

proptest! {
    /// A token for any key under the prefix, at any non-zero revision, decodes to that key
    /// and revision; at revision 0 it is refused.
    #[test]
    fn tokens_round_trip(prefix in prefix(), rel in relative_key(), rv in revision()) {
        let key = format!("{prefix}{rel}");
        let token = encode_continue(&prefix, &key, rv);
        prop_assert_eq!(decode_continue(&prefix, &token).ok(), Some((rv, key.clone())));
        let zero = encode_continue(&prefix, &key, 0);
        prop_assert!(invalid_reason(decode_continue(&prefix, &zero)).is_some());
    }

    /// Any string decodes without panicking; what decodes lies under the prefix and has no
    /// `..` segment after it.
    #[test]
    fn arbitrary_tokens_stay_under_the_prefix(prefix in prefix(), token in any::<String>()) {
        match decode_continue(&prefix, &token) {
            Ok((rv, key)) => {
                prop_assert_ne!(rv, 0);
                let rel = key.strip_prefix(prefix.as_str());
                prop_assert!(rel.is_some_and(|r| !r.split('/').any(|s| s == "..")), "{}", key);
            }
            Err(err) => prop_assert!(matches!(err, StorageError::InvalidContinue(_))),
        }
    }

    /// A forged token of the right shape is accepted exactly when upstream accepts it: a
    /// known version, a non-zero revision, a non-empty start key that `path.Clean` leaves
    /// unchanged (with a `/` put in front when it has none); it then names
    /// `prefix + start` without that `/`.
    #[test]
    fn forged_tokens_are_judged_as_upstream_does(
        prefix in prefix(),
        version in prop_oneof![
            8 => Just("meta.k8s.io/v1"),
            1 => Just("meta.k8s.io/v2"),
            1 => Just(""),
        ],
        rv in prop_oneof![1 => Just(0), 9 => revision()],
        start in forged_start(),
    ) {
        let json = json!({"v": version, "rv": rv, "start": start});
        let token = URL_SAFE_NO_PAD.encode(json.to_string());
        let rooted = if start.starts_with('/') { start.clone() } else { format!("/{start}") };
        let accepted = version == "meta.k8s.io/v1"
            && rv != 0
            && !start.is_empty()
            && go_path_clean(&rooted) == rooted;
        let result = decode_continue(&prefix, &token);
        if accepted {
            prop_assert_eq!(result.ok(), Some((rv, format!("{prefix}{}", &rooted[1..]))));
        } else {
            prop_assert!(invalid_reason(result).is_some());
        }
    }

    /// Arbitrary bytes under valid base64 (not JSON, or JSON of another shape) are refused
    /// without panicking.
    #[test]
    fn base64_of_arbitrary_bytes_never_panics(
        prefix in prefix(),
        raw in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let result = decode_continue(&prefix, &URL_SAFE_NO_PAD.encode(&raw));
        prop_assert!(result.is_err(), "{:?}", result);
    }

    /// A token with a byte outside unpadded URL-safe base64 is refused naming the first
    /// such byte's offset, as Go's decoder does ("illegal base64 data at input byte N").
    #[test]
    fn bad_base64_names_the_first_bad_byte((token, first_bad) in bad_token()) {
        let want = format!("illegal base64 data at input byte {first_bad}");
        prop_assert_eq!(invalid_reason(decode_continue("/p/", &token)), Some(want));
    }

    /// For a token of 4n+1 bytes whose last byte is outside the alphabet the base64 crate
    /// reports that last byte; Go, and so kapi, name the first bad byte (`!AAA!`: byte 0).
    #[test]
    fn bad_base64_with_a_bad_last_byte_names_the_first_bad_byte((token, first_bad) in bad_token()) {
        // Into the case: padded to 4n bytes from the alphabet, then one bad byte.
        let pad = "A".repeat((4 - token.len() % 4) % 4);
        let token = format!("{token}{pad}!");
        prop_assert!(lone_bad_last_byte(&token));
        let want = format!("illegal base64 data at input byte {first_bad}");
        prop_assert_eq!(invalid_reason(decode_continue("/p/", &token)), Some(want));
    }
}

/// Whether `token` is 4n+1 bytes long and ends in a byte outside the alphabet (the case
/// where the base64 crate reports that byte instead of the first bad one).
fn lone_bad_last_byte(token: &str) -> bool {
    let in_alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    token.len() % 4 == 1 && !token.bytes().last().is_some_and(in_alphabet)
}

/// A token with a byte outside the alphabet, and that byte's offset.
fn bad_token() -> impl Strategy<Value = (String, usize)> {
    (
        "[A-Za-z0-9_-]{0,12}",
        "[^A-Za-z0-9_-]",
        "[A-Za-z0-9_=+/ -]{0,6}",
    )
        .prop_map(|(good, bad, tail)| (format!("{good}{bad}{tail}"), good.len()))
}

/// The model of `path.Clean` agrees with Go's documented examples.
#[test]
fn go_path_clean_model() {
    for (input, want) in [
        ("", "."),
        ("/", "/"),
        ("a/c", "a/c"),
        ("a//c", "a/c"),
        ("a/c/.", "a/c"),
        ("a/c/b/..", "a/c"),
        ("/../a/c", "/a/c"),
        ("/../a/b/../././/c", "/a/c"),
        ("../../a", "../../a"),
        ("/a/", "/a"),
    ] {
        assert_eq!(go_path_clean(input), want, "{input:?}");
    }
}
