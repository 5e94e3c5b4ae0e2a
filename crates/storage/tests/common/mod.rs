//! Harness and helpers for the storage conformance suite: opening a fresh store of either
//! backend, short-hand writes and reads that fail the test with a clear message, building
//! expected [`KeyValue`]s and [`Event`]s, and a [`Watcher`] that waits on a watch stream with
//! bounded timeouts.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::{
    DeleteResponse, EmbeddedConfig, EmbeddedStore, EtcdConfig, EtcdStore, Event, EventKind,
    KeyValue, ListOptions, ListResponse, Result, Revision, StorageError, Store, WatchOptions,
    WatchResponse, WatchStream,
};
use kapi_testing::etcd::{EtcdCluster, etcd_binary};

/// How long any single awaited condition (a watch response, a store call) may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// How long a whole case may take before it counts as hung.
pub const CASE_TIMEOUT: Duration = Duration::from_secs(60);

/// The progress interval of most test stores: short, so periodic progress shows up quickly.
pub const FAST_PROGRESS: Duration = Duration::from_millis(200);

/// A progress interval no test outlives, for cases that must tell a requested progress
/// notification from a periodic one.
pub const NO_PERIODIC_PROGRESS: Duration = Duration::from_secs(3600);

/// A fresh store and whatever must outlive it (its data directory or its etcd cluster).
pub struct TestStore {
    pub store: Arc<dyn Store>,
    pub guard: Box<dyn Send>,
}

/// A fresh embedded store in its own temporary directory.
pub async fn open_embedded(progress_interval: Duration) -> TestStore {
    let dir = tempfile::tempdir().expect("create a temporary data directory");
    let mut config = EmbeddedConfig::new(dir.path());
    config.progress_interval = progress_interval;
    let store = EmbeddedStore::open(config).expect("open the embedded store");
    TestStore {
        store: Arc::new(store),
        guard: Box::new(dir),
    }
}

/// A fresh etcd store on its own single-member etcd cluster.
pub async fn open_etcd(progress_interval: Duration) -> TestStore {
    // Fails the test, with how to install etcd, when there is no etcd binary: the etcd
    // tests must not pass by skipping.
    let binary = etcd_binary();
    assert!(
        binary.is_file(),
        "the etcd conformance tests need etcd, and there is no etcd binary at {}: install \
         etcd-server (apt-get install -y etcd-server) or point KAPI_ETCD_BIN at an etcd binary",
        binary.display()
    );
    let cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(1))
        .await
        .expect("start a single-member etcd cluster");
    let mut config = EtcdConfig::new(cluster.endpoints());
    config.progress_interval = progress_interval;
    let store = tokio::time::timeout(WAIT, EtcdStore::connect(config))
        .await
        .expect("connecting to etcd timed out")
        .expect("connect to etcd");
    TestStore {
        store: Arc::new(store),
        guard: Box::new(cluster),
    }
}

/// Runs one case against a fresh store, failing it if it hangs.
pub async fn run_case<F, Fut>(test_store: TestStore, case: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let TestStore { store, guard } = test_store;
    tokio::time::timeout(CASE_TIMEOUT, case(store))
        .await
        .unwrap_or_else(|_| panic!("the case did not finish within {CASE_TIMEOUT:?}"));
    drop(guard);
}

/// Awaits a store call, failing the test if it takes longer than [`WAIT`].
pub async fn bounded<T>(what: &str, call: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, call)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {WAIT:?}"))
}

// ---------------------------------------------------------------------------------------------
// Values, key-values and events.

/// The bytes of a string value.
pub fn val(value: &str) -> Bytes {
    Bytes::copy_from_slice(value.as_bytes())
}

/// A key-value as a read should return it.
pub fn kv(key: &str, value: &str, create_revision: Revision, mod_revision: Revision) -> KeyValue {
    KeyValue {
        key: Arc::from(key),
        value: val(value),
        create_revision,
        mod_revision,
    }
}

/// The event of a create.
pub fn create_event(key: &str, value: &str, revision: Revision) -> Event {
    Event {
        kind: EventKind::Put,
        kv: kv(key, value, revision, revision),
        prev_kv: None,
    }
}

/// The event of an update of `prev` to `value` at `revision`.
pub fn update_event(prev: &KeyValue, value: &str, revision: Revision) -> Event {
    Event {
        kind: EventKind::Put,
        kv: kv(&prev.key, value, prev.create_revision, revision),
        prev_kv: Some(prev.clone()),
    }
}

/// The event of the deletion of `prev` at `revision`: empty value, create revision 0.
pub fn delete_event(prev: &KeyValue, revision: Revision) -> Event {
    Event {
        kind: EventKind::Delete,
        kv: KeyValue {
            key: prev.key.clone(),
            value: Bytes::new(),
            create_revision: 0,
            mod_revision: revision,
        },
        prev_kv: Some(prev.clone()),
    }
}

