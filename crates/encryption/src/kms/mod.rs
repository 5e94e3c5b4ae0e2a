//! KMS v2 envelope encryption, as kube-apiserver's (`kmsv2/envelope.go` and the
//! `kmsv2PluginProbe` of `encryptionconfig/config.go`): values are encrypted locally under
//! a data key derived from a *seed*, and only the seed goes to the KMS plugin, encrypted once
//! per key ID. A probe asks the plugin's Status every minute (every 10 s while unhealthy):
//! a new key ID makes a new seed; an unchanged one extends the current seed's life by three
//! minutes, so writes stop three minutes after the plugin was last healthy while reads go on
//! with the seeds already decrypted. Decrypted seeds are cached by their encrypted form, so
//! the plugin is asked once per seed, not once per value.

mod client;
mod envelope;
pub mod proto;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Mutex, RwLock};

use crate::metrics::{FROM_STORAGE, Metrics, TO_STORAGE, UNKNOWN_NON_GRPC, hash_if_not_empty};
pub(crate) use client::socket_path;
use client::{CallError, Client};
use envelope::{DataKey, SEED_SIZE};
use proto::{EncryptedDekSourceType, EncryptedObject};

/// How long a seed may write after the plugin last confirmed its key ID.
const WRITE_TTL: Duration = Duration::from_secs(3 * 60);
/// How often a healthy plugin is probed, and an unhealthy one.
const PROBE_INTERVAL: Duration = Duration::from_secs(60);
const UNHEALTHY_PROBE_INTERVAL: Duration = Duration::from_secs(10);
/// How long a probe's answer is reused (health checks share it): longer when it was good.
const HEALTHY_TTL: Duration = Duration::from_secs(20);
const UNHEALTHY_TTL: Duration = Duration::from_secs(3);
/// The most decrypted DEK sources kept; one per key ID and server start is usual.
const CACHE_MAX: usize = 4096;

/// A failure of the provider: its message, and the status the metrics give it (a gRPC
/// code's name, or `unknown-non-grpc`).
#[derive(Debug)]
pub(crate) struct Failure {
    pub message: String,
    pub status: &'static str,
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure {
            message,
            status: UNKNOWN_NON_GRPC,
        }
    }
}

/// The seed values are written with now.
struct State {
    key: Arc<DataKey>,
    key_id: String,
    encrypted_dek_source: Vec<u8>,
    annotations: BTreeMap<String, Vec<u8>>,
    /// When writes with this seed stop, unless a probe extends it.
    expires: SystemTime,
}

/// The last probe: when, what it found, and the API version the plugin first answered.
#[derive(Default)]
struct Probe {
    last: Option<(Instant, Result<(), String>)>,
    version: Option<String>,
}

/// One `kms` provider of the configuration, `apiVersion: v2`.
pub(crate) struct KmsProvider {
    name: String,
    client: Client,
    state: RwLock<Option<State>>,
    /// Decrypted DEK sources by the SHA-256 of their cache key.
    cache: Mutex<HashMap<[u8; 32], Arc<DataKey>>>,
    /// A lock per DEK source the plugin is decrypting: readers of one source wait for the
    /// first, readers of others do not.
    decrypting: Mutex<HashMap<[u8; 32], Arc<tokio::sync::Mutex<()>>>>,
    probe: tokio::sync::Mutex<Probe>,
    metrics: Metrics,
}

impl KmsProvider {
    /// The provider `name` of the plugin at `socket`, primed: one probe is made at once (a
    /// failure is logged, and the probe retried every 10 s), then one every minute, for as
    /// long as the provider lives.
    pub(crate) async fn start(
        name: &str,
        socket: String,
        timeout: Duration,
        metrics: &Metrics,
    ) -> Arc<KmsProvider> {
        let provider = Arc::new(KmsProvider {
            name: name.to_string(),
            client: Client::new(socket, timeout, name, metrics.clone()),
            state: RwLock::new(None),
            cache: Mutex::new(HashMap::new()),
            decrypting: Mutex::new(HashMap::new()),
            probe: tokio::sync::Mutex::new(Probe::default()),
            metrics: metrics.clone(),
        });
        let healthy = provider.check().await;
        if let Err(err) = &healthy {
            tracing::error!(name, "kms plugin failed health check probe: {err}");
        }
        tokio::spawn(probe_forever(Arc::downgrade(&provider), healthy.is_ok()));
        provider
    }

