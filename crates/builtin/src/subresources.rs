//! Which subresources of the built-in resources the generic handlers serve, and how: the
//! catalog names each resource's subresources (as upstream's discovery lists them); this
//! module says what each one does.

use kapi_server::resource::{Subresource, SubresourceKind, Verbs};

/// The served subresource `name` of `resource` in `group`, or `None` if kapi does not serve it.
pub(crate) fn subresource(_group: &str, resource: &str, name: &'static str) -> Option<Subresource> {
    let (kind, verbs) = match (resource, name) {
        (_, "status") => (SubresourceKind::Status, Verbs::GET_UPDATE_PATCH),
        ("namespaces", "finalize") => (SubresourceKind::Finalize, Verbs::UPDATE),
        _ => return None,
    };
    Some(Subresource { name, kind, verbs })
}
