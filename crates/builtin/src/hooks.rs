//! The seam between the generated resource catalog and the per-type code: for each built-in
//! kind, its strategy (defaulting, validation, field selectors) and its printer columns.
//! Kinds without hooks of their own get the generic strategy of the catalog.

use std::sync::Arc;

use kapi_server::resource::{Converter, Strategy, TableConvertor};

/// What a built-in kind adds to its generated definition.
pub(crate) struct TypeHooks {
    pub strategy: Arc<dyn Strategy>,
    pub table: Option<TableConvertor>,
}

/// The hooks of `kind` in `group` ("" for core), from the module that owns the kind.
pub(crate) fn hooks(group: &str, kind: &str) -> Option<TypeHooks> {
    crate::workloads::hooks(group, kind)
        .or_else(|| crate::service::hooks(group, kind))
        .or_else(|| crate::resources::hooks(group, kind))
        .or_else(|| crate::review::hooks(group, kind))
}

/// The converter serving `kind` at `group`/`version` from its stored version, when the two
/// differ (e.g. autoscaling/v1 HorizontalPodAutoscalers stored as autoscaling/v2).
pub(crate) fn converter(group: &str, version: &str, kind: &str) -> Option<Arc<dyn Converter>> {
    crate::resources::converter(group, version, kind)
}
