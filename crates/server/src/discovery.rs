//! Discovery documents computed from the served [`ResourceDefinition`]s: `/api`, `/apis`,
//! `/apis/<group>`, `/api/v1` and `/apis/<group>/<version>` (meta.k8s.io/v1 APIVersions,
//! APIGroupList, APIGroup, APIResourceList), and aggregated discovery (apidiscovery.k8s.io
//! APIGroupDiscoveryList) for `/api` and `/apis`.
//!
//! These are pure functions, no HTTP. Each document comes typed (`*_document`: structs whose
//! fields are declared in the order kube-apiserver writes them) and as the JSON bytes
//! upstream's encoder writes (the same fields in the same order, then a newline; a
//! `serde_json::Value` would sort the keys). kube-apiserver
//! serves `/apis` and `/apis/<group>` from its aggregator, so groups and versions are ordered by
//! APIService priority (the built-in table in [`PRIORITIES`], then `1000`/`100` for anything
//! else, as for CRDs), and `apiregistration.k8s.io` comes first.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::resource::{ResourceDefinition, Subresource, SubresourceKind};

/// The group kube-apiserver's aggregator serves itself and always lists first.
pub const APIREGISTRATION_GROUP: &str = "apiregistration.k8s.io";

/// The `ServerAddressByClientCIDR` client CIDR kube-apiserver answers every client with.
const ALL_CLIENTS_CIDR: &str = "0.0.0.0/0";

/// APIService priorities of the built-in group versions: (group, version, group priority,
/// version priority). Higher sorts first; groups with equal priority sort by name. Group
/// versions not listed get [`DEFAULT_GROUP_PRIORITY`] and [`DEFAULT_VERSION_PRIORITY`] (what
/// kube-apiserver gives CRD group versions).
pub const PRIORITIES: &[(&str, &str, i32, i32)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2beta1", 17500, 9),
    ("autoscaling", "v2beta2", 17500, 1),
    ("batch", "v1", 17400, 15),
    ("batch", "v1beta1", 17400, 9),
    ("batch", "v2alpha1", 17400, 9),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1beta1", 17300, 9),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("networking.k8s.io", "v1", 17200, 15),
    ("networking.k8s.io", "v1beta1", 17200, 9),
    ("networking.k8s.io", "v1alpha1", 17200, 1),
    ("policy", "v1", 17100, 15),
    ("policy", "v1beta1", 17100, 9),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("storage.k8s.io", "v1beta1", 16800, 9),
    ("storage.k8s.io", "v1alpha1", 16800, 1),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("coordination.k8s.io", "v1beta1", 16500, 13),
    ("coordination.k8s.io", "v1alpha2", 16500, 12),
    ("node.k8s.io", "v1", 16300, 15),
    ("node.k8s.io", "v1beta1", 16300, 9),
    ("node.k8s.io", "v1alpha1", 16300, 1),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("resource.k8s.io", "v1", 16200, 21),
    ("resource.k8s.io", "v1beta2", 16200, 15),
    ("resource.k8s.io", "v1beta1", 16200, 9),
    ("resource.k8s.io", "v1alpha3", 16200, 1),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("storagemigration.k8s.io", "v1beta1", 15800, 9),
    ("storagemigration.k8s.io", "v1alpha1", 15800, 9),
];

/// The group priority of group versions without a [`PRIORITIES`] entry.
pub const DEFAULT_GROUP_PRIORITY: i32 = 1000;
/// The version priority of group versions without a [`PRIORITIES`] entry.
pub const DEFAULT_VERSION_PRIORITY: i32 = 100;
/// The group priority of [`APIREGISTRATION_GROUP`] in aggregated discovery (above everything).
const APIREGISTRATION_GROUP_PRIORITY: i32 = 20001;

/// The (group priority, version priority) of a group version. A version missing from the table
/// of a group that is in it sorts below the group's listed versions.
fn priority(group: &str, version: &str) -> (i32, i32) {
    if group == APIREGISTRATION_GROUP {
        return (APIREGISTRATION_GROUP_PRIORITY, 0);
    }
    if let Some((_, _, g, v)) = PRIORITIES
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
    {
        return (*g, *v);
    }
    match PRIORITIES.iter().find(|(g, _, _, _)| *g == group) {
        Some((_, _, g, _)) => (*g, 0),
        None => (DEFAULT_GROUP_PRIORITY, DEFAULT_VERSION_PRIORITY),
    }
}

