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
//! APIService priority, which each definition carries ([`ApiServicePriority`]).
//!
//! The module's files: this one holds what both kinds of discovery share (APIService
//! priorities and the kube-aware version order, the kinds subresources report, the index of
//! served group versions, storage version hashes and ETags) and the served bytes of every
//! document; `meta_v1` the meta.k8s.io/v1 documents of `/api`, `/apis` and below; `aggregated`
//! the apidiscovery.k8s.io documents.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

mod aggregated;
mod meta_v1;

pub use aggregated::{
    AggregatedVersion, ApiGroupDiscovery, ApiGroupDiscoveryList, ApiResourceDiscovery,
    ApiSubresourceDiscovery, ApiVersionDiscovery, DiscoveryMeta, EmptyListMeta, ResponseKind,
    aggregated_document,
};
pub use meta_v1::{
    ApiGroup, ApiGroupList, ApiResource, ApiResourceList, ApiVersions, GroupVersionForDiscovery,
    ServerAddressByClientCidr, api_group_document, api_group_list_document,
    api_resource_list_document, api_versions_document,
};

use crate::resource::{ApiServicePriority, ResourceDefinition, Subresource, SubresourceKind};

/// The `ServerAddressByClientCIDR` client CIDR kube-apiserver answers every client with.
const ALL_CLIENTS_CIDR: &str = "0.0.0.0/0";

/// The served versions of one group: each version's definitions, sorted by plural.
type Versions<'a> = BTreeMap<&'a str, Vec<&'a ResourceDefinition>>;

/// The priority of a group version, from its definitions.
fn priority(definitions: &[&ResourceDefinition]) -> ApiServicePriority {
    definitions
        .first()
        .map_or(ApiServicePriority::DEFAULT, |def| def.priority)
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

/// The versions of a group as upstream lists them: higher version priority first, then the
/// kube-aware order. The first one is the preferred version.
fn order_versions<'a>(versions: &Versions<'a>) -> Vec<&'a str> {
    let mut ordered: Vec<(&str, i32)> = versions
        .iter()
        .map(|(version, defs)| (*version, priority(defs).version))
        .collect();
    ordered.sort_by(|(a, pa), (b, pb)| pb.cmp(pa).then_with(|| compare_kube_aware_versions(b, a)));
    ordered.into_iter().map(|(version, _)| version).collect()
}

/// The (group, version, kind) a subresource of `def` reads and writes: the one its definition
/// declares, else a scale subresource's autoscaling/v1 Scale, else the parent's kind.
pub(crate) fn subresource_kind(
    def: &ResourceDefinition,
    sub: &Subresource,
) -> (String, String, String) {
    let gv = &def.group_version;
    if let Some(kind) = &sub.response_kind {
        return (kind.group.clone(), kind.version.clone(), kind.kind.clone());
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

fn strings(values: &[impl AsRef<str>]) -> Vec<String> {
    values.iter().map(|v| v.as_ref().to_string()).collect()
}

/// The verbs discovery lists for a resource: in name order for built-in resources, in the
/// CRD handler's order for custom resources.
fn discovery_verbs(def: &ResourceDefinition) -> Vec<String> {
    if !def.capabilities.dynamic {
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
    match def.capabilities.dynamic {
        true => subresources.sort_by_key(|sub| sub.name != "status"),
        false => subresources.sort_by(|a, b| a.name.cmp(b.name)),
    }
    subresources
}

/// The definitions indexed by group, then version, each version's definitions sorted by plural.
type Index<'a> = BTreeMap<&'a str, Versions<'a>>;

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
            resources.sort_by(|a, b| a.plural.cmp(&b.plural));
        }
    }
    index
}

/// The served versions of `group`, preferred first (empty when the group is not served).
pub fn group_versions(defs: &[Arc<ResourceDefinition>], group: &str) -> Vec<String> {
    let index = index(defs);
    match index.get(group) {
        Some(versions) => order_versions(versions)
            .into_iter()
            .map(String::from)
            .collect(),
        None => Vec::new(),
    }
}

/// The named groups in `/apis` order (the aggregator's APIGroupList): every group version
/// sorted by group priority (descending) and APIService name (`<version>.<group>`), each group
/// placed where its first version lands (the aggregator's own group has the highest priority,
/// so it comes first).
fn legacy_group_order<'a>(index: &Index<'a>) -> Vec<&'a str> {
    let mut services: Vec<(i32, String, &'a str)> = index
        .iter()
        .filter(|(group, _)| !group.is_empty())
        .flat_map(|(group, versions)| {
            versions.iter().map(move |(version, defs)| {
                (priority(defs).group, format!("{version}.{group}"), *group)
            })
        })
        .collect();
    services.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut order = Vec::new();
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
                .values()
                .map(|defs| priority(defs).group)
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
    use std::borrow::Cow;
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
            key_prefix: plural.into(),
            storage_version: GroupVersionKind::new(group, version, kind),
            namespaced,
            ttl: None,
            earlier_versions: None,
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
        Arc::new(ResourceDefinition {
            group_version: GroupVersion::new(group, version),
            kind: kind.into(),
            list_kind: format!("{kind}List").into(),
            plural: plural.into(),
            singular: kind.to_lowercase().into(),
            namespaced,
            short_names: short_names
                .iter()
                .map(|name| Cow::Borrowed(*name))
                .collect(),
            categories: categories.iter().map(|name| Cow::Borrowed(*name)).collect(),
            verbs,
            subresources,
            table: None,
            strategy: Arc::new(NoopStrategy),
            storage,
            converter: None,
            deprecation: None,
            capabilities: crate::resource::Capabilities::TYPED,
            priority: kapi_api::api_service_priority(group, version)
                .map_or(ApiServicePriority::DEFAULT, Into::into),
        })
    }

    pub(crate) fn status() -> Subresource {
        Subresource {
            name: "status",
            kind: SubresourceKind::Status,
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        }
    }

    pub(crate) fn finalize() -> Subresource {
        Subresource {
            name: "finalize",
            kind: SubresourceKind::Finalize,
            verbs: Verbs::UPDATE,
            response_kind: None,
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

    pub(super) fn json(value: &impl Serialize) -> String {
        serde_json::to_string(value).unwrap()
    }

    pub(super) const ALL_VERBS: &str =
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
                spec_replicas: "/spec/replicas".into(),
                status_replicas: "/status/replicas".into(),
                selector: crate::resource::ScaleSelector::LabelSelector("/spec/selector".into()),
            }),
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        };
        // The kind of a subresource is the one its definition declares, whatever serves it.
        let exec = Subresource {
            name: "exec",
            kind: SubresourceKind::Status,
            verbs: Verbs::CREATE | Verbs::GET,
            response_kind: Some(GroupVersionKind::new("", "v1", "PodExecOptions")),
        };
        let eviction = Subresource {
            name: "eviction",
            kind: SubresourceKind::Status,
            verbs: Verbs::CREATE,
            response_kind: Some(GroupVersionKind::new("policy", "v1", "Eviction")),
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
            key_prefix: "".into(),
            storage_version: GroupVersionKind::new("authentication.k8s.io", "v1", "TokenReview"),
            namespaced: false,
            ttl: None,
            earlier_versions: None,
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

    pub(super) fn group_defs(groups: &[(&str, &str)]) -> Vec<Arc<ResourceDefinition>> {
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
