//! storage.k8s.io/v1 StorageClass, CSIDriver, CSINode, CSIStorageCapacity,
//! VolumeAttachment and VolumeAttributesClass (kubernetes/pkg/apis/storage/v1/defaults.go,
//! pkg/apis/storage/validation, pkg/registry/storage/*/strategy.go).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_qualified_name;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{
    age, col, default_field, enum_field, invalid_each, items, object_at, or_none, table, text,
    text_at, typed,
};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{set_status, validate_core, validate_core_update};
use crate::util::{str_of, validate_immutable};

/// The strategies of the storage kinds.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "StorageClass" => (Arc::new(StorageClassStrategy), storage_class_table()),
        "CSIDriver" => (Arc::new(CsiDriverStrategy), csi_driver_table()),
        "CSINode" => (Arc::new(CsiNodeStrategy), csi_node_table()),
        "CSIStorageCapacity" => (
            Arc::new(CsiStorageCapacityStrategy),
            csi_storage_capacity_table(),
        ),
        "VolumeAttachment" => (
            Arc::new(VolumeAttachmentStrategy),
            volume_attachment_table(),
        ),
        "VolumeAttributesClass" => (
            Arc::new(VolumeAttributesClassStrategy),
            attributes_class_table(),
        ),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// An error of a root field (upstream names top-level fields without a parent).
fn rename_root(mut err: FieldError, field: &str) -> FieldError {
    err.field = field.to_string();
    err
}

// ---- StorageClass ----

/// storageClassStrategy (pkg/registry/storage/storageclass/strategy.go).
struct StorageClassStrategy;

impl Strategy for StorageClassStrategy {
    fn default(&self, class: &mut Value) {
        storage_class_defaults(class);
    }

    fn prepare_for_create(&self, class: &mut Value) {
        storage_class_defaults(class);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        storage_class_defaults(new);
    }

    fn validate(&self, class: &Value) -> FieldErrors {
        validate_core(class, validate_storage_class(class))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_storage_class_update(new, old))
    }
}

/// SetDefaults_StorageClass: volumes are deleted and bound immediately.
fn storage_class_defaults(class: &mut Value) {
    let fields = crate::util::fields_mut(class);
    default_field(fields, "reclaimPolicy", json!("Delete"));
    default_field(fields, "volumeBindingMode", json!("Immediate"));
}

/// ValidateStorageClass: provisioner, parameters, reclaim policy, binding mode.
fn validate_storage_class(class: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let provisioner = str_of(class, "provisioner");
    let path = Path::root("provisioner");
    if provisioner.is_empty() {
        errs.push(FieldError::required(&path, ""));
    } else {
        let lower = provisioner.to_lowercase();
        errs.extend(invalid_each(&path, &lower, is_qualified_name(&lower)));
    }
    let parameters = class["parameters"].as_object();
    if let Some(parameters) = parameters {
        if parameters.len() > 512 {
            errs.push(FieldError::too_many(
                &Path::root("parameters"),
                Some(parameters.len()),
                512,
            ));
        }
        let size: usize = parameters
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum();
        if size > 256 * 1024 {
            errs.push(FieldError::too_long(&Path::root("parameters"), 256 * 1024));
        }
    }
    let root = Path::root("");
    let mut enums = FieldErrors::new();
    enum_field(
        class,
        "reclaimPolicy",
        &["Delete", "Retain"],
        false,
        &root,
        &mut enums,
    );
    enum_field(
        class,
        "volumeBindingMode",
        &["Immediate", "WaitForFirstConsumer"],
        true,
        &root,
        &mut enums,
    );
    errs.extend(enums.into_iter().map(|e| {
        let field = e.field.trim_start_matches('.').to_string();
        rename_root(e, &field)
    }));
    errs
}

