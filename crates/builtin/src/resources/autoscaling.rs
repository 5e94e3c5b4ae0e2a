//! autoscaling HorizontalPodAutoscaler, stored as autoscaling/v2 and also served as
//! autoscaling/v1: its strategy, defaulting, validation and printer
//! (kubernetes/pkg/apis/autoscaling/v2/defaults.go, pkg/apis/autoscaling/validation,
//! pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go); the v1 conversion is
//! [`conversion`]'s.

mod conversion;

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_valid_path_segment_name;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{age, col, invalid_each, items, object_at, table, text, text_at};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{set_status, validate_core, validate_core_update};
use crate::util::str_of;

pub(crate) use conversion::V1Converter;

/// The CPU utilization an HPA without metrics targets.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The strategy of HorizontalPodAutoscalers.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    (kind == "HorizontalPodAutoscaler").then(|| KindStrategies {
        strategy: Arc::new(HorizontalPodAutoscalerStrategy),
        table: Some(hpa_table()),
    })
}

/// autoscalerStrategy (pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go).
struct HorizontalPodAutoscalerStrategy;

impl Strategy for HorizontalPodAutoscalerStrategy {
    fn default(&self, hpa: &mut Value) {
        hpa_defaults(hpa);
    }

    /// The status starts with no desired replicas (a field Go always writes).
    fn prepare_for_create(&self, hpa: &mut Value) {
        set_status(hpa, json!({"desiredReplicas": 0}));
        hpa_defaults(hpa);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        hpa_defaults(new);
    }

    fn validate(&self, hpa: &Value) -> FieldErrors {
        validate_core(hpa, validate_hpa(hpa))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// SetDefaults_HorizontalPodAutoscaler (v2): one replica at least, a CPU utilization target
/// of 80% without metrics, and a given behavior completed with the default rules.
fn hpa_defaults(hpa: &mut Value) {
    let spec = object_at(hpa, "/spec");
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "metrics".into(),
            json!([cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]),
        );
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = default_rules(
            behavior.get("scaleUp"),
            Some(0),
            &[("Pods", 4), ("Percent", 100)],
        );
        let down = default_rules(behavior.get("scaleDown"), None, &[("Percent", 100)]);
        behavior.insert("scaleUp".into(), up);
        behavior.insert("scaleDown".into(), down);
    }
}

