//! kube-apiserver's prefix transformers: a resource's providers in the file's order, the
//! first writing (`<provider prefix><key name>:<ciphertext>`, its first key), every one
//! reading the values that carry its prefix. A value read by any but the first provider or
//! key is *stale*: it must be written again (with the first) even when unchanged.

use std::sync::Arc;
use std::time::Instant;

use crate::ciphers::Cipher;
use crate::metrics::{FROM_STORAGE, Metrics, TO_STORAGE};

/// The prefix every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// What reading a value without the key it needs says.
pub const IDENTITY_READ_ENCRYPTED: &str = "identity transformer tried to read encrypted data";

/// One provider of a resource's list.
pub(crate) struct Provider {
    /// `k8s:enc:aescbc:v1:` and the like; empty for identity.
    pub prefix: String,
    /// The keys, each with its `<name>:` prefix, first writing; none for identity.
    pub keys: Vec<(String, Cipher)>,
    /// What a value of this provider's prefix but of none of its keys says.
    pub no_key: &'static str,
}

/// A value read back: the plaintext, and whether it must be written again.
#[derive(Debug, PartialEq, Eq)]
pub struct Read {
    pub data: Vec<u8>,
    pub stale: bool,
}

/// The transformer of one resource.
pub struct Transformer {
    pub(crate) providers: Arc<[Provider]>,
    /// The resource, `secrets` or `deployments.apps`, for the metrics.
    pub(crate) resource: String,
    pub(crate) metrics: Metrics,
}

impl Transformer {
    /// `plain` as stored under the etcd key `key` (which AES-GCM authenticates).
    pub fn to_storage(&self, plain: &[u8], key: &str) -> Result<Vec<u8>, String> {
        let Some(provider) = self.providers.first() else {
            return Ok(plain.to_vec());
        };
        let started = Instant::now();
        let Some((name, cipher)) = provider.keys.first() else {
            self.metrics
                .record(&self.resource, TO_STORAGE, "", Some(started));
            return Ok(plain.to_vec());
        };
        let sealed = cipher.seal(plain, key.as_bytes());
        let outcome = sealed.as_ref().ok().map(|_| started);
        self.metrics
            .record(&self.resource, TO_STORAGE, name, outcome);
        self.metrics
            .record(&self.resource, TO_STORAGE, &provider.prefix, outcome);
        let sealed = sealed?;
        let mut out = Vec::with_capacity(provider.prefix.len() + name.len() + sealed.len());
        out.extend_from_slice(provider.prefix.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// The plaintext of `stored`, read from the etcd key `key`, with upstream's order and
    /// errors: providers tried in order by prefix, an identity failure skipped silently,
    /// other failures collected and reported together when none succeeds.
    pub fn from_storage(&self, stored: &[u8], key: &str) -> Result<Read, String> {
        let started = Instant::now();
        let mut errors: Vec<String> = Vec::new();
        for (i, provider) in self.providers.iter().enumerate() {
            let Some(rest) = stored.strip_prefix(provider.prefix.as_bytes()) else {
                continue;
            };
            if provider.keys.is_empty() {
                if rest.starts_with(ENCRYPTED_PREFIX) {
                    continue;
                }
                self.metrics
                    .record(&self.resource, FROM_STORAGE, "identity", Some(started));
                return Ok(Read {
                    data: rest.to_vec(),
                    stale: i != 0,
                });
            }
            let read = self.open(provider, rest, key, started);
            let outcome = read.as_ref().ok().map(|_| started);
            self.metrics
                .record(&self.resource, FROM_STORAGE, &provider.prefix, outcome);
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
            self.metrics
                .record(&self.resource, FROM_STORAGE, "unknown", None);
            return Err(err);
        }
        Err(aggregate(errors))
    }

    /// Opens a value of `provider` (its prefix stripped) with the key its name prefix names;
    /// the errors of every key tried, or the provider's no-key error.
    fn open(
        &self,
        provider: &Provider,
        rest: &[u8],
        key: &str,
        started: Instant,
    ) -> Result<Read, Vec<String>> {
        let mut errors = Vec::new();
        for (j, (name, cipher)) in provider.keys.iter().enumerate() {
            let Some(sealed) = rest.strip_prefix(name.as_bytes()) else {
                continue;
            };
            let opened = cipher.open(sealed, key.as_bytes());
            let outcome = opened.as_ref().ok().map(|_| started);
            self.metrics
                .record(&self.resource, FROM_STORAGE, name, outcome);
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
            self.metrics
                .record(&self.resource, FROM_STORAGE, "unknown", None);
            errors.push(provider.no_key.to_string());
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
