//! Decoding some of a stored object: the few fields a controller reads of many objects
//! (a role's rules, a binding's subjects), with the rest of the object (managed fields,
//! annotations, most of the metadata) skipped unparsed rather than built into a `Value`.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

/// The top-level `fields` of the stored object `stored`, and of its `metadata` the fields
/// `metadata`, as an object holding those of them it has.
pub fn decode_parts(
    stored: &[u8],
    fields: &[&str],
    metadata: &[&str],
) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(stored);
    let parts = Parts {
        fields,
        metadata: Some(metadata),
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(parts)
}

/// The fields of an object to keep, and of its `metadata` (`None` inside the metadata).
#[derive(Clone, Copy)]
struct Parts<'a> {
    fields: &'a [&'a str],
    metadata: Option<&'a [&'a str]>,
}

impl<'de> DeserializeSeed<'de> for Parts<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Parts<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed(self))? {
            match key {
                Key::Metadata(fields) => {
                    let inner = Parts {
                        fields,
                        metadata: None,
                    };
                    kept.insert("metadata".to_string(), map.next_value_seed(inner)?);
                }
                Key::Kept(name) => {
                    kept.insert(name, map.next_value()?);
                }
                Key::Skipped => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(kept))
    }
}

/// What a key of the object is to [`Parts`].
enum Key<'a> {
    /// `metadata`, of which these fields are kept.
    Metadata(&'a [&'a str]),
    Kept(String),
    Skipped,
}

/// Reads a key as what it is to the parts, allocating only for a kept one.
struct KeySeed<'a>(Parts<'a>);

impl<'de, 'a> DeserializeSeed<'de> for KeySeed<'a> {
    type Value = Key<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key<'a>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, 'a> Visitor<'de> for KeySeed<'a> {
    type Value = Key<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: Error>(self, key: &str) -> Result<Key<'a>, E> {
        let Parts { fields, metadata } = self.0;
        Ok(match metadata {
            Some(metadata) if key == "metadata" => Key::Metadata(metadata),
            _ if fields.contains(&key) => Key::Kept(key.to_string()),
            _ => Key::Skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keeps_only_the_parts_asked_for() {
        let stored = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "r", "labels": {"a": "b"}, "managedFields": [{"manager": "m"}]},
            "rules": [{"verbs": ["get"]}],
            "aggregationRule": null,
            "escaped\u{0041}": 1,
        })
        .to_string();
        let parts = decode_parts(stored.as_bytes(), &["rules", "aggregationRule"], &["name"]);
        assert_eq!(
            parts.unwrap(),
            json!({"metadata": {"name": "r"}, "rules": [{"verbs": ["get"]}], "aggregationRule": null})
        );
        let escaped = br#"{"rul\u0065s": [1], "metadata": {"n\u0061me": "x"}}"#;
        assert_eq!(
            decode_parts(escaped, &["rules"], &["name"]).unwrap(),
            json!({"rules": [1], "metadata": {"name": "x"}})
        );
        assert!(decode_parts(b"[1]", &["rules"], &[]).is_err());
        assert!(decode_parts(br#"{"rules": [1]} x"#, &["rules"], &[]).is_err());
        assert!(decode_parts(br#"{"other": [1, }"#, &["rules"], &[]).is_err());
    }
}
