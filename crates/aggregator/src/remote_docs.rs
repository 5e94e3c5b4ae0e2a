//! The documents the aggregator fetches from each backend to merge into its own (upstream's
//! discovery aggregation and OpenAPI aggregation controllers): the backend's discovery of its
//! group version (aggregated when it serves it, else converted from its APIResourceList), its
//! OpenAPI v2 paths and definitions for that group version, and its OpenAPI v3 entry.
//! Fetched when the APIServices change and every [`REFRESH`]; a backend that stops answering
//! keeps its last documents, its discovery marked `Stale`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use kapi_server::discovery::{
    ApiGroupDiscoveryList, ApiResourceDiscovery, ApiResourceList, ApiSubresourceDiscovery,
    ApiVersionDiscovery, ResponseKind,
};
use kapi_server::proxy::ProxyTransport;
use parking_lot::RwLock;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::backends::{Backend, Backends};

/// How often every backend's documents are fetched again.
const REFRESH: Duration = Duration::from_secs(60);
/// How long one fetch may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// What aggregated discovery is asked for with.
const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// One backend's documents.
#[derive(Clone, Default)]
pub(crate) struct Documents {
    /// Its group version's aggregated discovery.
    pub discovery: Option<ApiVersionDiscovery>,
    /// Its OpenAPI v2 paths of the group version and the definitions they use.
    pub openapi_v2: Option<(Map<String, Value>, Map<String, Value>)>,
    /// Its OpenAPI v3 index entry of the group version (`serverRelativeURL`).
    pub openapi_v3: Option<Value>,
}

/// The documents of every remote APIService, by name.
#[derive(Default)]
pub(crate) struct RemoteDocuments {
    documents: RwLock<Arc<HashMap<String, Documents>>>,
    /// Bumped after every refresh.
    generation: AtomicU64,
}

impl RemoteDocuments {
    /// The documents of every remote APIService fetched so far.
    pub(crate) fn all(&self) -> Arc<HashMap<String, Documents>> {
        self.documents.read().clone()
    }

    /// How many refreshes have been written.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Fetches every remote backend's documents when the APIServices change and every
    /// [`REFRESH`], until `stopping`.
    pub(crate) fn start(self: &Arc<Self>, backends: Arc<Backends>, stopping: CancellationToken) {
        let documents = self.clone();
        let mut changes = backends.subscribe();
        tokio::spawn(async move {
            loop {
                documents.refresh(&backends).await;
                tokio::select! {
                    _ = stopping.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = tokio::time::sleep(REFRESH) => {}
                }
            }
        });
    }

