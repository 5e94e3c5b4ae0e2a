//! core/v1 Secret (kubernetes/pkg/registry/core/secret, ValidateSecret*, and the v1
//! conversion that merges `stringData` into `data`).

use std::sync::Arc;

use base64::Engine as _;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_config_map_key;
use kapi_server::resource::Name;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Map, Value};

use crate::configmap::{MAX_DATA_SIZE, decoded_len, validate_immutable_content};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{
    drop_if_empty, fields_mut, map_of, map_value, str_at, str_of, validate_immutable,
};

/// Arbitrary user data.
pub const TYPE_OPAQUE: &str = "Opaque";
/// A service account token; needs the service account name annotation.
pub const TYPE_SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";
/// A `~/.dockercfg` file in `.dockercfg`.
pub const TYPE_DOCKERCFG: &str = "kubernetes.io/dockercfg";
/// A `~/.docker/config.json` file in `.dockerconfigjson`.
pub const TYPE_DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// Credentials for basic authentication in `username` and `password`.
pub const TYPE_BASIC_AUTH: &str = "kubernetes.io/basic-auth";
/// An SSH private key in `ssh-privatekey`.
pub const TYPE_SSH_AUTH: &str = "kubernetes.io/ssh-auth";
/// A TLS certificate and key in `tls.crt` and `tls.key`.
pub const TYPE_TLS: &str = "kubernetes.io/tls";
/// The annotation naming the service account of a token secret.
pub const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";

const TYPE_DESCRIPTION: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
const DATA_DESCRIPTION: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";

/// The strategy and printer columns of secrets.
pub(crate) fn strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(SecretStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("Type", TYPE_DESCRIPTION, 0),
                column("Data", DATA_DESCRIPTION, 0),
                age_column(),
            ],
            cells: std::sync::Arc::new(cells),
        }),
    }
}

/// NAME, TYPE, DATA (the number of keys), AGE.
fn cells(object: &Value) -> Vec<Value> {
    let count = map_of(object, "data").map_or(0, Map::len);
    vec![
        name_cell(object),
        Value::from(str_of(object, "type")),
        Value::from(count as i64),
        age_cell(object),
    ]
}

/// The strategy of secrets.
pub struct SecretStrategy;

/// What decoding a v1 Secret does: `type` defaults to Opaque, `stringData` is merged into
/// `data` (base64-encoded, overwriting) and dropped; empty `data` reads back as absent.
fn decode_defaults(object: &mut Value) {
    let fields = fields_mut(object);
    if fields
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        fields.insert("type".into(), Value::from(TYPE_OPAQUE));
    }
    if let Some(Value::Object(string_data)) = fields.remove("stringData")
        && !string_data.is_empty()
    {
        let data = fields
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        let data = fields_mut(data);
        for (key, value) in string_data {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
    drop_if_empty(fields, "data");
}

impl Strategy for SecretStrategy {
    fn default(&self, object: &mut Value) {
        decode_defaults(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        decode_defaults(object);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        decode_defaults(new);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = crate::util::validate_core_metadata_finalizers(object);
        errs.extend(validate_content(object));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = crate::util::validate_core_metadata_finalizers(new);
        errs.extend(validate_immutable(
            &Value::from(str_of(new, "type")),
            &Value::from(str_of(old, "type")),
            &Path::root("type"),
        ));
        errs.extend(validate_immutable_content(new, old, &["data"]));
        errs.extend(self.validate(new));
        errs
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        vec![("type".into(), str_of(object, "type").to_string())]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "type"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("type")])
    }
}

/// The decoded bytes of a `data` value (empty when it does not decode).
fn decoded(value: &Value) -> Vec<u8> {
    let text = value.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default()
}

/// Data keys, the total size, and the keys each well-known type requires.
fn validate_content(object: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let data = map_value(object, "data");
    let data_path = Path::root("data");
    let mut total = 0;
    for (key, value) in &data {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&data_path.key(key), key.as_str(), msg));
        }
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long(&data_path, MAX_DATA_SIZE));
    }
    let required = |key: &str| FieldError::required(&data_path.key(key), "");
    let annotation = ["metadata", "annotations", SERVICE_ACCOUNT_NAME_KEY];
    match str_of(object, "type") {
        TYPE_SERVICE_ACCOUNT_TOKEN if str_at(object, &annotation).is_empty() => {
            let path = Path::root("metadata")
                .child("annotations")
                .key(SERVICE_ACCOUNT_NAME_KEY);
            errs.push(FieldError::required(&path, ""));
        }
        TYPE_DOCKERCFG => errs.extend(validate_json_key(&data, ".dockercfg")),
        TYPE_DOCKER_CONFIG_JSON => errs.extend(validate_json_key(&data, ".dockerconfigjson")),
        // Either may be empty, but one must be there.
        TYPE_BASIC_AUTH if !data.contains_key("username") && !data.contains_key("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        TYPE_SSH_AUTH
            if data
                .get("ssh-privatekey")
                .is_none_or(|v| decoded(v).is_empty()) =>
        {
            errs.push(required("ssh-privatekey"));
        }
        TYPE_TLS => {
            for key in ["tls.crt", "tls.key"] {
                if !data.contains_key(key) {
                    errs.push(required(key));
                }
            }
        }
        _ => {}
    }
    errs
}

/// A docker config key must be present and hold a JSON object.
fn validate_json_key(data: &Map<String, Value>, key: &str) -> FieldErrors {
    let path = Path::root("data").key(key);
    let mut errs = FieldErrors::new();
    match data.get(key) {
        None => errs.push(FieldError::required(&path, "")),
        Some(value) => {
            if let Some(message) = kapi_apimachinery::gojson::unmarshal_map_error(&decoded(value)) {
                errs.push(FieldError::invalid(
                    &path,
                    "<secret contents redacted>",
                    message,
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests;
