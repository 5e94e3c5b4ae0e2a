//! kapi's built-in resources, as kube-apiserver 1.35 serves them: their definitions (group,
//! version, kind, scope, verbs, short names, subresources, printer columns, field selectors,
//! storage layout) and strategies (defaulting, validation with upstream's messages), the
//! events.k8s.io/v1 conversion, the NamespaceLifecycle admission plugin and the bootstrap of
//! the system namespaces.
//!
//! Served resources:
//!
//! | resource | group/version | storage key | short names |
//! |---|---|---|---|
//! | namespaces (+ status, finalize) | v1 | `namespaces` | ns |
//! | configmaps | v1 | `configmaps` | cm |
//! | secrets | v1 | `secrets` | |
//! | serviceaccounts | v1 | `serviceaccounts` | sa |
//! | events | v1 | `events` | ev |
//! | events | events.k8s.io/v1 | `events` (stored as v1 Event) | ev |
//! | leases | coordination.k8s.io/v1 | `leases` | |

mod admission;
mod hooks;
mod resources;
mod service;
mod subresources;
mod workloads;
pub mod configmap;
pub mod event;
pub mod lease;
pub mod namespace;
pub mod printers;
pub mod secret;
pub mod serviceaccount;
mod util;

use kapi_apimachinery::status::ApiError;
use kapi_server::registry::Registry;
use kapi_server::resource::ResourceDefinition;
use serde_json::json;

pub use admission::{IMMORTAL_NAMESPACES, NAMESPACE_TERMINATING_CAUSE, NamespaceLifecycle};

/// The namespaces kube-apiserver keeps in existence, in the order it creates them.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["kube-system", "kube-public", "kube-node-lease", "default"];

/// Every built-in resource of this crate, one definition per served group-version-resource.
pub fn resources() -> Vec<ResourceDefinition> {
    let [events, events_v1] = event::definitions();
    vec![
        namespace::definition(),
        configmap::definition(),
        secret::definition(),
        serviceaccount::definition(),
        events,
        events_v1,
        lease::definition(),
    ]
}

/// Creates the system namespaces that do not exist (kube-apiserver's system namespaces
/// controller, run once): `kube-system`, `kube-public`, `kube-node-lease` and `default`.
/// Namespaces that exist already are left alone; every namespace is attempted and the
/// first error is returned.
pub async fn ensure_system_namespaces(
    registry: &Registry,
    definition: &ResourceDefinition,
) -> Result<(), ApiError> {
    let mut first_error = None;
    for name in SYSTEM_NAMESPACES {
        let namespace = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": { "name": name },
        });
        match registry.create(definition, "", namespace, false).await {
            Ok(_) => {}
            Err(err) if err.is_already_exists() => {}
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests;