    /// Fetches the documents of every remote backend, concurrently.
    async fn refresh(&self, backends: &Backends) {
        let table = backends.table();
        let remote: Vec<&Arc<Backend>> = table.values().filter(|b| b.service.is_some()).collect();
        let fetched = futures::future::join_all(remote.iter().map(|b| fetch(b))).await;
        let previous = self.all();
        let mut next = HashMap::new();
        for (backend, fetched) in remote.into_iter().zip(fetched) {
            let documents = match fetched {
                Some(documents) => documents,
                None => {
                    let Some(mut kept) = previous.get(&backend.name).cloned() else {
                        continue;
                    };
                    if let Some(discovery) = &mut kept.discovery {
                        discovery.freshness = "Stale".into();
                    }
                    kept
                }
            };
            next.insert(backend.name.clone(), documents);
        }
        *self.documents.write() = Arc::new(next);
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// One backend's documents; `None` when it could not be reached or its discovery not read.
async fn fetch(backend: &Backend) -> Option<Documents> {
    let transport = backend.transport.as_ref().ok()?;
    let endpoint = crate::resolver::pick(backend.addresses.as_ref().ok()?);
    let get = |path: String, accept: &'static str| {
        let transport = transport.clone();
        let endpoint = endpoint.clone();
        async move { get(&transport, &endpoint, &path, accept).await }
    };
    let (group, version) = (&backend.group, &backend.version);
    let discovery = match get("/apis".into(), AGGREGATED_ACCEPT).await {
        Some((content_type, body)) if content_type.contains("as=APIGroupDiscoveryList") => {
            aggregated_version(&body, group, version)
        }
        _ => {
            let (_, body) = get(format!("/apis/{group}/{version}"), "application/json").await?;
            legacy_version(&body, version)
        }
    };
    let discovery = discovery?;
    let openapi_v2 = get("/openapi/v2".into(), "application/json")
        .await
        .and_then(|(_, body)| openapi_v2_part(&body, group, version));
    let openapi_v3 = get("/openapi/v3".into(), "application/json")
        .await
        .and_then(|(_, body)| {
            let index: Value = serde_json::from_slice(&body).ok()?;
            let entry = &index["paths"][format!("apis/{group}/{version}")];
            entry.is_object().then(|| entry.clone())
        });
    Some(Documents {
        discovery: Some(discovery),
        openapi_v2,
        openapi_v3,
    })
}

/// A successful GET's content type and body.
async fn get(
    transport: &ProxyTransport,
    endpoint: &str,
    path: &str,
    accept: &str,
) -> Option<(String, Bytes)> {
    let fetched = transport
        .get(endpoint, path, &crate::aggregator_user(), accept, TIMEOUT)
        .await;
    let (status, headers, body) = match fetched {
        Ok(fetched) => fetched,
        Err(err) => {
            tracing::debug!("fetching {path} from {endpoint}: {err}");
            return None;
        }
    };
    if !status.is_success() {
        return None;
    }
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    Some((content_type.to_string(), body))
}

/// The discovery of `group`/`version` in an aggregated `/apis` document.
fn aggregated_version(body: &[u8], group: &str, version: &str) -> Option<ApiVersionDiscovery> {
    let list: ApiGroupDiscoveryList = serde_json::from_slice(body).ok()?;
    let group = list.items.into_iter().find(|g| g.metadata.name == group)?;
    group.versions.into_iter().find(|v| v.version == version)
}

/// A version's aggregated discovery converted from its APIResourceList, as upstream
/// converts the documents of servers that do not serve aggregated discovery: each resource
/// with its subresources (`<resource>/<subresource>` entries).
fn legacy_version(body: &[u8], version: &str) -> Option<ApiVersionDiscovery> {
    let list: ApiResourceList = serde_json::from_slice(body).ok()?;
    let mut resources: Vec<ApiResourceDiscovery> = Vec::new();
    let kind_of = |r: &kapi_server::discovery::ApiResource| ResponseKind {
        group: r.group.clone(),
        version: r.version.clone(),
        kind: r.kind.clone(),
    };
    for resource in list.resources.iter().filter(|r| !r.name.contains('/')) {
        resources.push(ApiResourceDiscovery {
            resource: resource.name.clone(),
            response_kind: kind_of(resource),
            scope: match resource.namespaced {
                true => "Namespaced".into(),
                false => "Cluster".into(),
            },
            singular_resource: resource.singular_name.clone(),
            verbs: resource.verbs.clone(),
            short_names: resource.short_names.clone(),
            categories: resource.categories.clone(),
            subresources: Vec::new(),
        });
    }
    for sub in list.resources.iter() {
        let Some((parent, subresource)) = sub.name.split_once('/') else {
            continue;
        };
        if let Some(parent) = resources.iter_mut().find(|r| r.resource == parent) {
            parent.subresources.push(ApiSubresourceDiscovery {
                subresource: subresource.to_string(),
                response_kind: kind_of(sub),
                verbs: sub.verbs.clone(),
            });
        }
    }
    Some(ApiVersionDiscovery {
        version: version.to_string(),
        resources,
        freshness: "Current".into(),
    })
}

/// The paths of `group`/`version` in an OpenAPI v2 document and every definition it holds
/// (the backend's own types and the shared ones it names).
fn openapi_v2_part(
    body: &[u8],
    group: &str,
    version: &str,
) -> Option<(Map<String, Value>, Map<String, Value>)> {
    let mut spec: Value = serde_json::from_slice(body).ok()?;
    let prefix = format!("/apis/{group}/{version}");
    let paths = spec["paths"]
        .as_object()?
        .iter()
        .filter(|(path, _)| **path == prefix || path.starts_with(&format!("{prefix}/")))
        .map(|(path, item)| (path.clone(), item.clone()))
        .collect();
    let definitions = spec["definitions"].as_object_mut().map(std::mem::take)?;
    Some((paths, definitions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_resource_lists_convert_to_aggregated_discovery() {
        let list = json!({"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "metrics.k8s.io/v1beta1", "resources": [
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics",
                "verbs": ["get", "list"]},
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics",
                "verbs": ["get", "list"], "shortNames": ["nm"]},
            {"name": "nodes/status", "singularName": "", "namespaced": false,
                "kind": "NodeMetrics", "verbs": ["get"]},
        ]});
        let version = legacy_version(list.to_string().as_bytes(), "v1beta1").unwrap();
        let text = serde_json::to_value(&version).unwrap();
        assert_eq!(
            text,
            json!({"version": "v1beta1", "freshness": "Current", "resources": [
                {"resource": "pods", "responseKind": {"group": "", "version": "", "kind": "PodMetrics"},
                    "scope": "Namespaced", "singularResource": "", "verbs": ["get", "list"]},
                {"resource": "nodes", "responseKind": {"group": "", "version": "", "kind": "NodeMetrics"},
                    "scope": "Cluster", "singularResource": "", "verbs": ["get", "list"],
                    "shortNames": ["nm"], "subresources": [{"subresource": "status",
                        "responseKind": {"group": "", "version": "", "kind": "NodeMetrics"},
                        "verbs": ["get"]}]},
            ]})
        );
    }

    #[test]
    fn openapi_v2_parts_are_the_group_versions_paths() {
        let spec = json!({"paths": {"/apis/g.example/v1/things": {}, "/apis/g.example/v1": {},
            "/apis/g.example/v10/x": {}, "/version": {}}, "definitions": {"T": {}}});
        let (paths, definitions) =
            openapi_v2_part(spec.to_string().as_bytes(), "g.example", "v1").unwrap();
        assert_eq!(
            paths.keys().collect::<Vec<_>>(),
            ["/apis/g.example/v1", "/apis/g.example/v1/things"]
        );
        assert_eq!(definitions.keys().collect::<Vec<_>>(), ["T"]);
    }
}
