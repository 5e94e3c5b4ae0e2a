//! URL query parsing with Go's `url.ParseQuery` semantics, which kube-apiserver's filters use:
//! pairs split on `&`, key and value split at the first `=`, `+` and `%XX` decoded, and pairs
//! that do not decode (or hold a `;`) skipped.

use std::borrow::Cow;

/// The decoded `(key, value)` pairs of a raw query, in order.
pub fn pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.contains(';'))
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((unescape(key)?, unescape(value)?))
        })
}

/// The first value of `key`, as Go's `Values.Get` (`None` when absent).
pub fn first<'a>(query: &'a str, key: &str) -> Option<Cow<'a, str>> {
    pairs(query).find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A boolean option's value as upstream converts a query parameter into its options
/// (`runtime.Convert_Slice_string_To_bool`): false when absent, `0` or any case of `false`;
/// true for anything else (`yes`, `t`, `1`).
pub fn option_flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// Whether `key` is present at all, with or without a value.
pub fn has(query: &str, key: &str) -> bool {
    pairs(query).any(|(k, _)| k == key)
}

/// Decodes `+` and `%XX` escapes; `None` for a malformed escape or invalid UTF-8.
fn unescape(text: &str) -> Option<Cow<'_, str>> {
    if !text.contains(['%', '+']) {
        return Some(Cow::Borrowed(text));
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text
                    .get(i + 1..i + 3)
                    .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_true_unless_absent_zero_or_false() {
        let flags: Vec<bool> = [None, Some("0"), Some("FALSE"), Some("false")]
            .into_iter()
            .chain([Some("1"), Some("true"), Some("yes"), Some("t")])
            .map(option_flag)
            .collect();
        assert_eq!(flags, [false, false, false, false, true, true, true, true]);
    }

    #[test]
    fn decodes_like_go() {
        let query = "exclude=etcd&exclude=log&verbose&x=a%2Fb+c&bad=%zz&semi=a;b";
        let all: Vec<_> = pairs(query)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let expected = [
            ("exclude", "etcd"),
            ("exclude", "log"),
            ("verbose", ""),
            ("x", "a/b c"),
        ];
        assert_eq!(all, expected.map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(first(query, "exclude").as_deref(), Some("etcd"));
        assert!(has(query, "verbose"));
        assert!(!has(query, "bad"));
    }
}
