//! Resource definitions: everything the generic REST handlers, discovery and OpenAPI need to
//! know about a resource, and the small per-type hooks (its [`Strategy`]).
//!
//! kube-apiserver assembles the same facts from a resource's Go types, its REST storage and
//! its strategy. Here they are data: one [`ResourceDefinition`] per served group-version-
//! resource, so discovery, routing and the handlers all read the same source and cannot drift.

use std::borrow::Cow;
use std::sync::Arc;

use kapi_apimachinery::schema::{GroupResource, GroupVersion, GroupVersionKind};
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::FieldErrors;
use serde_json::Value;

use crate::authn::UserInfo;

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

    /// The verbs of both (a `const` form of `|`).
    pub const fn union(self, other: Verbs) -> Verbs {
        Verbs(self.0 | other.0)
    }

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
#[derive(Clone, Debug)]
pub enum SubresourceKind {
    /// `status`: reads the object; writes change only its `status`.
    Status,
    /// `finalize` (namespaces): writes change only `spec.finalizers`.
    Finalize,
    /// `scale`: an autoscaling/v1 Scale view of the object; writes change only the replicas.
    Scale(ScalePaths),
    /// Reads the object; writes change only the part `merge` takes from the written object
    /// (pods/ephemeralcontainers, pods/resize, certificatesigningrequests/approval).
    Part(PartWrite),
    /// A create on an existing object, answered by a hook (pods/binding, pods/eviction,
    /// serviceaccounts/token).
    Create(CreateHandler),
    /// A stream or proxy through a node agent (pods/log, exec, attach, portforward, proxy;
    /// nodes/proxy; services/proxy), answered from the existing object by the function: kapi
    /// reaches no node agent, so it answers what upstream answers without one.
    Connect(ConnectFn),
}

/// The object a [`SubresourceKind::Part`] write stores: `current` with the subresource's
/// part taken from `written`.
pub type PartFn = fn(current: &Value, written: &Value) -> Value;

/// Validates a [`SubresourceKind::Part`] write (`new` as it will be stored) against `old`,
/// instead of the resource's update validation (upstream gives these subresources strategies
/// of their own).
pub type PartValidateFn = fn(new: &Value, old: &Value) -> FieldErrors;

/// How a [`SubresourceKind::Part`] subresource writes.
#[derive(Clone, Copy, Debug)]
pub struct PartWrite {
    pub merge: PartFn,
    pub validate: PartValidateFn,
}

/// What a [`SubresourceKind::Connect`] request asks of an existing object.
#[derive(Clone, Copy, Debug)]
pub struct ConnectRequest<'a> {
    /// The subresource (`log`, `exec`, `proxy`, ...).
    pub subresource: &'a str,
    /// The `container` query parameter, if given.
    pub container: Option<&'a str>,
}

/// Answers a [`SubresourceKind::Connect`] request on an existing object: the plain-text
/// body of a 200, or the error.
pub type ConnectFn = fn(request: &ConnectRequest<'_>, object: &Value) -> Result<String, ApiError>;

/// Where a resource keeps what its Scale shows, as JSON pointers (the same data a CRD's
/// scale subresource gives as specReplicasPath, statusReplicasPath and labelSelectorPath).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas (`/spec/replicas`).
    pub spec_replicas: Name,
    /// The observed replicas (`/status/replicas`).
    pub status_replicas: Name,
    /// Where the selector is and in which form.
    pub selector: ScaleSelector,
}

/// The form of the selector a Scale's `status.selector` shows as a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScaleSelector {
    /// A metav1.LabelSelector (matchLabels, matchExpressions), e.g. `/spec/selector`.
    LabelSelector(Name),
    /// A map of labels (ReplicationControllers' `/spec/selector`).
    Map(Name),
    /// Already a string (CRDs' labelSelectorPath, e.g. `/status/selector`).
    String(Name),
}

/// A [`Creater`] as subresource data.
#[derive(Clone)]
pub struct CreateHandler(pub Arc<dyn Creater>);