/// A Resource metric targeting an average CPU utilization.
fn cpu_utilization_metric(utilization: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: unset parts of the rules take the
/// defaults (policies every 15 seconds, the Max policy selected).
fn default_rules(rules: Option<&Value>, window: Option<i64>, policies: &[(&str, i64)]) -> Value {
    let mut out = rules
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(window) = window {
        out.entry("stabilizationWindowSeconds")
            .or_insert(json!(window));
    }
    out.entry("selectPolicy").or_insert(json!("Max"));
    let policies: Vec<Value> = policies
        .iter()
        .map(|(kind, value)| json!({"type": kind, "value": value, "periodSeconds": 15}))
        .collect();
    out.entry("policies").or_insert(Value::Array(policies));
    Value::Object(out)
}

/// ValidateHorizontalPodAutoscalerSpec: replica bounds, the scale target and the metrics.
fn validate_hpa(hpa: &Value) -> FieldErrors {
    let spec = &hpa["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let min = spec["minReplicas"].as_i64();
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if let Some(min) = min
        && min < 1
    {
        errs.push(FieldError::invalid(
            &path.child("minReplicas"),
            min,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            "must be greater than 0",
        ));
    }
    if let Some(min) = min
        && max < min
    {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = path.child("scaleTargetRef");
    for key in ["kind", "name"] {
        let value = text_at(spec, &format!("/scaleTargetRef/{key}"));
        if value.is_empty() {
            errs.push(FieldError::required(&target.child(key), ""));
        } else {
            errs.extend(invalid_each(
                &target.child(key),
                value,
                is_valid_path_segment_name(value),
            ));
        }
    }
    for (i, metric) in items(spec, "/metrics").iter().enumerate() {
        errs.extend(validate_metric(metric, &path.child("metrics").index(i)));
    }
    for direction in ["scaleUp", "scaleDown"] {
        let rules = &spec["behavior"][direction];
        if rules.is_object() {
            errs.extend(validate_scaling_rules(
                rules,
                &path.child("behavior").child(direction),
            ));
        }
    }
    errs
}

/// The longest stabilization window and policy period upstream allows.
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
const MAX_PERIOD_SECONDS: i64 = 1800;

/// validateScalingRules: window range, a known select policy, at least one valid policy.
fn validate_scaling_rules(rules: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(window) = rules["stabilizationWindowSeconds"].as_i64() {
        let window_path = path.child("stabilizationWindowSeconds");
        if window < 0 {
            errs.push(FieldError::invalid(
                &window_path,
                window,
                "must be greater than or equal to zero",
            ));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            let msg = format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}");
            errs.push(FieldError::invalid(&window_path, window, msg));
        }
    }
    if let Some(select) = rules["selectPolicy"].as_str()
        && !matches!(select, "Disabled" | "Max" | "Min")
    {
        errs.push(FieldError::not_supported(
            &path.child("selectPolicy"),
            select,
            ["Disabled", "Max", "Min"],
        ));
    }
    let policies = items(rules, "/policies");
    if policies.is_empty() {
        errs.push(FieldError::required(
            &path.child("policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        errs.extend(validate_scaling_policy(
            policy,
            &path.child("policies").index(i),
        ));
    }
    errs
}

/// validateScalingPolicy: Pods or Percent, a positive value, a period up to 30 minutes.
fn validate_scaling_policy(policy: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let kind = str_of(policy, "type");
    if !matches!(kind, "Pods" | "Percent") {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            kind,
            ["Percent", "Pods"],
        ));
    }
    let value = policy["value"].as_i64().unwrap_or(0);
    if value <= 0 {
        errs.push(FieldError::invalid(
            &path.child("value"),
            value,
            "must be greater than zero",
        ));
    }
    let period = policy["periodSeconds"].as_i64().unwrap_or(0);
    if period <= 0 {
        errs.push(FieldError::invalid(
            &path.child("periodSeconds"),
            period,
            "must be greater than zero",
        ));
    }
    if period > MAX_PERIOD_SECONDS {
        let msg = format!("must be less than or equal to {MAX_PERIOD_SECONDS}");
        errs.push(FieldError::invalid(
            &path.child("periodSeconds"),
            period,
            msg,
        ));
    }
    errs
}

/// The metric source types, sorted as upstream lists them.
const METRIC_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

/// validateMetricSpec: a known type whose source alone is given; Resource targets.
fn validate_metric(metric: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let kind = str_of(metric, "type");
    if kind.is_empty() {
        errs.push(FieldError::required(
            &path.child("type"),
            "must specify a metric source type",
        ));
    } else if !METRIC_TYPES.contains(&kind) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            kind,
            METRIC_TYPES,
        ));
    }
    let source_key = |kind: &str| {
        let mut key = kind.to_string();
        key[..1].make_ascii_lowercase();
        key
    };
    let present: Vec<String> = METRIC_TYPES
        .iter()
        .map(|k| source_key(k))
        .filter(|key| !metric[key.as_str()].is_null())
        .collect();
    if METRIC_TYPES.contains(&kind) {
        let expected = source_key(kind);
        if !present.contains(&expected) {
            errs.push(FieldError::required(
                &path.child(&expected),
                "must populate information for the given metric source",
            ));
        }
        if present.iter().any(|key| *key != expected) {
            errs.push(FieldError::forbidden(
                &path.child(&expected),
                "must populate the given metric source only",
            ));
        }
    }
    if kind == "Resource" && metric["resource"].is_object() {
        errs.extend(validate_resource_source(
            &metric["resource"],
            &path.child("resource"),
        ));
    }
    errs
}

