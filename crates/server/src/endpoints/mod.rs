//! The REST endpoints: one generic set of handlers for every resource, dispatched on the
//! request's [`RequestInfo`] and driven by the resource's [`ResourceDefinition`], plus the
//! discovery and OpenAPI documents computed from the same definitions.

mod decode;
mod decoded_type;
mod handlers;
mod list_body;
pub(crate) mod negotiation;
mod params;
mod render;
mod subresource;
mod watch;
mod yaml_strict;

#[cfg(test)]
mod tests;

use kapi_schema::KindSchema;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderValue, Request, Response, StatusCode, header};
use kapi_apimachinery::request_info::{RequestInfo, RequestInfoFactory};
use kapi_apimachinery::schema::GroupVersionKind;
use kapi_apimachinery::status::ApiError;
use kapi_storage::Store;

use crate::admission::AdmissionPlugin;
use crate::body::{Body, BoxError};
use crate::discovery;
use crate::openapi;
use crate::registry::Registry;
use crate::resource::{Name, ResourceDefinition};
use crate::storage_codec::{StorageCodec, StorageMediaType};
use kapi_encryption::EncryptionConfig;

pub use decode::{ProtobufError, SchemaProvider, decode_table_protobuf, table_serves_protobuf};
pub use render::NAME_DESCRIPTION;

/// The 503 of a request made before every known path was installed, as upstream words it.
const PATHS_NOT_INSTALLED: &str =
    "the request has been made before all known HTTP paths have been installed, please try again";

/// The largest request body accepted, as kube-apiserver's 3 MiB.
const MAX_BODY: usize = 3 * 1024 * 1024;

/// A served resource: its definition and the registry of its stored collection.
#[derive(Clone)]
pub struct Served {
    pub definition: Arc<ResourceDefinition>,
    pub registry: Arc<Registry>,
}

impl Served {
    /// The object `namespace`/`name` ("" for a cluster-scoped one) of the watch cache, decoded.
    pub fn cached(&self, namespace: &str, name: &str) -> Option<serde_json::Value> {
        let (object, _) = self
            .registry
            .cacher()
            .get(&self.registry.key(namespace, name));
        object.and_then(|object| crate::registry::Item::from(&*object).decode().ok())
    }

    /// Replaces the status of the object `namespace`/`name` through its status subresource,
    /// as a controller of the server's writes it (recorded in managedFields as `manager`'s).
    pub async fn write_status(
        &self,
        namespace: &str,
        name: &str,
        status: serde_json::Value,
        manager: &str,
    ) -> Result<(), ApiError> {
        let definition = &self.definition;
        let write = crate::registry::Write {
            subresource: Some(&crate::resource::SubresourceKind::Status),
            dry_run: false,
            admission: None,
            manager: Some(manager),
        };
        let change = |current: Option<&serde_json::Value>| {
            let current =
                current.ok_or_else(|| ApiError::not_found(&definition.group_resource(), name))?;
            let mut next = current.clone();
            next["status"] = status.clone();
            Ok(next)
        };
        let written = self
            .registry
            .update(definition, namespace, name, write, change);
        written.await.map(drop)
    }

    /// The objects of the watch cache in `namespace`, or all of them, decoded.
    pub fn cached_list(&self, namespace: Option<&str>) -> Vec<serde_json::Value> {
        self.cached_items(namespace, |item| item.decode())
    }

    /// The objects of the watch cache (all namespaces), each decoded only in its top-level
    /// `fields` and its `metadata` fields `metadata` ([`crate::registry::Item::decode_parts`]),
    /// for controllers that read a few fields of every object on every change.
    pub fn cached_list_parts(&self, fields: &[&str], metadata: &[&str]) -> Vec<serde_json::Value> {
        self.cached_items(None, |item| item.decode_parts(fields, metadata))
    }

    /// The objects of the watch cache in `namespace`, or all of them, decoded by `decode`
    /// (those it fails on left out).
    fn cached_items(
        &self,
        namespace: Option<&str>,
        decode: impl Fn(&crate::registry::Item) -> Result<serde_json::Value, ApiError>,
    ) -> Vec<serde_json::Value> {
        let prefix = self.registry.collection_prefix(namespace);
        let list = self.registry.cacher().list(&prefix, |_| true);
        let items = list.objects.iter();
        items
            .filter_map(|object| decode(&crate::registry::Item::from(&**object)).ok())
            .collect()
    }
}

