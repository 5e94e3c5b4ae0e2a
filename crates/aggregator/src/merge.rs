//! The chain's documents with the backends' merged in: `/apis` (meta.k8s.io/v1 and
//! aggregated), each remote group placed among the chain's by its APIServices' priority
//! (groupPriorityMinimum, then name) and its versions by versionPriority, as upstream orders
//! them; OpenAPI v2 with the backends' paths and definitions; the OpenAPI v3 index with the
//! backends' group versions (whose documents are then proxied to them).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use kapi_server::discovery::{
    ApiGroup, ApiGroupDiscovery, ApiGroupDiscoveryList, ApiGroupList, DiscoveryMeta,
    GroupVersionForDiscovery, compare_kube_aware_versions,
};
use kapi_server::resource::ResourceDefinition;
use serde_json::Value;

use crate::backends::{Backend, Table};
use crate::remote_docs::Documents;

/// Which OpenAPI document.
#[derive(Clone, Copy)]
pub(crate) enum OpenApi {
    V2,
    V3,
}

/// Which document is merged.
pub(crate) enum Document {
    Apis,
    OpenApi(OpenApi),
}

impl Document {
    /// Its name, for cache keys.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Document::Apis => "apis",
            Document::OpenApi(OpenApi::V2) => "openapi/v2",
            Document::OpenApi(OpenApi::V3) => "openapi/v3",
        }
    }
}

/// What a merge reads.
pub(crate) struct Context<'a> {
    /// The chain's own definitions.
    pub definitions: &'a [Arc<ResourceDefinition>],
    pub backends: &'a Table,
    pub documents: &'a HashMap<String, Documents>,
}

/// The chain's `document` (of `content_type`) with the backends' merged in; `None` when it
/// is not one this merges (another encoding) or could not be read.
pub(crate) fn merge(
    document: &Document,
    content_type: &str,
    body: &[u8],
    context: &Context<'_>,
) -> Option<Bytes> {
    let json = content_type.starts_with("application/json");
    let bytes = match document {
        _ if !json => return None,
        Document::Apis if content_type.contains("as=APIGroupDiscoveryList") => {
            let mut list: ApiGroupDiscoveryList = serde_json::from_slice(body).ok()?;
            merge_aggregated(&mut list, context);
            serde_json::to_vec(&list).ok()?
        }
        Document::Apis => {
            let mut list: ApiGroupList = serde_json::from_slice(body).ok()?;
            merge_group_list(&mut list, context);
            serde_json::to_vec(&list).ok()?
        }
        Document::OpenApi(OpenApi::V2) => {
            let mut spec: Value = serde_json::from_slice(body).ok()?;
            merge_openapi_v2(&mut spec, context);
            serde_json::to_vec(&spec).ok()?
        }
        Document::OpenApi(OpenApi::V3) => {
            let mut index: Value = serde_json::from_slice(body).ok()?;
            merge_openapi_v3(&mut index, context);
            serde_json::to_vec(&index).ok()?
        }
    };
    let mut bytes = bytes;
    bytes.push(b'\n');
    Some(Bytes::from(bytes))
}

/// The remote APIServices by group, each group's in version order (versionPriority, then
/// the kube-aware version order, highest first).
fn remote_groups(table: &Table) -> BTreeMap<&str, Vec<&Backend>> {
    let mut groups: BTreeMap<&str, Vec<&Backend>> = BTreeMap::new();
    for backend in table
        .values()
        .filter(|b| b.service.is_some() && !b.group.is_empty())
    {
        groups.entry(&backend.group).or_default().push(backend);
    }
    for versions in groups.values_mut() {
        versions.sort_by(|a, b| {
            b.version_priority
                .cmp(&a.version_priority)
                .then_with(|| compare_kube_aware_versions(&b.version, &a.version))
        });
    }
    groups
}

/// A group's priority: the highest groupPriorityMinimum of its versions, local or remote.
fn group_priority(group: &str, context: &Context<'_>) -> i64 {
    let local = context
        .definitions
        .iter()
        .filter(|d| d.group_version.group == group)
        .map(|d| i64::from(d.priority.group));
    let remote = context
        .backends
        .values()
        .filter(|b| b.group == group)
        .map(|b| b.group_priority_minimum);
    local.chain(remote).max().unwrap_or_default()
}

