//! The namespaced resources a namespace's deletion empties: what the server's aggregated
//! discovery lists (built-in, custom and aggregated resources alike), each group resource in
//! its group's preferred version that serves it, as client-go's
//! `ServerPreferredNamespacedResources` then `FilteredBy(delete)` give them. A stale group
//! version (an extension server that stopped answering) is a discovery failure, named as
//! client-go's `ErrGroupDiscoveryFailed` names it.

use std::collections::{BTreeMap, HashSet};

use http::Method;
use kapi_apimachinery::status::ApiError;
use kapi_server::loopback::LoopbackClient;
use serde_json::Value;

/// What aggregated discovery is asked for.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// One namespaced resource that can be deleted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Resource {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) resource: String,
    /// Whether it serves `list` and `deletecollection`.
    pub(super) list: bool,
    pub(super) delete_collection: bool,
}

impl Resource {
    /// The collection's path in `namespace`.
    pub(super) fn collection(&self, namespace: &str) -> String {
        let (group, version, resource) = (&self.group, &self.version, &self.resource);
        if group.is_empty() {
            format!("/api/{version}/namespaces/{namespace}/{resource}")
        } else {
            format!("/apis/{group}/{version}/namespaces/{namespace}/{resource}")
        }
    }

    /// Go's `%v` of its GroupVersionResource (`apps/v1, Resource=deployments`).
    pub(super) fn gvr(&self) -> String {
        format!(
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// The deletable namespaced resources, and the discovery failure if some group versions
/// could not be read.
pub(super) struct Discovered {
    pub(super) resources: Vec<Resource>,
    pub(super) failure: Option<String>,
}

/// Reads `/api` and `/apis`; an error only when neither answers.
pub(super) async fn deletable_resources(client: &LoopbackClient) -> Result<Discovered, ApiError> {
    let mut groups = Vec::new();
    let mut errors = Vec::new();
    for path in ["/api", "/apis"] {
        match client.json(Method::GET, path, Some(AGGREGATED), None).await {
            Ok(list) => groups.extend(list["items"].as_array().cloned().unwrap_or_default()),
            Err(err) => errors.push(err),
        }
    }
    if groups.is_empty()
        && let Some(err) = errors.pop()
    {
        return Err(err);
    }
    let mut failed = BTreeMap::new();
    let mut resources = Vec::new();
    for group in &groups {
        preferred_resources(group, &mut resources, &mut failed);
    }
    let failure = match errors.pop() {
        // A whole document failed: its error, as client-go reports it.
        Some(err) => Some(err.to_string()),
        None => (!failed.is_empty()).then(|| {
            let each: Vec<String> = failed.iter().map(|(gv, e)| format!("{gv}: {e}")).collect();
            format!(
                "Discovery failed for some groups, {} failing: unable to retrieve the complete list of server APIs: {}",
                failed.len(),
                each.join(", ")
            )
        }),
    };
    resources.sort();
    Ok(Discovered { resources, failure })
}

/// Adds the namespaced, deletable resources of one `APIGroupDiscovery`: each resource from
/// the first (most preferred) version serving it; stale versions go to `failed`.
fn preferred_resources(
    group: &Value,
    resources: &mut Vec<Resource>,
    failed: &mut BTreeMap<String, String>,
) {
    let group_name = group["metadata"]["name"].as_str().unwrap_or_default();
    let mut seen = HashSet::new();
    for version in group["versions"].as_array().into_iter().flatten() {
        let version_name = version["version"].as_str().unwrap_or_default();
        let group_version = if group_name.is_empty() {
            version_name.to_string()
        } else {
            format!("{group_name}/{version_name}")
        };
        if version["freshness"] == "Stale" {
            let err = format!("stale GroupVersion discovery: {group_version}");
            failed.insert(group_version, err);
            continue;
        }
        for resource in version["resources"].as_array().into_iter().flatten() {
            let Some(name) = resource["resource"].as_str() else {
                continue;
            };
            if !seen.insert(name.to_string()) || resource["scope"] != "Namespaced" {
                continue;
            }
            let verbs: Vec<&str> = resource["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if !verbs.contains(&"delete") {
                continue;
            }
            resources.push(Resource {
                group: group_name.to_string(),
                version: version_name.to_string(),
                resource: name.to_string(),
                list: verbs.contains(&"list"),
                delete_collection: verbs.contains(&"deletecollection"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_resource_comes_from_its_most_preferred_version_and_stale_versions_fail() {
        let group = json!({"metadata": {"name": "example.com"}, "versions": [
            {"version": "v2", "freshness": "Current", "resources": [
                {"resource": "things", "scope": "Namespaced", "verbs": ["delete", "list"]},
                {"resource": "clusterthings", "scope": "Cluster", "verbs": ["delete"]},
                {"resource": "readonly", "scope": "Namespaced", "verbs": ["get", "list"]}]},
            {"version": "v1", "freshness": "Current", "resources": [
                {"resource": "things", "scope": "Namespaced", "verbs": ["delete"]},
                {"resource": "olds", "scope": "Namespaced",
                 "verbs": ["delete", "deletecollection", "list"]}]},
            {"version": "v0", "freshness": "Stale", "resources": []}]});
        let (mut resources, mut failed) = (Vec::new(), BTreeMap::new());
        preferred_resources(&group, &mut resources, &mut failed);
        let names: Vec<String> = resources.iter().map(Resource::gvr).collect();
        assert_eq!(
            names,
            [
                "example.com/v2, Resource=things",
                "example.com/v1, Resource=olds"
            ]
        );
        assert!(resources[1].delete_collection && !resources[0].delete_collection);
        assert_eq!(
            failed["example.com/v0"],
            "stale GroupVersion discovery: example.com/v0"
        );
    }
}