impl std::fmt::Debug for CreateHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CreateHandler")
    }
}

/// What a [`Creater`] is asked to do: one POST, already decoded. A collection's creates are
/// checked against the endpoint's apiVersion and kind; a subresource's hook checks its own.
pub struct CreateRequest<'a> {
    /// Who asks.
    pub user: &'a UserInfo,
    /// The request's namespace ("" for cluster-scoped resources).
    pub namespace: &'a str,
    /// The parent object's name for a subresource, "" for a create on a collection.
    pub name: &'a str,
    /// The request body.
    pub object: Value,
    pub dry_run: bool,
    /// The other served resources and the server's shared services.
    pub api: &'a dyn Api,
}

/// What a [`Creater`] may reach besides its request.
pub trait Api: Send + Sync {
    /// The stored version of the resource `group`/`resource`, if served.
    fn resource(&self, group: &str, resource: &str) -> Option<crate::endpoints::Served>;
    /// The services the server was built with (e.g. the service-account token issuer),
    /// and the request's own extensions (e.g. the authorizer deciding it).
    fn services(&self) -> &http::Extensions;
}

/// Answers a create that is not a plain store write: review resources that are computed
/// and never stored (TokenReview, SubjectAccessReview, ...) and create subresources
/// (pods/binding, pods/eviction, serviceaccounts/token). Returns the response body; it is
/// answered 201 Created, as upstream answers these creates.
#[async_trait::async_trait]
pub trait Creater: Send + Sync + 'static {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError>;

    /// Other apiVersions (`<group>/<version>`) of its body's kind the hook takes besides the
    /// one it declares, as upstream's `AcceptsGroupVersion` (pods/eviction takes
    /// policy/v1beta1 Evictions too). None by default.
    fn also_accepted(&self) -> &'static [&'static str] {
        &[]
    }
}

/// A name in a definition: borrowed for the built-in API's (known at compile time), owned for
/// what is learnt at run time (a CRD's names, columns and paths), so nothing is leaked.
pub type Name = Cow<'static, str>;

/// A subresource of a resource, e.g. `namespaces/status`.
#[derive(Clone, Debug)]
pub struct Subresource {
    pub name: &'static str,
    pub kind: SubresourceKind,
    pub verbs: Verbs,
    /// The kind the subresource reads and writes when it is not the parent's (pods/binding's
    /// v1 Binding, pods/exec's v1 PodExecOptions, ...), as upstream's storage of it makes
    /// them and discovery lists them. `None`: the parent's kind, or autoscaling/v1 Scale for a
    /// scale subresource.
    pub response_kind: Option<GroupVersionKind>,
}

/// One column of `kubectl get` output (a meta.k8s.io/v1 TableColumnDefinition).
#[derive(Clone, Debug)]
pub struct PrinterColumn {
    pub name: Name,
    /// OpenAPI type: string, integer, number, boolean, date.
    pub type_: Name,
    pub format: Name,
    pub description: Name,
    /// 0 for the default columns, higher for `-o wide` only.
    pub priority: i32,
}

/// Computes one object's table cells, one per [`PrinterColumn`] (a closure, so that a
/// custom resource's cells can follow its CRD's column JSON paths).
pub type RowFn = Arc<dyn Fn(&Value) -> Vec<Value> + Send + Sync>;

/// How a resource prints as a Table.
#[derive(Clone)]
pub struct TableConvertor {
    pub columns: Vec<PrinterColumn>,
    pub cells: RowFn,
    /// The order of a list's rows, where upstream's printer sorts them (FlowSchemas by
    /// precedence); `None` keeps the list's order.
    pub order: Option<RowOrder>,
}

/// Compares two objects for the order of their rows.
pub type RowOrder = fn(&Value, &Value) -> std::cmp::Ordering;

impl std::fmt::Debug for TableConvertor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableConvertor")
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

/// Validates an object name (`prefix`: it is a generateName prefix), returning the problems,
/// as upstream's ValidateNameFunc.
pub type NameValidator = fn(&str, bool) -> Vec<String>;

