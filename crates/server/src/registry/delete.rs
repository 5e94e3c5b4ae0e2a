//! The delete path of the generic registry: DELETE with its uid and resourceVersion
//! preconditions, graceful deletion (an object with finalizers, or an `Orphan`/`Foreground`
//! propagation policy, is marked deleted and kept), and the update that removes the last
//! finalizer of an object being deleted. Separate from create, update and reads: deletion has
//! its own options, outcomes and rules (upstream's rest.BeforeDelete and markAsDeleting).

use kapi_apimachinery::meta;
use kapi_apimachinery::schema::GroupResource;
use kapi_apimachinery::status::ApiError;
use kapi_storage::{Revision, StorageError};
use serde_json::Value;

use super::{Item, Registry, storage_error};
use crate::admission::{Operation, WriteAdmission};
use crate::codec;
use crate::object;
use crate::resource::{GarbageCollectionPolicy, ResourceDefinition};

/// How a DELETE ended.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// The object is gone; this was its last state.
    Deleted(Value),
    /// The object stays until its finalizers are removed; this is its state now.
    Pending(Value),
}

/// The options of a DELETE.
#[derive(Clone, Debug, Default)]
pub struct DeleteParams {
    /// The DeleteOptions as the request gave them (body, then query), for admission.
    pub options: Value,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// Orphan, Background or Foreground.
    pub propagation_policy: Option<String>,
    /// `gracePeriodSeconds`, for resources deleted gracefully (pods); negative means 1.
    pub grace_period_seconds: Option<i64>,
    pub dry_run: bool,
}

impl Registry {
    /// DELETE: removes the object, or marks it deleted and keeps it while finalizers remain.
    /// `admission` (the request's) validates the deletion of the stored object.
    pub async fn delete(
        &self,
        definition: &ResourceDefinition,
        namespace: &str,
        name: &str,
        params: &DeleteParams,
        admission: Option<&dyn WriteAdmission>,
    ) -> Result<DeleteOutcome, ApiError> {
        let resource = definition.group_resource();
        let key = self.key(namespace, name);
        loop {
            let current = self
                .store
                .get(&key, None)
                .await
                .map_err(|err| storage_error(err, &resource, name))?
                .kv
                .ok_or_else(|| ApiError::not_found(&resource, name))?;
            let object = Item::from(current.clone()).decode()?;
            check_delete_preconditions(definition, params, &object, name)?;
            if let Some(admission) = admission {
                admission.mutate_delete(&object).await?;
                admission
                    .validate(Operation::Delete, None, Some(&object))
                    .await?;
            }
            let (pending, then_delete) = match plan_deletion(definition, &object, params) {
                Plan::AlreadyPending => return Ok(DeleteOutcome::Pending(object)),
                Plan::Now => {
                    if !params.dry_run {
                        match self.delete_now(&key, current.mod_revision, false).await {
                            Err(StorageError::Conflict { .. }) => continue,
                            Err(err) => return Err(storage_error(err, &resource, name)),
                            Ok(_) => {}
                        }
                        self.after_delete(&object).await;
                    }
                    return Ok(DeleteOutcome::Deleted(object));
                }
                Plan::Update {
                    pending,
                    then_delete,
                } => (pending, then_delete),
            };
            if params.dry_run || (pending == object && !then_delete) {
                return Ok(match then_delete {
                    true => DeleteOutcome::Deleted(pending),
                    false => DeleteOutcome::Pending(pending),
                });
            }
            let encoded = codec::encode(&pending);
            let revision = match (self.store)
                .update_expiring(&key, encoded, current.mod_revision, self.storage.ttl)
                .await
            {
                Ok(revision) => revision,
                Err(StorageError::Conflict { .. }) => continue,
                Err(err) => return Err(storage_error(err, &resource, name)),
            };
            let mut pending = pending;
            codec::set_resource_version(&mut pending, revision);
            if !then_delete {
                return Ok(DeleteOutcome::Pending(pending));
            }
            // A graceless deletion of a resource deleted gracefully: marked, then gone (the
            // object may already be gone, deleted by whoever raced this request).
            match self.delete_now(&key, revision, false).await {
                Ok(()) | Err(StorageError::KeyNotFound { .. }) => {}
                Err(StorageError::Conflict { .. }) => continue,
                Err(err) => return Err(storage_error(err, &resource, name)),
            }
            self.after_delete(&pending).await;
            return Ok(DeleteOutcome::Deleted(pending));
        }
    }

