//! What an object uses of each quota resource name (kubernetes/pkg/quota/v1/evaluator/core):
//! the object count of every resource, pods' compute resources, services' load balancers and
//! node ports, claims' storage (also per storage class), and which collection each name
//! counts.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use kapi_apimachinery::Quantity;

use super::quantity::{amounts, count};

/// The prefix of the quota names of what pods request.
const REQUESTS: &str = "requests.";
/// The infix of a claim's usage per storage class
/// (`<class>.storageclass.storage.k8s.io/requests.storage`).
const STORAGE_CLASS: &str = ".storageclass.storage.k8s.io/";
/// The beta annotation naming a claim's storage class, before `spec.storageClassName`.
const STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// What one object uses of each quota resource name.
pub fn usage(group: &str, plural: &str, object: &Value) -> BTreeMap<String, Quantity> {
    let mut used = BTreeMap::new();
    let one = || count(1);
    let count_name = if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    };
    used.insert(count_name, one());
    if !group.is_empty() {
        return used;
    }
    match plural {
        // A finished pod still counts as an object, no longer as a pod or its compute.
        "pods" if !finished(object) => used.extend(pod_usage(object)),
        "services" => {
            used.insert("services".into(), one());
            let kind = object["spec"]["type"].as_str().unwrap_or("ClusterIP");
            if kind == "LoadBalancer" {
                used.insert("services.loadbalancers".into(), one());
            }
            if kind == "NodePort" || kind == "LoadBalancer" {
                let ports = object["spec"]["ports"].as_array().map_or(0, Vec::len);
                used.insert("services.nodeports".into(), count(ports as i64));
            }
        }
        "persistentvolumeclaims" => used.extend(claim_usage(object)),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            used.insert(plural.to_string(), one());
        }
        _ => {}
    }
    used
}

