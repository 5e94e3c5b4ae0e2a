//! The watch cache: kube-apiserver's Cacher for one stored collection.
//!
//! A reflector lists the collection's key prefix and then watches it from the list's
//! revision, keeping in memory every object (as its stored bytes, shared with the embedded
//! store's own copy, plus its parsed labels and selectable fields) and a window of recent
//! events. LISTs and GETs that may be served from memory are, and every client watch of the
//! collection is fed from the one storage watch, so N watchers cost one storage watch and one
//! decode per change.
//!
//! Freshness: the cache's revision advances with every event and with the storage's progress
//! notifications. A read that must be as fresh as the storage (resourceVersion "") waits until
//! the cache reaches the storage's current revision, asking the storage for a progress
//! notification when the cache is idle, as kube-apiserver's consistent reads from cache do.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_apimachinery::labels::LabelSet;
use kapi_storage::{
    Event as StorageEvent, EventKind, KeyValue, ListOptions, Revision, StorageError, Store,
    WatchOptions, WatchResponse,
};
use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::codec;
use crate::resource::Strategy;
use window::EventWindow;

mod encodings;
mod window;
pub(crate) use encodings::KeptBytesGauge;
pub use encodings::{DEFAULT_BUDGET, Encodings, kept_bytes, set_budget};

/// How many batches of events a client watch may fall behind before it is re-fed from the
/// window (or ended, if the window has moved past it). Small, as upstream's per-watcher
/// buffers are (10 to 1,000 events): a watch that falls behind loses nothing, and each
/// collection someone watches allocates every slot (1,024 of them cost about 2 MiB at idle,
/// for the collections the in-process controllers watch).
const WATCHER_BUFFER: usize = 128;
/// The page size of the reflector's initial list.
const LIST_PAGE: usize = 10_000;

/// One object as the cache holds it. It is kept within 144 bytes: with its `Arc`'s two
/// counts that is 160, one of mimalloc's size classes (the next is 192).
#[derive(Debug)]
pub struct CachedObject {
    pub key: Arc<str>,
    /// The stored bytes (see [`crate::codec`]).
    pub stored: Bytes,
    /// The object's resourceVersion (for a deletion event: the deletion's revision).
    pub revision: Revision,
    /// The object's namespace and then its name, in one allocation (a cache holds one per
    /// object).
    names: Box<str>,
    /// Where the name starts in `names`.
    name_at: u32,
    pub labels: LabelSet,
    /// Selectable fields besides metadata.name and metadata.namespace, if the resource has
    /// any: most have none, so an object pays one word for them, not three.
    #[expect(
        clippy::box_collection,
        reason = "a boxed Vec is one word; a boxed slice would be two"
    )]
    fields: Option<Box<Vec<(crate::resource::Name, String)>>>,
    /// The object's encoding in one response format, as much of it as the first response
    /// that encodes it could remember (see [`Encodings`]).
    pub encodings: Encodings,
}

const _: () = assert!(std::mem::size_of::<CachedObject>() <= 144);

impl CachedObject {
    /// Its `metadata.name`.
    pub fn name(&self) -> &str {
        &self.names[self.name_at as usize..]
    }

    /// Its `metadata.namespace` ("" for a cluster-scoped object).
    pub fn namespace(&self) -> &str {
        &self.names[..self.name_at as usize]
    }

    /// The value of a field selector's field for this object.
    pub fn field(&self, field: &str) -> Option<String> {
        match field {
            "metadata.name" => Some(self.name().to_string()),
            "metadata.namespace" => Some(self.namespace().to_string()),
            _ => self
                .fields
                .iter()
                .flat_map(|fields| fields.iter())
                .find(|(name, _)| *name == field)
                .map(|(_, value)| value.clone()),
        }
    }

    /// The same object at another revision (deletion events carry the last state).
    fn at_revision(&self, revision: Revision) -> CachedObject {
        CachedObject {
            key: self.key.clone(),
            stored: self.stored.clone(),
            revision,
            names: self.names.clone(),
            name_at: self.name_at,
            labels: self.labels.clone(),
            fields: self.fields.clone(),
            encodings: Encodings::default(),
        }
    }
}