    /// Runs the collection's steps after a deletion (releasing what the object held).
    async fn after_delete(&self, object: &Value) {
        if let Some(hooks) = self.write_steps.get() {
            hooks.after_delete(object).await;
        }
    }

    pub(super) async fn delete_now(
        &self,
        key: &str,
        revision: Revision,
        dry_run: bool,
    ) -> Result<(), StorageError> {
        if dry_run {
            return Ok(());
        }
        self.store.delete(key, Some(revision)).await.map(drop)
    }
}

/// Checks the uid and resourceVersion preconditions of a delete, worded as upstream's
/// rest.BeforeDelete (the conflict names the kind), or as its storage's precondition check
/// for resources whose strategy keeps that wording (namespaces).
fn check_delete_preconditions(
    definition: &ResourceDefinition,
    params: &DeleteParams,
    object: &Value,
    name: &str,
) -> Result<(), ApiError> {
    let storage_wording = definition.strategy.storage_precondition_messages();
    let failed = |what: &str, wanted: &str, actual: &str, consequence: &str| {
        if storage_wording {
            return ApiError::conflict(
                &definition.group_resource(),
                name,
                format!(
                    "Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {actual}"
                ),
            );
        }
        let kind = GroupResource::new(definition.group_version.group.clone(), &*definition.kind);
        ApiError::conflict(
            &kind,
            name,
            format!(
                "the {what} in the precondition ({wanted}) does not match the {what} in record ({actual}). The object might have been {consequence}"
            ),
        )
    };
    if let Some(uid) = &params.precondition_uid
        && uid != object::uid(object)
    {
        return Err(failed(
            "UID",
            uid,
            object::uid(object),
            "deleted and then recreated",
        ));
    }
    if let Some(rv) = &params.precondition_resource_version
        && rv != object::resource_version(object)
    {
        let actual = object::resource_version(object);
        return Err(failed("ResourceVersion", rv, actual, "modified"));
    }
    Ok(())
}

/// What a DELETE does to an object (upstream's rest.BeforeDelete with the store's
/// updateForGracefulDeletionAndFinalizers).
enum Plan {
    /// Delete it now.
    Now,
    /// Write `pending` (marked deleted, with the propagation finalizers), then delete it when
    /// `then_delete` (a graceless deletion of a gracefully deleted resource) or keep it.
    Update { pending: Value, then_delete: bool },
    /// Its graceful deletion is under way and the request does not shorten it: nothing
    /// changes.
    AlreadyPending,
}

