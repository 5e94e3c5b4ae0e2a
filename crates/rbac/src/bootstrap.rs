//! The bootstrap policy reconciled at start (upstream's `rbac/bootstrap-roles` post-start
//! hook and its reconciliation package), and the ClusterRole aggregation controller (run by
//! kube-controller-manager upstream; in-process here).
//!
//! Reconciling never takes anything away: a missing object is created; an existing one whose
//! `rbac.authorization.kubernetes.io/autoupdate` annotation is not "false" gains the rules,
//! aggregation selectors, subjects, labels and annotations it lacks; a binding whose roleRef
//! differs is recreated (a roleRef cannot be changed).

use std::collections::BTreeSet;

use futures::StreamExt;

use kapi_apimachinery::labels;
use kapi_apimachinery::status::ApiError;
use kapi_server::cacher::{CacheNotification, Subscription};
use kapi_server::endpoints::Served;
use kapi_server::registry::{DeleteParams, Item, KUBE_APISERVER, ReadVersion, Write};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::policy;
use super::rules::{PolicyRule, uncovered};

/// The annotation that, set to "false", keeps reconciliation away from an object.
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// How long the hook waits for the ClusterRoles' cache to have the policy.
const FRESH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How many times an object's reconciliation retries after conflicts.
const ATTEMPTS: usize = 5;
/// How many bootstrap objects are reconciled at once.
const CONCURRENT: usize = 64;

/// The served RBAC collections (their stored version).
#[derive(Clone)]
pub struct RbacResources {
    pub roles: Served,
    pub cluster_roles: Served,
    pub role_bindings: Served,
    pub cluster_role_bindings: Served,
}

/// The `rbac/bootstrap-roles` post-start hook: reconciles the bootstrap policy and, when
/// that wrote something, aggregates the aggregated ClusterRoles once the cache has the
/// policy, so that a server is ready with them whole; then keeps them aggregated until
/// `stopping`. When the policy was already in place (a restart), the roles are as the last
/// server aggregated them, and the controller's first pass, as upstream's controller's,
/// runs beside readiness rather than before it.
pub async fn start(rbac: RbacResources, stopping: CancellationToken) -> Result<(), ApiError> {
    let wrote = ensure_bootstrap_policy(&rbac).await?;
    // On an etcd whose progress notifications are unordered the cache cannot be waited for;
    // the controller then aggregates as the policy's events arrive. Subscribed before this
    // pass, the controller sees every change after it and need not make its own first pass.
    let mut followed = None;
    if wrote {
        let cacher = rbac.cluster_roles.registry.cacher();
        let prefix = rbac.cluster_roles.registry.collection_prefix(None);
        let subscription = cacher.subscribe(None, &prefix).ok();
        if cacher.wait_fresh(FRESH_TIMEOUT).await.is_ok() {
            aggregate_all(&rbac.cluster_roles).await;
            followed = subscription;
        }
    }
    tokio::spawn(run_aggregation(rbac.cluster_roles, followed, stopping));
    Ok(())
}

/// Reconciles the whole bootstrap policy; the first error, after trying every object.
/// The objects are independent (a binding may name a role not yet there), so they are
/// reconciled [`CONCURRENT`] at a time: on a first start the store commits their creations
/// in a few batches rather than one by one. Whether it wrote anything.
pub async fn ensure_bootstrap_policy(rbac: &RbacResources) -> Result<bool, ApiError> {
    let sets = [
        (&rbac.cluster_roles, policy::cluster_roles()),
        (&rbac.cluster_role_bindings, policy::cluster_role_bindings()),
        (&rbac.roles, policy::roles()),
        (&rbac.role_bindings, policy::role_bindings()),
    ];
    let mut objects = Vec::new();
    for (served, desired) in sets {
        objects.extend(desired.into_iter().map(|desired| (served.clone(), desired)));
    }
    let outcomes: Vec<Result<bool, ApiError>> = futures::stream::iter(objects)
        .map(|(served, desired)| async move { reconcile(&served, desired).await })
        .buffered(CONCURRENT)
        .collect()
        .await;
    let wrote: Vec<bool> = outcomes.into_iter().collect::<Result<_, _>>()?;
    Ok(wrote.contains(&true))
}

