//! ResourceQuota scopes (kubernetes/pkg/quota/v1/evaluator/core): a quota with `spec.scopes`
//! or `spec.scopeSelector` tracks only the pods its scopes select (Terminating,
//! NotTerminating, BestEffort, NotBestEffort, PriorityClass, CrossNamespacePodAffinity) and
//! the claims its VolumeAttributesClass scope selects, nothing else.

use serde_json::Value;

/// One scope selector of a quota (`spec.scopes` entries are `Exists` selectors) or of the
/// ResourceQuota admission configuration's `matchScopes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeSelector {
    pub scope: String,
    pub operator: String,
    pub values: Vec<String>,
}

impl ScopeSelector {
    /// Reads a `{scopeName, operator, values}` requirement.
    pub fn from_requirement(requirement: &Value) -> ScopeSelector {
        let text = |key: &str| requirement[key].as_str().unwrap_or_default().to_string();
        ScopeSelector {
            scope: text("scopeName"),
            operator: text("operator"),
            values: requirement["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        }
    }

    /// Whether it selects the object `group`/`plural` `object`: pods by their scopes, claims
    /// by their VolumeAttributesClass, nothing else.
    pub fn selects(&self, group: &str, plural: &str, object: &Value) -> bool {
        match (group, plural) {
            ("", "pods") => selects(&self.scope, &self.operator, &self.values, object),
            ("", "persistentvolumeclaims") => self.selects_claim(object),
            _ => false,
        }
    }

    /// Whether it selects a claim by the VolumeAttributesClasses it names (spec, status, or
    /// the target of a modification).
    fn selects_claim(&self, claim: &Value) -> bool {
        if self.scope != "VolumeAttributesClass" {
            return false;
        }
        let names: Vec<&str> = [
            &claim["spec"]["volumeAttributesClassName"],
            &claim["status"]["currentVolumeAttributesClassName"],
            &claim["status"]["modifyVolumeStatus"]["targetVolumeAttributesClassName"],
        ]
        .into_iter()
        .filter_map(Value::as_str)
        .filter(|name| !name.is_empty())
        .collect();
        let named = |name: &str| self.values.iter().any(|v| v == name);
        match self.operator.as_str() {
            "Exists" => !names.is_empty(),
            "DoesNotExist" => names.is_empty(),
            "In" => names.iter().any(|name| named(name)),
            "NotIn" => names.is_empty() || names.iter().any(|name| !named(name)),
            _ => false,
        }
    }
}

/// Go's `%v` of a ScopedResourceSelectorRequirement: `{PriorityClass In [a b]}`.
impl std::fmt::Display for ScopeSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values = self.values.join(" ");
        write!(f, "{{{} {} [{values}]}}", self.scope, self.operator)
    }
}

/// A quota's scope selectors: `spec.scopes`, then `spec.scopeSelector.matchExpressions`.
pub fn selectors(quota: &Value) -> Vec<ScopeSelector> {
    let spec = &quota["spec"];
    let scopes = spec["scopes"].as_array().into_iter().flatten();
    let scopes = scopes.filter_map(Value::as_str).map(|scope| ScopeSelector {
        scope: scope.to_string(),
        operator: "Exists".to_string(),
        values: Vec::new(),
    });
    let expressions = spec["scopeSelector"]["matchExpressions"].as_array();
    let expressions = expressions.into_iter().flatten();
    scopes
        .chain(expressions.map(ScopeSelector::from_requirement))
        .collect()
}

/// Whether `quota` tracks the object `group`/`plural` `object`: every one of its scope
/// selectors selects it (a quota without scopes tracks everything).
pub fn matches(quota: &Value, group: &str, plural: &str, object: &Value) -> bool {
    selectors(quota)
        .iter()
        .all(|selector| selector.selects(group, plural, object))
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
        let by_attributes = quota(json!({"scopeSelector": {"matchExpressions": [
            {"scopeName": "VolumeAttributesClass", "operator": "In", "values": ["gold"]}]}}));
        let claim = json!({"spec": {"volumeAttributesClassName": "gold"}});
        assert!(matches(
            &by_attributes,
            "",
            "persistentvolumeclaims",
            &claim
        ));
        assert!(!matches(
            &by_attributes,
            "",
            "persistentvolumeclaims",
            &json!({})
        ));
        assert!(!matches(&by_attributes, "", "pods", &burstable));
        assert_eq!(
            selectors(&by_class)[0].to_string(),
            "{PriorityClass In [high]}"
        );
    }
}
