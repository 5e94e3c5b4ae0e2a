//! Storage selection: the embedded store in `<data-dir>/store/` by default, etcd when
//! `--etcd-servers` is given, and the compactor at `--etcd-compaction-interval`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
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
    _compactor: Option<Compactor>,
}

impl Storage {
    /// Opens the store the options select and starts compacting it.
    pub async fn open(options: &ServeOptions) -> Result<Storage> {
        let (store, description): (Arc<dyn Store>, String) = if options.etcd_servers.is_empty() {
            let dir = options.data_dir.join("store");
            let store = Arc::new(open_embedded(&dir)?);
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
            _compactor: compactor,
        })
    }
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
