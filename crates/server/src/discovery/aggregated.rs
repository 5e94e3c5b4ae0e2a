//! Aggregated discovery (apidiscovery.k8s.io): the APIGroupDiscoveryList of `/api` and
//! `/apis`, every group, version, resource and subresource in one document, typed with
//! their fields in kube-apiserver's order. Separate from the meta.k8s.io/v1 documents, which
//! describe the same resources one path at a time.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    aggregated_group_order, discovery_subresources, discovery_verbs, index,
    listed_subresource_kind, order_versions, strings,
};
use crate::resource::ResourceDefinition;

/// The apidiscovery.k8s.io version a client negotiated. kube-apiserver 1.35 only serves `V2`
/// (its `AggregatedDiscoveryRemoveBetaType` gate is locked on, so a request that accepts only
/// v2beta1 gets 404); `V2Beta1` has the same shape and is here for completeness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregatedVersion {
    V2,
    V2Beta1,
}

/// `"v2beta1"` is [`AggregatedVersion::V2Beta1`]; anything else (`"v2"`) is `V2`.
impl From<&str> for AggregatedVersion {
    fn from(version: &str) -> Self {
        match version {
            "v2beta1" => AggregatedVersion::V2Beta1,
            _ => AggregatedVersion::V2,
        }
    }
}

impl AggregatedVersion {
    pub fn api_version(self) -> &'static str {
        match self {
            AggregatedVersion::V2 => "apidiscovery.k8s.io/v2",
            AggregatedVersion::V2Beta1 => "apidiscovery.k8s.io/v2beta1",
        }
    }
}

/// An empty ListMeta, written as `{}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyListMeta {}

/// The ObjectMeta of an APIGroupDiscovery: only the group name (an unset
/// `creationTimestamp` is left out, as upstream writes it since 1.34).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryMeta {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(
        rename = "creationTimestamp",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub creation_timestamp: Option<String>,
}

/// `GroupVersionKind` of a discovery `responseKind`. Upstream leaves group and version empty
/// when they are the containing group version's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// `APISubresourceDiscovery`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiSubresourceDiscovery {
    pub subresource: String,
    #[serde(rename = "responseKind")]
    pub response_kind: ResponseKind,
    pub verbs: Vec<String>,
}

/// `APIResourceDiscovery`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResourceDiscovery {
    pub resource: String,
    #[serde(rename = "responseKind")]
    pub response_kind: ResponseKind,
    pub scope: String,
    #[serde(rename = "singularResource")]
    pub singular_resource: String,
    pub verbs: Vec<String>,
    #[serde(rename = "shortNames", default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<ApiSubresourceDiscovery>,
}

/// `APIVersionDiscovery`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiVersionDiscovery {
    pub version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResourceDiscovery>,
    pub freshness: String,
}

/// `APIGroupDiscovery`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiGroupDiscovery {
    pub metadata: DiscoveryMeta,
    pub versions: Vec<ApiVersionDiscovery>,
}

/// `APIGroupDiscoveryList`: aggregated discovery of `/api` or `/apis`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiGroupDiscoveryList {
    pub kind: String,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub metadata: EmptyListMeta,
    pub items: Vec<ApiGroupDiscovery>,
}

/// The response kind aggregated discovery names: built-in resources leave the group and
/// version of their own group version out; the CRD discovery controller names them.
fn aggregated_response_kind(def: &ResourceDefinition, kind: ResponseKind) -> ResponseKind {
    match def.capabilities.dynamic && kind.group.is_empty() && kind.version.is_empty() {
        true => ResponseKind {
            group: def.group_version.group.clone(),
            version: def.group_version.version.clone(),
            kind: kind.kind,
        },
        false => kind,
    }
}

fn resource_discovery(def: &ResourceDefinition) -> ApiResourceDiscovery {
    let own = ResponseKind {
        group: String::new(),
        version: String::new(),
        kind: def.kind.to_string(),
    };
    let kind = aggregated_response_kind(def, own);
    let subresources = discovery_subresources(def);
    ApiResourceDiscovery {
        resource: def.plural.to_string(),
        response_kind: kind.clone(),
        scope: if def.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }
        .to_string(),
        singular_resource: def.singular.to_string(),
        verbs: discovery_verbs(def),
        short_names: strings(&def.short_names),
        categories: strings(&def.categories),
        subresources: subresources
            .into_iter()
            .map(|sub| ApiSubresourceDiscovery {
                subresource: sub.name.to_string(),
                response_kind: aggregated_response_kind(def, listed_subresource_kind(def, sub)),
                verbs: strings(&sub.verbs.names()),
            })
            .collect(),
    }
}