/// The type of a watch event, as the API names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change of the collection.
#[derive(Debug)]
pub struct CacheEvent {
    pub type_: EventType,
    /// The object after the change; for a deletion, its last state at the deletion's revision.
    pub object: Arc<CachedObject>,
    /// The object before the change (modifications and deletions).
    pub prev: Option<Arc<CachedObject>>,
}

impl CacheEvent {
    pub fn revision(&self) -> Revision {
        self.object.revision
    }
}

/// What cache watchers receive.
#[derive(Clone, Debug)]
pub enum CacheNotification {
    Events(Arc<[Arc<CacheEvent>]>),
    /// Every change up to this revision has been sent.
    Progress(Revision),
}

/// Why the cache cannot serve a request.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The resource version is older than the cache's event window.
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld {
        requested: Revision,
        oldest: Revision,
    },
    /// The cache did not reach the revision in time.
    #[error("too large resource version: {requested}, current: {current}")]
    TooLarge {
        requested: Revision,
        current: Revision,
    },
    /// The storage cannot tell when the cache has caught up (see [`Cacher::wait_fresh`]).
    #[error("the storage's progress notifications are not ordered with its events")]
    Unordered,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A cached object in the cache's set, which orders it by its key: a map from the key would
/// hold the key a second time (16 bytes per object, about 27 with the B-tree's empty slots).
#[derive(Debug)]
struct ByKey(Arc<CachedObject>);

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// As the keys' strings order: a set of them is searched by `&str`.
impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

impl std::borrow::Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

struct CacheState {
    /// Every change up to this revision is applied.
    revision: Revision,
    objects: BTreeSet<ByKey>,
    /// The sum of the objects' stored sizes.
    stored_bytes: usize,
    /// Recent events, for watches that resume from a revision.
    window: EventWindow,
    /// Where events go: made when the first watcher subscribes and dropped when an event
    /// finds no watcher left (a channel's buffer is allocated whole, and most collections
    /// are never watched); replaced (ending every watcher) when the cache is re-listed.
    notifications: OnceLock<broadcast::Sender<CacheNotification>>,
}

impl CacheState {
    /// Sends `notification` to the watchers, dropping the channel once none is left.
    fn notify(&mut self, notification: CacheNotification) {
        if let Some(sender) = self.notifications.get()
            && sender.send(notification).is_err()
        {
            self.notifications = OnceLock::new();
        }
    }
}

/// The watch cache of one key prefix.
pub struct Cacher {
    store: Arc<dyn Store>,
    /// The collection's key prefix, ending in `/`.
    prefix: String,
    /// The strategy of the collection's storage version, for the objects' selectable fields.
    strategy: Arc<dyn Strategy>,
    state: RwLock<CacheState>,
    /// The cache's revision, for waiters (0 until the first list is loaded).
    revision: watch::Sender<Revision>,
    /// Cancelled when the collection is no longer served ([`Cacher::stop`]).
    stopped: tokio_util::sync::CancellationToken,
}

/// The size of a collection (see [`Cacher::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectStats {
    pub count: usize,
    /// In bytes, as stored.
    pub average_size: usize,
}

/// A snapshot of the objects matching a request, at one revision.
pub struct Snapshot {
    pub revision: Revision,
    pub objects: Vec<Arc<CachedObject>>,
}

/// A subscription to the cache's events, positioned after `revision`.
pub struct Subscription {
    /// Events after the requested revision that were already in the window.
    pub backlog: Vec<Arc<CacheEvent>>,
    /// The current objects, for watches that start with the current state.
    pub initial: Vec<Arc<CachedObject>>,
    /// The revision the subscription starts after: the requested one, or the snapshot's
    /// revision for the initial state.
    pub revision: Revision,
    pub receiver: broadcast::Receiver<CacheNotification>,
}

