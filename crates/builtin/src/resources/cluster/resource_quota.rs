//! ResourceQuota: validation of its hard limits, scopes and scope selector, and its printer
//! (kubernetes/pkg/registry/core/resourcequota/strategy.go, pkg/apis/core/validation).

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_qualified_name;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::Value;

use super::validate_non_negative;
use crate::printers::{age_cell, name_cell};
use crate::resources::common::{age, col, invalid_each, quantity_text, text};
use crate::strategy::{reset_status, validate_core, validate_core_update};

/// resourcequotaStrategy (pkg/registry/core/resourcequota/strategy.go).
pub(super) struct ResourceQuotaStrategy;

impl Strategy for ResourceQuotaStrategy {
    fn prepare_for_create(&self, quota: &mut Value) {
        reset_status(quota);
    }

    fn validate(&self, quota: &Value) -> FieldErrors {
        validate_core(quota, validate_quota(quota))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// ValidateResourceQuota: hard limits are valid resource names with non-negative values.
fn validate_quota(quota: &Value) -> FieldErrors {
    let path = Path::root("spec").child("hard");
    let mut errs = FieldErrors::new();
    for (name, value) in quota["spec"]["hard"].as_object().into_iter().flatten() {
        let key_path = path.key(name);
        errs.extend(validate_quota_resource_name(name, &key_path));
        errs.extend(validate_non_negative(value, &key_path));
    }
    errs.extend(validate_quota_scopes(&quota["spec"]));
    errs.extend(validate_scope_selector(&quota["spec"]));
    errs
}

/// The scopes kapi (as upstream) knows (IsStandardResourceQuotaScope).
const QUOTA_SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Scopes that cannot be asked for together.
const CONFLICTING_SCOPES: [[&str; 2]; 2] = [
    ["BestEffort", "NotBestEffort"],
    ["Terminating", "NotTerminating"],
];

/// IsResourceQuotaScopeValidForResource: pod scopes limit only pods and their compute
/// resources; BestEffort only the pod count.
fn scope_limits(scope: &str, resource: &str) -> bool {
    const COMPUTE: [&str; 6] = [
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// How many of the standard resources of the quota's `hard` `scope` may not limit.
fn scope_fits_hard(spec: &Value, scope: &str) -> usize {
    let hard = spec["hard"].as_object().into_iter().flatten();
    hard.filter(|(resource, _)| {
        STANDARD_QUOTA_RESOURCES.contains(&resource.as_str()) && !scope_limits(scope, resource)
    })
    .count()
}

/// validateResourceQuotaScopes: known scopes, each valid for every resource the quota
/// limits, no conflicting pair.
fn validate_quota_scopes(spec: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let scopes: Vec<&str> = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let path = Path::root("spec").child("scopes");
    let invalid = |detail: &str| FieldError::invalid(&path, spec["scopes"].clone(), detail);
    for scope in &scopes {
        if !QUOTA_SCOPES.contains(scope) {
            errs.push(invalid("unsupported scope"));
        }
        for _ in 0..scope_fits_hard(spec, scope) {
            errs.push(invalid("unsupported scope applied to resource"));
        }
    }
    for pair in CONFLICTING_SCOPES {
        if pair.iter().all(|scope| scopes.contains(scope)) {
            errs.push(invalid("conflicting scopes"));
        }
    }
    errs
}

/// validateScopedResourceSelectorRequirement: known scopes valid for the quota's
/// resources, operators that suit them, values as the operator needs, no conflicting pair.
fn validate_scope_selector(spec: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(expressions) = spec["scopeSelector"]["matchExpressions"].as_array() else {
        return errs;
    };
    let path = Path::root("spec")
        .child("scopeSelector")
        .child("matchExpressions");
    let mut named = Vec::new();
    for requirement in expressions {
        let scope = requirement["scopeName"].as_str().unwrap_or_default();
        let operator = requirement["operator"].as_str().unwrap_or_default();
        let values = requirement["values"].as_array().map_or(0, Vec::len);
        if !QUOTA_SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                &path.child("scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        for _ in 0..scope_fits_hard(spec, scope) {
            let selector = spec["scopeSelector"].clone();
            errs.push(FieldError::invalid(
                &path,
                selector,
                "unsupported scope applied to resource",
            ));
        }
        if scope != "PriorityClass" && QUOTA_SCOPES.contains(&scope) && operator != "Exists" {
            errs.push(FieldError::invalid(
                &path.child("operator"),
                operator,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match operator {
            "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
                &path.child("values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if values != 0 => errs.push(FieldError::invalid(
                &path.child("values"),
                requirement["values"].clone(),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.push(FieldError::invalid(
                &path.child("operator"),
                operator,
                "not a valid selector operator",
            )),
        }
        named.push(scope);
    }
    for pair in CONFLICTING_SCOPES {
        if pair.iter().all(|scope| named.contains(scope)) {
            errs.push(FieldError::invalid(
                &path,
                spec["scopes"].clone(),
                "conflicting scopes",
            ));
        }
    }
    errs
}

/// The resources a quota may limit without a domain prefix (IsStandardQuotaResourceName).
const STANDARD_QUOTA_RESOURCES: [&str; 19] = [
    "configmaps",
    "cpu",
    "ephemeral-storage",
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "memory",
    "persistentvolumeclaims",
    "pods",
    "replicationcontrollers",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
    "requests.storage",
    "resourcequotas",
    "secrets",
    "services",
    "services.loadbalancers",
    "services.nodeports",
];

/// validateResourceQuotaResourceName: a qualified name, and a standard quota resource (or
/// huge pages) unless it has a domain prefix.
fn validate_quota_resource_name(name: &str, path: &Path) -> FieldErrors {
    let problems = is_qualified_name(name);
    if !problems.is_empty() {
        return invalid_each(path, name, problems);
    }
    let huge_pages = ["hugepages-", "requests.hugepages-", "limits.hugepages-"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    if !name.contains('/') && !huge_pages && !STANDARD_QUOTA_RESOURCES.contains(&name) {
        return FieldErrors::from(FieldError::invalid(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
    FieldErrors::new()
}

pub(super) fn quota_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            crate::printers::name_column(0),
            age(),
            col(
                "Request",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            col(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
        ],
        cells: std::sync::Arc::new(quota_cells),
    }
}

/// NAME, AGE, REQUEST, LIMIT: `resource: used/hard` of the status, `limits.*` apart.
fn quota_cells(quota: &Value) -> Vec<Value> {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    let mut names: Vec<&String> = quota["status"]["hard"]
        .as_object()
        .map(|hard| hard.keys().collect())
        .unwrap_or_default();
    names.sort();
    for name in names {
        let pointer_name = name.replace('~', "~0").replace('/', "~1");
        let used = quantity_text(quota, &format!("/status/used/{pointer_name}"));
        let hard = quantity_text(quota, &format!("/status/hard/{pointer_name}"));
        let entry = format!("{name}: {used}/{hard}");
        if name.split('.').next() == Some("limits") && name.contains('.') {
            limit.push(entry);
        } else {
            request.push(entry);
        }
    }
    vec![
        name_cell(quota),
        age_cell(quota),
        text(request.join(", ")),
        text(limit.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::cluster::check;
    use serde_json::json;

    #[test]
    fn quota_scopes_suit_the_resources_they_limit() {
        let strategy = ResourceQuotaStrategy;
        let quota = |spec: Value| json!({"metadata": {"name": "q"}, "spec": spec});
        check(
            &strategy,
            quota(json!({"hard": {"pods": "1", "cpu": "1"}, "scopes": ["Terminating"]})),
            &[],
        );
        check(
            &strategy,
            quota(
                json!({"hard": {"pods": "1", "services": "1", "count/jobs.batch": "1"},
                "scopes": ["BestEffort", "NotBestEffort", "Sometimes"]}),
            ),
            &[
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope applied to resource"#,
                ),
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope applied to resource"#,
                ),
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope"#,
                ),
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: conflicting scopes"#,
                ),
            ],
        );
        check(
            &strategy,
            quota(
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In"},
                {"scopeName": "Terminating", "operator": "In", "values": ["x"]}]}}),
            ),
            &[
                (
                    "spec.scopeSelector.matchExpressions.values",
                    "FieldValueRequired",
                    "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                ),
                (
                    "spec.scopeSelector.matchExpressions.operator",
                    "FieldValueInvalid",
                    "Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ),
            ],
        );
    }

    #[test]
    fn quota_and_limit_range() {
        let quota = json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "10", "limits.cpu": "2", "requests.cpu": "1"},
                                                                  "used": {"pods": "3"}}});
        let cells = quota_cells(&quota);
        assert_eq!(cells[2], "pods: 3/10, requests.cpu: 0/1");
        assert_eq!(cells[3], "limits.cpu: 0/2");
        check(
            &ResourceQuotaStrategy,
            json!({"spec": {"hard": {"pods": "-1", "gpus": "1", "count/widgets.example.com": "2"}}}),
            &[
                (
                    "spec.hard[gpus]",
                    "FieldValueInvalid",
                    r#"Invalid value: "gpus": must be a standard resource for quota"#,
                ),
                (
                    "spec.hard[pods]",
                    "FieldValueInvalid",
                    r#"Invalid value: "-1": must be greater than or equal to 0"#,
                ),
            ],
        );
    }
}