/// The per-type hooks of the generic registry, as kube-apiserver's RESTCreateStrategy,
/// RESTUpdateStrategy and RESTDeleteStrategy. Objects are JSON values in the version that is
/// stored.
pub trait Strategy: Send + Sync + 'static {
    /// The type's defaulting, run where upstream's decoder defaults: on every decoded object
    /// of a create or update, on the result of a patch and on a server-side apply's merged
    /// object, in the request's version, before managedFields of updates are recorded (so
    /// the writer owns the defaulted fields).
    fn default(&self, _object: &mut Value) {}

    /// Clears what a create must not set (e.g. `status`) and sets what the server owns.
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

    /// Validates a write through a subresource (`status`, `finalize`, ...), whose own
    /// strategy upstream validates differently from the main resource. By default: the
    /// subresource's own rules ([`own_subresource_validation`]), else the update validation.
    fn validate_subresource_update(
        &self,
        subresource: &SubresourceKind,
        new: &Value,
        old: &Value,
    ) -> FieldErrors {
        own_subresource_validation(subresource, new, old)
            .unwrap_or_else(|| self.validate_update(new, old))
    }

    /// Records who asks for a new object, for types whose objects carry their requester
    /// (CertificateSigningRequests' `spec.username`, `uid`, `groups`, `extra`); called on every
    /// create with the authenticated user.
    fn set_requester(&self, _object: &mut Value, _user: &UserInfo) {}

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
    fn selectable_fields(&self, _object: &Value) -> Vec<(Name, String)> {
        Vec::new()
    }

    /// Whether `field` is one of [`Strategy::selectable_fields`]' names.
    fn supports_field(&self, _field: &str) -> bool {
        false
    }

    /// The top-level fields of an object that [`Strategy::selectable_fields`] reads, so that
    /// the watch cache decodes only those of each object it keeps, with the metadata's name,
    /// namespace and labels, which it always decodes. `None`: any field; a strategy that
    /// reads other metadata must say `None` (naming `metadata` here does not add it). Debug
    /// builds check, for every object cached, that these give the fields a whole object
    /// gives.
    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[])
    }

    /// Whether something besides `metadata.finalizers` keeps a deleted object until it is
    /// cleared (namespaces: `spec.finalizers`).
    fn has_pending_finalizers(&self, _object: &Value) -> bool {
        false
    }

    /// Changes an object whose deletion is pending (namespaces turn `Terminating`).
    fn prepare_for_pending_deletion(&self, _object: &mut Value) {}

    /// The grace period, in seconds, of a DELETE of `object` asking for `requested`
    /// (upstream's `CheckGracefulDelete`): the object is marked deleted that long before it
    /// goes (pods, which their kubelet stops first). `None` for resources deleted at once.
    fn graceful_deletion(&self, _object: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// What a DELETE that names no propagation policy does to the object's dependents
    /// (upstream's DefaultGarbageCollectionPolicy).
    fn garbage_collection_policy(&self) -> GarbageCollectionPolicy {
        GarbageCollectionPolicy::DeleteDependents
    }

    /// Whether failed delete preconditions are worded as the storage layer words them
    /// (namespaces) rather than as rest.BeforeDelete does.
    fn storage_precondition_messages(&self) -> bool {
        false
    }

    /// Why a DELETE of the object `name` is refused (403) whatever is stored, if it is (the
    /// system PriorityClasses); as upstream's storage checks before deleting anything.
    fn undeletable(&self, _name: &str) -> Option<&'static str> {
        None
    }

    /// Whether DELETE answers with the object rather than a Success Status.
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// The hook answering creates of a resource that is not stored (the review resources
    /// and `bindings`); `None` for stored resources.
    fn creater(&self) -> Option<Arc<dyn Creater>> {
        None
    }
}

