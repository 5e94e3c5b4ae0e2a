//! NodeRestriction (kubernetes/plugin/pkg/admission/noderestriction): what the Node
//! authorizer lets a kubelet (`system:node:<name>`) write is narrowed to its own objects:
//! mirror pods bound to it (owned by its Node, referencing no service account, secret,
//! config map or claim), pods bound to it (delete, status, eviction), its own Node (no new
//! taints, no restricted labels), tokens bound to its pods, and its own Lease and CSINode.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::Value;

const NODE_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
const MIRROR_POD: &str = "kubernetes.io/config.mirror";
/// Labels a kubelet may set on its Node although they are kubernetes.io labels.
const KUBELET_LABELS: [&str; 11] = [
    "kubernetes.io/hostname",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];

/// The NodeRestriction admission plugin.
pub struct NodeRestriction {
    pods: Served,
    nodes: Served,
}

impl NodeRestriction {
    pub fn new(pods: Served, nodes: Served) -> NodeRestriction {
        NodeRestriction { pods, nodes }
    }

    fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        self.pods.cached(namespace, name)
    }

    /// Pods: mirror pods created, and pods bound to the node deleted, evicted or given a
    /// status.
    fn pods(
        &self,
        node: &str,
        a: &Attributes<'_>,
        new: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), String> {
        match (a.operation, a.subresource) {
            (Operation::Create, "") => mirror_pod(node, new.unwrap_or(&Value::Null), &self.nodes),
            (Operation::Delete, "") => bound_to(
                node,
                old,
                &format!("node {node:?} can only delete pods with spec.nodeName set to itself"),
            ),
            (Operation::Update, "status") => {
                bound_to(
                    node,
                    old,
                    &format!(
                        "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
                    ),
                )?;
                let labels = |pod: Option<&Value>| pod.map(|p| p["metadata"]["labels"].clone());
                if labels(new) != labels(old) {
                    return Err(format!(
                        "node {node:?} cannot update labels through pod status"
                    ));
                }
                Ok(())
            }
            (Operation::Create, "eviction") => {
                let pod = self.pod(a.namespace, a.name);
                bound_to(
                    node,
                    pod.as_ref(),
                    &format!("node {node} can only evict pods with spec.nodeName set to itself"),
                )
            }
            _ => Ok(()),
        }
    }

    /// Tokens a node requests must be bound to a pod on the node.
    fn token(&self, node: &str, a: &Attributes<'_>, request: Option<&Value>) -> Result<(), String> {
        if a.operation != Operation::Create || a.subresource != "token" {
            return Ok(());
        }
        let reference = &request.unwrap_or(&Value::Null)["spec"]["boundObjectRef"];
        let name = reference["name"].as_str().unwrap_or_default();
        if reference["kind"] != "Pod" || reference["apiVersion"] != "v1" || name.is_empty() {
            return Err("node requested token not bound to a pod".into());
        }
        let uid = reference["uid"].as_str().unwrap_or_default();
        if uid.is_empty() {
            return Err("node requested token with a pod binding without a uid".into());
        }
        let pod = self
            .pod(a.namespace, name)
            .ok_or_else(|| format!("pods {name:?} not found"))?;
        if pod["metadata"]["uid"] != uid {
            return Err(format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ));
        }
        if pod["spec"]["nodeName"] != node {
            return Err("node requested token bound to a pod scheduled on a different node".into());
        }
        Ok(())
    }
}

