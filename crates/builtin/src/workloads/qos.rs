//! A pod's quality-of-service class, as upstream's qos.GetPodQOS computes it when a pod is
//! created (pkg/apis/core/helper/qos): Guaranteed when every container limits and requests
//! cpu and memory equally, BestEffort when none requests or limits either, Burstable
//! otherwise.

use std::collections::BTreeMap;

use kapi_apimachinery::Quantity;
use serde_json::Value;

/// The resources whose requests and limits decide the class.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// The cpu and memory quantities of a container's `requests` or `limits` that are above
/// zero (upstream counts only those).
fn positive(container: &Value, kind: &str) -> BTreeMap<&'static str, Quantity> {
    let mut found = BTreeMap::new();
    for name in QOS_RESOURCES {
        if let Some(quantity) = Quantity::of_field(&container["resources"][kind][name])
            && quantity.signum() > 0
        {
            found.insert(name, quantity);
        }
    }
    found
}

/// Adds each quantity into the running totals.
fn add_into(totals: &mut BTreeMap<&'static str, Quantity>, from: BTreeMap<&'static str, Quantity>) {
    for (name, quantity) in from {
        match totals.get_mut(name) {
            Some(total) => *total += &quantity,
            None => {
                totals.insert(name, quantity);
            }
        }
    }
}

/// The pod's QOS class: `Guaranteed`, `Burstable` or `BestEffort`.
pub(crate) fn pod_qos(pod: &Value) -> &'static str {
    let containers = ["initContainers", "containers"]
        .iter()
        .filter_map(|key| pod["spec"][*key].as_array())
        .flatten();
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    let mut guaranteed = true;
    for container in containers {
        add_into(&mut requests, positive(container, "requests"));
        let container_limits = positive(container, "limits");
        if container_limits.len() != QOS_RESOURCES.len() {
            guaranteed = false;
        }
        add_into(&mut limits, container_limits);
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests == limits {
        return "Guaranteed";
    }
    "Burstable"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        let parse_quantity =
            |text: &str| Quantity::of_field(&json!(text)).map(|q| q.as_approximate_f64());
        assert_eq!(parse_quantity("100m"), Some(0.1));
        assert_eq!(parse_quantity("1Gi"), Some(1073741824.0));
        assert_eq!(parse_quantity("2e3"), Some(2000.0));
        assert_eq!(parse_quantity("1.5"), Some(1.5));
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(parse_quantity("1Qi"), None);
    }

    #[test]
    fn classes_compare_exact_sums() {
        // 100m + 200m requests against a 300m limit: equal exactly (not in floats).
        let container = |cpu: &str| {
            json!({"name": "a", "resources": {
            "requests": {"cpu": cpu, "memory": "1Gi"},
            "limits": {"cpu": cpu, "memory": "1Gi"}}})
        };
        let pod = json!({"spec": {"containers": [container("100m"), container("200m")]}});
        assert_eq!(pod_qos(&pod), "Guaranteed");
        let uneven = json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "0.1", "memory": "1Gi"},
            "limits": {"cpu": "100m", "memory": "1073741824"}}}]}});
        assert_eq!(pod_qos(&uneven), "Guaranteed");
    }

    #[test]
    fn classes() {
        let pod = |resources: Value| json!({"spec": {"containers": [{"name": "a", "resources": resources}]}});
        assert_eq!(pod_qos(&pod(json!({}))), "BestEffort");
        assert_eq!(
            pod_qos(&pod(json!({"requests": {"cpu": "100m"}}))),
            "Burstable"
        );
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(
            pod_qos(&pod(json!({"requests": both, "limits": both}))),
            "Guaranteed"
        );
        assert_eq!(
            pod_qos(&pod(
                json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": both})
            )),
            "Burstable"
        );
    }
}
