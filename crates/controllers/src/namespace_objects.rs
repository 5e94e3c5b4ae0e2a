//! The objects every active namespace holds, kept by in-process controllers as
//! kube-controller-manager keeps them: the `default` ServiceAccount (its serviceaccount
//! controller) and the `kube-root-ca.crt` ConfigMap with the cluster's CA (its
//! root-ca-cert-publisher). Without them the ServiceAccount admission plugin would refuse
//! every pod, and the pods' token volume would have no CA; kapi runs them so that a cluster of
//! kapi alone works. A kube-controller-manager beside kapi does the same work harmlessly.

use std::sync::Arc;

use kapi_apimachinery::status::ApiError;
use kapi_server::cacher::EventType;
use kapi_server::endpoints::Served;
use kapi_server::registry::Write;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use kapi_builtin::namespace::PHASE_TERMINATING;
use kapi_server::informer::{self, Change};

/// The ConfigMap of the cluster CA in every namespace.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// How often every namespace is looked at again.
const RESYNC: std::time::Duration = std::time::Duration::from_secs(60);
/// Upstream's description of [`ROOT_CA_CONFIG_MAP`].
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// One object kept in every active namespace.
#[derive(Clone)]
pub struct NamespaceObject {
    /// Its collection.
    served: Served,
    name: &'static str,
    /// The object for a namespace.
    desired: Arc<dyn Fn(&str) -> Value + Send + Sync>,
    /// Whether an existing object must be brought back to the desired one (its data); else
    /// any object of that name will do.
    enforced: bool,
}

impl NamespaceObject {
    /// The `default` ServiceAccount.
    pub fn default_service_account(accounts: Served) -> NamespaceObject {
        NamespaceObject {
            served: accounts,
            name: "default",
            desired: Arc::new(|namespace| {
                json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": namespace}})
            }),
            enforced: false,
        }
    }

    /// The `kube-root-ca.crt` ConfigMap holding `ca_pem` as `ca.crt`.
    pub fn root_ca(config_maps: Served, ca_pem: String) -> NamespaceObject {
        NamespaceObject {
            served: config_maps,
            name: ROOT_CA_CONFIG_MAP,
            desired: Arc::new(move |namespace| {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
                        "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
                    "data": {"ca.crt": ca_pem}})
            }),
            enforced: true,
        }
    }

    /// Creates the object in `namespace` if it is missing, or brings its data back.
    async fn ensure(&self, namespace: &str) -> Result<(), ApiError> {
        let registry = &self.served.registry;
        let definition = &self.served.definition;
        let desired = (self.desired)(namespace);
        match self.served.cached(namespace, self.name) {
            None => match registry
                .create(
                    definition,
                    namespace,
                    desired,
                    Write::own(kapi_server::registry::KUBE_CONTROLLER_MANAGER),
                )
                .await
            {
                Err(err) if !err.is_already_exists() => Err(err),
                _ => Ok(()),
            },
            Some(current) if self.enforced && current["data"] != desired["data"] => {
                let write = Write::own(kapi_server::registry::KUBE_CONTROLLER_MANAGER);
                let updated = registry
                    .update(definition, namespace, self.name, write, |current| {
                        let mut object = current.cloned().unwrap_or_else(|| desired.clone());
                        object["data"] = desired["data"].clone();
                        Ok(object)
                    })
                    .await;
                updated.map(drop)
            }
            Some(_) => Ok(()),
        }
    }
}

/// Starts keeping `objects` in every active namespace, until `stopping`.
pub fn start_namespace_objects(
    namespaces: Served,
    objects: Vec<NamespaceObject>,
    stopping: CancellationToken,
) {
    for object in objects {
        tokio::spawn(keep(namespaces.clone(), Arc::new(object), stopping.clone()));
    }
}

/// Ensures `object` in every active namespace now, then in each namespace that appears,
/// again wherever the object is deleted or changed, and everywhere every [`RESYNC`] (which
/// also covers changes missed while a follower fell behind).
async fn keep(namespaces: Served, object: Arc<NamespaceObject>, stopping: CancellationToken) {
    let (dirty, mut to_ensure) = mpsc::unbounded_channel::<String>();
    tokio::spawn(follow(
        namespaces.clone(),
        None,
        dirty.clone(),
        stopping.clone(),
    ));
    tokio::spawn(follow(
        object.served.clone(),
        Some(object.name),
        dirty,
        stopping.clone(),
    ));
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    loop {
        let batch = tokio::select! {
            _ = stopping.cancelled() => return,
            _ = resync.tick() => all_namespaces(&namespaces),
            namespace = to_ensure.recv() => match namespace {
                Some(namespace) => vec![namespace],
                None => return,
            },
        };
        for namespace in batch {
            if !is_active(&namespaces, &namespace) {
                continue;
            }
            if let Err(err) = object.ensure(&namespace).await {
                tracing::warn!(%namespace, object = object.name, "keeping a namespace's object: {err}");
            }
        }
    }
}

/// The names of the namespaces in the cache.
fn all_namespaces(namespaces: &Served) -> Vec<String> {
    let registry = &namespaces.registry;
    let snapshot = registry
        .cacher()
        .list(&registry.collection_prefix(None), |_| true);
    snapshot
        .objects
        .iter()
        .map(|o| o.name().to_string())
        .collect()
}

/// Whether `namespace` exists and is not being deleted.
fn is_active(namespaces: &Served, namespace: &str) -> bool {
    let Some(object) = namespaces.cached("", namespace) else {
        return false;
    };
    object["status"]["phase"] != PHASE_TERMINATING
        && object["metadata"]["deletionTimestamp"].is_null()
}

/// Sends the namespaces to look at from one collection: every namespace (at start and after
/// falling behind, and each added or changed one) when `name` is `None`; else the namespace
/// of each change to an object called `name`.
async fn follow(
    served: Served,
    name: Option<&'static str>,
    dirty: mpsc::UnboundedSender<String>,
    stopping: CancellationToken,
) {
    let namespaces = served.clone();
    informer::follow(served, stopping, |change| {
        let batch = match (change, name) {
            (Change::Resync, None) => all_namespaces(&namespaces),
            (Change::Event(event), None) if event.type_ != EventType::Deleted => {
                vec![event.object.name().to_string()]
            }
            (Change::Event(event), Some(name)) if event.object.name() == name => {
                vec![event.object.namespace().to_string()]
            }
            _ => Vec::new(),
        };
        batch
            .into_iter()
            .all(|namespace| dirty.send(namespace).is_ok())
    })
    .await;
}