/// Reconciles one object, retrying on conflicts; whether it wrote it.
async fn reconcile(served: &Served, desired: Value) -> Result<bool, ApiError> {
    let namespace = desired["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let name = desired["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let resource = served.definition.group_resource();
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let existing = served
            .registry
            .get(&resource, &namespace, &name, &ReadVersion::MostRecent)
            .await;
        let outcome = match existing {
            Err(err) if err.is_not_found() => create(served, &namespace, desired.clone()).await,
            Err(err) => return Err(err),
            Ok(item) => update(served, &namespace, &name, &item, &desired).await,
        };
        match outcome {
            Err(err) if err.code() == 409 => last = Some(err),
            done => return done,
        }
    }
    Err(last.unwrap_or_else(|| ApiError::internal("reconciling the bootstrap policy")))
}

async fn create(served: &Served, namespace: &str, desired: Value) -> Result<bool, ApiError> {
    served
        .registry
        .create(
            &served.definition,
            namespace,
            desired,
            Write::own(KUBE_APISERVER),
        )
        .await
        .map(|_| true)
}

/// Brings an existing object up to `desired`, a binding with another roleRef recreated;
/// whether it wrote.
/// The object is first read only in what the checks read (on a restart nothing lacks
/// anything, and the rest of the object, its managed fields most of all, is not decoded).
async fn update(
    served: &Served,
    namespace: &str,
    name: &str,
    item: &Item,
    desired: &Value,
) -> Result<bool, ApiError> {
    let checked = item.decode_parts(
        &["rules", "aggregationRule", "subjects", "roleRef"],
        &["labels", "annotations", "uid"],
    )?;
    if checked["metadata"]["annotations"][AUTOUPDATE] == "false" {
        return Ok(false);
    }
    if desired.get("roleRef").is_some() && checked["roleRef"] != desired["roleRef"] {
        let params = DeleteParams {
            precondition_uid: Some(
                checked["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
            ),
            ..DeleteParams::default()
        };
        served
            .registry
            .delete(&served.definition, namespace, name, &params, None)
            .await?;
        return create(served, namespace, desired.clone()).await;
    }
    if !lacks(&checked, desired) {
        return Ok(false);
    }
    let existing = item.decode()?;
    let reconciled = reconciled(&existing, desired);
    served
        .registry
        .update(
            &served.definition,
            namespace,
            name,
            Write::own(KUBE_APISERVER),
            |current| match current {
                Some(current) if *current == existing => Ok(reconciled.clone()),
                _ => Err(ApiError::conflict(
                    &served.definition.group_resource(),
                    name,
                    "changed while being reconciled",
                )),
            },
        )
        .await
        .map(|_| true)
}

/// Whether [`reconciled`] would change `existing`: the check a start makes of every
/// bootstrap object, so it copies nothing (on a restart nothing lacks anything).
fn lacks(existing: &Value, desired: &Value) -> bool {
    let lacks_keys = |field: &str| match existing["metadata"][field].as_object() {
        None => true,
        Some(own) => desired["metadata"][field]
            .as_object()
            .is_some_and(|wanted| wanted.keys().any(|key| !own.contains_key(key))),
    };
    if lacks_keys("labels") || lacks_keys("annotations") {
        return true;
    }
    if desired.get("rules").is_some() {
        let own = PolicyRule::of_role(existing);
        if !existing["rules"].is_array()
            || !uncovered(&own, &PolicyRule::of_role(desired)).is_empty()
        {
            return true;
        }
    }
    let pointer = "/aggregationRule/clusterRoleSelectors";
    if let Some(wanted) = desired.pointer(pointer).and_then(Value::as_array) {
        let selectors = existing.pointer(pointer).and_then(Value::as_array);
        let whole = existing["aggregationRule"]
            .as_object()
            .is_some_and(|rule| rule.len() == 1);
        if !whole || !contains_all(selectors, wanted) {
            return true;
        }
    }
    desired["subjects"]
        .as_array()
        .is_some_and(|wanted| !contains_all(existing["subjects"].as_array(), wanted))
}

/// Whether `list` is there and holds every one of `wanted`.
fn contains_all(list: Option<&Vec<Value>>, wanted: &[Value]) -> bool {
    list.is_some_and(|list| wanted.iter().all(|item| list.contains(item)))
}

/// `existing` with what it lacks of `desired`: labels and annotations, rules (as the atomic
/// rules not covered yet), aggregation selectors and subjects.
fn reconciled(existing: &Value, desired: &Value) -> Value {
    let mut result = existing.clone();
    for field in ["labels", "annotations"] {
        let mut merged = desired["metadata"][field]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if let Some(own) = existing["metadata"][field].as_object() {
            merged.extend(own.clone());
        }
        result["metadata"][field] = Value::Object(merged);
    }
    if desired.get("rules").is_some() {
        let missing = uncovered(
            &PolicyRule::of_role(existing),
            &PolicyRule::of_role(desired),
        );
        let mut rules = existing["rules"].as_array().cloned().unwrap_or_default();
        rules.extend(missing.iter().map(PolicyRule::to_value));
        result["rules"] = Value::Array(rules);
    }
    let pointer = "/aggregationRule/clusterRoleSelectors";
    if let Some(wanted) = desired.pointer(pointer).and_then(Value::as_array) {
        let mut selectors = existing
            .pointer(pointer)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for selector in wanted {
            if !selectors.contains(selector) {
                selectors.push(selector.clone());
            }
        }
        result["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
    }
    if let Some(wanted) = desired["subjects"].as_array() {
        let mut subjects = existing["subjects"].as_array().cloned().unwrap_or_default();
        for subject in wanted {
            if !subjects.contains(subject) {
                subjects.push(subject.clone());
            }
        }
        result["subjects"] = Value::Array(subjects);
    }
    result
}

/// The ClusterRole aggregation controller: keeps the rules of every ClusterRole with an
/// `aggregationRule` equal to the union of the rules of the ClusterRoles its selectors
/// match, re-checked on every change of a ClusterRole, until `stopping`. `followed` is a
/// subscription taken before a pass over every ClusterRole that was already made.
async fn run_aggregation(
    cluster_roles: Served,
    mut followed: Option<Subscription>,
    stopping: CancellationToken,
) {
    let prefix = cluster_roles.registry.collection_prefix(None);
    while !stopping.is_cancelled() {
        let mut subscription = match followed.take() {
            Some(subscription) => subscription,
            None => {
                let Ok(subscription) = cluster_roles.registry.cacher().subscribe(None, &prefix)
                else {
                    return;
                };
                aggregate_all(&cluster_roles).await;
                subscription
            }
        };
        loop {
            let notification = tokio::select! {
                _ = stopping.cancelled() => return,
                notification = subscription.receiver.recv() => notification,
            };
            match notification {
                Ok(CacheNotification::Events(_)) => aggregate_all(&cluster_roles).await,
                Ok(CacheNotification::Progress(_)) => {}
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => break,
            }
        }
    }
}

/// One pass over the aggregated ClusterRoles, as the cache has them now.
async fn aggregate_all(cluster_roles: &Served) {
    let prefix = cluster_roles.registry.collection_prefix(None);
    let snapshot = cluster_roles.registry.cacher().list(&prefix, |_| true);
    let roles: Vec<Value> = snapshot
        .objects
        .iter()
        .filter_map(|object| {
            let item = Item::from(&**object);
            item.decode_parts(&["rules", "aggregationRule"], &["name", "labels"])
                .ok()
        })
        .collect();
    for role in roles.iter().filter(|role| {
        role.pointer("/aggregationRule")
            .is_some_and(|r| !r.is_null())
    }) {
        let rules = aggregated_rules(role, &roles);
        if role["rules"]
            .as_array()
            .is_some_and(|current| *current == rules)
        {
            continue;
        }
        let name = role["metadata"]["name"].as_str().unwrap_or_default();
        let written = cluster_roles
            .registry
            .update(
                &cluster_roles.definition,
                "",
                name,
                Write::own(KUBE_APISERVER),
                |current| {
                    let mut updated = current.cloned().ok_or_else(|| {
                        ApiError::not_found(&cluster_roles.definition.group_resource(), name)
                    })?;
                    updated["rules"] = Value::Array(rules.clone());
                    Ok(updated)
                },
            )
            .await;
        if let Err(err) = written {
            tracing::warn!("aggregating ClusterRole {name}: {err}");
        }
    }
}

/// The union of the rules of the roles `role`'s selectors match (itself excluded), in name
/// order, each rule once.
fn aggregated_rules(role: &Value, roles: &[Value]) -> Vec<Value> {
    let own_name = &role["metadata"]["name"];
    let selectors: Vec<labels::Selector> = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|s| labels::from_label_selector(s).ok())
                .collect()
        })
        .unwrap_or_default();
    let mut matching: Vec<&Value> = roles
        .iter()
        .filter(|other| other["metadata"]["name"] != *own_name)
        .filter(|other| {
            let labels = other["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_else(Map::new);
            selectors
                .iter()
                .any(|selector| !selector.is_empty() && selector.matches(&labels))
        })
        .collect();
    matching.sort_by_key(|other| {
        other["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    let mut seen = BTreeSet::new();
    let mut rules = Vec::new();
    for other in matching {
        for rule in other["rules"].as_array().into_iter().flatten() {
            if seen.insert(rule.to_string()) {
                rules.push(rule.clone());
            }
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciling_adds_what_is_missing_and_keeps_the_rest() {
        let desired = json!({
            "metadata": {"name": "r", "labels": {"a": "1"}},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}],
        });
        let edited = json!({
            "metadata": {"name": "r", "labels": {"a": "2", "mine": "x"}},
            "rules": [
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]},
            ],
        });
        let result = reconciled(&edited, &desired);
        assert_eq!(result["metadata"]["labels"], json!({"a": "2", "mine": "x"}));
        assert_eq!(
            result["rules"],
            json!([
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]},
                {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
            ])
        );
        assert_eq!(reconciled(&result, &desired), result);
        let binding =
            json!({"metadata": {"name": "b"}, "subjects": [{"kind": "Group", "name": "g"}]});
        let mine = json!({"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "u"}]});
        assert_eq!(
            reconciled(&mine, &binding)["subjects"],
            json!([{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"}])
        );
    }

    /// `lacks` says exactly when `reconciled` changes an object.
    #[test]
    fn lacking_is_what_reconciling_changes() {
        let mut policy = policy::cluster_roles();
        policy.extend(policy::cluster_role_bindings());
        policy.extend(policy::roles());
        policy.extend(policy::role_bindings());
        let edits: [fn(&mut Value); 9] = [
            |_| {},
            |o| o["metadata"]["labels"]["extra"] = json!("x"),
            |o| drop(o["metadata"].as_object_mut().unwrap().remove("labels")),
            |o| drop(o["metadata"].as_object_mut().unwrap().remove("annotations")),
            |o| o["metadata"]["labels"] = json!({}),
            |o| o["rules"] = json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            |o| o["rules"] = json!([]),
            |o| o["subjects"] = json!([{"kind": "User", "name": "someone"}]),
            |o| o["aggregationRule"] = json!({"clusterRoleSelectors": [], "other": 1}),
        ];
        let mut changed = 0;
        for desired in &policy {
            for edit in edits {
                let mut existing = desired.clone();
                edit(&mut existing);
                let changes = reconciled(&existing, desired) != existing;
                assert_eq!(lacks(&existing, desired), changes, "{existing}");
                changed += usize::from(changes);
            }
        }
        assert!(changed > policy.len() * 3, "{changed}");
    }

    #[test]
    fn aggregation_unions_matching_roles_in_name_order() {
        let role = |name: &str, label: &str, verb: &str| {
            json!({
                "metadata": {"name": name, "labels": {label: "true"}},
                "rules": [{"verbs": [verb], "apiGroups": [""], "resources": ["pods"]}],
            })
        };
        let view = json!({
            "metadata": {"name": "view"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-view": "true"}}]},
        });
        let roles = vec![
            view.clone(),
            role("zeta", "to-view", "list"),
            role("alpha", "to-view", "get"),
            role("dup", "to-view", "get"),
            role("other", "elsewhere", "delete"),
        ];
        assert_eq!(
            aggregated_rules(&view, &roles),
            vec![
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}),
                json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}),
            ]
        );
    }

    #[test]
    fn the_policy_is_well_formed() {
        let roles = policy::cluster_roles();
        let names: BTreeSet<&str> = roles
            .iter()
            .filter_map(|r| r["metadata"]["name"].as_str())
            .collect();
        for binding in policy::cluster_role_bindings() {
            let role = binding["roleRef"]["name"].as_str().unwrap();
            assert!(names.contains(role), "{role}");
        }
        let view_labels = roles
            .iter()
            .find(|r| r["metadata"]["name"] == "system:aggregate-to-view")
            .unwrap();
        assert_eq!(
            view_labels["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"],
            "true"
        );
        assert_eq!(
            roles
                .iter()
                .find(|r| r["metadata"]["name"] == "cluster-admin")
                .unwrap()["metadata"]["annotations"][AUTOUPDATE],
            "true"
        );
    }
}
