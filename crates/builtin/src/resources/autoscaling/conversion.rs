//! The autoscaling/v1 <-> autoscaling/v2 conversion of HorizontalPodAutoscalers
//! (kubernetes/pkg/apis/autoscaling/v1/conversion.go): autoscaling/v1 has only a CPU
//! utilization target; upstream's conversion keeps the v2-only fields in annotations of the
//! v1 object (other metrics, current metrics, conditions and the scaling behavior) and reads
//! them back when a v1 object is written.

use kapi_apimachinery::go_json;
use kapi_server::resource::Converter;
use serde_json::{Map, Value, json};

use super::{DEFAULT_CPU_UTILIZATION, cpu_utilization_metric};
use crate::resources::common::{items, object_at, text_at};
use crate::util::str_of;

/// Other metrics than the CPU utilization target, as v1 MetricSpecs.
pub const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The current metrics, as v1 MetricStatuses.
pub const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The status conditions.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// The scaling behavior, in the field names of upstream's internal type.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Serves autoscaling/v1 HorizontalPodAutoscalers from the stored autoscaling/v2 ones.
pub(crate) struct V1Converter;

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
    use super::super::hpa_defaults;
    use super::*;

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
}
