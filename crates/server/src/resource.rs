//! Resource definitions: everything the generic REST handlers, discovery and OpenAPI need to
//! know about a resource, and the small per-type hooks (its [`Strategy`]).
//!
//! kube-apiserver assembles the same facts from a resource's Go types, its REST storage and
//! its strategy. Here they are data: one [`ResourceDefinition`] per served group-version-
//! resource, so discovery, routing and the handlers all read the same source and cannot drift.

use std::sync::Arc;

use kapi_apimachinery::schema::{GroupResource, GroupVersion, GroupVersionKind};
use kapi_apimachinery::validation::field::FieldErrors;
use serde_json::Value;

/// The REST verbs a resource's storage supports, as discovery lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verbs(u16);

impl Verbs {
    pub const CREATE: Verbs = Verbs(1);
    pub const DELETE: Verbs = Verbs(1 << 1);
    pub const DELETECOLLECTION: Verbs = Verbs(1 << 2);
    pub const GET: Verbs = Verbs(1 << 3);
    pub const LIST: Verbs = Verbs(1 << 4);
    pub const PATCH: Verbs = Verbs(1 << 5);
    pub const UPDATE: Verbs = Verbs(1 << 6);
    pub const WATCH: Verbs = Verbs(1 << 7);
    /// Every verb of a full CRUD resource.
    pub const ALL: Verbs = Verbs(0xff);
    /// The verbs of a subresource that can be read and written (status, scale).
    pub const GET_UPDATE_PATCH: Verbs = Verbs(Self::GET.0 | Self::UPDATE.0 | Self::PATCH.0);

    /// Whether every verb of `other` is in `self`.
    pub fn contains(self, other: Verbs) -> bool {
        self.0 & other.0 == other.0
    }

    /// The verbs' names in discovery's (alphabetical) order.
    pub fn names(self) -> Vec<&'static str> {
        const NAMES: [(Verbs, &str); 8] = [
            (Verbs::CREATE, "create"),
            (Verbs::DELETE, "delete"),
            (Verbs::DELETECOLLECTION, "deletecollection"),
            (Verbs::GET, "get"),
            (Verbs::LIST, "list"),
            (Verbs::PATCH, "patch"),
            (Verbs::UPDATE, "update"),
            (Verbs::WATCH, "watch"),
        ];
        NAMES
            .iter()
            .filter(|(verb, _)| self.contains(*verb))
            .map(|(_, name)| *name)
            .collect()
    }
}

impl std::ops::BitOr for Verbs {
    type Output = Verbs;
    fn bitor(self, other: Verbs) -> Verbs {
        Verbs(self.0 | other.0)
    }
}

/// What a subresource does; the generic handlers implement each kind once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubresourceKind {
    /// `status`: reads the object; writes change only its `status`.
    Status,
    /// `finalize` (namespaces): writes change only `spec.finalizers`.
    Finalize,
}

/// A subresource of a resource, e.g. `namespaces/status`.
#[derive(Clone, Debug)]
pub struct Subresource {
    pub name: &'static str,
    pub kind: SubresourceKind,
    pub verbs: Verbs,
}

/// One column of `kubectl get` output (a meta.k8s.io/v1 TableColumnDefinition).
#[derive(Clone, Debug)]
pub struct PrinterColumn {
    pub name: &'static str,
    /// OpenAPI type: string, integer, number, boolean, date.
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0 for the default columns, higher for `-o wide` only.
    pub priority: i32,
}

/// Computes one object's table cells, one per [`PrinterColumn`].
pub type RowFn = fn(&Value) -> Vec<Value>;

/// How a resource prints as a Table.
#[derive(Clone, Debug)]
pub struct TableConvertor {
    pub columns: Vec<PrinterColumn>,
    pub cells: RowFn,
}

/// Validates an object name (`prefix`: it is a generateName prefix), returning the problems,
/// as upstream's ValidateNameFunc.
pub type NameValidator = fn(&str, bool) -> Vec<String>;

