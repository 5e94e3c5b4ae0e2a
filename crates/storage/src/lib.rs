//! kapi's storage layer: one key-value interface with etcd's semantics and two backends.
//!
//! kube-apiserver keeps every object in etcd and takes the object's `resourceVersion` from
//! etcd's revision. This crate gives the rest of kapi the same contract through one trait,
//! [`Store`], implemented by:
//!
//! - [`EmbeddedStore`], the default: an MVCC log on [redb] in one data directory, with group
//!   commit (concurrent writers share one fsync) and watchers fed from memory.
//! - [`EtcdStore`]: etcd's v3 API through the `etcd-client` crate, for several kapi replicas.
//!
//! The contract, shared by both and checked by one conformance suite (`tests/conformance.rs`):
//! - Keys are strings (kube-apiserver's layout: `/registry/<resource>/<namespace>/<name>`),
//!   values are bytes. The store does not interpret either.
//! - One global revision, strictly increasing across all keys. Every write returns its new
//!   revision; every [`KeyValue`] carries its create and mod revision. A resourceVersion is a
//!   mod revision.
//! - Writes are conditional where kube-apiserver needs them to be: create fails if the key
//!   exists; update and delete can be conditioned on the mod revision (compare-and-swap).
//! - Reads at past revisions and watches from past revisions work until that history is
//!   compacted; after that they fail with [`StorageError::Compacted`].
//!
//! [redb]: https://docs.rs/redb

mod compactor;
mod continue_token;
mod embedded;
mod error;
mod etcd;
mod update;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

pub use compactor::Compactor;
pub use continue_token::{LATEST as LATEST_REVISION, decode_continue, encode_continue};
pub use embedded::{
    DB_FILE as EMBEDDED_DB_FILE, EmbeddedConfig, EmbeddedStore, SnapshotInfo, StoreCensus,
};
pub use error::{Result, StorageError};
pub use etcd::{EtcdConfig, EtcdStore};
pub use update::guaranteed_update;

/// A global store revision. Revisions start at 1 on an empty store; 0 is never a revision
/// (kube-apiserver gives resourceVersion "0" its own meaning).
pub type Revision = i64;

/// One stored key with its value and revisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Arc<str>,
    pub value: Bytes,
    /// The revision of the write that created this key (0 on a deletion event's `kv`).
    pub create_revision: Revision,
    /// The revision of the last write to this key: the object's resourceVersion.
    pub mod_revision: Revision,
}

/// The answer to [`Store::get`].
#[derive(Clone, Debug)]
pub struct GetResponse {
    /// The key's value at the requested revision, or `None` if it did not exist then.
    pub kv: Option<KeyValue>,
    /// The revision the read was served at.
    pub revision: Revision,
}

/// How to list a prefix.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Read at this revision instead of the latest (0 means the latest, as in etcd). Not
    /// allowed with `continue_token`, which carries the revision of the first page.
    pub revision: Option<Revision>,
    /// At most this many items; `None` or `Some(0)` for all.
    pub limit: Option<usize>,
    /// A token from an earlier [`ListResponse`] of the same prefix.
    pub continue_token: Option<String>,
}

/// The answer to [`Store::list`].
#[derive(Clone, Debug)]
pub struct ListResponse {
    /// The items, in key order.
    pub kvs: Vec<KeyValue>,
    /// The revision every page of this list is read at.
    pub revision: Revision,
    /// Set when more items follow; pass it back in [`ListOptions::continue_token`].
    pub continue_token: Option<String>,
    /// How many items follow this page (0 when `continue_token` is `None`).
    pub remaining: u64,
}

/// The answer to [`Store::delete`].
#[derive(Clone, Debug)]
pub struct DeleteResponse {
    /// The value the key had when it was deleted.
    pub prev_kv: KeyValue,
    /// The revision of the deletion.
    pub revision: Revision,
}

/// What to watch.
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// Watch every key that starts with the given key, not just the key itself.
    pub prefix: bool,
    /// Deliver every change made after this revision. `None` starts from the current revision.
    pub after: Option<Revision>,
}

/// The kind of a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A create or an update. It is a create when `kv.create_revision == kv.mod_revision`.
    Put,
    /// A deletion. `kv` has the key and the deletion's revision, an empty value and
    /// `create_revision` 0, as etcd reports it.
    Delete,
}

/// One change to one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub kv: KeyValue,
    /// The key's value before this change (always set on updates and deletions).
    pub prev_kv: Option<KeyValue>,
}

impl Event {
    /// The revision of the change.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }

    /// Whether this change created the key.
    pub fn is_create(&self) -> bool {
        self.kind == EventKind::Put && self.kv.create_revision == self.kv.mod_revision
    }
}

/// One item of a watch stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchResponse {
    /// Changes in revision order. Every change after the watch's start revision is delivered
    /// exactly once.
    Events(Vec<Event>),
    /// Every change up to this revision has been delivered. Sent periodically and after
    /// [`Store::request_progress`]; kube-apiserver turns these into bookmarks.
    Progress(Revision),
}

