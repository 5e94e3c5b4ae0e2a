//! The embedded backend: etcd's MVCC semantics on redb, in one data directory.
//!
//! How it works:
//! - **Writes** go to one committer thread ([`committer`]). It takes every request waiting,
//!   checks each against the latest state (create needs the key absent, update and delete need
//!   the expected mod revision), gives each accepted write the next revision, writes the whole
//!   batch in one redb transaction and commits it with one fsync (group commit). Only then does
//!   it apply the batch to memory, publish it to watchers and answer the writers, so a write is
//!   never acknowledged or visible before it is durable.
//! - **Reads at the latest revision** are served from memory: every live key's latest version
//!   is kept in a `BTreeMap` (values are shared `Bytes`, so a list copies no payload).
//! - **Reads at past revisions** and **watch replay** read redb's history ([`history`]).
//! - **Watches** ([`watch`]) follow a broadcast of committed batches; one that falls behind
//!   replays the log from disk and catches up, so a slow watcher neither misses events nor
//!   holds back the others.
//! - **Expiry** ([`expiry`]): a key written with a time to live is deleted by the committer
//!   once its deadline passes, as etcd deletes the keys of an expired lease.
//! - **Compaction** deletes superseded versions and log entries at or before the compacted
//!   revision, in chunks between write batches; redb reuses the freed pages.
//!
//! After a crash, redb's commit protocol (checksummed 1-phase commit with one fsync) rolls back
//! to the last durable transaction; the latest state is then rebuilt from `history`. Every open
//! verifies every page and every value ([`open`]); damage fails the open, naming what is
//! damaged, and a value read later that fails its checksum fails that read.

mod committer;
mod expiry;
mod history;
mod open;
mod snapshot;
mod tables;
mod watch;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::RwLock;
use redb::Database;
use tokio::sync::{broadcast, oneshot};

use self::committer::{Committer, Op, Outcome, Request, Write};
pub use self::open::StoreCensus;
pub use self::snapshot::SnapshotInfo;
use crate::{
    DeleteResponse, Event, GetResponse, KeyValue, ListOptions, ListResponse, Result, Revision,
    StorageError, Store, WatchOptions, WatchStream, decode_continue, encode_continue,
};

/// The name of the database file inside the data directory.
/// The store's file in its directory.
pub const DB_FILE: &str = "kapi.redb";

/// Settings of the embedded store.
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
    /// The directory that holds the database file; created if missing.
    pub data_dir: PathBuf,
    /// How often every watch gets a progress notification.
    pub progress_interval: Duration,
    /// How many committed batches are buffered for watchers. A watcher further behind than
    /// this catches up by reading the log from disk.
    pub watch_buffer: usize,
    /// The most memory redb may use to cache pages. Reads at the latest revision never touch
    /// redb (they are served from memory), so its cache serves only writes and reads of the
    /// log and history, whose misses are reads from the kernel's page cache. A larger cache
    /// mostly held copies of the values already in memory: the open verifies and loads every
    /// page through it (0.85 MB of an idle server's heap with 4 MiB; redb's own default,
    /// 1 GiB, would hold every page written).
    pub cache_size: usize,
    /// The last process that wrote the file closed it cleanly. A last commit that fails its
    /// checksums is then damage and the open fails; otherwise it is taken for a write a crash
    /// tore (never acknowledged) and rolled back.
    pub closed_cleanly: bool,
}

impl EmbeddedConfig {
    /// The defaults for a data directory: progress every 5 seconds, 512 batches buffered,
    /// a 256 KiB page cache.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EmbeddedConfig {
            data_dir: data_dir.into(),
            progress_interval: Duration::from_secs(5),
            watch_buffer: 512,
            cache_size: 256 * 1024,
            closed_cleanly: false,
        }
    }
}

/// What watchers are sent, in commit order.
#[derive(Clone, Debug)]
enum Notification {
    /// The changes of one committed batch, in revision order.
    Events(Arc<[Event]>),
    /// Every change up to this revision has been published.
    Progress(Revision),
}

