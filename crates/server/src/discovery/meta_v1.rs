//! The meta.k8s.io/v1 discovery documents: APIVersions (`/api`), APIGroupList (`/apis`),
//! APIGroup (`/apis/<group>`) and APIResourceList (`/api/v1`, `/apis/<group>/<version>`),
//! typed with their fields in kube-apiserver's order. Separate from aggregated discovery,
//! which describes the same resources in apidiscovery.k8s.io's shape.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    ALL_CLIENTS_CIDR, discovery_subresources, discovery_verbs, index, legacy_group_order,
    listed_subresource_kind, order_versions, storage_version_hash, strings,
};
use crate::resource::ResourceDefinition;

/// `ServerAddressByClientCIDR`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerAddressByClientCidr {
    #[serde(rename = "clientCIDR")]
    pub client_cidr: String,
    #[serde(rename = "serverAddress")]
    pub server_address: String,
}

/// `/api`: the legacy APIVersions (served without `apiVersion`, as upstream strips it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiVersions {
    pub kind: String,
    pub versions: Vec<String>,
    #[serde(rename = "serverAddressByClientCIDRs")]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCidr>,
}

/// `GroupVersionForDiscovery`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionForDiscovery {
    #[serde(rename = "groupVersion")]
    pub group_version: String,
    pub version: String,
}

/// `APIGroup`: standalone at `/apis/<group>` (with `kind` and `apiVersion`) or an item of
/// `/apis` (without).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiGroup {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    pub name: String,
    pub versions: Vec<GroupVersionForDiscovery>,
    #[serde(rename = "preferredVersion")]
    pub preferred_version: GroupVersionForDiscovery,
    #[serde(
        rename = "serverAddressByClientCIDRs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCidr>,
}

/// `/apis`: the APIGroupList.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiGroupList {
    pub kind: String,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub groups: Vec<ApiGroup>,
}

/// `APIResource`: one resource or subresource of an APIResourceList.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResource {
    pub name: String,
    #[serde(rename = "singularName")]
    pub singular_name: String,
    pub namespaced: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
    #[serde(rename = "shortNames", default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(
        rename = "storageVersionHash",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub storage_version_hash: String,
}

/// `/api/v1`, `/apis/<group>/<version>`: the APIResourceList (without `apiVersion` for the
/// core group, as upstream strips it there).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResourceList {
    pub kind: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    #[serde(rename = "groupVersion")]
    pub group_version: String,
    pub resources: Vec<ApiResource>,
}

fn group_version_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn group_version_for_discovery(group: &str, version: &str) -> GroupVersionForDiscovery {
    GroupVersionForDiscovery {
        group_version: group_version_string(group, version),
        version: version.to_string(),
    }
}

/// `/api`, typed (fields in upstream's order).
pub fn api_versions_document(server_address: &str) -> ApiVersions {
    ApiVersions {
        kind: "APIVersions".into(),
        versions: vec!["v1".into()],
        server_address_by_client_cidrs: vec![ServerAddressByClientCidr {
            client_cidr: ALL_CLIENTS_CIDR.into(),
            server_address: server_address.into(),
        }],
    }
}

fn group_entry(group: &str, versions: &BTreeMap<&str, Vec<&ResourceDefinition>>) -> ApiGroup {
    let ordered = order_versions(versions);
    let versions: Vec<GroupVersionForDiscovery> = ordered
        .iter()
        .map(|version| group_version_for_discovery(group, version))
        .collect();
    ApiGroup {
        kind: String::new(),
        api_version: String::new(),
        name: group.to_string(),
        preferred_version: versions[0].clone(),
        versions,
        server_address_by_client_cidrs: Vec::new(),
    }
}

/// `/apis`, typed: every named group, in the aggregator's order.
pub fn api_group_list_document(defs: &[Arc<ResourceDefinition>]) -> ApiGroupList {
    let index = index(defs);
    let groups = legacy_group_order(&index)
        .into_iter()
        .map(|group| group_entry(group, &index[group]))
        .collect();
    ApiGroupList {
        kind: "APIGroupList".into(),
        api_version: "v1".into(),
        groups,
    }
}

/// `/apis/<group>`; `None` when no version of the group is served (or for the core group,
/// which has no such document).
pub fn api_group_document(defs: &[Arc<ResourceDefinition>], group: &str) -> Option<ApiGroup> {
    if group.is_empty() {
        return None;
    }
    let index = index(defs);
    let versions = index.get(group)?;
    Some(ApiGroup {
        kind: "APIGroup".into(),
        api_version: "v1".into(),
        ..group_entry(group, versions)
    })
}

/// The APIResourceList entries of one definition: the resource, then its subresources by name.
fn api_resources(def: &ResourceDefinition) -> Vec<(String, ApiResource)> {
    let storage = &def.storage.storage_version;
    let mut out = vec![(
        def.plural.to_string(),
        ApiResource {
            name: def.plural.to_string(),
            singular_name: def.singular.to_string(),
            namespaced: def.namespaced,
            group: String::new(),
            version: String::new(),
            kind: def.kind.to_string(),
            verbs: discovery_verbs(def),
            short_names: strings(&def.short_names),
            categories: strings(&def.categories),
            // Resources computed per request (no key prefix) have no storage version.
            storage_version_hash: if def.storage.key_prefix.is_empty() {
                String::new()
            } else {
                storage_version_hash(&storage.group, &storage.version, &storage.kind)
            },
        },
    )];
    for sub in discovery_subresources(def) {
        let name = format!("{}/{}", def.plural, sub.name);
        let kind = listed_subresource_kind(def, sub);
        out.push((
            name.clone(),
            ApiResource {
                name,
                singular_name: String::new(),
                namespaced: def.namespaced,
                group: kind.group,
                version: kind.version,
                kind: kind.kind,
                verbs: strings(&sub.verbs.names()),
                short_names: Vec::new(),
                categories: Vec::new(),
                storage_version_hash: String::new(),
            },
        ));
    }
    out
}

