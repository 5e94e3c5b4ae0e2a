//! Snapshots of the embedded store: what `etcdctl snapshot save` and `restore` are to etcd.
//!
//! A snapshot is the four tables as one redb read transaction saw them, so it is consistent
//! at one revision while writes go on. It is a stream, written as it is read:
//!
//! ```text
//! "KAPISNAP" | format u32
//! records:  1 | name len u32 | name | u64               (meta)
//!           2 | key len u32 | key | revision u64 | value len u32 | value   (history)
//!           3 | revision u64 | value len u32 | value                       (log)
//!           4 | key len u32 | key | deadline u64                          (expiry)
//! end:      255 | record count u64 | SHA-256 of every byte before it
//! ```
//!
//! Integers are little-endian. History and log values keep their own checksums, so a value
//! damaged before the snapshot was taken is refused when it is written, and a snapshot damaged
//! afterwards is refused by the digest (and the values' checksums) when it is restored.

use std::io::{self, Read, Write};
use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable};
use ring::digest::{Context, SHA256};

use super::DB_FILE;
use super::tables::{
    EXPIRY, FORMAT, HISTORY, LOG, META, META_FORMAT, META_REVISION, decode_log, verify_version,
};
use crate::{Result, Revision, StorageError};

const MAGIC: &[u8; 8] = b"KAPISNAP";
const SNAPSHOT_FORMAT: u32 = 1;
const TAG_META: u8 = 1;
const TAG_HISTORY: u8 = 2;
const TAG_LOG: u8 = 3;
const TAG_EXPIRY: u8 = 4;
const TAG_END: u8 = 255;
/// Records written per transaction when restoring.
const RESTORE_CHUNK: u64 = 10_000;
/// The longest key and value a restore accepts: far beyond what the API server writes, small
/// enough that a damaged length cannot make it allocate without bound.
const MAX_KEY: usize = 1 << 20;
const MAX_VALUE: usize = 1 << 30;

/// What a snapshot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The store's revision when the snapshot was taken.
    pub revision: Revision,
    /// Records (meta entries, versions, log entries and deadlines) in the snapshot.
    pub records: u64,
    /// The snapshot's size in bytes.
    pub bytes: u64,
}

/// Writes a snapshot of `db` to `out`, verifying every value on the way.
pub(super) fn write(db: &Database, out: &mut dyn Write) -> Result<SnapshotInfo> {
    let txn = db.begin_read().map_err(StorageError::internal)?;
    let mut out = Hashing::new(out);
    out.put(MAGIC)?;
    out.put(&SNAPSHOT_FORMAT.to_le_bytes())?;
    let mut records = 0u64;
    let mut revision = None;
    let meta = txn.open_table(META).map_err(StorageError::internal)?;
    for entry in meta.iter().map_err(StorageError::internal)? {
        let (name, value) = entry.map_err(StorageError::internal)?;
        if name.value() == META_REVISION {
            revision = Some(value.value() as Revision);
        }
        out.put(&[TAG_META])?;
        out.put_bytes(name.value().as_bytes())?;
        out.put(&value.value().to_le_bytes())?;
        records += 1;
    }
    let history = txn.open_table(HISTORY).map_err(StorageError::internal)?;
    for entry in history.iter().map_err(StorageError::internal)? {
        let (key, raw) = entry.map_err(StorageError::internal)?;
        let (key, rev) = key.value();
        verify_version(key, rev, raw.value())?;
        out.put(&[TAG_HISTORY])?;
        out.put_bytes(key)?;
        out.put(&rev.to_le_bytes())?;
        out.put_bytes(raw.value())?;
        records += 1;
    }
    let log = txn.open_table(LOG).map_err(StorageError::internal)?;
    for entry in log.iter().map_err(StorageError::internal)? {
        let (rev, raw) = entry.map_err(StorageError::internal)?;
        decode_log(rev.value(), raw.value())?;
        out.put(&[TAG_LOG])?;
        out.put(&rev.value().to_le_bytes())?;
        out.put_bytes(raw.value())?;
        records += 1;
    }
    let expiry = txn.open_table(EXPIRY).map_err(StorageError::internal)?;
    for entry in expiry.iter().map_err(StorageError::internal)? {
        let (key, deadline) = entry.map_err(StorageError::internal)?;
        out.put(&[TAG_EXPIRY])?;
        out.put_bytes(key.value())?;
        out.put(&deadline.value().to_le_bytes())?;
        records += 1;
    }
    out.put(&[TAG_END])?;
    out.put(&records.to_le_bytes())?;
    let bytes = out.finish()?;
    Ok(SnapshotInfo {
        revision: revision.unwrap_or(1),
        records,
        bytes,
    })
}