/// Builds an [`ApiHandler`].
pub struct ApiHandlerBuilder {
    store: Arc<dyn Store>,
    storage_prefix: String,
    definitions: Vec<ResourceDefinition>,
    server_address: String,
    bookmark_interval: Duration,
    services: http::Extensions,
    schemas: Option<Arc<dyn SchemaProvider>>,
    delegate: Option<ApiHandler>,
    synced: Option<tokio::sync::watch::Receiver<bool>>,
    media_type: StorageMediaType,
    json_groups: Vec<String>,
    encryption: Option<Arc<EncryptionConfig>>,
}

impl ApiHandlerBuilder {
    /// Encrypts the values of the resources `config` names (`--encryption-provider-config`).
    pub fn encryption(mut self, config: Option<Arc<EncryptionConfig>>) -> Self {
        self.encryption = config;
        self
    }

    /// How objects are written (`--storage-media-type`; JSON unless set), but for the groups
    /// of `json_groups`, always JSON (upstream's APIServices: the aggregator's codec is
    /// JSON whatever the flag). Custom resources are JSON whatever this says, as upstream.
    pub fn storage_media_type(
        mut self,
        media_type: StorageMediaType,
        json_groups: &[&str],
    ) -> Self {
        self.media_type = media_type;
        self.json_groups = json_groups.iter().map(|g| g.to_string()).collect();
        self
    }

    /// The next server of the delegation chain: requests for paths this handler does not
    /// serve go to it (instead of the 404 at the end of the chain), and the discovery and
    /// OpenAPI documents served here include what it serves.
    pub fn delegate(mut self, delegate: ApiHandler) -> Self {
        self.delegate = Some(delegate);
        self
    }

    /// Resource requests this handler does not serve answer 503 until `synced` turns true
    /// (the apiextensions server until its CRD informer has synced: never a false 404).
    pub fn unserved_unavailable_until(
        mut self,
        synced: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        self.synced = Some(synced);
        self
    }

    /// The schemas of the served kinds: request bodies are decoded against them (unknown
    /// fields, `fieldValidation`), strategic merge patches follow their patch metadata and
    /// the OpenAPI documents carry them.
    pub fn schemas(mut self, schemas: Arc<dyn SchemaProvider>) -> Self {
        self.schemas = Some(schemas);
        self
    }

    /// Shares `service` with the hooks of the resources (e.g. the service-account token
    /// issuer), which find it by its type.
    pub fn service<T: Clone + Send + Sync + 'static>(mut self, service: T) -> Self {
        self.services.insert(service);
        self
    }

    /// Serves `definitions` (in addition to those already added).
    pub fn resources(mut self, definitions: impl IntoIterator<Item = ResourceDefinition>) -> Self {
        self.definitions.extend(definitions);
        self
    }

    /// The address `/api` advertises (`host:port`).
    pub fn server_address(mut self, address: impl Into<String>) -> Self {
        self.server_address = address.into();
        self
    }

    /// How often watches that allow bookmarks get one (upstream: about a minute).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Creates the registries and their watch caches (which start filling at once).
    pub fn build(self) -> ApiHandler {
        let storage = StorageFactory {
            store: self.store,
            prefix: self.storage_prefix,
            schemas: self.schemas.clone(),
            media_type: self.media_type,
            json_groups: self.json_groups,
            encryption: self.encryption,
        };
        let definitions: Vec<Arc<ResourceDefinition>> =
            self.definitions.into_iter().map(Arc::new).collect();
        let served = storage.serve(&definitions);
        let resources = Resources {
            served,
            definitions,
            installed: HashMap::new(),
        };
        ApiHandler(Arc::new(Apis {
            resources: parking_lot::RwLock::new(Arc::new(resources)),
            storage,
            generation: std::sync::atomic::AtomicU64::new(0),
            openapi: parking_lot::Mutex::new((0, Arc::default())),
            admission: std::sync::OnceLock::new(),
            server_address: self.server_address,
            bookmark_interval: self.bookmark_interval,
            request_info: RequestInfoFactory::default(),
            services: self.services,
            schemas: self.schemas,
            delegate: self.delegate,
            synced: self.synced,
        }))
    }
}

