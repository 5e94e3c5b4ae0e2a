//! Encryption at rest as kube-apiserver's (`k8s.io/apiserver/pkg/storage/value` and
//! `server/options/encryptionconfig`): the `--encryption-provider-config` file, and for each
//! resource it names a [`Transformer`] that encrypts values on their way to storage and
//! decrypts them on their way back, in upstream's byte formats (values start
//! `k8s:enc:<provider>:v1:<key name>:` or `k8s:enc:kms:v2:<provider name>:`), so that a
//! store encrypted by kube-apiserver is read by kapi and the reverse.
//!
//! Providers: `identity`, `aescbc`, `aesgcm` (the etcd key authenticated), `secretbox`, and
//! `kms` of `apiVersion: v2` (a plugin over gRPC on a Unix socket, see [`kms`]). KMS v1 is
//! refused as kube-apiserver refuses it without its deprecated feature gate.
//!
//! With `--encryption-provider-config-automatic-reload` the file is read again every minute
//! and, when it changed, valid and its KMS plugins healthy, replaces the configuration in
//! use; transformers look their providers up at each value, so every resource follows.

mod ciphers;
mod config;
pub mod kms;
mod metrics;
mod transformer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

pub use metrics::Metrics;
pub use transformer::{ENCRYPTED_PREFIX, IDENTITY_READ_ENCRYPTED, Read, Transformer};

use ciphers::Cipher;
use config::{EncryptionConfiguration, ProviderConfiguration, decode_secret, group_resource};
use kms::KmsProvider;
use transformer::{Kind, Provider};

/// Why a configuration file was refused, in kube-apiserver's words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// How often the reload controller reads the file.
const RELOAD_POLL: Duration = Duration::from_secs(60);
/// How long a reloaded configuration's KMS plugins have to become healthy, at least.
const RELOAD_HEALTH_WAIT: Duration = Duration::from_secs(10);

/// The providers of each resource a file names, by group then resource, `*` standing for
/// any.
type ProvidersByName = HashMap<String, HashMap<String, Arc<[Arc<Provider>]>>>;

/// A group and a resource of the file, `*` standing for any.
type GroupResource = (String, String);

/// One loading of the file.
struct Loaded {
    providers: ProvidersByName,
    /// Its KMS providers, in the file's order, for the health check.
    kms: Vec<Arc<KmsProvider>>,
    /// `sha256:<hex>` of the file, as upstream's `last_config_info` reports it.
    hash: String,
}

/// The encryption configuration in use: loaded from `--encryption-provider-config`, and
/// replaced when the file changes if it is reloaded automatically.
pub struct EncryptionConfig {
    path: PathBuf,
    reload: bool,
    current: RwLock<Arc<Loaded>>,
    /// Counting every transformation.
    metrics: Metrics,
}

impl EncryptionConfig {
    /// Reads, validates and builds the file at `path` (its KMS providers probed once);
    /// `reload` is `--encryption-provider-config-automatic-reload`; `metrics` count every
    /// transformation.
    pub async fn load(
        path: &Path,
        reload: bool,
        metrics: &Metrics,
    ) -> Result<Arc<EncryptionConfig>, ConfigError> {
        let loaded = load(path, reload, metrics).await?;
        metrics.config_in_use(&loaded.hash);
        Ok(Arc::new(EncryptionConfig {
            path: path.to_path_buf(),
            reload,
            current: RwLock::new(Arc::new(loaded)),
            metrics: metrics.clone(),
        }))
    }

    /// The transformer of `group`/`resource` (events.k8s.io Events are core's `events`),
    /// whose providers are, at each value, the configuration's for the exact name, else its
    /// group's `*.<group>`, else `*.*`; a resource none names is stored as it is.
    pub fn transformer(self: &Arc<Self>, group: &str, resource: &str) -> Arc<Transformer> {
        Arc::new(Transformer {
            config: self.clone(),
            group: group.to_string(),
            resource: resource.to_string(),
            label: shown_name(group, resource),
        })
    }

    /// The providers of `group`/`resource` in the configuration in use.
    fn providers(&self, group: &str, resource: &str) -> Option<Arc<[Arc<Provider>]>> {
        let current = self.current.read();
        let get = |g: &str, r: &str| current.providers.get(g)?.get(r).cloned();
        get(group, resource)
            .or_else(|| get(group, "*"))
            .or_else(|| get("*", "*"))
    }

    /// `sha256:<hex>` of the file in use.
    pub fn hash(&self) -> String {
        self.current.read().hash.clone()
    }

