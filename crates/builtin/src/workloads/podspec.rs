//! Validation of pod specs and pod templates with upstream's messages and field paths
//! (pkg/apis/core/validation: ValidatePodSpec, ValidatePodTemplateSpec and their parts; the
//! containers' and volumes' are [`containers`]' and [`volumes`]'), the helpers they share,
//! and the spec ValidatePodUpdate compares. Objects are JSON in the v1 form, so an absent
//! field reads as Go's zero value.

mod containers;
mod volumes;

use std::collections::BTreeSet;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    IS_NEGATIVE_ERROR_MSG, is_dns1123_label, is_qualified_name, is_valid_label_value,
    name_is_dns_subdomain, validate_annotations, validate_label_name, validate_labels,
};
use serde_json::{Map, Value};

use super::security::validate_pod_security_context;
use crate::util::{int_of, map_value, str_of};
use containers::{validate_containers, validate_init_containers};
use volumes::validate_volumes;

/// The largest value of an int32 field.
const MAX_INT32: i64 = 2_147_483_647;

/// The fieldPaths the v1 downward API converts.
const CONVERTIBLE_FIELD_PATHS: [&str; 14] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// Upstream's InclusiveRangeError.
pub(crate) fn inclusive_range(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// ValidateNonnegativeField.
pub(crate) fn nonnegative(value: i64, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if value < 0 {
        errs.push(FieldError::invalid(path, value, IS_NEGATIVE_ERROR_MSG));
    }
    errs
}

/// Invalid errors for each message of a string check.
fn invalid_each(path: &Path, value: &str, msgs: Vec<String>) -> FieldErrors {
    msgs.into_iter()
        .map(|msg| FieldError::invalid(path, value, msg))
        .collect()
}

/// ValidateDNS1123Label.
pub(crate) fn dns1123_label(value: &str, path: &Path) -> FieldErrors {
    invalid_each(path, value, is_dns1123_label(value))
}

/// The list under `key`, or an empty one.
fn list<'a>(object: &'a Value, key: &str) -> &'a [Value] {
    object
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Whether the field is set (present and not `null`).
fn is_set(object: &Value, key: &str) -> bool {
    object.get(key).is_some_and(|v| !v.is_null())
}

