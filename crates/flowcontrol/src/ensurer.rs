//! The configuration producer (upstream's `priority-and-fairness-config-producer` post-start
//! hook and its ensurer): one pass creates what the bootstrap has and the store lacks (the
//! suggested priority levels and FlowSchemas first, then the mandatory ones), puts back the
//! bootstrap spec of every object whose `apf.kubernetes.io/autoupdate-spec` is true
//! (always for the mandatory ones, whose annotation is forced to true), and deletes the
//! objects annotated true whose names the bootstrap no longer has. The hook waits for a
//! first pass that succeeds; passes then run every minute and, unlike upstream's (which
//! only polls), whenever a FlowSchema or priority level changes, so a deleted or altered
//! bootstrap object comes back at once.

use std::time::Duration;

use kapi_apimachinery::status::ApiError;
use kapi_server::cacher::CacheNotification;
use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use kapi_server::registry::{DeleteParams, ReadVersion, Write};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::bootstrap::{self, AUTOUPDATE_SPEC, name_of};

/// The field manager of the producer's writes.
pub const CONFIG_PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
/// How long the hook tries to make a first pass succeed, and how often.
const FIRST_PASS_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const FIRST_PASS_RETRY: Duration = Duration::from_secs(1);
/// How often passes run after the first.
const PASS_INTERVAL: Duration = Duration::from_secs(60);

/// The served flow control collections (their stored version), and the flow controller
/// kept up to date with them (none when API Priority and Fairness is off: the bootstrap
/// is kept all the same, as upstream's producer keeps it, but nothing consumes it).
#[derive(Clone)]
pub struct FlowControlResources {
    pub flow_schemas: Served,
    pub priority_levels: Served,
    pub controller: Option<std::sync::Arc<crate::FlowController>>,
}

/// The post-start hook: a first pass that succeeds (retried every second, failing the hook
/// after five minutes), then passes every minute and on every change until `stopping`.
pub async fn run_config_producer(
    resources: FlowControlResources,
    client: LoopbackClient,
    stopping: CancellationToken,
) -> Result<(), ApiError> {
    let deadline = tokio::time::Instant::now() + FIRST_PASS_TIMEOUT;
    while let Err(err) = ensure(&resources).await {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::internal(format!(
                "unable to initialize APF bootstrap configuration: {err}"
            )));
        }
        tracing::warn!("APF bootstrap ensurer ran into error, will retry later: {err}");
        tokio::select! {
            _ = stopping.cancelled() => return Ok(()),
            _ = tokio::time::sleep(FIRST_PASS_RETRY) => {}
        }
    }
    // The flow controller takes the configuration (once the caches have it) before the
    // server is ready; the Dangling conditions are written once it serves (readiness waits
    // for the producer only, as upstream's), by the first pass of `keep`.
    if let Some(controller) = &resources.controller {
        caught_up(&resources).await;
        controller.refresh(&resources);
    }
    tokio::spawn(keep(resources, client, stopping));
    Ok(())
}

/// How long a pass waits for the caches to catch up with the store.
const FRESH_TIMEOUT: Duration = Duration::from_secs(10);

/// Waits (a while at most) until the flow-control caches have the writes just made, the
/// producer's, so that what reads them next sees them.
pub(crate) async fn caught_up(resources: &FlowControlResources) {
    for served in [&resources.priority_levels, &resources.flow_schemas] {
        let _ = served.registry.cacher().wait_fresh(FRESH_TIMEOUT).await;
    }
}

/// Updates the FlowSchemas' `Dangling` conditions (applied through `client`), logging a
/// failure (the next change or minute tries again), and the flow controller's
/// configuration: the consumer's work, done only when there is a consumer.
async fn mark(resources: &FlowControlResources, client: &LoopbackClient) {
    let Some(controller) = &resources.controller else {
        return;
    };
    if let Err(err) = crate::mark_dangling(resources, client).await {
        tracing::warn!("setting the Dangling conditions of FlowSchemas: {err}");
    }
    controller.refresh(resources);
}

