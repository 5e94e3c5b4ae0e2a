//! ResourceQuota (k8s.io/apiserver's admission/plugin/resourcequota with
//! kubernetes/pkg/quota/v1/evaluator/core) and the quota controller kube-controller-manager
//! runs (in-process here).
//!
//! Admission charges a create to every quota of its namespace that limits what the object
//! uses, by a compare-and-swap of the quota's `status.used` before the object is stored, so
//! concurrent creates can never be admitted beyond `spec.hard`. The controller recomputes
//! `status.used` (and `status.hard`) from the objects that exist when a quota is created or
//! its spec changes, when a counted object is deleted or a pod finishes, and every 5
//! minutes, which also gives back what failed writes held.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::cacher::{CacheEvent, CachedObject, EventType};
use kapi_server::endpoints::{Served, WeakApiHandler};
use kapi_server::registry::{Item, ListParams, Write};
use kapi_server::resource::SubresourceKind;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::quantity::{Amount, amounts};

/// How often every namespace's quotas are recomputed even without events.
const RESYNC: Duration = Duration::from_secs(300);
/// How many times a recount is tried while creates keep charging the quota.
const RECOUNT_ATTEMPTS: usize = 5;
/// How long the controller gathers events before recomputing.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// The core resources whose events the controller follows.
const TRACKED: [&str; 6] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
];

/// What one object uses of each quota resource name.
pub fn usage(group: &str, plural: &str, object: &Value) -> BTreeMap<String, Amount> {
    let mut used = BTreeMap::new();
    let one = || Amount::count(1);
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
        "pods" => {
            let phase = object["status"]["phase"].as_str().unwrap_or_default();
            if phase == "Succeeded" || phase == "Failed" {
                return BTreeMap::new();
            }
            used.insert("pods".into(), one());
            for (kind, names) in [
                ("requests", ["requests.cpu", "requests.memory"]),
                ("limits", ["limits.cpu", "limits.memory"]),
            ] {
                for (resource, name) in ["cpu", "memory"].iter().zip(names) {
                    if let Some(amount) = pod_amount(object, kind, resource) {
                        if kind == "requests" {
                            used.insert((*resource).to_string(), amount);
                        }
                        used.insert(name.to_string(), amount);
                    }
                }
            }
        }
        "services" => {
            used.insert("services".into(), one());
            let kind = object["spec"]["type"].as_str().unwrap_or("ClusterIP");
            if kind == "LoadBalancer" {
                used.insert("services.loadbalancers".into(), one());
            }
            if kind == "NodePort" || kind == "LoadBalancer" {
                let ports = object["spec"]["ports"].as_array().map_or(0, Vec::len);
                used.insert("services.nodeports".into(), Amount::count(ports as i128));
            }
        }
        "persistentvolumeclaims" => {
            used.insert("persistentvolumeclaims".into(), one());
            if let Some(storage) = object["spec"]["resources"]["requests"]["storage"]
                .as_str()
                .and_then(Amount::parse)
            {
                used.insert("requests.storage".into(), storage);
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            used.insert(plural.to_string(), one());
        }
        _ => {}
    }
    used
}