/// ValidatePodTemplateSpec: the template's labels and annotations, its spec, and no
/// ephemeral containers.
pub(crate) fn validate_pod_template_spec(template: &Value, path: &Path) -> FieldErrors {
    let meta = &template["metadata"];
    let mut errs = validate_labels(&map_value(meta, "labels"), &path.child("labels"));
    errs.extend(validate_annotations(
        &map_value(meta, "annotations"),
        &path.child("annotations"),
    ));
    let spec = &template["spec"];
    errs.extend(validate_pod_spec(spec, &path.child("spec")));
    if !list(spec, "ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// The pod-only checks of validatePodMetadataAndSpec and ValidatePodCreate's spec rules.
pub(crate) fn validate_pod_only(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if str_of(spec, "serviceAccountName").is_empty() {
        for (vi, volume) in list(spec, "volumes").iter().enumerate() {
            let projected = path.child("volumes").index(vi).child("projected");
            for (si, source) in list(&volume["projected"], "sources").iter().enumerate() {
                if is_set(source, "serviceAccountToken") {
                    errs.push(FieldError::forbidden(
                        &projected
                            .child("sources")
                            .index(si)
                            .child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for key in ["containers", "initContainers"] {
        for (i, container) in list(spec, key).iter().enumerate() {
            let image = str_of(container, "image");
            if image.trim() != image {
                errs.push(FieldError::invalid(
                    &path.child(key).index(i).child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}

/// ValidatePodSpec.
pub(crate) fn validate_pod_spec(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !is_set(spec, "terminationGracePeriodSeconds") {
        errs.push(FieldError::required(
            &path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    let (volumes, volume_errs) = validate_volumes(list(spec, "volumes"), &path.child("volumes"));
    errs.extend(volume_errs);
    let restart_policy = str_of(spec, "restartPolicy");
    errs.extend(validate_containers(
        list(spec, "containers"),
        &volumes,
        &path.child("containers"),
    ));
    errs.extend(validate_init_containers(
        list(spec, "initContainers"),
        list(spec, "containers"),
        &volumes,
        &path.child("initContainers"),
    ));
    errs.extend(validate_host_network(spec, path));
    errs.extend(enum_field(
        restart_policy,
        &["Always", "OnFailure", "Never"],
        &path.child("restartPolicy"),
    ));
    errs.extend(enum_field(
        str_of(spec, "dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &path.child("dnsPolicy"),
    ));
    errs.extend(validate_labels(
        &map_value(spec, "nodeSelector"),
        &path.child("nodeSelector"),
    ));
    errs.extend(validate_pod_security_context(
        spec,
        &path.child("securityContext"),
    ));
    errs.extend(validate_dns_config(spec, &path.child("dnsConfig")));
    errs.extend(validate_spec_names(spec, path));
    errs
}

/// An enum field: Required when empty, NotSupported when unknown.
fn enum_field(value: &str, supported: &[&str], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else if !supported.contains(&value) {
        errs.push(FieldError::not_supported(path, value, supported));
    }
    errs
}

/// The names and scalar fields at the end of ValidatePodSpec: readiness and scheduling
/// gates, service account, node, deadline, hostname, tolerations, priority, runtime class,
/// preemption policy and OS.
fn validate_spec_names(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, gate) in list(spec, "readinessGates").iter().enumerate() {
        let value = str_of(gate, "conditionType");
        let gate_path = path.child("readinessGates").index(i).child("conditionType");
        errs.extend(invalid_each(&gate_path, value, is_qualified_name(value)));
    }
    let mut gates = BTreeSet::new();
    for (i, gate) in list(spec, "schedulingGates").iter().enumerate() {
        let name = str_of(gate, "name");
        let gate_path = path.child("schedulingGates").index(i);
        errs.extend(invalid_each(&gate_path, name, is_qualified_name(name)));
        if !gates.insert(name) {
            errs.push(FieldError::duplicate(&gate_path, name));
        }
    }
    for key in ["serviceAccountName", "nodeName"] {
        let value = str_of(spec, key);
        if !value.is_empty() {
            errs.extend(invalid_each(
                &path.child(key),
                value,
                name_is_dns_subdomain(value, false),
            ));
        }
    }
    if is_set(spec, "activeDeadlineSeconds") {
        let value = int_of(spec, "activeDeadlineSeconds");
        if !(1..=MAX_INT32).contains(&value) {
            errs.push(FieldError::invalid(
                &path.child("activeDeadlineSeconds"),
                value,
                inclusive_range(1, MAX_INT32),
            ));
        }
    }
    for key in ["hostname", "subdomain"] {
        let value = str_of(spec, key);
        if !value.is_empty() {
            errs.extend(dns1123_label(value, &path.child(key)));
        }
    }
    errs.extend(validate_tolerations(
        list(spec, "tolerations"),
        &path.child("tolerations"),
    ));
    errs.extend(validate_class_names(spec, path));
    errs
}

/// priorityClassName, runtimeClassName, preemptionPolicy and os.
fn validate_class_names(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let priority_class = str_of(spec, "priorityClassName");
    if !priority_class.is_empty() {
        errs.extend(invalid_each(
            &path.child("priorityClassName"),
            priority_class,
            name_is_dns_subdomain(priority_class, false),
        ));
    }
    if let Some(runtime_class) = spec.get("runtimeClassName").and_then(Value::as_str) {
        errs.extend(invalid_each(
            &path.child("runtimeClassName"),
            runtime_class,
            name_is_dns_subdomain(runtime_class, false),
        ));
    }
    if is_set(spec, "preemptionPolicy") {
        errs.extend(enum_field(
            str_of(spec, "preemptionPolicy"),
            &["PreemptLowerPriority", "Never"],
            &path.child("preemptionPolicy"),
        ));
    }
    if is_set(spec, "os") {
        let name = str_of(&spec["os"], "name");
        let os_path = path.child("os").child("name");
        if name.is_empty() {
            errs.push(FieldError::required(&os_path, ""));
        } else if !["linux", "windows"].contains(&name) {
            errs.push(FieldError::not_supported(
                &os_path,
                name,
                ["linux", "windows"],
            ));
        }
    }
    errs
}

/// validatePodDNSConfig: `None` needs a config with a nameserver; at most 3 nameservers.
fn validate_dns_config(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let config = &spec["dnsConfig"];
    if str_of(spec, "dnsPolicy") == "None" {
        if config.is_null() {
            errs.push(FieldError::required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return errs;
        }
        if list(config, "nameservers").is_empty() {
            errs.push(FieldError::required(
                &path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return errs;
        }
    }
    let nameservers = list(config, "nameservers");
    if nameservers.len() > 3 {
        errs.push(FieldError::invalid(
            &path.child("nameservers"),
            Value::Array(nameservers.to_vec()),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, option) in list(config, "options").iter().enumerate() {
        if str_of(option, "name").is_empty() {
            errs.push(FieldError::required(
                &path.child("options").index(i),
                "must not be empty",
            ));
        }
    }
    errs
}

/// validatePodHostNetworkDeps: with host networking a hostPort must equal its containerPort
/// (0 is allowed in templates, where it is defaulted later).
fn validate_host_network(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return errs;
    }
    for (i, container) in list(spec, "containers").iter().enumerate() {
        for (j, port) in list(container, "ports").iter().enumerate() {
            let host = int_of(port, "hostPort");
            if host != 0 && host != int_of(port, "containerPort") {
                errs.push(FieldError::invalid(
                    &path
                        .child("containers")
                        .index(i)
                        .child("ports")
                        .index(j)
                        .child("hostPort"),
                    host,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

/// ValidateTolerations.
fn validate_tolerations(tolerations: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, toleration) in tolerations.iter().enumerate() {
        let idx = path.index(i);
        let key = str_of(toleration, "key");
        let operator = str_of(toleration, "operator");
        let value = str_of(toleration, "value");
        let effect = str_of(toleration, "effect");
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &idx.child("key")));
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                &idx.child("operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if is_set(toleration, "tolerationSeconds") && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &idx.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let msgs = is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        &idx.child("operator"),
                        value,
                        msgs.join(";"),
                    ));
                }
            }
            "Exists" if !value.is_empty() => errs.push(FieldError::invalid(
                &idx.child("operator"),
                value,
                "value must be empty when `operator` is 'Exists'",
            )),
            "Exists" => {}
            other => errs.push(FieldError::not_supported(
                &idx.child("operator"),
                other,
                ["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
        {
            errs.push(FieldError::not_supported(
                &idx.child("effect"),
                effect,
                ["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

/// validateObjectFieldSelector against the given expressions.
fn validate_field_ref(selector: &Value, expressions: &[&str], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let api_version = str_of(selector, "apiVersion");
    let field_path = str_of(selector, "fieldPath");
    if api_version.is_empty() {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
        return errs;
    }
    if field_path.is_empty() {
        errs.push(FieldError::required(&path.child("fieldPath"), ""));
        return errs;
    }
    let subscripted = field_path
        .split_once('[')
        .filter(|(_, rest)| rest.ends_with(']'));
    let base = subscripted.map_or(field_path, |(base, _)| base);
    let convertible = if subscripted.is_some() {
        ["metadata.annotations", "metadata.labels"].contains(&base)
    } else {
        CONVERTIBLE_FIELD_PATHS.contains(&field_path)
    };
    if api_version != "v1" || !convertible {
        let detail = if api_version != "v1" {
            format!("unsupported pod version: {api_version}")
        } else {
            format!("field label not supported: {field_path}")
        };
        errs.push(FieldError::invalid(
            &path.child("fieldPath"),
            field_path,
            format!("error converting fieldPath: {detail}"),
        ));
        return errs;
    }
    if let Some((_, rest)) = subscripted {
        let key = rest[..rest.len() - 1].trim_matches(['\'', '"']);
        let key = if base == "metadata.annotations" {
            key.to_lowercase()
        } else {
            key.to_string()
        };
        errs.extend(invalid_each(path, &key, is_qualified_name(&key)));
    } else if !expressions.contains(&field_path) {
        let mut supported = expressions.to_vec();
        supported.sort_unstable();
        errs.push(FieldError::not_supported(
            &path.child("fieldPath"),
            field_path,
            supported,
        ));
    }
    errs
}
/// The `spec` of a pod with the fields an update may change replaced by `old`'s, for
/// ValidatePodUpdate's comparison: container images, activeDeadlineSeconds, tolerations,
/// scheduling gates, and a terminationGracePeriodSeconds of 1 after a negative one.
pub(crate) fn munged_pod_spec(new: &Value, old: &Value) -> Value {
    let mut munged = new.clone();
    let fields = match munged.as_object_mut() {
        Some(fields) => fields,
        None => return munged,
    };
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = fields.get_mut(key) {
            for (i, container) in containers.iter_mut().enumerate() {
                if let Some(container) = container.as_object_mut() {
                    set_or_remove(container, "image", old[key][i].get("image"));
                }
            }
        }
    }
    for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        set_or_remove(fields, key, old.get(key));
    }
    let old_grace = old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let new_grace = fields
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_grace.is_some_and(|g| g < 0) && new_grace == Some(1) {
        set_or_remove(
            fields,
            "terminationGracePeriodSeconds",
            old.get("terminationGracePeriodSeconds"),
        );
    }
    munged
}

/// Sets `key` to `value`, or removes it when `value` is absent.
fn set_or_remove(fields: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    match value {
        Some(value) => fields.insert(key.to_string(), value.clone()),
        None => fields.remove(key),
    };
}
