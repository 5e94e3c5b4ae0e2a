//! ConfigMaps in kube-system that this server's controllers keep, as upstream's
//! cluster-authentication-trust and legacy-token-tracking controllers keep theirs: created
//! when missing, brought back to what the controller wants whenever they change or go, and
//! looked at again every [`RESYNC`].

use kapi_apimachinery::status::ApiError;
use kapi_server::endpoints::Served;
use kapi_server::informer::{self, Change};
use kapi_server::registry::{KUBE_APISERVER, Write};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The namespace the kept ConfigMaps live in.
const NAMESPACE: &str = "kube-system";
/// How often a ConfigMap is looked at again without a change.
const RESYNC: std::time::Duration = std::time::Duration::from_secs(60);
/// How soon a failed write is tried again.
const RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// The data a controller wants its ConfigMap to hold, given the data it holds now
/// (`null` when the ConfigMap does not exist).
pub(crate) type WantedData = Arc<dyn Fn(&Value) -> Map<String, Value> + Send + Sync>;

/// Creates the ConfigMap `name` or brings its data to what `wanted` asks.
async fn ensure(config_maps: &Served, name: &str, wanted: &WantedData) -> Result<(), ApiError> {
    let registry = &config_maps.registry;
    let definition = &config_maps.definition;
    let Some(current) = config_maps.cached(NAMESPACE, name) else {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": wanted(&Value::Null)});
        return match registry
            .create(definition, NAMESPACE, object, Write::own(KUBE_APISERVER))
            .await
        {
            Err(err) if !err.is_already_exists() => Err(err),
            _ => Ok(()),
        };
    };
    if Value::Object(wanted(&current["data"])) == current["data"] {
        return Ok(());
    }
    let updated = registry
        .update(
            definition,
            NAMESPACE,
            name,
            Write::own(KUBE_APISERVER),
            |current| {
                let mut object = current
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(&definition.group_resource(), name))?;
                object["data"] = Value::Object(wanted(&object["data"]));
                Ok(object)
            },
        )
        .await;
    updated.map(drop)
}

/// Keeps the ConfigMap `kube-system/name` holding what `wanted` asks until `stopping`: now,
/// whenever it changes or goes, and every [`RESYNC`].
pub(crate) fn keep(
    config_maps: Served,
    name: &'static str,
    wanted: WantedData,
    stopping: CancellationToken,
) {
    let (changed, mut to_check) = mpsc::unbounded_channel::<()>();
    tokio::spawn(informer::follow(
        config_maps.clone(),
        stopping.clone(),
        move |change| {
            let ours = match change {
                Change::Resync => true,
                Change::Event(event) => {
                    event.object.name() == name && event.object.namespace() == NAMESPACE
                }
            };
            !ours || changed.send(()).is_ok()
        },
    ));
    tokio::spawn(async move {
        let mut resync = tokio::time::interval(RESYNC);
        let mut failed = false;
        loop {
            // A failed write (kube-system not there yet, a conflict) is retried shortly.
            let retry = tokio::time::sleep(if failed { RETRY } else { RESYNC });
            tokio::select! {
                _ = stopping.cancelled() => return,
                _ = resync.tick() => {}
                _ = retry => {}
                change = to_check.recv() => if change.is_none() { return },
            }
            failed = false;
            if let Err(err) = ensure(&config_maps, name, &wanted).await {
                tracing::debug!("keeping {NAMESPACE}/{name}: {err}");
                failed = true;
            }
        }
    });
}
