//! certificatesigningrequests/approval: the write that approves or denies a request
//! (`kubectl certificate approve|deny`), as upstream's approval strategy: only
//! `status.conditions` change, with upstream's condition rules.

use std::collections::HashSet;

use kapi_apimachinery::meta::now_rfc3339;
use kapi_apimachinery::quote;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::resource::PartWrite;
use serde_json::{Value, json};

use crate::util::str_of;

/// The conditions that mean the request was decided or failed, which no update may remove.
const FINAL_CONDITIONS: [&str; 3] = ["Approved", "Denied", "Failed"];

/// The approval subresource's write.
pub(super) fn approval_part() -> PartWrite {
    PartWrite {
        merge: merge_approval,
        validate: validate_approval,
    }
}

/// `current` with the written conditions, their missing timestamps filled in (upstream's
/// populateConditionTimestamps): lastUpdateTime now, lastTransitionTime the old condition's
/// when its status did not change, else now.
fn merge_approval(current: &Value, written: &Value) -> Value {
    let mut csr = current.clone();
    let old = conditions(current);
    let mut updated = conditions(written);
    let now = now_rfc3339();
    for condition in &mut updated {
        if condition["lastUpdateTime"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            condition["lastUpdateTime"] = Value::from(now.as_str());
        }
        if condition["lastTransitionTime"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            let previous = old.iter().find(|c| c["type"] == condition["type"]);
            condition["lastTransitionTime"] = match previous {
                Some(previous) if previous["status"] == condition["status"] => {
                    previous["lastTransitionTime"].clone()
                }
                _ => Value::from(now.as_str()),
            };
        }
    }
    if !csr["status"].is_object() {
        csr["status"] = json!({});
    }
    if updated.is_empty() {
        if let Some(status) = csr["status"].as_object_mut() {
            status.remove("conditions");
        }
    } else {
        csr["status"]["conditions"] = Value::Array(updated);
    }
    csr
}

fn conditions(csr: &Value) -> Vec<Value> {
    csr["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Upstream's condition rules for the approval subresource: every condition has a type and
/// a status (True, False or Unknown; only True for Approved and Denied), Approved and Denied
/// exclude each other, no type repeats, and no Approved, Denied or Failed condition is
/// removed.
fn validate_approval(new: &Value, old: &Value) -> FieldErrors {
    let path = Path::root("status").child("conditions");
    let mut errors = FieldErrors::new();
    let mut seen = HashSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, condition) in conditions(new).iter().enumerate() {
        let at = path.index(i);
        let type_ = str_of(condition, "type");
        if type_.is_empty() {
            errors.push(FieldError::required(&at.child("type"), ""));
        }
        let allowed: &[&str] = if matches!(type_, "Approved" | "Denied") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        match str_of(condition, "status") {
            "" => errors.push(FieldError::required(&at.child("status"), "")),
            status if !allowed.contains(&status) => errors.push(FieldError::not_supported(
                &at.child("status"),
                status,
                allowed,
            )),
            _ => {}
        }
        let exclusive = match type_ {
            "Approved" => {
                approved = true;
                denied
            }
            "Denied" => {
                denied = true;
                approved
            }
            _ => false,
        };
        if exclusive {
            errors.push(FieldError::invalid(
                &at.child("type"),
                type_,
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        if !seen.insert(type_.to_string()) {
            errors.push(FieldError::duplicate(&at.child("type"), type_));
        }
    }
    for type_ in FINAL_CONDITIONS {
        let count = |csr: &Value| {
            conditions(csr)
                .iter()
                .filter(|c| c["type"] == type_)
                .count()
        };
        if count(new) < count(old) {
            errors.push(FieldError::forbidden(
                &path,
                format!(
                    "updates may not remove a condition of type {}",
                    quote(type_)
                ),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn csr(conditions: Value) -> Value {
        json!({
            "metadata": {"name": "x"},
            "spec": {"request": "cmVx", "signerName": "example.com/s"},
            "status": {"conditions": conditions, "certificate": "Y2VydA=="},
        })
    }

    #[test]
    fn approval_takes_only_the_conditions_and_stamps_them() {
        let current = csr(json!([]));
        let mut written =
            csr(json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]));
        written["spec"]["signerName"] = json!("other");
        written["status"]["certificate"] = json!("b3RoZXI=");
        let merged = merge_approval(&current, &written);
        assert_eq!(merged["spec"], current["spec"]);
        assert_eq!(merged["status"]["certificate"], "Y2VydA==");
        let condition = &merged["status"]["conditions"][0];
        assert_eq!(condition["reason"], "KubectlApprove");
        assert!(condition["lastUpdateTime"].is_string());
        assert!(condition["lastTransitionTime"].is_string());

        let old = csr(json!([{"type": "Failed", "status": "True", "lastTransitionTime": "T0"}]));
        let again = csr(json!([{"type": "Failed", "status": "True"}]));
        let merged = merge_approval(&old, &again);
        assert_eq!(
            merged["status"]["conditions"][0]["lastTransitionTime"],
            "T0"
        );
    }

    #[test]
    fn approval_follows_upstreams_condition_rules() {
        let cases = [
            (
                json!([{"type": "Approved", "status": "True"}]),
                json!([]),
                vec![],
            ),
            (
                json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]),
                json!([]),
                vec![
                    "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                ],
            ),
            (
                json!([{"type": "Approved", "status": "False"}]),
                json!([]),
                vec![
                    "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\"",
                ],
            ),
            (
                json!([{"type": "", "status": ""}]),
                json!([]),
                vec![
                    "status.conditions[0].type: Required value",
                    "status.conditions[0].status: Required value",
                ],
            ),
            (
                json!([{"type": "Failed", "status": "True"}, {"type": "Failed", "status": "True"}]),
                json!([]),
                vec!["status.conditions[1].type: Duplicate value: \"Failed\""],
            ),
            (
                json!([]),
                json!([{"type": "Denied", "status": "True"}]),
                vec![
                    "status.conditions: Forbidden: updates may not remove a condition of type \"Denied\"",
                ],
            ),
        ];
        for (new, old, expected) in cases {
            let errors: Vec<String> = validate_approval(&csr(new.clone()), &csr(old))
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(errors, expected, "{new}");
        }
    }
}