impl Cacher {
    /// Creates the cache of `prefix` and starts its reflector on the current runtime.
    /// `strategy` gives the objects' selectable fields.
    pub fn start(
        store: Arc<dyn Store>,
        prefix: String,
        strategy: Arc<dyn Strategy>,
    ) -> Arc<Cacher> {
        let cacher = Arc::new(Cacher {
            store,
            prefix,
            strategy,
            state: RwLock::new(CacheState {
                revision: 0,
                objects: BTreeSet::new(),
                stored_bytes: 0,
                window: EventWindow::new(0),
                notifications: OnceLock::new(),
            }),
            revision: watch::channel(0).0,
            stopped: tokio_util::sync::CancellationToken::new(),
        });
        tokio::spawn(reflect(Arc::downgrade(&cacher)));
        cacher
    }

    /// Stops the cache of a collection no longer served (its CRD deleted or changed, as
    /// upstream tears down a CRD's old storage): every watcher ends, and the cache stops
    /// following the storage.
    pub fn stop(&self) {
        self.stopped.cancel();
        // Dropping the sender closes the watchers' receivers.
        self.state.write().notifications = OnceLock::new();
    }

    /// The key prefix this cache holds.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Waits until the cache has applied every change up to `revision`, asking the storage for
    /// progress while it waits. Fails with [`CacheError::TooLarge`] after `timeout`.
    pub async fn wait_for(&self, revision: Revision, timeout: Duration) -> Result<(), CacheError> {
        let mut current = self.revision.subscribe();
        if *current.borrow() >= revision {
            return Ok(());
        }
        let _ = self.store.request_progress().await;
        let reached = tokio::time::timeout(timeout, current.wait_for(|rv| *rv >= revision))
            .await
            .is_ok_and(|waited| waited.is_ok());
        if reached {
            return Ok(());
        }
        Err(CacheError::TooLarge {
            requested: revision,
            current: *self.revision.borrow(),
        })
    }

    /// Waits until the cache is as fresh as the storage is now. Fails with
    /// [`CacheError::Unordered`] at once when the storage's progress notifications may overtake
    /// its events (etcd before 3.4.31 / 3.5.13): callers then read storage instead, as
    /// kube-apiserver does on such etcd.
    pub async fn wait_fresh(&self, timeout: Duration) -> Result<Revision, CacheError> {
        if !self.store.ordered_progress() {
            return Err(CacheError::Unordered);
        }
        let current = self.store.current_revision().await?;
        self.wait_for(current, timeout).await?;
        Ok(current)
    }

    /// Subscribes to `prefix` starting with its current state as fresh as the storage is now
    /// (a consistent read): the cache's, once it has caught up; or, when the storage cannot
    /// prove the cache current ([`CacheError::Unordered`]), a list from storage, with the
    /// cache's changes after the list's revision.
    pub async fn subscribe_current(
        &self,
        prefix: &str,
        timeout: Duration,
    ) -> Result<Subscription, CacheError> {
        match self.wait_fresh(timeout).await {
            Ok(_) => self.subscribe(None, prefix),
            Err(CacheError::Unordered) => {
                let listed = self.store.list(prefix, &ListOptions::default()).await?;
                self.wait_for(listed.revision, timeout).await?;
                let mut subscription = self.subscribe(Some(listed.revision), prefix)?;
                subscription.initial = listed
                    .kvs
                    .iter()
                    .map(|kv| Arc::new(self.cache_object(kv)))
                    .collect();
                Ok(subscription)
            }
            Err(err) => Err(err),
        }
    }

    /// The object stored under `key`, read from storage (a consistent read), in the cache's
    /// form.
    pub async fn get_live(&self, key: &str) -> Result<Option<CachedObject>, CacheError> {
        let kv = self.store.get(key, None).await?.kv;
        Ok(kv.map(|kv| self.cache_object(&kv)))
    }

    /// The cache's current revision.
    pub fn revision(&self) -> Revision {
        self.state.read().revision
    }