fn plan_deletion(definition: &ResourceDefinition, object: &Value, params: &DeleteParams) -> Plan {
    let strategy = &definition.strategy;
    let requested = params
        .grace_period_seconds
        .map(|period| if period < 0 { 1 } else { period });
    let mut pending = object.clone();
    let graceful = match strategy.graceful_deletion(object, requested) {
        None => None,
        Some(_) if object::is_deleting(object) => {
            let meta = &object["metadata"];
            // A negative grace period counts as 1 s; none or 0 means the deletion only waits
            // for finalizers.
            let current = match meta["deletionGracePeriodSeconds"].as_i64() {
                None | Some(0) => None,
                Some(seconds) => Some(seconds.max(1)),
            };
            match (current, requested) {
                (None, _) => None,
                (Some(current), Some(period)) if period < current => {
                    // Only a shorter grace period may be asked for: the deadline moves closer.
                    let since = meta["deletionTimestamp"]
                        .as_str()
                        .and_then(kapi_apimachinery::gotime::parse_rfc3339)
                        .map_or(0, |t| t.seconds);
                    let deadline = since - current + period;
                    set_deletion(&mut pending, deadline, period);
                    Some(period)
                }
                _ => return Plan::AlreadyPending,
            }
        }
        Some(period) => {
            let now = kapi_apimachinery::gotime::Timestamp::now().seconds;
            set_deletion(&mut pending, now + period, period);
            bump_generation(&mut pending);
            Some(period)
        }
    };
    set_propagation_finalizers(definition, &mut pending, params);
    let finalizers = object::has_finalizers(&pending) || strategy.has_pending_finalizers(&pending);
    match graceful {
        None if !finalizers => return Plan::Now,
        None if !object::is_deleting(&pending) => {
            // Marking an object deleted is a change its controllers see: a generation the
            // object keeps grows (upstream's markAsDeleting).
            bump_generation(&mut pending);
            object::set_meta(
                &mut pending,
                "deletionTimestamp",
                Value::String(meta::now_rfc3339()),
            );
            object::set_meta(&mut pending, "deletionGracePeriodSeconds", Value::from(0));
        }
        _ => {}
    }
    strategy.prepare_for_pending_deletion(&mut pending);
    Plan::Update {
        pending,
        then_delete: !finalizers && graceful == Some(0),
    }
}

/// Marks `object` deleted at `deadline` (seconds since the epoch) after `period` seconds.
fn set_deletion(object: &mut Value, deadline: i64, period: i64) {
    let timestamp = kapi_apimachinery::gotime::format_rfc3339(deadline);
    object::set_meta(object, "deletionTimestamp", Value::String(timestamp));
    object::set_meta(object, "deletionGracePeriodSeconds", Value::from(period));
}

/// Bumps a generation the object keeps.
fn bump_generation(object: &mut Value) {
    if let Some(generation) = object["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
        object::set_meta(object, "generation", Value::from(generation + 1));
    }
}

/// The garbage collector's finalizer.
const ORPHAN: &str = "orphan";
/// The garbage collector's finalizer.
const FOREGROUND: &str = "foregroundDeletion";

/// Sets the garbage collector's finalizers of an object being deleted as upstream's
/// deletionFinalizersForGarbageCollection does: `orphan` when its dependents are to be
/// orphaned, `foregroundDeletion` when they are to be deleted first. The request's policy
/// decides; without one, a finalizer already there; without that, the resource's default
/// (orphan for Jobs and ReplicationControllers). A Background deletion removes both, as
/// does any deletion of a resource outside garbage collection (Events).
fn set_propagation_finalizers(
    definition: &ResourceDefinition,
    object: &mut Value,
    params: &DeleteParams,
) {
    let has = |finalizer: &str| {
        object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|list| list.iter().any(|f| f == finalizer))
    };
    let policy = definition.strategy.garbage_collection_policy();
    let (orphan, foreground) = match params.propagation_policy.as_deref() {
        _ if policy == GarbageCollectionPolicy::Unsupported => (false, false),
        Some("Orphan") => (true, false),
        Some("Foreground") => (false, true),
        Some(_) => (false, false),
        None if has(ORPHAN) => (true, false),
        None if has(FOREGROUND) => (false, true),
        None => (policy == GarbageCollectionPolicy::OrphanDependents, false),
    };
    if orphan == has(ORPHAN) && foreground == has(FOREGROUND) {
        return;
    }
    if let Some(list) = object["metadata"]["finalizers"].as_array_mut() {
        list.retain(|f| f != ORPHAN && f != FOREGROUND);
    }
    if orphan {
        object::add_finalizer(object, ORPHAN);
    }
    if foreground {
        object::add_finalizer(object, FOREGROUND);
    }
}

/// Whether an update ends a pending deletion: the object is being deleted and nothing keeps
/// it any more.
/// A gracefully deleted object waiting out its grace period stays (upstream's
/// shouldDeleteDuringUpdate).
pub(super) fn should_delete_during_update(definition: &ResourceDefinition, new: &Value) -> bool {
    object::is_deleting(new)
        && !object::has_finalizers(new)
        && !definition.strategy.has_pending_finalizers(new)
        && new["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0)
            == 0
}