/// Creates the registries (and their watch caches) of served definitions.
struct StorageFactory {
    store: Arc<dyn Store>,
    prefix: String,
    schemas: Option<Arc<dyn SchemaProvider>>,
    media_type: StorageMediaType,
    /// Groups stored as JSON whatever `media_type` says.
    json_groups: Vec<String>,
    /// Encryption at rest of the resources it names.
    encryption: Option<Arc<EncryptionConfig>>,
}

impl StorageFactory {
    /// The store of `definition`'s collection: values in the form its kind is stored in,
    /// read from any form.
    fn codec(
        &self,
        definition: &ResourceDefinition,
        definitions: &[Arc<ResourceDefinition>],
    ) -> Arc<dyn Store> {
        let gvk = &definition.storage.storage_version;
        let json_only = definition.capabilities.dynamic || self.json_groups.contains(&gvk.group);
        let media_type = match json_only {
            true => StorageMediaType::Json,
            false => self.media_type,
        };
        // Encryption names the stored group and resource (events.k8s.io Events are core's).
        let transformer = self
            .encryption
            .as_ref()
            .map(|config| config.transformer(&gvk.group, &definition.plural));
        let codec = StorageCodec::new(
            self.store.clone(),
            media_type,
            gvk.group_version().api_version(),
            gvk.kind.to_string(),
        );
        // Values stored in another served version of the collection convert on read.
        let versions = definitions
            .iter()
            .filter(|d| Arc::ptr_eq(&d.storage, &definition.storage))
            .filter_map(|d| {
                let converter = d.converter.clone()?;
                let gvk = GroupVersionKind::new(
                    d.group_version.group.clone(),
                    d.group_version.version.clone(),
                    d.kind.to_string(),
                );
                Some((gvk, converter))
            })
            .collect();
        let codec = codec
            .encrypted(transformer)
            .converting(versions)
            .reading_earlier(definition.storage.earlier_versions);
        // The stored version's definition converts and defaults what is read (the
        // collection's first definition may be another version).
        let stored = definitions.iter().find(|d| {
            d.group_version.group == gvk.group
                && d.group_version.version == gvk.version
                && d.kind == gvk.kind
        });
        // Custom resources' handlers convert whatever version their objects were stored in.
        match stored.filter(|stored| !stored.capabilities.dynamic) {
            Some(stored) => Arc::new(codec.defaulted(stored.strategy.clone())),
            None => Arc::new(codec),
        }
    }

    /// The served resources of `definitions`, one registry per stored collection.
    fn serve(&self, definitions: &[Arc<ResourceDefinition>]) -> HashMap<ServedKey, Served> {
        let mut registries: HashMap<&str, Arc<Registry>> = HashMap::new();
        let mut served = HashMap::new();
        for definition in definitions {
            let registry = registries
                .entry(&definition.storage.key_prefix)
                .or_insert_with(|| {
                    Arc::new(Registry::new(
                        definition.storage.clone(),
                        self.codec(definition, definitions),
                        &self.prefix,
                        storage_strategy(definition, definitions),
                        self.schemas.clone(),
                    ))
                })
                .clone();
            served.insert(
                served_key(definition),
                Served {
                    definition: definition.clone(),
                    registry,
                },
            );
        }
        served
    }
}

/// A served resource's (group, version, plural).
type ServedKey = (String, String, String);

fn served_key(definition: &ResourceDefinition) -> ServedKey {
    let gv = &definition.group_version;
    (
        gv.group.clone(),
        gv.version.clone(),
        definition.plural.to_string(),
    )
}

/// The strategy of a stored collection's stored version, whose selectable fields its watch
/// cache keeps.
fn storage_strategy(
    definition: &Arc<ResourceDefinition>,
    all: &[Arc<ResourceDefinition>],
) -> Arc<dyn crate::resource::Strategy> {
    all.iter()
        .find(|d| {
            d.storage.key_prefix == definition.storage.key_prefix
                && d.group_version_kind() == definition.storage.storage_version
        })
        .unwrap_or(definition)
        .strategy
        .clone()
}

