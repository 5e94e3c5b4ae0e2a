//! Opening the store file: redb's page check, the upgrade of values written without
//! checksums, and the verification of every value before anything is served.
//!
//! Every open reads the whole file twice: redb verifies the checksum of every page (a file
//! altered since redb wrote it fails instead of being trusted, or panicking), then every
//! `history` and `log` value is checked against its own checksum, so that damage is named by
//! key and revision.

use std::path::Path;

use redb::{
    Database, DatabaseError, ReadableTable, ReadableTableMetadata, RepairSession, TableHandle,
};

use super::expiry::Expiring;
use super::tables::{
    EXPIRY, FORMAT, HISTORY, LOG, META, META_COMPACTED, META_FORMAT, META_REVISION, after_revision,
    decode_log, upgrade_log, upgrade_version,
};
use super::{LatestVersions, history};
use crate::{Result, Revision, StorageError};

/// What a verified store holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreCensus {
    /// The revision of the last committed write.
    pub revision: Revision,
    /// History before this revision is gone.
    pub compacted: Revision,
    /// Live keys at `revision`.
    pub keys: u64,
    /// Retained versions (puts and tombstones) of all keys.
    pub versions: u64,
    /// Retained log entries (one per revision after `compacted`).
    pub log_entries: u64,
}

/// Opens the database file at `path` with every page verified. `clean` says the last process
/// that wrote it closed it: a last commit that then fails verification is damage, and opening
/// fails instead of letting redb roll back to the commit before (which it does, rightly, after
/// a crash tore the last commit's write). [`open_error`] names what failed.
pub(super) fn open_database(
    path: &Path,
    cache_size: usize,
    clean: bool,
) -> Result<Database, DatabaseError> {
    let mut builder = Database::builder();
    builder
        .set_cache_size(cache_size)
        .set_check_integrity_on_open(true);
    if clean {
        builder.set_repair_callback(refuse_rollback);
    }
    builder.create(path)
}

/// redb's repair reports progress 0.3 only after the last commit failed its checksums, just
/// before it rolls back to the commit before; a file closed cleanly has no torn commit.
fn refuse_rollback(session: &mut RepairSession) {
    let progress = session.progress();
    if progress > 0.0 && progress < 0.6 {
        session.abort();
    }
}

/// The error of opening the store file `path`: damage is [`StorageError::Damaged`].
pub(super) fn open_error(path: &Path, err: DatabaseError) -> StorageError {
    let file = path.display();
    match err {
        DatabaseError::RepairAborted => StorageError::Damaged(format!(
            "{file}: the last commit fails its page checksums although the file was closed \
             cleanly"
        )),
        DatabaseError::Storage(redb::StorageError::Corrupted(why)) => {
            StorageError::Damaged(format!("{file}: {why}"))
        }
        // A header redb cannot read (its magic number, a truncated file): the file is not
        // the store it was.
        DatabaseError::Storage(redb::StorageError::Io(err))
            if err.kind() == std::io::ErrorKind::InvalidData =>
        {
            StorageError::Damaged(format!("{file}: {err}"))
        }
        other => StorageError::Internal(format!("opening {file}: {other}")),
    }
}

/// Loads what the store holds in one write transaction: creates the tables on first open,
/// upgrades format 1 values, verifies every value, and rebuilds the latest version of every
/// live key. An empty store starts at revision 1, as etcd does. The transaction commits only
/// when it changed something: a restart of a current store then writes nothing (a commit is
/// a sync of the file, on the start's critical path).
pub(super) fn load(db: &Database) -> Result<(StoreCensus, LatestVersions, Expiring)> {
    let txn = db.begin_write().map_err(StorageError::internal)?;
    let tables_missing = tables_missing(&txn)?;
    let loaded = {
        let mut meta = txn.open_table(META).map_err(StorageError::internal)?;
        let mut log = txn.open_table(LOG).map_err(StorageError::internal)?;
        let mut history = txn.open_table(HISTORY).map_err(StorageError::internal)?;
        let read = |name| -> Result<Option<u64>> {
            Ok(meta
                .get(name)
                .map_err(StorageError::internal)?
                .map(|v| v.value()))
        };
        let recorded_revision = read(META_REVISION)?;
        let revision = recorded_revision.unwrap_or(1);
        let compacted = read(META_COMPACTED)?.unwrap_or(0);
        let empty = history.is_empty().map_err(StorageError::internal)?
            && log.is_empty().map_err(StorageError::internal)?;
        let format = read(META_FORMAT)?;
        match format {
            Some(FORMAT) => {}
            None if empty => {}
            None => upgrade(&mut history, &mut log)?,
            Some(other) => {
                return Err(StorageError::Internal(format!(
                    "the embedded store's values are in format {other}, which this kapi \
                     cannot read (it writes format {FORMAT}); run a newer kapi"
                )));
            }
        }
        let mut changed = tables_missing || format.is_none() || recorded_revision.is_none();
        if changed {
            meta.insert(META_FORMAT, FORMAT)
                .map_err(StorageError::internal)?;
            meta.insert(META_REVISION, revision)
                .map_err(StorageError::internal)?;
        }
        let log_entries = verify_log(&log, revision)?;
        let (latest, versions) = history::latest_versions(&history, revision as Revision)?;
        let (expiring, removed_stale) = load_expiry(&txn, &latest)?;
        changed |= removed_stale;
        let census = StoreCensus {
            revision: revision as Revision,
            compacted: compacted as Revision,
            keys: latest.len() as u64,
            versions,
            log_entries,
        };
        (census, latest, expiring, changed)
    };
    let (census, latest, expiring, changed) = loaded;
    match changed {
        true => txn.commit().map_err(StorageError::internal)?,
        false => txn.abort().map_err(StorageError::internal)?,
    }
    Ok((census, latest, expiring))
}