/// ValidateStorageClassUpdate: parameters, provisioner, reclaim policy and binding mode
/// are fixed.
fn validate_storage_class_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let params = |class: &Value| class["parameters"].as_object().cloned().unwrap_or_default();
    if params(new) != params(old) {
        errs.push(FieldError::forbidden(
            &Path::root("parameters"),
            "updates to parameters are forbidden.",
        ));
    }
    if str_of(new, "provisioner") != str_of(old, "provisioner") {
        errs.push(FieldError::forbidden(
            &Path::root("provisioner"),
            "updates to provisioner are forbidden.",
        ));
    }
    if str_of(new, "reclaimPolicy") != str_of(old, "reclaimPolicy") {
        errs.push(FieldError::forbidden(
            &Path::root("reclaimPolicy"),
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    errs.extend(validate_immutable(
        &new["volumeBindingMode"],
        &old["volumeBindingMode"],
        &Path::root("volumeBindingMode"),
    ));
    errs
}

fn storage_class_table() -> TableConvertor {
    table(
        vec![
            col(
                "Provisioner",
                "provisioner indicates the type of the provisioner.",
            ),
            col(
                "ReclaimPolicy",
                "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
            ),
            col(
                "VolumeBindingMode",
                "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
            ),
            col(
                "AllowVolumeExpansion",
                "allowVolumeExpansion shows whether the storage class allow volume expand.",
            ),
            age(),
        ],
        storage_class_cells,
    )
}

/// NAME (`(default)` for the default class), PROVISIONER, RECLAIMPOLICY,
/// VOLUMEBINDINGMODE, ALLOWVOLUMEEXPANSION, AGE.
fn storage_class_cells(class: &Value) -> Vec<Value> {
    let annotation = |key: &str| text_at(class, &format!("/metadata/annotations/{key}"));
    let is_default = annotation("storageclass.kubernetes.io~1is-default-class") == "true"
        || annotation("storageclass.beta.kubernetes.io~1is-default-class") == "true";
    let mut name = text_at(class, "/metadata/name").to_string();
    if is_default {
        name.push_str(" (default)");
    }
    let or = |key: &str, fallback: &str| match str_of(class, key) {
        "" => fallback.to_string(),
        value => value.to_string(),
    };
    vec![
        text(name),
        text(str_of(class, "provisioner")),
        text(or("reclaimPolicy", "Delete")),
        text(or("volumeBindingMode", "Immediate")),
        Value::Bool(class["allowVolumeExpansion"].as_bool() == Some(true)),
        age_cell(class),
    ]
}

// ---- CSIDriver ----

/// csiDriverStrategy (pkg/registry/storage/csidriver/strategy.go).
struct CsiDriverStrategy;

impl Strategy for CsiDriverStrategy {
    fn default(&self, driver: &mut Value) {
        csi_driver_defaults(driver);
    }

    fn prepare_for_create(&self, driver: &mut Value) {
        csi_driver_defaults(driver);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        csi_driver_defaults(new);
    }

    fn validate(&self, driver: &Value) -> FieldErrors {
        validate_core(driver, validate_csi_driver(driver))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_csi_driver_update(new, old))
    }
}

/// SetDefaults_CSIDriver.
fn csi_driver_defaults(driver: &mut Value) {
    let spec = object_at(driver, "/spec");
    for (key, value) in [
        ("attachRequired", json!(true)),
        ("podInfoOnMount", json!(false)),
        ("storageCapacity", json!(false)),
        ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
        ("requiresRepublish", json!(false)),
        ("seLinuxMount", json!(false)),
    ] {
        default_field(spec, key, value);
    }
    if spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
}

/// ValidateCSIDriver: lifecycle modes and the fsGroup policy are known ones.
fn validate_csi_driver(driver: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec");
    enum_field(
        &driver["spec"],
        "fsGroupPolicy",
        &["File", "None", "ReadWriteOnceWithFSType"],
        false,
        &path,
        &mut errs,
    );
    for (i, mode) in items(driver, "/spec/volumeLifecycleModes")
        .iter()
        .enumerate()
    {
        let mode = mode.as_str().unwrap_or("");
        if !matches!(mode, "Persistent" | "Ephemeral") {
            errs.push(FieldError::not_supported(
                &path.child("volumeLifecycleModes").index(i),
                mode,
                ["Ephemeral", "Persistent"],
            ));
        }
    }
    errs
}

/// ValidateCSIDriverUpdate, in part: whether the driver needs attaching is fixed.
fn validate_csi_driver_update(new: &Value, old: &Value) -> FieldErrors {
    validate_immutable(
        &new["spec"]["attachRequired"],
        &old["spec"]["attachRequired"],
        &Path::root("spec").child("attachRequired"),
    )
}

fn csi_driver_table() -> TableConvertor {
    table(
        vec![
            typed(
                "AttachRequired",
                "boolean",
                "attachRequired indicates this CSI volume driver requires an attach operation",
            ),
            typed(
                "PodInfoOnMount",
                "boolean",
                "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations",
            ),
            typed(
                "StorageCapacity",
                "boolean",
                "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity",
            ),
            col(
                "TokenRequests",
                "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication",
            ),
            typed(
                "RequiresRepublish",
                "boolean",
                "requiresRepublish indicates the CSI driver wants NodePublishVolume being periodically called to reflect any possible change in the mounted volume",
            ),
            col(
                "Modes",
                "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports",
            ),
            age(),
        ],
        csi_driver_cells,
    )
}

/// NAME, ATTACHREQUIRED, PODINFOONMOUNT, STORAGECAPACITY, TOKENREQUESTS,
/// REQUIRESREPUBLISH, MODES, AGE.
fn csi_driver_cells(driver: &Value) -> Vec<Value> {
    let spec = &driver["spec"];
    let flag = |key: &str, fallback: bool| Value::Bool(spec[key].as_bool().unwrap_or(fallback));
    let audiences: Vec<&str> = items(spec, "/tokenRequests")
        .iter()
        .map(|t| str_of(t, "audience"))
        .collect();
    let tokens = if audiences.is_empty() {
        "<unset>".to_string()
    } else {
        audiences.join(",")
    };
    let modes: Vec<&str> = items(spec, "/volumeLifecycleModes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    vec![
        name_cell(driver),
        flag("attachRequired", true),
        flag("podInfoOnMount", false),
        flag("storageCapacity", false),
        text(tokens),
        flag("requiresRepublish", false),
        or_none(modes.join(",")),
        age_cell(driver),
    ]
}

// ---- CSINode ----

/// csiNodeStrategy (pkg/registry/storage/csinode/strategy.go).
struct CsiNodeStrategy;

impl Strategy for CsiNodeStrategy {
    fn validate(&self, node: &Value) -> FieldErrors {
        validate_core(node, validate_csi_node(node))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// ValidateCSINode: every driver has a name and a node ID, drivers are unique.
fn validate_csi_node(node: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec").child("drivers");
    let mut seen = Vec::new();
    for (i, driver) in items(node, "/spec/drivers").iter().enumerate() {
        let driver_path = path.index(i);
        let name = str_of(driver, "name");
        super::common::require_str(driver, "name", &driver_path, &mut errs);
        super::common::require_str(driver, "nodeID", &driver_path, &mut errs);
        if !name.is_empty() && seen.contains(&name) {
            errs.push(FieldError::duplicate(&driver_path.child("name"), name));
        }
        seen.push(name);
    }
    errs
}

/// NAME, DRIVERS (how many), AGE.
fn csi_node_table() -> TableConvertor {
    table(
        vec![
            typed(
                "Drivers",
                "integer",
                "Drivers indicates the number of CSI drivers registered on the node",
            ),
            age(),
        ],
        |node| {
            vec![
                name_cell(node),
                Value::from(items(node, "/spec/drivers").len()),
                age_cell(node),
            ]
        },
    )
}

// ---- CSIStorageCapacity ----

/// csiStorageCapacityStrategy (pkg/registry/storage/csistoragecapacity/strategy.go).
struct CsiStorageCapacityStrategy;

impl Strategy for CsiStorageCapacityStrategy {
    fn validate(&self, capacity: &Value) -> FieldErrors {
        validate_core(capacity, validate_csi_storage_capacity(capacity))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// ValidateCSIStorageCapacity, in part: the storage class is named.
fn validate_csi_storage_capacity(capacity: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    super::common::require_str(capacity, "storageClassName", &Path::root(""), &mut errs);
    errs.into_iter()
        .map(|e| rename_root(e, "storageClassName"))
        .collect()
}

/// NAME, STORAGECLASSNAME, CAPACITY (`<unset>` when not reported).
fn csi_storage_capacity_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            crate::printers::name_column(0),
            col(
                "StorageClassName",
                "storageClassName represents the name of the StorageClass that the reported capacity applies to.",
            ),
            col(
                "Capacity",
                "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.",
            ),
        ],
        cells: Arc::new(|capacity: &Value| {
            let shown = match capacity.get("capacity").and_then(Value::as_str) {
                Some(value) => value.to_string(),
                None => "<unset>".to_string(),
            };
            vec![
                name_cell(capacity),
                text(str_of(capacity, "storageClassName")),
                text(shown),
            ]
        }),
    }
}

// ---- VolumeAttachment ----

/// volumeAttachmentStrategy (pkg/registry/storage/volumeattachment/strategy.go): the
/// attachment starts detached.
struct VolumeAttachmentStrategy;

impl Strategy for VolumeAttachmentStrategy {
    fn prepare_for_create(&self, attachment: &mut Value) {
        set_status(attachment, json!({"attached": false}));
    }

    fn validate(&self, attachment: &Value) -> FieldErrors {
        validate_core(attachment, validate_volume_attachment(attachment))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_volume_attachment_update(new, old))
    }
}

/// ValidateVolumeAttachment: attacher, node and exactly one source.
fn validate_volume_attachment(attachment: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec");
    let spec = &attachment["spec"];
    super::common::require_str(spec, "attacher", &path, &mut errs);
    super::common::require_str(spec, "nodeName", &path, &mut errs);
    let source = &spec["source"];
    let named = !str_of(source, "persistentVolumeName").is_empty();
    let inline = !source["inlineVolumeSpec"].is_null();
    if named == inline {
        errs.push(FieldError::required(
            &path.child("source"),
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        ));
    }
    errs
}

/// ValidateVolumeAttachmentUpdate: the spec is immutable.
fn validate_volume_attachment_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if new["spec"] != old["spec"] {
        errs.push(crate::util::immutable_rendered(
            &Path::root("spec"),
            "storage.VolumeAttachmentSpec{...}".to_string(),
        ));
    }
    errs
}

