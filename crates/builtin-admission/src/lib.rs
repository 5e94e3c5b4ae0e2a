//! kube-apiserver's built-in admission plugins, over the built-in resources (kapi-builtin):
//! NamespaceLifecycle (here), LimitRanger, ServiceAccount, NodeRestriction,
//! PodTopologyLabels, StorageObjectInUseProtection, PodSecurity, Priority,
//! DefaultTolerationSeconds, DefaultStorageClass and DefaultIngressClass, RuntimeClass,
//! TaintNodesByCondition, PersistentVolumeClaimResize, the certificate plugins and
//! ResourceQuota (with its controller). The generic plugins (webhooks, policies) are
//! kapi-admission's; the control plane orders both as kube-apiserver does.
//!
//! NamespaceLifecycle (k8s.io/apiserver's plugin/namespace/lifecycle): no new content in
//! namespaces that do not exist or are being deleted, and no deleting the namespaces the
//! cluster cannot live without.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kapi_apimachinery::schema::GroupResource;
use kapi_apimachinery::status::{ApiError, StatusCause, StatusDetails};
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::cacher::{CachedObject, Cacher};
use parking_lot::Mutex;
use serde_json::Value;

use kapi_apimachinery::value::str_at;
use kapi_builtin::namespace::{PHASE_ACTIVE, PHASE_TERMINATING};

/// The namespaces that may not be deleted.
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// How long a deleted namespace's cached state is distrusted.
const FORCE_LIVE_LOOKUP_TTL: Duration = Duration::from_secs(30);
/// How many recently deleted namespaces are remembered.
const FORCE_LIVE_LOOKUP_ENTRIES: usize = 100;
/// How long a lookup waits for the namespace cache to catch up with storage.
const LIVE_LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The cause type of creates refused in a terminating namespace.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// The NamespaceLifecycle admission plugin, reading namespaces from their watch cache.
pub struct NamespaceLifecycle {
    namespaces: Arc<Cacher>,
    /// Namespaces deleted recently, whose cached phase may be stale: when they were deleted.
    force_live_lookup: Mutex<HashMap<String, Instant>>,
}

/// What a namespace lookup found.
enum Lookup {
    Missing,
    Phase(String),
}

impl NamespaceLifecycle {
    /// The plugin over the namespaces' watch cache (`Registry::cacher()` of namespaces).
    pub fn new(namespaces: Arc<Cacher>) -> NamespaceLifecycle {
        NamespaceLifecycle {
            namespaces,
            force_live_lookup: Mutex::new(HashMap::new()),
        }
    }

    /// The namespace as the cache has it now.
    fn cached(&self, namespace: &str) -> Lookup {
        let key = format!("{}{namespace}", self.namespaces.prefix());
        lookup(self.namespaces.get(&key).0.as_deref())
    }

    /// The namespace as storage has it now: upstream's live lookup.
    async fn fresh(&self, namespace: &str) -> Result<Lookup, ApiError> {
        let key = format!("{}{namespace}", self.namespaces.prefix());
        let live = self.namespaces.get_live(&key).await;
        Ok(lookup(live.map_err(ApiError::internal)?.as_ref()))
    }

    /// Remembers a namespace being deleted, forgetting expired entries.
    fn remember_deletion(&self, namespace: &str) {
        let mut entries = self.force_live_lookup.lock();
        let now = Instant::now();
        entries.retain(|_, at| now.duration_since(*at) < FORCE_LIVE_LOOKUP_TTL);
        if entries.len() >= FORCE_LIVE_LOOKUP_ENTRIES
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(namespace.to_string(), now);
    }

    /// Whether a namespace was deleted within the TTL.
    fn recently_deleted(&self, namespace: &str) -> bool {
        let entries = self.force_live_lookup.lock();
        entries
            .get(namespace)
            .is_some_and(|at| at.elapsed() < FORCE_LIVE_LOOKUP_TTL)
    }
}

/// The name an admission error names: the request's, else the object's name or
/// generateName, else `Unknown` (upstream's extractResourceName).
fn resource_name(request: &Attributes<'_>, object: Option<&Value>) -> String {
    if !request.name.is_empty() {
        return request.name.to_string();
    }
    let Some(object) = object else {
        return "Unknown".to_string();
    };
    for field in ["name", "generateName"] {
        let value = str_at(object, &["metadata", field]);
        if !value.is_empty() {
            return value.to_string();
        }
    }
    "Unknown".to_string()
}

/// Whether the request is for a core/v1 Namespace.
fn is_namespace(request: &Attributes<'_>) -> bool {
    request.definition.group_version.group.is_empty() && request.definition.kind == "Namespace"
}

/// Access reviews reveal nothing about a namespace, so they are always allowed.
fn is_access_review(request: &Attributes<'_>) -> bool {
    request.definition.group_version.group == "authorization.k8s.io"
        && request.definition.plural == "localsubjectaccessreviews"
}

