//! Validation of a pod spec's volumes with upstream's messages and field paths
//! (pkg/apis/core/validation: ValidateVolumes, validateVolumeSource and the checks of the
//! common volume sources).

use std::collections::BTreeMap;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use super::{dns1123_label, is_set, list, validate_field_ref};
use crate::util::str_of;
use crate::workloads::defaults::volume_sources;

/// The file mode message of volume sources.
const FILE_MODE_ERROR_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The fieldPaths a downwardAPI volume file's fieldRef may name.
const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// The valid volumes by name and the source field each uses.
pub(super) type Volumes = BTreeMap<String, &'static str>;

/// ValidateVolumes: each volume's source and name; returns the valid volumes.
pub(super) fn validate_volumes(volumes: &[Value], path: &Path) -> (Volumes, FieldErrors) {
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
pub(super) fn validate_local_path(value: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if value.starts_with('/') {
        errs.push(FieldError::invalid(path, value, "must be a relative path"));
    }
    if value.split(['/', '\\']).any(|part| part == "..") {
        errs.push(FieldError::invalid(path, value, "must not contain '..'"));
    }
    errs
}
