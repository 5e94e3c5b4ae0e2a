//! What the server serves, as its aggregated discovery lists it (built-in, custom and
//! aggregated resources alike): each group resource in its group's preferred version that
//! serves it, as client-go's `ServerPreferredResources` gives them, and every version of
//! every kind for mapping owner references to resources (its REST mapper). A stale group
//! version (an extension server that stopped answering) is a discovery failure, named as
//! client-go's `ErrGroupDiscoveryFailed` names it.

use std::collections::{BTreeMap, HashMap, HashSet};

use http::Method;
use kapi_apimachinery::status::ApiError;
use kapi_server::loopback::LoopbackClient;
use serde_json::Value;

/// What aggregated discovery is asked for.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// One served resource (not a subresource).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Resource {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
    pub(crate) kind: String,
    pub(crate) namespaced: bool,
    pub(crate) verbs: Vec<String>,
}

impl Resource {
    /// Whether it serves `verb`.
    pub(crate) fn has(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Its group version as objects name it (`v1`, `apps/v1`).
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The collection's path: in `namespace`, or across all namespaces (and for
    /// cluster-scoped resources) with `None`.
    pub(crate) fn collection(&self, namespace: Option<&str>) -> String {
        let (group, version, resource) = (&self.group, &self.version, &self.resource);
        let prefix = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        match namespace {
            Some(namespace) if self.namespaced => {
                format!("{prefix}/namespaces/{namespace}/{resource}")
            }
            _ => format!("{prefix}/{resource}"),
        }
    }

    /// Go's `%v` of its GroupVersionResource (`apps/v1, Resource=deployments`).
    pub(crate) fn gvr(&self) -> String {
        format!(
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// What discovery found.
pub(crate) struct Discovered {
    /// Each group resource in its preferred version.
    pub(crate) preferred: Vec<Resource>,
    /// Every resource of every version, for mapping kinds to resources.
    pub(crate) all: Vec<Resource>,
    /// Why some of it could not be read, if it could not.
    pub(crate) failure: Option<String>,
    /// The group versions that could not be read (`v1`, `apps/v1`).
    pub(crate) failed: Vec<String>,
    /// Whether both documents (`/api` and `/apis`) were read.
    pub(crate) complete: bool,
}

impl Discovered {
    /// The resource serving `kind` in `api_version` (client-go's RESTMapper).
    pub(crate) fn mapper(&self) -> HashMap<(String, String), Resource> {
        self.all
            .iter()
            .map(|r| ((r.api_version(), r.kind.clone()), r.clone()))
            .collect()
    }
}

/// Reads `/api` and `/apis`; an error only when neither answers.
pub(crate) async fn discover(client: &LoopbackClient) -> Result<Discovered, ApiError> {
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
    let (mut preferred, mut all) = (Vec::new(), Vec::new());
    for group in &groups {
        group_resources(group, &mut preferred, &mut all, &mut failed);
    }
    let complete = errors.is_empty();
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
    preferred.sort();
    Ok(Discovered {
        preferred,
        all,
        failure,
        failed: failed.into_keys().collect(),
        complete,
    })
}

/// Adds the resources of one `APIGroupDiscovery`: to `all` each of every current version, to
/// `preferred` each from the first (most preferred) version serving it; stale versions go to
/// `failed`.
fn group_resources(
    group: &Value,
    preferred: &mut Vec<Resource>,
    all: &mut Vec<Resource>,
    failed: &mut BTreeMap<String, String>,
) {
    let group_name = group["metadata"]["name"].as_str().unwrap_or_default();
    let mut seen = HashSet::new();
    for version in group["versions"].as_array().into_iter().flatten() {
        let version_name = version["version"].as_str().unwrap_or_default();
        if version["freshness"] == "Stale" {
            let group_version = if group_name.is_empty() {
                version_name.to_string()
            } else {
                format!("{group_name}/{version_name}")
            };
            let err = format!("stale GroupVersion discovery: {group_version}");
            failed.insert(group_version, err);
            continue;
        }
        for resource in version["resources"].as_array().into_iter().flatten() {
            let Some(name) = resource["resource"].as_str() else {
                continue;
            };
            let served = Resource {
                group: group_name.to_string(),
                version: version_name.to_string(),
                resource: name.to_string(),
                kind: resource["responseKind"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                namespaced: resource["scope"] == "Namespaced",
                verbs: resource["verbs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            };
            if seen.insert(name.to_string()) {
                preferred.push(served.clone());
            }
            all.push(served);
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
        let (mut preferred, mut all, mut failed) = (Vec::new(), Vec::new(), BTreeMap::new());
        group_resources(&group, &mut preferred, &mut all, &mut failed);
        let names: Vec<String> = preferred.iter().map(Resource::gvr).collect();
        assert_eq!(
            names,
            [
                "example.com/v2, Resource=things",
                "example.com/v2, Resource=clusterthings",
                "example.com/v2, Resource=readonly",
                "example.com/v1, Resource=olds"
            ]
        );
        assert_eq!(all.len(), 5);
        assert!(preferred[3].has("deletecollection") && !preferred[0].has("deletecollection"));
        assert!(preferred[0].namespaced && !preferred[1].namespaced);
        assert_eq!(
            failed["example.com/v0"],
            "stale GroupVersion discovery: example.com/v0"
        );
    }
}
