//! The building blocks the built-in kinds' strategies share, as upstream's registry
//! strategies (pkg/registry/*/*/strategy.go) each repeat them: the status a create starts
//! from and an update keeps, how `metadata.generation` starts and grows, and the core
//! metadata rules every core type adds to its validation.

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::object::set_meta;
use kapi_server::resource::Strategy;
use serde_json::{Map, Value};

use crate::util::{fields_mut, validate_core_metadata_finalizers};

/// Replaces the status of an object (PrepareForCreate of kinds whose zero status has fields
/// Go always writes).
pub(crate) fn set_status(object: &mut Value, status: Value) {
    fields_mut(object).insert("status".into(), status);
}

/// PrepareForCreate of kinds with a status: the status starts as the zero value, which Go
/// writes as `{}` when all its fields are optional.
pub(crate) fn reset_status(object: &mut Value) {
    set_status(object, Value::Object(Map::new()));
}

/// An update of the main resource keeps the stored status.
pub(crate) fn carry_status(new: &mut Value, old: &Value) {
    if let Some(fields) = new.as_object_mut() {
        match old.get("status") {
            Some(status) => fields.insert("status".into(), status.clone()),
            None => fields.remove("status"),
        };
    }
}

/// Sets `metadata.generation`.
pub(crate) fn set_generation(object: &mut Value, generation: i64) {
    set_meta(object, "generation", Value::from(generation));
}

/// PrepareForCreate of kinds that keep a generation: it starts at 1.
pub(crate) fn start_generation(object: &mut Value) {
    set_generation(object, 1);
}

/// PrepareForCreate of kinds with a status and a generation: generation 1 and the initial
/// status (whatever the client sent is dropped).
pub(crate) fn reset_for_create(object: &mut Value, status: Value) {
    start_generation(object);
    set_status(object, status);
}

/// PrepareForUpdate of kinds whose generation follows the whole object: the registry has
/// carried the old generation over; it grows by one when anything but metadata and status
/// changed.
pub(crate) fn track_generation(new: &mut Value, old: &Value) {
    let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
    let changed = generation_relevant(new) != generation_relevant(old);
    set_generation(new, generation + i64::from(changed));
}

/// The part of an object that counts for its generation: everything but metadata, status
/// and the type fields.
fn generation_relevant(object: &Value) -> Vec<(&String, &Value)> {
    match object.as_object() {
        Some(fields) => fields
            .iter()
            .filter(|(key, _)| {
                !matches!(key.as_str(), "metadata" | "status" | "apiVersion" | "kind")
            })
            .collect(),
        None => Vec::new(),
    }
}

/// The name validator of kinds whose names are free (CertificateSigningRequests, as
/// upstream's ValidateCertificateRequestName) or checked by their own validation
/// (APIServices).
pub(crate) fn any_name(_name: &str, _prefix: bool) -> Vec<String> {
    Vec::new()
}

/// Validate of a core type: upstream validates its metadata with core's ValidateObjectMeta,
/// which adds the rules of `metadata.finalizers` to the generic checks; then `errs`, the
/// kind's own.
pub(crate) fn validate_core(object: &Value, errs: FieldErrors) -> FieldErrors {
    let mut all = validate_core_metadata_finalizers(object);
    all.extend(errs);
    all
}

/// ValidateUpdate of a core type: the new metadata is checked against the old one and again
/// as new (`strategy`'s Validate), so finalizer errors appear twice, as upstream reports
/// them; then `errs`, the kind's update rules.
pub(crate) fn validate_core_update(
    strategy: &impl Strategy,
    new: &Value,
    errs: FieldErrors,
) -> FieldErrors {
    let mut all = validate_core_metadata_finalizers(new);
    all.extend(strategy.validate(new));
    all.extend(errs);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generation_follows_changes_outside_metadata_and_status() {
        let mut created = json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"y": 1}});
        reset_for_create(&mut created, json!({}));
        assert_eq!(created["metadata"]["generation"], 1);
        assert_eq!(created["status"], json!({}));
        let mut same = json!({"metadata": {"name": "a", "labels": {"l": "v"}}, "spec": {"x": 1}});
        track_generation(&mut same, &created);
        assert_eq!(same["metadata"]["generation"], 1);
        let mut changed = json!({"metadata": {"name": "a"}, "spec": {"x": 2}});
        track_generation(&mut changed, &created);
        assert_eq!(changed["metadata"]["generation"], 2);
    }
}
