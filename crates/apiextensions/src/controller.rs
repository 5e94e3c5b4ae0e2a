//! The CRD controllers, over one in-process informer of CustomResourceDefinitions (the watch
//! cache of their collection): naming (NamesAccepted and status.acceptedNames), establishing
//! (Established), API approval (KubernetesAPIApprovalPolicyConformant), non-structural schema
//! (NonStructuralSchema), the finalizer (customresourcecleanup: instances deleted before the
//! CRD goes), and serving: an Established CRD's resources are installed into the
//! apiextensions handler (so discovery and OpenAPI follow) and removed when it goes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kapi_apimachinery::status::ApiError;
use kapi_server::cacher::{CacheEvent, CacheNotification, CachedObject, EventType};
use kapi_server::endpoints::{ApiHandler, Served};
use kapi_server::registry::{DeleteParams, Item, ListParams, Write};
use kapi_server::resource::SubresourceKind;
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

/// The CRD controllers of one apiextensions server.
pub(crate) struct Controllers {
    pub crds: Served,
    pub handler: ApiHandler,
    pub schemas: Arc<CrdSchemas>,
    pub resolver: Arc<dyn ServiceResolver>,
    pub synced: tokio::sync::watch::Sender<bool>,
}

/// What is installed for one CRD, to reinstall only when it changes.
#[derive(PartialEq)]
struct InstalledState {
    uid: String,
    generation: i64,
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
                let name = event.object.name.to_string();
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
            if let Err(err) = self.write_status(&name, status).await {
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
            self.clean_up(crd, &name).await;
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
            generation: crd["metadata"]["generation"].as_i64().unwrap_or(0),
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
            .list(&prefix, |object| object.name.ends_with(&suffix));
        snapshot
            .objects
            .iter()
            .filter_map(|object| Item::from(&**object).decode().ok())
            .filter(|other| other["spec"]["group"] == group)
            .collect()
    }

    async fn write_status(&self, name: &str, status: Value) -> Result<(), ApiError> {
        let definition = &self.crds.definition;
        let write = Write {
            subresource: Some(&SubresourceKind::Status),
            dry_run: false,
            admission: None,
        };
        self.crds
            .registry
            .update(definition, "", name, write, |current| {
                let current = current
                    .ok_or_else(|| ApiError::not_found(&definition.group_resource(), name))?;
                let mut next = current.clone();
                next["status"] = status.clone();
                Ok(next)
            })
            .await
            .map(drop)
    }

    /// The finalizer: deletes every instance of a deleted CRD, then releases the CRD.
    async fn clean_up(&self, crd: &Value, name: &str) {
        let mut next = crd.clone();
        let in_progress = condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        set_condition(&mut next, &in_progress);
        if next["status"] != crd["status"]
            && self
                .write_status(name, next["status"].clone())
                .await
                .is_err()
        {
            return;
        }
        let outcome = match self.instances(crd) {
            Some(served) => delete_all(&served).await,
            None => Ok(()),
        };
        if let Err(message) = outcome {
            let failed = condition("Terminating", "True", "InstanceDeletionFailed", message);
            set_condition(&mut next, &failed);
            let _ = self.write_status(name, next["status"].clone()).await;
            return;
        }
        let completed = condition(
            "Terminating",
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
        );
        set_condition(&mut next, &completed);
        let _ = self.write_status(name, next["status"].clone()).await;
        if let Err(err) = self.remove_finalizer(name).await
            && !err.is_not_found()
        {
            tracing::warn!(crd = %name, "removing the CRD's finalizer failed: {err}");
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

/// Deletes every object of `served` and waits until none is left (objects with finalizers
/// of their own go when those are cleared).
async fn delete_all(served: &Served) -> Result<(), String> {
    let resource = served.definition.group_resource();
    loop {
        let listed = served
            .registry
            .list(&resource, &ListParams::default())
            .await
            .map_err(|err| format!("could not list instances: {err}"))?;
        if listed.items.is_empty() {
            return Ok(());
        }
        for item in &listed.items {
            let object = item.decode().map_err(|err| err.to_string())?;
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
                return Err(format!("could not issue all deletes: {err}"));
            }
        }
        tokio::time::sleep(CLEANUP_RETRY).await;
    }
}
