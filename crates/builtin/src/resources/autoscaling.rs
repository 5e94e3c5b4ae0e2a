//! autoscaling HorizontalPodAutoscaler, stored as autoscaling/v2 and also served as
//! autoscaling/v1 (kubernetes/pkg/apis/autoscaling/v2/defaults.go,
//! pkg/apis/autoscaling/v1/conversion.go, pkg/apis/autoscaling/validation,
//! pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go).
//!
//! autoscaling/v1 has only a CPU utilization target; upstream's conversion keeps the v2-only
//! fields in annotations of the v1 object (other metrics, current metrics, conditions and
//! the scaling behavior) and reads them back when a v1 object is written.

use kapi_apimachinery::go_json;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_valid_path_segment_name;
use kapi_server::resource::{Converter, TableConvertor};
use serde_json::{Map, Value, json};

use super::common::{age, col, invalid_each, items, object_at, table, text, text_at};
use super::{BASE, Rules};
use crate::printers::{age_cell, name_cell};
use crate::util::str_of;

/// Other metrics than the CPU utilization target, as v1 MetricSpecs.
pub const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The current metrics, as v1 MetricStatuses.
pub const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The status conditions.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// The scaling behavior, in the field names of upstream's internal type.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// The CPU utilization an HPA without metrics targets.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The hooks of HorizontalPodAutoscalers.
pub(super) fn hooks(kind: &str) -> Option<(Rules, TableConvertor)> {
    (kind == "HorizontalPodAutoscaler").then(|| {
        (
            Rules {
                on_create: |hpa| super::set_status(hpa, json!({"desiredReplicas": 0})),
                defaults: hpa_defaults,
                validate: validate_hpa,
                ..BASE
            },
            hpa_table(),
        )
    })
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

// ---- autoscaling/v1 <-> autoscaling/v2 ----

/// Serves autoscaling/v1 HorizontalPodAutoscalers from the stored autoscaling/v2 ones.
pub(super) struct V1Converter;

impl Converter for V1Converter {
    fn stored_form(&self, object: Value) -> Result<Value, kapi_apimachinery::status::ApiError> {
        v1_to_v2(object).map_err(kapi_apimachinery::status::ApiError::bad_request)
    }

    fn served_form(&self, object: Value) -> Result<Value, kapi_apimachinery::status::ApiError> {
        Ok(v2_to_v1(object))
    }
}

/// A JSON object written with its fields in a fixed order, as Go writes structs.
#[derive(Default)]
struct GoStruct(Vec<String>);

impl GoStruct {
    /// Adds a field that is always written.
    fn field(mut self, key: &str, value: &Value) -> Self {
        self.0
            .push(format!("{}:{}", go_json(&json!(key)), go_json(value)));
        self
    }

    /// Adds an `omitempty` field: left out when absent, `null`, empty or zero.
    fn opt(self, key: &str, value: &Value) -> Self {
        let empty = match value {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
        };
        if empty { self } else { self.field(key, value) }
    }

    /// Adds an already written value.
    fn raw(mut self, key: &str, written: String) -> Self {
        self.0.push(format!("{}:{written}", go_json(&json!(key))));
        self
    }

    fn build(self) -> String {
        format!("{{{}}}", self.0.join(","))
    }
}

/// A Go `[]T` written from its items.
fn go_list(items: impl Iterator<Item = String>) -> String {
    format!("[{}]", items.collect::<Vec<_>>().join(","))
}

/// A CrossVersionObjectReference in Go's field order.
fn write_reference(reference: &Value) -> String {
    GoStruct::default()
        .field("kind", &json!(str_of(reference, "kind")))
        .field("name", &json!(str_of(reference, "name")))
        .opt("apiVersion", &reference["apiVersion"])
        .build()
}

/// A quantity that Go declares without a pointer: `"0"` when unset.
fn quantity_or_zero(value: &Value) -> Value {
    if value.is_null() {
        json!("0")
    } else {
        value.clone()
    }
}

/// A v2 MetricSpec written as v1's MetricSpec.
fn write_v1_metric_spec(metric: &Value) -> String {
    let kind = str_of(metric, "type");
    let mut out = GoStruct::default().field("type", &json!(kind));
    match kind {
        "Object" => {
            let source = &metric["object"];
            let target = &source["target"];
            out = out.raw(
                "object",
                GoStruct::default()
                    .raw("target", write_reference(&source["describedObject"]))
                    .field("metricName", &json!(text_at(source, "/metric/name")))
                    .field("targetValue", &quantity_or_zero(&target["value"]))
                    .opt("selector", &source["metric"]["selector"])
                    .opt("averageValue", &target["averageValue"])
                    .build(),
            );
        }
        "Pods" => {
            let source = &metric["pods"];
            out = out.raw(
                "pods",
                GoStruct::default()
                    .field("metricName", &json!(text_at(source, "/metric/name")))
                    .field(
                        "targetAverageValue",
                        &quantity_or_zero(&source["target"]["averageValue"]),
                    )
                    .opt("selector", &source["metric"]["selector"])
                    .build(),
            );
        }
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let source = &metric[key];
            let mut written = GoStruct::default()
                .field("name", &json!(str_of(source, "name")))
                .opt(
                    "targetAverageUtilization",
                    &source["target"]["averageUtilization"],
                )
                .opt("targetAverageValue", &source["target"]["averageValue"]);
            if key == "containerResource" {
                written = written.field("container", &json!(str_of(source, "container")));
            }
            out = out.raw(key, written.build());
        }
        "External" => {
            let source = &metric["external"];
            out = out.raw(
                "external",
                GoStruct::default()
                    .field("metricName", &json!(text_at(source, "/metric/name")))
                    .opt("metricSelector", &source["metric"]["selector"])
                    .opt("targetValue", &source["target"]["value"])
                    .opt("targetAverageValue", &source["target"]["averageValue"])
                    .build(),
            );
        }
        _ => {}
    }
    out.build()
}

