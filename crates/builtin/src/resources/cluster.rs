//! Core v1 cluster objects: Node, PersistentVolume, PersistentVolumeClaim, ResourceQuota,
//! LimitRange and ComponentStatus's printer (kubernetes/pkg/registry/core/*/strategy.go,
//! pkg/apis/core/v1/defaults.go, pkg/apis/core/validation).

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    IS_NEGATIVE_ERROR_MSG, is_qualified_name, is_valid_label_value, validate_label_selector,
};
use kapi_apimachinery::{Format, Quantity};
use kapi_server::resource::TableConvertor;
use serde_json::{Map, Value, json};

use super::common::{
    access_modes, age, col, created_at, default_field, each_item, enum_field, invalid_each, items,
    object_at, or_none, quantity, quantity_at, quantity_text, table, text, text_at, wide,
};
use super::{BASE, Rules, SelectableField};
use crate::printers::age_cell;
use crate::printers::name_cell;
use crate::util::{Timestamp, format_time, str_of, validate_immutable};

/// The hooks of the core kinds of this module.
pub(super) fn hooks(kind: &str) -> Option<(Rules, TableConvertor)> {
    Some(match kind {
        "Node" => (node_rules(), node_table()),
        "PersistentVolume" => (pv_rules(), pv_table()),
        "PersistentVolumeClaim" => (pvc_rules(), pvc_table()),
        "ResourceQuota" => (quota_rules(), quota_table()),
        "LimitRange" => (limit_range_rules(), limit_range_table()),
        "ComponentStatus" => (
            Rules {
                on_create: |_| {},
                ..BASE
            },
            component_status_table(),
        ),
        _ => return None,
    })
}

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
const RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

// ---- Node ----

const NODE_FIELDS: &[SelectableField] = &[("spec.unschedulable", |node| {
    (node["spec"]["unschedulable"].as_bool() == Some(true)).to_string()
})];

