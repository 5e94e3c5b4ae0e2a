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

use kapi_apimachinery::Quantity;

use super::quantity::amounts;
use super::quotascope::{self, ScopeSelector};
use super::quotausage::{counted_by, counted_resources, usage};

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
fn hard(quota: &Value) -> BTreeMap<String, Quantity> {
    amounts(&quota["spec"]["hard"])
}

fn to_json(amounts: &BTreeMap<String, Quantity>) -> Value {
    Value::Object(
        amounts
            .iter()
            .map(|(k, v)| (k.clone(), json!(v.to_string())))
            .collect::<Map<_, _>>(),
    )
}

/// `k=v,k=v` in key order, as upstream prints quota lists.
fn pretty(amounts: &BTreeMap<String, Quantity>) -> String {
    amounts
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The plugin's configuration (`ResourceQuotaConfiguration` in
/// `--admission-control-config-file`): resources whose consumption is limited by default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceQuotaConfiguration {
    limited_resources: Vec<LimitedResource>,
}

/// One `limitedResources` entry: what of one resource may be used only where a quota
/// covers it.
#[derive(Clone, Debug, Default, PartialEq)]
struct LimitedResource {
    api_group: String,
    resource: String,
    /// Substrings of the quota names (`requests.storage`, `.storageclass.storage.k8s.io/`)
    /// whose use needs a quota limiting that name.
    match_contains: Vec<String>,
    /// Scopes an object may match only where a quota has a selector of the same scope that
    /// matches it too (of any resource: upstream does not filter these by resource).
    match_scopes: Vec<ScopeSelector>,
}

impl ResourceQuotaConfiguration {
    /// Reads the configuration (apiserver.config.k8s.io/v1 ResourceQuotaConfiguration, or
    /// resourcequota.admission.k8s.io/v1beta1 and v1alpha1 Configuration).
    pub fn parse(config: &Value) -> Result<ResourceQuotaConfiguration, String> {
        let api_version = config["apiVersion"].as_str().unwrap_or_default();
        let kind = config["kind"].as_str().unwrap_or_default();
        let known = matches!(
            (api_version, kind),
            ("apiserver.config.k8s.io/v1", "ResourceQuotaConfiguration")
                | ("resourcequota.admission.k8s.io/v1beta1", "Configuration")
                | ("resourcequota.admission.k8s.io/v1alpha1", "Configuration")
        );
        if !known {
            return Err(format!(
                "no kind \"{kind}\" is registered for version \"{api_version}\""
            ));
        }
        let entries = config["limitedResources"].as_array().into_iter().flatten();
        let limited_resources = entries
            .map(|entry| {
                let text = |key: &str| entry[key].as_str().unwrap_or_default().to_string();
                let list = |key: &str| entry[key].as_array().into_iter().flatten();
                LimitedResource {
                    api_group: text("apiGroup"),
                    resource: text("resource"),
                    match_contains: list("matchContains")
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect(),
                    match_scopes: list("matchScopes")
                        .map(ScopeSelector::from_requirement)
                        .collect(),
                }
            })
            .collect();
        Ok(ResourceQuotaConfiguration { limited_resources })
    }

    /// The quota names of `used` that need a covering quota (upstream's limitedByDefault).
    fn limited_names(
        &self,
        group: &str,
        plural: &str,
        used: &BTreeMap<String, Quantity>,
    ) -> BTreeSet<String> {
        let entries = self.limited_resources.iter();
        let entries = entries.filter(|l| l.api_group == group && l.resource == plural);
        let mut names = BTreeSet::new();
        for entry in entries {
            let positive = used.iter().filter(|(_, amount)| amount.signum() > 0);
            names.extend(
                positive
                    .map(|(name, _)| name)
                    .filter(|name| {
                        entry
                            .match_contains
                            .iter()
                            .any(|m| name.contains(m.as_str()))
                    })
                    .cloned(),
            );
        }
        names
    }

    /// The `matchScopes` selectors that select the object.
    fn limited_scopes(&self, group: &str, plural: &str, object: &Value) -> Vec<ScopeSelector> {
        let scopes = self.limited_resources.iter().flat_map(|l| &l.match_scopes);
        scopes
            .filter(|selector| selector.selects(group, plural, object))
            .cloned()
            .collect()
    }
}

/// The ResourceQuota admission plugin.
pub struct ResourceQuota {
    quotas: Served,
    configuration: ResourceQuotaConfiguration,
}

impl ResourceQuota {
    /// Charges the quotas of the served `resourcequotas` collection.
    pub fn new(quotas: Served, configuration: ResourceQuotaConfiguration) -> ResourceQuota {
        ResourceQuota {
            quotas,
            configuration,
        }
    }

