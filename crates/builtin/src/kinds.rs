//! Every built-in kind with code of its own, in one place: its strategy (defaulting,
//! validation, field selectors) and printer columns, and the converters of the versions
//! served from another stored version. The catalog gives every other kind the generic
//! strategy and the NAME/AGE table.
//!
//! A kind's line names the module that owns it; modules owning several kinds of a group
//! (`workloads`, `service`, `resources/<group>.rs`, `review`) answer for them in their own
//! `strategies` table.

use std::sync::Arc;

use kapi_server::resource::{Converter, Strategy, TableConvertor};

/// What a built-in kind adds to its generated definition.
pub(crate) struct KindStrategies {
    pub strategy: Arc<dyn Strategy>,
    pub table: Option<TableConvertor>,
}

/// The strategies of `kind` in `group` ("" for core).
pub(crate) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    match (group, kind) {
        ("", "Namespace") => Some(crate::namespace::strategies()),
        ("", "ConfigMap") => Some(crate::configmap::strategies()),
        ("", "Secret") => Some(crate::secret::strategies()),
        ("", "ServiceAccount") => Some(crate::serviceaccount::strategies()),
        ("", "Event") => Some(crate::event::strategies(false)),
        ("events.k8s.io", "Event") => Some(crate::event::strategies(true)),
        ("coordination.k8s.io", "Lease") => Some(crate::lease::strategies()),
        _ => crate::workloads::strategies(group, kind)
            .or_else(|| crate::service::strategies(group, kind))
            .or_else(|| crate::resources::strategies(group, kind))
            .or_else(|| crate::review::strategies(group, kind)),
    }
}

/// The converter serving `kind` at `group`/`version` from its stored version, when the two
/// differ.
pub(crate) fn converter(group: &str, version: &str, kind: &str) -> Option<Arc<dyn Converter>> {
    match (group, version, kind) {
        ("events.k8s.io", "v1", "Event") => Some(Arc::new(crate::event::EventsV1Converter)),
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => Some(Arc::new(
            crate::resources::HorizontalPodAutoscalerV1Converter,
        )),
        _ => None,
    }
}