/// A v2 MetricStatus written as v1's MetricStatus.
fn write_v1_metric_status(metric: &Value) -> String {
    let kind = str_of(metric, "type");
    let mut out = GoStruct::default().field("type", &json!(kind));
    match kind {
        "Object" => {
            let source = &metric["object"];
            out = out.raw(
                "object",
                GoStruct::default()
                    .raw("target", write_reference(&source["describedObject"]))
                    .field("metricName", &json!(text_at(source, "/metric/name")))
                    .field(
                        "currentValue",
                        &quantity_or_zero(&source["current"]["value"]),
                    )
                    .opt("selector", &source["metric"]["selector"])
                    .opt("averageValue", &source["current"]["averageValue"])
                    .build(),
            );
        }
        "Pods" => {
            let source = &metric["pods"];
            out = out.raw(
                "pods",
                GoStruct::default()
                    .field("metricName", &json!(text_at(source, "/metric/name")))
                    .field(
                        "currentAverageValue",
                        &quantity_or_zero(&source["current"]["averageValue"]),
                    )
                    .opt("selector", &source["metric"]["selector"])
                    .build(),
            );
        }
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let source = &metric[key];
            let mut written = GoStruct::default()
                .field("name", &json!(str_of(source, "name")))
                .opt(
                    "currentAverageUtilization",
                    &source["current"]["averageUtilization"],
                )
                .field(
                    "currentAverageValue",
                    &quantity_or_zero(&source["current"]["averageValue"]),
                );
            if key == "containerResource" {
                written = written.field("container", &json!(str_of(source, "container")));
            }
            out = out.raw(key, written.build());
        }
        "External" => {
            let source = &metric["external"];
            out = out.raw(
                "external",
                GoStruct::default()
                    .field("metricName", &json!(text_at(source, "/metric/name")))
                    .opt("metricSelector", &source["metric"]["selector"])
                    .field(
                        "currentValue",
                        &quantity_or_zero(&source["current"]["value"]),
                    )
                    .opt("currentAverageValue", &source["current"]["averageValue"])
                    .build(),
            );
        }
        _ => {}
    }
    out.build()
}

/// A condition in Go's field order.
fn write_condition(condition: &Value) -> String {
    GoStruct::default()
        .field("type", &json!(str_of(condition, "type")))
        .field("status", &json!(str_of(condition, "status")))
        .field("lastTransitionTime", &condition["lastTransitionTime"])
        .opt("reason", &condition["reason"])
        .opt("message", &condition["message"])
        .build()
}