/// A pod's request or limit of `resource`: the larger of its containers' sum and its
/// largest init container, as upstream's PodRequests; `None` when no container sets it.
fn pod_amount(pod: &Value, kind: &str, resource: &str) -> Option<Amount> {
    let of = |container: &Value| {
        container["resources"][kind][resource]
            .as_str()
            .and_then(Amount::parse)
    };
    let containers = pod["spec"]["containers"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let init = pod["spec"]["initContainers"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let sum = containers.iter().filter_map(of).reduce(|a, b| a + b);
    let init = init.iter().filter_map(of).reduce(Amount::max);
    match (sum, init) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The compute resources a quota may require every pod to state.
const COMPUTE: [&str; 6] = [
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
    "cpu",
    "memory",
];

/// The quota's `spec.hard`, parsed.
fn hard(quota: &Value) -> BTreeMap<String, Amount> {
    amounts(&quota["spec"]["hard"])
}

fn to_json(amounts: &BTreeMap<String, Amount>) -> Value {
    Value::Object(
        amounts
            .iter()
            .map(|(k, v)| (k.clone(), json!(v.to_string())))
            .collect::<Map<_, _>>(),
    )
}

/// `k=v,k=v` in key order, as upstream prints quota lists.
fn pretty(amounts: &BTreeMap<String, Amount>) -> String {
    amounts
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The ResourceQuota admission plugin.
pub struct ResourceQuota {
    quotas: Served,
}

impl ResourceQuota {
    /// Charges the quotas of the served `resourcequotas` collection.
    pub fn new(quotas: Served) -> ResourceQuota {
        ResourceQuota { quotas }
    }

    /// Charges `delta` to `quota` (by name) atomically, or refuses with upstream's message.
    async fn charge(
        &self,
        attributes: &Attributes<'_>,
        name: &str,
        delta: &BTreeMap<String, Amount>,
    ) -> Result<(), ApiError> {
        let resource = attributes.definition.group_resource();
        let write = Write {
            subresource: Some(&SubresourceKind::Status),
            dry_run: attributes.dry_run,
            admission: None,
        };
        let forbidden = |message: String| ApiError::forbidden(&resource, attributes.name, message);
        self.quotas
            .registry
            .update(
                &self.quotas.definition,
                attributes.namespace,
                name,
                write,
                |current| {
                    let mut quota = current
                        .cloned()
                        .ok_or_else(|| forbidden(format!("quota {name} was deleted")))?;
                    let hard = hard(&quota);
                    let mut used = amounts(&quota["status"]["used"]);
                    let mut requested = BTreeMap::new();
                    for (resource_name, amount) in delta {
                        let Some(limit) = hard.get(resource_name) else {
                            continue;
                        };
                        let Some(current) = used.get(resource_name).copied() else {
                            return Err(forbidden(format!(
                                "status unknown for quota: {name}, resource: {resource_name}"
                            )));
                        };
                        let after = current + *amount;
                        if after > *limit {
                            let limited: BTreeMap<String, Amount> =
                                BTreeMap::from([(resource_name.clone(), *limit)]);
                            let was: BTreeMap<String, Amount> =
                                BTreeMap::from([(resource_name.clone(), current)]);
                            let asked: BTreeMap<String, Amount> =
                                BTreeMap::from([(resource_name.clone(), *amount)]);
                            return Err(forbidden(format!(
                                "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                                pretty(&asked),
                                pretty(&was),
                                pretty(&limited)
                            )));
                        }
                        requested.insert(resource_name.clone(), after);
                    }
                    used.extend(requested);
                    quota["status"]["used"] = to_json(&used);
                    Ok(quota)
                },
            )
            .await
            .map(drop)
    }
}

#[async_trait]
impl AdmissionPlugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        if attributes.operation != Operation::Create
            || !attributes.subresource.is_empty()
            || attributes.namespace.is_empty()
        {
            return Ok(());
        }
        let Some(object) = object else {
            return Ok(());
        };
        let quotas = super::cached_in_namespace(&self.quotas, attributes.namespace);
        if quotas.is_empty() {
            return Ok(());
        }
        let group = definition.group_version.group.as_str();
        let usage = usage(group, definition.plural, object);
        for quota in &quotas {
            if !super::quotascope::matches(quota, group, definition.plural, object) {
                continue;
            }
            let name = quota["metadata"]["name"].as_str().unwrap_or_default();
            let hard = hard(quota);
            let is_pod = definition.plural == "pods" && group.is_empty();
            let required: Vec<&str> = COMPUTE
                .into_iter()
                .filter(|c| is_pod && hard.contains_key(*c))
                .collect();
            if let Some(missing) = unspecified(object, &required) {
                let resource = definition.group_resource();
                return Err(ApiError::forbidden(
                    &resource,
                    attributes.name,
                    format!("failed quota: {name}: must specify {missing}"),
                ));
            }
            let delta: BTreeMap<String, Amount> = usage
                .iter()
                .filter(|(k, _)| hard.contains_key(*k))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            if !delta.is_empty() {
                self.charge(attributes, name, &delta).await?;
            }
        }
        Ok(())
    }
}

/// What a pod's containers leave unspecified of the `required` compute resources, as
/// upstream's pod evaluator words it (`limits.memory for: a,b; requests.cpu for: a`); every
/// container and init container must state each one itself.
fn unspecified(pod: &Value, required: &[&str]) -> Option<String> {
    let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let spec = &pod["spec"];
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|list| spec[list].as_array().into_iter().flatten());
    for container in containers {
        let resources = &container["resources"];
        let states = |resource: &str| match resource.split_once('.') {
            Some((kind, name)) => resources[kind].get(name).is_some(),
            None => resources["requests"].get(resource).is_some(),
        };
        let name = container["name"].as_str().unwrap_or_default();
        for resource in required.iter().filter(|r| !states(r)) {
            missing.entry(resource).or_default().insert(name);
        }
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(resource, names)| {
            let names: Vec<&str> = names.iter().copied().collect();
            format!("{resource} for: {}", names.join(","))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The quota controller: recomputes the quotas of a namespace on the changes
/// [`needs_recount`] selects, and every namespace's periodically, until `stopping`.
pub async fn run_quota_controller(
    quotas: Served,
    api: WeakApiHandler,
    stopping: CancellationToken,
) {
    let (dirty_tx, mut dirty_rx) = mpsc::unbounded_channel::<String>();
    let mut followed = vec![quotas.clone()];
    if let Some(api) = api.upgrade() {
        followed.extend(
            TRACKED
                .iter()
                .filter_map(|plural| api.served_storage("", plural)),
        );
    }
    for served in followed {
        tokio::spawn(follow(served, dirty_tx.clone(), stopping.clone()));
    }
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        let mut dirty = BTreeSet::new();
        tokio::select! {
            _ = stopping.cancelled() => return,
            _ = resync.tick() => dirty.extend(namespaces_with_quotas(&quotas)),
            Some(namespace) = dirty_rx.recv() => {
                dirty.insert(namespace);
                tokio::time::sleep(DEBOUNCE).await;
                while let Ok(namespace) = dirty_rx.try_recv() {
                    dirty.insert(namespace);
                }
            }
        }
        for namespace in dirty {
            recalculate(&quotas, &api, &namespace).await;
        }
    }
}

/// Sends the namespace of every change of one collection that calls for a recount.
async fn follow(served: Served, dirty: mpsc::UnboundedSender<String>, stopping: CancellationToken) {
    kapi_server::informer::follow(served, stopping, |change| match change {
        kapi_server::informer::Change::Event(event) if needs_recount(event) => {
            dirty.send(event.object.namespace.clone()).is_ok()
        }
        _ => true,
    })
    .await;
}

/// Whether a change calls for recomputing its namespace's quotas: a new quota or a changed
/// `spec`, a deleted object, a pod that finished. Not creations: admission charged them, and
/// recounting while creates are in flight would undercount and let more in (upstream's
/// replenishment controller likewise reacts to deletions only).
fn needs_recount(event: &CacheEvent) -> bool {
    let decode = |object: &CachedObject| Item::from(object).decode().unwrap_or(Value::Null);
    let is_quota = event.object.key.contains("/resourcequotas/");
    match (event.type_, &event.prev) {
        (EventType::Deleted, _) => !is_quota,
        (EventType::Added, _) => is_quota,
        (EventType::Modified, Some(prev)) => {
            let (old, new) = (decode(prev), decode(&event.object));
            if is_quota {
                return old["spec"] != new["spec"];
            }
            let finished = |pod: &Value| {
                matches!(
                    pod["status"]["phase"].as_str(),
                    Some("Succeeded" | "Failed")
                )
            };
            finished(&new) && !finished(&old)
        }
        (EventType::Modified, None) => false,
    }
}

fn namespaces_with_quotas(quotas: &Served) -> BTreeSet<String> {
    let registry = &quotas.registry;
    registry
        .cacher()
        .list(&registry.collection_prefix(None), |_| true)
        .objects
        .iter()
        .map(|o| o.namespace.clone())
        .collect()
}

/// Recomputes `status.used` (and `status.hard`) of every quota of `namespace`, again while a
/// quota was charged during the count (a few times).
async fn recalculate(quotas: &Served, api: &WeakApiHandler, namespace: &str) {
    for _ in 0..RECOUNT_ATTEMPTS {
        if !recount(quotas, api, namespace).await {
            return;
        }
        tokio::time::sleep(DEBOUNCE).await;
    }
}

/// One recount of the quotas of `namespace`; whether one must be counted again.
async fn recount(quotas: &Served, api: &WeakApiHandler, namespace: &str) -> bool {
    let mut retry = false;
    let Some(api) = api.upgrade() else {
        return false;
    };
    for quota in super::cached_in_namespace(quotas, namespace) {
        let name = quota["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let hard = hard(&quota);
        let mut used: BTreeMap<String, Amount> = hard
            .keys()
            .map(|k| (k.clone(), Amount::zero_like(&hard[k])))
            .collect();
        for (group, plural) in counted_resources(&hard) {
            let Some(served) = api.served_storage(&group, &plural) else {
                continue;
            };
            let params = ListParams {
                namespace: Some(namespace.to_string()),
                ..ListParams::default()
            };
            let Ok(listed) = served
                .registry
                .list(&served.definition.group_resource(), &params)
                .await
            else {
                continue;
            };
            let objects = listed.items.iter().filter_map(|i| i.decode().ok());
            for object in objects.filter(|o| super::quotascope::matches(&quota, &group, &plural, o))
            {
                for (resource_name, amount) in usage(&group, &plural, &object) {
                    if let Some(total) = used.get_mut(&resource_name) {
                        *total = *total + amount;
                    }
                }
            }
        }
        let status = json!({"hard": to_json(&hard), "used": to_json(&used)});
        if quota["status"] == status {
            continue;
        }
        let write = Write {
            subresource: Some(&SubresourceKind::Status),
            dry_run: false,
            admission: None,
        };
        // Only over the quota as it was before the count: a charge since (a create
        // admitted meanwhile, maybe not counted) makes this recount retry.
        let counted_version = quota["metadata"]["resourceVersion"].clone();
        let written = quotas
            .registry
            .update(&quotas.definition, namespace, &name, write, |current| {
                let mut quota = current
                    .cloned()
                    .ok_or_else(|| ApiError::internal("quota deleted"))?;
                if quota["metadata"]["resourceVersion"] != counted_version {
                    return Err(ApiError::conflict(
                        &quotas.definition.group_resource(),
                        &name,
                        "charged while counted",
                    ));
                }
                quota["status"] = status.clone();
                Ok(quota)
            })
            .await;
        match written {
            Err(err) if err.code() == 409 => retry = true,
            Err(err) if !err.is_not_found() => {
                tracing::warn!("recalculating quota {namespace}/{name}: {err}");
            }
            _ => {}
        }
    }
    retry
}

/// The (group, plural) collections a quota's resource names count.
fn counted_resources(hard: &BTreeMap<String, Amount>) -> BTreeSet<(String, String)> {
    hard.keys().map(|name| counted_by(name)).collect()
}

/// The (group, plural) collection one quota resource name counts.
fn counted_by(name: &str) -> (String, String) {
    let core = |plural: &str| (String::new(), plural.to_string());
    if let Some(rest) = name.strip_prefix("count/") {
        let (plural, group) = rest.split_once('.').unwrap_or((rest, ""));
        return (group.to_string(), plural.to_string());
    }
    match name {
        "requests.storage" => core("persistentvolumeclaims"),
        "pods" | "cpu" | "memory" => core("pods"),
        n if n.starts_with("requests.") || n.starts_with("limits.") => core("pods"),
        "services.loadbalancers" | "services.nodeports" => core("services"),
        other => core(other),
    }
}

/// Starts the quota controller (the hook of `start-resource-quota-controller`).
pub fn start_quota_controller(quotas: Served, api: WeakApiHandler, stopping: CancellationToken) {
    tokio::spawn(run_quota_controller(quotas, api, stopping));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_resources_name_their_containers() {
        let pod = json!({"spec": {
        "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "1"}}}],
        "containers": [
            {"name": "b", "resources": {"limits": {"memory": "1Gi"}}},
            {"name": "a"},
        ]}});
        let required = ["requests.cpu", "limits.memory", "cpu"];
        assert_eq!(
            unspecified(&pod, &required).as_deref(),
            Some("cpu for: a,b; limits.memory for: a,init; requests.cpu for: a,b")
        );
        assert_eq!(unspecified(&pod, &[]), None);
    }

    #[test]
    fn usage_counts_as_upstream() {
        let pod = json!({"spec": {"containers": [
            {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
            {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
        ], "initContainers": [{"resources": {"requests": {"cpu": "2"}}}]}});
        let used = usage("", "pods", &pod);
        assert_eq!(used["pods"].to_string(), "1");
        assert_eq!(used["count/pods"].to_string(), "1");
        assert_eq!(used["requests.cpu"].to_string(), "2");
        assert_eq!(used["requests.memory"].to_string(), "128Mi");
        assert_eq!(used["memory"].to_string(), "128Mi");
        assert_eq!(used["limits.cpu"].to_string(), "1");
        assert!(!used.contains_key("limits.memory"));
        let done = json!({"status": {"phase": "Succeeded"}});
        assert!(usage("", "pods", &done).is_empty());
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        let used = usage("", "services", &lb);
        assert_eq!(
            pretty(&used),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
        assert_eq!(
            pretty(&usage("apps", "deployments", &json!({}))),
            "count/deployments.apps=1"
        );
        let hard = amounts(
            &json!({"pods": "2", "count/deployments.apps": "1", "requests.storage": "1Gi"}),
        );
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
