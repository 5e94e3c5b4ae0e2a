//! The status conditions a namespace's deletion reports, with upstream's types, reasons and
//! messages: each of the five is `True` with what went wrong, or `False` with its "all
//! done" wording.

use std::collections::BTreeMap;

use kapi_apimachinery::gotime;
use serde_json::{Value, json};

/// The condition types, in upstream's order; each with its reason and message when nothing
/// is wrong.
const CONDITIONS: [(&str, &str, &str); 5] = [
    (
        DISCOVERY_FAILURE,
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        CONTENT_FAILURE,
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        CONTENT_REMAINING,
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        FINALIZERS_REMAINING,
        "ContentRemoved",
        "All content successfully removed",
    ),
];
const DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
const CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// What one pass over a namespace's content found.
#[derive(Default)]
pub(super) struct Findings {
    /// Why discovery failed, if it did.
    pub(super) discovery_failure: Option<String>,
    /// The errors of deleting content.
    pub(super) content_errors: Vec<String>,
    /// Objects left, by `resource.group`.
    pub(super) remaining: BTreeMap<String, usize>,
    /// Objects left, by finalizer.
    pub(super) finalizers: BTreeMap<String, usize>,
}

impl Findings {
    /// The conditions that are `True` (failing), by type: (reason, message).
    fn failing(&self) -> BTreeMap<&'static str, (&'static str, String)> {
        let mut failing = BTreeMap::new();
        if let Some(message) = &self.discovery_failure {
            failing.insert(DISCOVERY_FAILURE, ("DiscoveryFailed", message.clone()));
        }
        if !self.content_errors.is_empty() {
            let mut errors = self.content_errors.clone();
            errors.sort();
            let message = format!(
                "Failed to delete all resource types, {} remaining: {}",
                errors.len(),
                errors.join(", ")
            );
            failing.insert(CONTENT_FAILURE, ("ContentDeletionFailed", message));
        }
        if !self.remaining.is_empty() {
            let each: Vec<String> = self
                .remaining
                .iter()
                .map(|(resource, n)| format!("{resource} has {n} resource instances"))
                .collect();
            let message = format!("Some resources are remaining: {}", sorted(each));
            failing.insert(CONTENT_REMAINING, ("SomeResourcesRemain", message));
        }
        if !self.finalizers.is_empty() {
            let each: Vec<String> = self
                .finalizers
                .iter()
                .map(|(finalizer, n)| format!("{finalizer} in {n} resource instances"))
                .collect();
            let message = format!("Some finalizers are remaining: {}", sorted(each));
            failing.insert(FINALIZERS_REMAINING, ("SomeFinalizerRemain", message));
        }
        failing
    }

    /// Brings `namespace`'s conditions to these findings; whether any changed. A condition
    /// whose status flips gets a new `lastTransitionTime`.
    pub(super) fn update(&self, namespace: &mut Value) -> bool {
        let failing = self.failing();
        let now = Value::String(gotime::format_rfc3339(gotime::Timestamp::now().seconds));
        let status = &mut namespace["status"];
        if !status["conditions"].is_array() {
            status["conditions"] = json!([]);
        }
        let conditions = status["conditions"].as_array_mut().expect("an array");
        let mut changed = false;
        for (type_, ok_reason, ok_message) in CONDITIONS {
            let (status, reason, message) = match failing.get(type_) {
                Some((reason, message)) => ("True", *reason, message.as_str()),
                None => ("False", ok_reason, ok_message),
            };
            let wanted = json!({"type": type_, "status": status, "reason": reason,
                "message": message, "lastTransitionTime": now});
            match conditions.iter_mut().find(|c| c["type"] == type_) {
                None => {
                    conditions.push(wanted);
                    changed = true;
                }
                Some(old) => {
                    if old["status"] == status
                        && old["reason"] == reason
                        && old["message"] == message
                    {
                        continue;
                    }
                    if old["status"] != status {
                        old["lastTransitionTime"] = now.clone();
                    }
                    old["status"] = status.into();
                    old["reason"] = reason.into();
                    old["message"] = message.into();
                    changed = true;
                }
            }
        }
        changed
    }
}

/// `items` sorted and joined as upstream joins them.
fn sorted(mut items: Vec<String>) -> String {
    items.sort();
    items.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_carry_upstream_reasons_and_messages() {
        let mut namespace = json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}});
        let findings = Findings {
            remaining: BTreeMap::from([("widgets.example.com".into(), 2)]),
            finalizers: BTreeMap::from([("example.com/hold".into(), 2)]),
            ..Findings::default()
        };
        assert!(findings.update(&mut namespace));
        let conditions = namespace["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 5);
        let find = |t: &str| conditions.iter().find(|c| c["type"] == t).unwrap().clone();
        let remaining = find(CONTENT_REMAINING);
        assert_eq!(remaining["status"], "True");
        assert_eq!(remaining["reason"], "SomeResourcesRemain");
        assert_eq!(
            remaining["message"],
            "Some resources are remaining: widgets.example.com has 2 resource instances"
        );
        assert_eq!(
            find(FINALIZERS_REMAINING)["message"],
            "Some finalizers are remaining: example.com/hold in 2 resource instances"
        );
        assert_eq!(find(DISCOVERY_FAILURE)["reason"], "ResourcesDiscovered");
        assert!(!findings.update(&mut namespace), "nothing changed");
        assert!(Findings::default().update(&mut namespace));
        assert_eq!(
            namespace["status"]["conditions"][3]["message"],
            "All content successfully removed"
        );
    }
}
