//! Where the built-in group versions sort in discovery: the `groupPriorityMinimum` and
//! `versionPriority` kube-apiserver 1.35 gives the APIService of each (its control plane's
//! table of APIService priorities), and the aggregator's own group above all of them.

/// (group, version, group priority, version priority) of the built-in group versions. Higher
/// sorts first; groups of equal priority sort by name.
const PRIORITIES: &[(&str, &str, i32, i32)] = &[
    // kube-aggregator lists its own group first (APIRegistrationGroupPriority).
    ("apiregistration.k8s.io", "v1", 20001, 0),
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2beta1", 17500, 9),
    ("autoscaling", "v2beta2", 17500, 1),
    ("batch", "v1", 17400, 15),
    ("batch", "v1beta1", 17400, 9),
    ("batch", "v2alpha1", 17400, 9),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1beta1", 17300, 9),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("networking.k8s.io", "v1", 17200, 15),
    ("networking.k8s.io", "v1beta1", 17200, 9),
    ("networking.k8s.io", "v1alpha1", 17200, 1),
    ("policy", "v1", 17100, 15),
    ("policy", "v1beta1", 17100, 9),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("storage.k8s.io", "v1beta1", 16800, 9),
    ("storage.k8s.io", "v1alpha1", 16800, 1),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("coordination.k8s.io", "v1beta1", 16500, 13),
    ("coordination.k8s.io", "v1alpha2", 16500, 12),
    ("node.k8s.io", "v1", 16300, 15),
    ("node.k8s.io", "v1beta1", 16300, 9),
    ("node.k8s.io", "v1alpha1", 16300, 1),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("resource.k8s.io", "v1", 16200, 21),
    ("resource.k8s.io", "v1beta2", 16200, 15),
    ("resource.k8s.io", "v1beta1", 16200, 9),
    ("resource.k8s.io", "v1alpha3", 16200, 1),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("storagemigration.k8s.io", "v1beta1", 15800, 9),
    ("storagemigration.k8s.io", "v1alpha1", 15800, 9),
];

/// The (group priority, version priority) of the built-in group version `group`/`version`;
/// a version the table lacks of a group it has sorts below the group's listed versions.
/// `None` for groups that are not built in (they get what kube-apiserver gives CRDs).
pub fn api_service_priority(group: &str, version: &str) -> Option<(i32, i32)> {
    let listed = PRIORITIES
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version);
    if let Some((_, _, group_priority, version_priority)) = listed {
        return Some((*group_priority, *version_priority));
    }
    PRIORITIES
        .iter()
        .find(|(g, _, _, _)| *g == group)
        .map(|(_, _, group_priority, _)| (*group_priority, 0))
}

#[cfg(test)]
mod tests {
    use super::api_service_priority;

    #[test]
    fn listed_versions_unlisted_versions_and_other_groups() {
        assert_eq!(api_service_priority("", "v1"), Some((18000, 1)));
        assert_eq!(api_service_priority("autoscaling", "v2"), Some((17500, 30)));
        assert_eq!(api_service_priority("apps", "v9"), Some((17800, 0)));
        assert_eq!(
            api_service_priority("apiregistration.k8s.io", "v1"),
            Some((20001, 0))
        );
        assert_eq!(api_service_priority("example.com", "v1"), None);
    }
}
