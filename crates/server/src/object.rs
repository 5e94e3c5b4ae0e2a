//! Accessors for objects held as JSON (`metadata.name` and the like), as kube-apiserver's
//! `meta.Accessor` gives them for typed objects.

use serde_json::{Map, Value};

/// The object's `metadata`, created if missing; `None` if the object is not a JSON object.
pub fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let fields = object.as_object_mut()?;
    let meta = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// A string field of `metadata`, or "".
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object["metadata"][field].as_str().unwrap_or_default()
}

/// Sets a field of `metadata` (a no-op on non-objects).
pub fn set_meta(object: &mut Value, field: &str, value: Value) {
    if let Some(meta) = metadata_mut(object) {
        meta.insert(field.to_string(), value);
    }
}

/// Removes a field of `metadata`.
pub fn remove_meta(object: &mut Value, field: &str) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove(field);
    }
}

pub fn name(object: &Value) -> &str {
    meta_str(object, "name")
}

pub fn namespace(object: &Value) -> &str {
    meta_str(object, "namespace")
}

pub fn resource_version(object: &Value) -> &str {
    meta_str(object, "resourceVersion")
}

pub fn uid(object: &Value) -> &str {
    meta_str(object, "uid")
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

/// Whether `metadata.finalizers` is non-empty.
pub fn has_finalizers(object: &Value) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|finalizers| !finalizers.is_empty())
}

/// Adds `finalizer` to `metadata.finalizers` unless present.
pub fn add_finalizer(object: &mut Value, finalizer: &str) {
    let Some(meta) = metadata_mut(object) else {
        return;
    };
    let finalizers = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if finalizers.is_null() {
        // A read of a stored object may hold `null` where Go leaves an empty list out.
        *finalizers = Value::Array(Vec::new());
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == finalizer)
    {
        list.push(Value::String(finalizer.to_string()));
    }
}

/// Sets `metadata.generation` to `old`'s plus one when the spec changed, else to `old`'s.
/// The strategies of resources with a spec and a generation call this on update.
pub fn bump_generation_on_spec_change(new: &mut Value, old: &Value) {
    let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
    let next = if new.get("spec") != old.get("spec") {
        generation + 1
    } else {
        generation
    };
    set_meta(new, "generation", Value::from(next));
}
