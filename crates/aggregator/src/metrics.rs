//! The availability metric of kube-aggregator: `aggregator_unavailable_apiservice{name}`, 1
//! while an APIService naming a Service is unavailable, 0 while it is available, forgotten
//! when it is deleted.
//!
//! Upstream also counts transitions to unavailable in `aggregator_unavailable_apiservice_total`
//! (by name and reason). kapi serves OpenMetrics text, where a counter's family takes the name
//! without `_total`, which would be the gauge's family too; that counter is left out.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::available::Condition;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    name: String,
}

/// The metric; clones share it.
#[derive(Clone, Debug, Default)]
pub struct AvailabilityMetrics {
    unavailable: Family<NameLabels, Gauge>,
    names: Arc<parking_lot::Mutex<Vec<String>>>,
}

impl AvailabilityMetrics {
    /// Registers the metric in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "aggregator_unavailable_apiservice",
            "Gauge of APIServices which are marked as unavailable broken down by APIService name",
            self.unavailable.clone(),
        );
    }

    /// Records the condition a check found for the APIService `name`.
    pub(crate) fn observe(&self, name: &str, condition: &Condition) {
        let labels = NameLabels { name: name.into() };
        let value = i64::from(!condition.available());
        self.unavailable.get_or_create(&labels).set(value);
        let mut names = self.names.lock();
        if !names.iter().any(|n| n == name) {
            names.push(name.into());
        }
    }

    /// Forgets every APIService but `kept`.
    pub(crate) fn forget_all_but(&self, kept: &[String]) {
        let mut names = self.names.lock();
        let (kept_names, gone): (Vec<String>, Vec<String>) =
            names.drain(..).partition(|n| kept.contains(n));
        *names = kept_names;
        for name in gone {
            self.unavailable.remove(&NameLabels { name });
        }
    }
}