/// Whether a pod has finished (Succeeded or Failed).
fn finished(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// A running pod's usage: `pods`, and what it requests and limits as upstream's
/// podComputeUsageHelper names them (`cpu` and `requests.cpu`, `limits.cpu`, the same for
/// memory and ephemeral-storage; hugepages requests under both names; extended resources
/// under `requests.` only).
fn pod_usage(pod: &Value) -> BTreeMap<String, Quantity> {
    let mut used = BTreeMap::from([("pods".to_string(), count(1))]);
    for (resource, amount) in pod_resources(pod, "requests") {
        let plain = ["cpu", "memory", "ephemeral-storage"].contains(&resource.as_str())
            || resource.starts_with("hugepages-");
        if plain {
            used.insert(resource.clone(), amount.clone());
        }
        if plain || extended(&resource) {
            used.insert(format!("{REQUESTS}{resource}"), amount);
        }
    }
    for (resource, amount) in pod_resources(pod, "limits") {
        if ["cpu", "memory", "ephemeral-storage"].contains(&resource.as_str()) {
            used.insert(format!("limits.{resource}"), amount);
        }
    }
    used
}

/// Whether a resource name is an extended resource (a domain-prefixed name outside
/// kubernetes.io), which quotas limit as `requests.<name>`.
fn extended(resource: &str) -> bool {
    resource.contains('/')
        && !resource.contains("kubernetes.io/")
        && !resource.starts_with(REQUESTS)
}

/// A pod's effective `kind` ("requests" or "limits") of each resource, as upstream's
/// PodRequests and PodLimits compute it: the containers' sum plus the sidecars' (init
/// containers that restart always), or more if an init container (with the sidecars started
/// before it) needs more; the pod-level cpu and memory instead when set; plus the overhead
/// (for limits, of what is limited).
fn pod_resources(pod: &Value, kind: &str) -> BTreeMap<String, Quantity> {
    let spec = &pod["spec"];
    let list = |name: &str| spec[name].as_array().map_or(&[][..], Vec::as_slice);
    let mut total = BTreeMap::new();
    for container in list("containers") {
        add(&mut total, &amounts(&container["resources"][kind]));
    }
    let (mut sidecars, mut init) = (BTreeMap::new(), BTreeMap::new());
    for container in list("initContainers") {
        let own = amounts(&container["resources"][kind]);
        if container["restartPolicy"] == "Always" {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            keep_max(&mut init, &sidecars);
        } else {
            let mut running = own;
            add(&mut running, &sidecars);
            keep_max(&mut init, &running);
        }
    }
    keep_max(&mut total, &init);
    for (resource, amount) in amounts(&spec["resources"][kind]) {
        if resource == "cpu" || resource == "memory" {
            total.insert(resource, amount);
        }
    }
    let mut overhead = amounts(&spec["overhead"]);
    if kind == "limits" {
        // Only what is limited anyway grows by the overhead.
        overhead.retain(|resource, _| total.contains_key(resource));
    }
    add(&mut total, &overhead);
    total
}

fn add(into: &mut BTreeMap<String, Quantity>, from: &BTreeMap<String, Quantity>) {
    for (resource, amount) in from {
        into.entry(resource.clone())
            .and_modify(|total| *total += amount)
            .or_insert_with(|| amount.clone());
    }
}

fn keep_max(into: &mut BTreeMap<String, Quantity>, from: &BTreeMap<String, Quantity>) {
    for (resource, amount) in from {
        into.entry(resource.clone())
            .and_modify(|most| {
                if *most <= *amount {
                    *most = amount.clone();
                }
            })
            .or_insert_with(|| amount.clone());
    }
}

/// A claim's usage: `persistentvolumeclaims` and `requests.storage` (the larger of the
/// request and what was allocated, in whole bytes), each also under its storage class.
fn claim_usage(claim: &Value) -> BTreeMap<String, Quantity> {
    let mut used = BTreeMap::from([("persistentvolumeclaims".to_string(), count(1))]);
    let storage = |resources: &Value| Quantity::of_field(&resources["storage"]);
    let requested = storage(&claim["spec"]["resources"]["requests"]);
    let allocated = storage(&claim["status"]["allocatedResources"]);
    let storage = match (requested, allocated) {
        (Some(requested), Some(allocated)) => Some(requested.max(allocated)),
        (requested, _) => requested,
    };
    if let Some(storage) = storage {
        used.insert("requests.storage".into(), storage.round_up(0));
    }
    let class = claim["metadata"]["annotations"][STORAGE_CLASS_ANNOTATION]
        .as_str()
        .or(claim["spec"]["storageClassName"].as_str())
        .unwrap_or_default();
    if !class.is_empty() {
        let by_class: Vec<(String, Quantity)> = used
            .iter()
            .map(|(name, amount)| (format!("{class}{STORAGE_CLASS}{name}"), amount.clone()))
            .collect();
        used.extend(by_class);
    }
    used
}

/// The (group, plural) collections a quota's resource names count.
pub fn counted_resources(hard: &BTreeMap<String, Quantity>) -> BTreeSet<(String, String)> {
    hard.keys().map(|name| counted_by(name)).collect()
}

/// The (group, plural) collection one quota resource name counts.
pub fn counted_by(name: &str) -> (String, String) {
    let core = |plural: &str| (String::new(), plural.to_string());
    if let Some(rest) = name.strip_prefix("count/") {
        let (plural, group) = rest.split_once('.').unwrap_or((rest, ""));
        return (group.to_string(), plural.to_string());
    }
    if name.contains(STORAGE_CLASS) {
        return core("persistentvolumeclaims");
    }
    match name {
        "requests.storage" => core("persistentvolumeclaims"),
        "pods" | "cpu" | "memory" | "ephemeral-storage" => core("pods"),
        n if n.starts_with(REQUESTS) || n.starts_with("limits.") || n.starts_with("hugepages-") => {
            core("pods")
        }
        "services.loadbalancers" | "services.nodeports" => core("services"),
        other => core(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pretty(used: &BTreeMap<String, Quantity>) -> String {
        let parts: Vec<String> = used.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.join(",")
    }

    #[test]
    fn pods_use_what_upstream_counts() {
        let pod = json!({"spec": {"containers": [
            {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
            {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
        ], "initContainers": [{"resources": {"requests": {"cpu": "2"}}}]}});
        let used = usage("", "pods", &pod);
        assert_eq!(
            pretty(&used),
            "count/pods=1,cpu=2,limits.cpu=1,memory=128Mi,pods=1,requests.cpu=2,requests.memory=128Mi"
        );
        // A finished pod is still an object.
        let done = json!({"status": {"phase": "Succeeded"}});
        assert_eq!(pretty(&usage("", "pods", &done)), "count/pods=1");
    }

    #[test]
    fn sidecars_overhead_hugepages_and_extended_resources() {
        let pod = json!({"spec": {
            "overhead": {"cpu": "100m"},
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                {"resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}},
            ],
            "containers": [{"resources": {
                "requests": {"cpu": "250m", "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"},
                "limits": {"ephemeral-storage": "2Gi"}}}],
        }});
        let used = usage("", "pods", &pod);
        // max(250m + 500m sidecar, 1 + 500m init with the sidecar) + 100m overhead
        assert_eq!(used["requests.cpu"].to_string(), "1600m");
        assert_eq!(used["requests.example.com/gpu"].to_string(), "1");
        assert!(!used.contains_key("example.com/gpu"));
        assert_eq!(used["hugepages-2Mi"].to_string(), "4Mi");
        assert_eq!(used["requests.hugepages-2Mi"].to_string(), "4Mi");
        assert_eq!(used["requests.ephemeral-storage"].to_string(), "1Gi");
        assert_eq!(used["limits.ephemeral-storage"].to_string(), "2Gi");
        assert!(!used.contains_key("limits.cpu"));
        // Pod-level resources replace the containers' sum.
        let pod = json!({"spec": {"resources": {"requests": {"cpu": "3"}},
            "containers": [{"resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(usage("", "pods", &pod)["cpu"].to_string(), "3");
    }

    #[test]
    fn services_and_claims() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            pretty(&usage("", "services", &lb)),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
        let claim = json!({"spec": {"storageClassName": "fast",
            "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"allocatedResources": {"storage": "2Gi"}}});
        assert_eq!(
            pretty(&usage("", "persistentvolumeclaims", &claim)),
            "count/persistentvolumeclaims=1,\
             fast.storageclass.storage.k8s.io/persistentvolumeclaims=1,\
             fast.storageclass.storage.k8s.io/requests.storage=2Gi,\
             persistentvolumeclaims=1,requests.storage=2Gi"
        );
        assert_eq!(
            pretty(&usage("apps", "deployments", &json!({}))),
            "count/deployments.apps=1"
        );
    }

    #[test]
    fn names_count_their_collections() {
        let hard = amounts(&json!({"pods": "2", "count/deployments.apps": "1",
            "requests.storage": "1Gi", "gold.storageclass.storage.k8s.io/requests.storage": "1",
            "ephemeral-storage": "1", "requests.example.com/gpu": "1"}));
        assert_eq!(
            counted_resources(&hard),
            BTreeSet::from([
                ("".to_string(), "persistentvolumeclaims".to_string()),
                ("".to_string(), "pods".to_string()),
                ("apps".to_string(), "deployments".to_string()),
            ])
        );
    }
}