/// The keys of some key-values, for comparing lists.
pub fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| &*kv.key).collect()
}

// ---------------------------------------------------------------------------------------------
// Store calls that must succeed.

pub async fn current_revision(store: &Arc<dyn Store>) -> Revision {
    bounded("current_revision", store.current_revision())
        .await
        .unwrap_or_else(|err| panic!("current_revision failed: {err}"))
}

/// Creates `key`, returning the revision and checking it is newer than the store's previous.
pub async fn create_ok(store: &Arc<dyn Store>, key: &str, value: &str) -> Revision {
    bounded(&format!("create {key}"), store.create(key, val(value)))
        .await
        .unwrap_or_else(|err| panic!("create {key} failed: {err}"))
}

/// Creates `key` and returns it as stored.
pub async fn create_kv(store: &Arc<dyn Store>, key: &str, value: &str) -> KeyValue {
    let revision = create_ok(store, key, value).await;
    kv(key, value, revision, revision)
}

/// Updates `current` to `value` (conditioned on its mod revision) and returns the new value.
pub async fn update_kv(store: &Arc<dyn Store>, current: &KeyValue, value: &str) -> KeyValue {
    let key = &*current.key;
    let revision = bounded(
        &format!("update {key}"),
        store.update(key, val(value), current.mod_revision),
    )
    .await
    .unwrap_or_else(|err| panic!("update {key} at {} failed: {err}", current.mod_revision));
    assert!(
        revision > current.mod_revision,
        "update of {key} returned revision {revision}, not newer than {}",
        current.mod_revision
    );
    kv(key, value, current.create_revision, revision)
}

/// Deletes `key` unconditionally.
pub async fn delete_ok(store: &Arc<dyn Store>, key: &str) -> DeleteResponse {
    bounded(&format!("delete {key}"), store.delete(key, None))
        .await
        .unwrap_or_else(|err| panic!("delete {key} failed: {err}"))
}

/// Reads `key` at the latest revision or at `revision`.
pub async fn get_ok(
    store: &Arc<dyn Store>,
    key: &str,
    revision: Option<Revision>,
) -> Option<KeyValue> {
    bounded(
        &format!("get {key} at {revision:?}"),
        store.get(key, revision),
    )
    .await
    .unwrap_or_else(|err| panic!("get {key} at {revision:?} failed: {err}"))
    .kv
}

/// List options for pages of at most `limit` items at the latest revision.
pub fn paged(limit: usize) -> ListOptions {
    ListOptions {
        limit: Some(limit),
        ..ListOptions::default()
    }
}

/// List options for a read at `revision`, in one page.
pub fn at_revision(revision: Revision) -> ListOptions {
    ListOptions {
        revision: Some(revision),
        ..ListOptions::default()
    }
}

/// List options for the page after a continue token, of at most `limit` items.
pub fn continue_from(token: Option<String>, limit: usize) -> ListOptions {
    ListOptions {
        limit: Some(limit),
        continue_token: token,
        ..ListOptions::default()
    }
}

/// Lists `prefix` with `options`.
pub async fn list_ok(store: &Arc<dyn Store>, prefix: &str, options: &ListOptions) -> ListResponse {
    bounded(&format!("list {prefix}"), store.list(prefix, options))
        .await
        .unwrap_or_else(|err| panic!("list {prefix} with {options:?} failed: {err}"))
}

/// Lists all of `prefix` at the latest revision in one page.
pub async fn list_all(store: &Arc<dyn Store>, prefix: &str) -> ListResponse {
    list_ok(store, prefix, &ListOptions::default()).await
}

/// The next page after `page`, which must have a continue token.
pub async fn next_page(
    store: &Arc<dyn Store>,
    prefix: &str,
    page: &ListResponse,
    limit: usize,
) -> ListResponse {
    assert!(
        page.continue_token.is_some(),
        "the previous page of {prefix} should have a continue token"
    );
    let options = continue_from(page.continue_token.clone(), limit);
    list_ok(store, prefix, &options).await
}

/// Walks every page of `prefix` with `limit`, returning the pages.
pub async fn list_pages(store: &Arc<dyn Store>, prefix: &str, limit: usize) -> Vec<ListResponse> {
    let mut pages = vec![list_ok(store, prefix, &paged(limit)).await];
    while pages.last().unwrap().continue_token.is_some() {
        assert!(pages.len() <= 1000, "list of {prefix} never ends");
        let page = next_page(store, prefix, pages.last().unwrap(), limit).await;
        pages.push(page);
    }
    pages
}

