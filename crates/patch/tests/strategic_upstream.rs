//! Upstream's strategic merge patch application cases, re-expressed as data.
//!
//! `data/strategic_upstream.json` holds the (original, patch, expected) triples of
//! k8s.io/apimachinery's strategicpatch tests: the two-way patches applied to the original
//! and the three-way patches applied to the current object, for the test type `MergeItem`
//! (schema below). Where upstream compares results after sorting merging lists by their
//! merge key (`sorted`), so do we; the others compare exactly, list order included.

use kapi_patch::{ListStrategy, MapStrategy, PatchSchema, PatchType, apply};
use serde_json::{Map, Value};

/// Upstream's test type `MergeItem` (and `RetainKeysMergeItem`), whose fields keep the
/// same tags at every depth (`mergeItemPtr`, a pointer to a `MergeItem` with the tags of a
/// merging list, is used as a list in upstream's cases).
struct MergeItemSchema;

impl PatchSchema for MergeItemSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match path.last().copied() {
            Some("mergingList" | "retainKeysMergingList" | "mergeItemPtr") => {
                ListStrategy::merge_by("name")
            }
            Some("mergingIntList") => ListStrategy::set(),
            _ => ListStrategy::Replace,
        }
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        match path.last().copied() {
            Some("replacingItem") => MapStrategy::Replace,
            _ => MapStrategy::Merge,
        }
    }
}

fn merge_key(field: &str) -> Option<Option<&'static str>> {
    match field {
        "mergingList" | "retainKeysMergingList" | "mergeItemPtr" => Some(Some("name")),
        "mergingIntList" => Some(None),
        _ => None,
    }
}

fn sort_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Sorts merging lists by merge key (and dedups and sorts merging lists of primitives),
/// recursively, as upstream's test helper does.
fn sort_merge_lists(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in map {
        let v = match v {
            Value::Object(m) => Value::Object(sort_merge_lists(m)),
            Value::Array(items) => match merge_key(k) {
                Some(key) => Value::Array(sort_list(items, key)),
                None => v.clone(),
            },
            other => other.clone(),
        };
        out.insert(k.clone(), v);
    }
    out
}

fn sort_list(items: &[Value], key: Option<&str>) -> Vec<Value> {
    if items.iter().all(|v| !v.is_object()) {
        let mut out: Vec<Value> = Vec::new();
        for v in items {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        out.sort_by_key(sort_text);
        return out;
    }
    let key = key.unwrap_or("name");
    let mut out: Vec<Value> = items
        .iter()
        .map(|v| Value::Object(sort_merge_lists(v.as_object().expect("list of objects"))))
        .collect();
    out.sort_by_key(|v| sort_text(v.get(key).unwrap_or(&Value::Null)));
    out
}

fn normalize(v: &Value, sorted: bool) -> Value {
    match (v, sorted) {
        (Value::Object(m), true) => Value::Object(sort_merge_lists(m)),
        _ => v.clone(),
    }
}

#[test]
fn upstream_strategic_merge_patch_cases() {
    let vectors: Vec<Value> =
        serde_json::from_str(include_str!("data/strategic_upstream.json")).expect("vectors");
    assert!(vectors.len() > 250, "expected the full upstream table");
    let mut failures = Vec::new();
    for (i, case) in vectors.iter().enumerate() {
        let name = format!("#{i} {}", case["name"].as_str().unwrap_or("?"));
        let sorted = case["sorted"].as_bool().unwrap_or(false);
        let original = &case["original"];
        let patch = serde_json::to_vec(&case["patch"]).expect("patch");
        let result = apply(
            PatchType::StrategicMerge,
            original,
            &patch,
            &MergeItemSchema,
        );
        match (case.get("error").and_then(Value::as_str), result) {
            (Some(want), Err(err)) => {
                if !err.to_string().contains(want) {
                    failures.push(format!("{name}: error {err:?} does not contain {want:?}"));
                }
            }
            (Some(want), Ok(got)) => failures.push(format!(
                "{name}: expected an error containing {want:?}, got {got}"
            )),
            (None, Err(err)) => failures.push(format!("{name}: unexpected error {err:?}")),
            (None, Ok(got)) => {
                let expected = normalize(&case["expected"], sorted);
                let got = normalize(&got, sorted);
                if got != expected {
                    failures.push(format!(
                        "{name}:\n  original {original}\n  patch    {}\n  expected {expected}\n  got      {got}",
                        case["patch"]
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
}
