//! kube-apiserver's value transformation metrics (`pkg/storage/value/metrics.go`):
//! `apiserver_storage_transformation_operations_total` and
//! `apiserver_storage_transformation_duration_seconds`, labelled by the transformer's prefix
//! (a key's `<name>:` and its provider's `k8s:enc:<provider>:v1:` both count, as upstream's
//! nested lists do); the KMS v2 envelope metrics (`apiserver_envelope_encryption_*`,
//! `apiserver_storage_envelope_transformation_cache_misses_total`, the data key generation
//! metrics); and the reload controller's (`apiserver_encryption_config_controller_*`).

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub(crate) const FROM_STORAGE: &str = "from_storage";
pub(crate) const TO_STORAGE: &str = "to_storage";
/// The status of a failure that carries no gRPC code.
pub(crate) const UNKNOWN_NON_GRPC: &str = "unknown-non-grpc";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    resource: String,
    transformation_type: String,
    transformer_prefix: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    transformation_type: String,
    transformer_prefix: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KmsOperationLabels {
    provider_name: String,
    method_name: String,
    grpc_status_code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyIdLabels {
    transformation_type: String,
    provider_name: String,
    key_id_hash: String,
    apiserver_id_hash: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusKeyIdLabels {
    provider_name: String,
    key_id_hash: String,
    apiserver_id_hash: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InvalidKeyIdLabels {
    provider_name: String,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider_name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    status: String,
    apiserver_id_hash: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConfigInfoLabels {
    apiserver_id_hash: String,
    hash: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(5e-6, 2.0, 25))
}

fn kms_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

type Seconds = Gauge<f64, AtomicU64>;

/// The metrics of encryption at rest, shared by every resource's transformer, the KMS
/// providers and the reload controller.
#[derive(Clone)]
pub struct Metrics {
    /// `sha256:<hex>` of the server's ID (its identity lease's name), a label of several.
    apiserver_id_hash: String,
    operations: Family<OperationLabels, Counter>,
    durations: Family<DurationLabels, Histogram, fn() -> Histogram>,
    kms_operations: Family<KmsOperationLabels, Histogram, fn() -> Histogram>,
    key_ids: Family<KeyIdLabels, Counter>,
    key_id_times: Family<KeyIdLabels, Seconds>,
    status_key_id_times: Family<StatusKeyIdLabels, Seconds>,
    invalid_status_key_ids: Family<InvalidKeyIdLabels, Counter>,
    dek_source_cache_sizes: Family<ProviderLabels, Gauge>,
    cache_misses: Counter,
    key_generations: Histogram,
    key_generation_failures: Counter,
    reloads: Family<ReloadLabels, Counter>,
    reload_times: Family<ReloadLabels, Seconds>,
    config_info: Family<ConfigInfoLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new("")
    }
}

/// `sha256:<hex>` of `text`, `""` for an empty one, as upstream hashes key IDs and server IDs.
pub(crate) fn hash_if_not_empty(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    sha256_label(text.as_bytes())
}

/// `sha256:<hex>` of `data`, as upstream labels hashes.
pub(crate) fn sha256_label(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Seconds since the Unix epoch, now.
fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

impl Metrics {
    /// The metrics of the server whose ID is `apiserver_id`.
    pub fn new(apiserver_id: &str) -> Metrics {
        Metrics {
            apiserver_id_hash: hash_if_not_empty(apiserver_id),
            operations: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            kms_operations: Family::new_with_constructor(kms_histogram),
            key_ids: Family::default(),
            key_id_times: Family::default(),
            status_key_id_times: Family::default(),
            invalid_status_key_ids: Family::default(),
            dek_source_cache_sizes: Family::default(),
            cache_misses: Counter::default(),
            key_generations: Histogram::new(exponential_buckets(5e-6, 2.0, 14)),
            key_generation_failures: Counter::default(),
            reloads: Family::default(),
            reload_times: Family::default(),
            config_info: Family::default(),
        }
    }

    /// Adds the metrics to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "apiserver_storage_transformation_operations",
            "Total number of transformations. Successful transformation will have a status 'OK' and a varied status string when the transformation fails. The status, resource, and transformation_type fields can be used for alerting purposes. For example, you can monitor for encryption/decryption failures using the transformation_type (e.g., from_storage for decryption and to_storage for encryption). Additionally, these fields can be used to ensure that the correct transformers are applied to each resource.",
            self.operations.clone(),
        );
        registry.register(
            "apiserver_storage_transformation_duration_seconds",
            "Latencies in seconds of value transformation operations.",
            self.durations.clone(),
        );
        registry.register(
            "apiserver_storage_envelope_transformation_cache_misses",
            "Total number of cache misses while accessing key decryption key(KEK).",
            self.cache_misses.clone(),
        );
        registry.register(
            "apiserver_storage_data_key_generation_duration_seconds",
            "Latencies in seconds of data encryption key(DEK) generation operations.",
            self.key_generations.clone(),
        );
        registry.register(
            "apiserver_storage_data_key_generation_failures",
            "Total number of failed data encryption key(DEK) generation operations.",
            self.key_generation_failures.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_kms_operations_latency_seconds",
            "KMS operation duration with gRPC error code status total.",
            self.kms_operations.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_key_id_hash",
            "Number of times a keyID is used split by transformation type, provider, and apiserver identity.",
            self.key_ids.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds",
            "The last time in seconds when a keyID was used.",
            self.key_id_times.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds",
            "The last time in seconds when a keyID was returned by the Status RPC call.",
            self.status_key_id_times.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_invalid_key_id_from_status",
            "Number of times an invalid keyID is returned by the Status RPC call split by error.",
            self.invalid_status_key_ids.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_dek_source_cache_size",
            "Number of records in data encryption key (DEK) source cache. On a restart, this value is an approximation of the number of decrypt RPC calls the server will make to the KMS plugin.",
            self.dek_source_cache_sizes.clone(),
        );
        registry.register(
            "apiserver_encryption_config_controller_automatic_reloads",
            "Total number of reload successes and failures of encryption configuration split by apiserver identity.",
            self.reloads.clone(),
        );
        registry.register(
            "apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds",
            "Timestamp of the last successful or failed automatic reload of encryption configuration split by apiserver identity.",
            self.reload_times.clone(),
        );
        registry.register(
            "apiserver_encryption_config_controller_last_config_info",
            "Information about the last applied encryption configuration with hash as label, split by apiserver identity.",
            self.config_info.clone(),
        );
    }

    /// Counts one transformation by the transformer of `prefix`: `started` when it
    /// succeeded (its duration observed), `None` when it failed.
    pub(crate) fn record(
        &self,
        resource: &str,
        transformation_type: &str,
        prefix: &str,
        started: Option<Instant>,
    ) {
        match started {
            Some(started) => {
                self.count(resource, transformation_type, prefix, "OK");
                self.durations
                    .get_or_create(&DurationLabels {
                        transformation_type: transformation_type.to_string(),
                        transformer_prefix: prefix.to_string(),
                    })
                    .observe(started.elapsed().as_secs_f64());
            }
            None => self.count(resource, transformation_type, prefix, UNKNOWN_NON_GRPC),
        }
    }

    /// Counts one transformation that ended with `status` (`OK`, a gRPC code's name, or
    /// `unknown-non-grpc`).
    pub(crate) fn count(
        &self,
        resource: &str,
        transformation_type: &str,
        prefix: &str,
        status: &str,
    ) {
        self.operations
            .get_or_create(&OperationLabels {
                resource: resource.to_string(),
                transformation_type: transformation_type.to_string(),
                transformer_prefix: prefix.to_string(),
                status: status.to_string(),
            })
            .inc();
    }

    /// Times one call to a KMS plugin.
    pub(crate) fn kms_operation(&self, provider: &str, method: &str, code: &str, took: Duration) {
        self.kms_operations
            .get_or_create(&KmsOperationLabels {
                provider_name: provider.to_string(),
                method_name: method.to_string(),
                grpc_status_code: code.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts a value read or written with the KMS key `key_id`.
    pub(crate) fn key_id_used(&self, transformation_type: &str, provider: &str, key_id: &str) {
        let labels = KeyIdLabels {
            transformation_type: transformation_type.to_string(),
            provider_name: provider.to_string(),
            key_id_hash: hash_if_not_empty(key_id),
            apiserver_id_hash: self.apiserver_id_hash.clone(),
        };
        self.key_ids.get_or_create(&labels).inc();
        self.key_id_times.get_or_create(&labels).set(now_seconds());
    }

    /// Records the key ID a plugin's Status gave: valid, or why not.
    pub(crate) fn status_key_id(&self, provider: &str, key_id: Result<&str, &str>) {
        match key_id {
            Ok(key_id) => {
                let labels = StatusKeyIdLabels {
                    provider_name: provider.to_string(),
                    key_id_hash: hash_if_not_empty(key_id),
                    apiserver_id_hash: self.apiserver_id_hash.clone(),
                };
                self.status_key_id_times
                    .get_or_create(&labels)
                    .set(now_seconds());
            }
            Err(error) => {
                let labels = InvalidKeyIdLabels {
                    provider_name: provider.to_string(),
                    error: error.to_string(),
                };
                self.invalid_status_key_ids.get_or_create(&labels).inc();
            }
        }
    }

    /// Counts a DEK source not found in the cache (a Decrypt call follows), and sets the
    /// cache's size.
    pub(crate) fn cache_miss(&self) {
        self.cache_misses.inc();
    }

    pub(crate) fn cache_size(&self, provider: &str, size: usize) {
        let labels = ProviderLabels {
            provider_name: provider.to_string(),
        };
        self.dek_source_cache_sizes
            .get_or_create(&labels)
            .set(size as i64);
    }

    /// Times the generation of a seed, or counts its failure.
    pub(crate) fn key_generation(&self, started: Instant, succeeded: bool) {
        match succeeded {
            true => self
                .key_generations
                .observe(started.elapsed().as_secs_f64()),
            false => {
                self.key_generation_failures.inc();
            }
        }
    }

    /// Counts an automatic reload of the configuration file.
    pub(crate) fn reload(&self, succeeded: bool) {
        let labels = ReloadLabels {
            status: if succeeded { "success" } else { "failure" }.to_string(),
            apiserver_id_hash: self.apiserver_id_hash.clone(),
        };
        self.reloads.get_or_create(&labels).inc();
        self.reload_times.get_or_create(&labels).set(now_seconds());
    }

    /// The configuration in use now: one series, labelled by its file's hash.
    pub(crate) fn config_in_use(&self, hash: &str) {
        self.config_info.clear();
        let labels = ConfigInfoLabels {
            apiserver_id_hash: self.apiserver_id_hash.clone(),
            hash: hash.to_string(),
        };
        self.config_info.get_or_create(&labels).set(1);
    }
}
