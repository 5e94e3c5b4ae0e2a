//! The per-controller ClusterRoles of the bootstrap policy (upstream's controller_policy.go):
//! one `system:controller:<name>` role for each kube-controller-manager controller, bound to
//! the ServiceAccount `kube-system/<name>` that the controller uses when kube-controller-manager
//! runs with `--use-service-account-credentials`.
//!
//! Only the roles of 1.35 with its default feature gates are here: not those of
//! device-taint-eviction-controller (DRADeviceTaints), podcertificaterequestcleaner
//! (PodCertificateRequest), kube-apiserver-serving-clustertrustbundle-publisher
//! (ClusterTrustBundle), storage-version-garbage-collector (StorageVersionAPI) and
//! storage-version-migrator-controller (StorageVersionMigrator), all off by default.

use serde_json::Value;

use super::policy::{
    APPS, AUTHORIZATION, AUTOSCALING, BATCH, CERTIFICATES, CORE, DISCOVERY, EXTENSIONS, NETWORKING,
    POLICY, RBAC, READ, RESOURCE, STORAGE, binding, cluster_role, events, named, rule,
};

/// The prefix of every controller role; the rest of the name is the ServiceAccount's.
const PREFIX: &str = "system:controller:";
/// Where the controllers' ServiceAccounts live.
const NAMESPACE: &str = "kube-system";

const ADMISSION_REGISTRATION: &str = "admissionregistration.k8s.io";
const RESOURCE_METRICS: &str = "metrics.k8s.io";
const CUSTOM_METRICS: &str = "custom.metrics.k8s.io";
const EXTERNAL_METRICS: &str = "external.metrics.k8s.io";

/// The wildcard group or resource, for controllers that act on anything.
const ALL: &[&str] = &["*"];

/// The controller roles, in upstream's order; rules keep upstream's order too.
pub(super) fn cluster_roles() -> Vec<Value> {
    controllers()
        .into_iter()
        .map(|(name, rules)| cluster_role(&format!("{PREFIX}{name}"), rules))
        .collect()
}

/// One binding per controller role, to the controller's ServiceAccount in kube-system.
pub(super) fn cluster_role_bindings() -> Vec<Value> {
    controllers()
        .into_iter()
        .map(|(name, _)| {
            let role = format!("{PREFIX}{name}");
            let account = format!("ServiceAccount:{NAMESPACE}:{name}");
            binding(
                "ClusterRoleBinding",
                &role,
                None,
                "ClusterRole",
                &role,
                &[account.as_str()],
            )
        })
        .collect()
}

