//! JSON merge patch (RFC 7386, `application/merge-patch+json`) as kube-apiserver applies
//! it.
//!
//! The merge itself is the json-patch crate's RFC 7386 `merge`. Upstream's library
//! (evanphx/json-patch v4) adds one thing: where the patch puts a value the document did
//! not have as an object, it first drops `null` members from the objects in that value,
//! also inside lists (`{"a":[{"b":null}]}` on `{}` gives `{"a":[{}]}`). We do the same
//! before merging. A patch that is `null` or a scalar is a 400; a list is returned as the
//! new document, which the caller then rejects.

use serde_json::Value;

use crate::error::PatchError;
use kapi_apimachinery::gofmt;

const BAD_PATCH: &str = "Invalid JSON Patch";

/// Applies a merge patch.
pub(crate) fn apply(original: &Value, patch: Value, strict: bool) -> Result<Value, PatchError> {
    if strict && !(patch.is_object() || patch.is_null()) {
        return Err(PatchError::BadRequest(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            gofmt::json_kind(&patch)
        )));
    }
    match patch {
        Value::Object(_) => {
            let mut patch = patch;
            drop_nulls_in_new_values(Some(original), &mut patch);
            let mut doc = original.clone();
            json_patch::merge(&mut doc, &patch);
            Ok(doc)
        }
        Value::Array(_) => {
            let mut patched = patch;
            drop_nulls(&mut patched);
            Err(PatchError::NotAnObject { patched })
        }
        _ => Err(PatchError::BadRequest(BAD_PATCH.to_string())),
    }
}

/// Walks an object patch along the document: members whose document value is an object
/// recurse (or are taken as they are if the patch value is not an object); all others get
/// their `null`s dropped.
fn drop_nulls_in_new_values(doc: Option<&Value>, patch: &mut Value) {
    let Value::Object(members) = patch else {
        return;
    };
    let doc = doc.and_then(Value::as_object);
    for (key, value) in members.iter_mut() {
        if value.is_null() {
            continue;
        }
        match doc.and_then(|d| d.get(key)) {
            Some(current @ Value::Object(_)) => {
                if value.is_object() {
                    drop_nulls_in_new_values(Some(current), value);
                }
            }
            _ => drop_nulls(value),
        }
    }
}

/// Drops `null` members of objects, recursively, through objects and lists (a `null` list
/// element stays).
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, v| !v.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}
