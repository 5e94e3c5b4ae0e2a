//! The audit metrics of kube-apiserver, with its names and labels:
//! `apiserver_audit_event_total`, `apiserver_audit_error_total{plugin}`,
//! `apiserver_audit_level_total{level}` and `apiserver_audit_requests_rejected_total`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::Level;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    level: &'static str,
}

/// The counters (their help texts without the final period, which the encoder adds);
/// clones share them, so backends can count their own losses.
#[derive(Clone, Debug, Default)]
pub struct AuditMetrics {
    events: Counter,
    errors: Family<PluginLabels, Counter>,
    levels: Family<LevelLabels, Counter>,
    rejected: Counter,
}

impl AuditMetrics {
    /// The counter of events `plugin` (`log`, `webhook`) failed to store or send.
    pub(crate) fn errors_of(&self, plugin: &'static str) -> Counter {
        self.errors.get_or_create(&PluginLabels { plugin }).clone()
    }

    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "apiserver_audit_event",
            "Counter of audit events generated and sent to the audit backend",
            self.events.clone(),
        );
        registry.register(
            "apiserver_audit_error",
            "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error",
            self.errors.clone(),
        );
        registry.register(
            "apiserver_audit_level",
            "Counter of policy levels for audit events (1 per request)",
            self.levels.clone(),
        );
        registry.register(
            "apiserver_audit_requests_rejected",
            "Counter of apiserver requests rejected due to an error in audit logging backend",
            self.rejected.clone(),
        );
    }

    /// One request's level, as the policy decided it (`None` included).
    pub(crate) fn observe_level(&self, level: Level) {
        let level = level.as_str();
        self.levels.get_or_create(&LevelLabels { level }).inc();
    }

    pub(crate) fn observe_event(&self) {
        self.events.inc();
    }

    pub(crate) fn observe_rejected(&self) {
        self.rejected.inc();
    }
}