/// The per-type hooks of the generic registry, as kube-apiserver's RESTCreateStrategy,
/// RESTUpdateStrategy and RESTDeleteStrategy. Objects are JSON values in the version that is
/// stored.
pub trait Strategy: Send + Sync + 'static {
    /// Fills defaults and clears what a create must not set (e.g. `status`).
    fn prepare_for_create(&self, _object: &mut Value) {}

    /// Carries over what an update of the main resource must not change (e.g. `status`).
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// How names of this resource are validated (most are DNS subdomains).
    fn name_validator(&self) -> NameValidator {
        kapi_apimachinery::validation::name_is_dns_subdomain
    }

    /// Validates a new object (metadata rules are checked by the registry already).
    fn validate(&self, object: &Value) -> FieldErrors;

    /// Validates an update (metadata immutability is checked by the registry already).
    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        self.validate(new)
    }

    /// Validates a write through a subresource (`status`, `finalize`), whose own strategy
    /// upstream validates differently from the main resource.
    fn validate_subresource_update(
        &self,
        _subresource: &SubresourceKind,
        new: &Value,
        old: &Value,
    ) -> FieldErrors {
        self.validate_update(new, old)
    }

    /// Whether a PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether a PUT without `metadata.resourceVersion` overwrites unconditionally.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// The resource-specific fields a field selector may use and their values for `object`
    /// (`metadata.name` and `metadata.namespace` are always supported).
    fn selectable_fields(&self, _object: &Value) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Whether `field` is one of [`Strategy::selectable_fields`]' names.
    fn supports_field(&self, _field: &str) -> bool {
        false
    }

    /// Whether something besides `metadata.finalizers` keeps a deleted object until it is
    /// cleared (namespaces: `spec.finalizers`).
    fn has_pending_finalizers(&self, _object: &Value) -> bool {
        false
    }

    /// Changes an object whose deletion is pending (namespaces turn `Terminating`).
    fn prepare_for_pending_deletion(&self, _object: &mut Value) {}

    /// Whether failed delete preconditions are worded as the storage layer words them
    /// (namespaces) rather than as rest.BeforeDelete does.
    fn storage_precondition_messages(&self) -> bool {
        false
    }

    /// Whether DELETE answers with the object rather than a Success Status.
    fn return_deleted_object(&self) -> bool {
        false
    }
}

/// Converts objects between a served version and the stored version of a resource.
pub trait Converter: Send + Sync + 'static {
    /// From the served version to the stored one.
    fn stored_form(&self, object: Value) -> Result<Value, String>;
    /// From the stored version to the served one.
    fn served_form(&self, object: Value) -> Value;
}

/// One stored collection: where its objects live and in which version they are written.
/// Several served versions of a resource share one (e.g. core/v1 and events.k8s.io/v1
/// events).
#[derive(Debug)]
pub struct StorageDefinition {
    /// The key path under the storage prefix (`configmaps`, `events`, ...).
    pub key_prefix: &'static str,
    /// The version objects are written in.
    pub storage_version: GroupVersionKind,
    pub namespaced: bool,
}

/// Everything kapi serves for one group-version-resource.
#[derive(Clone)]
pub struct ResourceDefinition {
    pub group_version: GroupVersion,
    pub kind: &'static str,
    pub list_kind: &'static str,
    /// The plural name, as in the URL path.
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub verbs: Verbs,
    pub subresources: Vec<Subresource>,
    pub table: Option<TableConvertor>,
    pub strategy: Arc<dyn Strategy>,
    pub storage: Arc<StorageDefinition>,
    /// Set when this version is not the stored one.
    pub converter: Option<Arc<dyn Converter>>,
}

impl ResourceDefinition {
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group_version.group.clone(), self.plural)
    }

    pub fn group_version_kind(&self) -> GroupVersionKind {
        GroupVersionKind::new(
            self.group_version.group.clone(),
            self.group_version.version.clone(),
            self.kind,
        )
    }

    /// The subresource named `name`, if this resource has it.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|sub| sub.name == name)
    }

    /// The stored form of a served object.
    pub fn stored_form(&self, object: Value) -> Result<Value, String> {
        match &self.converter {
            Some(converter) => converter.stored_form(object),
            None => Ok(object),
        }
    }

    /// The served form of a stored object.
    pub fn served_form(&self, object: Value) -> Value {
        match &self.converter {
            Some(converter) => converter.served_form(object),
            None => object,
        }
    }
}

impl std::fmt::Debug for ResourceDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceDefinition")
            .field("group_version", &self.group_version)
            .field("plural", &self.plural)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}
