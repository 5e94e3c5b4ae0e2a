//! The collector's decisions, upstream's attemptToDeleteItem and attemptToOrphan: an object
//! whose owners are all gone is deleted (in the propagation its own finalizers ask for); one
//! with live owners loses its references to gone ones; an owner deleted in the foreground
//! loses its `foregroundDeletion` finalizer once no dependent blocks it; an owner deleted
//! with `orphan` has its references removed from its dependents, then loses the finalizer.
//! Every read and write goes through the API, with uid (and resourceVersion) preconditions,
//! so a decision made on a stale graph never touches the wrong object.

use std::sync::Arc;

use http::Method;
use kapi_apimachinery::status::ApiError;
use serde_json::{Value, json};

use super::Shared;
use super::graph::{Event, EventType, FOREGROUND, Identity, Meta, Node, ORPHAN, OwnerRef};

/// What metadata reads ask for.
const METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The tries of a write that conflicts.
const CONFLICT_RETRIES: usize = 5;
/// The content type of the collector's patches.
const MERGE_PATCH: &str = "application/merge-patch+json";

/// Why a decision ended without doing its work.
#[derive(Debug)]
pub(super) enum Failure {
    /// The object is gone; a virtual delete event was processed instead.
    Gone,
    /// A cluster-scoped object names a namespaced owner: nothing to retry.
    NamespacedOwnerOfClusterScoped,
    /// Retry later.
    Error(String),
}

impl From<ApiError> for Failure {
    fn from(err: ApiError) -> Failure {
        Failure::Error(err.to_string())
    }
}

impl Shared {
    /// Decides on the node `uid` (upstream's attemptToDeleteItem).
    pub(super) async fn attempt_to_delete(&self, node: &Node) -> Result<(), Failure> {
        if node.being_deleted && !node.deleting_dependents {
            return Ok(());
        }
        let latest = match self.get(&node.identity).await {
            Ok(latest) if latest.uid == node.identity.uid => latest,
            Ok(_) => return Err(self.virtual_delete(&node.identity)),
            Err(err) if err.is_not_found() => return Err(self.virtual_delete(&node.identity)),
            Err(err) => return Err(err.into()),
        };
        if node.deleting_dependents {
            return self.process_deleting_dependents(node).await;
        }
        if latest.owners.is_empty() {
            return Ok(());
        }
        let (solid, dangling, waiting) = self.classify(node, &latest).await?;
        if !solid.is_empty() {
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            let gone: Vec<&str> = dangling.iter().chain(&waiting).map(|r| &*r.uid).collect();
            tracing::debug!(item = %node.identity, ?gone, "removing dangling and waiting owner references");
            return match self.remove_owner_references(&node.identity, &gone).await {
                Err(err) if err.is_not_found() => Err(self.virtual_delete(&node.identity)),
                result => result.map_err(Failure::from),
            };
        }
        let dependents = self.dependents(node);
        if !waiting.is_empty() && !dependents.is_empty() {
            if dependents.iter().any(|d| d.deleting_dependents) {
                // A possible cycle: this object stops blocking its owners, then goes in the
                // foreground.
                self.unblock_owner_references(&node.identity).await?;
            }
            return self.delete(&latest, &node.identity, "Foreground").await;
        }
        let policy = if latest.has_finalizer(ORPHAN) {
            "Orphan"
        } else if latest.has_finalizer(FOREGROUND) {
            "Foreground"
        } else {
            "Background"
        };
        tracing::debug!(item = %node.identity, policy, "deleting an object whose owners are gone");
        self.delete(&latest, &node.identity, policy).await
    }

    /// Orphans the dependents of an owner deleted with the `orphan` finalizer, then removes
    /// the finalizer (upstream's attemptToOrphan).
    pub(super) async fn attempt_to_orphan(&self, owner: &Node) -> Result<(), Failure> {
        let mut errors = Vec::new();
        for dependent in self.dependents(owner) {
            match self
                .remove_owner_references(&dependent.identity, &[&owner.identity.uid])
                .await
            {
                Err(err) if !err.is_not_found() => errors.push(err.to_string()),
                _ => {}
            }
        }
        if !errors.is_empty() {
            return Err(Failure::Error(format!(
                "orphaning {} failed: {}",
                owner.identity,
                errors.join("; ")
            )));
        }
        self.remove_finalizer(&owner.identity, ORPHAN).await
    }

