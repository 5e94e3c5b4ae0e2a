//! The Node authorizer (kubernetes/plugin/pkg/auth/authorizer/node): a kubelet
//! (`system:node:<name>` in `system:nodes`) may read only the secrets, configmaps, claims and
//! volumes of the pods bound to its node, create tokens only for their service accounts, and
//! touch only its own Lease and CSINode; everything else is judged by the `system:node`
//! rules of the bootstrap policy. Upstream keeps a graph of these relations; kapi derives
//! them from the pods' watch cache on each request.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_server::UserInfo;
use kapi_server::authz::{Attributes, AuthorizationError, Authorizer, Decision, RulesInfo};
use kapi_server::endpoints::Served;
use serde_json::Value;

use super::rules::PolicyRule;

const NODE_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The collections the Node authorizer reads.
pub struct NodeResources {
    pub pods: Served,
    pub claims: Served,
    pub attachments: Served,
}

/// The Node authorizer.
pub struct NodeAuthorizer {
    resources: NodeResources,
    rules: Vec<PolicyRule>,
}

impl NodeAuthorizer {
    pub fn new(resources: NodeResources) -> NodeAuthorizer {
        let rules = super::policy::node_rules()
            .iter()
            .map(PolicyRule::from_value)
            .collect();
        NodeAuthorizer { resources, rules }
    }

    /// The pods bound to `node` in `namespace`.
    fn pods_on(&self, node: &str, namespace: &str) -> Vec<Arc<Value>> {
        self.resources
            .pods
            .cached_list(Some(namespace))
            .into_iter()
            .filter(|pod| pod["spec"]["nodeName"] == node)
            .map(Arc::new)
            .collect()
    }

    /// Whether a pod bound to `node` refers to the object.
    fn related(&self, node: &str, kind: Kind, namespace: &str, name: &str) -> bool {
        match kind {
            Kind::PersistentVolume => self.volume_related(node, name),
            Kind::VolumeAttachment => self
                .resources
                .attachments
                .cached("", name)
                .is_some_and(|a| a["spec"]["nodeName"] == node),
            _ => self
                .pods_on(node, namespace)
                .iter()
                .any(|pod| references(pod, kind, name)),
        }
    }

    /// Whether a claim of a pod bound to `node` is bound to the volume `name`.
    fn volume_related(&self, node: &str, name: &str) -> bool {
        let claims = self.resources.claims.cached_list(None);
        claims
            .iter()
            .filter(|claim| claim["spec"]["volumeName"] == name)
            .any(|claim| {
                let namespace = claim["metadata"]["namespace"].as_str().unwrap_or_default();
                let claim_name = claim["metadata"]["name"].as_str().unwrap_or_default();
                self.related(node, Kind::Claim, namespace, claim_name)
            })
    }

    /// A get (or single-object list/watch) of a related object.
    fn read(
        &self,
        node: &str,
        kind: Kind,
        attributes: &Attributes<'_>,
        verbs: &[&str],
    ) -> Decision {
        if !verbs.contains(&attributes.verb) {
            return no_opinion(kind.only_message());
        }
        if !attributes.subresource.is_empty() {
            return no_opinion("cannot get subresource");
        }
        let name = match attributes.verb {
            "list" | "watch" => single_name(attributes.field_selector),
            _ => Some(attributes.name),
        };
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return no_opinion("No Object name found");
        };
        if self.related(node, kind, attributes.namespace, name) {
            Decision::Allow(String::new())
        } else {
            no_opinion(&format!(
                "no relationship found between node '{node}' and this object"
            ))
        }
    }
}

/// The kinds of objects a node reaches through its pods.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Secret,
    ConfigMap,
    Claim,
    PersistentVolume,
    VolumeAttachment,
    ServiceAccount,
}

impl Kind {
    fn only_message(self) -> &'static str {
        match self {
            Kind::Secret | Kind::ConfigMap => "can only read resources of this type",
            _ => "can only get individual resources of this type",
        }
    }
}

