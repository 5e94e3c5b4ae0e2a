//! kubectl's move from client-side to server-side apply: the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation client-side apply keeps.

use serde_json::{Map, Value};

use crate::fieldpath::Set;
use crate::schema::Schema;
use crate::typed;

/// The manager whose applies the annotation concerns.
pub(crate) const KUBECTL: &str = "kubectl";
/// The annotation client-side apply writes.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The most bytes an object's annotations (keys and values) may take.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn annotations(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.get("annotations")?.as_object()
}

/// The fields the live object's last-applied configuration sets to the values they still
/// have; `None` without a readable annotation in `api_version`.
pub(crate) fn unchanged_fields<S: Schema>(
    live: &Value,
    api_version: &str,
    schema: Option<S>,
) -> Option<Set> {
    let text = annotations(live)?.get(LAST_APPLIED_ANNOTATION)?.as_str()?;
    let last_applied: Value = serde_json::from_str(text).ok()?;
    if last_applied.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let set = typed::to_field_set(&last_applied, schema);
    let changed = typed::compare(&last_applied, live, schema);
    Some(
        set.difference(&changed.modified)
            .difference(&changed.added)
            .difference(&changed.removed),
    )
}

/// Rewrites an existing last-applied annotation of `applied` to the applied configuration
/// (without the annotation itself, as JSON with a final newline, as upstream encodes it),
/// dropping it when the annotations would grow too large.
pub(crate) fn follow(applied: &mut Value, config: &Value) {
    let present = annotations(applied)
        .and_then(|annotations| annotations.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|text| !text.is_empty());
    if !present {
        return;
    }
    let mut last_applied = config.clone();
    if let Some(annotations) = last_applied
        .get_mut("metadata")
        .and_then(|meta| meta.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let text = format!("{last_applied}\n");
    let Some(annotations) = applied
        .get_mut("metadata")
        .and_then(|meta| meta.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(text));
    let size: usize = annotations
        .iter()
        .map(|(key, value)| key.len() + value.as_str().map_or(0, str::len))
        .sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}
