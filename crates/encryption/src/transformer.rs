//! kube-apiserver's prefix transformers: a resource's providers in the file's order, the
//! first writing (`<provider prefix><key name>:<ciphertext>`, its first key; KMS v2 values
//! `k8s:enc:kms:v2:<name>:<EncryptedObject>`), every one reading the values that carry its
//! prefix. A value read by any but the first provider or key is *stale*: it must be written
//! again (with the first) even when unchanged.

use std::sync::Arc;
use std::time::Instant;

use crate::EncryptionConfig;
use crate::ciphers::Cipher;
use crate::kms::{Failure, KmsProvider};
use crate::metrics::{FROM_STORAGE, Metrics, TO_STORAGE};

/// The prefix every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// What reading a value without the key it needs says.
pub const IDENTITY_READ_ENCRYPTED: &str = "identity transformer tried to read encrypted data";

/// One provider of a resource's list.
pub(crate) struct Provider {
    /// `k8s:enc:aescbc:v1:`, `k8s:enc:kms:v2:<name>:` and the like; empty for identity.
    pub prefix: String,
    pub kind: Kind,
}

pub(crate) enum Kind {
    Identity,
    /// Local keys, each with its `<name>:` prefix, the first writing; and what a value of
    /// the provider's prefix but of none of its keys says.
    Keys {
        keys: Vec<(String, Cipher)>,
        no_key: &'static str,
    },
    Kms(Arc<KmsProvider>),
}

/// A value read back: the plaintext, and whether it must be written again.
#[derive(Debug, PartialEq, Eq)]
pub struct Read {
    pub data: Vec<u8>,
    pub stale: bool,
}

/// The transformer of one resource: the providers the configuration in use (reloaded or
/// not) gives it, looked up at each value.
pub struct Transformer {
    pub(crate) config: Arc<EncryptionConfig>,
    pub(crate) group: String,
    pub(crate) resource: String,
    /// The resource, `secrets` or `deployments.apps`, for the metrics.
    pub(crate) label: String,
}

impl Transformer {
    fn metrics(&self) -> &Metrics {
        &self.config.metrics
    }

