//! Storage selection: the embedded store in `<data-dir>/store/` by default, etcd when
//! `--etcd-servers` is given, and the compactor at `--etcd-compaction-interval`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kapi_storage::{
    Compactor, EmbeddedConfig, EmbeddedStore, EtcdConfig, EtcdStore, StorageError, Store,
};

use kapi_server::encryption::{EncryptionConfig, Metrics as EncryptionMetrics};

use crate::options::ServeOptions;

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
    /// The embedded store, for snapshots; `None` on etcd.
    pub embedded: Option<Arc<EmbeddedStore>>,
    /// Encryption at rest (`--encryption-provider-config`).
    pub encryption: Option<Arc<EncryptionConfig>>,
    /// The transformation metrics of encryption at rest.
    pub encryption_metrics: EncryptionMetrics,
    _compactor: Option<Compactor>,
}

impl Storage {
    /// Opens the store the options select and starts compacting it.
    pub async fn open(options: &ServeOptions) -> Result<Storage> {
        let hostname = gethostname::gethostname().to_string_lossy().into_owned();
        let encryption_metrics =
            EncryptionMetrics::new(&kapi_controllers::api_server_id(&hostname));
        let reload = options.encryption_provider_config_automatic_reload;
        let encryption = match &options.encryption_provider_config {
            Some(path) => Some(EncryptionConfig::load(path, reload, &encryption_metrics).await?),
            None if reload => bail!(
                "--encryption-provider-config-automatic-reload must be set with --encryption-provider-config"
            ),
            None => None,
        };
        let mut identity = None;
        let mut embedded = None;
        let (store, description): (Arc<dyn Store>, String) = if options.etcd_servers.is_empty() {
            let dir = store_dir(&options.data_dir);
            let record = options.data_dir.join(IDENTITY_FILE);
            let recorded = check_store_file(&record, &dir)?;
            let closed_cleanly = recorded.is_some_and(|identity| identity.closed);
            let store = Arc::new(open_embedded(&dir, closed_cleanly)?);
            let revision = store.current_revision().await?;
            check_identity(&record, recorded, revision)?;
            record_identity(&record, revision, false)?;
            identity = Some(record);
            embedded = Some(store.clone());
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
            embedded,
            encryption,
            encryption_metrics,
            _compactor: compactor,
        })
    }

    /// Closes the storage after the server stopped: the embedded store's identity records
    /// the revision it was left at, so a later start on an older copy is refused, and whether
    /// it was closed cleanly.
    pub async fn close(self) -> Result<()> {
        if let (Some(identity), Some(store)) = (&self.identity, &self.embedded) {
            // Controllers may still be writing: closing makes their writes fail and waits for
            // the one in flight, so the revision recorded is the last and no commit is torn.
            let closing = store.clone();
            tokio::task::spawn_blocking(move || closing.close())
                .await
                .context("closing the embedded store")?;
            record_identity(identity, store.current_revision().await?, true)?;
        }
        Ok(())
    }
}

/// The record, beside the store directory, that a data directory holds an embedded store:
/// the revision it was at when kapi last started on it or stopped, and whether that stop was
/// clean. A store that is missing, empty or older than that is damage (a lost or replaced
/// file), not a first start; a store closed cleanly has no torn last commit to roll back.
pub(crate) const IDENTITY_FILE: &str = "store-identity";

/// The embedded store's directory in a data directory.
pub(crate) fn store_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("store")
}

/// What the identity record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    pub revision: i64,
    /// The last kapi on the store stopped cleanly (it was not killed or crashed).
    pub closed: bool,
}

/// Reads the identity record, if there is one: `<revision>` or `<revision> closed`.
pub(crate) fn read_identity(path: &Path) -> Result<Option<Identity>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    let mut words = text.split_whitespace();
    let revision = words
        .next()
        .and_then(|word| word.parse().ok())
        .with_context(|| format!("{} does not start with a revision", path.display()))?;
    let closed = words.next() == Some("closed");
    Ok(Some(Identity { revision, closed }))
}

/// Fails if `identity` says the data directory held a store that the store directory `dir`
/// no longer has (no file, or an empty one); what the record says, if there is one.
fn check_store_file(identity: &Path, dir: &Path) -> Result<Option<Identity>> {
    let Some(recorded) = read_identity(identity)? else {
        return Ok(None);
    };
    let file = dir.join(kapi_storage::EMBEDDED_DB_FILE);
    let damage = match std::fs::metadata(&file) {
        Err(_) => "is missing",
        Ok(meta) if meta.len() == 0 => "is empty",
        Ok(_) => return Ok(Some(recorded)),
    };
    bail!(
        "{} {damage}, but this data directory held a store at revision {}: restore a \
         snapshot with `kapi store restore`, or delete {} to start over with an empty store",
        file.display(),
        recorded.revision,
        identity.display()
    )
}

/// Fails if the store's `revision` is older than the `recorded` one (a store file replaced
/// by an older copy).
pub(crate) fn check_identity(
    identity: &Path,
    recorded: Option<Identity>,
    revision: i64,
) -> Result<()> {
    if let Some(recorded) = recorded.filter(|recorded| revision < recorded.revision) {
        bail!(
            "the store is at revision {revision}, older than revision {} this data directory \
             was at: the store file was replaced or rolled back; restore the right file or a \
             snapshot, or delete {} to serve this one",
            recorded.revision,
            identity.display()
        );
    }
    Ok(())
}

/// Records that the data directory holds a store at `revision`, closed cleanly or not.
pub(crate) fn record_identity(identity: &Path, revision: i64, closed: bool) -> Result<()> {
    let temporary = identity.with_extension("tmp");
    let closed = if closed { " closed" } else { "" };
    std::fs::write(&temporary, format!("{revision}{closed}\n"))
        .and_then(|()| std::fs::rename(&temporary, identity))
        .with_context(|| format!("writing {}", identity.display()))
}

/// Opens the embedded store in `dir`. Damage fails the open with what is damaged and the
/// ways back.
pub(crate) fn open_embedded(dir: &Path, closed_cleanly: bool) -> Result<EmbeddedStore> {
    let config = EmbeddedConfig {
        closed_cleanly,
        ..EmbeddedConfig::new(dir)
    };
    match EmbeddedStore::open(config) {
        Ok(store) => Ok(store),
        Err(StorageError::Damaged(why)) => bail!(
            "the embedded store in {} is damaged and will not be served: {why}; restore a \
             snapshot with `kapi store restore` (after moving the damaged file away)",
            dir.display()
        ),
        Err(err) => {
            Err(err).with_context(|| format!("opening the embedded store in {}", dir.display()))
        }
    }
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
