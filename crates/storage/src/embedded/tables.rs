//! The on-disk layout of the embedded store: four redb tables.
//!
//! - `history`: `(key, revision)` → the key's value as written at that revision, or a
//!   tombstone. Every retained version of every key; a read at revision R takes, per key, the
//!   last entry at or before R.
//! - `log`: `revision` → which key changed at that revision, how, and its previous mod
//!   revision. Watches replay it; compaction walks it to find superseded versions.
//! - `meta`: the current and the compacted revision, and the format of the values.
//! - `expiry`: key → the deadline of a key written with a time to live (see `expiry`).
//!
//! Revisions are stored as u64 (they are always positive). Every `history` and `log` value
//! ends with a CRC-32 of its key, its revision and its bytes: redb checks its pages when the
//! store is opened, but not when a page is read later, and a value read back under another key
//! or revision would pass a checksum of its bytes alone. A value that fails is never served:
//! the read fails with [`StorageError::Damaged`] naming the key and revision.

use std::sync::Arc;

use bytes::Bytes;
use redb::TableDefinition;

use crate::{Event, EventKind, KeyValue, Revision, StorageError};

pub(super) const HISTORY: TableDefinition<(&[u8], u64), &[u8]> = TableDefinition::new("history");
pub(super) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub(super) const EXPIRY: TableDefinition<&[u8], u64> = TableDefinition::new("expiry");

/// `meta` key of the revision of the last committed write.
pub(super) const META_REVISION: &str = "revision";
/// `meta` key of the compacted revision.
pub(super) const META_COMPACTED: &str = "compacted";
/// `meta` key of the format of the `history` and `log` values; absent in stores written before
/// values carried checksums (format 1).
pub(super) const META_FORMAT: &str = "format";
/// The format this build writes: values end with their CRC-32.
pub(super) const FORMAT: u64 = 2;

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

/// Encodes the `history` value of an event into `buf`: tag, create revision, value, checksum.
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
    let sum = checksum(event.kv.key.as_bytes(), event.revision() as u64, buf);
    buf.extend_from_slice(&sum.to_le_bytes());
}

/// Decodes the `history` value of `key` at `revision`, verifying its checksum.
pub(super) fn decode_version(
    key: &[u8],
    revision: u64,
    raw: &[u8],
) -> Result<Version, StorageError> {
    Ok(match verified_version(key, revision, raw)? {
        VersionBody::Put(create_revision, value) => Version::Put {
            create_revision,
            value: Bytes::copy_from_slice(value),
        },
        VersionBody::Tombstone => Version::Tombstone,
    })
}

/// Checks the `history` value of `key` at `revision` against its checksum and its form,
/// without copying it.
pub(super) fn verify_version(key: &[u8], revision: u64, raw: &[u8]) -> Result<(), StorageError> {
    verified_version(key, revision, raw).map(|_| ())
}

/// The body of a `history` value, borrowed from it.
enum VersionBody<'a> {
    /// Create revision and value.
    Put(Revision, &'a [u8]),
    Tombstone,
}

fn verified_version<'a>(
    key: &[u8],
    revision: u64,
    raw: &'a [u8],
) -> Result<VersionBody<'a>, StorageError> {
    verified(key, revision, raw)
        .and_then(version_body)
        .ok_or_else(|| damaged("history value", key, revision))
}

/// Parses a `history` value without its checksum: tag, create revision, value.
fn version_body(body: &[u8]) -> Option<VersionBody<'_>> {
    match body.split_first()? {
        (&TAG_PUT, rest) if rest.len() >= 8 => {
            let (create, value) = rest.split_at(8);
            let create = u64::from_le_bytes(create.try_into().ok()?) as Revision;
            Some(VersionBody::Put(create, value))
        }
        (&TAG_DELETE, []) => Some(VersionBody::Tombstone),
        _ => None,
    }
}

/// Encodes the `log` value of an event into `buf`: tag, previous mod revision, key, checksum.
pub(super) fn encode_log(event: &Event, buf: &mut Vec<u8>) {
    buf.clear();
    buf.push(match event.kind {
        EventKind::Put => TAG_PUT,
        EventKind::Delete => TAG_DELETE,
    });
    let prev = event.prev_kv.as_ref().map_or(0, |kv| kv.mod_revision);
    buf.extend_from_slice(&(prev as u64).to_le_bytes());
    buf.extend_from_slice(event.kv.key.as_bytes());
    let sum = checksum(&[], event.revision() as u64, buf);
    buf.extend_from_slice(&sum.to_le_bytes());
}