    /// `plain` as stored under the etcd key `key` (which AES-GCM and KMS v2 authenticate).
    /// A resource the configuration does not name is stored as it is.
    pub fn to_storage(&self, plain: &[u8], key: &str) -> Result<Vec<u8>, String> {
        let Some(providers) = self.config.providers(&self.group, &self.resource) else {
            return Ok(plain.to_vec());
        };
        let Some(provider) = providers.first() else {
            return Ok(plain.to_vec());
        };
        let started = Instant::now();
        let (name, sealed) = match &provider.kind {
            Kind::Identity => {
                self.metrics()
                    .record(&self.label, TO_STORAGE, "", Some(started));
                return Ok(plain.to_vec());
            }
            Kind::Keys { keys, .. } => {
                let Some((name, cipher)) = keys.first() else {
                    return Ok(plain.to_vec());
                };
                let sealed = cipher.seal(plain, key.as_bytes());
                let outcome = sealed.as_ref().ok().map(|_| started);
                self.metrics()
                    .record(&self.label, TO_STORAGE, name, outcome);
                self.metrics()
                    .record(&self.label, TO_STORAGE, &provider.prefix, outcome);
                (name.as_str(), sealed?)
            }
            Kind::Kms(kms) => {
                let sealed = kms.seal(plain, key.as_bytes());
                self.count(TO_STORAGE, &provider.prefix, &sealed, started);
                ("", sealed.map_err(|failure| failure.message)?)
            }
        };
        let mut out = Vec::with_capacity(provider.prefix.len() + name.len() + sealed.len());
        out.extend_from_slice(provider.prefix.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Counts a KMS transformation, with the gRPC code of a failed call as its status.
    fn count<T>(&self, kind: &str, prefix: &str, outcome: &Result<T, Failure>, started: Instant) {
        match outcome {
            Ok(_) => self
                .metrics()
                .record(&self.label, kind, prefix, Some(started)),
            Err(failure) => self
                .metrics()
                .count(&self.label, kind, prefix, failure.status),
        }
    }

    /// The plaintext of `stored`, read from the etcd key `key`, with upstream's order and
    /// errors: providers tried in order by prefix, an identity failure skipped silently,
    /// other failures collected and reported together when none succeeds. A resource the
    /// configuration does not name reads plain values only.
    pub async fn from_storage(&self, stored: &[u8], key: &str) -> Result<Read, String> {
        let Some(providers) = self.config.providers(&self.group, &self.resource) else {
            if stored.starts_with(ENCRYPTED_PREFIX) {
                return Err(IDENTITY_READ_ENCRYPTED.to_string());
            }
            return Ok(Read {
                data: stored.to_vec(),
                stale: false,
            });
        };
        let started = Instant::now();
        let mut errors: Vec<String> = Vec::new();
        for (i, provider) in providers.iter().enumerate() {
            let Some(rest) = stored.strip_prefix(provider.prefix.as_bytes()) else {
                continue;
            };
            let read = match &provider.kind {
                Kind::Identity => {
                    if rest.starts_with(ENCRYPTED_PREFIX) {
                        continue;
                    }
                    self.metrics()
                        .record(&self.label, FROM_STORAGE, "identity", Some(started));
                    Ok(Read {
                        data: rest.to_vec(),
                        stale: false,
                    })
                }
                Kind::Keys { keys, no_key } => {
                    let read = self.open(keys, no_key, rest, key, started);
                    let outcome = read.as_ref().ok().map(|_| started);
                    self.metrics()
                        .record(&self.label, FROM_STORAGE, &provider.prefix, outcome);
                    read
                }
                Kind::Kms(kms) => {
                    let opened = kms.open(rest, key.as_bytes()).await;
                    self.count(FROM_STORAGE, &provider.prefix, &opened, started);
                    opened
                        .map(|(data, stale)| Read { data, stale })
                        .map_err(|failure| vec![failure.message])
                }
            };
            match read {
                Ok(mut read) => {
                    read.stale |= i != 0;
                    return Ok(read);
                }
                // Upstream's aggregate prints nested lists flat.
                Err(mut failed) => errors.append(&mut failed),
            }
        }
        if errors.is_empty() {
            let err = "no matching prefix found".to_string();
            self.metrics()
                .record(&self.label, FROM_STORAGE, "unknown", None);
            return Err(err);
        }
        Err(aggregate(errors))
    }

    /// Opens a value of a local-key provider (its prefix stripped) with the key its name
    /// prefix names; the errors of every key tried, or the provider's no-key error.
    fn open(
        &self,
        keys: &[(String, Cipher)],
        no_key: &str,
        rest: &[u8],
        key: &str,
        started: Instant,
    ) -> Result<Read, Vec<String>> {
        let mut errors = Vec::new();
        for (j, (name, cipher)) in keys.iter().enumerate() {
            let Some(sealed) = rest.strip_prefix(name.as_bytes()) else {
                continue;
            };
            let opened = cipher.open(sealed, key.as_bytes());
            let outcome = opened.as_ref().ok().map(|_| started);
            self.metrics()
                .record(&self.label, FROM_STORAGE, name, outcome);
            match opened {
                Ok(data) => {
                    return Ok(Read {
                        data,
                        stale: j != 0,
                    });
                }
                Err(err) => errors.push(err),
            }
        }
        if errors.is_empty() {
            // As upstream's nested list, a value of no key counts under `unknown`.
            self.metrics()
                .record(&self.label, FROM_STORAGE, "unknown", None);
            errors.push(no_key.to_string());
        }
        Err(errors)
    }
}

/// Several errors as upstream's aggregate prints them: one alone, several as `[a, b]`,
/// repeated messages once.
fn aggregate(errors: Vec<String>) -> String {
    let mut distinct: Vec<String> = Vec::new();
    for error in errors {
        if !distinct.contains(&error) {
            distinct.push(error);
        }
    }
    match distinct.len() {
        1 => distinct.remove(0),
        _ => format!("[{}]", distinct.join(", ")),
    }
}