/// The route of every API request: discovery, OpenAPI and the resources' REST endpoints.
#[derive(Clone)]
pub struct ApiHandler(Arc<Apis>);

/// A handle on an [`ApiHandler`] that does not keep it alive, for what the handler itself
/// holds (an admission plugin looking up resources would otherwise make a cycle).
#[derive(Clone)]
pub struct WeakApiHandler(std::sync::Weak<Apis>);

impl WeakApiHandler {
    /// The handler, while it exists.
    pub fn upgrade(&self) -> Option<ApiHandler> {
        self.0.upgrade().map(ApiHandler)
    }
}

/// The resources a handler serves at one moment: fixed ones from the builder, and those
/// installed at run time (custom resources), replaced as a whole on every change so that a
/// request sees one consistent set.
struct Resources {
    /// By (group, version, plural).
    served: HashMap<ServedKey, Served>,
    definitions: Vec<Arc<ResourceDefinition>>,
    /// What each owner installed (e.g. a CRD's name → its versions).
    installed: HashMap<String, Installed>,
}

/// What one owner installed.
#[derive(Clone)]
struct Installed {
    keys: Vec<ServedKey>,
    /// OpenAPI definitions of the installed kinds, by definition name.
    schemas: Arc<serde_json::Map<String, serde_json::Value>>,
}