/// Restores the snapshot read from `input` as the store file in `dir`, which must not hold
/// one. The file is built beside it and renamed into place only once the whole snapshot has
/// been read and verified, so a damaged or cut snapshot leaves nothing behind.
pub(super) fn restore(input: &mut dyn Read, dir: &Path) -> Result<SnapshotInfo> {
    let target = dir.join(DB_FILE);
    if std::fs::metadata(&target).is_ok_and(|meta| meta.len() > 0) {
        return Err(StorageError::InvalidRequest(format!(
            "{} already holds a store; move it away to restore a snapshot",
            target.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(StorageError::internal)?;
    let building = dir.join(format!("{DB_FILE}.restoring"));
    let _ = std::fs::remove_file(&building);
    let restored = build(input, &building);
    match restored {
        Ok(info) => {
            std::fs::rename(&building, &target).map_err(StorageError::internal)?;
            sync_dir(dir)?;
            Ok(info)
        }
        Err(err) => {
            let _ = std::fs::remove_file(&building);
            Err(err)
        }
    }
}

/// One record of a snapshot, verified.
pub(super) enum Record {
    Meta(String, u64),
    History(Vec<u8>, u64, Vec<u8>),
    Log(u64, Vec<u8>),
    Expiry(Vec<u8>, u64),
}

/// Reads a snapshot from `input`, verifying every record, its count and its digest, and
/// hands each record to `visit` as it is read.
pub(super) fn read(
    input: &mut dyn Read,
    mut visit: impl FnMut(Record) -> Result<()>,
) -> Result<SnapshotInfo> {
    let mut input = Hashing::new(input);
    let mut magic = [0u8; 8];
    input.take(&mut magic)?;
    if &magic != MAGIC {
        return Err(bad_snapshot("it does not start as a kapi snapshot does"));
    }
    let format = input.u32()?;
    if format != SNAPSHOT_FORMAT {
        return Err(bad_snapshot(&format!(
            "its format {format} is not the format {SNAPSHOT_FORMAT} this kapi reads"
        )));
    }
    let (mut records, mut revision, mut format) = (0u64, None, None);
    loop {
        let mut tag = [0u8; 1];
        input.take(&mut tag)?;
        let record = match tag[0] {
            TAG_META => {
                let name = String::from_utf8(input.bytes(MAX_KEY)?)
                    .map_err(|_| bad_snapshot("a meta name is not UTF-8"))?;
                let value = input.u64()?;
                match name.as_str() {
                    META_REVISION => revision = Some(value),
                    META_FORMAT => format = Some(value),
                    _ => {}
                }
                Record::Meta(name, value)
            }
            TAG_HISTORY => {
                let key = input.bytes(MAX_KEY)?;
                let rev = input.u64()?;
                let value = input.bytes(MAX_VALUE)?;
                verify_version(&key, rev, &value)?;
                Record::History(key, rev, value)
            }
            TAG_LOG => {
                let rev = input.u64()?;
                let value = input.bytes(MAX_VALUE)?;
                decode_log(rev, &value)?;
                Record::Log(rev, value)
            }
            TAG_EXPIRY => {
                let key = input.bytes(MAX_KEY)?;
                Record::Expiry(key, input.u64()?)
            }
            TAG_END => break,
            other => return Err(bad_snapshot(&format!("unknown record type {other}"))),
        };
        visit(record)?;
        records += 1;
    }
    let counted = input.u64()?;
    if counted != records {
        return Err(bad_snapshot(&format!(
            "it says it holds {counted} records but holds {records}"
        )));
    }
    input.check_digest()?;
    if format != Some(FORMAT) {
        return Err(bad_snapshot("it does not name the format of its values"));
    }
    let revision = revision.ok_or_else(|| bad_snapshot("it names no revision"))?;
    Ok(SnapshotInfo {
        revision: revision as Revision,
        records,
        bytes: input.count,
    })
}

/// Reads and verifies a snapshot into a new database file at `path`, committing every
/// [`RESTORE_CHUNK`] records.
fn build(input: &mut dyn Read, path: &Path) -> Result<SnapshotInfo> {
    let db = Database::create(path).map_err(StorageError::internal)?;
    let mut txn = db.begin_write().map_err(StorageError::internal)?;
    let mut pending = 0;
    let info = read(input, |record| {
        insert(&txn, record).map_err(StorageError::internal)?;
        pending += 1;
        if pending == RESTORE_CHUNK {
            let full =
                std::mem::replace(&mut txn, db.begin_write().map_err(StorageError::internal)?);
            full.commit().map_err(StorageError::internal)?;
            pending = 0;
        }
        Ok(())
    })?;
    txn.commit().map_err(StorageError::internal)?;
    Ok(info)
}

fn insert(txn: &redb::WriteTransaction, record: Record) -> Result<(), redb::Error> {
    match record {
        Record::Meta(name, value) => {
            txn.open_table(META)?.insert(name.as_str(), value)?;
        }
        Record::History(key, rev, value) => {
            txn.open_table(HISTORY)?
                .insert((key.as_slice(), rev), value.as_slice())?;
        }
        Record::Log(rev, value) => {
            txn.open_table(LOG)?.insert(rev, value.as_slice())?;
        }
        Record::Expiry(key, deadline) => {
            txn.open_table(EXPIRY)?.insert(key.as_slice(), deadline)?;
        }
    }
    Ok(())
}

fn bad_snapshot(why: &str) -> StorageError {
    StorageError::Damaged(format!("the snapshot is not usable: {why}"))
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(StorageError::internal)
}

/// A reader or writer that hashes and counts what passes through it.
struct Hashing<T> {
    inner: T,
    digest: Context,
    count: u64,
}

impl<T> Hashing<T> {
    fn new(inner: T) -> Self {
        Hashing {
            inner,
            digest: Context::new(&SHA256),
            count: 0,
        }
    }
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.digest.update(bytes);
        self.count += bytes.len() as u64;
        self.inner.write_all(bytes).map_err(write_error)
    }

    /// Writes a length-prefixed byte string.
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let len = u32::try_from(bytes.len()).map_err(StorageError::internal)?;
        self.put(&len.to_le_bytes())?;
        self.put(bytes)
    }

    /// Writes the digest of everything written and flushes; returns the size written.
    fn finish(mut self) -> Result<u64> {
        let digest = self.digest.clone().finish();
        self.inner.write_all(digest.as_ref()).map_err(write_error)?;
        self.inner.flush().map_err(write_error)?;
        Ok(self.count + digest.as_ref().len() as u64)
    }
}

impl<R: Read> Hashing<R> {
    fn take(&mut self, buf: &mut [u8]) -> Result<()> {
        self.inner.read_exact(buf).map_err(read_error)?;
        self.digest.update(buf);
        self.count += buf.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32> {
        let mut buf = [0u8; 4];
        self.take(&mut buf)?;
        Ok(u32::from_le_bytes(buf))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut buf = [0u8; 8];
        self.take(&mut buf)?;
        Ok(u64::from_le_bytes(buf))
    }

    /// Reads a length-prefixed byte string of at most `max` bytes.
    fn bytes(&mut self, max: usize) -> Result<Vec<u8>> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(bad_snapshot(&format!("a record claims {len} bytes")));
        }
        let mut buf = vec![0u8; len];
        self.take(&mut buf)?;
        Ok(buf)
    }

    /// Reads the digest that ends the snapshot, compares it with what was read, and checks
    /// that nothing follows it.
    fn check_digest(&mut self) -> Result<()> {
        let expected = self.digest.clone().finish();
        let mut found = vec![0u8; expected.as_ref().len()];
        self.inner.read_exact(&mut found).map_err(read_error)?;
        self.count += found.len() as u64;
        if found != expected.as_ref() {
            return Err(bad_snapshot(
                "its SHA-256 digest does not match its content",
            ));
        }
        let mut more = [0u8; 1];
        match self.inner.read(&mut more) {
            Ok(0) => Ok(()),
            Ok(_) => Err(bad_snapshot("bytes follow its end")),
            Err(err) => Err(read_error(err)),
        }
    }
}

fn write_error(err: io::Error) -> StorageError {
    StorageError::Internal(format!("writing the snapshot: {err}"))
}

fn read_error(err: io::Error) -> StorageError {
    if err.kind() == io::ErrorKind::UnexpectedEof {
        bad_snapshot("it ends early (cut short?)")
    } else {
        StorageError::Internal(format!("reading the snapshot: {err}"))
    }
}
