//! The earlier versions whose objects differ from the storage version's in more than their
//! `apiVersion`, each converted as upstream's conversion through the internal type converts
//! it (the earlier version's defaults were applied when the value was written; the storage
//! version's are not applied on the way, as upstream applies none).

use serde_json::{Map, Value, json};

use crate::util::{child_mut, fields_mut};
use crate::workloads::{TEMPLATE_GENERATION_ANNOTATION, set_template_generation};

/// The object at JSON pointer `pointer`, when there is one.
fn object_at<'a>(value: &'a mut Value, pointer: &str) -> Option<&'a mut Map<String, Value>> {
    value.pointer_mut(pointer)?.as_object_mut()
}

/// Each item of the list at JSON pointer `pointer`.
fn items_at<'a>(value: &'a mut Value, pointer: &str) -> impl Iterator<Item = &'a mut Value> {
    value
        .pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// Sets annotation `key`, or removes it (and the annotations, when none are left).
fn set_annotation(object: &mut Value, key: &str, value: Option<String>) {
    let metadata = child_mut(object, "metadata");
    match value {
        Some(value) => {
            let annotations = metadata
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            fields_mut(annotations).insert(key.into(), Value::from(value));
        }
        None => {
            if let Some(annotations) = metadata
                .get_mut("annotations")
                .and_then(Value::as_object_mut)
            {
                annotations.remove(key);
                if annotations.is_empty() {
                    metadata.remove("annotations");
                }
            }
        }
    }
}

/// The annotation v1beta3 wrote on a limited level whose shares are 0, so that its
/// defaulting kept them 0; v1 keeps a 0 as it is, and the conversion drops the annotation.
const PRESERVE_ZERO_SHARES: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// flowcontrol v1beta1 and v1beta2 PriorityLevelConfigurations: their
/// `assuredConcurrencyShares` is v1's `nominalConcurrencyShares`.
pub(super) fn priority_level_assured_shares(object: &mut Value) {
    if let Some(limited) = object_at(object, "/spec/limited") {
        let shares = limited.remove("assuredConcurrencyShares");
        limited.insert(
            "nominalConcurrencyShares".into(),
            shares.unwrap_or(Value::from(0)),
        );
    }
}

/// flowcontrol v1beta3 PriorityLevelConfigurations: the shares are v1's, and the
/// preserve-zero annotation goes (whatever its value, as upstream's conversion drops it).
pub(super) fn priority_level_v1beta3(object: &mut Value) {
    if let Some(limited) = object_at(object, "/spec/limited") {
        limited
            .entry("nominalConcurrencyShares")
            .or_insert(Value::from(0));
    }
    set_annotation(object, PRESERVE_ZERO_SHARES, None);
}

/// The label of the selectors policy/v1 gives v1beta1's empty selector (which selected no
/// pods, where v1's selects all) and back.
const EMPTY_SELECTOR_MATCH: &str = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match";

/// policy/v1beta1 PodDisruptionBudgets: an empty selector selected no pods and becomes one
/// that matches nothing; the selector v1 writes back for its own empty selector becomes that
/// again; any other selector loses the label's expressions.
pub(super) fn disruption_budget_selector(object: &mut Value) {
    let Some(selector) = object_at(object, "/spec/selector") else {
        return;
    };
    let labels_empty = selector
        .get("matchLabels")
        .is_none_or(|labels| labels.as_object().is_none_or(Map::is_empty));
    let expressions: Vec<Value> = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let requirement = |operator: &str| json!({"key": EMPTY_SELECTOR_MATCH, "operator": operator});
    let matches_all = expressions.len() == 1
        && expressions[0]["key"] == EMPTY_SELECTOR_MATCH
        && expressions[0]["operator"] == "DoesNotExist"
        && expressions[0]["values"]
            .as_array()
            .is_none_or(Vec::is_empty);
    if labels_empty && expressions.is_empty() {
        selector.clear();
        selector.insert("matchExpressions".into(), json!([requirement("Exists")]));
    } else if labels_empty && matches_all {
        selector.clear();
    } else {
        let kept: Vec<Value> = expressions
            .into_iter()
            .filter(|expression| expression["key"] != EMPTY_SELECTOR_MATCH)
            .collect();
        match kept.is_empty() {
            true => selector.remove("matchExpressions"),
            false => selector.insert("matchExpressions".into(), Value::Array(kept)),
        };
    }
}

const TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
const TOPOLOGY_HOSTNAME: &str = "kubernetes.io/hostname";

/// discovery.k8s.io/v1beta1 EndpointSlices: each endpoint's `topology` becomes v1's
/// `deprecatedTopology`, less the zone (v1's `zone`) and the hostname (v1's `nodeName`,
/// unless the endpoint names another node).
pub(super) fn endpoint_slice_topology(object: &mut Value) {
    for endpoint in items_at(object, "/endpoints") {
        let Some(fields) = endpoint.as_object_mut() else {
            continue;
        };
        let Some(Value::Object(mut topology)) = fields.remove("topology") else {
            continue;
        };
        if let Some(zone) = topology.remove(TOPOLOGY_ZONE) {
            fields.insert("zone".into(), zone);
        }
        if let Some(hostname) = topology.get(TOPOLOGY_HOSTNAME).cloned() {
            match fields.get("nodeName").filter(|name| !name.is_null()) {
                None => {
                    topology.remove(TOPOLOGY_HOSTNAME);
                    fields.insert("nodeName".into(), hostname);
                }
                Some(name) if *name == hostname => {
                    topology.remove(TOPOLOGY_HOSTNAME);
                }
                Some(_) => {}
            }
        }
        if !topology.is_empty() {
            fields.insert("deprecatedTopology".into(), Value::Object(topology));
        }
    }
}

/// extensions/v1beta1 and networking.k8s.io/v1beta1 Ingresses: `spec.backend` is v1's
/// `defaultBackend`, and each backend's `serviceName` and `servicePort` are v1's `service`.
pub(super) fn ingress_backends(object: &mut Value) {
    if let Some(spec) = object_at(object, "/spec") {
        if let Some(backend) = spec.remove("backend") {
            spec.insert("defaultBackend".into(), backend);
        }
        if let Some(backend) = spec.get_mut("defaultBackend") {
            ingress_backend(backend);
        }
    }
    for rule in items_at(object, "/spec/rules") {
        for path in items_at(rule, "/http/paths") {
            if let Some(backend) = path.get_mut("backend") {
                ingress_backend(backend);
            }
        }
    }
}

/// One backend: a service backend when it names a service or a port, as upstream's
/// conversion decides (an int-or-string port is a name when it is a string).
fn ingress_backend(backend: &mut Value) {
    let Some(fields) = backend.as_object_mut() else {
        return;
    };
    let name = fields.remove("serviceName").unwrap_or(Value::Null);
    let port = fields.remove("servicePort").unwrap_or(Value::Null);
    let name = name.as_str().unwrap_or_default();
    let port = match &port {
        Value::String(port_name) => json!({"name": port_name}),
        Value::Number(number) if number.as_i64() != Some(0) => json!({"number": number}),
        _ => json!({}),
    };
    if !name.is_empty() || port.as_object().is_some_and(|port| !port.is_empty()) {
        let mut service = Map::new();
        if !name.is_empty() {
            service.insert("name".into(), Value::from(name));
        }
        service.insert("port".into(), port);
        fields.insert("service".into(), Value::Object(service));
    }
}

/// The annotation apps/v1 keeps a Deployment's rollback request in.
const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";

/// extensions/v1beta1 and apps/v1beta1 Deployments: `spec.rollbackTo` is apps/v1's
/// rollback annotation (absent when there is no rollback request).
pub(super) fn deployment_rollback(object: &mut Value) {
    let revision = object_at(object, "/spec")
        .and_then(|spec| spec.remove("rollbackTo"))
        .map(|rollback| rollback["revision"].as_i64().unwrap_or(0).to_string());
    set_annotation(object, ROLLBACK_TO, revision);
}