// ---------------------------------------------------------------------------------------------
// Expected failures.

/// Asserts that `result` failed with [`StorageError::Compacted`].
pub fn assert_compacted<T: Debug>(result: Result<T>, what: &str) {
    match result {
        Err(StorageError::Compacted { .. }) => {}
        other => panic!("{what}: expected Err(Compacted), got {other:?}"),
    }
}

/// Asserts that a watch of `key` with `options` fails with [`StorageError::Compacted`],
/// either at once or as the first item of its stream.
pub async fn assert_watch_compacted(store: &Arc<dyn Store>, key: &str, options: WatchOptions) {
    let what = format!("watch {key} with {options:?}");
    match bounded(&what, store.watch(key, options.clone())).await {
        Err(StorageError::Compacted { .. }) => {}
        Err(err) => panic!("{what}: expected Compacted, got error {err:?}"),
        Ok(mut stream) => match bounded(&what, stream.next()).await {
            Some(Err(StorageError::Compacted { .. })) => {}
            other => panic!("{what}: expected the first item to be Err(Compacted), got {other:?}"),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Watching.

/// A watch stream with bounded waits. Events arrive in batches; the watcher hands them out
/// one by one and keeps the rest.
pub struct Watcher {
    what: String,
    stream: WatchStream,
    pending: VecDeque<Event>,
}

impl Watcher {
    /// Opens a watch of `key` with `options`; it must succeed.
    pub async fn open(store: &Arc<dyn Store>, key: &str, options: WatchOptions) -> Watcher {
        let what = format!("watch {key} with {options:?}");
        let stream = bounded(&what, store.watch(key, options))
            .await
            .unwrap_or_else(|err| panic!("{what} failed: {err}"));
        Watcher {
            what,
            stream,
            pending: VecDeque::new(),
        }
    }

    /// Watches every key under `prefix` after `after`.
    pub async fn prefix(store: &Arc<dyn Store>, prefix: &str, after: Option<Revision>) -> Watcher {
        let options = WatchOptions {
            prefix: true,
            after,
        };
        Watcher::open(store, prefix, options).await
    }

    /// Watches the single key `key` after `after`.
    pub async fn key(store: &Arc<dyn Store>, key: &str, after: Option<Revision>) -> Watcher {
        let options = WatchOptions {
            prefix: false,
            after,
        };
        Watcher::open(store, key, options).await
    }

    /// The next item of the stream; it must arrive within [`WAIT`] and not be an error.
    async fn next_response(&mut self, waiting_for: &str) -> WatchResponse {
        match tokio::time::timeout(WAIT, self.stream.next()).await {
            Err(_) => panic!("{}: no {waiting_for} within {WAIT:?}", self.what),
            Ok(None) => panic!(
                "{}: stream ended while waiting for {waiting_for}",
                self.what
            ),
            Ok(Some(Err(err))) => panic!(
                "{}: error while waiting for {waiting_for}: {err:?}",
                self.what
            ),
            Ok(Some(Ok(response))) => response,
        }
    }

    /// The next event, skipping progress notifications.
    pub async fn next_event(&mut self) -> Event {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return event;
            }
            if let WatchResponse::Events(events) = self.next_response("event").await {
                self.pending.extend(events);
            }
        }
    }

    /// The next `n` events, skipping progress notifications.
    pub async fn next_events(&mut self, n: usize) -> Vec<Event> {
        let mut events = Vec::with_capacity(n);
        while events.len() < n {
            events.push(self.next_event().await);
        }
        events
    }

    /// Waits for a progress notification of at least `min`, keeping any events that arrive
    /// meanwhile for [`Watcher::next_event`]. Returns the notified revision.
    pub async fn progress_at_least(&mut self, min: Revision) -> Revision {
        let waiting_for = format!("progress notification >= {min}");
        loop {
            match self.next_response(&waiting_for).await {
                WatchResponse::Progress(revision) if revision >= min => return revision,
                WatchResponse::Progress(_) => {}
                WatchResponse::Events(events) => self.pending.extend(events),
            }
        }
    }

    /// Asserts that no event is held back from earlier responses.
    pub fn assert_no_pending_events(&self) {
        assert!(
            self.pending.is_empty(),
            "{}: unexpected events {:?}",
            self.what,
            self.pending
        );
    }
}

/// Asserts that two event sequences are equal, pointing at the first difference.
pub fn assert_events_eq(actual: &[Event], expected: &[Event], what: &str) {
    for (index, (got, want)) in actual.iter().zip(expected).enumerate() {
        assert_eq!(got, want, "{what}: event #{index} differs");
    }
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: got {} events, expected {}",
        actual.len(),
        expected.len()
    );
}
