//! TODO(owner): module docs.

use crate::hooks::TypeHooks;

/// The hooks of the kinds this module owns.
pub(crate) fn hooks(_group: &str, _kind: &str) -> Option<TypeHooks> {
    None
}

/// The converters of the kinds this module owns that are served in several versions.
pub(crate) fn converter(
    _group: &str,
    _version: &str,
    _kind: &str,
) -> Option<std::sync::Arc<dyn kapi_server::resource::Converter>> {
    None
}