/// apps/v1beta2 Deployments keep the rollback annotation as apps/v1 does; an empty one is
/// no request.
pub(super) fn deployment_rollback_annotation(object: &mut Value) {
    let annotation = object["metadata"]["annotations"][ROLLBACK_TO].as_str();
    if annotation == Some("") {
        set_annotation(object, ROLLBACK_TO, None);
    }
}

/// extensions/v1beta1 DaemonSets: `spec.templateGeneration` is apps/v1's annotation, which
/// upstream's conversion always writes.
pub(super) fn daemon_set_template_generation(object: &mut Value) {
    let generation = object_at(object, "/spec")
        .and_then(|spec| spec.remove("templateGeneration"))
        .and_then(|generation| generation.as_i64())
        .unwrap_or(0);
    set_template_generation(object, generation);
}

/// apps/v1beta2 DaemonSets keep the annotation as apps/v1 does; the conversion writes "0"
/// when there is none.
pub(super) fn daemon_set_template_generation_annotation(object: &mut Value) {
    if !object["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION].is_string() {
        set_template_generation(object, 0);
    }
}

/// apps/v1beta1 and v1beta2 StatefulSets: apps/v1 writes each volume claim template with
/// its `apiVersion` and `kind`.
pub(super) fn stateful_set_claim_templates(object: &mut Value) {
    for template in items_at(object, "/spec/volumeClaimTemplates") {
        let fields = fields_mut(template);
        fields.insert("apiVersion".into(), Value::from("v1"));
        fields.insert("kind".into(), Value::from("PersistentVolumeClaim"));
    }
}

/// The fields of a resource.k8s.io/v1beta1 device that v1 has on the device itself.
const BASIC_DEVICE_FIELDS: &[&str] = &[
    "attributes",
    "capacity",
    "consumesCounters",
    "nodeName",
    "nodeSelector",
    "allNodes",
    "taints",
    "bindsToNode",
    "bindingConditions",
    "bindingFailureConditions",
    "allowMultipleAllocations",
];

/// The fields of a resource.k8s.io/v1beta1 device request that v1 has under `exactly`.
const EXACT_REQUEST_FIELDS: &[&str] = &[
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
];

/// resource.k8s.io/v1beta1 ResourceSlices: each device's `basic` fields are the v1
/// device's own.
pub(super) fn resource_slice_devices(object: &mut Value) {
    for device in items_at(object, "/spec/devices") {
        let Some(fields) = device.as_object_mut() else {
            continue;
        };
        if let Some(Value::Object(basic)) = fields.remove("basic") {
            for (key, value) in basic {
                if BASIC_DEVICE_FIELDS.contains(&key.as_str()) {
                    fields.insert(key, value);
                }
            }
        }
    }
}

/// resource.k8s.io/v1beta1 ResourceClaims: each request's device fields are v1's
/// `exactly` (a request choosing among alternatives has none).
pub(super) fn resource_claim_requests(object: &mut Value) {
    exact_requests(object, "/spec/devices/requests");
}

/// resource.k8s.io/v1beta1 ResourceClaimTemplates: their claims' requests, as a claim's.
pub(super) fn resource_claim_template_requests(object: &mut Value) {
    exact_requests(object, "/spec/spec/devices/requests");
}

fn exact_requests(object: &mut Value, pointer: &str) {
    for request in items_at(object, pointer) {
        let Some(fields) = request.as_object_mut() else {
            continue;
        };
        let exactly: Map<String, Value> = EXACT_REQUEST_FIELDS
            .iter()
            .filter_map(|key| fields.remove(*key).map(|value| (key.to_string(), value)))
            .filter(|(_, value)| !value.is_null())
            .collect();
        let set = exactly.iter().any(|(key, value)| match key.as_str() {
            "deviceClassName" | "allocationMode" => value.as_str().is_some_and(|s| !s.is_empty()),
            "count" => value.as_i64().is_some_and(|count| count != 0),
            _ => true,
        });
        if set {
            fields.insert("exactly".into(), Value::Object(exactly));
        }
    }
}