    /// How long each call to the plugin may take.
    pub(crate) fn timeout(&self) -> Duration {
        self.client.timeout()
    }

    /// `plain` sealed with the current seed for the etcd key `aad`: an [`EncryptedObject`].
    pub(crate) fn seal(&self, plain: &[u8], aad: &[u8]) -> Result<Vec<u8>, Failure> {
        let state = self.state.read();
        let state = state
            .as_ref()
            .ok_or_else(|| "got unexpected nil transformer".to_string())?;
        let now = SystemTime::now();
        if now > state.expires {
            return Err(format!(
                "encryptedDEKSource with keyID hash {:?} expired at {} (current time is {})",
                hash_if_not_empty(&state.key_id),
                rfc3339(state.expires),
                rfc3339(now)
            )
            .into());
        }
        let data = state.key.seal(plain, aad)?;
        self.metrics
            .key_id_used(TO_STORAGE, &self.name, &state.key_id);
        let object = EncryptedObject {
            encrypted_data: data,
            key_id: state.key_id.clone(),
            encrypted_dek_source: state.encrypted_dek_source.clone(),
            annotations: state.annotations.clone(),
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        };
        Ok(envelope::encode(&object)?)
    }

    /// The plaintext of a value this provider (or kube-apiserver's of the same name) wrote
    /// for the etcd key `aad`, and whether it is stale: written under another key ID than
    /// the plugin's current one, or with a plain DEK.
    pub(crate) async fn open(&self, stored: &[u8], aad: &[u8]) -> Result<(Vec<u8>, bool), Failure> {
        let object = envelope::decode(stored)?;
        let kind = EncryptedDekSourceType::try_from(object.encrypted_dek_source_type)
            .map_err(|_| "unknown encryptedDEKSourceType".to_string())?;
        let current_key_id = self
            .state
            .read()
            .as_ref()
            .map(|state| state.key_id.clone())
            .ok_or_else(|| "got unexpected nil transformer".to_string())?;
        let cache_key = envelope::cache_key(&object);
        let cached = self.cache.lock().get(&cache_key).cloned();
        let key = match cached {
            Some(key) => key,
            None => {
                // One Decrypt per DEK source: readers missing together (a cold cache after
                // a restart) wait for the first.
                let lock = self.decrypting.lock().entry(cache_key).or_default().clone();
                let guard = lock.lock().await;
                let cached = self.cache.lock().get(&cache_key).cloned();
                let key = match cached {
                    Some(key) => Ok(key),
                    None => self.decrypt_dek_source(&object, kind, cache_key).await,
                };
                drop(guard);
                // The last reader out forgets the lock (the map holds one reference).
                let mut decrypting = self.decrypting.lock();
                if decrypting
                    .get(&cache_key)
                    .is_some_and(|l| Arc::strong_count(l) <= 2)
                {
                    decrypting.remove(&cache_key);
                }
                drop(decrypting);
                key?
            }
        };
        self.metrics
            .key_id_used(FROM_STORAGE, &self.name, &object.key_id);
        let plain = key.open(&object.encrypted_data, aad)?;
        let stale = object.key_id != current_key_id
            || kind != EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed;
        Ok((plain, stale))
    }

