//! Validation of pod specs and pod templates with upstream's messages and field paths
//! (pkg/apis/core/validation: ValidatePodSpec, validateContainers, ValidateVolumes,
//! ValidatePodTemplateSpec and their parts). Objects are JSON in the v1 form, so an absent
//! field reads as Go's zero value.

use std::collections::{BTreeMap, BTreeSet};

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    IS_NEGATIVE_ERROR_MSG, is_config_map_key, is_dns1123_label, is_qualified_name,
    is_valid_label_value, is_valid_port_name, name_is_dns_subdomain, validate_annotations,
    validate_label_name, validate_labels,
};
use serde_json::{Map, Value};

use super::defaults::volume_sources;
use super::security::{validate_container_security_context, validate_pod_security_context};
use crate::util::quantity;
use crate::util::{int_of, map_value, str_of};

/// The largest value of an int32 field.
const MAX_INT32: i64 = 2_147_483_647;

/// The file mode message of volume sources.
const FILE_MODE_ERROR_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The fieldPaths an env var's fieldRef may name.
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The fieldPaths a downwardAPI volume file's fieldRef may name.
const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

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

/// The valid volumes by name and the source field each uses.
type Volumes = BTreeMap<String, &'static str>;

/// ValidateVolumes: each volume's source and name; returns the valid volumes.
fn validate_volumes(volumes: &[Value], path: &Path) -> (Volumes, FieldErrors) {
    let mut errs = FieldErrors::new();
    let mut valid = Volumes::new();
    for (i, volume) in volumes.iter().enumerate() {
        let idx = path.index(i);
        let name = str_of(volume, "name");
        let (source, mut volume_errs) = validate_volume_source(volume, &idx);
        if name.is_empty() {
            volume_errs.push(FieldError::required(&idx.child("name"), ""));
        } else {
            volume_errs.extend(dns1123_label(name, &idx.child("name")));
        }
        if valid.contains_key(name) {
            volume_errs.push(FieldError::duplicate(&idx.child("name"), name));
        }
        if volume_errs.is_empty() {
            valid.insert(name.to_string(), source);
        } else {
            errs.extend(volume_errs);
        }
    }
    (valid, errs)
}

/// The path segment upstream names a volume source by in "more than 1 volume type" errors
/// (it misspells one).
fn source_error_name(source: &str) -> &str {
    match source {
        "downwardAPI" => "downwarAPI",
        "cephfs" => "cephFS",
        other => other,
    }
}