/// Decodes the `log` value at `revision`, verifying its checksum.
pub(super) fn decode_log(revision: u64, raw: &[u8]) -> Result<LogEntry, StorageError> {
    verified(&[], revision, raw)
        .and_then(decode_log_body)
        .ok_or_else(|| damaged("log entry", b"", revision))
}

/// Decodes a `log` value without its checksum: tag, previous mod revision, key.
fn decode_log_body(body: &[u8]) -> Option<LogEntry> {
    let (&tag, rest) = body.split_first()?;
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

/// Re-encodes a format 1 `history` value (no checksum) of `key` at `revision` in this format;
/// `None` if it is malformed.
pub(super) fn upgrade_version(key: &[u8], revision: u64, raw: &[u8]) -> Option<Vec<u8>> {
    version_body(raw)?;
    Some(with_checksum(key, revision, raw))
}

/// Re-encodes a format 1 `log` value (no checksum) at `revision` in this format; `None` if it
/// is malformed.
pub(super) fn upgrade_log(revision: u64, raw: &[u8]) -> Option<Vec<u8>> {
    decode_log_body(raw)?;
    Some(with_checksum(&[], revision, raw))
}

fn with_checksum(key: &[u8], revision: u64, body: &[u8]) -> Vec<u8> {
    let mut value = body.to_vec();
    value.extend_from_slice(&checksum(key, revision, body).to_le_bytes());
    value
}

/// The CRC-32 that binds a value's bytes to its key and revision.
fn checksum(key: &[u8], revision: u64, body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&(key.len() as u64).to_le_bytes());
    hasher.update(key);
    hasher.update(&revision.to_le_bytes());
    hasher.update(body);
    hasher.finalize()
}

/// The value's bytes before its checksum, if the checksum matches.
fn verified<'a>(key: &[u8], revision: u64, raw: &'a [u8]) -> Option<&'a [u8]> {
    let (body, sum) = raw.split_at_checked(raw.len().checked_sub(4)?)?;
    (u32::from_le_bytes(sum.try_into().ok()?) == checksum(key, revision, body)).then_some(body)
}

/// The error of a value stored at a revision after the store's own.
pub(super) fn after_revision(what: &str, at: u64, revision: u64) -> StorageError {
    StorageError::Damaged(format!(
        "the embedded store holds a {what} at revision {at}, after its revision {revision}"
    ))
}

/// The error of a value that fails its checksum or does not decode.
pub(super) fn damaged(what: &str, key: &[u8], revision: u64) -> StorageError {
    let key = String::from_utf8_lossy(key);
    let key = if key.is_empty() {
        String::new()
    } else {
        format!(" of key {key}")
    };
    StorageError::Damaged(format!(
        "the embedded store's {what}{key} at revision {revision} fails its checksum"
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, revision: Revision, value: &str) -> Event {
        Event {
            kind: EventKind::Put,
            kv: KeyValue {
                key: key.into(),
                value: Bytes::from(value.to_string()),
                create_revision: 2,
                mod_revision: revision,
            },
            prev_kv: None,
        }
    }

    /// A value verifies only with its own bytes, key and revision: a damaged byte, or a value
    /// read back under another key or revision, fails with the key and revision named.
    #[test]
    fn checksums_bind_values_to_key_and_revision() {
        let mut buf = Vec::new();
        encode_version(&put("/r/a", 7, "value"), &mut buf);
        assert!(decode_version(b"/r/a", 7, &buf).is_ok());
        let err = decode_version(b"/r/b", 7, &buf).err().unwrap();
        assert_eq!(
            err.to_string(),
            "storage damaged: the embedded store's history value of key /r/b at revision 7 \
             fails its checksum"
        );
        assert!(decode_version(b"/r/a", 8, &buf).is_err());
        for at in 0..buf.len() {
            let mut flipped = buf.clone();
            flipped[at] ^= 0x01;
            assert!(decode_version(b"/r/a", 7, &flipped).is_err(), "byte {at}");
        }
        assert!(decode_version(b"/r/a", 7, &buf[..3]).is_err());
        assert!(decode_version(b"/r/a", 7, &[]).is_err());

        encode_log(&put("/r/a", 7, "value"), &mut buf);
        assert_eq!(&*decode_log(7, &buf).unwrap().key, "/r/a");
        assert!(decode_log(6, &buf).is_err());
        let mut flipped = buf.clone();
        flipped[9] ^= 0x01;
        assert!(decode_log(7, &flipped).is_err());
    }
}