    /// Charges `delta` to `quota` (by name) atomically, or refuses with upstream's message.
    async fn charge(
        &self,
        attributes: &Attributes<'_>,
        name: &str,
        delta: &BTreeMap<String, Quantity>,
    ) -> Result<(), ApiError> {
        let resource = attributes.definition.group_resource();
        let write = Write {
            subresource: Some(&SubresourceKind::Status),
            dry_run: attributes.dry_run,
            admission: None,
            manager: None,
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
                        let Some(current) = used.get(resource_name).cloned() else {
                            return Err(forbidden(status_unknown(name, hard.keys())));
                        };
                        let after = &current + amount;
                        if after > *limit {
                            let limited: BTreeMap<String, Quantity> =
                                BTreeMap::from([(resource_name.clone(), limit.clone())]);
                            let was: BTreeMap<String, Quantity> =
                                BTreeMap::from([(resource_name.clone(), current)]);
                            let asked: BTreeMap<String, Quantity> =
                                BTreeMap::from([(resource_name.clone(), amount.clone())]);
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
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (Some(object), true) = (object, charged(attributes)) else {
            return Ok(());
        };
        let old = old.filter(|_| attributes.operation == Operation::Update);
        let quotas = self.quotas.cached_list(Some(attributes.namespace));
        if quotas.is_empty() && self.configuration.limited_resources.is_empty() {
            return Ok(());
        }
        for (name, delta) in self.charges(attributes, &quotas, object, old)? {
            self.charge(attributes, name, &delta).await?;
        }
        Ok(())
    }
}

/// What a request charges to one quota: its name and the amounts.
type Charge<'q> = (&'q str, BTreeMap<String, Quantity>);

impl ResourceQuota {
    /// What the request charges to each quota of the namespace (by name), after upstream's
    /// checks: the quota's required compute resources stated, its usage known, and what the
    /// configuration limits by default covered by a quota.
    fn charges<'q>(
        &self,
        attributes: &Attributes<'_>,
        quotas: &'q [Value],
        object: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<Charge<'q>>, ApiError> {
        let definition = attributes.definition;
        let (group, plural) = (definition.group_version.group.as_str(), &*definition.plural);
        let forbidden = |message: String| {
            ApiError::forbidden(&definition.group_resource(), attributes.name, message)
        };
        let used = usage(group, plural, object);
        let old_used = old.map(|old| usage(group, plural, old));
        // What the request adds: all of the object's usage on a create, its growth on an
        // update (for a quota that did not track the old object, all of it).
        let added = |quota: Option<&Value>| {
            let tracked_before = |old: &Value| {
                quota.is_none_or(|quota| quotascope::matches(quota, group, plural, old))
            };
            match (old, &old_used) {
                (Some(old), Some(old_used)) if tracked_before(old) => growth(&used, old_used),
                _ => growth(&used, &BTreeMap::new()),
            }
        };
        let mut charges = Vec::new();
        let mut covered = BTreeSet::new();
        let mut scopes_covered = BTreeSet::new();
        for quota in quotas {
            let scopes = quotascope::selectors(quota).into_iter();
            let selecting = scopes.filter(|selector| selector.selects(group, plural, object));
            scopes_covered.extend(selecting.map(|selector| selector.scope));
            let hard = hard(quota);
            let limited: BTreeSet<&String> = hard
                .keys()
                .filter(|name| counted_by(name) == (group.to_string(), plural.to_string()))
                .collect();
            if limited.is_empty() || !quotascope::matches(quota, group, plural, object) {
                continue;
            }
            let name = quota["metadata"]["name"].as_str().unwrap_or_default();
            let is_pod = plural == "pods" && group.is_empty();
            let required: Vec<&str> = COMPUTE
                .into_iter()
                .filter(|c| is_pod && hard.contains_key(*c))
                .collect();
            if let Some(missing) = unspecified(object, &required) {
                return Err(forbidden(format!(
                    "failed quota: {name}: must specify {missing}"
                )));
            }
            let known = amounts(&quota["status"]["used"]);
            if limited
                .iter()
                .any(|resource| !known.contains_key(*resource))
            {
                return Err(forbidden(status_unknown(name, limited)));
            }
            let limited: BTreeSet<String> = limited.into_iter().cloned().collect();
            covered.extend(limited.iter().cloned());
            charges.push((name, limited, added(Some(quota))));
        }
        // Nothing added (for the quotas that track the object, or at all): nothing to check.
        let nothing_added = match charges.is_empty() {
            true => added(None).is_empty(),
            false => charges.iter().all(|(_, _, delta)| delta.is_empty()),
        };
        if nothing_added {
            return Ok(Vec::new());
        }
        let uncovered = self.configuration.limited_names(group, plural, &used);
        let uncovered: Vec<String> = uncovered.difference(&covered).cloned().collect();
        if !uncovered.is_empty() {
            return Err(forbidden(format!(
                "insufficient quota to consume: {}",
                uncovered.join(",")
            )));
        }
        let scopes = self.configuration.limited_scopes(group, plural, object);
        let uncovered: Vec<String> = scopes
            .iter()
            .filter(|selector| !scopes_covered.contains(&selector.scope))
            .map(ToString::to_string)
            .collect();
        if !uncovered.is_empty() {
            // Upstream returns a plain error here, which the API answers as a 500 without a
            // reason.
            let message = format!(
                "insufficient quota to match these scopes: [{}]",
                uncovered.join(" ")
            );
            return Err(ApiError::new_generic(500, "", message));
        }
        let charges = charges.into_iter().map(|(name, limited, mut delta)| {
            delta.retain(|resource, _| limited.contains(resource));
            (name, delta)
        });
        Ok(charges.filter(|(_, delta)| !delta.is_empty()).collect())
    }
}