/// The node a user is, if it is one.
fn node_of(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

fn no_opinion(reason: &str) -> Decision {
    Decision::NoOpinion(reason.to_string())
}

/// The name a `metadata.name=<name>` field selector picks.
fn single_name(selector: &str) -> Option<&str> {
    selector
        .strip_prefix("metadata.name=")
        .or_else(|| selector.strip_prefix("metadata.name=="))
        .filter(|name| !name.contains(','))
}

/// Whether `pod` refers to the object `name` of `kind`.
fn references(pod: &Value, kind: Kind, name: &str) -> bool {
    let spec = &pod["spec"];
    let volumes = || spec["volumes"].as_array().into_iter().flatten();
    let containers = || {
        ["initContainers", "containers", "ephemeralContainers"]
            .into_iter()
            .flat_map(|list| spec[list].as_array().into_iter().flatten())
    };
    let projected = |source: &str| {
        volumes().any(|v| {
            v["projected"]["sources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s[source]["name"] == name)
        })
    };
    let env = |key_ref: &str, from_ref: &str| {
        containers().any(|c| {
            c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| e["valueFrom"][key_ref]["name"] == name)
                || c["envFrom"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|e| e[from_ref]["name"] == name)
        })
    };
    match kind {
        Kind::Secret => {
            volumes().any(|v| v["secret"]["secretName"] == name || secret_ref(v, name))
                || projected("secret")
                || env("secretKeyRef", "secretRef")
                || spec["imagePullSecrets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| s["name"] == name)
        }
        Kind::ConfigMap => {
            volumes().any(|v| v["configMap"]["name"] == name)
                || projected("configMap")
                || env("configMapKeyRef", "configMapRef")
        }
        Kind::Claim => {
            let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
            volumes().any(|v| {
                v["persistentVolumeClaim"]["claimName"] == name
                    || (v.get("ephemeral").is_some()
                        && format!("{pod_name}-{}", v["name"].as_str().unwrap_or_default()) == name)
            })
        }
        Kind::ServiceAccount => spec["serviceAccountName"] == name,
        Kind::PersistentVolume | Kind::VolumeAttachment => false,
    }
}

/// Whether an in-tree volume source refers to the secret `name` (`secretRef`, CSI's
/// `nodePublishSecretRef`).
fn secret_ref(volume: &Value, name: &str) -> bool {
    volume.as_object().into_iter().flatten().any(|(_, source)| {
        source["secretRef"]["name"] == name || source["nodePublishSecretRef"]["name"] == name
    })
}

#[async_trait]
impl Authorizer for NodeAuthorizer {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        if !attributes.user.name.starts_with(NODE_PREFIX) {
            return Ok(no_opinion(""));
        }
        let Some(node) = node_of(attributes.user).filter(|n| !n.is_empty()) else {
            return Ok(no_opinion(&format!(
                "unknown node for user {:?}",
                attributes.user.name
            )));
        };
        if attributes.resource_request {
            let read = |kind, verbs: &[&str]| self.read(node, kind, attributes, verbs);
            let decision = match (attributes.api_group, attributes.resource) {
                ("", "secrets") => Some(read(Kind::Secret, &["get", "list", "watch"])),
                ("", "configmaps") => Some(read(Kind::ConfigMap, &["get", "list", "watch"])),
                ("", "persistentvolumeclaims") => Some(read(Kind::Claim, &["get"])),
                ("", "persistentvolumes") => Some(read(Kind::PersistentVolume, &["get"])),
                ("storage.k8s.io", "volumeattachments") => {
                    Some(read(Kind::VolumeAttachment, &["get"]))
                }
                ("", "serviceaccounts") => Some(self.token(node, attributes)),
                ("coordination.k8s.io", "leases") => {
                    Some(own(node, attributes, "a node lease", true))
                }
                ("storage.k8s.io", "csinodes") => Some(own(node, attributes, "a CSINode", false)),
                _ => None,
            };
            if let Some(decision) = decision {
                return Ok(decision);
            }
        }
        if self.rules.iter().any(|rule| rule.allows(attributes)) {
            return Ok(Decision::Allow(String::new()));
        }
        Ok(no_opinion(""))
    }

    /// Upstream's answer: a node's grants follow its pods and cannot be listed.
    async fn rules_for(&self, user: &UserInfo, _namespace: &str) -> RulesInfo {
        match node_of(user) {
            Some(_) => RulesInfo::unknown("node"),
            None => RulesInfo::default(),
        }
    }
}

impl NodeAuthorizer {
    /// A token for a service account of a pod bound to the node.
    fn token(&self, node: &str, attributes: &Attributes<'_>) -> Decision {
        if attributes.verb != "create" || attributes.name.is_empty() {
            return no_opinion("can only create tokens for individual service accounts");
        }
        if attributes.subresource != "token" {
            return no_opinion("can only create token subresource of serviceaccount");
        }
        if self.related(
            node,
            Kind::ServiceAccount,
            attributes.namespace,
            attributes.name,
        ) {
            Decision::Allow(String::new())
        } else {
            no_opinion(&format!(
                "no relationship found between node '{node}' and this object"
            ))
        }
    }
}

/// The node's own Lease (in `kube-node-lease`) or CSINode.
fn own(node: &str, attributes: &Attributes<'_>, what: &str, lease: bool) -> Decision {
    if !["get", "create", "update", "patch", "delete"].contains(&attributes.verb) {
        return no_opinion(&format!(
            "can only get, create, update, patch, or delete {what}"
        ));
    }
    if lease && attributes.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(&format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if !lease && !attributes.subresource.is_empty() {
        return no_opinion("cannot authorize CSINode subresources");
    }
    if attributes.verb != "create" && attributes.name != node {
        let thing = if lease { "node lease" } else { "CSINode" };
        return no_opinion(&format!(
            "can only access {thing} with the same name as the requesting node"
        ));
    }
    Decision::Allow(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_refer_to_what_their_nodes_may_read() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"nodeName": "n1",
            "serviceAccountName": "robot", "imagePullSecrets": [{"name": "pull"}],
            "volumes": [{"name": "s", "secret": {"secretName": "tls"}},
                {"name": "p", "projected": {"sources": [{"configMap": {"name": "settings"}}]}},
                {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "c", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "csi-creds"}}}],
            "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "env"}}]}]}});
        for secret in ["tls", "pull", "env", "csi-creds"] {
            assert!(references(&pod, Kind::Secret, secret), "{secret}");
        }
        assert!(!references(&pod, Kind::Secret, "other"));
        assert!(references(&pod, Kind::ConfigMap, "settings"));
        assert!(references(&pod, Kind::Claim, "data"));
        assert!(references(&pod, Kind::ServiceAccount, "robot"));
        assert_eq!(single_name("metadata.name=tls"), Some("tls"));
        assert_eq!(single_name(""), None);
    }

    #[test]
    fn only_nodes_are_nodes() {
        let node = UserInfo {
            name: "system:node:n1".into(),
            groups: vec![NODES_GROUP.into()],
            ..UserInfo::default()
        };
        assert_eq!(node_of(&node), Some("n1"));
        let impostor = UserInfo {
            name: "system:node:n1".into(),
            ..UserInfo::default()
        };
        assert_eq!(node_of(&impostor), None);
    }
}
