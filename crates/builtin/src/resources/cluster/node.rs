//! Node: its strategy (everything, status included, may be set on create), defaulting of the
//! allocatable resources, validation of taints, pod CIDRs and provider ID, and its printer
//! (kubernetes/pkg/registry/core/node/strategy.go, pkg/apis/core/validation).

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{is_qualified_name, is_valid_label_value};
use kapi_server::resource::{Name, Strategy, TableConvertor};
use serde_json::{Value, json};

use crate::printers::{age_cell, name_cell};
use crate::resources::common::{
    age, col, enum_field, invalid_each, items, object_at, or_none, table, text, text_at, wide,
};
use crate::strategy::{validate_core, validate_core_update};
use crate::util::str_of;

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// nodeStrategy (pkg/registry/core/node/strategy.go): everything, status included, may be
/// set on create.
pub(super) struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn default(&self, node: &mut Value) {
        node_defaults(node);
    }

    fn prepare_for_create(&self, node: &mut Value) {
        node_defaults(node);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        node_defaults(new);
    }

    fn validate(&self, node: &Value) -> FieldErrors {
        validate_core(node, validate_node(node))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_node_update(new, old))
    }

    fn selectable_fields(&self, node: &Value) -> Vec<(Name, String)> {
        let unschedulable = node["spec"]["unschedulable"].as_bool() == Some(true);
        vec![("spec.unschedulable".into(), unschedulable.to_string())]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "spec.unschedulable"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("spec")])
    }
}

/// SetDefaults_NodeStatus: allocatable defaults to capacity.
fn node_defaults(node: &mut Value) {
    if node["status"]["allocatable"].is_null() && node["status"]["capacity"].is_object() {
        let capacity = node["status"]["capacity"].clone();
        object_at(node, "/status").insert("allocatable".into(), capacity);
    }
}

/// ValidateNode: the taints and pod CIDRs of the spec.
fn validate_node(node: &Value) -> FieldErrors {
    let spec = Path::root("spec");
    let mut errs = validate_taints(items(node, "/spec/taints"), &spec.child("taints"));
    let cidrs = items(node, "/spec/podCIDRs");
    if cidrs.len() > 2 {
        errs.push(FieldError::invalid(
            &spec.child("podCIDRs"),
            json!(cidrs).to_string(),
            "may specify no more than one CIDR for each IP family",
        ));
    }
    errs
}

/// validateNodeTaints: key, value, effect, and unique key/effect pairs.
fn validate_taints(taints: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut seen = Vec::new();
    for (i, taint) in taints.iter().enumerate() {
        let path = path.index(i);
        let key = str_of(taint, "key");
        errs.extend(invalid_each(
            &path.child("key"),
            key,
            is_qualified_name(key),
        ));
        let value = str_of(taint, "value");
        errs.extend(invalid_each(
            &path.child("value"),
            value,
            is_valid_label_value(value),
        ));
        enum_field(taint, "effect", &TAINT_EFFECTS, true, &path, &mut errs);
        let pair = (key, str_of(taint, "effect"));
        if seen.contains(&pair) {
            errs.push(FieldError {
                error_type: ErrorType::Duplicate,
                field: path.to_string(),
                // The internal Taint's JSON (Go field names).
                bad_value: Some(format!(
                    r#"{{"Key":{},"Value":{},"Effect":{},"TimeAdded":null}}"#,
                    Value::from(key),
                    Value::from(value),
                    Value::from(pair.1)
                )),
                detail: "taints must be unique by key and effect pair".to_string(),
            });
        }
        seen.push(pair);
    }
    errs
}

