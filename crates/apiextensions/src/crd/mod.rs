//! The CustomResourceDefinition resource (apiextensions.k8s.io/v1) itself: its
//! [`definition`] for the generic REST handlers, the strategy behind it (defaulting,
//! create/update preparation, validation with upstream's messages, the cleanup finalizer on
//! delete), and the helpers the controllers use to read a CRD and set its conditions.
//!
//! CRDs are handled as JSON in their only served and stored version, v1, as upstream's
//! apiextensions-apiserver registry does with its typed objects (pkg/registry/
//! customresourcedefinition, pkg/apis/apiextensions/validation).

pub mod access;
pub mod approval;
mod conversion;
pub mod defaults;
mod fieldpath;
pub(crate) mod gojson;
mod schema_checks;
mod schema_defaults;
mod schema_rules;
mod v1beta1;
pub mod validation;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use kapi_apimachinery::schema::{GroupVersion, GroupVersionKind};
use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::resource::{
    ApiServicePriority, Capabilities, ResourceDefinition, StorageDefinition, Strategy, Subresource,
    SubresourceKind, Verbs,
};
use serde_json::{Value, json};

pub use access::{Condition, CrdNames, condition_type, set_condition};

/// The API group of CustomResourceDefinitions.
pub const GROUP: &str = "apiextensions.k8s.io";

/// The finalizer that keeps a deleted CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Where CRDs are stored (upstream's etcd key prefix, under the storage root).
const KEY_PREFIX: &str = "apiextensions.k8s.io/customresourcedefinitions";

/// The served `apiextensions.k8s.io/v1` `customresourcedefinitions` resource:
/// cluster-scoped, every verb, short names `crd` and `crds`, category `api-extensions`, a
/// `status` subresource, and upstream's default table (Name, Created At).
pub fn definition() -> ResourceDefinition {
    let kind = "CustomResourceDefinition";
    ResourceDefinition {
        group_version: GroupVersion::new(GROUP, "v1"),
        kind: kind.into(),
        list_kind: "CustomResourceDefinitionList".into(),
        plural: "customresourcedefinitions".into(),
        singular: "customresourcedefinition".into(),
        namespaced: false,
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
        verbs: Verbs::ALL,
        subresources: vec![Subresource {
            name: "status",
            kind: SubresourceKind::Status,
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        }],
        table: None,
        strategy: Arc::new(CrdStrategy),
        storage: Arc::new(StorageDefinition {
            key_prefix: KEY_PREFIX.into(),
            storage_version: GroupVersionKind::new(GROUP, "v1", kind),
            namespaced: false,
            ttl: None,
            earlier_versions: Some(earlier_versions),
        }),
        converter: None,
        deprecation: None,
        capabilities: Capabilities::TYPED,
        priority: kapi_api::api_service_priority(GROUP, "v1")
            .map_or(ApiServicePriority::DEFAULT, Into::into),
    }
}

/// The strategy of CustomResourceDefinitions (upstream's customresourcedefinition
/// strategy and statusStrategy).
pub struct CrdStrategy;

/// kube-apiserver's stored v1beta1 CRDs, as v1.
fn earlier_versions(object: Value) -> Option<Value> {
    let stored = (object["apiVersion"].as_str(), object["kind"].as_str());
    match stored {
        (Some("apiextensions.k8s.io/v1beta1"), Some("CustomResourceDefinition")) => {
            Some(v1beta1::to_v1(object))
        }
        _ => None,
    }
}

impl Strategy for CrdStrategy {
    /// The v1 defaults where upstream's decoder applies them, so the writer owns them (again
    /// in prepare, for the server's own writes).
    fn default(&self, object: &mut Value) {
        if object.is_object() {
            defaults::set_defaults(object);
        }
    }

    /// Defaults; a new CRD starts at generation 1 with a status holding only its storage
    /// version in `storedVersions`.
    fn prepare_for_create(&self, object: &mut Value) {
        if !object.is_object() {
            return;
        }
        defaults::set_defaults(object);
        object["status"] = json!({});
        object["metadata"]["generation"] = Value::from(1);
        record_storage_version(object);
        defaults::normalize(object);
    }

    /// Defaults; the status is the stored one (written only through `status`), the
    /// generation moves on a spec change, and a new storage version joins `storedVersions`.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if !new.is_object() {
            return;
        }
        defaults::set_defaults(new);
        new["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
        defaults::normalize(new);
        if new["spec"] != old["spec"] {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
            new["metadata"]["generation"] = Value::from(generation + 1);
        }
        record_storage_version(new);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        validation::validate_create(object)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validation::validate_update(new, old)
    }

    /// A status write validates only the accepted names.
    fn validate_subresource_update(
        &self,
        subresource: &SubresourceKind,
        new: &Value,
        old: &Value,
    ) -> FieldErrors {
        match subresource {
            SubresourceKind::Status => validation::validate_status_update(new),
            _ => self.validate_update(new, old),
        }
    }

    fn allow_create_on_update(&self) -> bool {
        false
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    /// The first delete of a CRD never removes it: the cleanup finalizer must delete its
    /// custom resources first.
    fn has_pending_finalizers(&self, object: &Value) -> bool {
        object["metadata"]["deletionTimestamp"].is_null()
    }

    /// Adds the cleanup finalizer and, on the first delete, the `Terminating` condition.
    fn prepare_for_pending_deletion(&self, object: &mut Value) {
        add_cleanup_finalizer(object);
        if !access::is_condition_true(object, condition_type::TERMINATING) {
            set_condition(
                object,
                &Condition {
                    type_: condition_type::TERMINATING.into(),
                    status: "True".into(),
                    reason: "InstanceDeletionPending".into(),
                    message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon".into(),
                },
            );
        }
    }
}

/// Appends the storage version to `status.storedVersions` unless it is there.
fn record_storage_version(crd: &mut Value) {
    let Some(storage) = access::storage_version(crd).map(str::to_string) else {
        return;
    };
    if access::is_stored_version(crd, &storage) {
        return;
    }
    let status = defaults::object_at(crd, "status");
    match status
        .get_mut("storedVersions")
        .and_then(Value::as_array_mut)
    {
        Some(stored) => stored.push(Value::from(storage)),
        None => {
            status.insert("storedVersions".into(), json!([storage]));
        }
    }
}

/// Adds [`CLEANUP_FINALIZER`] to `metadata.finalizers` unless it is there.
fn add_cleanup_finalizer(crd: &mut Value) {
    let metadata = defaults::object_at(crd, "metadata");
    let finalizers = metadata
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !finalizers.is_array() {
        *finalizers = Value::Array(Vec::new());
    }
    if let Value::Array(list) = finalizers
        && !list.iter().any(|f| f.as_str() == Some(CLEANUP_FINALIZER))
    {
        list.push(Value::from(CLEANUP_FINALIZER));
    }
}
