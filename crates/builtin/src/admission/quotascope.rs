//! ResourceQuota scopes (kubernetes/pkg/quota/v1/evaluator/core): a quota with `spec.scopes`
//! or `spec.scopeSelector` tracks only the pods its scopes select (Terminating,
//! NotTerminating, BestEffort, NotBestEffort, PriorityClass, CrossNamespacePodAffinity), and
//! nothing but pods.

use serde_json::Value;

/// Whether `quota` tracks the object `group`/`plural` `object`.
pub fn matches(quota: &Value, group: &str, plural: &str, object: &Value) -> bool {
    let spec = &quota["spec"];
    let scopes = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let expressions = spec["scopeSelector"]["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut selectors: Vec<(String, String, Vec<String>)> = scopes
        .map(|scope| (scope.to_string(), "Exists".to_string(), Vec::new()))
        .collect();
    selectors.extend(expressions.iter().map(|e| {
        let values = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        (
            e["scopeName"].as_str().unwrap_or_default().to_string(),
            e["operator"].as_str().unwrap_or_default().to_string(),
            values,
        )
    }));
    if selectors.is_empty() {
        return true;
    }
    let is_pod = group.is_empty() && plural == "pods";
    is_pod
        && selectors
            .iter()
            .all(|(scope, operator, values)| selects(scope, operator, values, object))
}

/// Whether one scope selector selects `pod`.
fn selects(scope: &str, operator: &str, values: &[String], pod: &Value) -> bool {
    let spec = &pod["spec"];
    let holds = match scope {
        "Terminating" => spec["activeDeadlineSeconds"]
            .as_i64()
            .is_some_and(|s| s >= 0),
        "NotTerminating" => spec["activeDeadlineSeconds"].is_null(),
        "BestEffort" => best_effort(spec),
        "NotBestEffort" => !best_effort(spec),
        "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
        "PriorityClass" => {
            let class = spec["priorityClassName"].as_str().unwrap_or_default();
            return match operator {
                "In" => values.iter().any(|v| v == class),
                "NotIn" => !values.iter().any(|v| v == class),
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                _ => false,
            };
        }
        _ => false,
    };
    match operator {
        "DoesNotExist" => !holds,
        _ => holds,
    }
}

/// Whether no container requests or limits cpu or memory (QoS class BestEffort).
fn best_effort(spec: &Value) -> bool {
    ["initContainers", "containers"]
        .iter()
        .flat_map(|list| spec[*list].as_array().into_iter().flatten())
        .all(|container| {
            ["requests", "limits"].iter().all(|kind| {
                let resources = &container["resources"][*kind];
                resources.get("cpu").is_none() && resources.get("memory").is_none()
            })
        })
}

/// Whether a pod (anti-)affinity term names other namespaces or a namespace selector.
fn cross_namespace_affinity(spec: &Value) -> bool {
    let affinity = &spec["affinity"];
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let rules = &affinity[*kind];
        let required = rules["requiredDuringSchedulingIgnoredDuringExecution"].as_array();
        let preferred = rules["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|weighted| &weighted["podAffinityTerm"]);
        required.into_iter().flatten().chain(preferred).any(|term| {
            term["namespaces"].as_array().is_some_and(|n| !n.is_empty())
                || term["namespaceSelector"].is_object()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_select_pods_as_upstream() {
        let quota = |spec: Value| json!({"spec": spec});
        let best_effort = json!({"spec": {"containers": [{"name": "c"}]}});
        let burstable = json!({"spec": {"activeDeadlineSeconds": 60, "priorityClassName": "high",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}});
        let scoped = quota(json!({"scopes": ["BestEffort"]}));
        assert!(matches(&scoped, "", "pods", &best_effort));
        assert!(!matches(&scoped, "", "pods", &burstable));
        assert!(!matches(&scoped, "", "services", &json!({})));
        let terminating = quota(json!({"scopes": ["Terminating", "NotBestEffort"]}));
        assert!(matches(&terminating, "", "pods", &burstable));
        let by_class = quota(json!({"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}));
        assert!(matches(&by_class, "", "pods", &burstable));
        assert!(!matches(&by_class, "", "pods", &best_effort));
        assert!(matches(
            &quota(json!({"hard": {}})),
            "",
            "services",
            &json!({})
        ));
    }
}