struct Apis {
    resources: parking_lot::RwLock<Arc<Resources>>,
    storage: StorageFactory,
    /// Counts the changes of `resources`.
    generation: std::sync::atomic::AtomicU64,
    /// The OpenAPI documents of the chain's resources, generated on first request, and the
    /// chain generation they were made for.
    openapi: parking_lot::Mutex<(u64, Arc<openapi::Documents>)>,
    admission: std::sync::OnceLock<Vec<Arc<dyn AdmissionPlugin>>>,
    server_address: String,
    bookmark_interval: Duration,
    request_info: RequestInfoFactory,
    /// What [`ApiHandlerBuilder::service`] shared.
    services: http::Extensions,
    /// What [`ApiHandlerBuilder::schemas`] gave.
    schemas: Option<Arc<dyn SchemaProvider>>,
    /// The next server of the chain.
    delegate: Option<ApiHandler>,
    /// Unserved resource requests answer 503 while this is false.
    synced: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Apis {
    /// The schemas (and protobuf decoding) the server was given, if any.
    fn schemas(&self) -> Option<&dyn SchemaProvider> {
        self.schemas.as_deref()
    }

    /// Whether the resource's objects are served in protobuf: built-in kinds the schemas
    /// have a message for; never custom resources (upstream's 406).
    fn serves_protobuf(&self, definition: &ResourceDefinition) -> bool {
        !definition.capabilities.dynamic
            && self.schemas().is_some_and(|schemas| {
                schemas.serves_protobuf(&definition.group_version.api_version(), &definition.kind)
            })
    }

    fn admission(&self) -> &[Arc<dyn AdmissionPlugin>] {
        self.admission.get().map(Vec::as_slice).unwrap_or_default()
    }

    /// The current set of served resources.
    fn resources(&self) -> Arc<Resources> {
        self.resources.read().clone()
    }

    /// The served resource `key`, if any.
    fn served(&self, key: &ServedKey) -> Option<Served> {
        self.resources.read().served.get(key).cloned()
    }

    /// The served version of `group`/`resource` that is its stored version.
    fn served_storage(&self, group: &str, resource: &str) -> Option<Served> {
        let resources = self.resources();
        let definition = resources.definitions.iter().find(|d| {
            d.group_version.group == group
                && d.plural == resource
                && d.group_version_kind() == d.storage.storage_version
        })?;
        let gv = &definition.group_version;
        let key = (gv.group.clone(), gv.version.clone(), resource.to_string());
        resources.served.get(&key).cloned()
    }

    /// Every definition served here and down the chain, for discovery and OpenAPI.
    fn chain_definitions(&self) -> Vec<Arc<ResourceDefinition>> {
        let mut definitions = self.resources().definitions.clone();
        if let Some(delegate) = &self.delegate {
            definitions.extend(delegate.0.chain_definitions());
        }
        definitions
    }

    /// The OpenAPI definitions of the kinds installed here and down the chain, with the
    /// provider's (built-in) ones.
    fn chain_schemas(&self, into: &mut serde_json::Map<String, serde_json::Value>) {
        for installed in self.resources().installed.values() {
            into.extend(
                installed
                    .schemas
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        if let Some(delegate) = &self.delegate {
            delegate.0.chain_schemas(into);
        }
    }

    /// Whether this handler or one down the chain has installed anything at run time (the
    /// OpenAPI documents then include their schemas).
    fn chain_dynamic(&self) -> bool {
        !self.resources().installed.is_empty()
            || self.delegate.as_ref().is_some_and(|d| d.0.chain_dynamic())
    }

    /// The number of changes to the served resources here and down the chain.
    fn chain_generation(&self) -> u64 {
        let own = self.generation.load(std::sync::atomic::Ordering::Acquire);
        own + self.delegate.as_ref().map_or(0, |d| d.0.chain_generation())
    }

    /// The OpenAPI documents of the chain's current resources.
    fn openapi(&self) -> Arc<openapi::Documents> {
        let generation = self.chain_generation();
        let mut cached = self.openapi.lock();
        if cached.0 != generation {
            *cached = (generation, Arc::default());
        }
        cached.1.clone()
    }

    /// Replaces the served resources.
    /// Serves `next` instead of `resources`; the registries no longer served stop their
    /// caches (and so their watches).
    fn replace(&self, resources: &mut Arc<Resources>, next: Resources) {
        let kept: std::collections::HashSet<*const Registry> = next
            .served
            .values()
            .map(|s| Arc::as_ptr(&s.registry))
            .collect();
        let mut dropped: HashMap<*const Registry, Arc<Registry>> = HashMap::new();
        for served in resources.served.values() {
            let registry = Arc::as_ptr(&served.registry);
            if !kept.contains(&registry) {
                dropped.insert(registry, served.registry.clone());
            }
        }
        *resources = Arc::new(next);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        for registry in dropped.values() {
            registry.cacher().stop();
        }
    }
}

impl ApiHandler {
    /// Starts building a handler over `store`, with keys under `storage_prefix` (kube-
    /// apiserver's `--etcd-prefix`, `/registry` by default).
    pub fn builder(store: Arc<dyn Store>, storage_prefix: impl Into<String>) -> ApiHandlerBuilder {
        ApiHandlerBuilder {
            store,
            storage_prefix: storage_prefix.into(),
            definitions: Vec::new(),
            server_address: "127.0.0.1:6443".into(),
            bookmark_interval: Duration::from_secs(60),
            services: http::Extensions::new(),
            schemas: None,
            delegate: None,
            synced: None,
            media_type: StorageMediaType::Json,
            json_groups: Vec::new(),
            encryption: None,
        }
    }

    /// The stored version of `group`/`resource` (its served version of the same version).
    pub fn served_storage(&self, group: &str, resource: &str) -> Option<Served> {
        self.0.served_storage(group, resource)
    }

    /// Every definition served here and down the chain (what upstream's delegation targets
    /// list as their paths): the group versions the aggregator keeps local APIServices for.
    pub fn chain_definitions(&self) -> Vec<Arc<ResourceDefinition>> {
        self.0.chain_definitions()
    }

    /// A handle that does not keep the handler alive.
    pub fn downgrade(&self) -> WeakApiHandler {
        WeakApiHandler(Arc::downgrade(&self.0))
    }

    /// The served resource `group`/`version`/`plural`.
    pub fn served(&self, group: &str, version: &str, plural: &str) -> Option<Served> {
        self.0
            .served(&(group.to_string(), version.to_string(), plural.to_string()))
    }

    /// The number and average stored size of the objects of `group`/`version`/`plural`,
    /// here or down the chain, from its watch cache: what API Priority and Fairness
    /// estimates a LIST by.
    pub fn object_stats(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<crate::cacher::ObjectStats> {
        match self.served(group, version, plural) {
            Some(served) => Some(served.registry.cacher().stats()),
            None => self
                .0
                .delegate
                .as_ref()?
                .object_stats(group, version, plural),
        }
    }

    /// The served resource of `group`/`version` whose kind is `kind` (its main resource, not
    /// a subresource), here or down the chain: what an admission policy's `paramKind` names.
    pub fn served_kind(&self, group: &str, version: &str, kind: &str) -> Option<Served> {
        let resources = self.0.resources();
        let found = resources.definitions.iter().find(|d| {
            d.group_version.group == group && d.group_version.version == version && d.kind == kind
        });
        match found {
            Some(definition) => self.served(group, version, &definition.plural),
            None => self.0.delegate.as_ref()?.served_kind(group, version, kind),
        }
    }

    /// The kind of the resource `group`/`version`/`plural`, here or down the chain, and its
    /// schema if one is known: what a ValidatingAdmissionPolicy is type-checked against.
    pub fn resource_schema(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<(Name, Option<KindSchema>)> {
        let Some(served) = self.served(group, version, plural) else {
            return self
                .0
                .delegate
                .as_ref()?
                .resource_schema(group, version, plural);
        };
        let kind = served.definition.kind.clone();
        let schema = self.kind_schema(group, version, &kind);
        Some((kind, schema))
    }

    /// The other served versions of `definition`'s resource, here or down the chain: the
    /// resources kept in the same storage (upstream's equivalent resources, which it also
    /// keys by storage prefix), in the order they were registered. A webhook with
    /// `matchPolicy: Equivalent` registered for one of them is called for `definition`.
    pub fn equivalents(&self, definition: &ResourceDefinition) -> Vec<Arc<ResourceDefinition>> {
        let same = |d: &&Arc<ResourceDefinition>| {
            d.storage.key_prefix == definition.storage.key_prefix
                && (d.group_version != definition.group_version || d.plural != definition.plural)
        };
        let mut found: Vec<_> = self
            .0
            .resources()
            .definitions
            .iter()
            .filter(same)
            .cloned()
            .collect();
        if let Some(delegate) = &self.0.delegate {
            found.extend(delegate.equivalents(definition));
        }
        found
    }

    /// The schema of `group`/`version`/`kind`, here or down the chain.
    pub fn kind_schema(&self, group: &str, version: &str, kind: &str) -> Option<KindSchema> {
        let here = self
            .0
            .schemas
            .as_ref()
            .and_then(|s| s.kind_schema(group, version, kind));
        here.or_else(|| self.0.delegate.as_ref()?.kind_schema(group, version, kind))
    }

    /// Serves `definitions` (each with its own new registry and watch cache) on behalf of
    /// `owner`, replacing whatever `owner` served before; `schemas` are the OpenAPI
    /// definitions of their kinds (`#/definitions/<name>` form). A request sees either the old
    /// or the new set, never a mix. Watches on replaced registries end when their caches stop.
    pub fn install(
        &self,
        owner: &str,
        definitions: Vec<ResourceDefinition>,
        schemas: serde_json::Map<String, serde_json::Value>,
    ) {
        let definitions: Vec<Arc<ResourceDefinition>> =
            definitions.into_iter().map(Arc::new).collect();
        let served = self.0.storage.serve(&definitions);
        let mut resources = self.0.resources.write();
        let mut next = without(&resources, owner);
        next.installed.insert(
            owner.to_string(),
            Installed {
                keys: served.keys().cloned().collect(),
                schemas: Arc::new(schemas),
            },
        );
        next.definitions.extend(definitions);
        next.served.extend(served);
        self.0.replace(&mut resources, next);
    }

    /// Stops serving what `owner` installed.
    pub fn uninstall(&self, owner: &str) {
        let mut resources = self.0.resources.write();
        if resources.installed.contains_key(owner) {
            let next = without(&resources, owner);
            self.0.replace(&mut resources, next);
        }
    }

    /// Sets the admission plugins, run in order on every write. They are set once, after
    /// `build` (plugins may need the registries it creates), before serving; returns false
    /// if they were set already.
    pub fn set_admission(&self, plugins: Vec<Arc<dyn AdmissionPlugin>>) -> bool {
        self.0.admission.set(plugins).is_ok()
    }

    /// Handles one request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let accept = header_str(&request, header::ACCEPT).map(str::to_owned);
        let error_response = |err: &ApiError| error_response(err, accept.as_deref());
        let info = match request.extensions().get::<RequestInfo>() {
            Some(info) => info.clone(),
            None => {
                let uri = request.uri();
                let resolved =
                    self.0
                        .request_info
                        .resolve(request.method().as_str(), uri.path(), uri.query());
                match resolved {
                    Ok(info) => info,
                    Err(message) => return error_response(&ApiError::bad_request(message)),
                }
            }
        };
        if !self.serves(&info) {
            if info.is_resource_request && self.serves_built_in_group(&info.api_group) {
                // Under a built-in group's path upstream's router answers, not the next
                // server of the chain: a Status 404 for any version it does not serve.
                return error_response(&not_found());
            }
            return self.unserved(request).await;
        }
        let result = if info.is_resource_request {
            handlers::resource(&self.0, &info, request).await
        } else {
            self.non_resource(&request)
        };
        result.unwrap_or_else(|err| error_response(&err))
    }

    /// A request for a path not served here: 503 while this handler's resources are not
    /// all installed yet (as upstream's not-found handler answers before its
    /// MuxAndDiscoveryComplete signal), else the delegate's, else (at the end of the chain)
    /// upstream's final handler's plain 404.
    fn unserved<'a, B>(&'a self, request: Request<B>) -> BoxFuture<'a, Response<Body>>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let unsynced = self
            .0
            .synced
            .as_ref()
            .is_some_and(|synced| !*synced.borrow());
        if unsynced {
            let err = ApiError::service_unavailable_retry(PATHS_NOT_INSTALLED, 5);
            let accept = header_str(&request, header::ACCEPT);
            return Box::pin(std::future::ready(error_response(&err, accept)));
        }
        match &self.0.delegate {
            Some(delegate) => Box::pin(delegate.handle(request)),
            None => Box::pin(std::future::ready(crate::responses::not_found())),
        }
    }

    /// Whether a route serves the request's path: a served group-version (even when the
    /// resource is unknown there), discovery or OpenAPI.
    fn serves(&self, info: &RequestInfo) -> bool {
        if info.is_resource_request {
            return self.0.resources().definitions.iter().any(|d| {
                d.group_version.group == info.api_group
                    && d.group_version.version == info.api_version
            });
        }
        let path = info.path.trim_end_matches('/');
        ["/api", "/apis", "/openapi/v2", "/openapi/v3"]
            .iter()
            .any(|root| path == *root || path.starts_with(&format!("{root}/")))
    }

    /// Whether this handler serves built-in resources of `group` (some version of it): the
    /// paths below the group's are then its router's (go-restful's web service of the group).
    fn serves_built_in_group(&self, group: &str) -> bool {
        self.0
            .resources()
            .definitions
            .iter()
            .any(|d| !d.capabilities.dynamic && d.group_version.group == group)
    }

    /// Discovery and OpenAPI documents.
    fn non_resource<B>(&self, request: &Request<B>) -> Result<Response<Body>, ApiError> {
        let path = request.uri().path().trim_end_matches('/');
        let accept = header_str(request, header::ACCEPT);
        let defs = &self.0.chain_definitions();
        let document = match path.split('/').skip(1).collect::<Vec<_>>().as_slice() {
            ["api"] => match negotiation::aggregated_discovery(accept) {
                Some((version, protobuf)) => {
                    let version = version.into();
                    let document = discovery::aggregated(defs, true, version);
                    return aggregated(request, version, protobuf, document);
                }
                None => Some(discovery::api_versions(&self.0.server_address)),
            },
            ["apis"] => match negotiation::aggregated_discovery(accept) {
                Some((version, protobuf)) => {
                    let version = version.into();
                    let document = discovery::aggregated(defs, false, version);
                    return aggregated(request, version, protobuf, document);
                }
                None => Some(discovery::api_group_list(defs)),
            },
            ["api", version] => discovery::api_resource_list(defs, "", version),
            ["apis", group] => discovery::api_group(defs, group),
            ["apis", group, version] => discovery::api_resource_list(defs, group, version),
            ["openapi", ..] => {
                let documents = self.0.openapi();
                let full = || {
                    let provided = self.0.schemas.as_ref().map(|s| s.definitions());
                    if !self.0.chain_dynamic() {
                        return provided;
                    }
                    let mut full = provided.map(|p| (*p).clone()).unwrap_or_default();
                    self.0.chain_schemas(&mut full);
                    Some(Arc::new(full))
                };
                return documents
                    .respond(request, defs, &full)
                    .unwrap_or_else(|| Err(not_found()));
            }
            _ => None,
        };
        match document {
            Some(document) if negotiation::discovery_in_protobuf(accept) => {
                let body = discovery_protobuf(&document)?;
                Ok(response(StatusCode::OK, negotiation::PROTOBUF, body))
            }
            Some(document) => Ok(json_response(StatusCode::OK, document)),
            None => Err(not_found()),
        }
    }
}

impl<B> tower::Service<Request<B>> for ApiHandler
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let handler = self.clone();
        Box::pin(async move { Ok(handler.handle(request).await) })
    }
}