/// validateVolumeSource: exactly one source, and the checks of the common ones.
fn validate_volume_source(volume: &Value, path: &Path) -> (&'static str, FieldErrors) {
    let mut errs = FieldErrors::new();
    let mut chosen = "";
    for source in volume_sources() {
        if !is_set(volume, source) {
            continue;
        }
        if !chosen.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child(source_error_name(source)),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        chosen = source;
        errs.extend(validate_one_source(source, &volume[*source], path));
    }
    if chosen.is_empty() {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    (chosen, errs)
}

/// The checks of one volume source (the common sources; the in-tree plugins' specific
/// rules are not checked).
fn validate_one_source(source: &str, value: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let source_path = path.child(source);
    let required = |errs: &mut FieldErrors, key: &str| {
        if str_of(value, key).is_empty() {
            errs.push(FieldError::required(&source_path.child(key), ""));
        }
    };
    match source {
        "hostPath" => required(&mut errs, "path"),
        "secret" => {
            required(&mut errs, "secretName");
            errs.extend(validate_mode(value, "defaultMode", &source_path));
            errs.extend(validate_key_to_paths(value, &source_path));
        }
        "configMap" => {
            required(&mut errs, "name");
            errs.extend(validate_mode(value, "defaultMode", &source_path));
            errs.extend(validate_key_to_paths(value, &source_path));
        }
        "persistentVolumeClaim" => required(&mut errs, "claimName"),
        "nfs" => {
            required(&mut errs, "server");
            required(&mut errs, "path");
            let nfs_path = str_of(value, "path");
            if !nfs_path.starts_with('/') {
                errs.push(FieldError::invalid(
                    &source_path.child("path"),
                    nfs_path,
                    "must be an absolute path",
                ));
            }
        }
        "downwardAPI" => {
            errs.extend(validate_mode(value, "defaultMode", &source_path));
            for item in list(value, "items") {
                errs.extend(validate_downward_file(item, &source_path));
            }
        }
        "projected" => {
            errs.extend(validate_mode(value, "defaultMode", &source_path));
        }
        "csi" => required(&mut errs, "driver"),
        "gitRepo" => required(&mut errs, "repository"),
        _ => {}
    }
    errs
}

/// validateDownwardAPIVolumeFile; upstream names its errors by the source's path, not the
/// item's.
fn validate_downward_file(file: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let file_path = str_of(file, "path");
    if file_path.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_local_path(file_path, &path.child("path")));
    if is_set(file, "fieldRef") {
        errs.extend(validate_field_ref(
            &file["fieldRef"],
            &VOLUME_FIELD_PATHS,
            &path.child("fieldRef"),
        ));
        if is_set(file, "resourceFieldRef") {
            errs.push(FieldError::invalid(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if !is_set(file, "resourceFieldRef") {
        errs.push(FieldError::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    errs.extend(validate_mode(file, "mode", path));
    errs
}

/// A file mode field must be within 0..=0o777.
fn validate_mode(value: &Value, key: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(mode) = value.get(key).and_then(Value::as_i64)
        && !(0..=0o777).contains(&mode)
    {
        errs.push(FieldError::invalid(
            &path.child(key),
            mode,
            FILE_MODE_ERROR_MSG,
        ));
    }
    errs
}

/// validateKeyToPath for each item of a secret or configMap source.
fn validate_key_to_paths(source: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, item) in list(source, "items").iter().enumerate() {
        let idx = path.child("items").index(i);
        for key in ["key", "path"] {
            if str_of(item, key).is_empty() {
                errs.push(FieldError::required(&idx.child(key), ""));
            }
        }
        errs.extend(validate_local_path(
            str_of(item, "path"),
            &idx.child("path"),
        ));
        errs.extend(validate_mode(item, "mode", &idx));
    }
    errs
}

/// validateLocalDescendingPath: relative, without `..` elements.
fn validate_local_path(value: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if value.starts_with('/') {
        errs.push(FieldError::invalid(path, value, "must be a relative path"));
    }
    if value.split(['/', '\\']).any(|part| part == "..") {
        errs.push(FieldError::invalid(path, value, "must not contain '..'"));
    }
    errs
}

/// validateContainers: the regular containers.
fn validate_containers(containers: &[Value], volumes: &Volumes, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if containers.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let mut names = BTreeSet::new();
    for (i, container) in containers.iter().enumerate() {
        let idx = path.index(i);
        errs.extend(validate_container_common(container, volumes, &idx));
        let name = str_of(container, "name");
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        }
        errs.extend(validate_lifecycle(container, &idx));
        errs.extend(validate_probes(container, &idx));
        if is_set(container, "restartPolicy") {
            errs.push(FieldError::forbidden(
                &idx.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(check_host_port_conflicts(containers, path));
    errs
}

/// validateInitContainers.
fn validate_init_containers(
    containers: &[Value],
    regular: &[Value],
    volumes: &Volumes,
    path: &Path,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut names: BTreeSet<&str> = regular.iter().map(|c| str_of(c, "name")).collect();
    for (i, container) in containers.iter().enumerate() {
        let idx = path.index(i);
        errs.extend(validate_container_common(container, volumes, &idx));
        let restart_policy = container.get("restartPolicy").and_then(Value::as_str);
        if let Some(policy) = restart_policy
            && policy != "Always"
        {
            errs.push(FieldError::not_supported(
                &idx.child("restartPolicy"),
                policy,
                ["Always"],
            ));
        }
        let name = str_of(container, "name");
        if names.contains(name) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        } else if !name.is_empty() {
            names.insert(name);
        }
        errs.extend(check_host_port_conflicts(
            std::slice::from_ref(container),
            path,
        ));
        if restart_policy == Some("Always") {
            errs.extend(validate_lifecycle(container, &idx));
            errs.extend(validate_probes(container, &idx));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if is_set(container, key) {
                    errs.push(FieldError::forbidden(
                        &idx.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

/// validateContainerCommon.
fn validate_container_common(container: &Value, volumes: &Volumes, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let name = str_of(container, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        errs.extend(dns1123_label(name, &path.child("name")));
    }
    if str_of(container, "image").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    errs.extend(enum_field(
        str_of(container, "terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
        &path.child("terminationMessagePolicy"),
    ));
    errs.extend(validate_container_ports(
        list(container, "ports"),
        &path.child("ports"),
    ));
    errs.extend(validate_env(list(container, "env"), &path.child("env")));
    errs.extend(validate_env_from(
        list(container, "envFrom"),
        &path.child("envFrom"),
    ));
    errs.extend(validate_volume_mounts(
        list(container, "volumeMounts"),
        volumes,
        &path.child("volumeMounts"),
    ));
    errs.extend(validate_pull_policy(
        str_of(container, "imagePullPolicy"),
        &path.child("imagePullPolicy"),
    ));
    errs.extend(validate_resources(
        &container["resources"],
        &path.child("resources"),
    ));
    errs.extend(validate_container_security_context(
        &container["securityContext"],
        &path.child("securityContext"),
    ));
    errs
}

/// validatePullPolicy (its supported values listed sorted).
fn validate_pull_policy(policy: &str, path: &Path) -> FieldErrors {
    enum_field(policy, &["Always", "IfNotPresent", "Never"], path)
}

/// IsValidPortNum.
fn port_num_errors(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range(1, 65535)]
    }
}

/// validateContainerPorts.
fn validate_container_ports(ports: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let idx = path.index(i);
        let name = str_of(port, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                errs.extend(invalid_each(&idx.child("name"), name, msgs));
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(&idx.child("name"), name));
            }
        }
        let container_port = int_of(port, "containerPort");
        if container_port == 0 {
            errs.push(FieldError::required(&idx.child("containerPort"), ""));
        } else {
            for msg in port_num_errors(container_port) {
                errs.push(FieldError::invalid(
                    &idx.child("containerPort"),
                    container_port,
                    msg,
                ));
            }
        }
        let host_port = int_of(port, "hostPort");
        if host_port != 0 {
            for msg in port_num_errors(host_port) {
                errs.push(FieldError::invalid(&idx.child("hostPort"), host_port, msg));
            }
        }
        errs.extend(enum_field(
            str_of(port, "protocol"),
            &["SCTP", "TCP", "UDP"],
            &idx.child("protocol"),
        ));
    }
    errs
}

/// AccumulateUniqueHostPorts over a list of containers.
fn check_host_port_conflicts(containers: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut seen = BTreeSet::new();
    for (ci, container) in containers.iter().enumerate() {
        for (pi, port) in list(container, "ports").iter().enumerate() {
            let host_port = int_of(port, "hostPort");
            if host_port == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{host_port}",
                str_of(port, "protocol"),
                str_of(port, "hostIP")
            );
            if !seen.insert(key.clone()) {
                errs.push(FieldError::duplicate(
                    &path.index(ci).child("ports").index(pi).child("hostPort"),
                    key,
                ));
            }
        }
    }
    errs
}

/// IsRelaxedEnvVarName (the RelaxedEnvironmentVariableValidation rule, on by default).
fn env_name_errors(name: &str) -> Vec<String> {
    if name
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
    {
        Vec::new()
    } else {
        vec!["a valid environment variable name must consist only of printable ASCII characters other than '='".to_string()]
    }
}

/// ValidateEnv.
fn validate_env(vars: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, var) in vars.iter().enumerate() {
        let idx = path.index(i);
        let name = str_of(var, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&idx.child("name"), ""));
        } else {
            errs.extend(invalid_each(
                &idx.child("name"),
                name,
                env_name_errors(name),
            ));
        }
        errs.extend(validate_env_value_from(var, &idx.child("valueFrom")));
    }
    errs
}

/// validateEnvVarValueFrom.
fn validate_env_value_from(var: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let from = &var["valueFrom"];
    if from.is_null() {
        return errs;
    }
    let mut sources = 0;
    if is_set(from, "fieldRef") {
        sources += 1;
        errs.extend(validate_field_ref(
            &from["fieldRef"],
            &ENV_FIELD_PATHS,
            &path.child("fieldRef"),
        ));
    }
    if is_set(from, "resourceFieldRef") {
        sources += 1;
        if str_of(&from["resourceFieldRef"], "resource").is_empty() {
            errs.push(FieldError::required(
                &path.child("resourceFieldRef").child("resource"),
                "",
            ));
        }
    }
    for key in ["configMapKeyRef", "secretKeyRef"] {
        if is_set(from, key) {
            sources += 1;
            errs.extend(validate_key_selector(&from[key], &path.child(key)));
        }
    }
    if sources == 0 {
        errs.push(FieldError::invalid(
            path,
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if !str_of(var, "value").is_empty() {
        errs.push(FieldError::invalid(
            path,
            "",
            "may not be specified when `value` is not empty",
        ));
    } else if sources > 1 {
        errs.push(FieldError::invalid(
            path,
            "",
            "may not have more than one field specified at a time",
        ));
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

/// validateConfigMapKeySelector / validateSecretKeySelector.
fn validate_key_selector(selector: &Value, path: &Path) -> FieldErrors {
    let name = str_of(selector, "name");
    let mut errs = invalid_each(
        &path.child("name"),
        name,
        name_is_dns_subdomain(name, false),
    );
    let key = str_of(selector, "key");
    if key.is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    } else {
        errs.extend(invalid_each(
            &path.child("key"),
            key,
            is_config_map_key(key),
        ));
    }
    errs
}

/// ValidateEnvFrom.
fn validate_env_from(sources: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, source) in sources.iter().enumerate() {
        let idx = path.index(i);
        let prefix = str_of(source, "prefix");
        if !prefix.is_empty() {
            errs.extend(invalid_each(
                &idx.child("prefix"),
                prefix,
                env_name_errors(prefix),
            ));
        }
        let mut count = 0;
        for key in ["configMapRef", "secretRef"] {
            if !is_set(source, key) {
                continue;
            }
            count += 1;
            let name = str_of(&source[key], "name");
            let name_path = idx.child(key).child("name");
            if name.is_empty() {
                errs.push(FieldError::required(&name_path, ""));
            } else {
                errs.extend(invalid_each(
                    &name_path,
                    name,
                    name_is_dns_subdomain(name, true),
                ));
            }
        }
        if count == 0 {
            errs.push(FieldError::invalid(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if count > 1 {
            errs.push(FieldError::invalid(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

/// ValidateVolumeMounts: named, existing volumes at unique paths.
fn validate_volume_mounts(mounts: &[Value], volumes: &Volumes, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut mount_points = BTreeSet::new();
    for (i, mount) in mounts.iter().enumerate() {
        let idx = path.index(i);
        let name = str_of(mount, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&idx.child("name"), ""));
        }
        if !volumes.contains_key(name) {
            errs.push(FieldError::not_found(&idx.child("name"), name));
        }
        let mount_path = str_of(mount, "mountPath");
        if mount_path.is_empty() {
            errs.push(FieldError::required(&idx.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            errs.push(FieldError::invalid(
                &idx.child("mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        let sub_path = str_of(mount, "subPath");
        if !sub_path.is_empty() {
            errs.extend(validate_local_path(sub_path, &path.child("subPath")));
        }
        let sub_path_expr = str_of(mount, "subPathExpr");
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &idx.child("subPathExpr"),
                    sub_path_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(validate_local_path(
                sub_path_expr,
                &path.child("subPathExpr"),
            ));
        }
    }
    errs
}

/// A quantity as it prints in messages.
fn quantity_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The resource requirements of a container: non-negative quantities and requests that do
/// not exceed limits.
fn validate_resources(resources: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let limits = map_value(resources, "limits");
    let requests = map_value(resources, "requests");
    for (kind, quantities) in [("limits", &limits), ("requests", &requests)] {
        for (name, value) in quantities {
            if quantity(value).is_some_and(|q| q.signum() < 0) {
                errs.push(FieldError::invalid(
                    &path.child(kind).key(name),
                    quantity_text(value),
                    IS_NEGATIVE_ERROR_MSG,
                ));
            }
        }
    }
    for (name, request) in &requests {
        let Some(limit) = limits.get(name) else {
            continue;
        };
        let (request_text, limit_text) = (quantity_text(request), quantity_text(limit));
        if let (Some(r), Some(l)) = (quantity(request), quantity(limit)) {
            let overcommit = !name.starts_with("hugepages-")
                && (!name.contains('/') || name.starts_with("kubernetes.io/"));
            if r != l && !overcommit {
                errs.push(FieldError::invalid(
                    &path.child("requests"),
                    request_text,
                    format!("must be equal to {name} limit of {limit_text}"),
                ));
            } else if r > l {
                errs.push(FieldError::invalid(
                    &path.child("requests"),
                    request_text,
                    format!("must be less than or equal to {name} limit of {limit_text}"),
                ));
            }
        }
    }
    errs
}

/// validateLifecycle.
fn validate_lifecycle(container: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let lifecycle = &container["lifecycle"];
    for hook in ["postStart", "preStop"] {
        if is_set(lifecycle, hook) {
            errs.extend(validate_handler(
                &lifecycle[hook],
                &["exec", "httpGet", "tcpSocket", "sleep"],
                &path.child("lifecycle").child(hook),
            ));
        }
    }
    errs
}

/// The liveness, readiness and startup probes of a container.
fn validate_probes(container: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let probe = &container[key];
        if probe.is_null() {
            continue;
        }
        let probe_path = path.child(key);
        errs.extend(validate_handler(
            probe,
            &["exec", "httpGet", "tcpSocket", "grpc"],
            &probe_path,
        ));
        for field in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            errs.extend(nonnegative(int_of(probe, field), &probe_path.child(field)));
        }
        let grace = probe
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64);
        if let Some(grace) = grace
            && grace <= 0
        {
            errs.push(FieldError::invalid(
                &probe_path.child("terminationGracePeriodSeconds"),
                grace,
                "must be greater than 0",
            ));
        }
        if key != "readinessProbe" && int_of(probe, "successThreshold") != 1 {
            errs.push(FieldError::invalid(
                &probe_path.child("successThreshold"),
                int_of(probe, "successThreshold"),
                "must be 1",
            ));
        }
        if key == "readinessProbe" && is_set(probe, "terminationGracePeriodSeconds") {
            errs.push(FieldError::invalid(
                &probe_path.child("terminationGracePeriodSeconds"),
                probe["terminationGracePeriodSeconds"].clone(),
                "must not be set for readinessProbes",
            ));
        }
    }
    errs
}

/// validateHandler: exactly one handler type of `kinds`.
fn validate_handler(handler: &Value, kinds: &[&str], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut count = 0;
    for kind in kinds {
        if !is_set(handler, kind) {
            continue;
        }
        if count > 0 {
            errs.push(FieldError::forbidden(
                &path.child(kind),
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        count += 1;
        errs.extend(validate_action(kind, &handler[*kind], &path.child(kind)));
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

/// The checks of one handler action.
fn validate_action(kind: &str, action: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    match kind {
        "exec" if list(action, "command").is_empty() => {
            errs.push(FieldError::required(&path.child("command"), ""));
        }
        "httpGet" => {
            if str_of(action, "path").is_empty() {
                errs.push(FieldError::required(&path.child("path"), ""));
            }
            errs.extend(validate_port_num_or_name(
                &action["port"],
                &path.child("port"),
            ));
            let scheme = str_of(action, "scheme");
            if !["HTTP", "HTTPS"].contains(&scheme) {
                errs.push(FieldError::not_supported(
                    &path.child("scheme"),
                    scheme,
                    ["HTTP", "HTTPS"],
                ));
            }
        }
        "tcpSocket" | "grpc" => {
            errs.extend(validate_port_num_or_name(
                &action["port"],
                &path.child("port"),
            ));
        }
        _ => {}
    }
    errs
}

/// ValidatePortNumOrName.
pub(crate) fn validate_port_num_or_name(port: &Value, path: &Path) -> FieldErrors {
    match port {
        Value::String(name) => invalid_each(path, name, is_valid_port_name(name)),
        other => {
            let number = other.as_i64().unwrap_or(0);
            port_num_errors(number)
                .into_iter()
                .map(|msg| FieldError::invalid(path, number, msg))
                .collect()
        }
    }
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
