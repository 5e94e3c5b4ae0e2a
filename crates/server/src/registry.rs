//! The generic registry: kube-apiserver's `genericregistry.Store` for every resource.
//!
//! It turns REST semantics into storage calls for one stored collection: object metadata
//! filled on create (uid, creationTimestamp, generateName), optimistic concurrency on update
//! (resourceVersion preconditions, a retry loop for unconditional updates and patches),
//! graceful deletion with finalizers, and reads served from the watch cache or from storage
//! according to the request's resourceVersion semantics. Per-type behaviour comes from the
//! resource's [`Strategy`](crate::resource::Strategy). Objects here are in the stored version.
//!
//! The delete path (preconditions, graceful deletion, finalizers, propagation policy) is in
//! `delete`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use kapi_apimachinery::fields::Selector as FieldSelector;
use kapi_apimachinery::labels::Selector as LabelSelector;
use kapi_apimachinery::meta;
use kapi_apimachinery::schema::{GroupResource, GroupVersion};
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{validate_object_meta, validate_object_meta_update};
use kapi_storage::{KeyValue, ListOptions, Revision, StorageError, Store, encode_continue};
use serde_json::Value;

use crate::admission::{Operation, WriteAdmission};
use crate::cacher::{CacheError, CachedObject, Cacher};
use crate::codec;
use crate::endpoints::SchemaProvider;
use crate::object;
use crate::resource::{ResourceDefinition, StorageDefinition, SubresourceKind};
use crate::write_steps::{self, WriteSteps};

mod delete;

use delete::should_delete_during_update;
pub use delete::{DeleteOutcome, DeleteParams};

/// How long a read waits for the watch cache to reach a requested revision.
const CACHE_WAIT: Duration = Duration::from_secs(3);
/// How many names a create with `generateName` tries before giving up.
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// The message of a conflict on a stale resourceVersion, as upstream words it.
const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// A stored object as read: its stored bytes and resourceVersion.
#[derive(Clone, Debug)]
pub struct Item {
    pub stored: Bytes,
    pub revision: Revision,
    /// The watch cache's object, when it was read from the cache: what it remembers of its
    /// encodings (see [`crate::cacher::Encodings`]).
    pub cached: Option<Arc<CachedObject>>,
}

impl Item {
    /// The object, decoded, with its resourceVersion.
    pub fn decode(&self) -> Result<Value, ApiError> {
        codec::decode(&self.stored, self.revision).map_err(ApiError::internal)
    }

    /// Only the top-level `fields` of the object and the `metadata` fields `metadata`
    /// ([`codec::decode_parts`]; no resourceVersion), for readers of a few fields of many
    /// objects.
    pub fn decode_parts(&self, fields: &[&str], metadata: &[&str]) -> Result<Value, ApiError> {
        codec::decode_parts(&self.stored, fields, metadata).map_err(ApiError::internal)
    }
}

impl From<&CachedObject> for Item {
    fn from(object: &CachedObject) -> Self {
        Item {
            stored: object.stored.clone(),
            revision: object.revision,
            cached: None,
        }
    }
}

impl From<&Arc<CachedObject>> for Item {
    /// The item with the cache's object kept, for its memo.
    fn from(object: &Arc<CachedObject>) -> Self {
        Item {
            stored: object.stored.clone(),
            revision: object.revision,
            cached: Some(object.clone()),
        }
    }
}

impl From<KeyValue> for Item {
    fn from(kv: KeyValue) -> Self {
        Item {
            stored: kv.value,
            revision: kv.mod_revision,
            cached: None,
        }
    }
}

/// The `resourceVersion` and `resourceVersionMatch` of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ReadVersion {
    /// Unset: the most recent state (a consistent read).
    #[default]
    MostRecent,
    /// "0": any state the server has.
    Any,
    /// "N" (or NotOlderThan N): a state at least as new as N.
    NotOlderThan(Revision),
    /// Exact N: the state at N.
    Exact(Revision),
}

/// What a LIST asks for.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    pub namespace: Option<String>,
    pub labels: Option<LabelSelector>,
    pub fields: Option<FieldSelector>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub version: ReadVersion,
}

impl ListParams {
    fn filters(&self) -> bool {
        self.labels.as_ref().is_some_and(|s| !s.is_empty())
            || self.fields.as_ref().is_some_and(|s| !s.is_empty())
    }

