//! PersistentVolumeClaim: its strategy, defaulting, validation of the claim spec, update
//! validation (an immutable spec but for the volume name and the expansion of bound claims)
//! and its printer (kubernetes/pkg/registry/core/persistentvolumeclaim/strategy.go,
//! pkg/apis/core/v1/defaults.go, pkg/apis/core/validation).

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::validate_label_selector;
use kapi_apimachinery::{Format, Quantity};
use kapi_server::resource::{Name, Strategy, TableConvertor};
use serde_json::{Value, json};

use super::{VOLUME_MODES, or_unset, validate_access_modes, validate_class_name};
use crate::printers::{age_cell, name_cell};
use crate::resources::common::{
    access_modes, age, col, default_field, enum_field, items, object_at, quantity_at,
    quantity_text, table, text, text_at, wide,
};
use crate::strategy::{reset_status, validate_core, validate_core_update};
use crate::util::validate_immutable;

/// persistentvolumeclaimStrategy (pkg/registry/core/persistentvolumeclaim/strategy.go).
pub(super) struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn default(&self, pvc: &mut Value) {
        pvc_defaults(pvc);
    }

    fn prepare_for_create(&self, pvc: &mut Value) {
        reset_status(pvc);
        pvc_defaults(pvc);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        pvc_defaults(new);
    }

    fn validate(&self, pvc: &Value) -> FieldErrors {
        validate_core(pvc, validate_pvc(pvc))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_pvc_update(new, old))
    }

    fn selectable_fields(&self, pvc: &Value) -> Vec<(Name, String)> {
        vec![("name".into(), text_at(pvc, "/metadata/name").to_string())]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "name"
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
            if Quantity::of_field(value).is_none_or(|q| q.signum() <= 0) {
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

pub(super) fn pvc_table() -> TableConvertor {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::cluster::check;
    use crate::util::{Cases, causes, expect};

    #[test]
    fn pvc_defaults_and_status() {
        let strategy = PersistentVolumeClaimStrategy;
        let mut pvc = json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound"}});
        strategy.prepare_for_create(&mut pvc);
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
        let strategy = PersistentVolumeClaimStrategy;
        for (spec, want) in cases {
            check(
                &strategy,
                json!({"metadata": {"name": "c"}, "spec": spec}),
                &want,
            );
        }
    }

    #[test]
    fn pvc_spec_is_immutable_but_bound_claims_expand() {
        let strategy = PersistentVolumeClaimStrategy;
        let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let mut grown = old.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(strategy.validate_update(&grown, &old).is_empty());
        let mut shrunk = old.clone();
        shrunk["spec"]["resources"]["requests"]["storage"] = json!("500Mi");
        assert_eq!(
            causes(&strategy.validate_update(&shrunk, &old)),
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
            causes(&strategy.validate_update(&changed, &unbound)),
            expect(&[(
                "spec",
                "FieldValueForbidden",
                "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n- resources.requests.storage: \"1Gi\"\n+ resources.requests.storage: \"2Gi\""
            )])
        );
        let mut named = unbound.clone();
        named["spec"]["volumeName"] = json!("pv-1");
        assert!(strategy.validate_update(&named, &unbound).is_empty());
    }
}
