//! The walk that evaluates a schema's rules over an object, pairing each value with its old
//! value as upstream's CEL validator does: properties and map entries by name, items of a
//! `x-kubernetes-list-type: map` list by their keys, and items of other lists not at all (so
//! their transition rules do not run). kube-cel's own walk pairs list items by index, which
//! compares the wrong items once a list-map is reordered or grows in front; here kube-cel
//! evaluates one node's rules at a time.

use std::collections::BTreeMap;

use kube_cel::compilation::{CompiledSchema, compile_schema};
use kube_cel::validation::ValidationError;
use serde_json::Value;

/// A schema node with rules at it or below it.
pub(super) struct RuleNode {
    /// This node's own rules, compiled over the node's schema with the rules below removed
    /// (the schema still tells kube-cel the formats of the values).
    pub own: Option<CompiledSchema>,
    pub properties: BTreeMap<String, RuleNode>,
    pub items: Option<Box<RuleNode>>,
    /// The node of a map's values (`additionalProperties`).
    pub values: Option<Box<RuleNode>>,
    /// The keys of a list-map (`x-kubernetes-list-map-keys`), by which old items are found.
    map_keys: Option<Vec<String>>,
}

impl RuleNode {
    /// The rule tree of `schema`; `None` when it has no rules.
    pub fn build(schema: &Value) -> Option<RuleNode> {
        let has_own = schema["x-kubernetes-validations"]
            .as_array()
            .is_some_and(|rules| !rules.is_empty());
        let child = |key: &str| {
            schema
                .get(key)
                .filter(|s| s.is_object())
                .and_then(RuleNode::build)
                .map(Box::new)
        };
        let properties: BTreeMap<String, RuleNode> = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(name, property)| Some((name.clone(), RuleNode::build(property)?)))
            .collect();
        let (items, values) = (child("items"), child("additionalProperties"));
        if !has_own && properties.is_empty() && items.is_none() && values.is_none() {
            return None;
        }
        let map_keys = (schema["x-kubernetes-list-type"] == "map").then(|| {
            schema["x-kubernetes-list-map-keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        });
        Some(RuleNode {
            own: has_own.then(|| compile_schema(&without_rules_below(schema))),
            properties,
            items,
            values,
            map_keys,
        })
    }

    /// Evaluates the rules on `new` at `path` (kube-cel's path form: `spec.items[0]`), each
    /// transition rule against its `old` value; failures go to `failed` with their paths.
    pub fn validate(
        &self,
        new: &Value,
        old: Option<&Value>,
        path: &str,
        failed: &mut Vec<ValidationError>,
    ) {
        if new.is_null() {
            return;
        }
        if let Some(own) = &self.own {
            for mut failure in kube_cel::validation::validate_compiled(own, new, old) {
                failure.field_path = join(path, &failure.field_path);
                failed.push(failure);
            }
        }
        match new {
            Value::Object(map) => {
                for (name, node) in &self.properties {
                    if let Some(value) = map.get(name) {
                        let old = old.and_then(|o| o.get(name));
                        node.validate(value, old, &join(path, name), failed);
                    }
                }
                if let Some(node) = &self.values {
                    for (key, value) in map {
                        let old = old.and_then(|o| o.get(key));
                        node.validate(value, old, &format!("{path}[{key}]"), failed);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(node) = &self.items {
                    let old_items = old.and_then(Value::as_array);
                    for (i, item) in items.iter().enumerate() {
                        let old = old_items.and_then(|olds| self.correlated(item, olds));
                        node.validate(item, old, &format!("{path}[{i}]"), failed);
                    }
                }
            }
            _ => {}
        }
    }

    /// The old item with `item`'s keys, in a list-map; none in other lists.
    fn correlated<'a>(&self, item: &Value, olds: &'a [Value]) -> Option<&'a Value> {
        let keys = self.map_keys.as_ref()?;
        olds.iter()
            .find(|old| keys.iter().all(|key| old.get(key) == item.get(key)))
    }
}

/// `schema` with the rules of every node below it removed.
fn without_rules_below(schema: &Value) -> Value {
    let mut stripped = schema.clone();
    if let Some(map) = stripped.as_object_mut() {
        for (key, child) in map.iter_mut() {
            if key != "x-kubernetes-validations" {
                strip_rules(child);
            }
        }
    }
    stripped
}

/// Removes `x-kubernetes-validations` from `schema` and everything in it.
fn strip_rules(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("x-kubernetes-validations");
            map.values_mut().for_each(strip_rules);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_rules),
        _ => {}
    }
}

/// A failure's path (relative to its node, `.field` for a rule's fieldPath) under `path`.
fn join(path: &str, relative: &str) -> String {
    match (path, relative) {
        (path, "") => path.to_string(),
        ("", relative) => relative.trim_start_matches('.').to_string(),
        (path, relative) if relative.starts_with(['.', '[']) => format!("{path}{relative}"),
        (path, relative) => format!("{path}.{relative}"),
    }
}