    /// Asks the plugin to decrypt a DEK source the cache lacks, and caches it.
    async fn decrypt_dek_source(
        &self,
        object: &EncryptedObject,
        kind: EncryptedDekSourceType,
        cache_key: [u8; 32],
    ) -> Result<Arc<DataKey>, Failure> {
        self.metrics.cache_miss();
        let request = proto::DecryptRequest {
            ciphertext: object.encrypted_dek_source.clone(),
            uid: uuid::Uuid::new_v4().to_string(),
            key_id: object.key_id.clone(),
            annotations: object.annotations.clone(),
        };
        let response = self.client.decrypt(request).await.map_err(|err| Failure {
            message: format!("failed to decrypt DEK, error: {err}"),
            status: err.code,
        })?;
        let key = Arc::new(DataKey::new(kind, &response.plaintext)?);
        self.remember(cache_key, key.clone());
        Ok(key)
    }

    /// Caches a decrypted DEK source (a full cache drops an arbitrary entry).
    fn remember(&self, cache_key: [u8; 32], key: Arc<DataKey>) {
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_MAX && !cache.contains_key(&cache_key) {
            let evicted = cache.keys().next().copied();
            if let Some(evicted) = evicted {
                cache.remove(&evicted);
            }
        }
        cache.insert(cache_key, key);
        let size = cache.len();
        drop(cache);
        self.metrics.cache_size(&self.name, size);
    }

    /// The provider's health, probing the plugin unless a recent answer can be reused:
    /// Status must be healthy, of API version v2 (the first version answered may not
    /// change) and name a valid key ID, and the seed must be of that key ID (a new seed is
    /// made when it is not). Health checks and the periodic probe share it.
    pub(crate) async fn check(&self) -> Result<(), String> {
        let mut probe = self.probe.lock().await;
        if let Some((at, outcome)) = &probe.last {
            let ttl = if outcome.is_ok() {
                HEALTHY_TTL
            } else {
                UNHEALTHY_TTL
            };
            if at.elapsed() < ttl {
                return outcome.clone();
            }
        }
        let outcome = self.probe(&mut probe).await;
        probe.last = Some((Instant::now(), outcome.clone()));
        outcome
    }

