//! TODO(owner): module docs.

use crate::hooks::TypeHooks;

/// The hooks of the kinds this module owns.
pub(crate) fn hooks(_group: &str, _kind: &str) -> Option<TypeHooks> {
    None
}
