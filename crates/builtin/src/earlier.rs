//! Values an older kube-apiserver stored in versions 1.35 no longer serves but its scheme
//! still decodes: a cluster's etcd keeps each object in the version it was last written in
//! until something rewrites it, so a FlowSchema written by 1.28 is still a v1beta3 value, a
//! CronJob written by 1.20 a batch/v1beta1 one. Upstream's storage decoder converts such a
//! value to the storage version through its internal type; [`read`] does the same at the
//! JSON level, one conversion per earlier version, so kapi serves what kube-apiserver would.
//!
//! Most earlier versions differ from the storage version only in their `apiVersion`; the
//! others have a conversion of their own below (the fields upstream renamed, moved or
//! gave a new meaning). Alpha versions are not read: they were only ever stored with a
//! feature gate on.

use serde_json::Value;

mod conversions;

/// A conversion of an earlier version's object to the storage version's, beyond the
/// `apiVersion` (which [`read`] sets).
type Conversion = fn(&mut Value);

/// One earlier version of a kind: the object's `apiVersion` and `kind` as stored, the
/// `apiVersion` it reads as, and what else changes.
struct Earlier {
    api_version: &'static str,
    kind: &'static str,
    reads_as: &'static str,
    convert: Option<Conversion>,
}

const fn same(api_version: &'static str, kind: &'static str, reads_as: &'static str) -> Earlier {
    Earlier {
        api_version,
        kind,
        reads_as,
        convert: None,
    }
}

const fn converted(
    api_version: &'static str,
    kind: &'static str,
    reads_as: &'static str,
    convert: Conversion,
) -> Earlier {
    Earlier {
        api_version,
        kind,
        reads_as,
        convert: Some(convert),
    }
}

const ADMISSION_V1: &str = "admissionregistration.k8s.io/v1";
const APPS_V1: &str = "apps/v1";
const FLOWCONTROL_V1: &str = "flowcontrol.apiserver.k8s.io/v1";
const NETWORKING_V1: &str = "networking.k8s.io/v1";
const RBAC_V1: &str = "rbac.authorization.k8s.io/v1";
const RESOURCE_V1: &str = "resource.k8s.io/v1";
const STORAGE_V1: &str = "storage.k8s.io/v1";

