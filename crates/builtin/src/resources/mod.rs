//! The strategies, printers and conversions of the built-in kinds outside the core workloads,
//! services and namespace-scoped basics: cluster objects (nodes, persistent volumes, quotas),
//! networking, RBAC, storage, policy, autoscaling, certificates, scheduling, node,
//! admission registration, flow control, dynamic resource allocation and API services.
//!
//! Every kind's strategy is a struct implementing the generic registry's
//! [`Strategy`](kapi_server::resource::Strategy), in the module that owns the kind and named
//! after upstream's (`storageClassStrategy` is `StorageClassStrategy`). It is built from the
//! kind's defaulting (upstream's `SetDefaults_*`), validation and update validation and the
//! building blocks of [`crate::strategy`]: what PrepareForCreate does to the status, how
//! `metadata.generation` starts and grows, the core metadata rules. A kind's defaults run where
//! upstream's decoder applies them (`default`, so the writer owns them) and again in its
//! prepare hooks, for the server's own writes.

mod admissionregistration;
mod apiregistration;
mod autoscaling;
mod certificates;
mod cluster;
mod common;
mod dra;
mod flowcontrol;
mod networking;
mod policy;
mod rbac;
mod scheduling;
mod storage;

use crate::kinds::KindStrategies;

pub(crate) use autoscaling::V1Converter as HorizontalPodAutoscalerV1Converter;
pub use scheduling::{SYSTEM_PRIORITY_CLASSES, ensure_system_priority_classes};

/// The strategies of the kinds this module owns.
pub(crate) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    match group {
        "" => cluster::strategies(kind),
        "networking.k8s.io" => networking::strategies(kind),
        "rbac.authorization.k8s.io" => rbac::strategies(kind),
        "storage.k8s.io" => storage::strategies(kind),
        "policy" => policy::strategies(kind),
        "autoscaling" => autoscaling::strategies(kind),
        "certificates.k8s.io" => certificates::strategies(kind),
        "scheduling.k8s.io" | "node.k8s.io" => scheduling::strategies(group, kind),
        "admissionregistration.k8s.io" => admissionregistration::strategies(kind),
        "flowcontrol.apiserver.k8s.io" => flowcontrol::strategies(kind),
        "resource.k8s.io" => dra::strategies(kind),
        "apiregistration.k8s.io" => apiregistration::strategies(kind),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owned_kind_has_hooks() {
        let kinds = [
            ("", "Node"),
            ("", "PersistentVolume"),
            ("", "PersistentVolumeClaim"),
            ("", "ResourceQuota"),
            ("", "LimitRange"),
            ("", "ComponentStatus"),
            ("networking.k8s.io", "Ingress"),
            ("networking.k8s.io", "IngressClass"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSINode"),
            ("storage.k8s.io", "CSIStorageCapacity"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("storage.k8s.io", "VolumeAttributesClass"),
            ("policy", "PodDisruptionBudget"),
            ("autoscaling", "HorizontalPodAutoscaler"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            ("scheduling.k8s.io", "PriorityClass"),
            ("node.k8s.io", "RuntimeClass"),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
            ),
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
            ),
            ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
            ("resource.k8s.io", "DeviceClass"),
            ("resource.k8s.io", "ResourceClaim"),
            ("resource.k8s.io", "ResourceClaimTemplate"),
            ("resource.k8s.io", "ResourceSlice"),
            ("apiregistration.k8s.io", "APIService"),
        ];
        for (group, kind) in kinds {
            assert!(strategies(group, kind).is_some(), "{group} {kind}");
        }
        assert!(strategies("", "Pod").is_none());
        assert!(strategies("apps", "Deployment").is_none());
        assert!(crate::kinds::converter("autoscaling", "v1", "HorizontalPodAutoscaler").is_some());
        assert!(crate::kinds::converter("autoscaling", "v2", "HorizontalPodAutoscaler").is_none());
    }
}