    /// How many objects the collection has and their average stored size, now: what API
    /// Priority and Fairness estimates a LIST's cost by (upstream's object count tracker).
    pub fn stats(&self) -> ObjectStats {
        let state = self.state.read();
        let count = state.objects.len();
        ObjectStats {
            count,
            average_size: state.stored_bytes.checked_div(count).unwrap_or(0),
        }
    }

    /// The object stored under `key`, as the cache has it now.
    pub fn get(&self, key: &str) -> (Option<Arc<CachedObject>>, Revision) {
        let state = self.state.read();
        let object = state.objects.get(key).map(|object| object.0.clone());
        (object, state.revision)
    }

    /// The objects whose keys start with `prefix` and that `keep` accepts, now.
    pub fn list(&self, prefix: &str, keep: impl Fn(&CachedObject) -> bool) -> Snapshot {
        let state = self.state.read();
        let objects = state
            .objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|object| object.0.key.starts_with(prefix))
            .filter(|object| keep(&object.0))
            .map(|object| object.0.clone())
            .collect();
        Snapshot {
            revision: state.revision,
            objects,
        }
    }

    /// Subscribes to the events after `after` (`None`: after the current revision, with the
    /// current objects under `prefix` as the initial state).
    pub fn subscribe(
        &self,
        after: Option<Revision>,
        prefix: &str,
    ) -> Result<Subscription, CacheError> {
        let state = self.state.read();
        let receiver = state
            .notifications
            .get_or_init(|| broadcast::channel(WATCHER_BUFFER).0)
            .subscribe();
        let Some(after) = after else {
            let initial = state
                .objects
                .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
                .take_while(|object| object.0.key.starts_with(prefix))
                .map(|object| object.0.clone())
                .collect();
            return Ok(Subscription {
                backlog: Vec::new(),
                initial,
                revision: state.revision,
                receiver,
            });
        };
        if after < state.window.start() {
            return Err(CacheError::TooOld {
                requested: after,
                oldest: state.window.start(),
            });
        }
        let backlog = state
            .window
            .events()
            .filter(|event| event.revision() > after)
            .cloned()
            .collect();
        Ok(Subscription {
            backlog,
            initial: Vec::new(),
            revision: after,
            receiver,
        })
    }

    /// Makes a cache object from a stored key-value.
    /// Only the metadata it keeps and the fields the strategy's selectable fields read are
    /// decoded (a stored object is mostly what no selector reads); the whole object when the
    /// strategy does not say which fields those are.
    pub fn cache_object(&self, kv: &KeyValue) -> CachedObject {
        let parsed = match self.strategy.selectable_fields_read() {
            Some(read) => codec::decode_parts(&kv.value, read, &["name", "namespace", "labels"]),
            None => serde_json::from_slice(&kv.value),
        }
        .unwrap_or(Value::Null);
        let meta = &parsed["metadata"];
        let namespace = meta["namespace"].as_str().unwrap_or_default();
        let name = meta["name"].as_str().unwrap_or_default();
        let fields = self.strategy.selectable_fields(&parsed);
        #[cfg(debug_assertions)]
        if self.strategy.selectable_fields_read().is_some() {
            self.check_fields_read(kv, &fields);
        }
        CachedObject {
            key: kv.key.clone(),
            stored: kv.value.clone(),
            revision: kv.mod_revision,
            names: [namespace, name].concat().into(),
            // Every stored object is far smaller than 4 GiB.
            name_at: u32::try_from(namespace.len()).unwrap_or(0),
            labels: LabelSet::of(&meta["labels"]),
            fields: (!fields.is_empty()).then(|| Box::new(fields)),
            encodings: Encodings::default(),
        }
    }

    /// Panics if `fields`, found from the parts of the object that the strategy says its
    /// selectable fields read, are not what the whole object gives: a strategy whose
    /// [`Strategy::selectable_fields_read`] misses a field would make field selectors miss
    /// objects. Debug builds (the tests) only. Bytes that do not decode whole (a damaged
    /// object whose skipped parts are not valid JSON) are not checked: they have no whole
    /// object to compare with.
    #[cfg(debug_assertions)]
    fn check_fields_read(&self, kv: &KeyValue, fields: &[(crate::resource::Name, String)]) {
        let Ok(whole) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        assert_eq!(
            self.strategy.selectable_fields(&whole),
            fields,
            "{}: selectable_fields_read misses a field selectable_fields reads",
            kv.key
        );
    }

    /// Replaces the cache's content with a fresh list at `revision`, ending every watcher
    /// (they resume from their last revision, as after any watch error).
    fn replace(&self, kvs: Vec<KeyValue>, revision: Revision) {
        #[expect(
            clippy::mutable_key_type,
            reason = "a set entry orders by its object's key, which never changes (what can \
                      change inside an object is its encodings)"
        )]
        let objects: BTreeSet<ByKey> = kvs
            .iter()
            .map(|kv| ByKey(Arc::new(self.cache_object(kv))))
            .collect();
        let stored_bytes = kvs.iter().map(|kv| kv.value.len()).sum();
        let mut state = self.state.write();
        state.objects = objects;
        state.stored_bytes = stored_bytes;
        state.revision = revision;
        state.window = EventWindow::new(revision);
        state.notifications = OnceLock::new();
        drop(state);
        self.revision.send_replace(revision);
    }

    /// Applies a batch of storage events and publishes them.
    fn apply(&self, events: Vec<StorageEvent>) {
        let Some(last) = events.last().map(StorageEvent::revision) else {
            return;
        };
        let converted: Vec<Arc<CacheEvent>> = events
            .iter()
            .map(|event| Arc::new(self.cache_event(event)))
            .collect();
        let now = std::time::Instant::now();
        let mut state = self.state.write();
        for event in &converted {
            let replaced = match event.type_ {
                EventType::Deleted => state.objects.take(&*event.object.key),
                _ => state.objects.replace(ByKey(event.object.clone())),
            };
            if event.type_ != EventType::Deleted {
                state.stored_bytes += event.object.stored.len();
            }
            if let Some(ByKey(replaced)) = replaced {
                state.stored_bytes -= replaced.stored.len();
            }
            state.window.push(event.clone(), now);
        }
        state.revision = last;
        state.notify(CacheNotification::Events(converted.into()));
        drop(state);
        self.revision.send_replace(last);
    }

    /// Records a storage progress notification.
    fn progress(&self, revision: Revision) {
        let mut state = self.state.write();
        if revision <= state.revision {
            return;
        }
        state.revision = revision;
        state.notify(CacheNotification::Progress(revision));
        drop(state);
        self.revision.send_replace(revision);
    }

    fn cache_event(&self, event: &StorageEvent) -> CacheEvent {
        let prev = event
            .prev_kv
            .as_ref()
            .map(|kv| Arc::new(self.cache_object(kv)));
        match (event.kind, &prev) {
            (EventKind::Delete, Some(prev)) => CacheEvent {
                type_: EventType::Deleted,
                object: Arc::new(prev.at_revision(event.revision())),
                prev: Some(prev.clone()),
            },
            _ => CacheEvent {
                type_: if event.is_create() {
                    EventType::Added
                } else {
                    EventType::Modified
                },
                object: Arc::new(self.cache_object(&event.kv)),
                prev,
            },
        }
    }

    /// Lists the prefix (all pages at one revision) and loads the result.
    async fn relist(&self) -> Result<Revision, StorageError> {
        let mut kvs = Vec::new();
        let mut options = ListOptions {
            limit: Some(LIST_PAGE),
            ..Default::default()
        };
        loop {
            let page = self.store.list(&self.prefix, &options).await?;
            kvs.extend(page.kvs);
            match page.continue_token {
                Some(token) => options.continue_token = Some(token),
                None => {
                    self.replace(kvs, page.revision);
                    return Ok(page.revision);
                }
            }
        }
    }
}

