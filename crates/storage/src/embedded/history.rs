//! Reads of redb's history: the latest state at startup, gets and lists at past revisions,
//! and the log replay that watches use to catch up.
//!
//! Every read at a past revision checks the compacted revision before and after it reads:
//! compaction marks the revision compacted before it deletes anything, so a read that still
//! sees its revision retained afterwards read nothing that compaction had touched.

use std::collections::BTreeMap;
use std::sync::Arc;

use redb::{ReadOnlyTable, ReadTransaction, ReadableDatabase, ReadableTable};

use super::tables::{
    HISTORY, LOG, LogEntry, after_revision, damaged, decode_log, decode_version, key_value,
    prefix_end, verify_version,
};
use super::{Latest, LatestVersions, Page, Shared};
use crate::{Event, EventKind, GetResponse, KeyValue, Result, Revision, StorageError};

type HistoryTable = ReadOnlyTable<(&'static [u8], u64), &'static [u8]>;

/// The latest version of every live key (per key, the last history entry, unless it is a
/// tombstone), verifying every entry on the way: each against its checksum, and none after
/// `revision`, the store's. Returns them and how many entries there are.
pub(super) fn latest_versions(
    history: &impl ReadableTable<(&'static [u8], u64), &'static [u8]>,
    revision: Revision,
) -> Result<(LatestVersions, u64)> {
    let mut latest = BTreeMap::new();
    let mut versions = 0u64;
    let entries = history.iter().map_err(StorageError::internal)?;
    let verify = |key: &[u8], rev: u64, raw: &[u8]| {
        verify_version(key, rev, raw)?;
        if rev > revision as u64 {
            return Err(after_revision("history value", rev, revision as u64));
        }
        versions += 1;
        Ok(())
    };
    fold_versions(entries, Revision::MAX, verify, |kv| {
        latest.insert(kv.key.clone(), Latest::of(&kv));
    })?;
    Ok((latest, versions))
}

/// `key` as it was at `revision`.
pub(super) fn get(shared: &Shared, key: Arc<str>, revision: Revision) -> Result<GetResponse> {
    let kv = retained_read(shared, revision, |txn| {
        let history = open_history(txn)?;
        version_at(&history, &key, revision)
    })?;
    Ok(GetResponse { kv, revision })
}

/// The keys under `prefix` from `start` on as they were at `revision`, at most `limit`.
pub(super) fn list(
    shared: &Shared,
    prefix: &str,
    start: &str,
    revision: Revision,
    limit: Option<usize>,
) -> Result<Page> {
    retained_read(shared, revision, |txn| {
        let history = open_history(txn)?;
        let end = prefix_end(prefix.as_bytes());
        let from = (start.as_bytes(), 0u64);
        let range = match &end {
            Some(end) => history.range(from..(end.as_slice(), 0u64)),
            None => history.range(from..),
        }
        .map_err(StorageError::internal)?;
        let mut page = Page {
            kvs: Vec::new(),
            remaining: 0,
        };
        let limit = limit.unwrap_or(usize::MAX);
        fold_versions(
            range,
            revision,
            |_, _, _| Ok(()),
            |kv| {
                if page.kvs.len() < limit {
                    page.kvs.push(kv);
                } else {
                    page.remaining += 1;
                }
            },
        )?;
        Ok(page)
    })
}

/// Replays the log after `after`: up to `chunk` log entries, keeping the changes `wanted`
/// accepts. Returns them, the last revision scanned, and whether the log ended before the
/// chunk was full (the caller has then caught up with what was committed).
pub(super) fn replay(
    shared: &Shared,
    after: Revision,
    chunk: usize,
    wanted: impl Fn(&str) -> bool,
) -> Result<(Vec<Event>, Revision, bool)> {
    retained_read(shared, after, |txn| {
        let log = txn.open_table(LOG).map_err(StorageError::internal)?;
        let history = open_history(txn)?;
        let mut events = Vec::new();
        let mut last = after;
        let mut scanned = 0;
        for entry in log
            .range((after as u64 + 1)..)
            .map_err(StorageError::internal)?
            .take(chunk)
        {
            let (revision, raw) = entry.map_err(StorageError::internal)?;
            last = revision.value() as Revision;
            scanned += 1;
            let entry = decode_log(last as u64, raw.value())?;
            if wanted(&entry.key) {
                events.push(replayed_event(&history, entry, last)?);
            }
        }
        Ok((events, last, scanned < chunk))
    })
}

/// Rebuilds the event of one log entry from the versions it wrote and replaced.
fn replayed_event(history: &HistoryTable, entry: LogEntry, revision: Revision) -> Result<Event> {
    let prev_kv = match entry.prev_revision {
        0 => None,
        prev => Some(
            exact_version(history, &entry.key, prev)?
                .ok_or_else(|| missing("previous version", &entry.key, prev))?,
        ),
    };
    let kv = match entry.kind {
        EventKind::Put => exact_version(history, &entry.key, revision)?
            .ok_or_else(|| missing("version", &entry.key, revision))?,
        EventKind::Delete => KeyValue {
            key: entry.key,
            value: Default::default(),
            create_revision: 0,
            mod_revision: revision,
        },
    };
    Ok(Event {
        kind: entry.kind,
        kv,
        prev_kv,
    })
}

/// Runs `read` on a snapshot, failing with [`StorageError::Compacted`] if `revision`'s history
/// was compacted before or while it ran.
fn retained_read<T>(
    shared: &Shared,
    revision: Revision,
    read: impl FnOnce(&ReadTransaction) -> Result<T>,
) -> Result<T> {
    shared.check_retained(revision)?;
    let txn = shared.db.begin_read().map_err(StorageError::internal)?;
    let value = read(&txn)?;
    shared.check_retained(revision)?;
    Ok(value)
}

fn open_history(txn: &ReadTransaction) -> Result<HistoryTable> {
    txn.open_table(HISTORY).map_err(StorageError::internal)
}

/// The version of `key` that was current at `revision`, if the key existed then.
fn version_at(history: &HistoryTable, key: &str, revision: Revision) -> Result<Option<KeyValue>> {
    let key_bytes = key.as_bytes();
    let last = history
        .range((key_bytes, 0u64)..=(key_bytes, revision as u64))
        .map_err(StorageError::internal)?
        .next_back()
        .transpose()
        .map_err(StorageError::internal)?;
    match last {
        Some((found, raw)) => {
            let found = found.value().1;
            let version = decode_version(key_bytes, found, raw.value())?;
            Ok(key_value(Arc::from(key), found as Revision, version))
        }
        None => Ok(None),
    }
}

/// The version of `key` written at exactly `revision`, if it was a put.
fn exact_version(
    history: &HistoryTable,
    key: &str,
    revision: Revision,
) -> Result<Option<KeyValue>> {
    let raw = history
        .get((key.as_bytes(), revision as u64))
        .map_err(StorageError::internal)?;
    match raw {
        Some(raw) => {
            let version = decode_version(key.as_bytes(), revision as u64, raw.value())?;
            Ok(key_value(Arc::from(key), revision, version))
        }
        None => Ok(None),
    }
}

/// Walks key-ordered history entries and calls `visit` with each key's version at
/// `revision` (its last entry at or before it, verified), skipping keys that did not exist
/// then; `check` sees every entry walked (key, revision, raw value) first.
fn fold_versions<'a>(
    entries: impl Iterator<Item = Result<HistoryEntry<'a>, redb::StorageError>>,
    revision: Revision,
    mut check: impl FnMut(&[u8], u64, &[u8]) -> Result<()>,
    mut visit: impl FnMut(KeyValue),
) -> Result<()> {
    let mut walked: Option<WalkedKey> = None;
    for entry in entries {
        let (key, raw) = entry.map_err(StorageError::internal)?;
        let (key, rev) = key.value();
        check(key, rev, raw.value())?;
        let rev = rev as Revision;
        if walked.as_ref().is_none_or(|walked| walked.key != key)
            && let Some(done) = walked.replace(WalkedKey::new(key))
        {
            done.visit(&mut visit)?;
        }
        if rev <= revision
            && let Some(walked) = walked.as_mut()
        {
            walked.best = Some((rev, raw.value().to_vec()));
        }
    }
    match walked {
        Some(done) => done.visit(&mut visit),
        None => Ok(()),
    }
}

/// One history entry as redb's iterators yield it.
type HistoryEntry<'a> = (
    redb::AccessGuard<'a, (&'static [u8], u64)>,
    redb::AccessGuard<'a, &'static [u8]>,
);

/// The key [`fold_versions`] is walking and its best version so far (revision, raw value).
struct WalkedKey {
    key: Vec<u8>,
    best: Option<(Revision, Vec<u8>)>,
}

impl WalkedKey {
    fn new(key: &[u8]) -> Self {
        WalkedKey {
            key: key.to_vec(),
            best: None,
        }
    }

    /// Calls `visit` with the key's version, unless it did not exist (or was deleted) then.
    fn visit(self, visit: &mut impl FnMut(KeyValue)) -> Result<()> {
        let Some((revision, raw)) = self.best else {
            return Ok(());
        };
        let version = decode_version(&self.key, revision as u64, &raw)?;
        let key = std::str::from_utf8(&self.key)
            .map_err(|_| damaged("key", &self.key, revision as u64))?;
        if let Some(kv) = key_value(Arc::from(key), revision, version) {
            visit(kv);
        }
        Ok(())
    }
}

/// The error of a log entry whose versions are missing from `history`.
fn missing(what: &str, key: &str, revision: Revision) -> StorageError {
    StorageError::Damaged(format!(
        "the embedded store's log names a {what} of key {key} at revision {revision} that \
         history does not hold"
    ))
}
