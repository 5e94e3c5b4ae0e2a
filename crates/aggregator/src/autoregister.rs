//! The autoregister controller (kube-aggregator/pkg/controllers/autoregister), fed as
//! kube-apiserver feeds it (pkg/controlplane/apiserver/aggregator.go and
//! controller/crdregistration): the local APIServices of the chain's built-in group versions
//! are brought to what the aggregator wants once, when it starts; those of the CRDs' served
//! versions for as long as it runs. APIServices without the automanaged label are never
//! touched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kapi_apimachinery::status::ApiError;
use kapi_server::endpoints::Served;
use kapi_server::informer;
use kapi_server::registry::{DeleteParams, KUBE_APISERVER, ListParams, Write};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::local::{LocalApiService, Managed, Wanted, of_crds};

/// How often everything is looked at again without a change.
const RESYNC: Duration = Duration::from_secs(60);
/// How soon a failed pass is tried again.
const RETRY: Duration = Duration::from_millis(500);
/// What a pass reads of a CRD: its group and versions.
const CRD_PARTS: &[&str] = &["spec"];
/// What a pass reads of an APIService: its spec, and its name, uid and labels (whether it
/// is managed), for the comparison, the delete's precondition and the update.
const API_SERVICE_PARTS: &[&str] = &["spec"];
const API_SERVICE_METADATA: &[&str] = &["name", "uid", "labels"];

/// Which of upstream's sync passes a check belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The first one: every managed APIService is brought to what is wanted.
    Start,
    /// Later ones: only those kept always ([`Managed::Continuously`]).
    Running,
}

/// The controller: the APIServices it writes, the CRDs it follows and the built-in
/// APIServices it keeps on start.
pub(crate) struct AutoRegister {
    pub api_services: Served,
    pub crds: Served,
    pub built_in: Wanted,
}

impl AutoRegister {
    /// Runs the start pass until it succeeds, then keeps the CRDs' APIServices whenever a
    /// CRD or an APIService changes, and every [`RESYNC`], until `stopping`.
    pub(crate) fn start(self, stopping: CancellationToken) {
        // Changes wake the controller; several before it looks make one pass.
        let changed = Arc::new(Notify::new());
        let followed = [self.crds.clone(), self.api_services.clone()];
        informer::notify_on_changes(followed, &changed, &stopping);
        tokio::spawn(async move {
            while let Err(err) = self.start_pass().await {
                tracing::debug!("registering the local APIServices: {err}");
                tokio::select! {
                    _ = stopping.cancelled() => return,
                    _ = tokio::time::sleep(RETRY) => {}
                }
            }
            let mut failed = false;
            loop {
                let wait = if failed { RETRY } else { RESYNC };
                tokio::select! {
                    _ = stopping.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                    _ = changed.notified() => {}
                }
                failed = false;
                if let Err(err) = self.running_pass().await {
                    tracing::debug!("keeping the CRDs' APIServices: {err}");
                    failed = true;
                }
            }
        });
    }

    /// Everything wanted is created or brought to its spec, and every managed APIService no
    /// longer wanted (a group version no longer served) is deleted. Reads storage, so that
    /// a cache still filling up cannot make a CRD's APIService look unwanted.
    async fn start_pass(&self) -> Result<(), ApiError> {
        let mut wanted = self.built_in.clone();
        wanted.extend(of_crds(&list(&self.crds, CRD_PARTS, &[]).await?));
        let existing = list(&self.api_services, API_SERVICE_PARTS, API_SERVICE_METADATA).await?;
        self.check_all(&wanted, &existing, Pass::Start).await
    }

    /// The CRDs' APIServices, from the watch caches.
    async fn running_pass(&self) -> Result<(), ApiError> {
        let wanted = of_crds(&self.crds.cached_list_parts(CRD_PARTS, &[]));
        let existing = self
            .api_services
            .cached_list_parts(API_SERVICE_PARTS, API_SERVICE_METADATA);
        self.check_all(&wanted, &existing, Pass::Running).await
    }