/// ValidateNodeUpdate: podCIDRs and providerID may only be set once.
fn validate_node_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let old_cidrs = items(old, "/spec/podCIDRs");
    if !old_cidrs.is_empty() && items(new, "/spec/podCIDRs") != old_cidrs {
        errs.push(FieldError::forbidden(
            &Path::root("spec").child("podCIDRs"),
            "node updates may not change podCIDR except from \"\" to valid",
        ));
    }
    let old_provider = text_at(old, "/spec/providerID");
    if !old_provider.is_empty() && text_at(new, "/spec/providerID") != old_provider {
        errs.push(FieldError::forbidden(
            &Path::root("spec").child("providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    errs
}

pub(super) fn node_table() -> TableConvertor {
    table(
        vec![
            col("Status", "The status of the node"),
            col("Roles", "The roles of the node"),
            age(),
            col("Version", "Kubelet Version reported by the node."),
            wide("Internal-IP", "List of addresses reachable to the node."),
            wide("External-IP", "List of addresses reachable to the node."),
            wide(
                "OS-Image",
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
            ),
            wide(
                "Kernel-Version",
                "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
            ),
            wide(
                "Container-Runtime",
                "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
            ),
        ],
        node_cells,
    )
}

/// NAME, STATUS, ROLES, AGE, VERSION, INTERNAL-IP, EXTERNAL-IP, OS-IMAGE, KERNEL-VERSION,
/// CONTAINER-RUNTIME.
fn node_cells(node: &Value) -> Vec<Value> {
    let info = |key: &str| {
        let value = text_at(node, &format!("/status/nodeInfo/{key}"));
        text(if value.is_empty() { "<unknown>" } else { value })
    };
    let address = |kind: &str| {
        let found = items(node, "/status/addresses")
            .iter()
            .find(|a| str_of(a, "type") == kind);
        or_none(found.map_or("", |a| str_of(a, "address")))
    };
    vec![
        name_cell(node),
        text(node_status(node)),
        or_none(node_roles(node).join(",")),
        age_cell(node),
        text(text_at(node, "/status/nodeInfo/kubeletVersion")),
        address("InternalIP"),
        address("ExternalIP"),
        info("osImage"),
        info("kernelVersion"),
        info("containerRuntimeVersion"),
    ]
}

/// `Ready`, `NotReady` or `Unknown`, and `SchedulingDisabled` for cordoned nodes.
fn node_status(node: &Value) -> String {
    let mut status = Vec::new();
    let ready = items(node, "/status/conditions")
        .iter()
        .find(|c| str_of(c, "type") == "Ready");
    match ready {
        Some(c) if str_of(c, "status") == "True" => status.push("Ready"),
        Some(_) => status.push("NotReady"),
        None => status.push("Unknown"),
    }
    if node["spec"]["unschedulable"].as_bool() == Some(true) {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

/// The roles of `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels, sorted.
fn node_roles(node: &Value) -> Vec<String> {
    let mut roles = Vec::new();
    if let Some(labels) = node["metadata"]["labels"].as_object() {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role.to_string());
                }
            } else if key == "kubernetes.io/role" {
                let role = value.as_str().unwrap_or("");
                if !role.is_empty() {
                    roles.push(role.to_string());
                }
            }
        }
    }
    roles.sort();
    roles.dedup();
    roles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::cluster::check;
    use crate::util::{causes, expect};

    #[test]
    fn node_printer_and_fields() {
        let node = json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "nodeInfo": {"kubeletVersion": "v1.35.0"},
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}});
        let cells = node_cells(&node);
        assert_eq!(cells[1], "NotReady,SchedulingDisabled");
        assert_eq!(cells[2], "control-plane,master");
        assert_eq!(cells[4], "v1.35.0");
        assert_eq!(cells[5], "10.0.0.1");
        assert_eq!(cells[6], "<none>");
        assert_eq!(cells[7], "<unknown>");
        let strategy = NodeStrategy;
        assert_eq!(
            crate::tests::pairs(&strategy.selectable_fields(&node)),
            vec![("spec.unschedulable", "true".to_string())]
        );
        assert_eq!(node_status(&json!({})), "Unknown");
    }

    #[test]
    fn node_validation() {
        let strategy = NodeStrategy;
        check(
            &strategy,
            json!({"spec": {"taints": [{"key": "a", "effect": "Never"}, {"key": "b"}]}}),
            &[
                (
                    "spec.taints[0].effect",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#,
                ),
                (
                    "spec.taints[1].effect",
                    "FieldValueRequired",
                    "Required value",
                ),
            ],
        );
        let old = json!({"spec": {"providerID": "aws://1"}});
        let new = json!({"spec": {"providerID": "aws://2"}});
        assert_eq!(
            causes(&strategy.validate_update(&new, &old)),
            expect(&[(
                "spec.providerID",
                "FieldValueForbidden",
                "Forbidden: node updates may not change providerID except from \"\" to valid"
            )])
        );
        let mut created = json!({"status": {"capacity": {"cpu": "4"}, "phase": "Running"}});
        strategy.prepare_for_create(&mut created);
        assert_eq!(created["status"]["allocatable"], json!({"cpu": "4"}));
    }
}