/// Each controller's name and rules.
fn controllers() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "attachdetach-controller",
            vec![
                rule(
                    &["list", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims", "persistentvolumes"],
                ),
                rule(READ, &[CORE], &["nodes"]),
                rule(&["patch", "update"], &[CORE], &["nodes/status"]),
                rule(&["list", "watch"], &[CORE], &["pods"]),
                events(),
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[STORAGE],
                    &["volumeattachments"],
                ),
                rule(READ, &[STORAGE], &["csidrivers"]),
                rule(READ, &[STORAGE], &["csinodes"]),
            ],
        ),
        (
            "clusterrole-aggregation-controller",
            vec![rule(
                &["escalate", "get", "list", "patch", "update", "watch"],
                &[RBAC],
                &["clusterroles"],
            )],
        ),
        (
            "cronjob-controller",
            vec![
                rule(&["get", "list", "update", "watch"], &[BATCH], &["cronjobs"]),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &[BATCH],
                    &["jobs"],
                ),
                rule(&["update"], &[BATCH], &["cronjobs/status"]),
                rule(&["update"], &[BATCH], &["cronjobs/finalizers"]),
                rule(&["delete", "list", "watch"], &[CORE], &["pods"]),
                events(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                rule(READ, &[EXTENSIONS, APPS], &["daemonsets"]),
                rule(&["update"], &[EXTENSIONS, APPS], &["daemonsets/status"]),
                rule(&["update"], &[EXTENSIONS, APPS], &["daemonsets/finalizers"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[CORE],
                    &["pods"],
                ),
                rule(&["create"], &[CORE], &["pods/binding"]),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                events(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[EXTENSIONS, APPS],
                    &["deployments"],
                ),
                rule(&["update"], &[EXTENSIONS, APPS], &["deployments/status"]),
                rule(
                    &["update"],
                    &[EXTENSIONS, APPS],
                    &["deployments/finalizers"],
                ),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                rule(&["get", "list", "update", "watch"], &[CORE], &["pods"]),
                events(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                rule(READ, &[EXTENSIONS, APPS], &["deployments"]),
                rule(READ, &[APPS, EXTENSIONS], &["replicasets"]),
                rule(READ, &[CORE], &["replicationcontrollers"]),
                rule(READ, &[POLICY], &["poddisruptionbudgets"]),
                rule(READ, &[APPS], &["statefulsets"]),
                rule(&["update"], &[POLICY], &["poddisruptionbudgets/status"]),
                rule(&["patch", "update"], &[CORE], &["pods/status"]),
                rule(&["get"], ALL, &["*/scale"]),
                events(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                rule(READ, &[CORE], &["pods", "services"]),
                rule(
                    &["create", "delete", "get", "list", "update", "watch"],
                    &[CORE],
                    &["endpoints"],
                ),
                rule(&["create"], &[CORE], &["endpoints/restricted"]),
                events(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                rule(READ, &[CORE], &["nodes", "pods", "services"]),
                // To own its slices with blockOwnerDeletion set.
                rule(&["update"], &[CORE], &["services/finalizers"]),
                rule(
                    &["create", "delete", "get", "list", "update", "watch"],
                    &[DISCOVERY],
                    &["endpointslices"],
                ),
                events(),
            ],
        ),
        (
            "endpointslicemirroring-controller",
            vec![
                rule(READ, &[CORE], &["endpoints", "services"]),
                rule(&["update"], &[CORE], &["services/finalizers"]),
                rule(&["update"], &[CORE], &["endpoints/finalizers"]),
                rule(
                    &["create", "delete", "get", "list", "update", "watch"],
                    &[DISCOVERY],
                    &["endpointslices"],
                ),
                events(),
            ],
        ),
        (
            "expand-controller",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(
                    &["patch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims/status"],
                ),
                rule(READ, &[CORE], &["persistentvolumeclaims"]),
                events(),
                // The in-tree Portworx plugin (still in 1.35).
                rule(&["get"], &[CORE], &["services"]),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                rule(READ, &[CORE], &["pods"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                rule(
                    &["create", "get", "list", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                events(),
            ],
        ),
        (
            "resource-claim-controller",
            vec![
                rule(READ, &[CORE], &["pods"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[RESOURCE],
                    &["resourceclaims"],
                ),
                rule(
                    &["patch", "update"],
                    &[RESOURCE],
                    &["resourceclaims", "resourceclaims/status"],
                ),
                rule(&["patch", "update"], &[CORE], &["pods/status"]),
                events(),
            ],
        ),
        (
            "generic-garbage-collector",
            vec![
                rule(
                    &["delete", "get", "list", "patch", "update", "watch"],
                    ALL,
                    ALL,
                ),
                events(),
            ],
        ),
        (
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, &[AUTOSCALING], &["horizontalpodautoscalers"]),
                rule(
                    &["update"],
                    &[AUTOSCALING],
                    &["horizontalpodautoscalers/status"],
                ),
                rule(&["get", "update"], ALL, &["*/scale"]),
                rule(&["list", "watch"], &[CORE], &["pods"]),
                rule(&["list", "watch"], &[RESOURCE_METRICS], &["pods"]),
                rule(READ, &[CUSTOM_METRICS], ALL),
                rule(READ, &[EXTERNAL_METRICS], ALL),
                events(),
            ],
        ),
        (
            "job-controller",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[BATCH],
                    &["jobs"],
                ),
                rule(&["update"], &[BATCH], &["jobs/status"]),
                rule(&["update"], &[BATCH], &["jobs/finalizers"]),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[CORE],
                    &["pods"],
                ),
                events(),
            ],
        ),
        (
            "namespace-controller",
            vec![
                rule(
                    &["delete", "get", "list", "watch"],
                    &[CORE],
                    &["namespaces"],
                ),
                rule(
                    &["update"],
                    &[CORE],
                    &["namespaces/finalize", "namespaces/status"],
                ),
                rule(
                    &["delete", "deletecollection", "get", "list", "watch"],
                    ALL,
                    ALL,
                ),
            ],
        ),
        (
            "node-controller",
            vec![
                rule(
                    &["delete", "get", "list", "patch", "update", "watch"],
                    &[CORE],
                    &["nodes"],
                ),
                rule(&["patch", "update"], &[CORE], &["nodes/status"]),
                rule(&["patch", "update"], &[CORE], &["pods/status"]),
                rule(&["delete", "get", "list", "watch"], &[CORE], &["pods"]),
                events(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                rule(
                    &["create", "delete", "get", "list", "update", "watch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(&["update"], &[CORE], &["persistentvolumes/status"]),
                rule(
                    &["get", "list", "update", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update"], &[CORE], &["persistentvolumeclaims/status"]),
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[CORE],
                    &["pods"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                events(),
                // The recycler watches its pod's events.
                rule(&["watch"], &[CORE], &["events"]),
                // The in-tree Portworx plugin (still in 1.35).
                rule(&["get"], &[CORE], &["services"]),
            ],
        ),
        (
            "pod-garbage-collector",
            vec![
                rule(&["delete", "list", "watch"], &[CORE], &["pods"]),
                rule(READ, &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["pods/status"]),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                rule(&["update"], &[APPS, EXTENSIONS], &["replicasets/status"]),
                rule(
                    &["update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets/finalizers"],
                ),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[CORE],
                    &["pods"],
                ),
                events(),
            ],
        ),
        (
            "replication-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[CORE],
                    &["replicationcontrollers"],
                ),
                rule(&["update"], &[CORE], &["replicationcontrollers/status"]),
                rule(&["update"], &[CORE], &["replicationcontrollers/finalizers"]),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[CORE],
                    &["pods"],
                ),
                events(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![
                // Quota may count any resource.
                rule(&["list", "watch"], ALL, ALL),
                rule(&["update"], &[CORE], &["resourcequotas/status"]),
                events(),
            ],
        ),
        (
            "route-controller",
            vec![
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["nodes/status"]),
                events(),
            ],
        ),
        (
            "service-account-controller",
            vec![rule(&["create"], &[CORE], &["serviceaccounts"]), events()],
        ),
        (
            "service-controller",
            vec![
                rule(READ, &[CORE], &["services"]),
                rule(&["patch", "update"], &[CORE], &["services/status"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                events(),
            ],
        ),
        (
            "service-cidrs-controller",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[NETWORKING],
                    &["servicecidrs"],
                ),
                rule(
                    &["patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs/finalizers"],
                ),
                rule(
                    &["patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs/status"],
                ),
                rule(READ, &[NETWORKING], &["ipaddresses"]),
                events(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                rule(&["list", "watch"], &[CORE], &["pods"]),
                rule(READ, &[APPS], &["statefulsets"]),
                rule(&["update"], &[APPS], &["statefulsets/status"]),
                rule(&["update"], &[APPS], &["statefulsets/finalizers"]),
                rule(
                    &["create", "delete", "get", "patch", "update"],
                    &[CORE],
                    &["pods"],
                ),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                rule(
                    &["create", "get", "list", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(&["delete", "update"], &[CORE], &["persistentvolumeclaims"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                events(),
            ],
        ),
        (
            "ttl-controller",
            vec![
                rule(&["list", "patch", "update", "watch"], &[CORE], &["nodes"]),
                events(),
            ],
        ),
        (
            "certificate-controller",
            vec![
                rule(
                    &["delete", "get", "list", "watch"],
                    &[CERTIFICATES],
                    &["certificatesigningrequests"],
                ),
                rule(
                    &["update"],
                    &[CERTIFICATES],
                    &[
                        "certificatesigningrequests/approval",
                        "certificatesigningrequests/status",
                    ],
                ),
                named(
                    &["approve"],
                    CERTIFICATES,
                    &["signers"],
                    &["kubernetes.io/kube-apiserver-client-kubelet"],
                ),
                named(
                    &["sign"],
                    CERTIFICATES,
                    &["signers"],
                    &[
                        "kubernetes.io/legacy-unknown",
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                    ],
                ),
                rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
                events(),
            ],
        ),
        (
            "pvc-protection-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[CORE], &["pods"]),
                events(),
            ],
        ),
        (
            "pv-protection-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                events(),
            ],
        ),
        (
            "volumeattributesclass-protection-controller",
            vec![
                rule(READ, &[CORE], &["persistentvolumeclaims"]),
                rule(READ, &[CORE], &["persistentvolumes"]),
                rule(
                    &["get", "list", "update", "watch"],
                    &[STORAGE],
                    &["volumeattributesclasses"],
                ),
                events(),
            ],
        ),
        (
            "ttl-after-finished-controller",
            vec![
                rule(&["delete", "get", "list", "watch"], &[BATCH], &["jobs"]),
                events(),
            ],
        ),
        (
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"], &[CORE], &["configmaps"]),
                events(),
            ],
        ),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(
                    READ,
                    &[ADMISSION_REGISTRATION],
                    &["validatingadmissionpolicies"],
                ),
                rule(
                    &["get", "patch", "update"],
                    &[ADMISSION_REGISTRATION],
                    &["validatingadmissionpolicies/status"],
                ),
                events(),
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                named(
                    &["get"],
                    CORE,
                    &["configmaps"],
                    &["kube-apiserver-legacy-service-account-token-tracking"],
                ),
                rule(&["delete", "patch"], &[CORE], &["secrets"]),
            ],
        ),
        (
            "selinux-warning-controller",
            vec![
                events(),
                rule(READ, &[CORE], &["persistentvolumes"]),
                rule(READ, &[CORE], &["persistentvolumeclaims"]),
                rule(READ, &[CORE], &["pods"]),
                rule(READ, &[STORAGE], &["csidrivers"]),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;

    fn role<'a>(roles: &'a [Value], name: &str) -> &'a Value {
        roles
            .iter()
            .find(|r| r["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no role {name}"))
    }

    /// Events as upstream's testdata spells them.
    fn events_rule() -> Value {
        json!({"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
               "verbs": ["create", "patch", "update"]})
    }

    #[test]
    fn rules_match_upstream_testdata() {
        let roles = cluster_roles();
        assert_eq!(
            role(&roles, "system:controller:deployment-controller")["rules"],
            json!([
                {"apiGroups": ["apps", "extensions"], "resources": ["deployments"],
                 "verbs": ["get", "list", "update", "watch"]},
                {"apiGroups": ["apps", "extensions"], "resources": ["deployments/status"],
                 "verbs": ["update"]},
                {"apiGroups": ["apps", "extensions"], "resources": ["deployments/finalizers"],
                 "verbs": ["update"]},
                {"apiGroups": ["apps", "extensions"], "resources": ["replicasets"],
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
                {"apiGroups": [""], "resources": ["pods"],
                 "verbs": ["get", "list", "update", "watch"]},
                events_rule(),
            ])
        );
        assert_eq!(
            role(&roles, "system:controller:namespace-controller")["rules"],
            json!([
                {"apiGroups": [""], "resources": ["namespaces"],
                 "verbs": ["delete", "get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["namespaces/finalize", "namespaces/status"],
                 "verbs": ["update"]},
                {"apiGroups": ["*"], "resources": ["*"],
                 "verbs": ["delete", "deletecollection", "get", "list", "watch"]},
            ])
        );
        assert_eq!(
            role(&roles, "system:controller:certificate-controller")["rules"][3],
            json!({"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                   "resourceNames": ["kubernetes.io/kube-apiserver-client",
                                     "kubernetes.io/kube-apiserver-client-kubelet",
                                     "kubernetes.io/kubelet-serving",
                                     "kubernetes.io/legacy-unknown"],
                   "verbs": ["sign"]})
        );
        let role = role(
            &roles,
            "system:controller:legacy-service-account-token-cleaner",
        );
        assert_eq!(
            role["metadata"],
            json!({
                "name": "system:controller:legacy-service-account-token-cleaner",
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
            })
        );
    }

    #[test]
    fn the_default_gated_set_is_upstreams() {
        let names: BTreeSet<String> = cluster_roles()
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names.len(), 37);
        for on in [
            "resource-claim-controller",
            "service-cidrs-controller",
            "volumeattributesclass-protection-controller",
            "selinux-warning-controller",
        ] {
            assert!(names.contains(&format!("{PREFIX}{on}")), "{on}");
        }
        for off in [
            "device-taint-eviction-controller",
            "podcertificaterequestcleaner",
            "storage-version-migrator-controller",
        ] {
            assert!(!names.contains(&format!("{PREFIX}{off}")), "{off}");
        }
    }

    #[test]
    fn every_role_is_bound_to_its_service_account() {
        let roles = cluster_roles();
        let bindings = cluster_role_bindings();
        assert_eq!(roles.len(), bindings.len());
        for role in &roles {
            let name = role["metadata"]["name"].as_str().unwrap();
            let account = name.strip_prefix(PREFIX).unwrap();
            let binding = bindings
                .iter()
                .find(|b| b["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("no binding {name}"));
            assert_eq!(
                binding["roleRef"],
                json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                       "name": name})
            );
            assert_eq!(
                binding["subjects"],
                json!([{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}])
            );
            assert_eq!(
                binding["metadata"]["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
        }
        // And the whole policy carries them.
        let all = super::super::policy::cluster_role_bindings();
        assert!(
            all.iter()
                .any(|b| b["metadata"]["name"] == "system:controller:job-controller")
        );
    }
}