/// `resources` without what `owner` installed.
fn without(resources: &Resources, owner: &str) -> Resources {
    let removed: Vec<&ServedKey> = resources
        .installed
        .get(owner)
        .map(|installed| installed.keys.iter().collect())
        .unwrap_or_default();
    let mut served = resources.served.clone();
    for key in &removed {
        served.remove(*key);
    }
    let definitions = resources
        .definitions
        .iter()
        .filter(|d| !removed.contains(&&served_key(d)))
        .cloned()
        .collect();
    let mut installed = resources.installed.clone();
    installed.remove(owner);
    Resources {
        served,
        definitions,
        installed,
    }
}

/// A discovery document, given as JSON, in protobuf. APIVersions, whose JSON names no
/// apiVersion, is meta/v1's unversioned kind.
fn discovery_protobuf(json: &[u8]) -> Result<Vec<u8>, ApiError> {
    let mut document: serde_json::Value =
        serde_json::from_slice(json).map_err(ApiError::internal)?;
    let object = document
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("a discovery document is not an object"))?;
    object
        .entry("apiVersion")
        .or_insert_with(|| serde_json::Value::from("v1"));
    render::protobuf(&document)
}

/// An aggregated discovery document (`bytes`, its JSON) as JSON or protobuf, with its ETag
/// (of the JSON, whichever is sent) and a 304 when the client has it.
fn aggregated<B>(
    request: &Request<B>,
    version: discovery::AggregatedVersion,
    protobuf: bool,
    mut bytes: Vec<u8>,
) -> Result<Response<Body>, ApiError> {
    let etag = discovery::etag(&bytes);
    let content_type = format!(
        "{};g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
        if protobuf {
            negotiation::PROTOBUF
        } else {
            "application/json"
        },
        version.api_version().rsplit('/').next().unwrap_or("v2")
    );
    if protobuf {
        bytes = discovery_protobuf(&bytes)?;
    }
    let fresh = header_str(request, header::IF_NONE_MATCH) == Some(etag.as_str());
    let mut response = if fresh {
        Response::new(crate::body::empty())
    } else {
        Response::new(crate::body::full(bytes))
    };
    if fresh {
        *response.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, header_value(&content_type));
    headers.insert(header::ETAG, header_value(&etag));
    Ok(response)
}

/// An error the router answers itself, before any handler: a Status with empty details, as
/// go-restful writes them.
fn router_error(code: u16, reason: &str, message: impl Into<String>) -> ApiError {
    let status = kapi_apimachinery::Status::failure(code, reason, message)
        .with_details(kapi_apimachinery::StatusDetails::default());
    ApiError::from(status)
}

/// The 404 of an unknown resource or document under a served API path.
fn not_found() -> ApiError {
    router_error(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn header_str<B>(request: &Request<B>, name: header::HeaderName) -> Option<&str> {
    request
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
}

fn header_value(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static("application/json"))
}

/// A response with `body` and its content type.
fn response(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(crate::body::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, header_value(content_type));
    response
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    response(status, "application/json", body)
}

/// The response for an error: its Status as JSON.
fn error_response(err: &ApiError, accept: Option<&str>) -> Response<Body> {
    crate::responses::api_error_negotiated(err, accept)
}
