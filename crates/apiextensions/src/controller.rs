//! The CRD controllers, over one in-process informer of CustomResourceDefinitions (the watch
//! cache of their collection): naming (NamesAccepted and status.acceptedNames), establishing
//! (Established), API approval (KubernetesAPIApprovalPolicyConformant), non-structural schema
//! (NonStructuralSchema), the finalizer (customresourcecleanup: instances deleted before the
//! CRD goes), and serving: an Established CRD's resources are installed into the
//! apiextensions handler (so discovery and OpenAPI follow) and removed when it goes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kapi_apimachinery::status::ApiError;
use kapi_server::cacher::{CacheEvent, CacheNotification, CachedObject, EventType};
use kapi_server::endpoints::{ApiHandler, Served};
use kapi_server::registry::{DeleteParams, Item, KUBE_APISERVER, ListParams, Write};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::conversion::ServiceResolver;
use crate::crd::CLEANUP_FINALIZER;
use crate::crd::access::storage_version;
use crate::crd::access::{is_condition_true, remove_condition, set_condition};
use crate::customresource::{self, CustomResources};
use crate::schemas::CrdSchemas;
use crate::status::{self, condition};

/// How often the finalizer checks that the instances of a deleted CRD are gone.
const CLEANUP_RETRY: Duration = Duration::from_millis(200);
/// How long the finalizer waits for the instances to go before it says it could not
/// confirm it (upstream's minute).
const CLEANUP_WAIT: Duration = Duration::from_secs(60);
/// How soon a clean-up that did not finish is tried again.
const CLEANUP_REQUEUE: Duration = Duration::from_secs(5);

/// The CRD controllers of one apiextensions server.
pub(crate) struct Controllers {
    pub crds: Served,
    pub handler: ApiHandler,
    pub finalizer: Finalizer,
    pub schemas: Arc<CrdSchemas>,
    pub resolver: Arc<dyn ServiceResolver>,
    pub synced: tokio::sync::watch::Sender<bool>,
}

/// What is installed for one CRD, to reinstall only when it changes: its identity, spec and
/// accepted names (upstream's CRD handler rebuilds a CRD's storage on exactly these; not on
/// a generation bumped by the deletion).
#[derive(PartialEq)]
struct InstalledState {
    uid: String,
    spec: Value,
    accepted_names: Value,
}

impl Controllers {
    /// Runs until `stopping`: lists the CRDs (a consistent read of storage), reconciles
    /// each, marks the informer synced, then reconciles every change the watch cache sees
    /// (subscribed before the list, so nothing between is missed; re-listing if the watch
    /// falls behind).
    pub async fn run(self: Arc<Self>, stopping: CancellationToken) {
        let mut installed: HashMap<String, InstalledState> = HashMap::new();
        let cacher = self.crds.registry.cacher().clone();
        let prefix = self.crds.registry.collection_prefix(None);
        let resource = self.crds.definition.group_resource();
        while !stopping.is_cancelled() {
            let subscription = cacher.subscribe(None, &prefix);
            let listed = self
                .crds
                .registry
                .list(&resource, &ListParams::default())
                .await;
            let (Ok(mut subscription), Ok(listed)) = (subscription, listed) else {
                tokio::select! {
                    _ = stopping.cancelled() => return,
                    _ = tokio::time::sleep(CLEANUP_RETRY) => continue,
                }
            };
            let crds: Vec<Value> = listed
                .items
                .iter()
                .filter_map(|i| i.decode().ok())
                .collect();
            for crd in &crds {
                self.reconcile(crd, &mut installed).await;
            }
            self.forget_missing(&crds, &mut installed);
            self.synced.send_replace(true);
            loop {
                let notification = tokio::select! {
                    _ = stopping.cancelled() => return,
                    notification = subscription.receiver.recv() => notification,
                };
                match notification {
                    Ok(CacheNotification::Events(events)) => {
                        for event in events.iter() {
                            self.handle(event, &mut installed).await;
                        }
                    }
                    Ok(CacheNotification::Progress(_)) => {}
                    Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => break,
                }
            }
        }
    }

    async fn handle(&self, event: &CacheEvent, installed: &mut HashMap<String, InstalledState>) {
        match event.type_ {
            EventType::Deleted => {
                let name = event.object.name().to_string();
                self.uninstall(&name, installed);
                // The names it held may free a conflicting CRD of its group.
                self.requeue_group(&event.object, installed).await;
            }
            _ => {
                // Events may be older than the cache: work on the CRD as it is now.
                let (current, _) = self.crds.registry.cacher().get(&event.object.key);
                let object = current.unwrap_or_else(|| event.object.clone());
                if let Ok(crd) = Item::from(&*object).decode() {
                    self.reconcile(&crd, installed).await;
                }
            }
        }
    }