    /// An owner deleted in the foreground: its finalizer goes once no dependent blocks it;
    /// until then, the blocking dependents are deleted.
    async fn process_deleting_dependents(&self, node: &Node) -> Result<(), Failure> {
        let blocking: Vec<Node> = self
            .dependents(node)
            .into_iter()
            .filter(|d| {
                d.owners
                    .iter()
                    .any(|r| r.uid == node.identity.uid && r.blocks())
            })
            .collect();
        if blocking.is_empty() {
            return self.remove_finalizer(&node.identity, FOREGROUND).await;
        }
        for dependent in blocking {
            if !dependent.deleting_dependents {
                self.attempt_to_delete.add(&dependent.identity.uid);
            }
        }
        Ok(())
    }

    /// The owner references of `latest` (the node's object): solid (the owner exists),
    /// dangling (it does not, or is another object of that name), and waiting (it is being
    /// deleted in the foreground).
    async fn classify(
        &self,
        node: &Node,
        latest: &Meta,
    ) -> Result<(Vec<OwnerRef>, Vec<OwnerRef>, Vec<OwnerRef>), Failure> {
        let (mut solid, mut dangling, mut waiting) = (Vec::new(), Vec::new(), Vec::new());
        for reference in &latest.owners {
            match self.dangling(reference, &node.identity).await? {
                None => dangling.push(reference.clone()),
                Some(owner) if owner.being_deleted && owner.has_finalizer(FOREGROUND) => {
                    waiting.push(reference.clone());
                }
                Some(_) => solid.push(reference.clone()),
            }
        }
        Ok((solid, dangling, waiting))
    }

    /// The owner `reference` of `item` names, or `None` when it is gone (upstream's
    /// isDangling, remembering absent owners).
    async fn dangling(
        &self,
        reference: &OwnerRef,
        item: &Identity,
    ) -> Result<Option<Meta>, Failure> {
        let mut absent = Identity {
            kind: reference.kind.clone(),
            api_version: reference.api_version.clone(),
            namespace: Arc::from(""),
            name: reference.name.clone(),
            uid: reference.uid.clone(),
        };
        if self.absent.lock().has(&absent) {
            return Ok(None);
        }
        absent.namespace = item.namespace.clone();
        if self.absent.lock().has(&absent) {
            return Ok(None);
        }
        let Some(resource) = self.resource_of(&reference.api_version, &reference.kind) else {
            return Err(Failure::Error(format!(
                "unable to get REST mapping for {}/{}.",
                reference.api_version, reference.kind
            )));
        };
        if !resource.namespaced {
            absent.namespace = Arc::from("");
        } else if item.namespace.is_empty() {
            return Err(Failure::NamespacedOwnerOfClusterScoped);
        }
        match self.get(&absent).await {
            Ok(owner) if owner.uid == reference.uid => Ok(Some(owner)),
            Ok(_) => {
                self.absent.lock().add(absent);
                Ok(None)
            }
            Err(err) if err.is_not_found() => {
                self.absent.lock().add(absent);
                Ok(None)
            }
            Err(err) => Err(err.into()),
        }
    }

    /// The graph learns that `identity` is gone (a virtual delete event).
    fn virtual_delete(&self, identity: &Identity) -> Failure {
        self.process(Event {
            type_: EventType::Delete,
            virtual_: true,
            api_version: identity.api_version.clone(),
            kind: identity.kind.clone(),
            meta: Meta {
                uid: identity.uid.clone(),
                name: identity.name.clone(),
                namespace: identity.namespace.clone(),
                ..Meta::default()
            },
        });
        Failure::Gone
    }

    /// The object's metadata, read live.
    async fn get(&self, identity: &Identity) -> Result<Meta, ApiError> {
        let path = self.path(identity)?;
        let object = self
            .client
            .json(Method::GET, &path, Some(METADATA), None)
            .await?;
        Ok(Meta::of(&object))
    }

