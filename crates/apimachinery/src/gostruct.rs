//! Go's `encoding/json` text of upstream's internal API types, as field errors print a
//! non-scalar bad value (since 1.34, `json.Marshal` of the value). The internal types carry
//! no JSON tags, so the text has Go's field names, every field in declaration order, and
//! nil pointers, slices and maps as `null`. Each API's layout (which fields, in which order)
//! lives with its validation; this writes the pieces.

use serde_json::Value;

use crate::gofmt;

/// A JSON text being written, field by field.
#[derive(Default)]
pub struct StructJson(String);

impl StructJson {
    /// The text written.
    pub fn finish(self) -> String {
        self.0
    }

    /// A nil pointer, slice or map.
    pub fn null(&mut self) {
        self.0.push_str("null");
    }

    /// An empty struct (`{}`).
    pub fn empty(&mut self) {
        self.0.push_str("{}");
    }

    /// `{"Name":<value>,...}`: each field written by `write` after its name.
    pub fn object<'a>(
        &mut self,
        fields: impl IntoIterator<Item = &'a str>,
        mut write: impl FnMut(&mut Self, &str),
    ) {
        self.0.push('{');
        for (i, name) in fields.into_iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            self.raw(&Value::from(name));
            self.0.push(':');
            write(self, name);
        }
        self.0.push('}');
    }

    /// A pointer to a struct: written by `write` when `value` is an object, else `null`.
    pub fn pointer(&mut self, value: &Value, write: impl FnOnce(&mut Self, &Value)) {
        match value.is_object() {
            true => write(self, value),
            false => self.null(),
        }
    }

    /// `[...]` of a JSON array's items, or `null` when it is not one.
    pub fn list(&mut self, value: &Value, mut item: impl FnMut(&mut Self, &Value)) {
        let Some(items) = value.as_array() else {
            return self.null();
        };
        self.0.push('[');
        for (i, value) in items.iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            item(self, value);
        }
        self.0.push(']');
    }

    /// `{"key":...}` of a JSON object's entries, keys sorted as Go sorts a map's, or `null`
    /// when it is not one.
    pub fn map(&mut self, value: &Value, mut item: impl FnMut(&mut Self, &Value)) {
        let Some(map) = value.as_object() else {
            return self.null();
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        self.0.push('{');
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            self.raw(&Value::from(key.as_str()));
            self.0.push(':');
            item(self, &map[key.as_str()]);
        }
        self.0.push('}');
    }

    /// Plain JSON (a `JSON` field, a pointer to a string or bool, `[]string`) as Go marshals
    /// the decoded value: `null` when absent.
    pub fn raw(&mut self, value: &Value) {
        self.0.push_str(&gofmt::json(value));
    }

    /// A `string` field: `""` when absent.
    pub fn text(&mut self, value: &Value) {
        self.raw(&Value::from(value.as_str().unwrap_or_default()));
    }

    /// A `bool` field: `false` when absent.
    pub fn flag(&mut self, value: &Value) {
        self.0.push_str(match value.as_bool().unwrap_or(false) {
            true => "true",
            false => "false",
        });
    }

    /// An integer field: `0` when absent.
    pub fn int(&mut self, value: &Value) {
        self.0.push_str(&value.as_i64().unwrap_or(0).to_string());
    }

    /// A pointer to an integer: `null` when absent.
    pub fn optional_int(&mut self, value: &Value) {
        match value.as_i64() {
            Some(n) => self.0.push_str(&n.to_string()),
            None => self.null(),
        }
    }

    /// A pointer to a float64 (`null` when absent), as Go writes one (`1`, `1.5`, `1e+21`).
    pub fn number(&mut self, number: Option<f64>) {
        match number {
            Some(n) => self.0.push_str(&gofmt::json_float(n)),
            None => self.null(),
        }
    }

    /// A `[]string`: `null` when absent.
    pub fn strings(&mut self, value: &Value) {
        self.list(value, StructJson::text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(write: impl FnOnce(&mut StructJson)) -> String {
        let mut out = StructJson::default();
        write(&mut out);
        out.finish()
    }

    #[test]
    fn structs_have_every_field_in_order_nil_ones_null() {
        let spec = json!({"name": "a<b", "items": ["x"], "limit": 3});
        let text = written(|out| {
            out.object(
                ["Name", "Items", "Limit", "Missing", "Flag"],
                |out, field| match field {
                    "Name" => out.text(&spec["name"]),
                    "Items" => out.strings(&spec["items"]),
                    "Limit" => out.optional_int(&spec["limit"]),
                    "Missing" => out.pointer(&spec["missing"], |out, _| out.empty()),
                    _ => out.flag(&spec["flag"]),
                },
            )
        });
        // encoding/json escapes <, > and & in strings.
        assert_eq!(
            text,
            r#"{"Name":"a\u003cb","Items":["x"],"Limit":3,"Missing":null,"Flag":false}"#
        );
    }

    #[test]
    fn maps_are_sorted_and_numbers_written_as_go_writes_them() {
        let map = json!({"b": 1, "a": 2});
        assert_eq!(
            written(|out| out.map(&map, StructJson::int)),
            r#"{"a":2,"b":1}"#
        );
        assert_eq!(written(|out| out.number(Some(1.0))), "1");
        assert_eq!(written(|out| out.number(Some(1e21))), "1e+21");
        assert_eq!(written(|out| out.number(None)), "null");
        assert_eq!(
            written(|out| out.list(&Value::Null, StructJson::raw)),
            "null"
        );
        assert_eq!(
            written(|out| out.raw(&json!({"z": [1.5], "a": null}))),
            r#"{"a":null,"z":[1.5]}"#
        );
    }
}
