//! Encryption at rest as kube-apiserver's (`k8s.io/apiserver/pkg/storage/value` and
//! `server/options/encryptionconfig`): the `--encryption-provider-config` file, and for each
//! resource it names a [`Transformer`] that encrypts values on their way to storage and
//! decrypts them on their way back, in upstream's byte formats (values start
//! `k8s:enc:<provider>:v1:<key name>:`), so that a store encrypted by kube-apiserver is read
//! by kapi and the reverse.
//!
//! Providers: `identity`, `aescbc`, `aesgcm` (the etcd key authenticated), `secretbox`.
//! `kms` is refused when the file is loaded (kapi has no KMS client yet).

mod ciphers;
mod config;
mod metrics;
mod transformer;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub use metrics::Metrics;
pub use transformer::{ENCRYPTED_PREFIX, IDENTITY_READ_ENCRYPTED, Read, Transformer};

use ciphers::Cipher;
use config::{EncryptionConfiguration, ProviderConfiguration, decode_secret, group_resource};
use transformer::Provider;

/// Why a configuration file was refused, in kube-apiserver's words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// The providers of each (group, resource) a file names, `*` standing for any.
type ProvidersByName = HashMap<(String, String), Arc<[Provider]>>;

/// A loaded configuration: the providers of each resource it names.
pub struct EncryptionConfig {
    providers: ProvidersByName,
    /// Counting every transformation.
    metrics: Metrics,
    /// `sha256:<hex>` of the file, as upstream's `last_config_info` reports it.
    hash: String,
}

impl EncryptionConfig {
    /// Reads, validates and builds the file at `path`; `metrics` count every transformation.
    pub fn load(path: &Path, metrics: &Metrics) -> Result<EncryptionConfig, ConfigError> {
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
        if let Some(message) = file.validate().aggregate_message() {
            return Err(parsing(message));
        }
        let providers = build(&file)
            .map_err(|err| ConfigError(format!("error while building transformers: {err}")))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, &data);
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        Ok(EncryptionConfig {
            providers,
            metrics: metrics.clone(),
            hash: format!("sha256:{hex}"),
        })
    }

    /// The transformer of `group`/`resource` (events.k8s.io Events are core's `events`):
    /// the file's exact name, else its group's `*.<group>`, else `*.*`; `None` when the file
    /// does not name it (its values are then stored as they are).
    pub fn transformer(&self, group: &str, resource: &str) -> Option<Arc<Transformer>> {
        let get = |g: &str, r: &str| self.providers.get(&(g.to_string(), r.to_string()));
        let providers = get(group, resource)
            .or_else(|| get(group, "*"))
            .or_else(|| get("*", "*"))?;
        // The metrics name the resource, whichever rule matched it.
        Some(Arc::new(Transformer {
            providers: providers.clone(),
            resource: shown_name(group, resource),
            metrics: self.metrics.clone(),
        }))
    }

    /// `sha256:<hex>` of the file loaded.
    pub fn hash(&self) -> &str {
        &self.hash
    }
}

/// The providers of the file's names, as upstream builds its transformers: entries in
/// order, a name an earlier wildcard masks refused, a name in several entries getting their
/// providers in order.
fn build(file: &EncryptionConfiguration) -> Result<ProvidersByName, String> {
    let mut lists: Vec<((String, String), Vec<Provider>)> = Vec::new();
    for entry in &file.resources {
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
            let mut providers = entry
                .providers
                .iter()
                .map(provider)
                .collect::<Result<Vec<_>, _>>()?;
            let key = (group.to_string(), resource.to_string());
            match lists.iter_mut().find(|(gr, _)| *gr == key) {
                Some((_, list)) => list.append(&mut providers),
                None => lists.push((key, providers)),
            }
        }
    }
    Ok(lists
        .into_iter()
        .map(|(name, providers)| (name, providers.into()))
        .collect())
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

/// The provider of one entry of the file (validated: exactly one member set).
fn provider(config: &ProviderConfiguration) -> Result<Provider, String> {
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
                keys,
                no_key,
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
    if config.kms.is_some() {
        return Err("KMS providers are not implemented by kapi yet".to_string());
    }
    Ok(Provider {
        prefix: String::new(),
        keys: Vec::new(),
        no_key: "",
    })
}

#[cfg(test)]
mod tests;