/// A Kubernetes version string parsed as `v<major>[(alpha|beta)<minor>]`: (stability, major,
/// minor), stability 0 alpha, 1 beta, 2 GA.
fn parse_kube_version(v: &str) -> Option<(u8, u64, u64)> {
    fn number(s: &str) -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Numbers that do not fit a signed 64-bit integer make the version not kube-like.
        s.parse::<i64>().ok().map(|n| n as u64)
    }
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
    let major = number(&rest[..digits])?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(minor) = tail.strip_prefix("alpha") {
        (0, minor)
    } else if let Some(minor) = tail.strip_prefix("beta") {
        (1, minor)
    } else {
        return None;
    };
    Some((stability, major, number(minor)?))
}

/// Compares two version strings the way upstream's `version.CompareKubeAwareVersionStrings`
/// does: `Greater` when `a` is the more preferred one. Kube-like versions (`v1`, `v2beta1`,
/// `v1alpha3`) beat others; GA beats beta beats alpha; then higher major, then higher minor.
/// Two non-kube-like versions compare reversed lexicographically (`"a"` beats `"b"`).
pub fn compare_kube_aware_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((sa, ma, na)), Some((sb, mb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
    }
}

/// Orders the versions of `group` as upstream lists them: higher version priority first, then
/// the kube-aware order. The first one is the preferred version.
fn order_versions(group: &str, versions: &mut [&str]) {
    versions.sort_by(|a, b| {
        let (pa, pb) = (priority(group, a).1, priority(group, b).1);
        pb.cmp(&pa).then_with(|| compare_kube_aware_versions(b, a))
    });
}

/// (parent group, parent kind, subresource name).
type SubresourceKey = (&'static str, &'static str, &'static str);
/// (group, version, kind).
type Gvk = (&'static str, &'static str, &'static str);

/// The kinds upstream's built-in subresources read and write when they are not the parent's
/// (parent group, parent kind, subresource) -> (group, version, kind): the create
/// subresources' request kinds and the connect subresources' options kinds.
const SUBRESOURCE_KINDS: &[(SubresourceKey, Gvk)] = &[
    (("", "Pod", "binding"), ("", "v1", "Binding")),
    (("", "Pod", "eviction"), ("policy", "v1", "Eviction")),
    (("", "Pod", "attach"), ("", "v1", "PodAttachOptions")),
    (("", "Pod", "exec"), ("", "v1", "PodExecOptions")),
    (
        ("", "Pod", "portforward"),
        ("", "v1", "PodPortForwardOptions"),
    ),
    (("", "Pod", "proxy"), ("", "v1", "PodProxyOptions")),
    (("", "Node", "proxy"), ("", "v1", "NodeProxyOptions")),
    (("", "Service", "proxy"), ("", "v1", "ServiceProxyOptions")),
    (
        ("", "ServiceAccount", "token"),
        ("authentication.k8s.io", "v1", "TokenRequest"),
    ),
];

/// The (group, version, kind) a subresource of `def` reads and writes: a scale subresource's
/// autoscaling/v1 Scale, a built-in subresource's own kind, else the parent's kind.
pub(crate) fn subresource_kind(
    def: &ResourceDefinition,
    sub: &Subresource,
) -> (String, String, String) {
    let gv = &def.group_version;
    let key = (gv.group.as_str(), def.kind, sub.name);
    if let Some((_, (group, version, kind))) = SUBRESOURCE_KINDS.iter().find(|(k, _)| *k == key) {
        return (group.to_string(), version.to_string(), kind.to_string());
    }
    match sub.kind {
        SubresourceKind::Scale(_) => ("autoscaling".into(), "v1".into(), "Scale".into()),
        _ => (gv.group.clone(), gv.version.clone(), def.kind.to_string()),
    }
}

/// A subresource's kind as discovery lists it: group and version empty when they are the
/// parent's own.
fn listed_subresource_kind(def: &ResourceDefinition, sub: &Subresource) -> ResponseKind {
    let (group, version, kind) = subresource_kind(def, sub);
    let own = group == def.group_version.group && version == def.group_version.version;
    if own {
        ResponseKind {
            group: String::new(),
            version: String::new(),
            kind,
        }
    } else {
        ResponseKind {
            group,
            version,
            kind,
        }
    }
}

/// The definitions indexed by group, then version, each version's definitions sorted by plural.
type Index<'a> = BTreeMap<&'a str, BTreeMap<&'a str, Vec<&'a ResourceDefinition>>>;

fn index(defs: &[Arc<ResourceDefinition>]) -> Index<'_> {
    let mut index: Index<'_> = BTreeMap::new();
    for def in defs {
        index
            .entry(def.group_version.group.as_str())
            .or_default()
            .entry(def.group_version.version.as_str())
            .or_default()
            .push(def);
    }
    for versions in index.values_mut() {
        for resources in versions.values_mut() {
            resources.sort_by(|a, b| a.plural.cmp(b.plural));
        }
    }
    index
}

/// The served versions of `group`, preferred first (empty when the group is not served).
pub fn group_versions(defs: &[Arc<ResourceDefinition>], group: &str) -> Vec<String> {
    let index = index(defs);
    match index.get(group) {
        Some(versions) => {
            let mut versions: Vec<&str> = versions.keys().copied().collect();
            order_versions(group, &mut versions);
            versions.into_iter().map(String::from).collect()
        }
        None => Vec::new(),
    }
}

/// The named groups in `/apis` order (the aggregator's APIGroupList): `apiregistration.k8s.io`
/// first, then every group version sorted by group priority (descending) and APIService name
/// (`<version>.<group>`), each group placed where its first version lands.
fn legacy_group_order<'a>(index: &Index<'a>) -> Vec<&'a str> {
    let mut order = Vec::new();
    if index.contains_key(APIREGISTRATION_GROUP) {
        order.push(APIREGISTRATION_GROUP);
    }
    let mut services: Vec<(i32, String, &'a str)> = index
        .iter()
        .filter(|(group, _)| !group.is_empty() && **group != APIREGISTRATION_GROUP)
        .flat_map(|(group, versions)| {
            versions.keys().map(move |version| {
                (
                    priority(group, version).0,
                    format!("{version}.{group}"),
                    *group,
                )
            })
        })
        .collect();
    services.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (_, _, group) in services {
        if !order.contains(&group) {
            order.push(group);
        }
    }
    order
}