    /// Checks every APIService that is wanted or exists, all at once (the writes share the
    /// store's commits); the first error, after trying all.
    async fn check_all(
        &self,
        wanted: &Wanted,
        existing: &[Value],
        pass: Pass,
    ) -> Result<(), ApiError> {
        let existing: BTreeMap<&str, &Value> = existing
            .iter()
            .map(|service| (kapi_server::object::name(service), service))
            .collect();
        let names: BTreeSet<&str> = wanted
            .keys()
            .map(String::as_str)
            .chain(existing.keys().copied())
            .collect();
        let checks = names.into_iter().map(|name| {
            let current = existing.get(name).copied();
            self.check(current, wanted.get(name), pass)
        });
        let results = futures::future::join_all(checks).await;
        results.into_iter().collect()
    }

    /// Upstream's checkAPIService for one name: create what is wanted and missing, delete
    /// a managed APIService no longer wanted, bring a managed one's spec back; APIServices
    /// kept on start only in the start pass.
    async fn check(
        &self,
        current: Option<&Value>,
        wanted: Option<&LocalApiService>,
        pass: Pass,
    ) -> Result<(), ApiError> {
        let in_pass = |managed: Managed| pass == Pass::Start || managed == Managed::Continuously;
        match (current, wanted) {
            (None, Some(wanted)) if in_pass(wanted.managed) => self.create(wanted).await,
            (Some(current), wanted) => match (Managed::of(current), wanted) {
                (Some(managed), None) if in_pass(managed) => self.delete(current).await,
                (Some(_), Some(wanted)) if in_pass(wanted.managed) => {
                    self.update_spec(current, wanted).await
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    async fn create(&self, wanted: &LocalApiService) -> Result<(), ApiError> {
        let served = &self.api_services;
        let created = served
            .registry
            .create(
                &served.definition,
                "",
                wanted.object(),
                Write::own(KUBE_APISERVER),
            )
            .await;
        match created {
            // Created in the meantime: the next pass sees it.
            Err(err) if err.is_already_exists() => Ok(()),
            created => created.map(drop),
        }
    }

    /// Deletes `current` if it is still the same object.
    async fn delete(&self, current: &Value) -> Result<(), ApiError> {
        let served = &self.api_services;
        let params = DeleteParams {
            precondition_uid: Some(kapi_server::object::uid(current).to_string()),
            ..DeleteParams::default()
        };
        let name = kapi_server::object::name(current);
        let deleted = served
            .registry
            .delete(&served.definition, "", name, &params, None)
            .await;
        match deleted {
            // Deleted or replaced in the meantime: the next pass sees it.
            Err(err) if err.code() == 404 || err.code() == 409 => Ok(()),
            deleted => deleted.map(drop),
        }
    }

    /// Writes the wanted spec over `current`'s when they differ.
    async fn update_spec(&self, current: &Value, wanted: &LocalApiService) -> Result<(), ApiError> {
        let spec = wanted.spec();
        if current["spec"] == spec {
            return Ok(());
        }
        let served = &self.api_services;
        let name = wanted.name();
        let updated = served
            .registry
            .update(
                &served.definition,
                "",
                &name,
                Write::own(KUBE_APISERVER),
                |current| {
                    let current = current.ok_or_else(|| {
                        ApiError::not_found(&served.definition.group_resource(), &name)
                    })?;
                    let mut next = current.clone();
                    next["spec"] = spec.clone();
                    Ok(next)
                },
            )
            .await;
        match updated {
            Err(err) if err.code() == 404 => Ok(()),
            updated => updated.map(drop),
        }
    }
}

/// Every object of `served`, read consistently, decoded only in its top-level `fields` and
/// its `metadata` fields `metadata` (a pass reads a few fields of every object).
async fn list(served: &Served, fields: &[&str], metadata: &[&str]) -> Result<Vec<Value>, ApiError> {
    let resource = served.definition.group_resource();
    let listed = served
        .registry
        .list(&resource, &ListParams::default())
        .await?;
    listed
        .items
        .iter()
        .map(|item| item.decode_parts(fields, metadata))
        .collect()
}