    /// Re-reconciles the other CRDs of a deleted CRD's group.
    async fn requeue_group(
        &self,
        deleted: &CachedObject,
        installed: &mut HashMap<String, InstalledState>,
    ) {
        let Ok(crd) = Item::from(deleted).decode() else {
            return;
        };
        let group = crd["spec"]["group"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for other in self.crds_of_group(&group) {
            self.reconcile(&other, installed).await;
        }
    }

    fn forget_missing(&self, present: &[Value], installed: &mut HashMap<String, InstalledState>) {
        let names: Vec<String> = installed.keys().cloned().collect();
        for name in names {
            if !present
                .iter()
                .any(|crd| crd["metadata"]["name"] == name.as_str())
            {
                self.uninstall(&name, installed);
            }
        }
    }

    fn uninstall(&self, name: &str, installed: &mut HashMap<String, InstalledState>) {
        if installed.remove(name).is_some() {
            self.handler.uninstall(name);
            self.schemas.remove(name);
        }
    }

    /// Brings one CRD's status and its served resources up to date.
    async fn reconcile(&self, crd: &Value, installed: &mut HashMap<String, InstalledState>) {
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let status = self.desired_status(crd);
        if status != crd["status"] {
            if let Err(err) = write_status(&self.crds, &name, status).await {
                tracing::warn!(crd = %name, "updating the CRD's status failed: {err}");
            }
            // The write comes back as an event; it is reconciled then.
            return;
        }
        if is_condition_true(crd, "Established") {
            self.serve(crd, &name, installed);
        }
        if kapi_server::object::is_deleting(crd)
            && crd["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == CLEANUP_FINALIZER))
        {
            self.finalizer.start(&name);
        }
    }

    /// Installs the CRD's resources if what is installed is not for its current spec and
    /// names.
    fn serve(&self, crd: &Value, name: &str, installed: &mut HashMap<String, InstalledState>) {
        let state = InstalledState {
            uid: crd["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            spec: crd["spec"].clone(),
            accepted_names: crd["status"]["acceptedNames"].clone(),
        };
        if installed.get(name) == Some(&state) {
            return;
        }
        match customresource::build(crd, self.resolver.clone()) {
            Ok(CustomResources {
                definitions,
                openapi,
                schemas,
            }) => {
                self.schemas.insert(name, crd, schemas);
                self.handler.install(name, definitions, openapi);
                installed.insert(name.to_string(), state);
            }
            Err(reason) => tracing::warn!(crd = %name, "not serving the CRD: {reason}"),
        }
    }

    /// The status the controllers want for `crd`: names, conditions.
    fn desired_status(&self, crd: &Value) -> Value {
        let mut next = crd.clone();
        if !next["status"].is_object() {
            next["status"] = json!({});
        }
        let others = self.accepted_names_of_group(crd);
        let (names, accepted) = status::accept_names(crd, &others);
        next["status"]["acceptedNames"] = names;
        let established = status::established(crd, &accepted);
        set_condition(&mut next, &accepted);
        set_condition(&mut next, &established);
        match status::approval_condition(crd) {
            Some(approval) => set_condition(&mut next, &approval),
            None => remove_condition(&mut next, "KubernetesAPIApprovalPolicyConformant"),
        }
        match status::non_structural_condition(crd) {
            Some(violations) => set_condition(&mut next, &violations),
            None => remove_condition(&mut next, "NonStructuralSchema"),
        }
        if next["status"].get("storedVersions").is_none()
            && let Some(version) = storage_version(crd)
        {
            next["status"]["storedVersions"] = json!([version]);
        }
        next["status"].take()
    }

    /// The accepted names of the other CRDs of `crd`'s group.
    fn accepted_names_of_group(&self, crd: &Value) -> Vec<Value> {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let name = &crd["metadata"]["name"];
        self.crds_of_group(group)
            .into_iter()
            .filter(|other| other["metadata"]["name"] != *name)
            .map(|other| other["status"]["acceptedNames"].clone())
            .collect()
    }

    /// The CRDs of `group`, from the cache. A CRD's name is `<plural>.<group>`, so only the
    /// names ending in `.<group>` are decoded: with many CRDs, decoding them all on every
    /// reconcile made installing N CRDs quadratic.
    fn crds_of_group(&self, group: &str) -> Vec<Value> {
        let prefix = self.crds.registry.collection_prefix(None);
        let suffix = format!(".{group}");
        let snapshot = self
            .crds
            .registry
            .cacher()
            .list(&prefix, |object| object.name().ends_with(&suffix));
        snapshot
            .objects
            .iter()
            .filter_map(|object| Item::from(&**object).decode().ok())
            .filter(|other| other["spec"]["group"] == group)
            .collect()
    }
}

/// The finalizer of deleted CRDs (customresourcecleanup), run apart from the other
/// controllers (a CRD whose instances do not go must not hold them up), one task per CRD.
#[derive(Clone)]
pub(crate) struct Finalizer {
    pub crds: Served,
    pub handler: ApiHandler,
    /// The CRDs being cleaned up now.
    pub running: Arc<Mutex<HashSet<String>>>,
}

impl Finalizer {
    /// Starts cleaning up the deleted CRD `name`, unless that is under way.
    fn start(&self, name: &str) {
        if !self.running.lock().insert(name.to_string()) {
            return;
        }
        let (finalizer, name) = (self.clone(), name.to_string());
        tokio::spawn(async move {
            finalizer.run(&name).await;
            finalizer.running.lock().remove(&name);
        });
    }

    /// Cleans up the CRD `name` until its finalizer is released, or it is gone or no longer
    /// being deleted; retried after instances could not be confirmed gone.
    async fn run(&self, name: &str) {
        loop {
            let key = self.crds.registry.key("", name);
            let current = self.crds.registry.cacher().get(&key).0;
            let Some(crd) = current.and_then(|object| Item::from(&*object).decode().ok()) else {
                return;
            };
            let finalized = crd["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == CLEANUP_FINALIZER));
            if !kapi_server::object::is_deleting(&crd) || !finalized {
                return;
            }
            if self.clean_up(&crd, name).await {
                return;
            }
            tokio::time::sleep(CLEANUP_REQUEUE).await;
        }
    }

    /// One attempt: deletes every instance of a deleted CRD, then releases the CRD. Whether
    /// it is done (false: try again).
    async fn clean_up(&self, crd: &Value, name: &str) -> bool {
        let mut next = crd.clone();
        let in_progress = condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        set_condition(&mut next, &in_progress);
        if next["status"] != crd["status"]
            && write_status(&self.crds, name, next["status"].clone())
                .await
                .is_err()
        {
            return false;
        }
        let finished = match self.instances(crd) {
            _ if !is_condition_true(crd, "Established") => condition(
                "Terminating",
                "False",
                "NeverEstablished",
                "resource was never established",
            ),
            Some(served) => match delete_all(&served).await {
                Ok(()) => condition(
                    "Terminating",
                    "False",
                    "InstanceDeletionCompleted",
                    "removed all instances",
                ),
                Err((reason, message)) => {
                    let failed = condition("Terminating", "True", reason, message);
                    set_condition(&mut next, &failed);
                    let _ = write_status(&self.crds, name, next["status"].clone()).await;
                    return false;
                }
            },
            None => condition(
                "Terminating",
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
            ),
        };
        set_condition(&mut next, &finished);
        let _ = write_status(&self.crds, name, next["status"].clone()).await;
        match self.remove_finalizer(name).await {
            Err(err) if !err.is_not_found() => {
                tracing::warn!(crd = %name, "removing the CRD's finalizer failed: {err}");
                false
            }
            _ => true,
        }
    }

    /// The served storage version of the CRD's resources, if installed.
    fn instances(&self, crd: &Value) -> Option<Served> {
        let group = crd["spec"]["group"].as_str()?;
        let plural = crd["status"]["acceptedNames"]["plural"].as_str()?;
        let version = storage_version(crd)?;
        self.handler.served(group, version, plural)
    }

    async fn remove_finalizer(&self, name: &str) -> Result<(), ApiError> {
        let definition = &self.crds.definition;
        self.crds
            .registry
            .update(definition, "", name, Write::default(), |current| {
                let current = current
                    .ok_or_else(|| ApiError::not_found(&definition.group_resource(), name))?;
                let mut next = current.clone();
                if let Some(finalizers) = next
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    finalizers.retain(|f| f != CLEANUP_FINALIZER);
                }
                Ok(next)
            })
            .await
            .map(drop)
    }
}

/// Writes a CRD's status, recorded in its managedFields as upstream's are: kube-apiserver's
/// update of the status subresource.
async fn write_status(crds: &Served, name: &str, status: Value) -> Result<(), ApiError> {
    crds.write_status("", name, status, KUBE_APISERVER).await
}

/// Deletes every object of `served` and waits until none is left (objects with finalizers
/// of their own go when those are cleared), a minute at most; the Terminating condition's
/// reason and message when it fails.
async fn delete_all(served: &Served) -> Result<(), (&'static str, String)> {
    let resource = served.definition.group_resource();
    let failed = |message: String| ("InstanceDeletionFailed", message);
    let deadline = tokio::time::Instant::now() + CLEANUP_WAIT;
    loop {
        let listed = served
            .registry
            .list(&resource, &ListParams::default())
            .await
            .map_err(|err| failed(format!("could not list instances: {err}")))?;
        if listed.items.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err((
                "InstanceDeletionCheck",
                "could not confirm zero CustomResources remaining: timed out waiting for the condition".into(),
            ));
        }
        for item in &listed.items {
            let object = item.decode().map_err(|err| failed(err.to_string()))?;
            let namespace = kapi_server::object::namespace(&object);
            let name = kapi_server::object::name(&object);
            if kapi_server::object::is_deleting(&object) {
                continue;
            }
            let deleted = served
                .registry
                .delete(
                    &served.definition,
                    namespace,
                    name,
                    &DeleteParams::default(),
                    None,
                )
                .await;
            if let Err(err) = deleted
                && err.code() != 404
            {
                return Err(failed(format!("could not issue all deletes: {err}")));
            }
        }
        tokio::time::sleep(CLEANUP_RETRY).await;
    }
}