/// The named groups in aggregated `/apis` order: by the highest group priority of the group's
/// versions (descending), then by name.
fn aggregated_group_order<'a>(index: &Index<'a>) -> Vec<&'a str> {
    let mut groups: Vec<(i32, &'a str)> = index
        .iter()
        .filter(|(group, _)| !group.is_empty())
        .map(|(group, versions)| {
            let top = versions
                .keys()
                .map(|version| priority(group, version).0)
                .max()
                .unwrap_or(0);
            (top, *group)
        })
        .collect();
    groups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    groups.into_iter().map(|(_, group)| group).collect()
}

/// The hash discovery publishes for a resource's storage version: standard base64 of the
/// first 8 bytes of the SHA-256 of `<group>/<version>/<kind>`.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    STANDARD.encode(&digest.as_ref()[..8])
}

/// The value of the `ETag` header of a discovery or OpenAPI document (quoted, as upstream
/// sends it): the upper-case hex SHA-512 of the document's bytes. Compare it verbatim with the
/// request's `If-None-Match` and answer 304 when they are equal.
pub fn etag(document: &[u8]) -> String {
    format!("\"{}\"", sha512_hex(document))
}

/// Upper-case hex SHA-512, as upstream's discovery and OpenAPI hashes.
pub(crate) fn sha512_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = ring::digest::digest(&ring::digest::SHA512, bytes);
    digest
        .as_ref()
        .iter()
        .fold(String::with_capacity(128), |mut out, b| {
            let _ = write!(out, "{b:02X}");
            out
        })
}

// ---------------------------------------------------------------------------------------------
// meta.k8s.io/v1 discovery documents

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

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
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
    let mut ordered: Vec<&str> = versions.keys().copied().collect();
    order_versions(group, &mut ordered);
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
            short_names: strings(def.short_names),
            categories: strings(def.categories),
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

// ---------------------------------------------------------------------------------------------
// Aggregated discovery (apidiscovery.k8s.io)

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