/// Whether one of the store's tables is not in the file yet (a first open, or a table newer
/// than the file): opening it in the load creates it, which must then be committed, as read
/// transactions cannot open a table that does not exist.
fn tables_missing(txn: &redb::WriteTransaction) -> Result<bool> {
    let present: Vec<String> = txn
        .list_tables()
        .map_err(StorageError::internal)?
        .map(|table| table.name().to_string())
        .collect();
    let wanted = [META.name(), LOG.name(), HISTORY.name(), EXPIRY.name()];
    Ok(wanted.iter().any(|name| !present.iter().any(|p| p == name)))
}

/// The deadlines of the live keys that expire, and whether a row was removed: a row whose
/// key is not live (which the committer never leaves behind) is.
fn load_expiry(txn: &redb::WriteTransaction, latest: &LatestVersions) -> Result<(Expiring, bool)> {
    let mut table = txn.open_table(EXPIRY).map_err(StorageError::internal)?;
    let mut expiring = Expiring::default();
    let mut stale = Vec::new();
    for row in table.iter().map_err(StorageError::internal)? {
        let (key, deadline) = row.map_err(StorageError::internal)?;
        let live = std::str::from_utf8(key.value())
            .ok()
            .and_then(|key| latest.get_key_value(key));
        match live {
            Some((key, _)) => expiring.set(key, Some(deadline.value())),
            None => stale.push(key.value().to_vec()),
        }
    }
    for key in &stale {
        table
            .remove(key.as_slice())
            .map_err(StorageError::internal)?;
    }
    Ok((expiring, !stale.is_empty()))
}

/// Checks every `log` entry against its checksum and the store's revision; how many there
/// are. (`history` is checked as the latest state is rebuilt from it.)
fn verify_log(log: &impl ReadableTable<u64, &'static [u8]>, revision: u64) -> Result<u64> {
    let mut log_entries = 0;
    for entry in log.iter().map_err(StorageError::internal)? {
        let (rev, raw) = entry.map_err(StorageError::internal)?;
        decode_log(rev.value(), raw.value())?;
        if rev.value() > revision {
            return Err(after_revision("log entry", rev.value(), revision));
        }
        log_entries += 1;
    }
    Ok(log_entries)
}

/// Rewrites every value of a format 1 store (written before values carried checksums) with
/// its checksum.
fn upgrade(
    history: &mut redb::Table<(&'static [u8], u64), &'static [u8]>,
    log: &mut redb::Table<u64, &'static [u8]>,
) -> Result<()> {
    let mut versions = Vec::new();
    for entry in history.iter().map_err(StorageError::internal)? {
        let (key, raw) = entry.map_err(StorageError::internal)?;
        let (key, rev) = key.value();
        let upgraded = upgrade_version(key, rev, raw.value())
            .ok_or_else(|| malformed("history value", rev))?;
        versions.push((key.to_vec(), rev, upgraded));
    }
    for (key, rev, value) in versions {
        history
            .insert((key.as_slice(), rev), value.as_slice())
            .map_err(StorageError::internal)?;
    }
    let mut entries = Vec::new();
    for entry in log.iter().map_err(StorageError::internal)? {
        let (rev, raw) = entry.map_err(StorageError::internal)?;
        let upgraded = upgrade_log(rev.value(), raw.value())
            .ok_or_else(|| malformed("log entry", rev.value()))?;
        entries.push((rev.value(), upgraded));
    }
    for (rev, value) in entries {
        log.insert(rev, value.as_slice())
            .map_err(StorageError::internal)?;
    }
    tracing::info!("embedded store upgraded: every value now carries a checksum");
    Ok(())
}

fn malformed(what: &str, revision: u64) -> StorageError {
    StorageError::Damaged(format!(
        "the embedded store's {what} at revision {revision} is malformed"
    ))
}

/// Verifies the store file in `dir` as an open would, without changing it: the checks run on
/// a copy (an open commits, and after damage redb's repair would rewrite the file), which is
/// removed afterwards.
pub(super) fn check(dir: &Path, closed_cleanly: bool) -> Result<StoreCensus> {
    let file = dir.join(super::DB_FILE);
    match std::fs::metadata(&file) {
        Err(err) => return Err(StorageError::Internal(format!("{}: {err}", file.display()))),
        Ok(meta) if meta.len() == 0 => {
            return Err(StorageError::Damaged(format!(
                "{} is empty",
                file.display()
            )));
        }
        Ok(_) => {}
    }
    let copy = dir.join(format!("{}.check", super::DB_FILE));
    let checked = std::fs::copy(&file, &copy)
        .map_err(|err| StorageError::Internal(format!("copying {}: {err}", file.display())))
        .and_then(|_| {
            // Errors name the file checked, not its copy.
            let db = open_database(&copy, 4 << 20, closed_cleanly)
                .map_err(|err| open_error(&file, err))?;
            load(&db).map(|(census, ..)| census)
        });
    let _ = std::fs::remove_file(&copy);
    checked
}