/// The reflector: list, then watch from the list's revision; on any error, start over.
async fn reflect(cacher: std::sync::Weak<Cacher>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(strong) = cacher.upgrade() else {
            return;
        };
        let stopped = strong.stopped.clone();
        let result = tokio::select! {
            _ = stopped.cancelled() => return,
            result = list_and_watch(&strong) => result,
        };
        drop(strong);
        match result {
            Ok(()) => return,
            Err(err) => {
                tracing::warn!(%err, "watch cache reflector restarting");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// One list-and-watch cycle. Returns Ok when the storage ended the watch because it closed.
async fn list_and_watch(cacher: &Cacher) -> Result<(), StorageError> {
    let revision = cacher.relist().await?;
    let options = WatchOptions {
        prefix: true,
        after: Some(revision),
    };
    let mut watch = cacher.store.watch(&cacher.prefix, options).await?;
    while let Some(item) = watch.next().await {
        match item? {
            WatchResponse::Events(events) => cacher.apply(events),
            WatchResponse::Progress(revision) => cacher.progress(revision),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kapi_apimachinery::validation::field::FieldErrors;
    use kapi_storage::{EmbeddedConfig, EmbeddedStore};
    use serde_json::json;

    use super::*;
    use crate::resource::Name;

    /// Selects on `spec.color`, and says it reads `spec` or, when `misdeclared`, nothing.
    struct Colored {
        misdeclared: bool,
    }

    impl Strategy for Colored {
        fn validate(&self, _object: &Value) -> FieldErrors {
            FieldErrors::new()
        }

        fn selectable_fields(&self, object: &Value) -> Vec<(Name, String)> {
            let color = object["spec"]["color"].as_str().unwrap_or_default();
            vec![("spec.color".into(), color.to_string())]
        }

        fn selectable_fields_read(&self) -> Option<&[Name]> {
            Some(if self.misdeclared {
                &[]
            } else {
                &[Name::Borrowed("spec")]
            })
        }
    }

    fn cache_of(misdeclared: bool) -> (tempfile::TempDir, Arc<Cacher>) {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap();
        let strategy = Arc::new(Colored { misdeclared });
        let cacher = Cacher::start(Arc::new(store), "/registry/things/".into(), strategy);
        (dir, cacher)
    }

    fn thing() -> KeyValue {
        let object = json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"},
            "annotations": {"big": "..."}}, "spec": {"color": "red"}, "data": {"k": "v"}});
        KeyValue {
            key: "/registry/things/ns/a".into(),
            value: serde_json::to_vec(&object).unwrap().into(),
            create_revision: 2,
            mod_revision: 3,
        }
    }

    #[tokio::test]
    async fn cached_objects_keep_what_selectors_read_from_their_parts() {
        let (_dir, cacher) = cache_of(false);
        let cached = cacher.cache_object(&thing());
        assert_eq!((cached.name(), cached.namespace()), ("a", "ns"));
        assert_eq!(cached.labels, LabelSet::of(&json!({"x": "y"})));
        assert_eq!(
            cached.fields.as_deref(),
            Some(&vec![("spec.color".into(), "red".to_string())])
        );
        assert_eq!(cached.stored, thing().value);
    }

    /// A damaged object whose skipped parts do not decode (a lone surrogate in an annotation)
    /// keeps the fields its parts give, and the check leaves it alone.
    #[tokio::test]
    async fn damage_in_skipped_parts_keeps_the_fields_read() {
        let (_dir, cacher) = cache_of(false);
        let value =
            br#"{"metadata":{"name":"a","annotations":{"x":"\ud800"}},"spec":{"color":"red"}}"#;
        let damaged = KeyValue {
            value: Bytes::from_static(value),
            ..thing()
        };
        assert!(serde_json::from_slice::<Value>(&damaged.value).is_err());
        let cached = cacher.cache_object(&damaged);
        assert_eq!(cached.name(), "a");
        assert_eq!(
            cached.fields.as_deref(),
            Some(&vec![("spec.color".into(), "red".to_string())])
        );
    }

    #[cfg(debug_assertions)]
    #[tokio::test]
    #[should_panic(expected = "selectable_fields_read misses a field")]
    async fn a_strategy_that_misses_a_field_it_reads_fails_the_tests() {
        let (_dir, cacher) = cache_of(true);
        cacher.cache_object(&thing());
    }
}