fn volume_attachment_table() -> TableConvertor {
    table(
        vec![
            kapi_server::resource::PrinterColumn {
                format: "name".into(),
                ..col(
                    "Attacher",
                    "Attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
                )
            },
            col("PV", "Name of the persistent volume to attach."),
            col("Node", "The node that the volume should be attached to."),
            typed(
                "Attached",
                "boolean",
                "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
            ),
            age(),
        ],
        |attachment| {
            vec![
                name_cell(attachment),
                text(text_at(attachment, "/spec/attacher")),
                text(text_at(attachment, "/spec/source/persistentVolumeName")),
                text(text_at(attachment, "/spec/nodeName")),
                Value::Bool(attachment["status"]["attached"].as_bool() == Some(true)),
                age_cell(attachment),
            ]
        },
    )
}

// ---- VolumeAttributesClass ----

/// volumeAttributesClassStrategy (pkg/registry/storage/volumeattributesclass/strategy.go).
struct VolumeAttributesClassStrategy;

impl Strategy for VolumeAttributesClassStrategy {
    fn validate(&self, class: &Value) -> FieldErrors {
        validate_core(class, validate_attributes_class(class))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_attributes_class_update(new, old))
    }
}

/// ValidateVolumeAttributesClass: a driver name and at most 512 parameters.
fn validate_attributes_class(class: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if str_of(class, "driverName").is_empty() {
        errs.push(FieldError::required(&Path::root("driverName"), ""));
    }
    let count = class["parameters"].as_object().map_or(0, |p| p.len());
    if count > 512 {
        errs.push(FieldError::too_many(
            &Path::root("parameters"),
            Some(count),
            512,
        ));
    }
    errs
}