/// Passes every minute and whenever either collection changes, until `stopping`.
async fn keep(
    resources: FlowControlResources,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    let subscribe = |served: &Served| {
        let prefix = served.registry.collection_prefix(None);
        served.registry.cacher().subscribe(None, &prefix)
    };
    while !stopping.is_cancelled() {
        let (Ok(mut schemas), Ok(mut levels)) = (
            subscribe(&resources.flow_schemas),
            subscribe(&resources.priority_levels),
        ) else {
            tracing::error!("the APF configuration producer cannot follow its collections");
            return;
        };
        let mut interval = tokio::time::interval(PASS_INTERVAL);
        loop {
            let notification = tokio::select! {
                _ = stopping.cancelled() => return,
                _ = interval.tick() => Ok(CacheNotification::Events(Vec::new().into())),
                n = schemas.receiver.recv() => n,
                n = levels.receiver.recv() => n,
            };
            match notification {
                Ok(CacheNotification::Events(_)) => {
                    // One pass answers every change that came before it; changes during it
                    // (its own writes among them) make one more.
                    while schemas.receiver.try_recv().is_ok() || levels.receiver.try_recv().is_ok()
                    {
                    }
                    if let Err(err) = ensure(&resources).await {
                        tracing::warn!("APF bootstrap ensurer ran into error: {err}");
                    }
                    mark(&resources, &client).await;
                }
                Ok(CacheNotification::Progress(_)) => {}
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => break,
            }
        }
    }
}

/// One pass of the ensurer, stopping at the first error.
pub async fn ensure(resources: &FlowControlResources) -> Result<(), ApiError> {
    let (schemas, levels) = (&resources.flow_schemas, &resources.priority_levels);
    let passes = [
        (levels, bootstrap::suggested_priority_levels(), false),
        (schemas, bootstrap::suggested_flow_schemas(), false),
        (levels, bootstrap::mandatory_priority_levels(), true),
        (schemas, bootstrap::mandatory_flow_schemas(), true),
    ];
    // Levels before the schemas that name them; within a pass the objects are independent,
    // and ensured together so that a first start commits them in a batch.
    for (served, objects, mandatory) in passes {
        let ensured = objects
            .into_iter()
            .map(|object| ensure_one(served, object, mandatory));
        futures::future::join_all(ensured)
            .await
            .into_iter()
            .collect::<Result<(), ApiError>>()?;
    }
    let wanted = |objects: [Vec<Value>; 2]| -> Vec<String> {
        objects
            .iter()
            .flatten()
            .map(|object| name_of(object).to_string())
            .collect()
    };
    let schema_names = wanted([
        bootstrap::mandatory_flow_schemas(),
        bootstrap::suggested_flow_schemas(),
    ]);
    let level_names = wanted([
        bootstrap::mandatory_priority_levels(),
        bootstrap::suggested_priority_levels(),
    ]);
    remove_unwanted(schemas, &schema_names).await?;
    remove_unwanted(levels, &level_names).await
}

/// Creates `bootstrap` when missing, or writes what [`revised`] says it needs.
async fn ensure_one(served: &Served, bootstrap: Value, mandatory: bool) -> Result<(), ApiError> {
    let name = name_of(&bootstrap).to_string();
    let resource = served.definition.group_resource();
    let current = served
        .registry
        .get(&resource, "", &name, &ReadVersion::MostRecent)
        .await;
    let current = match current {
        Err(err) if err.is_not_found() => {
            let created = served
                .registry
                .create(
                    &served.definition,
                    "",
                    bootstrap,
                    Write::own(CONFIG_PRODUCER),
                )
                .await;
            return match created {
                // Someone else made it first: the next pass looks at it.
                Err(err) if err.code() == 409 => Ok(()),
                other => other.map(drop),
            };
        }
        other => other?.decode()?,
    };
    let Some(revised) = revised(served, &current, &bootstrap, mandatory) else {
        return Ok(());
    };
    let version = current["metadata"]["resourceVersion"].clone();
    let written = served
        .registry
        .update(
            &served.definition,
            "",
            &name,
            Write::own(CONFIG_PRODUCER),
            |now| match now {
                Some(now) if now["metadata"]["resourceVersion"] == version => Ok(revised.clone()),
                _ => Err(ApiError::conflict(&resource, &name, "changed meanwhile")),
            },
        )
        .await;
    match written {
        // Changed meanwhile: the change's own pass looks at it again.
        Err(err) if err.code() == 409 || err.is_not_found() => Ok(()),
        other => other.map(drop),
    }
}