/// The latest version of every live key.
type LatestVersions = BTreeMap<Arc<str>, Latest>;

/// A live key's latest version. Its key is the map's: a `KeyValue` would hold it again, 16
/// bytes more per key (with the map's empty slots, about 27), so one is made when read.
#[derive(Clone, Debug)]
struct Latest {
    value: Bytes,
    create_revision: Revision,
    mod_revision: Revision,
}

impl Latest {
    fn of(kv: &KeyValue) -> Latest {
        Latest {
            value: kv.value.clone(),
            create_revision: kv.create_revision,
            mod_revision: kv.mod_revision,
        }
    }

    /// The version as a `KeyValue` of `key`.
    fn with_key(&self, key: &Arc<str>) -> KeyValue {
        KeyValue {
            key: key.clone(),
            value: self.value.clone(),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        }
    }
}

/// The latest state, shared by readers and the committer.
struct State {
    /// The revision of the last committed write.
    revision: Revision,
    /// History before this revision is gone.
    compacted: Revision,
    /// The latest version of every live key.
    latest: LatestVersions,
    /// Where committed batches and progress go, in commit order (sent under this state's
    /// lock); `None` once the store is closed, which ends every watch.
    notifications: Option<broadcast::Sender<Notification>>,
}

impl State {
    /// The latest version of `key`, if it is live.
    fn latest(&self, key: &str) -> Option<KeyValue> {
        let (key, latest) = self.latest.get_key_value(key)?;
        Some(latest.with_key(key))
    }

    fn notify(&self, notification: Notification) {
        if let Some(sender) = &self.notifications {
            let _ = sender.send(notification);
        }
    }
}

/// What the store, its committer thread and its watchers share.
struct Shared {
    db: Database,
    state: RwLock<State>,
}

impl Shared {
    /// Publishes a progress notification with the current revision. Taken under the state
    /// lock, so it is ordered after every batch already applied and before any later one.
    fn publish_progress(&self) {
        let state = self.state.read();
        state.notify(Notification::Progress(state.revision));
    }

    /// Fails with [`StorageError::Compacted`] if `revision`'s history is gone.
    fn check_retained(&self, revision: Revision) -> Result<()> {
        let compacted = self.state.read().compacted;
        if revision < compacted {
            return Err(StorageError::Compacted {
                requested: revision,
                compacted,
            });
        }
        Ok(())
    }
}

/// The embedded store. Dropping it finishes the queued writes, stops the committer and ends
/// every watch; the database file is closed once the last watch stream is dropped too.
pub struct EmbeddedStore {
    shared: Arc<Shared>,
    /// Where writes go; `None` once closed.
    requests: RwLock<Option<mpsc::Sender<Request>>>,
    committer: parking_lot::Mutex<Option<JoinHandle<()>>>,
    ticker: tokio::task::JoinHandle<()>,
}

impl EmbeddedStore {
    /// Opens (or creates) the store in `config.data_dir`, recovering from a crash if needed.
    /// Must be called inside a tokio runtime (the progress ticker runs on it).
    pub fn open(config: EmbeddedConfig) -> Result<EmbeddedStore> {
        std::fs::create_dir_all(&config.data_dir).map_err(StorageError::internal)?;
        let path = config.data_dir.join(DB_FILE);
        let db = open::open_database(&path, config.cache_size, config.closed_cleanly)
            .map_err(|err| open::open_error(&path, err))?;
        let (census, latest, expiring) = open::load(&db)?;
        tracing::debug!(?census, expiring = expiring.len(), "embedded store opened");
        let state = State {
            revision: census.revision,
            compacted: census.compacted,
            latest,
            notifications: Some(broadcast::channel(config.watch_buffer.max(1)).0),
        };
        let shared = Arc::new(Shared {
            db,
            state: RwLock::new(state),
        });
        let (requests, receiver) = mpsc::channel();
        let committer = Committer::spawn(shared.clone(), receiver, expiring)?;
        let ticker = spawn_ticker(Arc::downgrade(&shared), config.progress_interval);
        Ok(EmbeddedStore {
            shared,
            requests: RwLock::new(Some(requests)),
            committer: parking_lot::Mutex::new(Some(committer)),
            ticker,
        })
    }