/// validateResourceSource and validateMetricTarget.
fn validate_resource_source(source: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if str_of(source, "name").is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "must specify a resource name",
        ));
    }
    let target = &source["target"];
    let target_path = path.child("target");
    match str_of(target, "type") {
        "" => errs.push(FieldError::required(
            &target_path.child("type"),
            "must specify a metric target type",
        )),
        "Utilization" | "Value" | "AverageValue" => {}
        other => errs.push(FieldError::invalid(
            &target_path.child("type"),
            other,
            "must be either Utilization, Value, or AverageValue",
        )),
    }
    if let Some(utilization) = target["averageUtilization"].as_i64()
        && utilization < 1
    {
        errs.push(FieldError::invalid(
            &target_path.child("averageUtilization"),
            utilization,
            "must be greater than 0",
        ));
    }
    let utilization = !target["averageUtilization"].is_null();
    let value = !target["averageValue"].is_null();
    if !utilization && !value {
        errs.push(FieldError::required(
            &target_path.child("averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if utilization && value {
        errs.push(FieldError::forbidden(
            &target_path.child("averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
    errs
}

fn hpa_table() -> TableConvertor {
    table(
        vec![
            col(
                "Reference",
                "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
            ),
            col(
                "Targets",
                "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
            ),
            col(
                "MinPods",
                "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
            ),
            col(
                "MaxPods",
                "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
            ),
            col(
                "Replicas",
                "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
            ),
            age(),
        ],
        hpa_cells,
    )
}

/// NAME, REFERENCE (`Kind/name`), TARGETS, MINPODS, MAXPODS, REPLICAS, AGE.
fn hpa_cells(hpa: &Value) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text_at(hpa, "/spec/scaleTargetRef/kind"),
        text_at(hpa, "/spec/scaleTargetRef/name")
    );
    let min = match hpa["spec"]["minReplicas"].as_i64() {
        Some(min) => Value::from(min.to_string()),
        None => text("<unset>"),
    };
    vec![
        name_cell(hpa),
        text(reference),
        text(format_metrics(
            items(hpa, "/spec/metrics"),
            items(hpa, "/status/currentMetrics"),
        )),
        min,
        Value::from(hpa["spec"]["maxReplicas"].as_i64().unwrap_or(0)),
        Value::from(hpa["status"]["currentReplicas"].as_i64().unwrap_or(0)),
        age_cell(hpa),
    ]
}

/// A quantity as printed, or `<unknown>`.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// formatHPAMetrics: `current/target` per metric, at most two, then `+ N more...`.
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i).unwrap_or(&Value::Null);
        list.push(format_metric(spec, status));
    }
    let count = list.len();
    if count > 2 {
        list.truncate(2);
        return format!("{} + {} more...", list.join(", "), count - 2);
    }
    list.join(", ")
}

/// One metric of the TARGETS column.
fn format_metric(spec: &Value, status: &Value) -> String {
    let current = |source: &str, key: &str| shown(&status[source]["current"][key]);
    let averaged = |source: &str| {
        let target = &spec[source]["target"];
        if target["averageValue"].is_null() {
            format!("{}/{}", current(source, "value"), shown(&target["value"]))
        } else {
            format!(
                "{}/{} (avg)",
                current(source, "averageValue"),
                shown(&target["averageValue"])
            )
        }
    };
    match str_of(spec, "type") {
        "External" => averaged("external"),
        "Object" => averaged("object"),
        "Pods" => format!(
            "{}/{}",
            current("pods", "averageValue"),
            shown(&spec["pods"]["target"]["averageValue"])
        ),
        kind @ ("Resource" | "ContainerResource") => {
            let source = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let target = &spec[source]["target"];
            let name = str_of(&spec[source], "name");
            if !target["averageValue"].is_null() {
                return format!(
                    "{name}: {}/{}",
                    current(source, "averageValue"),
                    shown(&target["averageValue"])
                );
            }
            let percent = |v: &Value| v.as_i64().map(|n| format!("{n}%"));
            let now = percent(&status[source]["current"]["averageUtilization"])
                .unwrap_or_else(|| "<unknown>".to_string());
            let goal =
                percent(&target["averageUtilization"]).unwrap_or_else(|| "<auto>".to_string());
            format!("{name}: {now}/{goal}")
        }
        _ => "<unknown type>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};

    fn strategy() -> Arc<dyn Strategy> {
        strategies("HorizontalPodAutoscaler").unwrap().strategy
    }

    #[test]
    fn defaults_and_validation() {
        let strategy = strategy();
        let mut hpa = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
                             "status": {"currentReplicas": 9}});
        strategy.prepare_for_create(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(hpa["spec"]["metrics"], json!([cpu_utilization_metric(80)]));
        assert_eq!(hpa["status"], json!({"desiredReplicas": 0}));
        assert!(hpa["spec"].get("behavior").is_none());
        assert!(strategy.validate(&hpa).is_empty());
        let bad = json!({"spec": {"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 0, "maxReplicas": 0,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}, {"type": "Memory"}]}});
        assert_eq!(
            causes(&strategy.validate(&bad)),
            expect(&[
                (
                    "spec.minReplicas",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be greater than or equal to 1"
                ),
                (
                    "spec.maxReplicas",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be greater than 0"
                ),
                (
                    "spec.scaleTargetRef.name",
                    "FieldValueRequired",
                    "Required value"
                ),
                (
                    "spec.metrics[0].resource.target.averageUtilization",
                    "FieldValueRequired",
                    "Required value: must set either a target raw value or a target utilization"
                ),
                (
                    "spec.metrics[1].type",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Memory": supported values: "ContainerResource", "External", "Object", "Pods", "Resource""#
                ),
            ])
        );
    }

    #[test]
    fn behavior_validation() {
        let hpa = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
            "metrics": [cpu_utilization_metric(80)],
            "behavior": {"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Avg", "policies": []},
                         "scaleDown": {"policies": [{"type": "Nodes", "value": 0, "periodSeconds": 2000}]}}}});
        assert_eq!(
            causes(&strategy().validate(&hpa)),
            expect(&[
                (
                    "spec.behavior.scaleUp.stabilizationWindowSeconds",
                    "FieldValueInvalid",
                    "Invalid value: 4000: must be less than or equal to 3600"
                ),
                (
                    "spec.behavior.scaleUp.selectPolicy",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Avg": supported values: "Disabled", "Max", "Min""#
                ),
                (
                    "spec.behavior.scaleUp.policies",
                    "FieldValueRequired",
                    "Required value: must specify at least one Policy"
                ),
                (
                    "spec.behavior.scaleDown.policies[0].type",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Nodes": supported values: "Percent", "Pods""#
                ),
                (
                    "spec.behavior.scaleDown.policies[0].value",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be greater than zero"
                ),
                (
                    "spec.behavior.scaleDown.policies[0].periodSeconds",
                    "FieldValueInvalid",
                    "Invalid value: 2000: must be less than or equal to 1800"
                ),
            ])
        );
    }

    #[test]
    fn printer_targets() {
        let hpa = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3, "minReplicas": 1,
            "metrics": [cpu_utilization_metric(80),
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
                {"type": "Pods", "pods": {"target": {"averageValue": "5"}}}]},
            "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}]}});
        let cells = hpa_cells(&hpa);
        assert_eq!(
            cells[1..6],
            [
                json!("Deployment/web"),
                json!("cpu: 12%/80%, memory: <unknown>/1Gi + 1 more..."),
                json!("1"),
                json!(3),
                json!(2)
            ]
        );
    }
}