/// Whether the request comes from a node, and which.
fn node_of<'a>(a: &'a Attributes<'_>) -> Option<&'a str> {
    let user = a.user;
    let name = user.name.strip_prefix(NODE_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

fn bound_to(node: &str, pod: Option<&Value>, refusal: &str) -> Result<(), String> {
    match pod {
        Some(pod) if pod["spec"]["nodeName"] == node => Ok(()),
        _ => Err(refusal.to_string()),
    }
}

/// A pod a node creates: a mirror pod bound to it, owned by its Node, referencing nothing.
fn mirror_pod(node: &str, pod: &Value, nodes: &Served) -> Result<(), String> {
    if pod["metadata"]["annotations"].get(MIRROR_POD).is_none() {
        return Err(format!(
            "pod does not have {MIRROR_POD:?} annotation, node {node:?} can only create mirror pods"
        ));
    }
    if pod["spec"]["nodeName"] != node {
        return Err(format!(
            "node {node:?} can only create pods with spec.nodeName set to itself"
        ));
    }
    let owners = pod["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let owner = match owners.as_slice() {
        [] => {
            return Err(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ));
        }
        [owner] => owner,
        _ => {
            return Err(format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ));
        }
    };
    if owner["apiVersion"] != "v1" || owner["kind"] != "Node" || owner["name"] != node {
        return Err(format!(
            "node {node:?} can only create pods with an owner reference set to itself"
        ));
    }
    if owner["controller"] != true {
        return Err(format!(
            "node {node:?} can only create pods with a controller owner reference set to itself"
        ));
    }
    if owner["blockOwnerDeletion"] == true {
        return Err(format!(
            "node {node:?} must not set blockOwnerDeletion on an owner reference"
        ));
    }
    let node_uid = nodes.cached("", node).map(|n| n["metadata"]["uid"].clone());
    let Some(node_uid) = node_uid else {
        return Err(format!("nodes {node:?} not found"));
    };
    if owner["uid"] != node_uid {
        return Err(format!(
            "node {node} UID mismatch: expected {} got {}",
            owner["uid"].as_str().unwrap_or_default(),
            node_uid.as_str().unwrap_or_default()
        ));
    }
    let spec = &pod["spec"];
    if spec["serviceAccountName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
    {
        return Err(format!(
            "node {node:?} can not create pods that reference a service account"
        ));
    }
    let pull_secrets = spec["imagePullSecrets"]
        .as_array()
        .is_some_and(|s| !s.is_empty());
    if super::serviceaccount::has_secret_reference(spec) || pull_secrets {
        return Err(format!(
            "node {node:?} can not create pods that reference secrets"
        ));
    }
    if has_key(spec, &["configMap", "configMapKeyRef", "configMapRef"]) {
        return Err(format!(
            "node {node:?} can not create pods that reference configmaps"
        ));
    }
    if has_key(&spec["volumes"], &["persistentVolumeClaim"]) {
        return Err(format!(
            "node {node:?} can not create pods that reference persistentvolumeclaims"
        ));
    }
    Ok(())
}

/// Whether any object in `value` has one of `keys`.
fn has_key(value: &Value, keys: &[&str]) -> bool {
    match value {
        Value::Object(map) => {
            map.keys().any(|k| keys.contains(&k.as_str())) || map.values().any(|v| has_key(v, keys))
        }
        Value::Array(items) => items.iter().any(|v| has_key(v, keys)),
        _ => false,
    }
}

/// A node's own Node: no other node, no new taints, no restricted labels.
fn node_object(
    node: &str,
    a: &Attributes<'_>,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), String> {
    let name = match a.name {
        "" => new.map_or("", |n| n["metadata"]["name"].as_str().unwrap_or_default()),
        name => name,
    };
    if name != node {
        return Err(format!(
            "node {node:?} is not allowed to modify node {name:?}"
        ));
    }
    let labels = |object: Option<&Value>| {
        object
            .map(|o| o["metadata"]["labels"].clone())
            .unwrap_or(Value::Null)
    };
    let forbidden = forbidden_labels(&labels(new), &labels(old));
    match a.operation {
        Operation::Create if !forbidden.is_empty() => Err(format!(
            "node {node:?} is not allowed to set the following labels: {}",
            forbidden.join(", ")
        )),
        Operation::Update => {
            let taints = |object: Option<&Value>| object.map(|o| o["spec"]["taints"].clone());
            let (new_taints, old_taints) = (taints(new), taints(old));
            let empty = |t: &Option<Value>| {
                t.as_ref()
                    .is_none_or(|t| t.is_null() || t.as_array().is_some_and(Vec::is_empty))
            };
            if new_taints != old_taints && !(empty(&new_taints) && empty(&old_taints)) {
                return Err(format!("node {node:?} is not allowed to modify taints"));
            }
            if !forbidden.is_empty() {
                return Err(format!(
                    "is not allowed to modify labels: {}",
                    forbidden.join(", ")
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The changed labels a kubelet may not set: node-restriction.kubernetes.io ones, and
/// kubernetes.io / k8s.io ones outside the kubelet's own.
fn forbidden_labels(new: &Value, old: &Value) -> Vec<String> {
    let mut changed: Vec<String> = Vec::new();
    for (a, b) in [(new, old), (old, new)] {
        for (key, value) in a.as_object().into_iter().flatten() {
            if b.get(key) != Some(value) && !changed.contains(key) {
                changed.push(key.clone());
            }
        }
    }
    let mut forbidden: Vec<String> = changed
        .into_iter()
        .filter(|label| {
            let namespace = label.split_once('/').map_or("", |(ns, _)| ns);
            let within =
                |domain: &str| namespace == domain || namespace.ends_with(&format!(".{domain}"));
            let restricted = within("node-restriction.kubernetes.io");
            let kubernetes = within("kubernetes.io") || within("k8s.io");
            let kubelet = KUBELET_LABELS.contains(&label.as_str())
                || within("kubelet.kubernetes.io")
                || within("node.kubernetes.io");
            restricted || (kubernetes && !kubelet)
        })
        .collect();
    forbidden.sort();
    forbidden
}

/// The node's own Lease (in kube-node-lease) or CSINode, checked on create (the Node
/// authorizer cannot see the name of a create).
fn own_named(
    node: &str,
    a: &Attributes<'_>,
    new: Option<&Value>,
    what: &str,
) -> Result<(), String> {
    if a.operation != Operation::Create {
        return Ok(());
    }
    let name = new.map_or("", |n| n["metadata"]["name"].as_str().unwrap_or_default());
    if name != node {
        return Err(format!(
            "can only access {what} with the same name as the requesting node"
        ));
    }
    Ok(())
}

#[async_trait]
impl AdmissionPlugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(node) = node_of(a) else {
            return Ok(());
        };
        let definition = a.definition;
        let result = match (definition.group_version.group.as_str(), &*definition.plural) {
            ("", "pods") => self.pods(node, a, object, old),
            ("", "nodes") if matches!(a.subresource, "" | "status") => {
                node_object(node, a, object, old)
            }
            ("", "serviceaccounts") => self.token(node, a, object),
            ("coordination.k8s.io", "leases") => own_named(node, a, object, "node lease"),
            ("storage.k8s.io", "csinodes") => own_named(node, a, object, "CSINode"),
            _ => Ok(()),
        };
        result.map_err(|reason| {
            let name = match a.name {
                "" => object.map_or("", |o| o["metadata"]["name"].as_str().unwrap_or_default()),
                name => name,
            };
            ApiError::forbidden(&definition.group_resource(), name, reason)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubelets_keep_to_their_own_labels() {
        let old = json!({"kubernetes.io/hostname": "n1"});
        let new = json!({"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z",
            "node-role.kubernetes.io/control-plane": "", "node-restriction.kubernetes.io/trusted": "yes",
            "example.com/team": "a"});
        assert_eq!(
            forbidden_labels(&new, &old),
            [
                "node-restriction.kubernetes.io/trusted",
                "node-role.kubernetes.io/control-plane"
            ]
        );
    }
}