/// The verbs discovery lists for a resource: in name order for built-in resources, in the
/// CRD handler's order for custom resources.
fn discovery_verbs(def: &ResourceDefinition) -> Vec<String> {
    if !def.custom_resource {
        return strings(&def.verbs.names());
    }
    const CUSTOM_RESOURCE_ORDER: [&str; 8] = [
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch",
    ];
    let names = def.verbs.names();
    let listed = CUSTOM_RESOURCE_ORDER
        .iter()
        .filter(|verb| names.contains(verb));
    listed.map(|verb| verb.to_string()).collect()
}

/// A resource's subresources in discovery's order: by name for built-in resources, status
/// then scale for custom resources (as the CRD discovery controller adds them).
fn discovery_subresources(def: &ResourceDefinition) -> Vec<&Subresource> {
    let mut subresources: Vec<&Subresource> = def.subresources.iter().collect();
    match def.custom_resource {
        true => subresources.sort_by_key(|sub| sub.name != "status"),
        false => subresources.sort_by(|a, b| a.name.cmp(b.name)),
    }
    subresources
}

/// The response kind aggregated discovery names: built-in resources leave the group and
/// version of their own group version out; the CRD discovery controller names them.
fn aggregated_response_kind(def: &ResourceDefinition, kind: ResponseKind) -> ResponseKind {
    match def.custom_resource && kind.group.is_empty() && kind.version.is_empty() {
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
        short_names: strings(def.short_names),
        categories: strings(def.categories),
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
    let mut ordered: Vec<&str> = versions.keys().copied().collect();
    order_versions(group, &mut ordered);
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

// ---------------------------------------------------------------------------------------------
// The documents as kube-apiserver writes them

/// A document's JSON as upstream's encoder writes it: the typed fields in their declared
/// (Go) order, then a newline.
fn json(document: &impl Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(document).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// [`api_versions_document`] as JSON.
pub fn api_versions(server_address: &str) -> Vec<u8> {
    json(&api_versions_document(server_address))
}

/// [`api_group_list_document`] as JSON.
pub fn api_group_list(defs: &[Arc<ResourceDefinition>]) -> Vec<u8> {
    json(&api_group_list_document(defs))
}

/// [`api_group_document`] as JSON.
pub fn api_group(defs: &[Arc<ResourceDefinition>], group: &str) -> Option<Vec<u8>> {
    api_group_document(defs, group).map(|doc| json(&doc))
}

/// [`api_resource_list_document`] as JSON.
pub fn api_resource_list(
    defs: &[Arc<ResourceDefinition>],
    group: &str,
    version: &str,
) -> Option<Vec<u8>> {
    api_resource_list_document(defs, group, version).map(|doc| json(&doc))
}

/// [`aggregated_document`] as JSON.
pub fn aggregated(
    defs: &[Arc<ResourceDefinition>],
    legacy: bool,
    version: AggregatedVersion,
) -> Vec<u8> {
    json(&aggregated_document(defs, legacy, version))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use kapi_apimachinery::schema::{GroupVersion, GroupVersionKind};
    use kapi_apimachinery::validation::field::FieldErrors;
    use serde_json::Value;

    use super::*;
    use crate::resource::{StorageDefinition, Strategy, Subresource, SubresourceKind, Verbs};

    struct NoopStrategy;

    impl Strategy for NoopStrategy {
        fn validate(&self, _object: &Value) -> FieldErrors {
            FieldErrors::default()
        }
    }

    /// Every verb but deletecollection (namespaces).
    pub(crate) fn no_deletecollection() -> Verbs {
        Verbs::CREATE
            | Verbs::DELETE
            | Verbs::GET
            | Verbs::LIST
            | Verbs::PATCH
            | Verbs::UPDATE
            | Verbs::WATCH
    }

    /// A definition stored in its own group version.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn def(
        group: &str,
        version: &str,
        kind: &'static str,
        plural: &'static str,
        namespaced: bool,
        short_names: &'static [&'static str],
        categories: &'static [&'static str],
        verbs: Verbs,
        subresources: Vec<Subresource>,
    ) -> Arc<ResourceDefinition> {
        let storage = Arc::new(StorageDefinition {
            key_prefix: plural,
            storage_version: GroupVersionKind::new(group, version, kind),
            namespaced,
        });
        stored_in(
            group,
            version,
            kind,
            plural,
            namespaced,
            short_names,
            categories,
            verbs,
            subresources,
            storage,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stored_in(
        group: &str,
        version: &str,
        kind: &'static str,
        plural: &'static str,
        namespaced: bool,
        short_names: &'static [&'static str],
        categories: &'static [&'static str],
        verbs: Verbs,
        subresources: Vec<Subresource>,
        storage: Arc<StorageDefinition>,
    ) -> Arc<ResourceDefinition> {
        let list_kind: &'static str = Box::leak(format!("{kind}List").into_boxed_str());
        let singular: &'static str = Box::leak(kind.to_lowercase().into_boxed_str());
        Arc::new(ResourceDefinition {
            group_version: GroupVersion::new(group, version),
            kind,
            list_kind,
            plural,
            singular,
            namespaced,
            short_names,
            categories,
            verbs,
            subresources,
            table: None,
            strategy: Arc::new(NoopStrategy),
            storage,
            converter: None,
            deprecation: None,
            custom_resource: false,
        })
    }

    pub(crate) fn status() -> Subresource {
        Subresource {
            name: "status",
            kind: SubresourceKind::Status,
            verbs: Verbs::GET_UPDATE_PATCH,
        }
    }

    pub(crate) fn finalize() -> Subresource {
        Subresource {
            name: "finalize",
            kind: SubresourceKind::Finalize,
            verbs: Verbs::UPDATE,
        }
    }

    /// configmaps, events, namespaces (core), events.k8s.io events sharing core's storage,
    /// leases, deployments.
    pub(crate) fn builtin() -> Vec<Arc<ResourceDefinition>> {
        let core_events = def(
            "",
            "v1",
            "Event",
            "events",
            true,
            &["ev"],
            &[],
            Verbs::ALL,
            vec![],
        );
        vec![
            def(
                "",
                "v1",
                "ConfigMap",
                "configmaps",
                true,
                &["cm"],
                &[],
                Verbs::ALL,
                vec![],
            ),
            def(
                "",
                "v1",
                "Namespace",
                "namespaces",
                false,
                &["ns"],
                &[],
                no_deletecollection(),
                vec![status(), finalize()],
            ),
            stored_in(
                "events.k8s.io",
                "v1",
                "Event",
                "events",
                true,
                &["ev"],
                &[],
                Verbs::ALL,
                vec![],
                core_events.storage.clone(),
            ),
            core_events,
            def(
                "coordination.k8s.io",
                "v1",
                "Lease",
                "leases",
                true,
                &[],
                &[],
                Verbs::ALL,
                vec![],
            ),
            def(
                "apps",
                "v1",
                "Deployment",
                "deployments",
                true,
                &["deploy"],
                &["all"],
                Verbs::ALL,
                vec![status()],
            ),
        ]
    }

    fn json(value: &impl Serialize) -> String {
        serde_json::to_string(value).unwrap()
    }

    const ALL_VERBS: &str =
        r#"["create","delete","deletecollection","get","list","patch","update","watch"]"#;

    #[test]
    fn kube_aware_version_order() {
        let mut versions = vec![
            "v1",
            "foo10",
            "v11alpha2",
            "v2",
            "v3beta1",
            "foo1",
            "v12alpha1",
            "v10beta3",
            "v10",
            "v11beta2",
        ];
        versions.sort_by(|a, b| compare_kube_aware_versions(b, a));
        assert_eq!(
            versions,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
        assert_eq!(compare_kube_aware_versions("v1", "v1"), Ordering::Equal);
        // Not kube-like: a prefix other than `v`, a trailing suffix, an empty number.
        assert_eq!(compare_kube_aware_versions("v1", "x1"), Ordering::Greater);
        assert_eq!(
            compare_kube_aware_versions("v1beta", "v1alpha1"),
            Ordering::Less
        );
        assert_eq!(
            compare_kube_aware_versions("v1gamma1", "v1alpha1"),
            Ordering::Less
        );
        assert_eq!(compare_kube_aware_versions("v", "v1alpha1"), Ordering::Less);
    }

    #[test]
    fn storage_version_hashes_match_upstream() {
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(storage_version_hash("", "v1", "Namespace"), "Q3oi5N2YM8M=");
        assert_eq!(storage_version_hash("", "v1", "Event"), "r2yiGXH7wu8=");
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(storage_version_hash("", "v1", "Service"), "0/CO1lhkEBI=");
    }

    #[test]
    fn subresource_kinds_and_computed_resources_as_upstream_lists_them() {
        let scale = Subresource {
            name: "scale",
            kind: SubresourceKind::Scale(crate::resource::ScalePaths {
                spec_replicas: "/spec/replicas",
                status_replicas: "/status/replicas",
                selector: crate::resource::ScaleSelector::LabelSelector("/spec/selector"),
            }),
            verbs: Verbs::GET_UPDATE_PATCH,
        };
        // The kind of a connect subresource comes from the table, whatever serves it.
        let exec = Subresource {
            name: "exec",
            kind: SubresourceKind::Status,
            verbs: Verbs::CREATE | Verbs::GET,
        };
        let eviction = Subresource {
            name: "eviction",
            kind: SubresourceKind::Status,
            verbs: Verbs::CREATE,
        };
        let deployments = def(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
            &[],
            &[],
            Verbs::ALL,
            vec![scale.clone(), status()],
        );
        let pods = def(
            "",
            "v1",
            "Pod",
            "pods",
            true,
            &[],
            &[],
            Verbs::ALL,
            vec![eviction, exec, status()],
        );
        let reviews = Arc::new(StorageDefinition {
            key_prefix: "",
            storage_version: GroupVersionKind::new("authentication.k8s.io", "v1", "TokenReview"),
            namespaced: false,
        });
        let token_reviews = stored_in(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            false,
            &[],
            &[],
            Verbs::CREATE,
            vec![],
            reviews,
        );
        let defs = vec![deployments, pods, token_reviews];
        let listed =
            |group: &str, version: &str| -> Vec<(String, String, String, String, String)> {
                api_resource_list_document(&defs, group, version)
                    .unwrap()
                    .resources
                    .into_iter()
                    .map(|r| (r.name, r.group, r.version, r.kind, r.storage_version_hash))
                    .collect()
            };
        let row = |n: &str, g: &str, v: &str, k: &str, h: &str| {
            (n.into(), g.into(), v.into(), k.into(), h.into())
        };
        assert_eq!(
            listed("apps", "v1"),
            [
                row("deployments", "", "", "Deployment", "8aSe+NMegvE="),
                row("deployments/scale", "autoscaling", "v1", "Scale", ""),
                row("deployments/status", "", "", "Deployment", ""),
            ]
        );
        assert_eq!(
            listed("", "v1")[1..3],
            [
                row("pods/eviction", "policy", "v1", "Eviction", ""),
                row("pods/exec", "", "", "PodExecOptions", ""),
            ]
        );
        assert_eq!(
            listed("authentication.k8s.io", "v1"),
            [row("tokenreviews", "", "", "TokenReview", "")]
        );
        let aggregated = aggregated_document(&defs, false, "v2");
        let apps = &aggregated.items[0].versions[0].resources[0];
        let kinds: Vec<&ResponseKind> =
            apps.subresources.iter().map(|s| &s.response_kind).collect();
        assert_eq!(
            kinds,
            [
                &ResponseKind {
                    group: "autoscaling".into(),
                    version: "v1".into(),
                    kind: "Scale".into()
                },
                &ResponseKind {
                    group: String::new(),
                    version: String::new(),
                    kind: "Deployment".into()
                },
            ]
        );
    }

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
    fn version_priorities_beat_kube_order() {
        let defs: Vec<_> = ["v1", "v2", "v2beta2", "v2beta1"]
            .into_iter()
            .map(|v| {
                def(
                    "autoscaling",
                    v,
                    "HorizontalPodAutoscaler",
                    "horizontalpodautoscalers",
                    true,
                    &[],
                    &[],
                    Verbs::ALL,
                    vec![],
                )
            })
            .collect();
        assert_eq!(
            group_versions(&defs, "autoscaling"),
            ["v2", "v1", "v2beta1", "v2beta2"]
        );
        // flowcontrol: v1 (21) over v1beta3 (18).
        let defs: Vec<_> = ["v1beta3", "v1"]
            .into_iter()
            .map(|v| {
                def(
                    "flowcontrol.apiserver.k8s.io",
                    v,
                    "FlowSchema",
                    "flowschemas",
                    false,
                    &[],
                    &[],
                    Verbs::ALL,
                    vec![],
                )
            })
            .collect();
        assert_eq!(
            group_versions(&defs, "flowcontrol.apiserver.k8s.io"),
            ["v1", "v1beta3"]
        );
    }

    fn group_defs(groups: &[(&str, &str)]) -> Vec<Arc<ResourceDefinition>> {
        groups
            .iter()
            .map(|(g, v)| def(g, v, "Thing", "things", false, &[], &[], Verbs::ALL, vec![]))
            .collect()
    }

    #[test]
    fn group_order_follows_apiservice_priorities() {
        let defs = group_defs(&[
            ("", "v1"),
            ("zeta.example.com", "v1"),
            ("resource.k8s.io", "v1"),
            ("apiextensions.k8s.io", "v1"),
            ("apps", "v1"),
            ("alpha.example.com", "v1beta1"),
            ("discovery.k8s.io", "v1"),
            ("admissionregistration.k8s.io", "v1"),
            ("apiregistration.k8s.io", "v1"),
            ("events.k8s.io", "v1"),
            ("rbac.authorization.k8s.io", "v1"),
            ("coordination.k8s.io", "v1"),
            ("beta.example.com", "v1"),
        ]);
        let legacy: Vec<String> = api_group_list_document(&defs)
            .groups
            .into_iter()
            .map(|g| g.name)
            .collect();
        let expected_prefix = [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "rbac.authorization.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "coordination.k8s.io",
            "discovery.k8s.io",
            "resource.k8s.io",
        ];
        assert_eq!(legacy[..9], expected_prefix);
        // Equal priorities: by APIService name, `v1.` sorts before `v1beta1.`.
        assert_eq!(
            legacy[9..],
            ["beta.example.com", "zeta.example.com", "alpha.example.com"]
        );

        let by_name: Vec<String> = aggregated_document(&defs, false, AggregatedVersion::V2)
            .items
            .into_iter()
            .map(|g| g.metadata.name)
            .collect();
        assert_eq!(by_name[..9], expected_prefix);
        // Equal priorities: by group name.
        assert_eq!(
            by_name[9..],
            ["alpha.example.com", "beta.example.com", "zeta.example.com"]
        );

        let legacy_aggregated = aggregated_document(&defs, true, AggregatedVersion::V2);
        assert_eq!(legacy_aggregated.items.len(), 1);
        assert_eq!(json(&legacy_aggregated.items[0].metadata), r#"{}"#);
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

    #[test]
    fn documents_round_trip() {
        let doc = aggregated_document(&builtin(), false, AggregatedVersion::V2);
        let back: ApiGroupDiscoveryList =
            serde_json::from_slice(&serde_json::to_vec(&doc).unwrap()).unwrap();
        assert_eq!(back, doc);
        let list = api_resource_list_document(&builtin(), "", "v1").unwrap();
        let back: ApiResourceList = serde_json::from_str(&json(&list)).unwrap();
        assert_eq!(back, list);
    }

    #[test]
    fn etag_is_quoted_upper_hex_sha512() {
        let tag = etag(b"{}");
        assert_eq!(tag.len(), 130);
        assert!(tag.starts_with('"') && tag.ends_with('"'));
        assert!(
            tag[1..129]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
        );
        assert_eq!(
            &tag[1..17],
            // sha512("{}") = 27c74670adb75075...
            "27C74670ADB75075"
        );
        assert_eq!(etag(b"{}"), tag);
        assert_ne!(etag(b"[]"), tag);
    }

    /// The served bytes keep Go's field order (not a `Value`'s sorted keys) and end with a
    /// newline, as upstream's encoder writes them: scripts that match raw JSON see the same.
    #[test]
    fn served_documents_keep_upstream_field_order() {
        let defs = builtin();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        let versions = text(api_versions("a:1"));
        assert_eq!(
            versions,
            "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":\
             [{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"a:1\"}]}\n"
        );
        let core = text(api_resource_list(&defs, "", "v1").unwrap());
        assert!(
            core.starts_with(
                "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":[{\"name\":"
            ),
            "{core}"
        );
        assert!(core.ends_with("}\n"));
        let group = text(api_group(&defs, "apps").unwrap());
        assert!(
            group.starts_with("{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"apps\""),
            "{group}"
        );
        let groups = text(api_group_list(&defs));
        assert!(
            groups.starts_with("{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":"),
            "{groups}"
        );
        assert_eq!(api_group(&defs, "batch"), None);
        let aggregated = text(aggregated(&defs, false, AggregatedVersion::V2));
        assert!(
            aggregated.starts_with(
                "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\""
            ),
            "{}",
            &aggregated[..100]
        );
    }
}
