//! Services and what serves them: core/v1 Services (defaulting, validation, printing, field
//! selectors) with their ClusterIP and NodePort allocation, core/v1 Endpoints,
//! discovery.k8s.io/v1 EndpointSlices, networking.k8s.io/v1 ServiceCIDRs and IPAddresses,
//! and the bootstrap of the `kubernetes` Service (kubernetes/pkg/registry/core/service,
//! pkg/registry/networking, pkg/controlplane/controller/kubernetesservice and
//! defaultservicecidr).
//!
//! ClusterIPs are reserved as upstream's MultiCIDRServiceAllocator does: creating the
//! IPAddress named by the IP is the reservation, so several servers on one store never hand
//! out one IP twice. NodePorts are reserved in the RangeAllocation bitmap kept at
//! `<prefix>/ranges/servicenodeports`, written with compare-and-swap.

use crate::kinds::KindStrategies;

mod alloc;
mod bootstrap;
mod endpoints;
mod ipallocator;
mod masterleases;
mod networking;
mod portallocator;
mod strategy;
mod validation;

pub use alloc::{ServiceAllocator, ServiceRanges};
pub use bootstrap::{
    EndpointReconciler, KubernetesService, leave_kubernetes_endpoints,
    reconcile_kubernetes_service, start_kubernetes_service,
};
pub use ipallocator::{Cidr, CidrError};
pub use portallocator::{PortRange, PortRangeError};

/// The strategies of the kinds this module owns.
pub(crate) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    match (group, kind) {
        ("", "Service") => Some(strategy::strategies()),
        ("", "Endpoints") => Some(endpoints::endpoints_strategies()),
        ("discovery.k8s.io", "EndpointSlice") => Some(endpoints::endpoint_slice_strategies()),
        ("networking.k8s.io", "ServiceCIDR") => Some(networking::service_cidr_strategies()),
        ("networking.k8s.io", "IPAddress") => Some(networking::ip_address_strategies()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
