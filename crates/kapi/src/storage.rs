//! Storage selection: the embedded store in `<data-dir>/store/` by default, etcd when
//! `--etcd-servers` is given, and the compactor at `--etcd-compaction-interval`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kapi_storage::{Compactor, EmbeddedConfig, EmbeddedStore, EtcdConfig, EtcdStore, Store};

use crate::flags::ServeOptions;

/// The store the server runs on, the key prefix resources live under, and the compactor
/// (compacting for as long as this lives).
pub struct Storage {
    pub store: Arc<dyn Store>,
    /// `--etcd-prefix`: the REST layer builds keys as `<prefix>/<resource>/...`.
    pub prefix: String,
    /// Which store this is, for the startup log line.
    pub description: String,
    /// The embedded store's identity record (see [`IDENTITY_FILE`]).
    identity: Option<PathBuf>,
    _compactor: Option<Compactor>,
}

impl Storage {
    /// Opens the store the options select and starts compacting it.
    pub async fn open(options: &ServeOptions) -> Result<Storage> {
        let mut identity = None;
        let (store, description): (Arc<dyn Store>, String) = if options.etcd_servers.is_empty() {
            let dir = options.data_dir.join("store");
            let record = options.data_dir.join(IDENTITY_FILE);
            let recorded = check_store_file(&record, &dir)?;
            let store = Arc::new(open_embedded(&dir)?);
            record_identity(&record, recorded, store.current_revision().await?)?;
            identity = Some(record);
            (store, format!("embedded in {}", dir.display()))
        } else {
            let store = Arc::new(connect_etcd(options).await?);
            (store, format!("etcd at {}", options.etcd_servers.join(",")))
        };
        let compactor = compactor(store.clone(), options.etcd_compaction_interval);
        let prefix = options.etcd_prefix.trim_end_matches('/').to_string();
        Ok(Storage {
            store,
            prefix,
            description,
            identity,
            _compactor: compactor,
        })
    }

    /// Closes the storage after the server stopped: the embedded store's identity records
    /// the revision it was left at, so a later start on an older copy is refused.
    pub async fn close(self) -> Result<()> {
        if let Some(identity) = &self.identity {
            record_identity(identity, None, self.store.current_revision().await?)?;
        }
        Ok(())
    }
}

/// The record, beside the store directory, that a data directory holds an embedded store and
/// the revision it was at when kapi last started on it: a store that is missing, empty or
/// older than that is damage (a lost or replaced file), not a first start.
const IDENTITY_FILE: &str = "store-identity";

/// Fails if `identity` says the data directory held a store that the store directory `dir`
/// no longer has (no file, or an empty one); the revision it recorded, if any.
fn check_store_file(identity: &Path, dir: &Path) -> Result<Option<i64>> {
    let Ok(text) = std::fs::read_to_string(identity) else {
        return Ok(None);
    };
    let recorded: i64 = text
        .trim()
        .parse()
        .with_context(|| format!("reading {}", identity.display()))?;
    let file = dir.join(kapi_storage::EMBEDDED_DB_FILE);
    let damage = match std::fs::metadata(&file) {
        Err(_) => "is missing",
        Ok(meta) if meta.len() == 0 => "is empty",
        Ok(_) => return Ok(Some(recorded)),
    };
    bail!(
        "{} {damage}, but this data directory held a store at revision {recorded}: restore \
         the file from a backup, or delete {} to start over with an empty store",
        file.display(),
        identity.display()
    )
}

/// Records that the data directory holds a store at `revision`, after checking that it is
/// not older than the `recorded` one (a store file replaced by an older copy).
fn record_identity(identity: &Path, recorded: Option<i64>, revision: i64) -> Result<()> {
    if let Some(recorded) = recorded.filter(|recorded| revision < *recorded) {
        bail!(
            "the store is at revision {revision}, older than revision {recorded} this data \
             directory was at: the store file was replaced or rolled back; restore the right \
             file, or delete {} to serve this one",
            identity.display()
        );
    }
    let temporary = identity.with_extension("tmp");
    std::fs::write(&temporary, format!("{revision}\n"))
        .and_then(|()| std::fs::rename(&temporary, identity))
        .with_context(|| format!("writing {}", identity.display()))
}

/// Opens the embedded store in `dir`.
fn open_embedded(dir: &Path) -> Result<EmbeddedStore> {
    EmbeddedStore::open(EmbeddedConfig::new(dir))
        .with_context(|| format!("opening the embedded store in {}", dir.display()))
}

/// Connects to the etcd cluster the options name.
async fn connect_etcd(options: &ServeOptions) -> Result<EtcdStore> {
    let mut config = EtcdConfig::new(options.etcd_servers.clone());
    config.ca_file = options.etcd_cafile.clone();
    config.cert_file = options.etcd_certfile.clone();
    config.key_file = options.etcd_keyfile.clone();
    EtcdStore::connect(config)
        .await
        .with_context(|| format!("connecting to etcd at {}", options.etcd_servers.join(",")))
}

/// The compactor, unless the interval is zero (kube-apiserver's way of disabling it).
fn compactor(store: Arc<dyn Store>, interval: Duration) -> Option<Compactor> {
    (!interval.is_zero()).then(|| Compactor::spawn(store, interval))
}