/// The behavior as upstream's internal type marshals it: Go field names, nil pointers as
/// `null`.
fn write_behavior(behavior: &Value) -> String {
    let rules = |rules: &Value| {
        if rules.is_null() {
            return "null".to_string();
        }
        let policies = items(rules, "/policies").iter().map(|policy| {
            GoStruct::default()
                .field("Type", &json!(str_of(policy, "type")))
                .field("Value", &json!(policy["value"].as_i64().unwrap_or(0)))
                .field(
                    "PeriodSeconds",
                    &json!(policy["periodSeconds"].as_i64().unwrap_or(0)),
                )
                .build()
        });
        let policies = if rules["policies"].is_array() {
            go_list(policies)
        } else {
            "null".to_string()
        };
        GoStruct::default()
            .field(
                "StabilizationWindowSeconds",
                &rules["stabilizationWindowSeconds"],
            )
            .field("SelectPolicy", &rules["selectPolicy"])
            .raw("Policies", policies)
            .field("Tolerance", &rules["tolerance"])
            .build()
    };
    GoStruct::default()
        .raw("ScaleUp", rules(&behavior["scaleUp"]))
        .raw("ScaleDown", rules(&behavior["scaleDown"]))
        .build()
}

/// Whether a v2 metric is the CPU utilization target v1 has a field for.
fn is_cpu_utilization(metric: &Value) -> bool {
    str_of(metric, "type") == "Resource"
        && text_at(metric, "/resource/name") == "cpu"
        && !metric["resource"]["target"]["averageUtilization"].is_null()
}

/// The stored autoscaling/v2 object as autoscaling/v1 serves it.
fn v2_to_v1(mut hpa: Value) -> Value {
    let spec = hpa["spec"].take();
    let status = hpa["status"].take();
    let metrics = items(&spec, "/metrics");
    let mut annotations = hpa["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for key in [
        METRIC_SPECS_ANNOTATION,
        METRIC_STATUSES_ANNOTATION,
        CONDITIONS_ANNOTATION,
        BEHAVIOR_ANNOTATION,
    ] {
        annotations.remove(key);
    }
    let others: Vec<&Value> = metrics.iter().filter(|m| !is_cpu_utilization(m)).collect();
    if !others.is_empty() {
        let written = go_list(others.iter().map(|m| write_v1_metric_spec(m)));
        annotations.insert(METRIC_SPECS_ANNOTATION.into(), json!(written));
    }
    let current = items(&status, "/currentMetrics");
    if !current.is_empty() {
        let written = go_list(current.iter().map(write_v1_metric_status));
        annotations.insert(METRIC_STATUSES_ANNOTATION.into(), json!(written));
    }
    let conditions = items(&status, "/conditions");
    if !conditions.is_empty() {
        let written = go_list(conditions.iter().map(write_condition));
        annotations.insert(CONDITIONS_ANNOTATION.into(), json!(written));
    }
    if spec["behavior"].is_object() {
        annotations.insert(
            BEHAVIOR_ANNOTATION.into(),
            json!(write_behavior(&spec["behavior"])),
        );
    }
    let metadata = object_at(&mut hpa, "/metadata");
    if annotations.is_empty() {
        metadata.remove("annotations");
    } else {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let mut v1_spec = Map::new();
    v1_spec.insert("scaleTargetRef".into(), spec["scaleTargetRef"].clone());
    copy_present(&spec, &mut v1_spec, "minReplicas");
    v1_spec.insert(
        "maxReplicas".into(),
        json!(spec["maxReplicas"].as_i64().unwrap_or(0)),
    );
    let cpu = metrics
        .iter()
        .find(|m| str_of(m, "type") == "Resource" && text_at(m, "/resource/name") == "cpu");
    if let Some(target) = cpu.and_then(|m| m["resource"]["target"]["averageUtilization"].as_i64()) {
        v1_spec.insert("targetCPUUtilizationPercentage".into(), json!(target));
    }
    let mut v1_status = Map::new();
    copy_present(&status, &mut v1_status, "observedGeneration");
    copy_present(&status, &mut v1_status, "lastScaleTime");
    v1_status.insert(
        "currentReplicas".into(),
        json!(status["currentReplicas"].as_i64().unwrap_or(0)),
    );
    v1_status.insert(
        "desiredReplicas".into(),
        json!(status["desiredReplicas"].as_i64().unwrap_or(0)),
    );
    let cpu_now = current
        .iter()
        .filter(|m| str_of(m, "type") == "Resource" && text_at(m, "/resource/name") == "cpu")
        .filter_map(|m| m["resource"]["current"]["averageUtilization"].as_i64())
        .next_back();
    if let Some(now) = cpu_now {
        v1_status.insert("currentCPUUtilizationPercentage".into(), json!(now));
    }
    let fields = crate::util::fields_mut(&mut hpa);
    fields.insert("apiVersion".into(), json!("autoscaling/v1"));
    fields.insert("spec".into(), Value::Object(v1_spec));
    fields.insert("status".into(), Value::Object(v1_status));
    hpa
}

/// Copies `key` when it is set.
fn copy_present(from: &Value, to: &mut Map<String, Value>, key: &str) {
    if let Some(value) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(key.to_string(), value.clone());
    }
}

