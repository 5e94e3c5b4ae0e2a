//! PodTopologyLabels (kubernetes/plugin/pkg/admission/podtopologylabels, on by default since
//! 1.35): a pod bound to a node, by a Binding or created with its `nodeName`, gets the node's
//! `topology.k8s.io/zone` and `topology.k8s.io/region` labels (not overwriting its own; the
//! binding's labels are copied onto the pod when it is bound).

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::{Map, Value};

/// The node labels copied.
const TOPOLOGY_LABELS: [&str; 2] = ["topology.k8s.io/zone", "topology.k8s.io/region"];

/// The PodTopologyLabels admission plugin.
pub struct PodTopologyLabels {
    nodes: Served,
}

impl PodTopologyLabels {
    /// Reads nodes from the served `nodes` collection.
    pub fn new(nodes: Served) -> PodTopologyLabels {
        PodTopologyLabels { nodes }
    }

    /// The topology labels of node `name` (none when it does not exist).
    fn labels_of(&self, name: &str) -> Map<String, Value> {
        let Some(node) = self.nodes.cached("", name) else {
            return Map::new();
        };
        TOPOLOGY_LABELS
            .iter()
            .filter_map(|key| {
                Some((
                    key.to_string(),
                    node["metadata"]["labels"].get(*key)?.clone(),
                ))
            })
            .collect()
    }
}

/// Adds `labels` to `object`'s labels, keeping the ones it has.
fn merge(object: &mut Value, labels: Map<String, Value>) {
    if labels.is_empty() {
        return;
    }
    let existing = &mut object["metadata"]["labels"];
    if !existing.is_object() {
        *existing = Value::Object(Map::new());
    }
    if let Some(existing) = existing.as_object_mut() {
        for (key, value) in labels {
            existing.entry(key).or_insert(value);
        }
    }
}

#[async_trait]
impl AdmissionPlugin for PodTopologyLabels {
    fn name(&self) -> &'static str {
        "PodTopologyLabels"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        let pods = definition.group_version.group.is_empty() && definition.plural == "pods";
        let Some(object) = object.filter(|_| pods && attributes.operation == Operation::Create)
        else {
            return Ok(());
        };
        let node = match attributes.subresource {
            "" => object["spec"]["nodeName"].as_str(),
            "binding"
                if object["target"]["kind"]
                    .as_str()
                    .is_none_or(|k| k == "Node") =>
            {
                object["target"]["name"].as_str()
            }
            _ => None,
        };
        if let Some(node) = node.filter(|n| !n.is_empty()).map(str::to_string) {
            merge(object, self.labels_of(&node));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_are_added_without_overwriting() {
        let mut pod = json!({"metadata": {"labels": {"topology.k8s.io/zone": "mine"}}});
        let labels = json!({"topology.k8s.io/zone": "a", "topology.k8s.io/region": "r"});
        merge(&mut pod, labels.as_object().unwrap().clone());
        assert_eq!(
            pod["metadata"]["labels"],
            json!({"topology.k8s.io/zone": "mine", "topology.k8s.io/region": "r"})
        );
    }
}
