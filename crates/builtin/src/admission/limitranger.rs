//! LimitRanger (kubernetes/plugin/pkg/admission/limitranger): the LimitRanges of a
//! namespace give new pods' containers their default limits and requests (mutating phase),
//! and bound containers, pods and PersistentVolumeClaims by min, max and
//! maxLimitRequestRatio (validating phase), with upstream's messages.

use std::collections::BTreeMap;

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::{Value, json};

use super::quantity::{Amount, amounts};

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
        super::cached_in_namespace(&self.limit_ranges, namespace)
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
    match (definition.plural, attributes.operation) {
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

/// One bound check: `value` (a request or limit, if given) against the limit's `bound`.
fn check(
    errors: &mut Vec<String>,
    kind: &str,
    resource: &str,
    bound: &str,
    limit: &Value,
    request: Option<Amount>,
    maximum: Option<Amount>,
) {
    let Some(bound_value) = limit[bound][resource].as_str().and_then(Amount::parse) else {
        return;
    };
    match bound {
        "min" => match request {
            None => errors.push(format!(
                "minimum {resource} usage per {kind} is {bound_value}.  No request is specified"
            )),
            Some(request) if request < bound_value => errors.push(format!(
                "minimum {resource} usage per {kind} is {bound_value}, but request is {request}"
            )),
            _ => {}
        },
        _ => match maximum {
            None => errors.push(format!(
                "maximum {resource} usage per {kind} is {bound_value}.  No limit is specified"
            )),
            Some(maximum) if maximum > bound_value => errors.push(format!(
                "maximum {resource} usage per {kind} is {bound_value}, but limit is {maximum}"
            )),
            _ => {}
        },
    }
}

/// The min/max errors of one set of requests and limits against one limit item.
fn bounds(
    errors: &mut Vec<String>,
    kind: &str,
    limit: &Value,
    requests: &BTreeMap<String, Amount>,
    limits: &BTreeMap<String, Amount>,
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
            requests.get(&resource).copied(),
            None,
        );
        check(
            errors,
            kind,
            &resource,
            "max",
            limit,
            None,
            limits.get(&resource).copied(),
        );
        if let Some(ratio) = limit["maxLimitRequestRatio"][&resource]
            .as_str()
            .and_then(Amount::parse)
            && let (Some(request), Some(maximum)) = (requests.get(&resource), limits.get(&resource))
        {
            let actual = maximum.as_f64() / request.as_f64();
            if actual > ratio.as_f64() {
                errors.push(format!("{resource} max limit to request ratio per {kind} is {ratio}, but provided ratio is {actual:.6}"));
            }
        }
    }
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
                let sum = |kind: &str| {
                    let mut total: BTreeMap<String, Amount> = BTreeMap::new();
                    for container in object["spec"]["containers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        for (k, v) in amounts(&container["resources"][kind]) {
                            let entry = total.entry(k).or_insert(Amount::zero_like(&v));
                            *entry = *entry + v;
                        }
                    }
                    total
                };
                bounds(&mut errors, "Pod", limit, &sum("requests"), &sum("limits"));
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
}