    /// Whether `object` passes the label and field selectors.
    pub fn matches(&self, object: &CachedObject) -> bool {
        self.labels
            .as_ref()
            .is_none_or(|selector| selector.matches(&object.labels))
            && self
                .fields
                .as_ref()
                .is_none_or(|selector| selector.matches(|field| object.field(field)))
    }
}

/// One page of a LIST.
#[derive(Debug)]
pub struct ListResult {
    pub items: Vec<Item>,
    pub revision: Revision,
    pub continue_token: Option<String>,
    /// Set only for unfiltered, paginated lists, as upstream's remainingItemCount.
    pub remaining: Option<u64>,
}

/// The field manager of kube-apiserver's own writes (its loopback client's user agent):
/// bootstrap objects, the CRD and system controllers.
pub const KUBE_APISERVER: &str = "kube-apiserver";

/// The field manager of the writes of the controllers kapi runs in process on
/// kube-controller-manager's behalf (service account tokens, namespace objects, protection
/// finalizers).
pub const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// How a create or update is written.
#[derive(Clone, Copy, Default)]
pub struct Write<'a> {
    /// The subresource written through, if any (updates only).
    pub subresource: Option<&'a SubresourceKind>,
    pub dry_run: bool,
    /// The request's admission, run within the write; none for the server's own writes.
    pub admission: Option<&'a dyn WriteAdmission>,
    /// For the server's own writes, the manager recorded in managedFields, as the handlers
    /// record a client's write (whose managedFields the handlers compute themselves).
    pub manager: Option<&'a str>,
}

impl Write<'_> {
    /// A plain write of the server's own (no subresource, no admission).
    pub fn plain(dry_run: bool) -> Write<'static> {
        Write {
            dry_run,
            ..Write::default()
        }
    }

    /// A write of the server's own recorded in managedFields as `manager`'s.
    pub fn own(manager: &str) -> Write<'_> {
        Write {
            manager: Some(manager),
            ..Write::default()
        }
    }
}

/// Records a write of the server's own in `new`'s managedFields (over `old`; `None` for a
/// create), with the stored kind's schema from `schemas`, in the stored version (the server
/// writes its objects in it); `new` is defaulted first, as a decoded request body is.
fn record_own_write(
    schemas: Option<&dyn SchemaProvider>,
    definition: &ResourceDefinition,
    write: &Write<'_>,
    old: Option<&Value>,
    new: &mut Value,
) {
    let Some(manager) = write.manager else {
        return;
    };
    let subresource = match write.subresource {
        None => "",
        Some(SubresourceKind::Status) => "status",
        Some(_) => return,
    };
    // As the server's loopback client's request would be: defaulted when decoded, then
    // recorded.
    definition.strategy.default(new);
    let gvk = &definition.storage.storage_version;
    let kind = schemas.and_then(|schemas| schemas.kind_schema(&gvk.group, &gvk.version, &gvk.kind));
    let typed = kind.as_ref().is_some_and(|kind| kind.is_typed());
    let fields = kapi_fieldmanager::FieldManager::new(
        kind.as_ref().map(|kind| kind.schema()),
        &gvk.group_version().api_version(),
        &gvk.kind,
        subresource,
    );
    let fields = if typed { fields.typed() } else { fields };
    fields.update(old, new, manager, &meta::now_rfc3339());
}

/// The registry of one stored collection.
pub struct Registry {
    pub storage: Arc<StorageDefinition>,
    store: Arc<dyn Store>,
    cacher: Arc<Cacher>,
    /// The collection's key prefix, ending in `/`.
    prefix: String,
    /// Steps around writes, for objects holding claims outside themselves (services).
    write_steps: OnceLock<Arc<dyn WriteSteps>>,
    /// The server's schemas, for the managed fields of its own writes.
    schemas: Option<Arc<dyn SchemaProvider>>,
}

impl Registry {
    /// The registry of `storage` under the key prefix `storage_prefix` (e.g. `/registry`);
    /// `schemas` type the managed fields of the server's own writes.
    pub fn new(
        storage: Arc<StorageDefinition>,
        store: Arc<dyn Store>,
        storage_prefix: &str,
        strategy: Arc<dyn crate::resource::Strategy>,
        schemas: Option<Arc<dyn SchemaProvider>>,
    ) -> Registry {
        let prefix = format!(
            "{}/{}/",
            storage_prefix.trim_end_matches('/'),
            storage.key_prefix
        );
        let cacher = Cacher::start(store.clone(), prefix.clone(), strategy);
        Registry {
            storage,
            store,
            cacher,
            prefix,
            write_steps: OnceLock::new(),
            schemas,
        }
    }