/// Where a group of `priority` named `name` goes among `existing` (names in order): before
/// the first of lower priority, or of equal priority and a later name.
fn position(existing: &[&str], name: &str, priority: i64, context: &Context<'_>) -> usize {
    existing
        .iter()
        .position(|other| {
            let theirs = group_priority(other, context);
            theirs < priority || (theirs == priority && *other > name)
        })
        .unwrap_or(existing.len())
}

/// `/apis` (meta.k8s.io/v1) with every remote group, available or not, as upstream lists
/// APIServices.
fn merge_group_list(list: &mut ApiGroupList, context: &Context<'_>) {
    for (group, versions) in remote_groups(context.backends) {
        if list.groups.iter().any(|g| g.name == group) {
            continue;
        }
        let names: Vec<&str> = list.groups.iter().map(|g| g.name.as_str()).collect();
        let at = position(&names, group, group_priority(group, context), context);
        list.groups
            .insert(at, group_document(group, &versions, false));
    }
}

/// The APIGroup of a remote group's `versions`, the first preferred.
fn group_document(group: &str, versions: &[&Backend], typed: bool) -> ApiGroup {
    let versions: Vec<GroupVersionForDiscovery> = versions
        .iter()
        .map(|b| GroupVersionForDiscovery {
            group_version: format!("{group}/{}", b.version),
            version: b.version.clone(),
        })
        .collect();
    ApiGroup {
        kind: if typed {
            "APIGroup".into()
        } else {
            String::new()
        },
        api_version: if typed { "v1".into() } else { String::new() },
        name: group.to_string(),
        preferred_version: versions[0].clone(),
        versions,
        server_address_by_client_cidrs: Vec::new(),
    }
}

/// `/apis/<group>` of a group only remote APIServices serve.
pub(crate) fn api_group(table: &Table, group: &str) -> Option<Bytes> {
    let groups = remote_groups(table);
    let versions = groups.get(group)?;
    let mut bytes = serde_json::to_vec(&group_document(group, versions, true)).ok()?;
    bytes.push(b'\n');
    Some(Bytes::from(bytes))
}

/// Aggregated `/apis` with the discovery fetched from each remote backend (those never
/// fetched are left out; those that stopped answering are `Stale`).
fn merge_aggregated(list: &mut ApiGroupDiscoveryList, context: &Context<'_>) {
    for (group, backends) in remote_groups(context.backends) {
        let versions: Vec<_> = backends
            .iter()
            .filter_map(|b| context.documents.get(&b.name)?.discovery.clone())
            .collect();
        if versions.is_empty() {
            continue;
        }
        match list.items.iter_mut().find(|g| g.metadata.name == group) {
            Some(existing) => existing.versions.extend(versions),
            None => {
                let names: Vec<&str> = list
                    .items
                    .iter()
                    .map(|g| g.metadata.name.as_str())
                    .collect();
                let at = position(&names, group, group_priority(group, context), context);
                let item = ApiGroupDiscovery {
                    metadata: DiscoveryMeta {
                        name: group.to_string(),
                        creation_timestamp: None,
                    },
                    versions,
                };
                list.items.insert(at, item);
            }
        }
    }
}

/// OpenAPI v2 with each backend's paths of its group version and the definitions the chain
/// lacks.
fn merge_openapi_v2(spec: &mut Value, context: &Context<'_>) {
    for documents in context.documents.values() {
        let Some((paths, definitions)) = &documents.openapi_v2 else {
            continue;
        };
        if let Some(all) = spec["paths"].as_object_mut() {
            for (path, item) in paths {
                all.entry(path.clone()).or_insert_with(|| item.clone());
            }
        }
        if let Some(all) = spec["definitions"].as_object_mut() {
            for (name, definition) in definitions {
                all.entry(name.clone())
                    .or_insert_with(|| definition.clone());
            }
        }
    }
}

/// The OpenAPI v3 index with each backend's group version.
fn merge_openapi_v3(index: &mut Value, context: &Context<'_>) {
    let Some(paths) = index["paths"].as_object_mut() else {
        return;
    };
    for backend in context.backends.values().filter(|b| b.service.is_some()) {
        let entry = context
            .documents
            .get(&backend.name)
            .and_then(|d| d.openapi_v3.clone());
        if let Some(entry) = entry {
            let key = format!("apis/{}/{}", backend.group, backend.version);
            paths.entry(key).or_insert(entry);
        }
    }
}