/// A field read as Go's `encoding/json` matches names: exactly, else case-insensitively.
fn go_field<'a>(object: &'a Value, key: &str) -> &'a Value {
    if let Some(value) = object.get(key) {
        return value;
    }
    object
        .as_object()
        .and_then(|fields| fields.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
        .map_or(&Value::Null, |(_, v)| v)
}

/// Decodes a JSON annotation (a Go `json.Unmarshal` failure is a conversion error).
fn decode_annotation(annotations: &Map<String, Value>, key: &str) -> Result<Option<Value>, String> {
    match annotations.get(key).and_then(Value::as_str) {
        Some(text) => serde_json::from_str(text)
            .map(Some)
            .map_err(|err| err.to_string()),
        None => Ok(None),
    }
}

/// Removes `null` members of an object, as an absent optional field.
fn compact(mut value: Value) -> Value {
    if let Some(fields) = value.as_object_mut() {
        fields.retain(|_, v| !v.is_null());
    }
    value
}

/// The identity of a v1 metric: its name and selector.
fn metric_identifier(name: &Value, selector: &Value) -> Value {
    compact(json!({"name": name.as_str().unwrap_or(""), "selector": selector}))
}

/// A v1 MetricSpec as a v2 one.
fn v1_metric_spec_to_v2(metric: &Value) -> Value {
    let kind = str_of(metric, "type");
    let source = |key: &str| go_field(metric, key);
    let converted = match kind {
        "Object" => {
            let s = source("object");
            let average = go_field(s, "averageValue");
            let target_type = if average.is_null() {
                "Value"
            } else {
                "AverageValue"
            };
            json!({"object": {
                "describedObject": go_field(s, "target"),
                "metric": metric_identifier(go_field(s, "metricName"), go_field(s, "selector")),
                "target": compact(json!({"type": target_type, "value": quantity_or_zero(go_field(s, "targetValue")), "averageValue": average})),
            }})
        }
        "Pods" => {
            let s = source("pods");
            json!({"pods": {
                "metric": metric_identifier(go_field(s, "metricName"), go_field(s, "selector")),
                "target": {"type": "AverageValue", "averageValue": quantity_or_zero(go_field(s, "targetAverageValue"))},
            }})
        }
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let s = source(key);
            let utilization = go_field(s, "targetAverageUtilization");
            let target_type = if utilization.is_null() {
                "AverageValue"
            } else {
                "Utilization"
            };
            let mut converted = json!({"name": go_field(s, "name"), "target": compact(json!({
                "type": target_type, "averageUtilization": utilization, "averageValue": go_field(s, "targetAverageValue")}))});
            if key == "containerResource" {
                converted["container"] = go_field(s, "container").clone();
            }
            json!({ key: converted })
        }
        "External" => {
            let s = source("external");
            let value = go_field(s, "targetValue");
            let target_type = if value.is_null() {
                "AverageValue"
            } else {
                "Value"
            };
            json!({"external": {
                "metric": metric_identifier(go_field(s, "metricName"), go_field(s, "metricSelector")),
                "target": compact(json!({"type": target_type, "value": value, "averageValue": go_field(s, "targetAverageValue")})),
            }})
        }
        _ => json!({}),
    };
    let mut out = converted;
    out["type"] = json!(kind);
    out
}

/// A v1 MetricStatus as a v2 one.
fn v1_metric_status_to_v2(metric: &Value) -> Value {
    let kind = str_of(metric, "type");
    let source = |key: &str| go_field(metric, key);
    let mut out = match kind {
        "Object" => {
            let s = source("object");
            json!({"object": {
                "describedObject": go_field(s, "target"),
                "metric": metric_identifier(go_field(s, "metricName"), go_field(s, "selector")),
                "current": compact(json!({"value": quantity_or_zero(go_field(s, "currentValue")), "averageValue": go_field(s, "averageValue")})),
            }})
        }
        "Pods" => {
            let s = source("pods");
            json!({"pods": {
                "metric": metric_identifier(go_field(s, "metricName"), go_field(s, "selector")),
                "current": {"averageValue": quantity_or_zero(go_field(s, "currentAverageValue"))},
            }})
        }
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let s = source(key);
            let mut converted = json!({"name": go_field(s, "name"), "current": compact(json!({
                "averageValue": quantity_or_zero(go_field(s, "currentAverageValue")),
                "averageUtilization": go_field(s, "currentAverageUtilization")}))});
            if key == "containerResource" {
                converted["container"] = go_field(s, "container").clone();
            }
            json!({ key: converted })
        }
        "External" => {
            let s = source("external");
            json!({"external": {
                "metric": metric_identifier(go_field(s, "metricName"), go_field(s, "metricSelector")),
                "current": compact(json!({"value": quantity_or_zero(go_field(s, "currentValue")), "averageValue": go_field(s, "currentAverageValue")})),
            }})
        }
        _ => json!({}),
    };
    out["type"] = json!(kind);
    out
}

