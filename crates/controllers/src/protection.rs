//! kube-controller-manager's persistentvolumeclaim-protection and persistentvolume-protection
//! controllers, run in process: a PersistentVolumeClaim being deleted loses its
//! `kubernetes.io/pvc-protection` finalizer (and so goes) once no running pod uses it, and a
//! PersistentVolume being deleted loses `kubernetes.io/pv-protection` once it is not bound.
//! Without them every claim and volume the StorageObjectInUseProtection plugin protects
//! could never be deleted.

use std::time::Duration;

use kapi_server::cacher::EventType;
use kapi_server::endpoints::Served;
use kapi_server::registry::Write;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use kapi_builtin::{PV_PROTECTION, PVC_PROTECTION};
use kapi_server::informer::{self, Change};

/// How often every deleting claim and volume is looked at again.
const RESYNC: Duration = Duration::from_secs(60);

/// What to look at again.
#[derive(Debug)]
enum Dirty {
    /// The deleting claims of a namespace (a claim changed, or a pod went away).
    Namespace(String),
    /// One volume.
    Volume(String),
    /// Everything.
    All,
}

/// The collections the controllers read and write, and which of the two controllers run.
#[derive(Clone)]
pub struct ProtectedStorage {
    pub claims: Served,
    pub volumes: Served,
    pub pods: Served,
    /// The persistentvolumeclaim-protection controller runs.
    pub release_claims: bool,
    /// The persistentvolume-protection controller runs.
    pub release_volumes: bool,
}

/// Starts the claim and volume protection controllers, until `stopping`.
pub fn start_protection_controllers(storage: ProtectedStorage, stopping: CancellationToken) {
    let (dirty, work) = mpsc::unbounded_channel();
    let follows = [
        (storage.claims.clone(), Kind::Claim),
        (storage.pods.clone(), Kind::Pod),
        (storage.volumes.clone(), Kind::Volume),
    ];
    for (served, kind) in follows {
        tokio::spawn(follow(served, kind, dirty.clone(), stopping.clone()));
    }
    tokio::spawn(run(storage, work, stopping));
}

/// Which collection a follower watches.
#[derive(Clone, Copy)]
enum Kind {
    Claim,
    Pod,
    Volume,
}

async fn run(
    storage: ProtectedStorage,
    mut work: mpsc::UnboundedReceiver<Dirty>,
    stopping: CancellationToken,
) {
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        let dirty = tokio::select! {
            _ = stopping.cancelled() => return,
            _ = resync.tick() => Dirty::All,
            dirty = work.recv() => match dirty {
                Some(dirty) => dirty,
                None => return,
            },
        };
        match dirty {
            Dirty::Namespace(namespace) if storage.release_claims => {
                release_claims(&storage, Some(&namespace)).await
            }
            Dirty::Volume(name) if storage.release_volumes => {
                release_volume(&storage.volumes, &name).await
            }
            Dirty::All => {
                if storage.release_claims {
                    release_claims(&storage, None).await;
                }
                if !storage.release_volumes {
                    continue;
                }
                for volume in deleting(&storage.volumes, None, PV_PROTECTION) {
                    let name = volume["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    release_volume(&storage.volumes, &name).await;
                }
            }
            _ => {}
        }
    }
}

/// The objects of `served` (in `namespace`, or all) being deleted and held by `finalizer`.
fn deleting(served: &Served, namespace: Option<&str>, finalizer: &str) -> Vec<Value> {
    served
        .cached_list(namespace)
        .into_iter()
        .filter(|o| kapi_server::object::is_deleting(o) && has_finalizer(o, finalizer))
        .collect()
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == finalizer))
}

/// Releases the deleting claims (of `namespace`, or all) that no running pod uses.
async fn release_claims(storage: &ProtectedStorage, namespace: Option<&str>) {
    for claim in deleting(&storage.claims, namespace, PVC_PROTECTION) {
        let meta = &claim["metadata"];
        let (namespace, name) = (
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default(),
        );
        let pods = storage.pods.cached_list(Some(namespace));
        if pods.iter().any(|pod| uses_claim(pod, name)) {
            continue;
        }
        remove_finalizer(&storage.claims, namespace, name, PVC_PROTECTION).await;
    }
}

/// Whether a pod that has not finished uses the claim `name`: as a claim volume, or as the
/// claim of a generic ephemeral volume (`<pod>-<volume>`).
fn uses_claim(pod: &Value, name: &str) -> bool {
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|volume| {
            volume["persistentVolumeClaim"]["claimName"] == name
                || (volume.get("ephemeral").is_some()
                    && format!("{pod_name}-{}", volume["name"].as_str().unwrap_or_default())
                        == name)
        })
}

/// Releases the volume `name` if it is being deleted and is not bound.
async fn release_volume(volumes: &Served, name: &str) {
    let Some(volume) = volumes.cached("", name) else {
        return;
    };
    let bound = volume["status"]["phase"] == "Bound";
    if kapi_server::object::is_deleting(&volume) && has_finalizer(&volume, PV_PROTECTION) && !bound
    {
        remove_finalizer(volumes, "", name, PV_PROTECTION).await;
    }
}

/// Removes `finalizer` from the object (which then goes, if it was the last).
async fn remove_finalizer(served: &Served, namespace: &str, name: &str, finalizer: &str) {
    let updated = served
        .registry
        .update(
            &served.definition,
            namespace,
            name,
            Write::own(kapi_server::registry::KUBE_CONTROLLER_MANAGER),
            |current| {
                let mut object = current.cloned().ok_or_else(|| {
                    kapi_apimachinery::status::ApiError::not_found(
                        &served.definition.group_resource(),
                        name,
                    )
                })?;
                if let Some(list) = object
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    list.retain(|f| f != finalizer);
                }
                Ok(object)
            },
        )
        .await;
    if let Err(err) = updated
        && !err.is_not_found()
    {
        tracing::warn!(%namespace, %name, "removing the {finalizer} finalizer: {err}");
    }
}

/// Sends what to look at again from one collection's changes: a claim's namespace when it
/// changes, a pod's when it goes or finishes, a volume when it changes; everything after the
/// follower fell behind.
async fn follow(
    served: Served,
    kind: Kind,
    dirty: mpsc::UnboundedSender<Dirty>,
    stopping: CancellationToken,
) {
    informer::follow(served, stopping, |change| {
        let Change::Event(event) = change else {
            return dirty.send(Dirty::All).is_ok();
        };
        let object = &event.object;
        let work = match kind {
            Kind::Claim => Some(Dirty::Namespace(object.namespace().to_string())),
            Kind::Volume => Some(Dirty::Volume(object.name().to_string())),
            Kind::Pod if event.type_ == EventType::Deleted || finished(&object.stored) => {
                Some(Dirty::Namespace(object.namespace().to_string()))
            }
            Kind::Pod => None,
        };
        work.is_none_or(|work| dirty.send(work).is_ok())
    })
    .await;
}

/// Whether stored pod bytes are of a finished pod.
fn finished(stored: &[u8]) -> bool {
    let pod: Value = serde_json::from_slice(stored).unwrap_or(Value::Null);
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn running_pods_use_their_claims() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]}});
        assert!(uses_claim(&pod, "data-0"));
        assert!(uses_claim(&pod, "web-scratch"));
        assert!(!uses_claim(&pod, "other"));
        let mut done = pod.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert!(!uses_claim(&done, "data-0"));
    }
}
