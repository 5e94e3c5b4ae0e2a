//! kube-controller-manager's controllers that a cluster of kapi alone needs, and
//! kube-apiserver's own controllers of its configuration, run in process over the built-in
//! resources' watch caches: each namespace's `default` ServiceAccount and `kube-root-ca.crt`
//! ConfigMap (`namespace_objects`), the PersistentVolume(Claim) protection finalizers
//! (`protection`), legacy service-account token Secrets (`token_controller`), kube-system's
//! `extension-apiserver-authentication` (`cluster_authentication`) and legacy token tracking
//! (`token_tracking`) ConfigMaps; and the namespace controller (`namespace`), which works
//! through the server's own API as kube-controller-manager's does. The control plane starts each from a post-start hook.

mod bootstrap_tokens;
mod certificates;
mod cluster_authentication;
mod discovery;
mod endpoints;
mod events;
mod garbage_collector;
mod identity_lease;
mod kept_config_map;
mod keyed;
mod leader_election;
mod legacy_token_cleaner;
mod namespace;
mod namespace_objects;
mod podgc;
mod protection;
mod token_controller;
mod token_tracking;
mod workqueue;

pub use bootstrap_tokens::{
    BOOTSTRAP_SIGNER_CONTROLLER, TOKEN_CLEANER_CONTROLLER, start_bootstrap_signer,
    start_token_cleaner,
};
pub use certificates::{
    CERTIFICATE_CONTROLLER_ACCOUNT, CSR_APPROVING_CONTROLLER, CSR_CLEANER_CONTROLLER,
    CSR_SIGNING_CONTROLLER, CsrSigning, KUBE_APISERVER_CLIENT, KUBELET_CLIENT, KUBELET_SERVING,
    LEGACY_UNKNOWN, SigningCa, start_csr_approving, start_csr_cleaner, start_csr_signing,
};
pub use cluster_authentication::{
    ClusterAuthenticationInfo, EXTENSION_AUTHENTICATION_CONFIG_MAP, RequestHeaderInfo,
    start_cluster_authentication_info,
};
pub use endpoints::{
    ENDPOINTS_CONTROLLER, ENDPOINTSLICE_CONTROLLER, ENDPOINTSLICE_MIRRORING_CONTROLLER,
    EndpointsSources, start_endpoints_controller, start_endpointslice_controller,
    start_endpointslice_mirroring,
};
pub use garbage_collector::{
    GARBAGE_COLLECTOR_ACCOUNT, GARBAGE_COLLECTOR_CONTROLLER, start_garbage_collector,
};
pub use identity_lease::{
    IDENTITY_LABEL, IdentityLeaseTiming, api_server_id, start_identity_lease_controller,
    start_identity_lease_gc,
};
pub use leader_election::{LeaderElection, run_leader_elected};
pub use legacy_token_cleaner::{
    LEGACY_TOKEN_CLEANER_CONTROLLER, LegacyTokenCleaner, start_legacy_token_cleaner,
};
pub use namespace::{NAMESPACE_CONTROLLER, start_namespace_controller};
pub use namespace_objects::{NamespaceObject, ROOT_CA_CONFIG_MAP, start_namespace_objects};
pub use podgc::{POD_GC_CONTROLLER, PodGc, start_pod_gc};
pub use protection::{ProtectedStorage, start_protection_controllers};
pub use token_controller::{LegacyTokens, start_token_controller};
pub use token_tracking::{LEGACY_TOKEN_TRACKING_CONFIG_MAP, start_legacy_token_tracking};
