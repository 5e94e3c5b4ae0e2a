//! `kapi store check | snapshot | restore`: the embedded store's integrity check, backup and
//! recovery, as `etcdctl snapshot save` and `etcdutl snapshot restore` are etcd's.
//!
//! A snapshot of a data directory a kapi is serving comes from that kapi, over the Unix
//! socket it listens on in the data directory ([`SNAPSHOT_SOCKET`]); otherwise the command
//! takes the data directory's lock and reads the store file itself. Either way the snapshot is
//! written to `<file>.part`, read back and verified whole, and only then renamed to `<file>`.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use kapi_storage::{EMBEDDED_DB_FILE, EmbeddedStore, SnapshotInfo};
use tokio::task::JoinHandle;

use crate::data_dir;
use crate::options::{SnapshotOptions, StoreCommand, StoreOptions};
use crate::storage::{
    IDENTITY_FILE, check_identity, open_embedded, read_identity, record_identity, store_dir,
};

/// The socket, in the data directory, on which a serving kapi writes a snapshot of its
/// embedded store to whoever connects. Only the data directory's owner may connect.
pub const SNAPSHOT_SOCKET: &str = "store.sock";

/// Runs a `kapi store` command, printing what it found or did.
pub fn run(command: StoreCommand) -> Result<()> {
    match command {
        StoreCommand::Check(options) => check(&options),
        StoreCommand::Snapshot(options) => snapshot(&options),
        StoreCommand::Restore(options) => restore(&options),
    }
}

/// `kapi store check`.
fn check(options: &StoreOptions) -> Result<()> {
    let _lock = lock_offline(&options.data_dir, "check")?;
    let record = options.data_dir.join(IDENTITY_FILE);
    let identity = read_identity(&record)?;
    let closed = identity.is_some_and(|identity| identity.closed);
    let dir = store_dir(&options.data_dir);
    let census = EmbeddedStore::check(&dir, closed)
        .with_context(|| format!("the store in {} is damaged", dir.display()))?;
    check_identity(&record, identity, census.revision)?;
    println!(
        "{}: ok: revision {}, compacted at {}, {} keys, {} versions, {} log entries",
        dir.join(EMBEDDED_DB_FILE).display(),
        census.revision,
        census.compacted,
        census.keys,
        census.versions,
        census.log_entries
    );
    Ok(())
}

/// `kapi store snapshot`.
fn snapshot(options: &SnapshotOptions) -> Result<()> {
    let part = part_file(&options.file);
    let source = match UnixStream::connect(options.data_dir.join(SNAPSHOT_SOCKET)) {
        Ok(mut stream) => {
            copy_to(&mut stream, &part)?;
            "the kapi serving the data directory"
        }
        Err(_) => {
            let _lock = lock_offline(&options.data_dir, "snapshot")?;
            snapshot_offline(&options.data_dir, &part)?;
            "the store file"
        }
    };
    let info = verify(&part).inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })?;
    std::fs::rename(&part, &options.file)
        .with_context(|| format!("renaming {} to {}", part.display(), options.file.display()))?;
    println!(
        "Snapshot saved at {} from {source}: revision {}, {} records, {} bytes",
        options.file.display(),
        info.revision,
        info.records,
        info.bytes
    );
    Ok(())
}

/// Writes a snapshot of the store of a data directory no kapi serves to `path`.
fn snapshot_offline(data_dir: &Path, path: &Path) -> Result<()> {
    let identity = read_identity(&data_dir.join(IDENTITY_FILE))?;
    let dir = store_dir(data_dir);
    if !dir.join(EMBEDDED_DB_FILE).exists() {
        bail!("{} holds no store", data_dir.display());
    }
    // The store's progress ticker runs on a runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let _entered = runtime.enter();
    let store = open_embedded(&dir, identity.is_some_and(|identity| identity.closed))?;
    let mut out = BufWriter::new(create(path)?);
    store
        .write_snapshot(&mut out)
        .with_context(|| format!("writing {}", path.display()))?;
    finish(out, path)
}