/// `/api/v1` (group `""`) or `/apis/<group>/<version>`; `None` when that group version is not
/// served. Resources are sorted by name, each followed by its subresources (`namespaces`,
/// `namespaces/finalize`, `namespaces/status`, `nodes`, ...; a custom resource's status
/// before its scale), as upstream registers them.
pub fn api_resource_list_document(
    defs: &[Arc<ResourceDefinition>],
    group: &str,
    version: &str,
) -> Option<ApiResourceList> {
    let index = index(defs);
    let resources = index.get(group)?.get(version)?;
    let mut entries: Vec<(String, ApiResource)> = resources
        .iter()
        .flat_map(|def| api_resources(def))
        .collect();
    // By resource; each resource's subresources stay in discovery's order.
    entries.sort_by(|a, b| a.0.split('/').next().cmp(&b.0.split('/').next()));
    Some(ApiResourceList {
        kind: "APIResourceList".into(),
        api_version: if group.is_empty() {
            String::new()
        } else {
            "v1".into()
        },
        group_version: group_version_string(group, version),
        resources: entries.into_iter().map(|(_, resource)| resource).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::group_versions;
    use crate::discovery::tests::{ALL_VERBS, builtin, def, group_defs, json};
    use crate::resource::Verbs;

    #[test]
    fn api_versions_matches_upstream() {
        assert_eq!(
            json(&api_versions_document("10.0.0.1:6443")),
            r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:6443"}]}"#
        );
    }

    #[test]
    fn core_resource_list_matches_upstream() {
        let list = api_resource_list_document(&builtin(), "", "v1").unwrap();
        let expected = format!(
            concat!(
                r#"{{"kind":"APIResourceList","groupVersion":"v1","resources":["#,
                r#"{{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":{all},"shortNames":["cm"],"storageVersionHash":"qFsyl6wFWjQ="}},"#,
                r#"{{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":{all},"shortNames":["ev"],"storageVersionHash":"r2yiGXH7wu8="}},"#,
                r#"{{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"storageVersionHash":"Q3oi5N2YM8M="}},"#,
                r#"{{"name":"namespaces/finalize","singularName":"","namespaced":false,"kind":"Namespace","verbs":["update"]}},"#,
                r#"{{"name":"namespaces/status","singularName":"","namespaced":false,"kind":"Namespace","verbs":["get","patch","update"]}}"#,
                "]}}"
            ),
            all = ALL_VERBS
        );
        assert_eq!(json(&list), expected);
    }

    #[test]
    fn named_group_resource_list_has_api_version_and_shared_storage_hash() {
        let list = api_resource_list_document(&builtin(), "events.k8s.io", "v1").unwrap();
        assert_eq!(
            json(&list),
            format!(
                r#"{{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"events.k8s.io/v1","resources":[{{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":{ALL_VERBS},"shortNames":["ev"],"storageVersionHash":"r2yiGXH7wu8="}}]}}"#
            )
        );
        assert!(api_resource_list_document(&builtin(), "events.k8s.io", "v1beta1").is_none());
        assert!(api_resource_list_document(&builtin(), "nope", "v1").is_none());
    }

    #[test]
    fn group_documents() {
        let mut defs = builtin();
        defs.push(def(
            "stable.example.com",
            "v1beta1",
            "CronTab",
            "crontabs",
            true,
            &["ct"],
            &[],
            Verbs::ALL,
            vec![],
        ));
        defs.push(def(
            "stable.example.com",
            "v1",
            "CronTab",
            "crontabs",
            true,
            &["ct"],
            &[],
            Verbs::ALL,
            vec![],
        ));
        defs.push(def(
            "stable.example.com",
            "v2alpha1",
            "CronTab",
            "crontabs",
            true,
            &["ct"],
            &[],
            Verbs::ALL,
            vec![],
        ));
        assert_eq!(
            json(&api_group_document(&defs, "stable.example.com").unwrap()),
            concat!(
                r#"{"kind":"APIGroup","apiVersion":"v1","name":"stable.example.com","versions":["#,
                r#"{"groupVersion":"stable.example.com/v1","version":"v1"},"#,
                r#"{"groupVersion":"stable.example.com/v1beta1","version":"v1beta1"},"#,
                r#"{"groupVersion":"stable.example.com/v2alpha1","version":"v2alpha1"}],"#,
                r#""preferredVersion":{"groupVersion":"stable.example.com/v1","version":"v1"}}"#
            )
        );
        assert!(api_group_document(&defs, "").is_none());
        assert!(api_group_document(&defs, "batch").is_none());
        assert_eq!(
            group_versions(&defs, "stable.example.com"),
            ["v1", "v1beta1", "v2alpha1"]
        );
    }

    #[test]
    fn api_group_list_matches_upstream() {
        let defs = group_defs(&[
            ("apps", "v1"),
            ("", "v1"),
            ("events.k8s.io", "v1beta1"),
            ("events.k8s.io", "v1"),
        ]);
        assert_eq!(
            json(&api_group_list_document(&defs)),
            concat!(
                r#"{"kind":"APIGroupList","apiVersion":"v1","groups":["#,
                r#"{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},"#,
                r#"{"name":"events.k8s.io","versions":[{"groupVersion":"events.k8s.io/v1","version":"v1"},{"groupVersion":"events.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"events.k8s.io/v1","version":"v1"}}"#,
                "]}"
            )
        );
    }
}
