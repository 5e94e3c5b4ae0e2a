//! TaintNodesByCondition (kubernetes/plugin/pkg/admission/nodetaint): a new Node is tainted
//! `node.kubernetes.io/not-ready:NoSchedule`, so nothing is scheduled onto it before its
//! conditions say it is ready (the node lifecycle controller lifts the taint).

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes};
use serde_json::{Value, json};

/// The taint of nodes not ready yet.
const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// The TaintNodesByCondition admission plugin.
pub struct TaintNodesByCondition;

/// Adds the not-ready NoSchedule taint unless the node has it.
fn taint(node: &mut Value) {
    let taints = &mut node["spec"]["taints"];
    let tainted = taints.as_array().is_some_and(|list| {
        list.iter()
            .any(|t| t["key"] == NOT_READY && t["effect"] == "NoSchedule")
    });
    if tainted {
        return;
    }
    let not_ready = json!({"key": NOT_READY, "effect": "NoSchedule"});
    match taints.as_array_mut() {
        Some(list) => list.push(not_ready),
        None => *taints = json!([not_ready]),
    }
}

#[async_trait]
impl AdmissionPlugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if let Some(node) = super::created(attributes, ("", "nodes"), object) {
            taint(node);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_nodes_are_not_ready() {
        let mut node = json!({"spec": {}});
        taint(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY, "effect": "NoSchedule"}])
        );
        taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 1);
        let mut other = json!({"spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}});
        taint(&mut other);
        assert_eq!(other["spec"]["taints"].as_array().unwrap().len(), 2);
    }
}
