//! PersistentVolume: its strategy (a Pending status on create), defaulting, validation of
//! the spec and its one volume source, update validation and its printer
//! (kubernetes/pkg/registry/core/persistentvolume/strategy.go, pkg/apis/core/v1/defaults.go,
//! pkg/apis/core/validation).

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::resource::{Name, Strategy, TableConvertor};
use serde_json::{Map, Value, json};

use super::{
    VOLUME_MODES, or_unset, validate_access_modes, validate_class_name, validate_non_negative,
};
use crate::printers::{age_cell, name_cell};
use crate::resources::common::{
    access_modes, age, col, default_field, enum_field, items, object_at, quantity_text, table,
    text, text_at, wide,
};
use crate::strategy::{set_status, validate_core, validate_core_update};
use crate::util::{Timestamp, format_time, str_of, validate_immutable};

const RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];

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

/// persistentvolumeStrategy (pkg/registry/core/persistentvolume/strategy.go).
pub(super) struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn default(&self, pv: &mut Value) {
        pv_defaults(pv);
    }

    fn prepare_for_create(&self, pv: &mut Value) {
        pv_on_create(pv);
        pv_defaults(pv);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        pv_defaults(new);
    }

    fn validate(&self, pv: &Value) -> FieldErrors {
        validate_core(pv, validate_pv(pv))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_pv_update(new, old))
    }

    fn selectable_fields(&self, pv: &Value) -> Vec<(Name, String)> {
        vec![("name".into(), text_at(pv, "/metadata/name").to_string())]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "name"
    }
}

/// PrepareForCreate: the status restarts as Pending, with the time of that phase.
fn pv_on_create(pv: &mut Value) {
    let now = format_time(Timestamp::now());
    set_status(
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
        crate::resources::common::require_str(source, key, path, &mut errs);
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

pub(super) fn pv_table() -> TableConvertor {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::cluster::check;
    use crate::util::{causes, expect};

    #[test]
    fn pv_defaults_validation_and_update() {
        let strategy = PersistentVolumeStrategy;
        let mut pv = json!({"metadata": {"name": "v"}, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}});
        strategy.prepare_for_create(&mut pv);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["spec"]["hostPath"]["type"], "");
        assert_eq!(pv["status"]["phase"], "Pending");
        assert!(strategy.validate(&pv).is_empty());
        check(
            &strategy,
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
            causes(&strategy.validate_update(&moved, &pv)),
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
}