/// ValidateVolumeAttributesClassUpdate: the driver and the parameters are fixed.
fn validate_attributes_class_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = validate_immutable(
        &new["driverName"],
        &old["driverName"],
        &Path::root("driverName"),
    );
    if new["parameters"] != old["parameters"] {
        errs.push(FieldError::forbidden(
            &Path::root("parameters"),
            "updates to parameters are forbidden.",
        ));
    }
    errs
}

/// NAME, DRIVERNAME, AGE.
fn attributes_class_table() -> TableConvertor {
    table(
        vec![col("DriverName", "Name of the CSI driver"), age()],
        |class| {
            vec![
                name_cell(class),
                text(str_of(class, "driverName")),
                age_cell(class),
            ]
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};

    fn strategy(kind: &str) -> Arc<dyn Strategy> {
        strategies(kind).unwrap().strategy
    }

    #[test]
    fn storage_class_defaults_validation_and_update() {
        let strategy = strategy("StorageClass");
        let mut class = json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                               "provisioner": "example.com/fast", "parameters": {"type": "ssd"}});
        strategy.prepare_for_create(&mut class);
        assert_eq!(class["reclaimPolicy"], "Delete");
        assert_eq!(class["volumeBindingMode"], "Immediate");
        assert!(strategy.validate(&class).is_empty());
        assert_eq!(
            storage_class_cells(&class)[..5],
            [
                json!("fast (default)"),
                json!("example.com/fast"),
                json!("Delete"),
                json!("Immediate"),
                json!(false)
            ]
        );
        let bad = json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"});
        assert_eq!(
            causes(&strategy.validate(&bad)),
            expect(&[
                ("provisioner", "FieldValueRequired", "Required value"),
                (
                    "reclaimPolicy",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Recycle": supported values: "Delete", "Retain""#
                ),
                (
                    "volumeBindingMode",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer""#
                ),
            ])
        );
        let mut changed = class.clone();
        changed["parameters"] = json!({"type": "hdd"});
        changed["provisioner"] = json!("example.com/slow");
        changed["volumeBindingMode"] = json!("WaitForFirstConsumer");
        assert_eq!(
            causes(&strategy.validate_update(&changed, &class)),
            expect(&[
                (
                    "parameters",
                    "FieldValueForbidden",
                    "Forbidden: updates to parameters are forbidden."
                ),
                (
                    "provisioner",
                    "FieldValueForbidden",
                    "Forbidden: updates to provisioner are forbidden."
                ),
                (
                    "volumeBindingMode",
                    "FieldValueInvalid",
                    r#"Invalid value: "WaitForFirstConsumer": field is immutable"#
                ),
            ])
        );
    }

    #[test]
    fn csi_kinds() {
        let strategy = strategy("CSIDriver");
        let mut driver = json!({"metadata": {"name": "csi.example.com"}, "spec": {}});
        strategy.prepare_for_create(&mut driver);
        assert_eq!(driver["spec"]["attachRequired"], true);
        assert_eq!(
            driver["spec"]["volumeLifecycleModes"],
            json!(["Persistent"])
        );
        assert_eq!(
            csi_driver_cells(&driver)[4..7],
            [json!("<unset>"), json!(false), json!("Persistent")]
        );
        let node = json!({"spec": {"drivers": [{"name": "a", "nodeID": "n"}, {"name": "a"}]}});
        assert_eq!(
            causes(
                &super::strategies("CSINode")
                    .unwrap()
                    .strategy
                    .validate(&node)
            ),
            expect(&[
                (
                    "spec.drivers[1].nodeID",
                    "FieldValueRequired",
                    "Required value"
                ),
                (
                    "spec.drivers[1].name",
                    "FieldValueDuplicate",
                    r#"Duplicate value: "a""#
                ),
            ])
        );
        let attachment = json!({"spec": {"attacher": "a", "source": {}}});
        assert_eq!(
            causes(
                &super::strategies("VolumeAttachment")
                    .unwrap()
                    .strategy
                    .validate(&attachment)
            ),
            expect(&[
                ("spec.nodeName", "FieldValueRequired", "Required value"),
                (
                    "spec.source",
                    "FieldValueRequired",
                    "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
                ),
            ])
        );
    }
}