/// What a DELETE without a propagation policy does to an object's dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GarbageCollectionPolicy {
    /// The garbage collector deletes them in the background (most resources).
    DeleteDependents,
    /// They are orphaned (batch/v1 Jobs and v1 ReplicationControllers, kept so for backward
    /// compatibility).
    OrphanDependents,
    /// The resource takes no part in garbage collection (Events): a DELETE never adds the
    /// `orphan` or `foregroundDeletion` finalizer, whatever its policy, and removes them.
    Unsupported,
}

/// The validation of subresource writes that carry their own rules rather than the
/// resource's update validation: a [`SubresourceKind::Part`]'s `validate`, and none for a
/// [`SubresourceKind::Create`] hook's write, which checks what it changes itself (as
/// upstream's binding storage writes the pod without the pod strategy). `None` for the
/// other kinds. Strategies overriding [`Strategy::validate_subresource_update`] call it.
pub fn own_subresource_validation(
    subresource: &SubresourceKind,
    new: &Value,
    old: &Value,
) -> Option<FieldErrors> {
    match subresource {
        SubresourceKind::Part(part) => Some((part.validate)(new, old)),
        SubresourceKind::Create(_) => Some(FieldErrors::new()),
        _ => None,
    }
}

/// Converts objects between a served version and the stored version of a resource.
pub trait Converter: Send + Sync + 'static {
    /// From the served version to the stored one (a 400 for objects that cannot be
    /// converted; a conversion webhook's failure is upstream's 500).
    fn stored_form(&self, object: Value) -> Result<Value, ApiError>;
    /// From the stored version to the served one.
    fn served_form(&self, object: Value) -> Result<Value, ApiError>;
    /// The objects of a list page, from the stored version to the served one (one at a time
    /// unless the converter can do better: a conversion webhook gets one review per list).
    fn served_forms(&self, objects: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        objects.into_iter().map(|o| self.served_form(o)).collect()
    }
}

/// One stored collection: where its objects live and in which version they are written.
/// Several served versions of a resource share one (e.g. core/v1 and events.k8s.io/v1
/// events).
#[derive(Debug)]
pub struct StorageDefinition {
    /// The key path under the storage prefix (`configmaps`, `events`, ...).
    pub key_prefix: Name,
    /// The version objects are written in.
    pub storage_version: GroupVersionKind,
    pub namespaced: bool,
    /// How long a stored object lives after its last write (kube-apiserver's `TTLFunc`:
    /// Events', `--event-ttl`); `None` for objects that live until deleted.
    pub ttl: Option<std::time::Duration>,
    /// Reads values an older kube-apiserver stored in a version of the kind that is not
    /// served any more but that upstream's scheme still decodes (CustomResourceDefinitions
    /// stored as v1beta1, say); `None` where there are none.
    pub earlier_versions: Option<EarlierVersions>,
}

/// A value stored in an earlier version of a collection's kind, converted to its storage
/// version as upstream's storage decoder converts it; `None` when the value's `apiVersion`
/// and `kind` are not one it reads (the value is then refused as damage, never served
/// mislabelled).
pub type EarlierVersions = fn(Value) -> Option<Value>;

/// Everything kapi serves for one group-version-resource.
#[derive(Clone)]
pub struct ResourceDefinition {
    pub group_version: GroupVersion,
    pub kind: Name,
    pub list_kind: Name,
    /// The plural name, as in the URL path.
    pub plural: Name,
    pub singular: Name,
    pub namespaced: bool,
    pub short_names: Vec<Name>,
    pub categories: Vec<Name>,
    pub verbs: Verbs,
    pub subresources: Vec<Subresource>,
    pub table: Option<TableConvertor>,
    pub strategy: Arc<dyn Strategy>,
    pub storage: Arc<StorageDefinition>,
    /// Set when this version is not the stored one.
    pub converter: Option<Arc<dyn Converter>>,
    /// The `Warning` every request to this version gets when it is deprecated (a CRD
    /// version's `deprecationWarning`, or upstream's default wording).
    pub deprecation: Option<String>,
    /// What the resource's endpoints can do where kube-apiserver's servers differ.
    pub capabilities: Capabilities,
    /// Where its group version sorts in discovery (every definition of a group version
    /// carries the same).
    pub priority: ApiServicePriority,
}