/// Every earlier version kapi reads, by the group and kind it is stored as.
const EARLIER: &[Earlier] = &[
    same(
        "admissionregistration.k8s.io/v1beta1",
        "MutatingWebhookConfiguration",
        ADMISSION_V1,
    ),
    same(
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingWebhookConfiguration",
        ADMISSION_V1,
    ),
    same(
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingAdmissionPolicy",
        ADMISSION_V1,
    ),
    same(
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingAdmissionPolicyBinding",
        ADMISSION_V1,
    ),
    same(
        "apiregistration.k8s.io/v1beta1",
        "APIService",
        "apiregistration.k8s.io/v1",
    ),
    same("apps/v1beta1", "ControllerRevision", APPS_V1),
    same("apps/v1beta2", "ControllerRevision", APPS_V1),
    converted(
        "extensions/v1beta1",
        "DaemonSet",
        APPS_V1,
        conversions::daemon_set_template_generation,
    ),
    converted(
        "apps/v1beta2",
        "DaemonSet",
        APPS_V1,
        conversions::daemon_set_template_generation_annotation,
    ),
    converted(
        "extensions/v1beta1",
        "Deployment",
        APPS_V1,
        conversions::deployment_rollback,
    ),
    converted(
        "apps/v1beta1",
        "Deployment",
        APPS_V1,
        conversions::deployment_rollback,
    ),
    converted(
        "apps/v1beta2",
        "Deployment",
        APPS_V1,
        conversions::deployment_rollback_annotation,
    ),
    same("extensions/v1beta1", "ReplicaSet", APPS_V1),
    same("apps/v1beta2", "ReplicaSet", APPS_V1),
    converted(
        "apps/v1beta1",
        "StatefulSet",
        APPS_V1,
        conversions::stateful_set_claim_templates,
    ),
    converted(
        "apps/v1beta2",
        "StatefulSet",
        APPS_V1,
        conversions::stateful_set_claim_templates,
    ),
    same("batch/v1beta1", "CronJob", "batch/v1"),
    same(
        "certificates.k8s.io/v1beta1",
        "CertificateSigningRequest",
        "certificates.k8s.io/v1",
    ),
    same(
        "coordination.k8s.io/v1beta1",
        "Lease",
        "coordination.k8s.io/v1",
    ),
    converted(
        "discovery.k8s.io/v1beta1",
        "EndpointSlice",
        "discovery.k8s.io/v1",
        conversions::endpoint_slice_topology,
    ),
    same(
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "FlowSchema",
        FLOWCONTROL_V1,
    ),
    same(
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "FlowSchema",
        FLOWCONTROL_V1,
    ),
    same(
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "FlowSchema",
        FLOWCONTROL_V1,
    ),
    converted(
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "PriorityLevelConfiguration",
        FLOWCONTROL_V1,
        conversions::priority_level_assured_shares,
    ),
    converted(
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "PriorityLevelConfiguration",
        FLOWCONTROL_V1,
        conversions::priority_level_assured_shares,
    ),
    converted(
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "PriorityLevelConfiguration",
        FLOWCONTROL_V1,
        conversions::priority_level_v1beta3,
    ),
    converted(
        "extensions/v1beta1",
        "Ingress",
        NETWORKING_V1,
        conversions::ingress_backends,
    ),
    converted(
        "networking.k8s.io/v1beta1",
        "Ingress",
        NETWORKING_V1,
        conversions::ingress_backends,
    ),
    same("networking.k8s.io/v1beta1", "IngressClass", NETWORKING_V1),
    same("networking.k8s.io/v1beta1", "IPAddress", NETWORKING_V1),
    same("networking.k8s.io/v1beta1", "ServiceCIDR", NETWORKING_V1),
    same("extensions/v1beta1", "NetworkPolicy", NETWORKING_V1),
    same("node.k8s.io/v1beta1", "RuntimeClass", "node.k8s.io/v1"),
    converted(
        "policy/v1beta1",
        "PodDisruptionBudget",
        "policy/v1",
        conversions::disruption_budget_selector,
    ),
    same("rbac.authorization.k8s.io/v1beta1", "ClusterRole", RBAC_V1),
    same(
        "rbac.authorization.k8s.io/v1beta1",
        "ClusterRoleBinding",
        RBAC_V1,
    ),
    same("rbac.authorization.k8s.io/v1beta1", "Role", RBAC_V1),
    same("rbac.authorization.k8s.io/v1beta1", "RoleBinding", RBAC_V1),
    same("resource.k8s.io/v1beta1", "DeviceClass", RESOURCE_V1),
    converted(
        "resource.k8s.io/v1beta1",
        "ResourceClaim",
        RESOURCE_V1,
        conversions::resource_claim_requests,
    ),
    converted(
        "resource.k8s.io/v1beta1",
        "ResourceClaimTemplate",
        RESOURCE_V1,
        conversions::resource_claim_template_requests,
    ),
    converted(
        "resource.k8s.io/v1beta1",
        "ResourceSlice",
        RESOURCE_V1,
        conversions::resource_slice_devices,
    ),
    same("resource.k8s.io/v1beta2", "DeviceClass", RESOURCE_V1),
    same("resource.k8s.io/v1beta2", "ResourceClaim", RESOURCE_V1),
    same(
        "resource.k8s.io/v1beta2",
        "ResourceClaimTemplate",
        RESOURCE_V1,
    ),
    same("resource.k8s.io/v1beta2", "ResourceSlice", RESOURCE_V1),
    same(
        "scheduling.k8s.io/v1beta1",
        "PriorityClass",
        "scheduling.k8s.io/v1",
    ),
    same("storage.k8s.io/v1beta1", "CSIDriver", STORAGE_V1),
    same("storage.k8s.io/v1beta1", "CSINode", STORAGE_V1),
    same("storage.k8s.io/v1beta1", "CSIStorageCapacity", STORAGE_V1),
    same("storage.k8s.io/v1beta1", "StorageClass", STORAGE_V1),
    same("storage.k8s.io/v1beta1", "VolumeAttachment", STORAGE_V1),
    same(
        "storage.k8s.io/v1beta1",
        "VolumeAttributesClass",
        STORAGE_V1,
    ),
];

/// `object`, stored in an earlier version, as its kind's storage version; `None` for a
/// version kapi does not read. The storage codec checks that the result is its collection's
/// kind.
pub(crate) fn read(mut object: Value) -> Option<Value> {
    let stored = (object["apiVersion"].as_str()?, object["kind"].as_str()?);
    let earlier = EARLIER
        .iter()
        .find(|earlier| (earlier.api_version, earlier.kind) == stored)?;
    if let Some(convert) = earlier.convert {
        convert(&mut object);
    }
    object["apiVersion"] = Value::from(earlier.reads_as);
    Some(object)
}

#[cfg(test)]
mod tests;