    /// Writes a snapshot of the store, consistent at one revision while writes go on, to
    /// `out`; every value is verified on the way. Blocking: it reads the whole store.
    pub fn write_snapshot(&self, out: &mut dyn std::io::Write) -> Result<SnapshotInfo> {
        snapshot::write(&self.shared.db, out)
    }

    /// Restores the snapshot read from `input` as the store in `data_dir`, which must not
    /// hold one; a damaged or cut snapshot is refused and leaves nothing behind. Blocking.
    pub fn restore_snapshot(
        input: &mut dyn std::io::Read,
        data_dir: &std::path::Path,
    ) -> Result<SnapshotInfo> {
        snapshot::restore(input, data_dir)
    }

    /// Reads a snapshot through, verifying it as a restore would, and says what it holds.
    pub fn verify_snapshot(input: &mut dyn std::io::Read) -> Result<SnapshotInfo> {
        snapshot::read(input, |_| Ok(()))
    }

    /// Verifies the store in `data_dir`, which no process may have open, as [`Self::open`]
    /// would (every page, every value), without changing it. Blocking.
    pub fn check(data_dir: &std::path::Path, closed_cleanly: bool) -> Result<StoreCensus> {
        open::check(data_dir, closed_cleanly)
    }

    /// Sends `op` to the committer and waits for its outcome.
    async fn submit(&self, op: Op) -> Result<Outcome> {
        let (reply, outcome) = oneshot::channel();
        let closed = || StorageError::Unavailable("the store is closed".into());
        self.requests
            .read()
            .as_ref()
            .ok_or_else(closed)?
            .send(Request { op, reply })
            .map_err(|_| closed())?;
        outcome.await.map_err(|_| closed())?
    }

    /// Runs a history read on the blocking pool.
    async fn read_history<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Shared) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || read(&shared))
            .await
            .map_err(StorageError::internal)?
    }

    /// Resolves the revision and start key of a list request.
    fn list_position(&self, prefix: &str, options: &ListOptions) -> Result<(Revision, String)> {
        let current = self.shared.state.read().revision;
        let (revision, start) = match (&options.continue_token, options.revision) {
            (Some(_), Some(_)) => {
                return Err(StorageError::InvalidRequest(
                    "a list with a continue token cannot also name a revision".into(),
                ));
            }
            (Some(token), None) => match decode_continue(prefix, token)? {
                (revision, start) if revision < 0 => (current, start),
                found => found,
            },
            (None, revision) => (
                revision.filter(|&r| r > 0).unwrap_or(current),
                prefix.to_string(),
            ),
        };
        check_not_future(revision, current)?;
        self.shared.check_retained(revision)?;
        Ok((revision, start))
    }
}