#[async_trait]
impl AdmissionPlugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    async fn admit(
        &self,
        request: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let object = object.map(|object| &*object);
        if request.operation == Operation::Connect {
            return Ok(());
        }
        let resource = request.definition.group_resource();
        if request.operation == Operation::Delete
            && is_namespace(request)
            && IMMORTAL_NAMESPACES.contains(&request.name)
        {
            return Err(ApiError::forbidden(
                &resource,
                request.name,
                "this namespace may not be deleted",
            ));
        }
        if request.namespace.is_empty() && !is_namespace(request) {
            return Ok(());
        }
        if is_namespace(request) {
            if request.operation == Operation::Delete {
                self.remember_deletion(request.name);
            }
            return Ok(());
        }
        if request.operation == Operation::Delete || is_access_review(request) {
            return Ok(());
        }
        if self.namespaces.revision() == 0 {
            // The cache has not loaded yet; give it the time upstream gives its informer.
            if self
                .namespaces
                .wait_for(1, LIVE_LOOKUP_TIMEOUT)
                .await
                .is_err()
            {
                let name = resource_name(request, object);
                return Err(ApiError::forbidden(
                    &resource,
                    name,
                    "not yet ready to handle request",
                ));
            }
        }
        let mut found = self.cached(request.namespace);
        // A namespace deleted recently may still look active in the cache.
        let stale = matches!(&found, Lookup::Phase(phase) if phase == PHASE_ACTIVE)
            && self.recently_deleted(request.namespace);
        if matches!(found, Lookup::Missing) || stale {
            found = self.fresh(request.namespace).await?;
        }
        let phase = match found {
            Lookup::Missing => {
                let namespaces = GroupResource::new("", "namespaces");
                return Err(ApiError::not_found(&namespaces, request.namespace));
            }
            Lookup::Phase(phase) => phase,
        };
        if request.operation != Operation::Create || phase != PHASE_TERMINATING {
            return Ok(());
        }
        Err(terminating(
            &resource,
            resource_name(request, object),
            request.namespace,
        ))
    }
}

/// 403 for a create in a namespace being deleted, with the NamespaceTerminating cause.
fn terminating(resource: &GroupResource, name: String, namespace: &str) -> ApiError {
    let reason = format!(
        "unable to create new content in namespace {namespace} because it is being terminated"
    );
    let mut status = ApiError::forbidden(resource, name, reason).into_status();
    let details = status.details.get_or_insert_with(StatusDetails::default);
    details.causes.push(StatusCause {
        reason: NAMESPACE_TERMINATING_CAUSE.to_string(),
        message: format!("namespace {namespace} is being terminated"),
        field: "metadata.namespace".to_string(),
    });
    ApiError::from(status)
}

/// The object of a create of `group`/`plural` itself (not a subresource), if this is one.
fn created<'a>(
    attributes: &Attributes<'_>,
    resource: (&str, &str),
    object: Option<&'a mut Value>,
) -> Option<&'a mut Value> {
    written(attributes, resource, Operation::Create, object)
}

/// The object of an update of `group`/`plural` itself (not a subresource), if this is one.
fn updated<'a>(
    attributes: &Attributes<'_>,
    resource: (&str, &str),
    object: Option<&'a mut Value>,
) -> Option<&'a mut Value> {
    written(attributes, resource, Operation::Update, object)
}

/// The object written by `operation` on `group`/`plural` itself, if this is such a write.
fn written<'a>(
    attributes: &Attributes<'_>,
    (group, plural): (&str, &str),
    operation: Operation,
    object: Option<&'a mut Value>,
) -> Option<&'a mut Value> {
    let definition = attributes.definition;
    let wanted = definition.group_version.group == group
        && definition.plural == plural
        && attributes.operation == operation
        && attributes.subresource.is_empty();
    object.filter(|_| wanted)
}

pub mod certificates;
pub mod defaultclass;
pub mod inuse;
pub mod limitranger;
pub mod noderestriction;
pub mod nodetaint;
pub mod podsecurity;
pub mod priority;
pub mod pvcresize;
mod quantity;
mod quotascope;
mod quotausage;
pub mod resourcequota;
pub mod runtimeclass;
pub mod serviceaccount;
pub mod tolerations;
pub mod topology;

pub use certificates::{CertificateAuthority, CertificateSubjectRestriction};
pub use defaultclass::DefaultClass;
pub use inuse::StorageObjectInUseProtection;
pub use limitranger::LimitRanger;
pub use noderestriction::NodeRestriction;
pub use nodetaint::TaintNodesByCondition;
pub use podsecurity::{PodSecurity, PodSecurityConfiguration};
pub use priority::Priority;
pub use pvcresize::PersistentVolumeClaimResize;
pub use resourcequota::{ResourceQuota, ResourceQuotaConfiguration, start_quota_controller};
pub use runtimeclass::RuntimeClass;
pub use serviceaccount::ServiceAccount;
pub use tolerations::DefaultTolerationSeconds;
pub use topology::PodTopologyLabels;

#[cfg(test)]
mod tests;

/// What a namespace object says about admission.
fn lookup(object: Option<&CachedObject>) -> Lookup {
    match object {
        None => Lookup::Missing,
        Some(object) => {
            let parsed: Value = serde_json::from_slice(&object.stored).unwrap_or(Value::Null);
            Lookup::Phase(str_at(&parsed, &["status", "phase"]).to_string())
        }
    }
}
