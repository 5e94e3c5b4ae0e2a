//! The on-disk layout of the embedded store: three redb tables.
//!
//! - `history`: `(key, revision)` → the key's value as written at that revision, or a
//!   tombstone. Every retained version of every key; a read at revision R takes, per key, the
//!   last entry at or before R.
//! - `log`: `revision` → which key changed at that revision, how, and its previous mod
//!   revision. Watches replay it; compaction walks it to find superseded versions.
//! - `meta`: the current and the compacted revision.
//!
//! Revisions are stored as u64 (they are always positive).

use std::sync::Arc;

use bytes::Bytes;
use redb::TableDefinition;

use crate::{Event, EventKind, KeyValue, Revision};

pub(super) const HISTORY: TableDefinition<(&[u8], u64), &[u8]> = TableDefinition::new("history");
pub(super) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// `meta` key of the revision of the last committed write.
pub(super) const META_REVISION: &str = "revision";
/// `meta` key of the compacted revision.
pub(super) const META_COMPACTED: &str = "compacted";

const TAG_PUT: u8 = 0;
const TAG_DELETE: u8 = 1;

/// One decoded `history` value.
pub(super) enum Version {
    Put {
        create_revision: Revision,
        value: Bytes,
    },
    Tombstone,
}

/// One decoded `log` value.
pub(super) struct LogEntry {
    pub kind: EventKind,
    pub key: Arc<str>,
    /// The key's mod revision before this change; 0 when this change created it.
    pub prev_revision: Revision,
}

/// Encodes the `history` value of an event into `buf`: tag, create revision, value.
pub(super) fn encode_version(event: &Event, buf: &mut Vec<u8>) {
    buf.clear();
    match event.kind {
        EventKind::Put => {
            buf.push(TAG_PUT);
            buf.extend_from_slice(&(event.kv.create_revision as u64).to_le_bytes());
            buf.extend_from_slice(&event.kv.value);
        }
        EventKind::Delete => buf.push(TAG_DELETE),
    }
}

/// Decodes a `history` value; `None` if it is malformed.
pub(super) fn decode_version(raw: &[u8]) -> Option<Version> {
    match raw.split_first()? {
        (&TAG_PUT, rest) if rest.len() >= 8 => {
            let (create, value) = rest.split_at(8);
            Some(Version::Put {
                create_revision: u64::from_le_bytes(create.try_into().ok()?) as Revision,
                value: Bytes::copy_from_slice(value),
            })
        }
        (&TAG_DELETE, []) => Some(Version::Tombstone),
        _ => None,
    }
}

/// Encodes the `log` value of an event into `buf`: tag, previous mod revision, key.
pub(super) fn encode_log(event: &Event, buf: &mut Vec<u8>) {
    buf.clear();
    buf.push(match event.kind {
        EventKind::Put => TAG_PUT,
        EventKind::Delete => TAG_DELETE,
    });
    let prev = event.prev_kv.as_ref().map_or(0, |kv| kv.mod_revision);
    buf.extend_from_slice(&(prev as u64).to_le_bytes());
    buf.extend_from_slice(event.kv.key.as_bytes());
}

/// Decodes a `log` value; `None` if it is malformed.
pub(super) fn decode_log(raw: &[u8]) -> Option<LogEntry> {
    let (&tag, rest) = raw.split_first()?;
    if rest.len() < 8 {
        return None;
    }
    let (prev, key) = rest.split_at(8);
    let kind = match tag {
        TAG_PUT => EventKind::Put,
        TAG_DELETE => EventKind::Delete,
        _ => return None,
    };
    Some(LogEntry {
        kind,
        key: Arc::from(std::str::from_utf8(key).ok()?),
        prev_revision: u64::from_le_bytes(prev.try_into().ok()?) as Revision,
    })
}

/// Makes the [`KeyValue`] of a `Put` version.
pub(super) fn key_value(key: Arc<str>, revision: Revision, version: Version) -> Option<KeyValue> {
    match version {
        Version::Put {
            create_revision,
            value,
        } => Some(KeyValue {
            key,
            value,
            create_revision,
            mod_revision: revision,
        }),
        Version::Tombstone => None,
    }
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None`
/// when there is none (the prefix is empty or all 0xff).
pub(super) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}
