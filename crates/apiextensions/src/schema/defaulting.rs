//! Defaulting: `default`s of missing fields applied (upstream's defaulting algorithm), and
//! `null`s of non-nullable fields replaced by their default or dropped (its prunenulls).

use serde_json::Value;

use super::{Structural, additional_properties, flag, properties};

/// Applies the schema's defaults to a custom resource in place.
pub fn default(object: &mut Value, schema: &Structural) {
    default_value(object, &schema.root);
}

fn default_value(value: &mut Value, node: &Value) {
    match value {
        Value::Object(fields) => {
            if let Some(declared) = properties(node) {
                for (key, child) in declared {
                    let missing = !fields.contains_key(key);
                    let null = fields.get(key).is_some_and(Value::is_null);
                    match child.get("default") {
                        Some(default) if missing || (null && !flag(child, "nullable")) => {
                            fields.insert(key.clone(), default.clone());
                        }
                        _ if null && !flag(child, "nullable") => {
                            fields.remove(key);
                        }
                        _ => {}
                    }
                }
            }
            let declared = properties(node);
            let additional = additional_properties(node);
            for (key, child_value) in fields.iter_mut() {
                if let Some(child) = declared.and_then(|d| d.get(key)).or(additional) {
                    default_value(child_value, child);
                }
            }
            if let Some(additional) = additional
                && !flag(additional, "nullable")
            {
                fields.retain(|_, v| !v.is_null());
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items") {
                for item in items.iter_mut() {
                    default_value(item, item_schema);
                }
            }
        }
        _ => {}
    }
}
