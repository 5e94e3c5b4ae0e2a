//! LimitRanger (kubernetes/plugin/pkg/admission/limitranger): the LimitRanges of a
//! namespace give new pods' containers their default limits and requests (mutating phase),
//! and bound containers, pods and PersistentVolumeClaims by min, max and
//! maxLimitRequestRatio (validating phase), with upstream's messages.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::{Format, Quantity};
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::{Value, json};

use super::quantity::amounts;

/// The annotation LimitRanger leaves on pods it defaulted.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The LimitRanger admission plugin.
pub struct LimitRanger {
    limit_ranges: Served,
}

impl LimitRanger {
    /// Reads the LimitRanges of the served `limitranges` collection.
    pub fn new(limit_ranges: Served) -> LimitRanger {
        LimitRanger { limit_ranges }
    }

    /// The `spec.limits` items of the namespace's LimitRanges.
    fn limits(&self, namespace: &str) -> Vec<Value> {
        self.limit_ranges
            .cached_list(Some(namespace))
            .into_iter()
            .flat_map(|range| {
                range["spec"]["limits"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// Whether the write is one LimitRanger handles: creates of pods and PVCs (and PVC updates).
fn handled(attributes: &Attributes<'_>) -> Option<&'static str> {
    let definition = attributes.definition;
    if !definition.group_version.group.is_empty() || !attributes.subresource.is_empty() {
        return None;
    }
    match (&*definition.plural, attributes.operation) {
        ("pods", Operation::Create) => Some("pods"),
        ("persistentvolumeclaims", Operation::Create | Operation::Update) => {
            Some("persistentvolumeclaims")
        }
        _ => None,
    }
}

/// Applies the Container defaults of `limits` to the pod's containers, then its init
/// containers; the annotation's text of what was set, as upstream's
/// mergeContainerResources words it (requests before limits, names sorted).
fn apply_defaults(pod: &mut Value, limits: &[Value]) -> Vec<String> {
    let mut defaults: BTreeMap<&str, BTreeMap<String, Value>> = BTreeMap::new();
    for limit in limits.iter().filter(|l| l["type"] == "Container") {
        for (field, kind) in [("default", "limits"), ("defaultRequest", "requests")] {
            let values = limit[field].as_object().into_iter().flatten();
            let values = values.map(|(resource, value)| (resource.clone(), value.clone()));
            defaults.entry(kind).or_default().extend(values);
        }
    }
    let mut set = Vec::new();
    for (list, label) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        // Read without inserting: a pod without init containers must not get `null` ones.
        let containers = pod.pointer_mut(&format!("/spec/{list}"));
        let Some(containers) = containers.and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            let name = container["name"].as_str().unwrap_or_default().to_string();
            let mut filled = BTreeMap::new();
            for (kind, values) in &defaults {
                for (resource, value) in values {
                    if container["resources"][*kind].get(resource).is_none() {
                        container["resources"][*kind][resource] = value.clone();
                        filled
                            .entry(*kind)
                            .or_insert_with(Vec::new)
                            .push(resource.as_str());
                    }
                }
            }
            for (kind, what) in [("requests", "request"), ("limits", "limit")] {
                if let Some(resources) = filled.get(kind) {
                    set.push(format!(
                        "{} {what} for {label} {name}",
                        resources.join(", ")
                    ));
                }
            }
        }
    }
    set
}

/// Upstream's MaxMilliValue: the largest value whose thousandths fit an int64.
const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

/// The values upstream compares (requestLimitEnforcedValues): thousandths, rounded up, when
/// none of the quantities is too large for them, whole units (rounded up) otherwise; an
/// absent quantity is zero.
fn enforced_values<const N: usize>(quantities: [Option<&Quantity>; N]) -> [i64; N] {
    let value = |q: Option<&Quantity>| q.map_or(0, Quantity::value);
    let milli = quantities.iter().all(|q| value(*q) <= MAX_MILLI_VALUE);
    quantities.map(|q| match milli {
        true => q.map_or(0, Quantity::milli_value),
        false => value(q),
    })
}

/// One bound check: the request (for `min`) or the limit (for `max`), if given, against
/// the limit item's `bound`, compared at upstream's precision.
fn check(
    errors: &mut Vec<String>,
    kind: &str,
    resource: &str,
    bound: &str,
    limit: &Value,
    observed: Option<&Quantity>,
) {
    let Some(bound_value) = Quantity::of_field(&limit[bound][resource]) else {
        return;
    };
    let [observed_value, enforced] = enforced_values([observed, Some(&bound_value)]);
    match (bound, observed) {
        ("min", None) => errors.push(format!(
            "minimum {resource} usage per {kind} is {bound_value}.  No request is specified"
        )),
        ("min", Some(request)) if observed_value < enforced => errors.push(format!(
            "minimum {resource} usage per {kind} is {bound_value}, but request is {request}"
        )),
        ("max", None) => errors.push(format!(
            "maximum {resource} usage per {kind} is {bound_value}.  No limit is specified"
        )),
        ("max", Some(maximum)) if observed_value > enforced => errors.push(format!(
            "maximum {resource} usage per {kind} is {bound_value}, but limit is {maximum}"
        )),
        _ => {}
    }
}

/// Whether limit / request exceeds the enforced ratio, as upstream's
/// limitRequestRatioConstraint decides it (on thousandths when they fit), but with exact
/// integer products instead of its float division; and the ratio as upstream displays it.
fn ratio_exceeded(request: &Quantity, maximum: &Quantity, ratio: &Quantity) -> Option<f64> {
    let [request_value, limit_value, _] =
        enforced_values([Some(request), Some(maximum), Some(ratio)]);
    if request_value == 0 {
        return None;
    }
    let displayed = limit_value as f64 / request_value as f64;
    let (limit_value, request_value) = (i128::from(limit_value), i128::from(request_value));
    let exceeded = if ratio.value() <= MAX_MILLI_VALUE {
        limit_value * 1000 > i128::from(ratio.milli_value()) * request_value
    } else {
        limit_value > i128::from(ratio.value()) * request_value
    };
    exceeded.then_some(displayed)
}

/// The min/max errors of one set of requests and limits against one limit item.
fn bounds(
    errors: &mut Vec<String>,
    kind: &str,
    limit: &Value,
    requests: &BTreeMap<String, Quantity>,
    limits: &BTreeMap<String, Quantity>,
) {
    let resources: Vec<String> = ["min", "max", "maxLimitRequestRatio"]
        .iter()
        .flat_map(|b| {
            limit[*b]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
        })
        .collect();
    let mut seen = Vec::new();
    for resource in resources {
        if seen.contains(&resource) {
            continue;
        }
        seen.push(resource.clone());
        check(
            errors,
            kind,
            &resource,
            "min",
            limit,
            requests.get(&resource),
        );
        check(errors, kind, &resource, "max", limit, limits.get(&resource));
        if let Some(ratio) = Quantity::of_field(&limit["maxLimitRequestRatio"][&resource])
            && let (Some(request), Some(maximum)) = (requests.get(&resource), limits.get(&resource))
            && let Some(actual) = ratio_exceeded(request, maximum, &ratio)
        {
            errors.push(format!("{resource} max limit to request ratio per {kind} is {ratio}, but provided ratio is {actual:.6}"));
        }
    }
}

/// A pod's requests or limits as upstream's LimitRanger totals them: per resource present
/// in every container, the sum of thousandths (cpu) or rounded-up units (the rest), in
/// decimal; then any init container's own amount when larger.
fn pod_total(pod: &Value, kind: &str) -> BTreeMap<String, Quantity> {
    let list = |name: &str| pod["spec"][name].as_array().map_or(&[][..], Vec::as_slice);
    let containers: Vec<_> = list("containers")
        .iter()
        .map(|c| amounts(&c["resources"][kind]))
        .collect();
    let names: BTreeSet<&String> = containers.iter().flat_map(|c| c.keys()).collect();
    let mut total = BTreeMap::new();
    for name in names {
        let cpu = name == "cpu";
        let values = containers.iter().map(|c| {
            c.get(name)
                .map(|q| if cpu { q.milli_value() } else { q.value() })
        });
        let Some(sum) = values.sum::<Option<i64>>() else {
            continue;
        };
        let sum = match cpu {
            true => Quantity::new_milli(sum, Format::DecimalSI),
            false => Quantity::new(sum, Format::DecimalSI),
        };
        total.insert(name.clone(), sum);
    }
    for init in list("initContainers") {
        for (name, own) in amounts(&init["resources"][kind]) {
            if total.get(&name).is_none_or(|sum| own > *sum) {
                total.insert(name, own);
            }
        }
    }
    total
}

/// The errors of a pod or PVC against the limit items.
fn violations(plural: &str, object: &Value, limits: &[Value]) -> Vec<String> {
    let mut errors = Vec::new();
    for limit in limits {
        match (plural, limit["type"].as_str()) {
            ("pods", Some("Container")) => {
                for list in ["initContainers", "containers"] {
                    for container in object["spec"][list].as_array().into_iter().flatten() {
                        let resources = &container["resources"];
                        bounds(
                            &mut errors,
                            "Container",
                            limit,
                            &amounts(&resources["requests"]),
                            &amounts(&resources["limits"]),
                        );
                    }
                }
            }
            ("pods", Some("Pod")) => {
                let (requests, limits) =
                    (pod_total(object, "requests"), pod_total(object, "limits"));
                bounds(&mut errors, "Pod", limit, &requests, &limits);
            }
            ("persistentvolumeclaims", Some("PersistentVolumeClaim")) => {
                let requests = amounts(&object["spec"]["resources"]["requests"]);
                let limits = amounts(&object["spec"]["resources"]["limits"]);
                let limits = if limits.is_empty() {
                    requests.clone()
                } else {
                    limits
                };
                bounds(
                    &mut errors,
                    "PersistentVolumeClaim",
                    limit,
                    &requests,
                    &limits,
                );
            }
            _ => {}
        }
    }
    errors
}

#[async_trait]
impl AdmissionPlugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (Some("pods"), Some(pod)) = (handled(attributes), object) else {
            return Ok(());
        };
        let limits = self.limits(attributes.namespace);
        let set = apply_defaults(pod, &limits);
        if !set.is_empty() {
            pod["metadata"]["annotations"][ANNOTATION] =
                json!(format!("LimitRanger plugin set: {}", set.join("; ")));
        }
        Ok(())
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (Some(plural), Some(object)) = (handled(attributes), object) else {
            return Ok(());
        };
        let errors = violations(plural, object, &self.limits(attributes.namespace));
        let message = match errors.as_slice() {
            [] => return Ok(()),
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        Err(ApiError::forbidden(
            &attributes.definition.group_resource(),
            attributes.name,
            message,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Vec<Value> {
        vec![json!({"type": "Container",
            "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "200m"},
            "max": {"cpu": "1"}, "min": {"cpu": "50m"}, "maxLimitRequestRatio": {"cpu": "4"}})]
    }

    #[test]
    fn defaults_fill_what_containers_leave_out() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "300m"}}},
        ]}});
        let set = apply_defaults(&mut pod, &limits());
        // A pod without init containers gets none (not `initContainers: null`, which a
        // later full update that leaves the field out would be refused for changing).
        assert!(pod["spec"].get("initContainers").is_none(), "{pod}");
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "200m"}})
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["limits"],
            json!({"cpu": "1", "memory": "128Mi"})
        );
        assert_eq!(
            set,
            [
                "cpu request for container a",
                "cpu, memory limit for container a",
                "memory limit for container b"
            ]
        );
        assert!(violations("pods", &pod, &limits()).is_empty());
    }

    #[test]
    fn bounds_read_as_upstream() {
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "20m"}}}]}});
        assert_eq!(
            violations("pods", &pod, &limits()),
            [
                "minimum cpu usage per Container is 50m, but request is 20m",
                "maximum cpu usage per Container is 1, but limit is 2",
                "cpu max limit to request ratio per Container is 4, but provided ratio is 100.000000",
            ]
        );
        let bare = json!({"spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            violations("pods", &bare, &limits()),
            [
                "minimum cpu usage per Container is 50m.  No request is specified",
                "maximum cpu usage per Container is 1.  No limit is specified"
            ]
        );
    }

    #[test]
    fn bounds_compare_at_upstream_precision() {
        let limits = vec![json!({"type": "Container", "min": {"cpu": "1m"},
            "maxLimitRequestRatio": {"cpu": "4"}})];
        let pod = |request: &str, limit: &str| {
            json!({"spec": {"containers": [{"name": "a",
            "resources": {"requests": {"cpu": request}, "limits": {"cpu": limit}}}]}})
        };
        // Upstream compares thousandths rounded up: 1n counts as 1m.
        assert!(violations("pods", &pod("1n", "4m"), &limits).is_empty());
        // A ratio of exactly 4 is allowed, a hair more is not.
        assert!(violations("pods", &pod("250m", "1"), &limits).is_empty());
        assert_eq!(
            violations("pods", &pod("250m", "1001m"), &limits),
            ["cpu max limit to request ratio per Container is 4, but provided ratio is 4.004000"]
        );
    }

    #[test]
    fn pod_totals_sum_as_upstream() {
        let limits = vec![json!({"type": "Pod", "max": {"cpu": "300m", "memory": "200Mi"}})];
        let container = |cpu: &str, memory: &str| {
            json!({"name": "a",
            "resources": {"limits": {"cpu": cpu, "memory": memory}}})
        };
        let pod = json!({"spec": {"containers": [container("100m", "128Mi"), container("0.2", "128Mi")]}});
        assert_eq!(
            violations("pods", &pod, &limits),
            ["maximum memory usage per Pod is 200Mi, but limit is 268435456"]
        );
        // An init container larger than the sum counts instead.
        let mut with_init = pod.clone();
        with_init["spec"]["initContainers"] = json!([container("301m", "1Mi")]);
        assert_eq!(
            violations("pods", &with_init, &limits),
            [
                "maximum cpu usage per Pod is 300m, but limit is 301m",
                "maximum memory usage per Pod is 200Mi, but limit is 268435456"
            ]
        );
    }
}
