//! kube-apiserver's value transformation metrics (`pkg/storage/value/metrics.go`):
//! `apiserver_storage_transformation_operations_total` and
//! `apiserver_storage_transformation_duration_seconds`, labelled by the transformer's prefix
//! (a key's `<name>:` and its provider's `k8s:enc:<provider>:v1:` both count, as upstream's
//! nested lists do).

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub(crate) const FROM_STORAGE: &str = "from_storage";
pub(crate) const TO_STORAGE: &str = "to_storage";

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

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(5e-6, 2.0, 25))
}

/// The transformation metrics, shared by every resource's transformer.
#[derive(Clone)]
pub struct Metrics {
    operations: Family<OperationLabels, Counter>,
    durations: Family<DurationLabels, Histogram, fn() -> Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            operations: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
        }
    }
}

impl Metrics {
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
        let status = match started {
            Some(_) => "OK",
            None => "unknown-non-grpc",
        };
        self.operations
            .get_or_create(&OperationLabels {
                resource: resource.to_string(),
                transformation_type: transformation_type.to_string(),
                transformer_prefix: prefix.to_string(),
                status: status.to_string(),
            })
            .inc();
        if let Some(started) = started {
            self.durations
                .get_or_create(&DurationLabels {
                    transformation_type: transformation_type.to_string(),
                    transformer_prefix: prefix.to_string(),
                })
                .observe(started.elapsed().as_secs_f64());
        }
    }
}