/// Whether upstream's evaluators charge a request: creates, and the updates that can grow
/// what an object uses (a claim's storage, a service's type, a pod's resize).
fn charged(attributes: &Attributes<'_>) -> bool {
    let definition = attributes.definition;
    if attributes.namespace.is_empty() {
        return false;
    }
    match attributes.operation {
        Operation::Create => attributes.subresource.is_empty(),
        Operation::Update => matches!(
            (
                definition.group_version.group.as_str(),
                &*definition.plural,
                attributes.subresource
            ),
            ("", "persistentvolumeclaims" | "services", "") | ("", "pods", "resize")
        ),
        _ => false,
    }
}

/// What `used` has beyond `before`, the names that grew (upstream's
/// SubtractWithNonNegativeResult without its zeros).
fn growth(
    used: &BTreeMap<String, Quantity>,
    before: &BTreeMap<String, Quantity>,
) -> BTreeMap<String, Quantity> {
    used.iter()
        .filter_map(|(resource, amount)| {
            let grown = match before.get(resource) {
                Some(before) => amount - before,
                None => amount.clone(),
            };
            (grown.signum() > 0).then(|| (resource.clone(), grown))
        })
        .collect()
}

/// Upstream's refusal while a quota's usage of `resources` is not known yet.
fn status_unknown<'a>(quota: &str, resources: impl IntoIterator<Item = &'a String>) -> String {
    let resources: Vec<&str> = resources.into_iter().map(String::as_str).collect();
    format!(
        "status unknown for quota: {quota}, resources: {}",
        resources.join(",")
    )
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
    let group = served.definition.group_version.group.clone();
    let plural = served.definition.plural.clone();
    kapi_server::informer::follow(served, stopping, |change| match change {
        kapi_server::informer::Change::Event(event) if needs_recount(&group, &plural, event) => {
            dirty.send(event.object.namespace().to_string()).is_ok()
        }
        _ => true,
    })
    .await;
}

/// Whether a change of a `group`/`plural` object calls for recomputing its namespace's
/// quotas: a new quota or a changed `spec`, a deleted object, an object that now uses less
/// (a pod that finished or was resized down, a claim or a service that shrank). Not
/// creations or growth: admission charged them, and recounting while they are in flight would
/// undercount and let more in (upstream's replenishment controller likewise reacts to what
/// gives usage back only).
fn needs_recount(group: &str, plural: &str, event: &CacheEvent) -> bool {
    let decode = |object: &CachedObject| Item::from(object).decode().unwrap_or(Value::Null);
    let is_quota = group.is_empty() && plural == "resourcequotas";
    match (event.type_, &event.prev) {
        (EventType::Deleted, _) => !is_quota,
        (EventType::Added, _) => is_quota,
        (EventType::Modified, Some(prev)) => {
            let (old, new) = (decode(prev), decode(&event.object));
            if is_quota {
                return old["spec"] != new["spec"];
            }
            let (before, after) = (usage(group, plural, &old), usage(group, plural, &new));
            before
                .iter()
                .any(|(resource, amount)| after.get(resource).is_none_or(|now| now < amount))
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
        .map(|o| o.namespace().to_string())
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
    for quota in quotas.cached_list(Some(namespace)) {
        let name = quota["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let hard = hard(&quota);
        let mut used: BTreeMap<String, Quantity> = hard
            .keys()
            .map(|k| (k.clone(), Quantity::zero(hard[k].format())))
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
            for object in objects.filter(|o| quotascope::matches(&quota, &group, &plural, o)) {
                for (resource_name, amount) in usage(&group, &plural, &object) {
                    if let Some(total) = used.get_mut(&resource_name) {
                        *total += &amount;
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
            manager: None,
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

/// Starts the quota controller (the hook of `start-resource-quota-controller`).
pub fn start_quota_controller(quotas: Served, api: WeakApiHandler, stopping: CancellationToken) {
    tokio::spawn(run_quota_controller(quotas, api, stopping));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_what_grew() {
        let before = amounts(&json!({"requests.storage": "1Gi", "persistentvolumeclaims": "1"}));
        let after = amounts(
            &json!({"requests.storage": "3Gi", "persistentvolumeclaims": "1",
            "services.nodeports": "2"}),
        );
        assert_eq!(
            pretty(&growth(&after, &before)),
            "requests.storage=2Gi,services.nodeports=2"
        );
        assert!(growth(&before, &after).is_empty());
    }

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
}