    /// Whether `/healthz` and `/readyz` carry the `kms-providers` check: when the file has
    /// KMS providers, or may gain some on reload.
    pub fn has_kms_check(&self) -> bool {
        self.reload || !self.current.read().kms.is_empty()
    }

    /// The `kms-providers` check: every KMS provider of the configuration in use healthy,
    /// failures named `kms-provider-<i>`.
    pub async fn check_kms(&self) -> Result<(), String> {
        let kms = self.current.read().kms.clone();
        check_all(&kms).await
    }

    /// Reads the file every minute, and uses it in place of the current one when it
    /// changed, is valid and its KMS plugins become healthy within ten seconds (or the old
    /// configuration's grace); a file that fails is logged, counted and retried at the next
    /// poll, the configuration in use kept. Never returns: the caller stops it.
    pub async fn reload_forever(self: Arc<Self>) {
        let mut poll = tokio::time::interval(RELOAD_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            poll.tick().await;
            if let Err(err) = self.reload_if_changed().await {
                self.metrics.reload(false);
                tracing::error!(
                    "error processing encryption config file {}: {err}",
                    self.path.display()
                );
            }
        }
    }

    /// One poll of the reload controller.
    async fn reload_if_changed(&self) -> Result<(), ConfigError> {
        let data = std::fs::read(&self.path)
            .map_err(|err| ConfigError(format!("error reading {}: {err}", self.path.display())))?;
        if metrics::sha256_label(&data) == self.hash() {
            return Ok(());
        }
        let loaded = load(&self.path, true, &self.metrics).await?;
        let wait = RELOAD_HEALTH_WAIT.max(self.grace_period());
        let deadline = tokio::time::Instant::now() + wait;
        let mut last = check_all(&loaded.kms).await;
        while let Err(err) = &last {
            if tokio::time::Instant::now() >= deadline {
                return Err(ConfigError(format!(
                    "health check for new transformers failed, polling error timed out waiting for the condition: {err}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            last = check_all(&loaded.kms).await;
        }
        let hash = loaded.hash.clone();
        *self.current.write() = Arc::new(loaded);
        self.metrics.reload(true);
        self.metrics.config_in_use(&hash);
        tracing::info!(
            "loaded new encryption config from {}: {hash}",
            self.path.display()
        );
        Ok(())
    }

    /// How long the configuration in use may still have KMS calls in flight: twice the sum
    /// of its providers' timeouts, as upstream's `KMSCloseGracePeriod`.
    fn grace_period(&self) -> Duration {
        let current = self.current.read();
        2 * current
            .kms
            .iter()
            .map(|kms| kms.timeout())
            .sum::<Duration>()
    }
}

/// Every provider of `kms` healthy, failures named by index and aggregated.
async fn check_all(kms: &[Arc<KmsProvider>]) -> Result<(), String> {
    let mut errors = Vec::new();
    for (i, provider) in kms.iter().enumerate() {
        if let Err(err) = provider.check().await {
            errors.push(format!("kms-provider-{i}: {err}"));
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Reads, validates and builds the file at `path`.
async fn load(path: &Path, reload: bool, metrics: &Metrics) -> Result<Loaded, ConfigError> {
    let shown = path.display();
    let parsing = |err: String| ConfigError(format!("error while parsing file: {err}"));
    let data = std::fs::read(path).map_err(|err| {
        parsing(format!(
            "error while loading file: error reading encryption provider configuration file {:?}: {err}",
            shown.to_string()
        ))
    })?;
    if data.is_empty() {
        return Err(parsing(format!(
            "error while loading file: encryption provider configuration file {:?} is empty",
            shown.to_string()
        )));
    }
    let decoding = |err: String| {
        parsing(format!(
            "error decoding encryption provider configuration file {:?}: {err}",
            shown.to_string()
        ))
    };
    let text = std::str::from_utf8(&data).map_err(|err| decoding(err.to_string()))?;
    let file: EncryptionConfiguration = serde_yaml_ng::from_str(text)
        .map_err(|err| decoding(format!("strict decoding error: {err}")))?;
    let known = matches!(
        (file.api_version.as_str(), file.kind.as_str()),
        ("apiserver.config.k8s.io/v1", "EncryptionConfiguration") | ("v1", "EncryptionConfig")
    );
    if !known {
        return Err(decoding(format!(
            "no kind {:?} is registered for version {:?}",
            file.kind, file.api_version
        )));
    }
    file.check_durations().map_err(decoding)?;
    if let Some(message) = file.validate(reload).aggregate_message() {
        return Err(parsing(message));
    }
    let building = |err: String| ConfigError(format!("error while building transformers: {err}"));
    let (providers, kms) = build(&file, metrics).await.map_err(building)?;
    Ok(Loaded {
        providers,
        kms,
        hash: metrics::sha256_label(&data),
    })
}

/// The providers of the file's names, as upstream builds its transformers: entries in
/// order, a name an earlier wildcard masks refused, a name in several entries getting their
/// providers in order; and the KMS providers, started.
async fn build(
    file: &EncryptionConfiguration,
    metrics: &Metrics,
) -> Result<(ProvidersByName, Vec<Arc<KmsProvider>>), String> {
    let mut lists: Vec<(GroupResource, Vec<Arc<Provider>>)> = Vec::new();
    let mut kms = Vec::new();
    for entry in &file.resources {
        let mut providers = Vec::new();
        for config in &entry.providers {
            let provider = provider(config, metrics).await?;
            if let Kind::Kms(started) = &provider.kind {
                kms.push(started.clone());
            }
            providers.push(Arc::new(provider));
        }
        for name in &entry.resources {
            let (group, resource) = group_resource(name);
            // An earlier wildcard masks every later name of its groups, itself included.
            let masked_by = lists
                .iter()
                .map(|(gr, _)| gr)
                .find(|(g, r)| r == "*" && (g == "*" || g == group));
            if let Some((g, r)) = masked_by {
                return Err(format!(
                    "resource {:?} is masked by earlier rule {:?}",
                    shown_name(group, resource),
                    shown_name(g, r)
                ));
            }
            let key = (group.to_string(), resource.to_string());
            match lists.iter_mut().find(|(gr, _)| *gr == key) {
                Some((_, list)) => list.extend(providers.iter().cloned()),
                None => lists.push((key, providers.clone())),
            }
        }
    }
    let mut by_name = ProvidersByName::new();
    for ((group, resource), providers) in lists {
        by_name
            .entry(group)
            .or_default()
            .insert(resource, providers.into());
    }
    Ok((by_name, kms))
}

/// A group and resource as upstream prints them in errors and metrics: `secrets`,
/// `deployments.apps`, `*.` for the core group's wildcard.
fn shown_name(group: &str, resource: &str) -> String {
    match (group, resource) {
        ("", "*") => "*.".to_string(),
        ("", resource) => resource.to_string(),
        (group, resource) => format!("{resource}.{group}"),
    }
}

/// The provider of one entry of the file (validated: exactly one member set), a KMS
/// provider started.
async fn provider(config: &ProviderConfiguration, metrics: &Metrics) -> Result<Provider, String> {
    let keyed =
        |prefix: &str, keys: &config::Keys, no_key, make: fn(Vec<u8>) -> Result<Cipher, String>| {
            let keys = keys
                .keys
                .iter()
                .map(|key| {
                    let secret = decode_secret(&key.secret).unwrap_or_default();
                    Ok((format!("{}:", key.name), make(secret)?))
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Provider {
                prefix: prefix.to_string(),
                kind: Kind::Keys { keys, no_key },
            })
        };
    let aes = "no matching key was found for the provided AES transformer";
    if let Some(keys) = &config.aesgcm {
        return keyed("k8s:enc:aesgcm:v1:", keys, aes, |key| Cipher::gcm(&key));
    }
    if let Some(keys) = &config.aescbc {
        return keyed("k8s:enc:aescbc:v1:", keys, aes, |key| Ok(Cipher::cbc(key)));
    }
    if let Some(keys) = &config.secretbox {
        let no_key = "no matching key was found for the provided Secretbox transformer";
        return keyed("k8s:enc:secretbox:v1:", keys, no_key, |key| {
            Cipher::secretbox(&key)
        });
    }
    if let Some(kms) = &config.kms {
        if kms.version() == "v1" {
            return Err("KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.  Set --feature-gates=KMSv1=true to use the deprecated KMSv1 feature.".to_string());
        }
        let socket = kms::socket_path(&kms.endpoint).map_err(|err| {
            format!(
                "could not configure KMSv2-Plugin's probe {:?}, error: {err}",
                kms.name
            )
        })?;
        let timeout = Duration::from_nanos(kms.timeout_nanos()?.max(0) as u64);
        let started = KmsProvider::start(&kms.name, socket, timeout, metrics).await;
        return Ok(Provider {
            prefix: format!("k8s:enc:kms:v2:{}:", kms.name),
            kind: Kind::Kms(started),
        });
    }
    Ok(Provider {
        prefix: String::new(),
        kind: Kind::Identity,
    })
}

#[cfg(test)]
mod tests;
