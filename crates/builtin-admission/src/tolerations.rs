//! DefaultTolerationSeconds (kubernetes/plugin/pkg/admission/defaulttolerationseconds): a
//! new pod that does not tolerate the `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` NoExecute taints gets tolerations of them for
//! `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`
//! (300 s each by default), so it is evicted from a failed node after that long.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes};
use serde_json::{Value, json};

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// The DefaultTolerationSeconds admission plugin.
pub struct DefaultTolerationSeconds {
    not_ready_seconds: i64,
    unreachable_seconds: i64,
}

impl DefaultTolerationSeconds {
    pub fn new(not_ready_seconds: i64, unreachable_seconds: i64) -> DefaultTolerationSeconds {
        DefaultTolerationSeconds {
            not_ready_seconds,
            unreachable_seconds,
        }
    }
}

/// Whether a toleration covers the NoExecute taint `key` (an empty key or effect matches
/// every key or effect).
fn tolerates(toleration: &Value, key: &str) -> bool {
    let text = |field: &str| toleration[field].as_str().unwrap_or_default();
    (text("key") == key || text("key").is_empty())
        && (text("effect") == "NoExecute" || text("effect").is_empty())
}

/// Adds the default tolerations a pod lacks.
fn add_defaults(pod: &mut Value, defaults: [(&str, i64); 2]) {
    let existing = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut tolerations = existing.clone();
    for (key, seconds) in defaults {
        if !existing.iter().any(|t| tolerates(t, key)) {
            tolerations.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": seconds}),
            );
        }
    }
    if tolerations.len() != existing.len() {
        pod["spec"]["tolerations"] = Value::Array(tolerations);
    }
}

#[async_trait]
impl AdmissionPlugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if let Some(pod) = super::created(attributes, ("", "pods"), object) {
            add_defaults(
                pod,
                [
                    (NOT_READY, self.not_ready_seconds),
                    (UNREACHABLE, self.unreachable_seconds),
                ],
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tolerations_are_added() {
        let mut pod = json!({"spec": {}});
        add_defaults(&mut pod, [(NOT_READY, 300), (UNREACHABLE, 300)]);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        let mut tolerant = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_defaults(&mut tolerant, [(NOT_READY, 300), (UNREACHABLE, 300)]);
        assert_eq!(
            tolerant["spec"]["tolerations"],
            json!([{"operator": "Exists"}])
        );
        let mut partial = json!({"spec": {"tolerations": [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}});
        add_defaults(&mut partial, [(NOT_READY, 300), (UNREACHABLE, 300)]);
        assert_eq!(partial["spec"]["tolerations"][1]["key"], NOT_READY);
        assert_eq!(partial["spec"]["tolerations"].as_array().unwrap().len(), 2);
    }
}
