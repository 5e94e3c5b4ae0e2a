//! The duplicate keys of a YAML body, as upstream's strict decoding reports them: it passes
//! YAML bodies through sigs.k8s.io/yaml's YAMLToJSONStrict, whose go-yaml error names the
//! line of the repeated key (`yaml: unmarshal errors:\n  line 7: key "replicas" already set
//! in map`), while the lenient conversion keeps the last value.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// go-yaml's line about a YAML body's first repeated key (`line 7: key "a" already set in
/// map`), if it repeats one.
pub(super) fn duplicate_key(body: &[u8]) -> Option<String> {
    let err = serde_yaml_ng::from_slice::<Walk>(body).err()?;
    let message = err.to_string();
    let (_, key) = message.split_once(DUPLICATE)?;
    let key = key.split(" at line ").next().unwrap_or(key);
    // The error is located at the mapping's first key; go-yaml names the repeated one's line.
    let (line, column) = err.location().map_or((1, 1), |at| (at.line(), at.column()));
    let text = String::from_utf8_lossy(body);
    let line = repeated_key_line(&text, line, column, key).unwrap_or(line);
    Some(format!("line {line}: key {key} already set in map"))
}

/// The strict decoding error of go-yaml's `lines`.
pub(super) fn unmarshal_errors(lines: &[String]) -> String {
    format!("yaml: unmarshal errors:\n  {}", lines.join("\n  "))
}

/// The line of the second key `printed` (as [`KeyText`] prints it) of the block mapping
/// whose first key is at `line` and `column`; `None` when it is not found there (a flow
/// mapping: the first line is as good).
fn repeated_key_line(text: &str, line: usize, column: usize, printed: &str) -> Option<usize> {
    let plain = printed.trim_matches('"');
    let spellings = [
        plain.to_string(),
        format!("\"{plain}\""),
        format!("'{plain}'"),
    ];
    let indent = column.saturating_sub(1);
    let is_key = |rest: &str| {
        spellings.iter().any(|key| {
            rest.strip_prefix(key.as_str())
                .is_some_and(|after| after.trim_start().starts_with(':'))
        })
    };
    let mut seen = 0;
    for (i, content) in text.lines().enumerate().skip(line.saturating_sub(1)) {
        let first = i + 1 == line;
        let indented = first || content.len() > indent && content[..indent].trim().is_empty();
        if indented && content.get(indent..).is_some_and(is_key) {
            seen += 1;
            if seen == 2 {
                return Some(i + 1);
            }
        }
    }
    None
}

/// The prefix of the error the walk stops with at a repeated key.
const DUPLICATE: &str = "duplicate key ";

/// A walk over any YAML value that fails at the first mapping key seen twice.
struct Walk;

impl<'de> Deserialize<'de> for Walk {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Walk, D::Error> {
        deserializer.deserialize_any(WalkVisitor)
    }
}

struct WalkVisitor;

impl<'de> Visitor<'de> for WalkVisitor {
    type Value = Walk;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_str<E>(self, _: &str) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_unit<E>(self) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_none<E>(self) -> Result<Walk, E> {
        Ok(Walk)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Walk, D::Error> {
        Walk::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Walk, A::Error> {
        while seq.next_element::<Walk>()?.is_some() {}
        Ok(Walk)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Walk, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key_seed(KeyText)? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("{DUPLICATE}{key}")));
            }
            map.next_value::<Walk>()?;
        }
        Ok(Walk)
    }
}

/// A mapping key as go-yaml's `%#v` prints it in its message: a string quoted, a number or
/// bool as it is.
struct KeyText;

impl<'de> DeserializeSeed<'de> for KeyText {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyText {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E>(self, key: &str) -> Result<String, E> {
        Ok(kapi_apimachinery::quote(key))
    }

    fn visit_bool<E>(self, key: bool) -> Result<String, E> {
        Ok(key.to_string())
    }

    fn visit_i64<E>(self, key: i64) -> Result<String, E> {
        Ok(key.to_string())
    }

    fn visit_u64<E>(self, key: u64) -> Result<String, E> {
        Ok(key.to_string())
    }

    fn visit_f64<E>(self, key: f64) -> Result<String, E> {
        Ok(key.to_string())
    }

    fn visit_unit<E>(self) -> Result<String, E> {
        Ok("<nil>".into())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
        while seq.next_element::<Walk>()?.is_some() {}
        Ok("[...]".into())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<String, A::Error> {
        WalkVisitor.visit_map(map)?;
        Ok("map[...]".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_named_with_their_line() {
        let body =
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: one\n  a: two\n";
        assert_eq!(
            duplicate_key(body).as_deref(),
            Some("line 7: key \"a\" already set in map")
        );
        assert_eq!(duplicate_key(b"a: 1\nb: {c: 2}\n"), None);
        assert_eq!(
            duplicate_key(b"items:\n- name: x\n  port: 1\n  name: y\n").as_deref(),
            Some("line 4: key \"name\" already set in map")
        );
        assert_eq!(
            duplicate_key(b"spec: {replicas: 1, replicas: 2}\n").as_deref(),
            Some("line 1: key \"replicas\" already set in map")
        );
        assert_eq!(duplicate_key(b"not: [valid"), None);
    }
}