impl EmbeddedStore {
    /// Closes the store: the writes already queued are committed and answered, later ones
    /// fail as unavailable, every watch ends. Once it returns no write is in flight, so the
    /// file's last commit is whole. Blocks until the committer has stopped.
    pub fn close(&self) {
        self.ticker.abort();
        // Closing the channel ends the committer once it has answered what is queued.
        drop(self.requests.write().take());
        if let Some(committer) = self.committer.lock().take() {
            let _ = committer.join();
        }
        self.shared.state.write().notifications = None;
    }
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        self.close();
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    /// Only kapi writes the store, and every value read is checked against its checksum.
    fn values_trusted(&self) -> bool {
        true
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.state.read().revision)
    }

    async fn create_expiring(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<Revision> {
        let deadline = expiry::deadline(ttl);
        match self
            .submit(Op::Write(Write::Create(key.into(), value, deadline)))
            .await?
        {
            Outcome::Written(revision) => Ok(revision),
            other => Err(unexpected(other)),
        }
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse> {
        let revision = {
            let state = self.shared.state.read();
            // Revision 0 means the latest, as in etcd.
            let revision = revision.filter(|&r| r > 0).unwrap_or(state.revision);
            check_not_future(revision, state.revision)?;
            if revision == state.revision {
                let kv = state.latest(key);
                return Ok(GetResponse { kv, revision });
            }
            revision
        };
        let key: Arc<str> = key.into();
        self.read_history(move |shared| history::get(shared, key, revision))
            .await
    }

    async fn list(&self, prefix: &str, options: &ListOptions) -> Result<ListResponse> {
        let (revision, start) = self.list_position(prefix, options)?;
        let limit = options.limit.filter(|&limit| limit > 0);
        let page = {
            let state = self.shared.state.read();
            (state.revision == revision).then(|| list_latest(&state, prefix, &start, limit))
        };
        let page = match page {
            Some(page) => page,
            None => {
                let prefix = prefix.to_string();
                self.read_history(move |shared| {
                    history::list(shared, &prefix, &start, revision, limit)
                })
                .await?
            }
        };
        Ok(page.into_response(prefix, revision))
    }

    async fn update_expiring(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<Revision> {
        let deadline = expiry::deadline(ttl);
        match self
            .submit(Op::Write(Write::Update(
                key.into(),
                value,
                expected,
                deadline,
            )))
            .await?
        {
            Outcome::Written(revision) => Ok(revision),
            other => Err(unexpected(other)),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse> {
        match self
            .submit(Op::Write(Write::Delete(key.into(), expected)))
            .await?
        {
            Outcome::Deleted(response) => Ok(response),
            other => Err(unexpected(other)),
        }
    }

    async fn watch(&self, key: &str, options: WatchOptions) -> Result<WatchStream> {
        watch::start(self.shared.clone(), key.into(), options)
    }

    async fn request_progress(&self) -> Result<()> {
        self.shared.publish_progress();
        Ok(())
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        match self.submit(Op::Compact(revision)).await? {
            Outcome::Compacted => Ok(()),
            other => Err(unexpected(other)),
        }
    }
}

/// One page of a list, before it becomes a [`ListResponse`].
struct Page {
    kvs: Vec<KeyValue>,
    /// How many keys under the prefix follow the page.
    remaining: u64,
}

impl Page {
    fn into_response(self, prefix: &str, revision: Revision) -> ListResponse {
        let continue_token = match (self.remaining, self.kvs.last()) {
            (0, _) | (_, None) => None,
            (_, Some(last)) => Some(encode_continue(
                prefix,
                &format!("{}\0", last.key),
                revision,
            )),
        };
        ListResponse {
            kvs: self.kvs,
            revision,
            continue_token,
            remaining: self.remaining,
        }
    }
}

/// Lists from memory: the keys under `prefix` from `start` on, at most `limit`.
fn list_latest(state: &State, prefix: &str, start: &str, limit: Option<usize>) -> Page {
    let mut items = state
        .latest
        .range::<str, _>((Bound::Included(start), Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(prefix));
    let kvs: Vec<KeyValue> = items
        .by_ref()
        .take(limit.unwrap_or(usize::MAX))
        .map(|(key, latest)| latest.with_key(key))
        .collect();
    Page {
        kvs,
        remaining: items.count() as u64,
    }
}

/// Fails with [`StorageError::FutureRevision`] if `revision` is after `current`.
fn check_not_future(revision: Revision, current: Revision) -> Result<()> {
    if revision > current {
        return Err(StorageError::FutureRevision {
            requested: revision,
            current,
        });
    }
    Ok(())
}

fn unexpected(outcome: Outcome) -> StorageError {
    StorageError::Internal(format!("unexpected committer outcome {outcome:?}"))
}

/// Publishes a progress notification every `interval` until the store is gone.
fn spawn_ticker(
    shared: std::sync::Weak<Shared>,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            match shared.upgrade() {
                Some(shared) => shared.publish_progress(),
                None => return,
            }
        }
    })
}