    async fn probe(&self, probe: &mut Probe) -> Result<(), String> {
        let status = self.client.status().await.map_err(|err| {
            format!(
                "failed to perform status section of the healthz check for KMS Provider {}, error: {err}",
                self.name
            )
        })?;
        let mut errors: Vec<String> = Vec::new();
        if status.healthz != "ok" {
            errors.push(format!("got unexpected healthz status: {}", status.healthz));
        }
        if status.version != "v2" && status.version != "v2beta1" {
            errors.push(format!(
                "expected KMSv2 API version v2, got {}",
                status.version
            ));
        } else {
            let first = probe.version.get_or_insert_with(|| status.version.clone());
            if *first != status.version {
                errors.push(format!(
                    "KMSv2 API version should not change after the initial status response version {first}, got {}",
                    status.version
                ));
            }
        }
        match envelope::validate_key_id(&status.key_id) {
            Err((code, err)) => {
                self.metrics.status_key_id(&self.name, Err(code));
                errors.push(format!(
                    "got invalid KMSv2 KeyID hash {:?}: {err}",
                    hash_if_not_empty(&status.key_id)
                ));
            }
            Ok(()) => {
                self.metrics.status_key_id(&self.name, Ok(&status.key_id));
                if let Err(err) = self.rotate_on_key_id_change(&status.key_id).await {
                    errors.push(err);
                }
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(format!(
                "kmsv2 Provider {} is not healthy, error: {}",
                self.name, errors[0]
            )),
            _ => Err(format!(
                "kmsv2 Provider {} is not healthy, error: [{}]",
                self.name,
                errors.join(", ")
            )),
        }
    }

    /// Keeps the seed when it is of the plugin's key ID (writes may go on three minutes
    /// more); otherwise makes a new seed and has the plugin encrypt it, keeping the old
    /// seed (writing until it expires) when that fails or names another key ID.
    async fn rotate_on_key_id_change(&self, status_key_id: &str) -> Result<(), String> {
        let expires = SystemTime::now() + WRITE_TTL;
        {
            let mut state = self.state.write();
            if let Some(state) = state.as_mut().filter(|s| s.key_id == status_key_id) {
                state.expires = expires;
                return Ok(());
            }
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let generated = self.generate(&uid).await;
        let encrypt_key_id = generated
            .as_ref()
            .map(|(_, response)| response.key_id.clone())
            .unwrap_or_default();
        let failed = match generated {
            Ok((seed, response)) if response.key_id == status_key_id => {
                match self.adopt(seed, response, expires) {
                    Ok(()) => return Ok(()),
                    Err(err) => err,
                }
            }
            Ok(_) => "<nil>".to_string(),
            Err(err) => err,
        };
        let state = self.state.read();
        let (state_key_id, state_expires) = match state.as_ref() {
            Some(state) => (state.key_id.as_str(), rfc3339(state.expires)),
            None => ("", "0001-01-01T00:00:00Z".to_string()),
        };
        let err_state = match state.as_ref() {
            Some(_) => "<nil>",
            None => "got unexpected nil transformer",
        };
        Err(format!(
            "failed to rotate DEK uid={uid:?}, useSeed=true, errState={err_state}, errGen={failed}, statusKeyIDHash={:?}, encryptKeyIDHash={:?}, stateKeyIDHash={:?}, expirationTimestamp={state_expires}",
            hash_if_not_empty(status_key_id),
            hash_if_not_empty(&encrypt_key_id),
            hash_if_not_empty(state_key_id),
        ))
    }

    /// A new seed, and the plugin's encryption of it.
    async fn generate(
        &self,
        uid: &str,
    ) -> Result<([u8; SEED_SIZE], proto::EncryptResponse), String> {
        let started = Instant::now();
        let seed = crate::ciphers::random::<SEED_SIZE>();
        self.metrics.key_generation(started, seed.is_ok());
        let seed = seed?;
        let response = self
            .client
            .encrypt(uid.to_string(), seed.to_vec())
            .await
            .map_err(|err: CallError| err.message)?;
        Ok((seed, response))
    }

    /// Makes `seed`, as the plugin encrypted it, the one values are written with.
    fn adopt(
        &self,
        seed: [u8; SEED_SIZE],
        response: proto::EncryptResponse,
        expires: SystemTime,
    ) -> Result<(), String> {
        let object = EncryptedObject {
            encrypted_data: vec![0],
            key_id: response.key_id,
            encrypted_dek_source: response.ciphertext,
            annotations: response.annotations,
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        };
        envelope::validate(&object).map_err(|err| format!("got invalid EncryptedObject: {err}"))?;
        let cache_key = envelope::cache_key(&object);
        let key = Arc::new(DataKey::Seed(seed));
        // The server's own writes never need the plugin to read them back.
        self.remember(cache_key, key.clone());
        *self.state.write() = Some(State {
            key,
            key_id: object.key_id,
            encrypted_dek_source: object.encrypted_dek_source,
            annotations: object.annotations,
            expires,
        });
        Ok(())
    }
}

/// Probes the provider every minute, every 10 s while it is unhealthy, until it is dropped.
async fn probe_forever(provider: Weak<KmsProvider>, mut healthy: bool) {
    loop {
        let interval = if healthy {
            PROBE_INTERVAL
        } else {
            UNHEALTHY_PROBE_INTERVAL
        };
        tokio::time::sleep(interval).await;
        let Some(provider) = provider.upgrade() else {
            return;
        };
        let checked = provider.check().await;
        if let Err(err) = &checked {
            tracing::error!(
                name = provider.name,
                "kms plugin failed health check probe: {err}"
            );
        }
        healthy = checked.is_ok();
    }
}

/// A time as Go's RFC 3339 in UTC, to the second.
fn rfc3339(time: SystemTime) -> String {
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    kapi_apimachinery::gotime::format_rfc3339(seconds)
}