/// The behavior annotation (Go field names, matched case-insensitively) as v2's behavior.
fn behavior_from_annotation(behavior: &Value) -> Value {
    let rules = |rules: &Value| {
        if rules.is_null() {
            return Value::Null;
        }
        let policies: Option<Vec<Value>> = go_field(rules, "Policies").as_array().map(|list| {
            list.iter()
                .map(|p| {
                    json!({"type": go_field(p, "Type"), "value": go_field(p, "Value"),
                                "periodSeconds": go_field(p, "PeriodSeconds")})
                })
                .collect()
        });
        compact(json!({
            "stabilizationWindowSeconds": go_field(rules, "StabilizationWindowSeconds"),
            "selectPolicy": go_field(rules, "SelectPolicy"),
            "policies": policies,
            "tolerance": go_field(rules, "Tolerance"),
        }))
    };
    compact(json!({
        "scaleUp": rules(go_field(behavior, "ScaleUp")),
        "scaleDown": rules(go_field(behavior, "ScaleDown")),
    }))
}

/// An autoscaling/v1 object as the stored autoscaling/v2 one.
fn v1_to_v2(mut hpa: Value) -> Result<Value, String> {
    let spec = hpa["spec"].take();
    let status = hpa["status"].take();
    let mut annotations = hpa["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut v2_spec = Map::new();
    v2_spec.insert("scaleTargetRef".into(), spec["scaleTargetRef"].clone());
    copy_present(&spec, &mut v2_spec, "minReplicas");
    v2_spec.insert(
        "maxReplicas".into(),
        json!(spec["maxReplicas"].as_i64().unwrap_or(0)),
    );
    let mut metrics = Vec::new();
    if let Some(others) = decode_annotation(&annotations, METRIC_SPECS_ANNOTATION)? {
        let others = others.as_array().cloned().unwrap_or_default();
        metrics.extend(others.iter().map(v1_metric_spec_to_v2));
        annotations.remove(METRIC_SPECS_ANNOTATION);
    }
    if let Some(target) = spec["targetCPUUtilizationPercentage"].as_i64() {
        metrics.push(cpu_utilization_metric(target));
    }
    if let Some(behavior) = decode_annotation(&annotations, BEHAVIOR_ANNOTATION)? {
        v2_spec.insert("behavior".into(), behavior_from_annotation(&behavior));
        annotations.remove(BEHAVIOR_ANNOTATION);
    }
    let mut v2_status = Map::new();
    copy_present(&status, &mut v2_status, "observedGeneration");
    copy_present(&status, &mut v2_status, "lastScaleTime");
    if let Some(current) = status["currentReplicas"].as_i64().filter(|n| *n != 0) {
        v2_status.insert("currentReplicas".into(), json!(current));
    }
    v2_status.insert(
        "desiredReplicas".into(),
        json!(status["desiredReplicas"].as_i64().unwrap_or(0)),
    );
    if let Some(now) = status["currentCPUUtilizationPercentage"].as_i64() {
        v2_status.insert(
            "currentMetrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": now}}}]),
        );
    }
    if let Some(current) = decode_annotation(&annotations, METRIC_STATUSES_ANNOTATION)? {
        let current = current.as_array().cloned().unwrap_or_default();
        let converted: Vec<Value> = current.iter().map(v1_metric_status_to_v2).collect();
        v2_status.insert("currentMetrics".into(), Value::Array(converted));
        annotations.remove(METRIC_STATUSES_ANNOTATION);
    }
    if let Some(conditions) = decode_annotation(&annotations, CONDITIONS_ANNOTATION)? {
        v2_status.insert("conditions".into(), conditions);
        annotations.remove(CONDITIONS_ANNOTATION);
    }
    if metrics.is_empty() {
        metrics.push(cpu_utilization_metric(DEFAULT_CPU_UTILIZATION));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    let metadata = object_at(&mut hpa, "/metadata");
    if annotations.is_empty() {
        metadata.remove("annotations");
    } else {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let fields = crate::util::fields_mut(&mut hpa);
    fields.insert("apiVersion".into(), json!("autoscaling/v2"));
    fields.insert("spec".into(), Value::Object(v2_spec));
    fields.insert("status".into(), Value::Object(v2_status));
    Ok(hpa)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};
    use kapi_server::resource::Strategy;

    fn rules() -> Rules {
        hooks("HorizontalPodAutoscaler").unwrap().0
    }

    fn v1(spec: Value) -> Value {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web", "namespace": "n"}, "spec": spec})
    }

    #[test]
    fn v1_cpu_target_round_trips() {
        let served = v1(
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                               "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}),
        );
        let stored = V1Converter.stored_form(served).unwrap();
        assert_eq!(stored["apiVersion"], "autoscaling/v2");
        assert_eq!(
            stored["spec"]["metrics"],
            json!([cpu_utilization_metric(60)])
        );
        let back = V1Converter.served_form(stored).unwrap();
        assert_eq!(back["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(
            back["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        assert!(back["metadata"].get("annotations").is_none());
    }

    #[test]
    fn v1_without_target_gets_the_default_cpu_metric() {
        let stored = V1Converter
            .stored_form(v1(
                json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}),
            ))
            .unwrap();
        assert_eq!(
            stored["spec"]["metrics"],
            json!([cpu_utilization_metric(80)])
        );
        assert!(stored["spec"].get("minReplicas").is_none());
    }

    #[test]
    fn v2_only_fields_travel_in_annotations() {
        let mut stored = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"keep": "me"}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 4,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"desiredReplicas": 2, "currentReplicas": 2,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40, "averageValue": "100m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Ready"}]}});
        hpa_defaults(&mut stored);
        let served = V1Converter.served_form(stored.clone()).unwrap();
        let annotations = &served["metadata"]["annotations"];
        assert_eq!(
            annotations[METRIC_SPECS_ANNOTATION],
            r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k"}}]"#
        );
        assert_eq!(
            annotations[METRIC_STATUSES_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"100m"}}]"#
        );
        assert_eq!(
            annotations[CONDITIONS_ANNOTATION],
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"Ready"}]"#
        );
        assert_eq!(
            annotations[BEHAVIOR_ANNOTATION],
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#
        );
        assert_eq!(annotations["keep"], "me");
        assert_eq!(served["spec"]["targetCPUUtilizationPercentage"], 50);
        assert_eq!(served["status"]["currentCPUUtilizationPercentage"], 40);
        let mut back = V1Converter.stored_form(served).unwrap();
        hpa_defaults(&mut back);
        assert_eq!(back["metadata"]["annotations"], json!({"keep": "me"}));
        assert_eq!(back["spec"]["metrics"][0]["type"], "Pods");
        assert_eq!(back["spec"]["metrics"][1], stored["spec"]["metrics"][0]);
        let mut sorted_back = back["spec"]["metrics"].as_array().unwrap().clone();
        sorted_back.reverse();
        assert_eq!(Value::Array(sorted_back), stored["spec"]["metrics"]);
        assert_eq!(back["spec"]["behavior"], stored["spec"]["behavior"]);
        assert_eq!(back["status"], stored["status"]);
    }

    #[test]
    fn bad_annotation_fails_conversion() {
        let mut served = v1(json!({"maxReplicas": 1}));
        served["metadata"]["annotations"] = json!({METRIC_SPECS_ANNOTATION: "not json"});
        assert!(V1Converter.stored_form(served).is_err());
    }

    #[test]
    fn defaults_and_validation() {
        let rules = rules();
        let mut hpa = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
                             "status": {"currentReplicas": 9}});
        rules.prepare_for_create(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(hpa["spec"]["metrics"], json!([cpu_utilization_metric(80)]));
        assert_eq!(hpa["status"], json!({"desiredReplicas": 0}));
        assert!(hpa["spec"].get("behavior").is_none());
        assert!(rules.validate(&hpa).is_empty());
        let bad = json!({"spec": {"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 0, "maxReplicas": 0,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}, {"type": "Memory"}]}});
        assert_eq!(
            causes(&rules.validate(&bad)),
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
            causes(&rules().validate(&hpa)),
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