/// `kapi store restore`.
fn restore(options: &SnapshotOptions) -> Result<()> {
    // A restore may make the data directory.
    std::fs::create_dir_all(&options.data_dir)
        .with_context(|| format!("creating {}", options.data_dir.display()))?;
    let _lock = lock_offline(&options.data_dir, "restore")?;
    let dir = store_dir(&options.data_dir);
    let mut input = BufReader::new(
        File::open(&options.file).with_context(|| format!("opening {}", options.file.display()))?,
    );
    let info = EmbeddedStore::restore_snapshot(&mut input, &dir)
        .with_context(|| format!("restoring {}", options.file.display()))?;
    record_identity(&options.data_dir.join(IDENTITY_FILE), info.revision, true)?;
    println!(
        "Restored {} into {}: revision {}, {} records",
        options.file.display(),
        dir.join(EMBEDDED_DB_FILE).display(),
        info.revision,
        info.records
    );
    Ok(())
}

/// Takes the data directory's lock for a command that needs the store file to itself.
fn lock_offline(data_dir: &Path, what: &str) -> Result<data_dir::DataDirLock> {
    if !data_dir.is_dir() {
        bail!("{} is not a data directory", data_dir.display());
    }
    data_dir::lock(data_dir).with_context(|| {
        format!("`kapi store {what}` needs the data directory to itself; stop the kapi serving it")
    })
}

/// Reads a snapshot file through, verifying it.
fn verify(path: &Path) -> Result<SnapshotInfo> {
    let mut input = BufReader::new(File::open(path)?);
    EmbeddedStore::verify_snapshot(&mut input)
        .with_context(|| format!("verifying the snapshot written to {}", path.display()))
}

/// Copies everything `stream` sends into a new file at `path`.
fn copy_to(stream: &mut UnixStream, path: &Path) -> Result<()> {
    let mut out = BufWriter::new(create(path)?);
    std::io::copy(stream, &mut out).context("receiving the snapshot")?;
    finish(out, path)
}

fn create(path: &Path) -> Result<File> {
    File::create(path).with_context(|| format!("creating {}", path.display()))
}

/// Flushes and syncs a written file.
fn finish(out: BufWriter<File>, path: &Path) -> Result<()> {
    let file = out
        .into_inner()
        .map_err(|err| err.into_error())
        .with_context(|| format!("writing {}", path.display()))?;
    file.sync_all()
        .with_context(|| format!("syncing {}", path.display()))
}

fn part_file(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".part");
    PathBuf::from(name)
}

/// The listener of [`SNAPSHOT_SOCKET`]; [`Self::stop`] closes it and removes the socket.
pub struct SnapshotSocket {
    task: JoinHandle<()>,
    path: PathBuf,
}

impl SnapshotSocket {
    /// Stops listening; returns once the listener has let go of the store (snapshots being
    /// written still hold it until they end).
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Listens on the data directory's [`SNAPSHOT_SOCKET`] and writes a snapshot of `store` to
/// every connection. A path too long for a Unix socket only costs online snapshots, so it is
/// logged, not fatal.
pub fn serve_snapshots(data_dir: &Path, store: Arc<EmbeddedStore>) -> Option<SnapshotSocket> {
    let path = data_dir.join(SNAPSHOT_SOCKET);
    // The data directory's lock is held: a socket file left there is a dead kapi's.
    let _ = std::fs::remove_file(&path);
    let listener = match bind_private(&path) {
        Ok(listener) => listener,
        Err(err) => {
            tracing::warn!(%err, "online snapshots are off: cannot listen on {}", path.display());
            return None;
        }
    };
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors, most likely: wait rather than spin.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            };
            let store = store.clone();
            tokio::task::spawn_blocking(move || send_snapshot(stream, &store));
        }
    });
    Some(SnapshotSocket { task, path })
}

/// Binds a Unix socket only its owner can connect to.
fn bind_private(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Writes a snapshot to one connection (blocking).
fn send_snapshot(stream: tokio::net::UnixStream, store: &EmbeddedStore) {
    let sent = stream
        .into_std()
        .and_then(|stream| stream.set_nonblocking(false).map(|()| stream))
        .map_err(|err| anyhow::anyhow!(err))
        .and_then(|stream| {
            let mut out = BufWriter::new(stream);
            let info = store.write_snapshot(&mut out)?;
            out.flush()?;
            Ok(info)
        });
    match sent {
        Ok(info) => tracing::info!(
            revision = info.revision,
            records = info.records,
            bytes = info.bytes,
            "snapshot sent"
        ),
        Err(err) => tracing::error!("snapshot failed: {err:#}"),
    }
}
