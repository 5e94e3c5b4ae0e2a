//! Pruning: fields a structural schema does not specify are dropped from custom resources
//! (upstream's pruning algorithm and objectmeta coercion), and reported as upstream reports
//! them for `fieldValidation` (`unknown field "spec.foo"`).

use serde_json::{Map, Value};

use super::{Structural, additional_properties, flag, join, properties};

/// The fields of ObjectMeta: whatever else `metadata` carries is dropped.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Drops the unknown fields of a custom resource in place; returns their paths.
pub fn prune(object: &mut Value, schema: &Structural) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_resource(object, &schema.root, "", &mut pruned);
    pruned
}

/// Drops the unknown fields of a value of the schema node `node` (not a resource root unless
/// the node is an embedded resource); returns whether anything was dropped.
pub fn prune_node(value: &mut Value, node: &Value) -> bool {
    let mut pruned = Vec::new();
    prune_value(value, node, "", &mut pruned);
    !pruned.is_empty()
}

/// A resource (the root or an embedded one): apiVersion, kind and metadata are kept whatever
/// the schema says, metadata cut to ObjectMeta's fields.
fn prune_resource(object: &mut Value, node: &Value, path: &str, pruned: &mut Vec<String>) {
    let Some(fields) = object.as_object_mut() else {
        return;
    };
    if let Some(metadata) = fields.get_mut("metadata").and_then(Value::as_object_mut) {
        let metadata_path = join(path, "metadata");
        metadata.retain(|key, _| {
            let known = OBJECT_META_FIELDS.contains(&key.as_str());
            if !known {
                pruned.push(join(&metadata_path, key));
            }
            known
        });
    }
    prune_fields(
        fields,
        node,
        path,
        &["apiVersion", "kind", "metadata"],
        pruned,
    );
}

/// The fields of one object value under `node`, except `keep` (handled by the caller).
fn prune_fields(
    fields: &mut Map<String, Value>,
    node: &Value,
    path: &str,
    keep: &[&str],
    pruned: &mut Vec<String>,
) {
    let preserve = flag(node, "x-kubernetes-preserve-unknown-fields");
    let declared = properties(node);
    let additional = additional_properties(node);
    let mut unknown = Vec::new();
    for (key, value) in fields.iter_mut() {
        if keep.contains(&key.as_str()) {
            continue;
        }
        let child_path = join(path, key);
        match declared.and_then(|d| d.get(key)).or(additional) {
            Some(child) => prune_value(value, child, &child_path, pruned),
            None if preserve || node.get("additionalProperties") == Some(&Value::Bool(true)) => {}
            None => unknown.push(key.clone()),
        }
    }
    for key in unknown {
        fields.remove(&key);
        pruned.push(join(path, &key));
    }
}

fn prune_value(value: &mut Value, node: &Value, path: &str, pruned: &mut Vec<String>) {
    if flag(node, "x-kubernetes-embedded-resource") {
        prune_resource(value, node, path, pruned);
        return;
    }
    match value {
        Value::Object(fields) => prune_fields(fields, node, path, &[], pruned),
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(item, item_schema, &format!("{path}[{i}]"), pruned);
                }
            }
        }
        _ => {}
    }
}
