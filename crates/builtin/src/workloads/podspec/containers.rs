//! Validation of a pod spec's containers and init containers with upstream's messages and
//! field paths (pkg/apis/core/validation: validateContainers, validateInitContainers,
//! validateContainerCommon and their parts): ports, environment, volume mounts, resources,
//! lifecycle hooks and probes.

use std::collections::BTreeSet;

use kapi_apimachinery::Quantity;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    IS_NEGATIVE_ERROR_MSG, is_config_map_key, is_valid_port_name, name_is_dns_subdomain,
};
use serde_json::Value;

use super::volumes::{Volumes, validate_local_path};
use super::{
    dns1123_label, enum_field, inclusive_range, invalid_each, is_set, list, nonnegative,
    validate_field_ref,
};
use crate::util::{int_of, map_value, str_of};
use crate::workloads::security::validate_container_security_context;

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

/// validateContainers: the regular containers.
pub(super) fn validate_containers(
    containers: &[Value],
    volumes: &Volumes,
    path: &Path,
) -> FieldErrors {
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
pub(super) fn validate_init_containers(
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
            if Quantity::of_field(value).is_some_and(|q| q.signum() < 0) {
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
        if let (Some(r), Some(l)) = (Quantity::of_field(request), Quantity::of_field(limit)) {
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
