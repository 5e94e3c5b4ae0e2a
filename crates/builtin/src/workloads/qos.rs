//! A pod's quality-of-service class, as upstream's qos.GetPodQOS computes it when a pod is
//! created (pkg/apis/core/helper/qos): Guaranteed when every container limits and requests
//! cpu and memory equally, BestEffort when none requests or limits either, Burstable
//! otherwise.

use std::collections::BTreeMap;

use serde_json::Value;

/// The resources whose requests and limits decide the class.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// Parses a resource.Quantity (`100m`, `1.5Gi`, `2e3`) into its value, or `None` when it
/// does not parse.
pub(crate) fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent if exponent.starts_with(['e', 'E']) => {
            10f64.powi(exponent[1..].parse::<i32>().ok()?)
        }
        _ => return None,
    };
    Some(number * factor)
}

/// The value of a quantity field (a string or a number).
fn quantity_of(value: &Value) -> Option<f64> {
    match value {
        Value::String(text) => parse_quantity(text),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// The cpu and memory quantities of a container's `requests` or `limits` that are not zero.
fn nonzero(container: &Value, kind: &str) -> BTreeMap<&'static str, f64> {
    let mut found = BTreeMap::new();
    for name in QOS_RESOURCES {
        if let Some(quantity) = quantity_of(&container["resources"][kind][name])
            && quantity != 0.0
        {
            found.insert(name, quantity);
        }
    }
    found
}

/// The pod's QOS class: `Guaranteed`, `Burstable` or `BestEffort`.
pub(crate) fn pod_qos(pod: &Value) -> &'static str {
    let containers = ["initContainers", "containers"]
        .iter()
        .filter_map(|key| pod["spec"][*key].as_array())
        .flatten();
    let mut requests: BTreeMap<&str, f64> = BTreeMap::new();
    let mut limits: BTreeMap<&str, f64> = BTreeMap::new();
    let mut guaranteed = true;
    for container in containers {
        for (name, quantity) in nonzero(container, "requests") {
            *requests.entry(name).or_default() += quantity;
        }
        let container_limits = nonzero(container, "limits");
        if container_limits.len() != QOS_RESOURCES.len() {
            guaranteed = false;
        }
        for (name, quantity) in container_limits {
            *limits.entry(name).or_default() += quantity;
        }
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
        assert_eq!(parse_quantity("100m"), Some(0.1));
        assert_eq!(parse_quantity("1Gi"), Some(1073741824.0));
        assert_eq!(parse_quantity("2e3"), Some(2000.0));
        assert_eq!(parse_quantity("1.5"), Some(1.5));
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(parse_quantity("1Qi"), None);
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
