//! The committer thread: the embedded store's only writer.
//!
//! Group commit: the thread takes every request that is waiting (up to [`MAX_BATCH`]), decides
//! each against the latest state plus the batch's own earlier writes, writes all accepted ones
//! in one redb transaction and commits it with one fsync. Under concurrency, writers share
//! fsyncs; a lone writer pays one per write, as with etcd.
//!
//! Compaction also runs here, in chunks of [`COMPACTION_CHUNK`] log entries, each its own
//! transaction, with the write batches that arrive meanwhile committed in between.
//!
//! So does expiry (see `expiry`): between requests the thread waits no longer than the
//! earliest deadline, and deletes the keys that are due in the next batch, as writes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use redb::ReadableTable;
use tokio::sync::oneshot;

use super::expiry::{self, Deadline, Expiring};
use super::tables::{
    EXPIRY, HISTORY, LOG, META, META_COMPACTED, META_REVISION, decode_log, encode_log,
    encode_version,
};
use super::{Latest, Notification, Shared, State};
use crate::{DeleteResponse, Event, EventKind, KeyValue, Result, Revision, StorageError};

/// The most requests one transaction commits.
const MAX_BATCH: usize = 1024;
/// The most log entries one compaction transaction removes.
const COMPACTION_CHUNK: usize = 10_000;

/// What the committer is asked to do.
#[derive(Debug)]
pub(super) enum Op {
    Write(Write),
    Compact(Revision),
}

/// A write to one key. Creates and updates carry the key's new deadline, if it expires.
#[derive(Debug)]
pub(super) enum Write {
    Create(Arc<str>, Bytes, Option<Deadline>),
    Update(Arc<str>, Bytes, Revision, Option<Deadline>),
    Delete(Arc<str>, Option<Revision>),
}

impl Write {
    fn key(&self) -> &Arc<str> {
        match self {
            Write::Create(key, ..) | Write::Update(key, ..) | Write::Delete(key, _) => key,
        }
    }

    /// The key's deadline once this write is done.
    fn deadline(&self) -> Option<Deadline> {
        match self {
            Write::Create(_, _, deadline) | Write::Update(_, _, _, deadline) => *deadline,
            Write::Delete(..) => None,
        }
    }
}

/// A write and where to send its outcome.
struct WriteRequest {
    write: Write,
    reply: oneshot::Sender<Result<Outcome>>,
}

/// What a successful [`Op`] gives back.
#[derive(Debug)]
pub(super) enum Outcome {
    Written(Revision),
    Deleted(DeleteResponse),
    Compacted,
}

/// A compaction's revision and where to send its outcome.
type CompactRequest = (Revision, oneshot::Sender<Result<Outcome>>);

/// An [`Op`] and where to send its outcome.
pub(super) struct Request {
    pub op: Op,
    pub reply: oneshot::Sender<Result<Outcome>>,
}

pub(super) struct Committer {
    shared: Arc<Shared>,
    requests: mpsc::Receiver<Request>,
    /// The deadlines of the keys that expire, as the `expiry` table holds them.
    expiring: Expiring,
    /// No expiry is tried before this (after a failed commit, so that a failing disk does
    /// not have the thread retry due deletes in a busy loop).
    expiry_paused_until: Deadline,
    /// Reused encoding buffers.
    version_buf: Vec<u8>,
    log_buf: Vec<u8>,
}

impl Committer {
    /// Starts the committer thread; it ends when every sender of `requests` is dropped.
    pub fn spawn(
        shared: Arc<Shared>,
        requests: mpsc::Receiver<Request>,
        expiring: Expiring,
    ) -> Result<JoinHandle<()>> {
        let committer = Committer {
            shared,
            requests,
            expiring,
            expiry_paused_until: 0,
            version_buf: Vec::new(),
            log_buf: Vec::new(),
        };
        std::thread::Builder::new()
            .name("kapi-store-committer".into())
            .spawn(move || committer.run())
            .map_err(StorageError::internal)
    }

    fn run(mut self) {
        while let Some(first) = self.next_request() {
            let (mut writes, compactions) = self.take_batch(first);
            writes.extend(self.expirations());
            self.commit_writes(writes);
            for (revision, reply) in compactions {
                let _ = reply.send(self.compact(revision).map(|()| Outcome::Compacted));
            }
        }
    }