    /// Deletes the object with `policy`, on condition it is still the one with these
    /// owners: first at its resourceVersion, then (if only something else changed) at its
    /// uid alone, so that busy objects are not starved.
    async fn delete(
        &self,
        latest: &Meta,
        identity: &Identity,
        policy: &str,
    ) -> Result<(), Failure> {
        let path = self.path(identity)?;
        let options = |resource_version: Option<&str>| {
            let mut preconditions = json!({"uid": &*identity.uid});
            if let Some(version) = resource_version {
                preconditions["resourceVersion"] = version.into();
            }
            json!({"kind": "DeleteOptions", "apiVersion": "v1",
                "preconditions": preconditions, "propagationPolicy": policy})
        };
        let first = options(Some(&latest.resource_version));
        match self
            .client
            .json(Method::DELETE, &path, None, Some(&first))
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if err.is_conflict() => match self.get(identity).await {
                Err(live) if live.is_not_found() => Ok(()),
                Ok(live) if live.uid == identity.uid && live.owners == latest.owners => {
                    let second = options(None);
                    self.client
                        .json(Method::DELETE, &path, None, Some(&second))
                        .await
                        .map(drop)
                        .map_err(Failure::from)
                }
                _ => Err(err.into()),
            },
            Err(err) => Err(err.into()),
        }
    }

    /// Removes the owner references to `owner_uids` from the object (a merge patch at its
    /// resourceVersion, as upstream's deleteOwnerRefJSONMergePatch).
    async fn remove_owner_references(
        &self,
        identity: &Identity,
        owner_uids: &[&str],
    ) -> Result<(), ApiError> {
        let latest = self.get(identity).await?;
        if latest.uid != identity.uid {
            return Err(ApiError::new_generic(
                404,
                "NotFound",
                "the object was replaced",
            ));
        }
        let kept: Vec<Value> = latest
            .owners
            .iter()
            .filter(|r| !owner_uids.contains(&&*r.uid))
            .map(OwnerRef::to_json)
            .collect();
        if kept.len() == latest.owners.len() {
            return Ok(());
        }
        let patch = json!({"metadata": {"ownerReferences": list_or_null(kept),
            "resourceVersion": latest.resource_version}});
        self.patch(identity, &patch).await
    }

    /// Makes the object's owner references non-blocking.
    async fn unblock_owner_references(&self, identity: &Identity) -> Result<(), ApiError> {
        let latest = self.get(identity).await?;
        if !latest.owners.iter().any(OwnerRef::blocks) {
            return Ok(());
        }
        let references: Vec<Value> = latest
            .owners
            .iter()
            .map(|r| {
                let mut entry = r.to_json();
                if r.blocks() {
                    entry["blockOwnerDeletion"] = false.into();
                }
                entry
            })
            .collect();
        let patch = json!({"metadata": {"ownerReferences": references,
            "resourceVersion": latest.resource_version}});
        self.patch(identity, &patch).await
    }

    /// Removes `finalizer` from the object, again after each conflict; nothing to do when
    /// it is gone or replaced.
    async fn remove_finalizer(&self, identity: &Identity, finalizer: &str) -> Result<(), Failure> {
        // Conflicts are retried a few times (client-go's RetryOnConflict), then the node's
        // backoff takes over.
        for _ in 0..CONFLICT_RETRIES {
            let latest = match self.get(identity).await {
                Ok(latest) if latest.uid == identity.uid => latest,
                Ok(_) => return Ok(()),
                Err(err) if err.is_not_found() => return Ok(()),
                Err(err) => return Err(err.into()),
            };
            if !latest.has_finalizer(finalizer) {
                return Ok(());
            }
            let kept: Vec<Value> = latest
                .finalizers
                .iter()
                .filter(|f| *f != finalizer)
                .map(|f| Value::from(f.as_str()))
                .collect();
            let patch = json!({"metadata": {"finalizers": list_or_null(kept),
                "resourceVersion": latest.resource_version}});
            match self.patch(identity, &patch).await {
                Ok(()) => return Ok(()),
                Err(err) if err.is_not_found() => return Ok(()),
                Err(err) if err.is_conflict() => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(Failure::Error(format!(
            "removing {finalizer} from {identity}: conflicts"
        )))
    }

    /// Sends a JSON merge patch to the object.
    async fn patch(&self, identity: &Identity, patch: &Value) -> Result<(), ApiError> {
        let path = self.path(identity)?;
        self.client.patch(&path, MERGE_PATCH, patch).await.map(drop)
    }

    /// The object's path, from the kind's resource.
    fn path(&self, identity: &Identity) -> Result<String, ApiError> {
        let resource = self
            .resource_of(&identity.api_version, &identity.kind)
            .ok_or_else(|| {
                ApiError::internal(format!(
                    "unable to get REST mapping for {}/{}.",
                    identity.api_version, identity.kind
                ))
            })?;
        let namespace = (!identity.namespace.is_empty()).then_some(&*identity.namespace);
        Ok(format!(
            "{}/{}",
            resource.collection(namespace),
            identity.name
        ))
    }
}

/// A list for a merge patch: `null` (which removes the field) when empty, as upstream's
/// patches of a nil slice say it.
fn list_or_null(items: Vec<Value>) -> Value {
    if items.is_empty() {
        Value::Null
    } else {
        Value::Array(items)
    }
}