/// Where a group version sorts in discovery: the `groupPriorityMinimum` and `versionPriority`
/// of the APIService serving it. Higher sorts first; groups of equal priority sort by name,
/// versions of equal priority in the kube-aware version order. Whoever assembles a server
/// gives it (kube-apiserver keeps a table for its built-in group versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiServicePriority {
    pub group: i32,
    pub version: i32,
}

impl ApiServicePriority {
    /// What kube-apiserver gives the group versions of CRDs.
    pub const DEFAULT: ApiServicePriority = ApiServicePriority {
        group: 1000,
        version: 100,
    };
}

impl Default for ApiServicePriority {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl From<(i32, i32)> for ApiServicePriority {
    /// From (group priority, version priority).
    fn from((group, version): (i32, i32)) -> Self {
        ApiServicePriority { group, version }
    }
}

/// What a resource's endpoints can do where kube-apiserver's two ways of serving resources
/// differ: its REST installer serves typed kinds from routes installed at start (the
/// built-in API; an extension server of typed kinds is served alike), the apiextensions
/// server's CRD handler serves unstructured objects it looks up per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Objects are of a registered Go type: a body without apiVersion or kind has them filled
    /// in, a body of another registered type fails as an unknown conversion. Untyped
    /// (unstructured) objects must name their kind and apiVersion exactly.
    pub typed: bool,
    /// Strategic merge patches are accepted: the kind's schema carries patch strategies.
    /// Without it they answer 415, as for custom resources.
    pub strategic_merge_patch: bool,
    /// Served by a handler that finds the resource per request, as the CRD handler: an
    /// unknown resource or subresource of its group version passes on to the final plain
    /// 404; discovery lists its verbs and subresources in that handler's order and names its
    /// response kinds' group and version; a group version of such resources only has the CRD
    /// OpenAPI builder's document (no discovery route, its title).
    pub dynamic: bool,
}

impl Capabilities {
    /// A kind of kube-apiserver's own API (or of any server of typed kinds).
    pub const TYPED: Capabilities = Capabilities {
        typed: true,
        strategic_merge_patch: true,
        dynamic: false,
    };

    /// A custom resource, as the apiextensions server serves it.
    pub const CUSTOM_RESOURCE: Capabilities = Capabilities {
        typed: false,
        strategic_merge_patch: false,
        dynamic: true,
    };
}

impl ResourceDefinition {
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group_version.group.clone(), &*self.plural)
    }

    pub fn group_version_kind(&self) -> GroupVersionKind {
        GroupVersionKind::new(
            self.group_version.group.clone(),
            self.group_version.version.clone(),
            &*self.kind,
        )
    }

    /// The subresource named `name`, if this resource has it.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|sub| sub.name == name)
    }

    /// The stored form of a served object; an object of another type than this version's
    /// is refused (see [`crate::type_meta`]).
    pub fn stored_form(&self, mut object: Value) -> Result<Value, ApiError> {
        self.check_type(&self.group_version, &mut object)?;
        match &self.converter {
            Some(converter) => converter.stored_form(object),
            None => Ok(object),
        }
    }

    /// Checks that `object` is this resource's kind in `group_version` (the served version,
    /// or the storage version for a stored object), as [`crate::type_meta::check`] does.
    pub fn check_type(
        &self,
        group_version: &GroupVersion,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        crate::type_meta::check(group_version, &self.kind, self.capabilities.typed, object)
    }

    /// The served form of a stored object.
    pub fn served_form(&self, object: Value) -> Result<Value, ApiError> {
        match &self.converter {
            Some(converter) => converter.served_form(object),
            None => Ok(object),
        }
    }

    /// The served forms of the stored objects of a list.
    pub fn served_forms(&self, objects: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        match &self.converter {
            Some(converter) => converter.served_forms(objects),
            None => Ok(objects),
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