    /// Waits for the next request, or until the earliest deadline (`Some(None)`); `None`
    /// once the store is closed.
    fn next_request(&self) -> Option<Option<Request>> {
        let Some(deadline) = self.expiring.next() else {
            return self.requests.recv().ok().map(Some);
        };
        let deadline = deadline.max(self.expiry_paused_until);
        let wait = Duration::from_millis(deadline.saturating_sub(expiry::now()));
        match self.requests.recv_timeout(wait) {
            Ok(request) => Some(Some(request)),
            Err(mpsc::RecvTimeoutError::Timeout) => Some(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Deletes of the keys whose deadline has passed (up to [`MAX_BATCH`]); nobody waits
    /// for their outcome. Each is conditioned on the key's current mod revision, so a key
    /// written earlier in the same batch (which set or cleared its deadline) is spared. A
    /// deadline whose key is gone (never the case unless the table was changed behind the
    /// store's back) is forgotten.
    fn expirations(&mut self) -> Vec<WriteRequest> {
        let now = expiry::now();
        if now < self.expiry_paused_until {
            return Vec::new();
        }
        let due = self.expiring.due(now, MAX_BATCH);
        let state = self.shared.state.read();
        let mut writes = Vec::with_capacity(due.len());
        for key in due {
            let Some(current) = state.latest.get(&key) else {
                self.expiring.set(&key, None);
                continue;
            };
            let revision = current.mod_revision;
            writes.push(WriteRequest {
                write: Write::Delete(key, Some(revision)),
                reply: oneshot::channel().0,
            });
        }
        writes
    }

    /// `first` and every request already waiting behind it, up to [`MAX_BATCH`], split into
    /// writes and compactions.
    fn take_batch(&self, first: Option<Request>) -> (Vec<WriteRequest>, Vec<CompactRequest>) {
        let mut writes = Vec::new();
        let mut compactions = Vec::new();
        let waiting = std::iter::from_fn(|| self.requests.try_recv().ok());
        for request in first.into_iter().chain(waiting).take(MAX_BATCH) {
            match request.op {
                Op::Write(write) => writes.push(WriteRequest {
                    write,
                    reply: request.reply,
                }),
                Op::Compact(revision) => compactions.push((revision, request.reply)),
            }
        }
        (writes, compactions)
    }

    /// Decides, persists, applies and answers one batch of writes.
    fn commit_writes(&mut self, writes: Vec<WriteRequest>) {
        if writes.is_empty() {
            return;
        }
        let (decisions, events, deadlines, revision) = {
            let state = self.shared.state.read();
            plan(&state, &writes)
        };
        if !events.is_empty() {
            if let Err(err) = self.persist(&events, &deadlines, revision) {
                tracing::error!(%err, "embedded store commit failed");
                self.expiry_paused_until = expiry::now().saturating_add(1000);
                let err = StorageError::internal(err);
                for request in writes {
                    let _ = request.reply.send(Err(err.clone()));
                }
                return;
            }
            self.apply(events, revision);
            for (key, deadline) in &deadlines {
                self.expiring.set(key, *deadline);
            }
        }
        for (request, decision) in writes.into_iter().zip(decisions) {
            let _ = request.reply.send(decision);
        }
    }

    /// Writes a batch's events, the deadlines it changes and the new revision in one durable
    /// transaction.
    fn persist(
        &mut self,
        events: &[Event],
        deadlines: &[(Arc<str>, Option<Deadline>)],
        revision: Revision,
    ) -> Result<(), redb::Error> {
        let txn = self.shared.db.begin_write()?;
        self.persist_deadlines(&txn, deadlines)?;
        {
            let mut history = txn.open_table(HISTORY)?;
            let mut log = txn.open_table(LOG)?;
            let mut meta = txn.open_table(META)?;
            for event in events {
                let rev = event.revision() as u64;
                encode_version(event, &mut self.version_buf);
                history.insert((event.kv.key.as_bytes(), rev), self.version_buf.as_slice())?;
                encode_log(event, &mut self.log_buf);
                log.insert(rev, self.log_buf.as_slice())?;
            }
            meta.insert(META_REVISION, revision as u64)?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Writes the deadlines a batch sets and removes those it clears; the table is not even
    /// opened when the batch touches no key that expires.
    fn persist_deadlines(
        &self,
        txn: &redb::WriteTransaction,
        deadlines: &[(Arc<str>, Option<Deadline>)],
    ) -> Result<(), redb::Error> {
        let mut set_here = HashSet::new();
        let mut table = None;
        for (key, deadline) in deadlines {
            if deadline.is_none() && !self.expiring.contains(key) && !set_here.contains(key) {
                continue;
            }
            let table = match &mut table {
                Some(table) => table,
                None => table.insert(txn.open_table(EXPIRY)?),
            };
            match deadline {
                Some(deadline) => {
                    table.insert(key.as_bytes(), *deadline)?;
                    set_here.insert(key.clone());
                }
                None => {
                    table.remove(key.as_bytes())?;
                }
            }
        }
        Ok(())
    }

    /// Makes a durable batch visible: memory first, then watchers, under one lock so that
    /// readers and progress notifications see batches whole and in order.
    fn apply(&self, events: Vec<Event>, revision: Revision) {
        let mut state = self.shared.state.write();
        for event in &events {
            match event.kind {
                EventKind::Put => {
                    state
                        .latest
                        .insert(event.kv.key.clone(), Latest::of(&event.kv));
                }
                EventKind::Delete => {
                    state.latest.remove(&event.kv.key);
                }
            }
        }
        state.revision = revision;
        state.notify(Notification::Events(events.into()));
    }

    /// Drops history before `revision`: marks it compacted at once (reads check the mark), then
    /// deletes superseded versions and log entries chunk by chunk.
    fn compact(&mut self, revision: Revision) -> Result<()> {
        {
            let mut state = self.shared.state.write();
            if revision > state.revision {
                return Err(StorageError::FutureRevision {
                    requested: revision,
                    current: state.revision,
                });
            }
            if revision <= state.compacted {
                return Err(StorageError::Compacted {
                    requested: revision,
                    compacted: state.compacted,
                });
            }
            state.compacted = revision;
        }
        while self.compact_chunk(revision)? {
            // Let writers through between chunks.
            let (writes, compactions) = self.take_batch(None);
            self.commit_writes(writes);
            for (_, reply) in compactions {
                let busy = StorageError::InvalidRequest("a compaction is already running".into());
                let _ = reply.send(Err(busy));
            }
        }
        Ok(())
    }

    /// Removes up to one chunk of log entries at or before `revision`, with the versions they
    /// superseded and the tombstones they wrote. Returns whether more may remain.
    fn compact_chunk(&mut self, revision: Revision) -> Result<bool> {
        let txn = self
            .shared
            .db
            .begin_write()
            .map_err(StorageError::internal)?;
        let removed = {
            let mut history = txn.open_table(HISTORY).map_err(StorageError::internal)?;
            let mut log = txn.open_table(LOG).map_err(StorageError::internal)?;
            let mut meta = txn.open_table(META).map_err(StorageError::internal)?;
            meta.insert(META_COMPACTED, revision as u64)
                .map_err(StorageError::internal)?;
            let mut entries = Vec::new();
            for entry in log
                .range(..=revision as u64)
                .map_err(StorageError::internal)?
                .take(COMPACTION_CHUNK)
            {
                let (rev, raw) = entry.map_err(StorageError::internal)?;
                entries.push((rev.value(), decode_log(rev.value(), raw.value())?));
            }
            for (rev, entry) in &entries {
                log.remove(rev).map_err(StorageError::internal)?;
                let key = entry.key.as_bytes();
                if entry.prev_revision > 0 {
                    history
                        .remove((key, entry.prev_revision as u64))
                        .map_err(StorageError::internal)?;
                }
                if entry.kind == EventKind::Delete {
                    history
                        .remove((key, *rev))
                        .map_err(StorageError::internal)?;
                }
            }
            entries.len()
        };
        txn.commit().map_err(StorageError::internal)?;
        Ok(removed == COMPACTION_CHUNK)
    }
}

/// What [`plan`] decides for a batch: each request's answer, the events of the accepted
/// writes, the deadline each accepted write leaves its key with, and the batch's last
/// revision.
type Plan = (
    Vec<Result<Outcome>>,
    Vec<Event>,
    Vec<(Arc<str>, Option<Deadline>)>,
    Revision,
);

/// Decides every write of a batch against `state` and the batch's earlier writes.
fn plan(state: &State, writes: &[WriteRequest]) -> Plan {
    let mut revision = state.revision;
    let mut batch: HashMap<Arc<str>, Option<KeyValue>> = HashMap::new();
    let mut events = Vec::with_capacity(writes.len());
    let mut deadlines = Vec::with_capacity(writes.len());
    let decisions = writes
        .iter()
        .map(|request| {
            let key = request.write.key();
            let current = match batch.get(key) {
                Some(written) => written.clone(),
                None => state.latest(key),
            };
            let event = decide(&request.write, current.as_ref(), revision + 1)?;
            revision += 1;
            let outcome = match (event.kind, &event.prev_kv) {
                (EventKind::Delete, Some(prev_kv)) => Outcome::Deleted(DeleteResponse {
                    prev_kv: prev_kv.clone(),
                    revision,
                }),
                _ => Outcome::Written(revision),
            };
            let after = (event.kind == EventKind::Put).then(|| event.kv.clone());
            batch.insert(key.clone(), after);
            events.push(event);
            deadlines.push((key.clone(), request.write.deadline()));
            Ok(outcome)
        })
        .collect();
    (decisions, events, deadlines, revision)
}

/// The event `write` makes at `revision` given the key's `current` version, or why it fails.
fn decide(write: &Write, current: Option<&KeyValue>, revision: Revision) -> Result<Event> {
    match (write, current) {
        (Write::Create(key, ..), Some(_)) => Err(StorageError::KeyExists {
            key: key.to_string(),
        }),
        (Write::Create(key, value, _), None) => Ok(Event {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: revision,
                mod_revision: revision,
            },
            prev_kv: None,
        }),
        (Write::Update(key, ..) | Write::Delete(key, _), None) => Err(StorageError::KeyNotFound {
            key: key.to_string(),
        }),
        (
            Write::Update(key, _, expected, _) | Write::Delete(key, Some(expected)),
            Some(current),
        ) if current.mod_revision != *expected => Err(StorageError::Conflict {
            key: key.to_string(),
            expected: *expected,
            current: Box::new(current.clone()),
        }),
        (Write::Update(key, value, ..), Some(current)) => Ok(Event {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: current.create_revision,
                mod_revision: revision,
            },
            prev_kv: Some(current.clone()),
        }),
        (Write::Delete(key, _), Some(current)) => Ok(Event {
            kind: EventKind::Delete,
            kv: KeyValue {
                key: key.clone(),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: revision,
            },
            prev_kv: Some(current.clone()),
        }),
    }
}