/// A watch: changes in order until dropped. An `Err` item is the last one.
pub type WatchStream = BoxStream<'static, Result<WatchResponse>>;

/// The storage interface of kapi, with etcd's semantics. See the crate documentation.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The current revision of the whole store.
    async fn current_revision(&self) -> Result<Revision>;

    /// Creates `key`; fails with [`StorageError::KeyExists`] if it exists. Returns the new
    /// revision, which is the key's create and mod revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        self.create_expiring(key, value, None).await
    }

    /// [`Store::create`], and with `ttl` the key expires: unless a later write sets it again,
    /// it is deleted (a new revision and a Delete event, as when an etcd lease expires) once
    /// `ttl` has passed, also across restarts. A key never expires early, and may outlive
    /// its `ttl` a little: on etcd by up to 5% (a minute at most), as kube-apiserver's keys
    /// share leases.
    async fn create_expiring(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<Revision>;

    /// Reads `key` at the latest revision (`None` or `Some(0)`, as etcd reads revision 0) or
    /// at a past one still retained.
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse>;

    /// Lists the keys that start with `prefix`, in key order, one consistent revision for all
    /// pages.
    async fn list(&self, prefix: &str, options: &ListOptions) -> Result<ListResponse>;

    /// Replaces the value of `key` if its mod revision is still `expected`. Fails with
    /// [`StorageError::KeyNotFound`] if it does not exist and [`StorageError::Conflict`]
    /// (carrying the current value) if it has changed. Returns the new revision. The key no
    /// longer expires, as a put without a lease detaches etcd's.
    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        self.update_expiring(key, value, expected, None).await
    }

    /// [`Store::update`], the key then expiring after `ttl` as [`Store::create_expiring`]'s.
    async fn update_expiring(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<Revision>;

    /// Deletes `key`, if given only while its mod revision is still `expected`. Fails with
    /// [`StorageError::KeyNotFound`] or [`StorageError::Conflict`] as [`Store::update`] does.
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse>;

    /// Watches `key` (or every key under it, with `options.prefix`) from `options.after`.
    /// Fails with [`StorageError::Compacted`] when `options.after` is older than the compacted
    /// revision (the change at the compacted revision itself can no longer be replayed).
    async fn watch(&self, key: &str, options: WatchOptions) -> Result<WatchStream>;

    /// Makes every open watch send a [`WatchResponse::Progress`] with the current revision once
    /// it has delivered every change up to it.
    async fn request_progress(&self) -> Result<()>;

    /// Whether a progress notification is always sent after every event up to its revision,
    /// so a cache fed by a watch may trust it to be caught up. True unless the backend says
    /// otherwise (etcd before 3.4.31 and 3.5.13 can send one ahead of events).
    fn ordered_progress(&self) -> bool {
        true
    }

    /// Whether every value it returns is as this server wrote it: only kapi writes the
    /// store, and the store checks its values' integrity itself (the embedded store's
    /// checksums), so that a value in kapi's own stored form need not be checked again on
    /// read. False for a store other writers share (etcd: anything with access may put any
    /// bytes under a key).
    fn values_trusted(&self) -> bool {
        false
    }

    /// Whether `kv`'s value, as stored, must be written again even when an update leaves
    /// it unchanged: it was encrypted with another key than the one writing now (upstream's
    /// stale values, which `kubectl replace` re-encrypts). False for plain stores.
    async fn is_stale(&self, kv: &KeyValue) -> Result<bool> {
        let _ = kv;
        Ok(false)
    }

    /// Drops the history before `revision`: reads and watches at older revisions fail with
    /// [`StorageError::Compacted`] from now on, and their space is reclaimed.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// One interval's turn of the compaction the servers sharing this store take together:
    /// compacts `turn.revision` (the revision current one interval ago; none on the first
    /// turn) unless another server took this interval's turn, and gives the next turn. A
    /// store only this server uses just compacts.
    async fn compaction_turn(&self, turn: CompactionTurn) -> Result<CompactionTurn> {
        if turn.revision != 0 {
            // A failed compaction still ends the turn, as upstream's: the next one tries
            // a newer revision.
            match self.compact(turn.revision).await {
                Ok(()) | Err(StorageError::Compacted { .. }) => {}
                Err(err) => tracing::warn!(%err, revision = turn.revision, "compaction failed"),
            }
        }
        Ok(CompactionTurn {
            version: turn.version + 1,
            revision: self.current_revision().await?,
        })
    }
}

/// Where a server stands in the shared compaction (kube-apiserver's `compact_rev_key`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionTurn {
    /// How many turns the server has seen taken (the key's version it expects).
    pub version: i64,
    /// The revision to compact at its next turn.
    pub revision: Revision,
}
