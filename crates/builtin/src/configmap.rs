//! core/v1 ConfigMap (kubernetes/pkg/registry/core/configmap, ValidateConfigMap*).

use std::sync::Arc;

use base64::Engine as _;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_config_map_key;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::Value;

use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{drop_if_empty, fields_mut, is_true, map_of, map_value};

/// The most data (values of `data` and `binaryData`, or of a secret's `data`) an object may
/// hold, in bytes.
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// The message of changes to the content of an immutable ConfigMap or Secret.
pub(crate) const IMMUTABLE_MSG: &str = "field is immutable when `immutable` is set";

const DATA_DESCRIPTION: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";

/// The strategy and printer columns of configmaps.
pub(crate) fn strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(ConfigMapStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("Data", DATA_DESCRIPTION, 0),
                age_column(),
            ],
            cells: std::sync::Arc::new(cells),
        }),
    }
}

/// NAME, DATA (the number of keys of `data` and `binaryData`), AGE.
fn cells(object: &Value) -> Vec<Value> {
    let count = |key| map_of(object, key).map_or(0, |m| m.len());
    vec![
        name_cell(object),
        Value::from((count("data") + count("binaryData")) as i64),
        age_cell(object),
    ]
}

/// The length of a base64 (`[]byte`) value once decoded; undecodable values count their
/// text, as a best effort (the server's decoding rejects them first).
pub(crate) fn decoded_len(value: &Value) -> usize {
    let text = value.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len(), |bytes| bytes.len())
}

/// The strategy of configmaps.
pub struct ConfigMapStrategy;

/// Empty `data` and `binaryData` read back as absent, as from upstream's storage.
fn normalize(object: &mut Value) {
    let fields = fields_mut(object);
    drop_if_empty(fields, "data");
    drop_if_empty(fields, "binaryData");
}

impl Strategy for ConfigMapStrategy {
    fn prepare_for_create(&self, object: &mut Value) {
        normalize(object);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        normalize(new);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = crate::util::validate_core_metadata_finalizers(object);
        errs.extend(validate_content(object));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = crate::util::validate_core_metadata_finalizers(new);
        errs.extend(validate_immutable_content(
            new,
            old,
            &["data", "binaryData"],
        ));
        errs.extend(self.validate(new));
        errs
    }
}

/// The `immutable` rule of ConfigMaps and Secrets: once `immutable` is true it stays true and
/// the `keys` may not change.
pub(crate) fn validate_immutable_content(new: &Value, old: &Value, keys: &[&str]) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !is_true(old, "immutable") {
        return errs;
    }
    if !is_true(new, "immutable") {
        errs.push(FieldError::forbidden(
            &Path::root("immutable"),
            IMMUTABLE_MSG,
        ));
    }
    for key in keys {
        if map_value(new, key) != map_value(old, key) {
            errs.push(FieldError::forbidden(&Path::root(key), IMMUTABLE_MSG));
        }
    }
    errs
}

/// Keys of `data` and `binaryData`, no key in both, at most 1 MiB in all.
fn validate_content(object: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let data = map_value(object, "data");
    let binary = map_value(object, "binaryData");
    let mut total = 0;
    let data_path = Path::root("data");
    for (key, value) in &data {
        let path = data_path.key(key);
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&path, key.as_str(), msg));
        }
        if binary.contains_key(key) {
            errs.push(FieldError::invalid(
                &path,
                key.as_str(),
                "duplicate of key present in binaryData",
            ));
        }
        total += value.as_str().map_or(0, str::len);
    }
    let binary_path = Path::root("binaryData");
    for (key, value) in &binary {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(
                &binary_path.key(key),
                key.as_str(),
                msg,
            ));
        }
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long(&Path::root(""), MAX_DATA_SIZE));
    }
    errs
}

#[cfg(test)]
mod tests;
