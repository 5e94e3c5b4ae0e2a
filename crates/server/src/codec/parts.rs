//! Decoding some of a stored object: the few fields a controller reads of many objects (a
//! role's rules, a binding's subjects) or the watch cache keeps of each, with the rest of the
//! object (managed fields, annotations, most of the metadata) skipped unparsed rather than
//! built into a `Value`.

use std::fmt;

use serde::Deserialize;
use serde::de::value::SeqAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The top-level `fields` of the stored object `stored`, and of its `metadata` the fields
/// `metadata`, as an object holding those of them it has.
pub fn decode_parts<S: AsRef<str>>(
    stored: &[u8],
    fields: &[S],
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
struct Parts<'a, S> {
    fields: &'a [S],
    metadata: Option<&'a [&'a str]>,
}

impl<S> Clone for Parts<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Parts<'_, S> {}

impl<'de, S: AsRef<str>> DeserializeSeed<'de> for Parts<'_, S> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, S: AsRef<str>> Visitor<'de> for Parts<'_, S> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed(self))? {
            match key {
                Key::Metadata(fields) => {
                    let inner = Metadata(Parts {
                        fields,
                        metadata: None,
                    });
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

/// The metadata's parts when it is an object; any other value (a damaged object's) is kept
/// whole, as a full decode keeps it, for the reader to find its fields missing.
struct Metadata<'a>(Parts<'a, &'a str>);

impl<'de> DeserializeSeed<'de> for Metadata<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Metadata<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        self.0.visit_map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq))
    }

    fn visit_unit<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::from(value))
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
struct KeySeed<'a, S>(Parts<'a, S>);

impl<'de, 'a, S: AsRef<str>> DeserializeSeed<'de> for KeySeed<'a, S> {
    type Value = Key<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key<'a>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, 'a, S: AsRef<str>> Visitor<'de> for KeySeed<'a, S> {
    type Value = Key<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: Error>(self, key: &str) -> Result<Key<'a>, E> {
        let Parts { fields, metadata } = self.0;
        Ok(match metadata {
            Some(metadata) if key == "metadata" => Key::Metadata(metadata),
            _ if fields.iter().any(|field| field.as_ref() == key) => Key::Kept(key.to_string()),
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
        for metadata in [
            "null",
            "1",
            "-1",
            "1.5",
            "true",
            r#""text""#,
            "[1, {\"a\": 2}]",
        ] {
            let stored = format!(r#"{{"metadata": {metadata}, "rules": [1]}}"#);
            let parts = decode_parts(stored.as_bytes(), &["rules"], &["name"]).unwrap();
            let whole: Value = serde_json::from_str(&stored).unwrap();
            assert_eq!(parts, whole, "{metadata}");
        }
        assert!(decode_parts(b"[1]", &["rules"], &[]).is_err());
        assert!(decode_parts(br#"{"rules": [1]} x"#, &["rules"], &[]).is_err());
        assert!(decode_parts(br#"{"other": [1, }"#, &["rules"], &[]).is_err());
    }
}