    fn schemas(&self) -> Option<&dyn SchemaProvider> {
        self.schemas.as_deref()
    }

    /// Sets the collection's write steps, once, before serving; false if set already.
    pub fn set_write_steps(&self, steps: Arc<dyn WriteSteps>) -> bool {
        self.write_steps.set(steps).is_ok()
    }

    pub fn cacher(&self) -> &Arc<Cacher> {
        &self.cacher
    }

    /// The storage key of an object.
    pub fn key(&self, namespace: &str, name: &str) -> String {
        if self.storage.namespaced {
            format!("{}{namespace}/{name}", self.prefix)
        } else {
            format!("{}{name}", self.prefix)
        }
    }

    /// The key prefix of a namespace's objects, or of all of them.
    pub fn collection_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(namespace) if self.storage.namespaced => format!("{}{namespace}/", self.prefix),
            _ => self.prefix.clone(),
        }
    }

    /// GET: the object at the requested version.
    pub async fn get(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
        version: &ReadVersion,
    ) -> Result<Item, ApiError> {
        let key = self.key(namespace, name);
        let found = match version {
            ReadVersion::MostRecent | ReadVersion::Exact(_) => {
                let revision = match version {
                    ReadVersion::Exact(revision) => Some(*revision),
                    _ => None,
                };
                let read = self.store.get(&key, revision).await;
                read.map_err(|err| storage_error(err, resource, name))?
                    .kv
                    .map(Item::from)
            }
            ReadVersion::Any => self.cacher.get(&key).0.as_ref().map(Item::from),
            ReadVersion::NotOlderThan(revision) => {
                self.cacher
                    .wait_for(*revision, CACHE_WAIT)
                    .await
                    .map_err(|err| cache_error(err, resource, name))?;
                self.cacher.get(&key).0.as_ref().map(Item::from)
            }
        };
        found.ok_or_else(|| ApiError::not_found(resource, name))
    }

    /// LIST: the matching objects, from the cache or from storage as the version and
    /// pagination require.
    pub async fn list(
        &self,
        resource: &GroupResource,
        params: &ListParams,
    ) -> Result<ListResult, ApiError> {
        let paginated = params.limit.is_some_and(|limit| limit > 0);
        let from_cache = params.continue_token.is_none()
            && match params.version {
                ReadVersion::Any => true,
                ReadVersion::MostRecent | ReadVersion::NotOlderThan(_) => !paginated,
                ReadVersion::Exact(_) => false,
            };
        if from_cache {
            self.list_from_cache(resource, params).await
        } else {
            self.list_from_storage(resource, params).await
        }
    }

    async fn list_from_cache(
        &self,
        resource: &GroupResource,
        params: &ListParams,
    ) -> Result<ListResult, ApiError> {
        let waited = match params.version {
            ReadVersion::MostRecent => self.cacher.wait_fresh(CACHE_WAIT).await.map(drop),
            ReadVersion::NotOlderThan(revision) => self.cacher.wait_for(revision, CACHE_WAIT).await,
            _ => Ok(()),
        };
        if let Err(err) = waited {
            // A consistent read that the cache cannot serve in time goes to storage.
            if params.version == ReadVersion::MostRecent {
                return self.list_from_storage(resource, params).await;
            }
            return Err(cache_error(err, resource, ""));
        }
        let prefix = self.collection_prefix(params.namespace.as_deref());
        let snapshot = self.cacher.list(&prefix, |object| params.matches(object));
        Ok(ListResult {
            items: snapshot.objects.iter().map(Item::from).collect(),
            revision: snapshot.revision,
            continue_token: None,
            remaining: None,
        })
    }

    /// Lists pages from storage, all at one revision, filtering until `limit` items matched.
    async fn list_from_storage(
        &self,
        resource: &GroupResource,
        params: &ListParams,
    ) -> Result<ListResult, ApiError> {
        let prefix = self.collection_prefix(params.namespace.as_deref());
        let limit = params.limit.filter(|&limit| limit > 0);
        let mut options = ListOptions {
            revision: match params.version {
                ReadVersion::Exact(revision) | ReadVersion::NotOlderThan(revision)
                    if params.continue_token.is_none() && revision > 0 =>
                {
                    Some(revision)
                }
                _ => None,
            },
            limit,
            continue_token: params.continue_token.clone(),
        };
        let filters = params.filters();
        let mut result = ListResult {
            items: Vec::new(),
            revision: 0,
            continue_token: None,
            remaining: None,
        };
        loop {
            let page = self.store.list(&prefix, &options).await.map_err(|err| {
                list_storage_error(err, resource, params.continue_token.as_deref())
            })?;
            result.revision = page.revision;
            let more = page.continue_token.is_some();
            let count = page.kvs.len();
            for (index, kv) in page.kvs.into_iter().enumerate() {
                if filters && !params.matches(&self.cacher.cache_object(&kv)) {
                    continue;
                }
                let key = kv.key.clone();
                result.items.push(Item::from(kv));
                if limit == Some(result.items.len()) && (index + 1 < count || more) {
                    result.continue_token =
                        Some(encode_continue(&prefix, &format!("{key}\0"), page.revision));
                    result.remaining =
                        (!filters).then_some(page.remaining + (count - index - 1) as u64);
                    return Ok(result);
                }
            }
            match page.continue_token {
                Some(token) if limit.is_some() => {
                    options = ListOptions {
                        revision: None,
                        limit,
                        continue_token: Some(token),
                    }
                }
                _ => return Ok(result),
            }
        }
    }

    /// CREATE: admits (mutating), fills system metadata, validates, admits (validating) and
    /// stores a new object.
    pub async fn create(
        &self,
        definition: &ResourceDefinition,
        namespace: &str,
        mut object: Value,
        write: Write<'_>,
    ) -> Result<Value, ApiError> {
        let dry_run = write.dry_run;
        // As upstream's handlers: admission sees the object in the request's namespace.
        check_namespace(definition, namespace, &mut object)?;
        record_own_write(self.schemas(), definition, &write, None, &mut object);
        if let Some(admission) = write.admission {
            admission
                .mutate(Operation::Create, &mut object, None)
                .await?;
            check_stored_type(definition, &mut object)?;
        }
        // Only a name generated here is generated again when taken; a name the client gave
        // stays, generateName or not (upstream answers 409 then).
        let name_generated = object::name(&object).is_empty();
        before_create(definition, namespace, &mut object)?;
        let reservation = match self.write_steps.get() {
            Some(steps) => Some(steps.begin_create(&mut object, dry_run).await?),
            None => None,
        };
        let mut created = validate_create(definition, &object);
        if let (Ok(()), Some(admission)) = (&created, write.admission) {
            created = admission
                .validate(Operation::Create, Some(&object), None)
                .await;
        }
        let created = match created {
            Ok(()) => {
                self.store_new(definition, namespace, object, dry_run, name_generated)
                    .await
            }
            Err(err) => Err(err),
        };
        write_steps::settle(reservation, created.is_ok() && !dry_run).await;
        created
    }

    /// Stores a prepared new object (a dry run only checks that its name is free); a name
    /// that was `generated` from generateName is generated again while taken.
    async fn store_new(
        &self,
        definition: &ResourceDefinition,
        namespace: &str,
        mut object: Value,
        dry_run: bool,
        generated: bool,
    ) -> Result<Value, ApiError> {
        let resource = definition.group_resource();
        if dry_run {
            // A dry run still fails where the write would (upstream's dry-run storage).
            let name = object::name(&object);
            let key = self.key(namespace, name);
            let existing = self.store.get(&key, None).await;
            if existing
                .map_err(|err| storage_error(err, &resource, name))?
                .kv
                .is_some()
            {
                return Err(self.already_exists(&resource, &key, name).await);
            }
            return Ok(object);
        }
        let generate_name = object::meta_str(&object, "generateName").to_string();
        let regenerate = generated && !generate_name.is_empty();
        for attempt in 0..GENERATE_NAME_ATTEMPTS {
            if attempt > 0 {
                let name = meta::generate_name(&generate_name);
                object::set_meta(&mut object, "name", Value::String(name));
            }
            let name = object::name(&object).to_string();
            let key = self.key(namespace, &name);
            match (self.store)
                .create_expiring(&key, codec::encode(&object), self.storage.ttl)
                .await
            {
                Ok(revision) => {
                    codec::set_resource_version(&mut object, revision);
                    return Ok(object);
                }
                Err(StorageError::KeyExists { .. }) if regenerate => continue,
                Err(StorageError::KeyExists { .. }) => {
                    return Err(self.already_exists(&resource, &key, &name).await);
                }
                Err(err) => return Err(storage_error(err, &resource, &name)),
            }
        }
        Err(ApiError::already_exists(&resource, object::name(&object)))
    }

    /// The 409 of a create whose name is taken, saying so when the object there is being
    /// deleted (upstream's store reads it back to tell).
    async fn already_exists(&self, resource: &GroupResource, key: &str, name: &str) -> ApiError {
        let err = ApiError::already_exists(resource, name);
        let existing = self.store.get(key, None).await.ok().and_then(|got| got.kv);
        let deleting = existing
            .and_then(|kv| codec::decode(&kv.value, kv.mod_revision).ok())
            .is_some_and(|object| object::is_deleting(&object));
        if !deleting {
            return err;
        }
        let mut status = err.into_status();
        status.message = format!("object is being deleted: {}", status.message);
        ApiError::from(status)
    }

    /// UPDATE (and PATCH): `change` computes the new object from the current one (`None` if
    /// it does not exist); the result is written with a compare-and-swap, retried with the
    /// newer object while the caller gave no resourceVersion precondition. Returns the
    /// object and whether it was created.
    pub async fn update(
        &self,
        definition: &ResourceDefinition,
        namespace: &str,
        name: &str,
        write: Write<'_>,
        mut change: impl FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<(Value, bool), ApiError> {
        let resource = definition.group_resource();
        let key = self.key(namespace, name);
        loop {
            let current = self
                .store
                .get(&key, None)
                .await
                .map_err(|err| storage_error(err, &resource, name))?
                .kv;
            let Some(current) = current else {
                if !definition.strategy.allow_create_on_update() {
                    return Err(ApiError::not_found(&resource, name));
                }
                let object = change(None)?;
                if !object::resource_version(&object).is_empty() {
                    return Err(ApiError::not_found(&resource, name));
                }
                match self.create(definition, namespace, object, write).await {
                    Err(err) if err.code() == 409 => continue,
                    created => return created.map(|object| (object, true)),
                };
            };
            let old = Item::from(current.clone()).decode()?;
            let mut new = change(Some(&old))?;
            check_namespace(definition, namespace, &mut new)?;
            record_own_write(self.schemas(), definition, &write, Some(&old), &mut new);
            if let Some(admission) = write.admission {
                admission
                    .mutate(Operation::Update, &mut new, Some(&old))
                    .await?;
                check_stored_type(definition, &mut new)?;
            }
            check_update_precondition(definition, &new, &old, &resource, name)?;
            if object::resource_version(&new).is_empty() {
                // An unconditional update writes over the version it read.
                let version = Value::String(object::resource_version(&old).to_string());
                object::set_meta(&mut new, "resourceVersion", version);
            }
            before_update(definition, namespace, write.subresource, &mut new, &old)?;
            let reservation = match (self.write_steps.get(), write.subresource) {
                (Some(steps), None) => {
                    Some(steps.begin_update(&mut new, &old, write.dry_run).await?)
                }
                _ => None,
            };
            let mut valid = validate_update(definition, write.subresource, &new, &old);
            if let (Ok(()), Some(admission)) = (&valid, write.admission) {
                valid = admission
                    .validate(Operation::Update, Some(&new), Some(&old))
                    .await;
            }
            if let Err(err) = valid {
                write_steps::settle(reservation, false).await;
                return Err(err);
            }
            let written = self
                .store_update(definition, &key, &current, new, write)
                .await;
            let stored = matches!(written, Ok(Some(_))) && !write.dry_run;
            write_steps::settle(reservation, stored).await;
            match written {
                Ok(Some(new)) => return Ok((new, false)),
                Ok(None) => continue,
                Err(err) => return Err(storage_error(err, &resource, name)),
            }
        }
    }

    /// Writes an updated object over `current` (deleting it when nothing keeps a deleted
    /// object any more); `None` when `current` changed meanwhile and the update must retry.
    async fn store_update(
        &self,
        definition: &ResourceDefinition,
        key: &str,
        current: &KeyValue,
        mut new: Value,
        write: Write<'_>,
    ) -> Result<Option<Value>, StorageError> {
        if should_delete_during_update(definition, &new) {
            return match self
                .delete_now(key, current.mod_revision, write.dry_run)
                .await
            {
                Err(StorageError::Conflict { .. }) => Ok(None),
                Err(err) => Err(err),
                Ok(_) => {
                    if let Some(steps) = self.write_steps.get().filter(|_| !write.dry_run) {
                        steps.after_delete(&new).await;
                    }
                    Ok(Some(new))
                }
            };
        }
        let encoded = codec::encode(&new);
        // An unchanged object is not written again, unless its stored value is encrypted
        // with an older key (then the write re-encrypts it, as upstream's stale values).
        let unchanged = encoded == current.value && !self.store.is_stale(current).await?;
        if unchanged || write.dry_run {
            codec::set_resource_version(&mut new, current.mod_revision);
            return Ok(Some(new));
        }
        match (self.store)
            .update_expiring(key, encoded, current.mod_revision, self.storage.ttl)
            .await
        {
            Ok(revision) => {
                codec::set_resource_version(&mut new, revision);
                Ok(Some(new))
            }
            Err(StorageError::Conflict { .. }) | Err(StorageError::KeyNotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// Rejects an update whose resourceVersion precondition does not hold, or that has none
/// where the resource requires one.
fn check_update_precondition(
    definition: &ResourceDefinition,
    new: &Value,
    old: &Value,
    resource: &GroupResource,
    name: &str,
) -> Result<(), ApiError> {
    let wanted = object::resource_version(new);
    if wanted.is_empty() {
        if definition.strategy.allow_unconditional_update() {
            return Ok(());
        }
        let mut errors = FieldErrors::default();
        errors.push(FieldError::invalid(
            &Path::root("metadata").child("resourceVersion"),
            Value::from(0),
            "must be specified for an update",
        ));
        return Err(ApiError::invalid(
            &definition.group_version_kind().group_kind(),
            name,
            &errors,
        ));
    }
    if wanted != object::resource_version(old) {
        return Err(ApiError::conflict(resource, name, MODIFIED));
    }
    Ok(())
}

/// Refuses an object that mutating admission turned into another type than the stored one
/// (a webhook's patch of `kind`, say); see [`crate::type_meta`].
fn check_stored_type(definition: &ResourceDefinition, object: &mut Value) -> Result<(), ApiError> {
    let stored = &definition.storage.storage_version;
    let group_version = GroupVersion::new(stored.group.clone(), stored.version.clone());
    definition.check_type(&group_version, object)
}

/// kube-apiserver's rest.BeforeCreate up to validation: namespace, system fields, strategy.
fn before_create(
    definition: &ResourceDefinition,
    namespace: &str,
    object: &mut Value,
) -> Result<(), ApiError> {
    check_namespace(definition, namespace, object)?;
    for field in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
    ] {
        object::remove_meta(object, field);
    }
    let generate_name = object::meta_str(object, "generateName");
    if object::name(object).is_empty() && !generate_name.is_empty() {
        let name = meta::generate_name(generate_name);
        object::set_meta(object, "name", Value::String(name));
    }
    object::set_meta(object, "uid", Value::String(meta::new_uid()));
    object::set_meta(
        object,
        "creationTimestamp",
        Value::String(meta::now_rfc3339()),
    );
    definition.strategy.prepare_for_create(object);
    Ok(())
}

/// The validation of rest.BeforeCreate (after the write steps filled what they assign).
fn validate_create(definition: &ResourceDefinition, object: &Value) -> Result<(), ApiError> {
    let mut errors = validate_object_meta(
        &object["metadata"],
        definition.namespaced,
        definition.strategy.name_validator(),
        &Path::root("metadata"),
    );
    errors.extend(definition.strategy.validate(object));
    invalid_if_any(definition, object, errors)
}

/// kube-apiserver's rest.BeforeUpdate up to validation: namespace, carried-over system
/// fields, strategy. A subresource write has already taken only its part of the object; the main
/// strategy's preparation (which keeps such parts unchanged) is not applied to it.
fn before_update(
    definition: &ResourceDefinition,
    namespace: &str,
    subresource: Option<&SubresourceKind>,
    new: &mut Value,
    old: &Value,
) -> Result<(), ApiError> {
    check_namespace(definition, namespace, new)?;
    let carried = [
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ];
    for field in carried {
        match old["metadata"].get(field) {
            Some(value) if !value.is_null() => object::set_meta(new, field, value.clone()),
            _ => object::remove_meta(new, field),
        }
    }
    if object::uid(new).is_empty() {
        object::set_meta(new, "uid", Value::String(object::uid(old).to_string()));
    }
    if subresource.is_none() {
        definition.strategy.prepare_for_update(new, old);
    }
    Ok(())
}

/// The validation of rest.BeforeUpdate (after the write steps filled what they assign).
fn validate_update(
    definition: &ResourceDefinition,
    subresource: Option<&SubresourceKind>,
    new: &Value,
    old: &Value,
) -> Result<(), ApiError> {
    let mut errors =
        validate_object_meta_update(&new["metadata"], &old["metadata"], &Path::root("metadata"));
    errors.extend(validate_object_meta(
        &new["metadata"],
        definition.namespaced,
        definition.strategy.name_validator(),
        &Path::root("metadata"),
    ));
    errors.extend(match subresource {
        None => definition.strategy.validate_update(new, old),
        Some(kind) => definition
            .strategy
            .validate_subresource_update(kind, new, old),
    });
    invalid_if_any(definition, new, errors)
}

/// Sets the object's namespace from the request's, rejecting a different one; clears it for
/// cluster-scoped resources.
pub(crate) fn check_namespace(
    definition: &ResourceDefinition,
    namespace: &str,
    object: &mut Value,
) -> Result<(), ApiError> {
    if !definition.namespaced {
        object::remove_meta(object, "namespace");
        return Ok(());
    }
    match object::namespace(object) {
        "" => object::set_meta(object, "namespace", Value::String(namespace.to_string())),
        ns if ns == namespace => {}
        _ => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    Ok(())
}

fn invalid_if_any(
    definition: &ResourceDefinition,
    object: &Value,
    errors: FieldErrors,
) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let kind = definition.group_version_kind().group_kind();
    Err(ApiError::invalid(&kind, object::name(object), &errors))
}

/// Maps a storage error of a single-object request to its API error, as upstream's
/// storage.Interpret*Error do.
pub fn storage_error(err: StorageError, resource: &GroupResource, name: &str) -> ApiError {
    match err {
        StorageError::KeyNotFound { .. } => ApiError::not_found(resource, name),
        StorageError::KeyExists { .. } => ApiError::already_exists(resource, name),
        StorageError::Conflict { .. } => ApiError::conflict(resource, name, MODIFIED),
        StorageError::Compacted { .. } => {
            ApiError::resource_expired("The resourceVersion for the provided get is too old.")
        }
        StorageError::FutureRevision { requested, current } => {
            ApiError::too_large_resource_version(requested as u64, current as u64, 0)
        }
        other => ApiError::internal(other),
    }
}

/// Maps a storage error of a LIST (`continued`: the continue token it was given) to its API
/// error. A token that outlived compaction gets upstream's 410 with a token that continues
/// from the same key at the latest revision.
fn list_storage_error(
    err: StorageError,
    resource: &GroupResource,
    continued: Option<&str>,
) -> ApiError {
    match (err, continued) {
        (StorageError::Compacted { .. }, Some(token)) => expired_continue(token),
        (StorageError::Compacted { .. }, None) => {
            ApiError::resource_expired("The resourceVersion for the provided list is too old.")
        }
        (StorageError::InvalidContinue(why), _) => ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        )),
        (other, _) => storage_error(other, resource, ""),
    }
}

/// The 410 of a continue token whose revision was compacted, carrying the token of an
/// inconsistent continuation (same start key, latest revision), as upstream's
/// handleCompactedErrorForPaging.
fn expired_continue(token: &str) -> ApiError {
    const EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter";
    let Ok((_, start)) = kapi_storage::decode_continue("", token) else {
        return ApiError::resource_expired(format!("{EXPIRED}."));
    };
    let mut status = ApiError::resource_expired(format!(
        "{EXPIRED}, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
    ))
    .into_status();
    status.metadata.continue_ =
        kapi_storage::encode_continue("", &start, kapi_storage::LATEST_REVISION);
    ApiError::from(status)
}

/// Maps a watch cache error to its API error.
pub fn cache_error(err: CacheError, resource: &GroupResource, name: &str) -> ApiError {
    match err {
        CacheError::TooOld { requested, oldest } => {
            ApiError::resource_expired(format!("too old resource version: {requested} ({oldest})"))
        }
        CacheError::TooLarge { requested, current } => {
            ApiError::too_large_resource_version(requested as u64, current as u64, 1)
        }
        CacheError::Unordered => ApiError::internal(err),
        CacheError::Storage(err) => storage_error(err, resource, name),
    }
}