fn group_discovery(
    group: &str,
    versions: &BTreeMap<&str, Vec<&ResourceDefinition>>,
) -> ApiGroupDiscovery {
    let ordered = order_versions(versions);
    ApiGroupDiscovery {
        metadata: DiscoveryMeta {
            name: group.to_string(),
            creation_timestamp: None,
        },
        versions: ordered
            .into_iter()
            .map(|version| ApiVersionDiscovery {
                version: version.to_string(),
                resources: versions[version]
                    .iter()
                    .map(|def| resource_discovery(def))
                    .collect(),
                freshness: "Current".into(),
            })
            .collect(),
    }
}

/// Aggregated discovery: of `/api` (`legacy`: the core group only) or of `/apis` (every named
/// group, `apiregistration.k8s.io` first, then by group priority and name).
pub fn aggregated_document(
    defs: &[Arc<ResourceDefinition>],
    legacy: bool,
    version: impl Into<AggregatedVersion>,
) -> ApiGroupDiscoveryList {
    let index = index(defs);
    let items = if legacy {
        index
            .get("")
            .map(|versions| vec![group_discovery("", versions)])
            .unwrap_or_default()
    } else {
        aggregated_group_order(&index)
            .into_iter()
            .map(|group| group_discovery(group, &index[group]))
            .collect()
    };
    ApiGroupDiscoveryList {
        kind: "APIGroupDiscoveryList".into(),
        api_version: version.into().api_version().into(),
        metadata: EmptyListMeta {},
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::tests::{ALL_VERBS, builtin, json};

    #[test]
    fn aggregated_entries_match_upstream() {
        let doc = aggregated_document(&builtin(), false, AggregatedVersion::V2);
        assert_eq!(
            doc.items
                .iter()
                .map(|g| g.metadata.name.as_str())
                .collect::<Vec<_>>(),
            ["apps", "events.k8s.io", "coordination.k8s.io"]
        );
        let text = json(&doc);
        assert!(text.starts_with(
            r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":["#
        ));
        assert_eq!(
            json(&doc.items[0].versions[0]),
            format!(
                concat!(
                    r#"{{"version":"v1","resources":[{{"resource":"deployments","responseKind":{{"group":"","version":"","kind":"Deployment"}},"#,
                    r#""scope":"Namespaced","singularResource":"deployment","verbs":{all},"shortNames":["deploy"],"categories":["all"],"#,
                    r#""subresources":[{{"subresource":"status","responseKind":{{"group":"","version":"","kind":"Deployment"}},"verbs":["get","patch","update"]}}]}}],"#,
                    r#""freshness":"Current"}}"#
                ),
                all = ALL_VERBS
            )
        );

        let core = aggregated_document(&builtin(), true, AggregatedVersion::V2Beta1);
        assert_eq!(core.api_version, "apidiscovery.k8s.io/v2beta1");
        let resources = &core.items[0].versions[0].resources;
        assert_eq!(
            resources
                .iter()
                .map(|r| r.resource.as_str())
                .collect::<Vec<_>>(),
            ["configmaps", "events", "namespaces"]
        );
        assert_eq!(
            json(&resources[2]),
            concat!(
                r#"{"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","#,
                r#""singularResource":"namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"#,
                r#""subresources":[{"subresource":"finalize","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["update"]},"#,
                r#"{"subresource":"status","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["get","patch","update"]}]}"#
            )
        );
        let lease = &doc.items[2].versions[0].resources[0];
        assert_eq!(
            json(lease),
            format!(
                r#"{{"resource":"leases","responseKind":{{"group":"","version":"","kind":"Lease"}},"scope":"Namespaced","singularResource":"lease","verbs":{ALL_VERBS}}}"#
            )
        );
    }
}
