//! kapi's built-in resources, as kube-apiserver 1.35 serves them: their definitions (group,
//! version, kind, scope, verbs, short names, subresources, printer columns, field selectors,
//! storage layout) and strategies (defaulting, validation with upstream's messages), the
//! events.k8s.io/v1 conversion, the NamespaceLifecycle admission plugin and the bootstrap of
//! the system namespaces.
//!
//! Every group-version-resource kube-apiserver 1.35 serves with its default `--runtime-config`
//! (its GA group-versions and apiregistration.k8s.io/v1; apiextensions.k8s.io is the CRD
//! server's) is in the generated catalog (`catalog/generated.rs`): upstream's names, scopes,
//! verbs, short names, categories, subresources, storage versions and etcd key prefixes; the
//! ones kapi cannot serve yet are [`unserved_resources`]. [`resources`] builds one
//! definition per entry with the strategy and printer columns of the module that owns the kind
//! (this crate's namespace, configmap, secret, serviceaccount, event and lease modules, the
//! workloads, service and resources modules), or the catalog's generic strategy.

pub mod bootstrap_token;
mod catalog;
pub mod configmap;
mod earlier;
pub mod event;
pub mod flowcontrol_bootstrap;
mod kinds;
pub mod lease;
pub mod namespace;
pub mod printers;
mod resources;
mod review;
mod schemas;
pub mod secret;
mod service;
pub mod serviceaccount;
mod strategy;
mod subresources;
pub mod token;
mod util;
mod workloads;

use kapi_apimachinery::status::ApiError;
use kapi_server::registry::Registry;
use kapi_server::resource::ResourceDefinition;
use serde_json::json;

pub use catalog::Unserved;
pub use resources::{SYSTEM_PRIORITY_CLASSES, ensure_system_priority_classes};
pub use schemas::BuiltinSchemas;
pub use service::{
    Cidr, CidrError, EndpointReconciler, KubernetesService, PortRange, PortRangeError,
    ServiceAllocator, ServiceRanges, leave_kubernetes_endpoints, reconcile_kubernetes_service,
    start_kubernetes_service,
};

/// The finalizer StorageObjectInUseProtection puts on claims, which the protection
/// controller removes once no running pod uses the claim.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer StorageObjectInUseProtection puts on volumes, which the protection
/// controller removes once the volume is not bound.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// The namespaces kube-apiserver keeps in existence, in the order it creates them.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["kube-system", "kube-public", "kube-node-lease", "default"];

/// Every built-in resource kapi serves, one definition per served group-version-resource,
/// in the catalog's order (by group, version and plural). The versions of one resource share
/// one storage definition. Events expire `event_ttl` after their last write (kube-apiserver's
/// `--event-ttl`); with 0 they are kept until deleted, as there.
pub fn resources(event_ttl: std::time::Duration) -> Vec<ResourceDefinition> {
    catalog::build_all(Some(event_ttl).filter(|ttl| !ttl.is_zero())).0
}

/// The built-in resources of kube-apiserver 1.35 kapi does not serve yet, and why (logged at
/// startup; the discovery test knows them).
pub fn unserved_resources() -> Vec<Unserved> {
    catalog::build_all(None).1
}

/// The definition of `plural` in `group`/`version`, if served.
pub fn definition(group: &str, version: &str, plural: &str) -> Option<ResourceDefinition> {
    catalog::build_all(None).0.into_iter().find(|definition| {
        definition.group_version.group == group
            && definition.group_version.version == version
            && definition.plural == plural
    })
}

/// Creates the system namespaces that do not exist (kube-apiserver's system namespaces
/// controller, run once): `kube-system`, `kube-public`, `kube-node-lease` and `default`.
/// Namespaces that exist already are left alone; every namespace is attempted and the
/// first error is returned.
pub async fn ensure_system_namespaces(
    registry: &Registry,
    definition: &ResourceDefinition,
) -> Result<(), ApiError> {
    let namespaces = SYSTEM_NAMESPACES.iter().map(|name| {
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": { "name": name },
        })
    });
    util::create_missing(registry, definition, namespaces.collect()).await
}

#[cfg(test)]
mod tests;