/// Nodes: everything, status included, may be set on create.
fn node_rules() -> Rules {
    Rules {
        on_create: |_| {},
        defaults: node_defaults,
        validate: validate_node,
        validate_update: validate_node_update,
        fields: NODE_FIELDS,
        ..BASE
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

fn node_table() -> TableConvertor {
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

// ---- PersistentVolume ----

/// The volume sources of a persistent volume, in upstream's validation order.
const PV_SOURCES: [&str; 22] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cinder",
    "cephfs",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
    "iscsi",
];

const PV_FIELDS: &[SelectableField] = &[("name", |pv| text_at(pv, "/metadata/name").to_string())];

fn pv_rules() -> Rules {
    Rules {
        on_create: pv_on_create,
        defaults: pv_defaults,
        validate: validate_pv,
        validate_update: validate_pv_update,
        fields: PV_FIELDS,
        ..BASE
    }
}

/// PrepareForCreate: the status restarts as Pending, with the time of that phase.
fn pv_on_create(pv: &mut Value) {
    let now = format_time(Timestamp::now());
    super::set_status(
        pv,
        json!({"phase": "Pending", "lastPhaseTransitionTime": now}),
    );
}

/// SetDefaults_PersistentVolume (and of its hostPath source).
fn pv_defaults(pv: &mut Value) {
    let spec = object_at(pv, "/spec");
    default_field(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    default_field(spec, "volumeMode", json!("Filesystem"));
    if let Some(host_path) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
        host_path.entry("type").or_insert(json!(""));
    }
    default_field(object_at(pv, "/status"), "phase", json!("Pending"));
}

/// ValidatePersistentVolume: access modes, capacity, reclaim policy, class, volume mode and
/// exactly one volume source.
fn validate_pv(pv: &Value) -> FieldErrors {
    let spec = &pv["spec"];
    let path = Path::root("spec");
    let mut errs = validate_access_modes(spec, &path, "");
    let capacity = spec["capacity"].as_object();
    if capacity.is_none_or(Map::is_empty) {
        errs.push(FieldError::required(&path.child("capacity"), ""));
    }
    for (name, value) in capacity.into_iter().flatten() {
        errs.extend(validate_non_negative(
            value,
            &path.child("capacity").key(name),
        ));
    }
    enum_field(
        spec,
        "persistentVolumeReclaimPolicy",
        &RECLAIM_POLICIES,
        false,
        &path,
        &mut errs,
    );
    errs.extend(validate_class_name(spec, &path));
    enum_field(spec, "volumeMode", &VOLUME_MODES, false, &path, &mut errs);
    let sources: Vec<&str> = PV_SOURCES
        .into_iter()
        .filter(|s| spec.get(*s).is_some_and(|v| !v.is_null()))
        .collect();
    match sources.as_slice() {
        [] => errs.push(FieldError::required(&path, "must specify a volume type")),
        [first, rest @ ..] => {
            errs.extend(validate_pv_source(first, &spec[*first], &path.child(first)));
            for other in rest {
                errs.push(FieldError::forbidden(
                    &path.child(other),
                    "may not specify more than 1 volume type",
                ));
            }
        }
    }
    errs
}

/// The required fields of the common volume sources.
fn validate_pv_source(kind: &str, source: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let required: &[&str] = match kind {
        "hostPath" | "local" => &["path"],
        "nfs" => &["server", "path"],
        "csi" => &["driver", "volumeHandle"],
        "iscsi" => &["targetPortal", "iqn"],
        _ => &[],
    };
    for key in required {
        super::common::require_str(source, key, path, &mut errs);
    }
    if kind == "nfs" {
        let nfs_path = str_of(source, "path");
        if !nfs_path.is_empty() && !nfs_path.starts_with('/') {
            errs.push(FieldError::invalid(
                &path.child("path"),
                nfs_path,
                "must be an absolute path",
            ));
        }
    }
    errs
}

/// The access modes of a PV or PVC spec: required, supported, ReadWriteOncePod alone.
fn validate_access_modes(spec: &Value, path: &Path, required_detail: &str) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let modes = items(spec, "/accessModes");
    let modes_path = path.child("accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(&modes_path, required_detail));
    }
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&modes_path, mode, ACCESS_MODES));
        }
    }
    let rwop = modes.iter().any(|m| m.as_str() == Some("ReadWriteOncePod"));
    if rwop && modes.len() > 1 {
        errs.push(FieldError::forbidden(
            &modes_path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// ValidateClassName of `storageClassName` (a DNS subdomain).
fn validate_class_name(spec: &Value, path: &Path) -> FieldErrors {
    let class = str_of(spec, "storageClassName");
    if class.is_empty() {
        return FieldErrors::new();
    }
    invalid_each(
        &path.child("storageClassName"),
        class,
        kapi_apimachinery::validation::is_dns1123_subdomain(class),
    )
}

/// ValidateResourceQuantityValue: quantities may not be negative.
fn validate_non_negative(value: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let text = value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string);
    if quantity(value).is_some_and(|q| q.signum() < 0) {
        errs.push(FieldError::invalid(path, text, IS_NEGATIVE_ERROR_MSG));
    }
    errs
}

/// ValidatePersistentVolumeUpdate: the volume source and mode are immutable, node affinity
/// once set.
fn validate_pv_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let source =
        |pv: &Value| -> Vec<Value> { PV_SOURCES.iter().map(|s| pv["spec"][*s].clone()).collect() };
    if source(new) != source(old) {
        errs.push(FieldError::forbidden(
            &Path::root("spec").child("persistentvolumesource"),
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    errs.extend(validate_immutable(
        &new["spec"]["volumeMode"],
        &old["spec"]["volumeMode"],
        &Path::root("volumeMode"),
    ));
    if !old["spec"]["nodeAffinity"].is_null()
        && new["spec"]["nodeAffinity"] != old["spec"]["nodeAffinity"]
    {
        errs.push(crate::util::immutable_rendered(
            &Path::root("nodeAffinity"),
            "core.VolumeNodeAffinity{...}".to_string(),
        ));
    }
    errs
}

fn pv_table() -> TableConvertor {
    table(
        vec![
            col(
                "Capacity",
                "capacity is the description of the persistent volume's resources and capacity.",
            ),
            col(
                "Access Modes",
                "accessModes contains all ways the volume can be mounted.",
            ),
            col(
                "Reclaim Policy",
                "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
            ),
            col(
                "Status",
                "phase indicates if a volume is available, bound to a claim, or released by a claim.",
            ),
            col(
                "Claim",
                "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
            ),
            col("StorageClass", "StorageClass of the pv"),
            col("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
            col(
                "Reason",
                "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
            ),
            age(),
            wide(
                "VolumeMode",
                "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
            ),
        ],
        pv_cells,
    )
}

/// NAME, CAPACITY, ACCESS MODES, RECLAIM POLICY, STATUS, CLAIM, STORAGECLASS,
/// VOLUMEATTRIBUTESCLASS, REASON, AGE, VOLUMEMODE.
fn pv_cells(pv: &Value) -> Vec<Value> {
    let claim_name = text_at(pv, "/spec/claimRef/name");
    let claim = if claim_name.is_empty() {
        String::new()
    } else {
        format!("{}/{claim_name}", text_at(pv, "/spec/claimRef/namespace"))
    };
    let volume_mode = match text_at(pv, "/spec/volumeMode") {
        "" => "<unset>",
        mode => mode,
    };
    vec![
        name_cell(pv),
        text(quantity_text(pv, "/spec/capacity/storage")),
        text(access_modes(items(pv, "/spec/accessModes"))),
        text(text_at(pv, "/spec/persistentVolumeReclaimPolicy")),
        text(text_at(pv, "/status/phase")),
        text(claim),
        text(text_at(pv, "/spec/storageClassName")),
        or_unset(text_at(pv, "/spec/volumeAttributesClassName")),
        text(text_at(pv, "/status/reason")),
        age_cell(pv),
        text(volume_mode),
    ]
}

/// `<unset>` for an empty optional name.
fn or_unset(value: &str) -> Value {
    text(if value.is_empty() { "<unset>" } else { value })
}

// ---- PersistentVolumeClaim ----

const PVC_FIELDS: &[SelectableField] =
    &[("name", |pvc| text_at(pvc, "/metadata/name").to_string())];

fn pvc_rules() -> Rules {
    Rules {
        defaults: pvc_defaults,
        validate: validate_pvc,
        validate_update: validate_pvc_update,
        fields: PVC_FIELDS,
        ..BASE
    }
}

/// SetDefaults_PersistentVolumeClaim: Filesystem volumes, Pending until bound.
fn pvc_defaults(pvc: &mut Value) {
    default_field(object_at(pvc, "/spec"), "volumeMode", json!("Filesystem"));
    default_field(object_at(pvc, "/status"), "phase", json!("Pending"));
}

/// ValidatePersistentVolumeClaimSpec.
fn validate_pvc(pvc: &Value) -> FieldErrors {
    let spec = &pvc["spec"];
    let path = Path::root("spec");
    let mut errs = validate_access_modes(spec, &path, "at least 1 access mode is required");
    if !spec["selector"].is_null() {
        errs.extend(validate_label_selector(
            &spec["selector"],
            &path.child("selector"),
        ));
    }
    let storage_path = path.child("resources").key("storage");
    match spec.pointer("/resources/requests/storage") {
        None | Some(Value::Null) => errs.push(FieldError::required(&storage_path, "")),
        Some(value) => {
            let text = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_string);
            if quantity(value).is_none_or(|q| q.signum() <= 0) {
                errs.push(FieldError::invalid(
                    &storage_path,
                    text,
                    "must be greater than zero",
                ));
            }
        }
    }
    errs.extend(validate_class_name(spec, &path));
    enum_field(spec, "volumeMode", &VOLUME_MODES, false, &path, &mut errs);
    errs
}

/// ValidatePersistentVolumeClaimUpdate: the spec is immutable except the volume name (set
/// once) and, for bound claims, the storage request and the volume attributes class; the
/// request may not shrink below the recorded capacity.
fn validate_pvc_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut new_spec = new["spec"].clone();
    let mut old_spec = old["spec"].clone();
    if text_at(old, "/spec/volumeName").is_empty() {
        old_spec["volumeName"] = new_spec["volumeName"].clone();
    }
    if text_at(new, "/status/phase") == "Bound" {
        for spec in [&mut new_spec, &mut old_spec] {
            if let Some(requests) = spec
                .pointer_mut("/resources/requests")
                .and_then(Value::as_object_mut)
            {
                requests.remove("storage");
            }
        }
        old_spec["volumeAttributesClassName"] = new_spec["volumeAttributesClassName"].clone();
    }
    let (new_spec, old_spec) = (strip_nulls(&new_spec), strip_nulls(&old_spec));
    if new_spec != old_spec {
        // Upstream appends a diff of the specs; kapi's is a line per changed field.
        errs.push(FieldError::forbidden(
            &Path::root("spec"),
            format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                crate::util::json_diff(&old_spec, &new_spec)
            ),
        ));
    }
    let new_size = quantity_at(new, "/spec/resources/requests/storage");
    let old_size = quantity_at(old, "/spec/resources/requests/storage");
    let status_size = quantity_at(old, "/status/capacity/storage")
        .unwrap_or_else(|| Quantity::zero(Format::DecimalSI));
    if let (Some(new_size), Some(old_size)) = (new_size, old_size)
        && new_size < old_size
        && new_size <= status_size
    {
        errs.push(FieldError::forbidden(
            &Path::root("spec")
                .child("resources")
                .child("requests")
                .child("storage"),
            "field can not be less than status.capacity",
        ));
    }
    errs.extend(validate_immutable(
        &new["spec"]["volumeMode"],
        &old["spec"]["volumeMode"],
        &Path::root("volumeMode"),
    ));
    errs
}

/// A value with `null` members removed (absent and `null` alike), recursively.
fn strip_nulls(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

fn pvc_table() -> TableConvertor {
    table(
        vec![
            col(
                "Status",
                "phase represents the current phase of PersistentVolumeClaim.",
            ),
            col(
                "Volume",
                "volumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            col(
                "Capacity",
                "capacity represents the actual resources of the underlying volume.",
            ),
            col(
                "Access Modes",
                "accessModes contains the actual access modes the volume backing the PVC has.",
            ),
            col("StorageClass", "StorageClass of the pvc"),
            col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
            age(),
            wide(
                "VolumeMode",
                "volumeMode defines what type of volume is required by the claim.",
            ),
        ],
        pvc_cells,
    )
}

/// NAME, STATUS, VOLUME, CAPACITY, ACCESS MODES, STORAGECLASS, VOLUMEATTRIBUTESCLASS, AGE,
/// VOLUMEMODE. Capacity and access modes are shown once bound.
fn pvc_cells(pvc: &Value) -> Vec<Value> {
    let phase = if pvc["metadata"]["deletionTimestamp"].is_null() {
        text_at(pvc, "/status/phase")
    } else {
        "Terminating"
    };
    let volume = text_at(pvc, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_text(pvc, "/status/capacity/storage"),
            access_modes(items(pvc, "/status/accessModes")),
        )
    };
    let class = match pvc
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
    {
        Some(class) => class.to_string(),
        None => text_at(
            pvc,
            "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
        )
        .to_string(),
    };
    let volume_mode = match text_at(pvc, "/spec/volumeMode") {
        "" => "<unset>",
        mode => mode,
    };
    vec![
        name_cell(pvc),
        text(phase),
        text(volume),
        text(capacity),
        text(modes),
        text(class),
        or_unset(text_at(pvc, "/spec/volumeAttributesClassName")),
        age_cell(pvc),
        text(volume_mode),
    ]
}

// ---- ResourceQuota ----

fn quota_rules() -> Rules {
    Rules {
        validate: validate_quota,
        ..BASE
    }
}

/// ValidateResourceQuota: hard limits are valid resource names with non-negative values.
fn validate_quota(quota: &Value) -> FieldErrors {
    let path = Path::root("spec").child("hard");
    let mut errs = FieldErrors::new();
    for (name, value) in quota["spec"]["hard"].as_object().into_iter().flatten() {
        let key_path = path.key(name);
        errs.extend(validate_quota_resource_name(name, &key_path));
        errs.extend(validate_non_negative(value, &key_path));
    }
    errs.extend(validate_quota_scopes(&quota["spec"]));
    errs.extend(validate_scope_selector(&quota["spec"]));
    errs
}

/// The scopes kapi (as upstream) knows (IsStandardResourceQuotaScope).
const QUOTA_SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Scopes that cannot be asked for together.
const CONFLICTING_SCOPES: [[&str; 2]; 2] = [
    ["BestEffort", "NotBestEffort"],
    ["Terminating", "NotTerminating"],
];

/// IsResourceQuotaScopeValidForResource: pod scopes limit only pods and their compute
/// resources; BestEffort only the pod count.
fn scope_limits(scope: &str, resource: &str) -> bool {
    const COMPUTE: [&str; 6] = [
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// How many of the standard resources of the quota's `hard` `scope` may not limit.
fn scope_fits_hard(spec: &Value, scope: &str) -> usize {
    let hard = spec["hard"].as_object().into_iter().flatten();
    hard.filter(|(resource, _)| {
        STANDARD_QUOTA_RESOURCES.contains(&resource.as_str()) && !scope_limits(scope, resource)
    })
    .count()
}

/// validateResourceQuotaScopes: known scopes, each valid for every resource the quota
/// limits, no conflicting pair.
fn validate_quota_scopes(spec: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let scopes: Vec<&str> = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let path = Path::root("spec").child("scopes");
    let invalid = |detail: &str| FieldError::invalid(&path, spec["scopes"].clone(), detail);
    for scope in &scopes {
        if !QUOTA_SCOPES.contains(scope) {
            errs.push(invalid("unsupported scope"));
        }
        for _ in 0..scope_fits_hard(spec, scope) {
            errs.push(invalid("unsupported scope applied to resource"));
        }
    }
    for pair in CONFLICTING_SCOPES {
        if pair.iter().all(|scope| scopes.contains(scope)) {
            errs.push(invalid("conflicting scopes"));
        }
    }
    errs
}

/// validateScopedResourceSelectorRequirement: known scopes valid for the quota's
/// resources, operators that suit them, values as the operator needs, no conflicting pair.
fn validate_scope_selector(spec: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(expressions) = spec["scopeSelector"]["matchExpressions"].as_array() else {
        return errs;
    };
    let path = Path::root("spec")
        .child("scopeSelector")
        .child("matchExpressions");
    let mut named = Vec::new();
    for requirement in expressions {
        let scope = requirement["scopeName"].as_str().unwrap_or_default();
        let operator = requirement["operator"].as_str().unwrap_or_default();
        let values = requirement["values"].as_array().map_or(0, Vec::len);
        if !QUOTA_SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                &path.child("scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        for _ in 0..scope_fits_hard(spec, scope) {
            let selector = spec["scopeSelector"].clone();
            errs.push(FieldError::invalid(
                &path,
                selector,
                "unsupported scope applied to resource",
            ));
        }
        if scope != "PriorityClass" && QUOTA_SCOPES.contains(&scope) && operator != "Exists" {
            errs.push(FieldError::invalid(
                &path.child("operator"),
                operator,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match operator {
            "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
                &path.child("values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if values != 0 => errs.push(FieldError::invalid(
                &path.child("values"),
                requirement["values"].clone(),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.push(FieldError::invalid(
                &path.child("operator"),
                operator,
                "not a valid selector operator",
            )),
        }
        named.push(scope);
    }
    for pair in CONFLICTING_SCOPES {
        if pair.iter().all(|scope| named.contains(scope)) {
            errs.push(FieldError::invalid(
                &path,
                spec["scopes"].clone(),
                "conflicting scopes",
            ));
        }
    }
    errs
}

/// The resources a quota may limit without a domain prefix (IsStandardQuotaResourceName).
const STANDARD_QUOTA_RESOURCES: [&str; 19] = [
    "configmaps",
    "cpu",
    "ephemeral-storage",
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "memory",
    "persistentvolumeclaims",
    "pods",
    "replicationcontrollers",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
    "requests.storage",
    "resourcequotas",
    "secrets",
    "services",
    "services.loadbalancers",
    "services.nodeports",
];

/// validateResourceQuotaResourceName: a qualified name, and a standard quota resource (or
/// huge pages) unless it has a domain prefix.
fn validate_quota_resource_name(name: &str, path: &Path) -> FieldErrors {
    let problems = is_qualified_name(name);
    if !problems.is_empty() {
        return invalid_each(path, name, problems);
    }
    let huge_pages = ["hugepages-", "requests.hugepages-", "limits.hugepages-"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    if !name.contains('/') && !huge_pages && !STANDARD_QUOTA_RESOURCES.contains(&name) {
        return FieldErrors::from(FieldError::invalid(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
    FieldErrors::new()
}

fn quota_table() -> TableConvertor {
    TableConvertor {
        columns: vec![
            crate::printers::name_column(0),
            age(),
            col(
                "Request",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            col(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
        ],
        cells: std::sync::Arc::new(quota_cells),
    }
}

/// NAME, AGE, REQUEST, LIMIT: `resource: used/hard` of the status, `limits.*` apart.
fn quota_cells(quota: &Value) -> Vec<Value> {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    let mut names: Vec<&String> = quota["status"]["hard"]
        .as_object()
        .map(|hard| hard.keys().collect())
        .unwrap_or_default();
    names.sort();
    for name in names {
        let pointer_name = name.replace('~', "~0").replace('/', "~1");
        let used = quantity_text(quota, &format!("/status/used/{pointer_name}"));
        let hard = quantity_text(quota, &format!("/status/hard/{pointer_name}"));
        let entry = format!("{name}: {used}/{hard}");
        if name.split('.').next() == Some("limits") && name.contains('.') {
            limit.push(entry);
        } else {
            request.push(entry);
        }
    }
    vec![
        name_cell(quota),
        age_cell(quota),
        text(request.join(", ")),
        text(limit.join(", ")),
    ]
}

// ---- LimitRange ----

fn limit_range_rules() -> Rules {
    Rules {
        on_create: |_| {},
        defaults: limit_range_defaults,
        validate: validate_limit_range,
        ..BASE
    }
}

/// SetDefaults_LimitRangeItem: a container's default limit is its max, its default request
/// the default limit or else the min.
fn limit_range_defaults(range: &mut Value) {
    each_item(object_at(range, "/spec"), "limits", |item| {
        if str_of(item, "type") != "Container" {
            return;
        }
        let field = |item: &Value, key: &str| item[key].as_object().cloned().unwrap_or_default();
        let mut default = field(item, "default");
        let mut request = field(item, "defaultRequest");
        for (key, value) in field(item, "max") {
            default.entry(key).or_insert(value);
        }
        for (key, value) in default.iter().chain(field(item, "min").iter()) {
            request.entry(key.clone()).or_insert(value.clone());
        }
        let fields = crate::util::fields_mut(item);
        for (key, map) in [("default", default), ("defaultRequest", request)] {
            if !map.is_empty() {
                fields.insert(key.into(), Value::Object(map));
            }
        }
    });
}

/// ValidateLimitRange, in part: item types are known and unique, Pod items have no
/// defaults, quantities are not negative.
fn validate_limit_range(range: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec").child("limits");
    let mut types = Vec::new();
    for (i, item) in items(range, "/spec/limits").iter().enumerate() {
        let item_path = path.index(i);
        let kind = str_of(item, "type");
        errs.extend(validate_limit_type(kind, &item_path.child("type")));
        if types.contains(&kind) {
            errs.push(FieldError::duplicate(&item_path.child("type"), kind));
        }
        types.push(kind);
        if kind == "Pod" {
            for key in ["default", "defaultRequest"] {
                if item[key].as_object().is_some_and(|m| !m.is_empty()) {
                    errs.push(FieldError::forbidden(
                        &item_path.child(key),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        }
        for key in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            for (name, value) in item[key].as_object().into_iter().flatten() {
                errs.extend(validate_non_negative(
                    value,
                    &item_path.child(key).key(name),
                ));
            }
        }
    }
    errs
}

/// validateLimitRangeTypeName: a qualified name, one of the standard types unless it has a
/// domain prefix.
fn validate_limit_type(kind: &str, path: &Path) -> FieldErrors {
    let problems = is_qualified_name(kind);
    if !problems.is_empty() {
        return invalid_each(path, kind, problems);
    }
    let standard = ["Container", "PersistentVolumeClaim", "Pod"];
    if !kind.contains('/') && !standard.contains(&kind) {
        return FieldErrors::from(FieldError::invalid(
            path,
            kind,
            "must be a standard limit type or fully qualified",
        ));
    }
    FieldErrors::new()
}

fn limit_range_table() -> TableConvertor {
    TableConvertor {
        columns: vec![
            crate::printers::name_column(0),
            super::common::created_at_column(),
        ],
        cells: std::sync::Arc::new(|range: &serde_json::Value| {
            vec![name_cell(range), created_at(range)]
        }),
    }
}

// ---- ComponentStatus ----

fn component_status_table() -> TableConvertor {
    TableConvertor {
        columns: vec![
            crate::printers::name_column(0),
            col("Status", "Status of the component conditions"),
            col("Message", "Message of the component conditions"),
            col("Error", "Error of the component conditions"),
        ],
        cells: std::sync::Arc::new(component_status_cells),
    }
}

/// NAME, STATUS (`Healthy`, `Unhealthy` or `Unknown`), MESSAGE, ERROR of the Healthy
/// condition.
fn component_status_cells(status: &Value) -> Vec<Value> {
    let healthy = items(status, "/conditions")
        .iter()
        .find(|c| str_of(c, "type") == "Healthy");
    let (state, message, error) = match healthy {
        Some(c) if str_of(c, "status") == "True" => {
            ("Healthy", str_of(c, "message"), str_of(c, "error"))
        }
        Some(c) => ("Unhealthy", str_of(c, "message"), str_of(c, "error")),
        None => ("Unknown", "", ""),
    };
    vec![name_cell(status), text(state), text(message), text(error)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{Cases, causes, expect};
    use kapi_server::resource::Strategy;

    fn check(rules: &Rules, object: Value, want: &[(&str, &str, &str)]) {
        assert_eq!(causes(&rules.validate(&object)), expect(want), "{object}");
    }

    #[test]
    fn quota_scopes_suit_the_resources_they_limit() {
        let rules = quota_rules();
        let quota = |spec: Value| json!({"metadata": {"name": "q"}, "spec": spec});
        check(
            &rules,
            quota(json!({"hard": {"pods": "1", "cpu": "1"}, "scopes": ["Terminating"]})),
            &[],
        );
        check(
            &rules,
            quota(
                json!({"hard": {"pods": "1", "services": "1", "count/jobs.batch": "1"},
                "scopes": ["BestEffort", "NotBestEffort", "Sometimes"]}),
            ),
            &[
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope applied to resource"#,
                ),
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope applied to resource"#,
                ),
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope"#,
                ),
                (
                    "spec.scopes",
                    "FieldValueInvalid",
                    r#"Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: conflicting scopes"#,
                ),
            ],
        );
        check(
            &rules,
            quota(
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In"},
                {"scopeName": "Terminating", "operator": "In", "values": ["x"]}]}}),
            ),
            &[
                (
                    "spec.scopeSelector.matchExpressions.values",
                    "FieldValueRequired",
                    "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                ),
                (
                    "spec.scopeSelector.matchExpressions.operator",
                    "FieldValueInvalid",
                    "Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ),
            ],
        );
    }

    #[test]
    fn pvc_defaults_and_status() {
        let rules = pvc_rules();
        let mut pvc = json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound"}});
        rules.prepare_for_create(&mut pvc);
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));
        assert!(pvc["metadata"]["generation"].is_null());
    }

    #[test]
    fn pvc_validation() {
        let cases: Cases = vec![
            (
                json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}),
                vec![],
            ),
            (
                json!({}),
                vec![
                    (
                        "spec.accessModes",
                        "FieldValueRequired",
                        "Required value: at least 1 access mode is required",
                    ),
                    (
                        "spec.resources[storage]",
                        "FieldValueRequired",
                        "Required value",
                    ),
                ],
            ),
            (
                json!({"accessModes": ["ReadWriteOncePod", "Bogus"], "resources": {"requests": {"storage": "0"}},
                       "volumeMode": "Raw", "storageClassName": "Fast_1"}),
                vec![
                    (
                        "spec.accessModes",
                        "FieldValueNotSupported",
                        r#"Unsupported value: "Bogus": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod""#,
                    ),
                    (
                        "spec.accessModes",
                        "FieldValueForbidden",
                        "Forbidden: may not use ReadWriteOncePod with other access modes",
                    ),
                    (
                        "spec.resources[storage]",
                        "FieldValueInvalid",
                        r#"Invalid value: "0": must be greater than zero"#,
                    ),
                    (
                        "spec.storageClassName",
                        "FieldValueInvalid",
                        r#"Invalid value: "Fast_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                    ),
                    (
                        "spec.volumeMode",
                        "FieldValueNotSupported",
                        r#"Unsupported value: "Raw": supported values: "Block", "Filesystem""#,
                    ),
                ],
            ),
        ];
        let rules = pvc_rules();
        for (spec, want) in cases {
            check(
                &rules,
                json!({"metadata": {"name": "c"}, "spec": spec}),
                &want,
            );
        }
    }

    #[test]
    fn pvc_spec_is_immutable_but_bound_claims_expand() {
        let rules = pvc_rules();
        let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let mut grown = old.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(rules.validate_update(&grown, &old).is_empty());
        let mut shrunk = old.clone();
        shrunk["spec"]["resources"]["requests"]["storage"] = json!("500Mi");
        assert_eq!(
            causes(&rules.validate_update(&shrunk, &old)),
            expect(&[(
                "spec.resources.requests.storage",
                "FieldValueForbidden",
                "Forbidden: field can not be less than status.capacity"
            )])
        );
        let mut unbound = old.clone();
        unbound["status"] = json!({"phase": "Pending"});
        let mut changed = unbound.clone();
        changed["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert_eq!(
            causes(&rules.validate_update(&changed, &unbound)),
            expect(&[(
                "spec",
                "FieldValueForbidden",
                "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n- resources.requests.storage: \"1Gi\"\n+ resources.requests.storage: \"2Gi\""
            )])
        );
        let mut named = unbound.clone();
        named["spec"]["volumeName"] = json!("pv-1");
        assert!(rules.validate_update(&named, &unbound).is_empty());
    }

    #[test]
    fn pv_defaults_validation_and_update() {
        let rules = pv_rules();
        let mut pv = json!({"metadata": {"name": "v"}, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}});
        rules.prepare_for_create(&mut pv);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["spec"]["hostPath"]["type"], "");
        assert_eq!(pv["status"]["phase"], "Pending");
        assert!(rules.validate(&pv).is_empty());
        check(
            &rules,
            json!({"spec": {"persistentVolumeReclaimPolicy": "Keep"}}),
            &[
                ("spec.accessModes", "FieldValueRequired", "Required value"),
                ("spec.capacity", "FieldValueRequired", "Required value"),
                (
                    "spec.persistentVolumeReclaimPolicy",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain""#,
                ),
                (
                    "spec",
                    "FieldValueRequired",
                    "Required value: must specify a volume type",
                ),
            ],
        );
        let mut moved = pv.clone();
        moved["spec"]["hostPath"]["path"] = json!("/other");
        moved["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            causes(&rules.validate_update(&moved, &pv)),
            expect(&[
                (
                    "spec.persistentvolumesource",
                    "FieldValueForbidden",
                    "Forbidden: spec.persistentvolumesource is immutable after creation"
                ),
                (
                    "volumeMode",
                    "FieldValueInvalid",
                    r#"Invalid value: "Block": field is immutable"#
                ),
            ])
        );
        let cells = pv_cells(
            &json!({"metadata": {"name": "v"}, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "ns", "name": "c"}, "storageClassName": "fast"}, "status": {"phase": "Bound"}}),
        );
        assert_eq!(
            cells[1..8],
            [
                json!("1Gi"),
                json!("RWO"),
                json!("Retain"),
                json!("Bound"),
                json!("ns/c"),
                json!("fast"),
                json!("<unset>")
            ]
        );
    }

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
        let rules = node_rules();
        assert_eq!(
            rules.selectable_fields(&node),
            vec![("spec.unschedulable", "true".to_string())]
        );
        assert_eq!(node_status(&json!({})), "Unknown");
    }

    #[test]
    fn node_validation() {
        let rules = node_rules();
        check(
            &rules,
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
            causes(&rules.validate_update(&new, &old)),
            expect(&[(
                "spec.providerID",
                "FieldValueForbidden",
                "Forbidden: node updates may not change providerID except from \"\" to valid"
            )])
        );
        let mut created = json!({"status": {"capacity": {"cpu": "4"}, "phase": "Running"}});
        rules.prepare_for_create(&mut created);
        assert_eq!(created["status"]["allocatable"], json!({"cpu": "4"}));
    }

    #[test]
    fn quota_and_limit_range() {
        let quota = json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "10", "limits.cpu": "2", "requests.cpu": "1"},
                                                                  "used": {"pods": "3"}}});
        let cells = quota_cells(&quota);
        assert_eq!(cells[2], "pods: 3/10, requests.cpu: 0/1");
        assert_eq!(cells[3], "limits.cpu: 0/2");
        check(
            &quota_rules(),
            json!({"spec": {"hard": {"pods": "-1", "gpus": "1", "count/widgets.example.com": "2"}}}),
            &[
                (
                    "spec.hard[gpus]",
                    "FieldValueInvalid",
                    r#"Invalid value: "gpus": must be a standard resource for quota"#,
                ),
                (
                    "spec.hard[pods]",
                    "FieldValueInvalid",
                    r#"Invalid value: "-1": must be greater than or equal to 0"#,
                ),
            ],
        );
        let mut range = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}]}});
        limit_range_rules().prepare_for_create(&mut range);
        assert_eq!(
            range["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"},
                   "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "1Mi"}})
        );
        check(
            &limit_range_rules(),
            json!({"spec": {"limits": [{"type": "Pod", "default": {"cpu": "1"}}, {"type": "Pod"}, {"type": "Node"}]}}),
            &[
                (
                    "spec.limits[0].default",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified when `type` is 'Pod'",
                ),
                (
                    "spec.limits[1].type",
                    "FieldValueDuplicate",
                    r#"Duplicate value: "Pod""#,
                ),
                (
                    "spec.limits[2].type",
                    "FieldValueInvalid",
                    r#"Invalid value: "Node": must be a standard limit type or fully qualified"#,
                ),
            ],
        );
        let healthy = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            component_status_cells(&healthy)[1..],
            [json!("Healthy"), json!("ok"), json!("")]
        );
    }
}
