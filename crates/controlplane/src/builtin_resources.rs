//! A typed handle on the built-in resources the control plane wires into its hooks,
//! controllers, authenticators, authorizers and admission plugins. Each is looked up once,
//! when the kube-apiserver of the chain is built: a missing one fails the start naming it,
//! and everything after reads a field rather than a string.

use anyhow::{Context, Result};
use kapi_server::endpoints::{ApiHandler, Served};

/// Declares [`BuiltinResources`]: one field per resource, with its group and plural (all
/// served in version v1).
macro_rules! builtin_resources {
    ($($field:ident: $group:literal $plural:literal,)*) => {
        /// The built-in resources the control plane uses.
        #[derive(Clone)]
        pub(crate) struct BuiltinResources {
            $(pub(crate) $field: Served,)*
        }

        impl BuiltinResources {
            /// Every one of them.
            pub(crate) fn all(&self) -> Vec<Served> {
                vec![$(self.$field.clone(),)*]
            }

            /// Looks every one up in `api`.
            pub(crate) fn of(api: &ApiHandler) -> Result<BuiltinResources> {
                Ok(BuiltinResources {
                    $($field: api
                        .served($group, "v1", $plural)
                        .with_context(|| format!("the built-in resources have no {}", $plural))?,)*
                })
            }
        }
    };
}

builtin_resources! {
    namespaces: "" "namespaces",
    nodes: "" "nodes",
    pods: "" "pods",
    config_maps: "" "configmaps",
    secrets: "" "secrets",
    service_accounts: "" "serviceaccounts",
    services: "" "services",
    endpoints: "" "endpoints",
    persistent_volume_claims: "" "persistentvolumeclaims",
    persistent_volumes: "" "persistentvolumes",
    resource_quotas: "" "resourcequotas",
    limit_ranges: "" "limitranges",
    mutating_webhook_configurations: "admissionregistration.k8s.io" "mutatingwebhookconfigurations",
    api_services: "apiregistration.k8s.io" "apiservices",
    certificate_signing_requests: "certificates.k8s.io" "certificatesigningrequests",
    validating_webhook_configurations: "admissionregistration.k8s.io" "validatingwebhookconfigurations",
    validating_admission_policies: "admissionregistration.k8s.io" "validatingadmissionpolicies",
    validating_admission_policy_bindings: "admissionregistration.k8s.io" "validatingadmissionpolicybindings",
    endpoint_slices: "discovery.k8s.io" "endpointslices",
    flow_schemas: "flowcontrol.apiserver.k8s.io" "flowschemas",
    priority_level_configurations: "flowcontrol.apiserver.k8s.io" "prioritylevelconfigurations",
    ingress_classes: "networking.k8s.io" "ingressclasses",
    ip_addresses: "networking.k8s.io" "ipaddresses",
    service_cidrs: "networking.k8s.io" "servicecidrs",
    runtime_classes: "node.k8s.io" "runtimeclasses",
    roles: "rbac.authorization.k8s.io" "roles",
    cluster_roles: "rbac.authorization.k8s.io" "clusterroles",
    role_bindings: "rbac.authorization.k8s.io" "rolebindings",
    cluster_role_bindings: "rbac.authorization.k8s.io" "clusterrolebindings",
    priority_classes: "scheduling.k8s.io" "priorityclasses",
    storage_classes: "storage.k8s.io" "storageclasses",
    volume_attachments: "storage.k8s.io" "volumeattachments",
}