/// What `current` must become, if anything (upstream's `ReviseIfNeeded`): whether the spec is
/// kept is the annotation's say (forced true for mandatory objects; for suggested ones
/// without a readable annotation, whether nobody changed it since its creation); the
/// bootstrap spec is put back when kept and different, and the annotation set to the choice.
fn revised(served: &Served, current: &Value, bootstrap: &Value, mandatory: bool) -> Option<Value> {
    let annotation = current["metadata"]["annotations"][AUTOUPDATE_SPEC]
        .as_str()
        .and_then(parse_go_bool);
    let auto_update = match mandatory {
        true => true,
        false => {
            annotation.unwrap_or_else(|| current["metadata"]["generation"].as_i64() == Some(1))
        }
    };
    let update_annotation = annotation != Some(auto_update);
    let spec_changed = auto_update && !spec_equalish(served, bootstrap, current);
    if !update_annotation && !spec_changed {
        return None;
    }
    let mut revised = current.clone();
    if spec_changed {
        revised["spec"] = bootstrap["spec"].clone();
    }
    if update_annotation {
        revised["metadata"]["annotations"][AUTOUPDATE_SPEC] = Value::from(auto_update.to_string());
    }
    Some(revised)
}

/// Whether `current`'s spec is the bootstrap's once defaulted; the exempt priority level's
/// `nominalConcurrencyShares` and `lendablePercent` are the operator's to tune.
fn spec_equalish(served: &Served, bootstrap: &Value, current: &Value) -> bool {
    let mut wanted = bootstrap.clone();
    served.definition.strategy.default(&mut wanted);
    if current["kind"] == "PriorityLevelConfiguration" && name_of(bootstrap) == "exempt" {
        let Some(exempt) = current["spec"]["exempt"].as_object() else {
            return false;
        };
        for field in ["nominalConcurrencyShares", "lendablePercent"] {
            wanted["spec"]["exempt"][field] = exempt.get(field).cloned().unwrap_or(Value::Null);
        }
    }
    wanted["spec"] == current["spec"]
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Deletes every object annotated to be kept by the producer whose name `wanted` lacks.
async fn remove_unwanted(served: &Served, wanted: &[String]) -> Result<(), ApiError> {
    for value in served.cached_list_parts(&[], &["name", "annotations"]) {
        let name = name_of(&value);
        if wanted.iter().any(|w| w == name) {
            continue;
        }
        let annotation = value["metadata"]["annotations"][AUTOUPDATE_SPEC].as_str();
        if annotation.and_then(parse_go_bool) != Some(true) {
            continue;
        }
        let deleted = served
            .registry
            .delete(&served.definition, "", name, &DeleteParams::default(), None)
            .await;
        match deleted {
            Err(err) if !err.is_not_found() => return Err(err),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_bools_parse_as_strconv_parses_them() {
        for text in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_go_bool(text), Some(true), "{text}");
        }
        for text in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_go_bool(text), Some(false), "{text}");
        }
        for text in ["", "yes", "tRUE", " true"] {
            assert_eq!(parse_go_bool(text), None, "{text}");
        }
    }

    #[test]
    fn the_bootstrap_has_upstreams_names_in_order() {
        let names = |objects: Vec<Value>| -> Vec<String> {
            objects.iter().map(|o| name_of(o).to_string()).collect()
        };
        assert_eq!(
            names(bootstrap::mandatory_priority_levels()),
            ["catch-all", "exempt"]
        );
        assert_eq!(
            names(bootstrap::mandatory_flow_schemas()),
            ["exempt", "catch-all"]
        );
        assert_eq!(
            names(bootstrap::suggested_priority_levels()),
            [
                "system",
                "node-high",
                "leader-election",
                "workload-high",
                "workload-low",
                "global-default"
            ]
        );
        assert_eq!(
            names(bootstrap::suggested_flow_schemas()),
            [
                "system-nodes",
                "system-node-high",
                "probes",
                "system-leader-election",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-system-service-accounts",
                "service-accounts",
                "global-default",
            ]
        );
    }
}
