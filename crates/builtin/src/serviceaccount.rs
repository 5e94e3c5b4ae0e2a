//! core/v1 ServiceAccount (kubernetes/pkg/registry/core/serviceaccount,
//! ValidateServiceAccount*).

use std::sync::Arc;

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Value, json};

use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{drop_if_empty, fields_mut, str_of, validate_core_metadata_finalizers};

const SECRETS_DESCRIPTION: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";

/// The strategy and printer columns of service accounts.
pub(crate) fn strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(ServiceAccountStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("Secrets", SECRETS_DESCRIPTION, 0),
                age_column(),
            ],
            cells: std::sync::Arc::new(cells),
        }),
    }
}

/// NAME, SECRETS (how many are listed), AGE.
fn cells(object: &Value) -> Vec<Value> {
    let count = object
        .get("secrets")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    vec![
        name_cell(object),
        Value::from(count as i64),
        age_cell(object),
    ]
}

/// The strategy of service accounts.
pub struct ServiceAccountStrategy;

/// Keeps only the name of each `secrets` reference (upstream's cleanSecretReferences) and
/// drops empty lists, as storage reads them back.
fn clean_secret_references(object: &mut Value) {
    let fields = fields_mut(object);
    if let Some(Value::Array(secrets)) = fields.get_mut("secrets") {
        for secret in secrets.iter_mut() {
            let name = str_of(secret, "name").to_string();
            *secret = if name.is_empty() {
                json!({})
            } else {
                json!({ "name": name })
            };
        }
    }
    drop_if_empty(fields, "secrets");
    drop_if_empty(fields, "imagePullSecrets");
}

impl Strategy for ServiceAccountStrategy {
    fn prepare_for_create(&self, object: &mut Value) {
        clean_secret_references(object);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        clean_secret_references(new);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        validate_core_metadata_finalizers(object)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        let mut errs = validate_core_metadata_finalizers(new);
        errs.extend(self.validate(new));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_references_keep_only_names() {
        let mut sa = json!({
            "metadata": {"name": "sa", "namespace": "ns"},
            "secrets": [{"name": "a", "namespace": "x", "uid": "u"}, {"kind": "Secret"}],
            "imagePullSecrets": [],
        });
        ServiceAccountStrategy.prepare_for_create(&mut sa);
        assert_eq!(sa["secrets"], json!([{"name": "a"}, {}]));
        assert!(sa.get("imagePullSecrets").is_none());
        let mut updated =
            json!({"metadata": {"name": "sa"}, "secrets": [{"name": "b", "uid": "u"}]});
        ServiceAccountStrategy.prepare_for_update(&mut updated, &sa);
        assert_eq!(updated["secrets"], json!([{"name": "b"}]));
    }

    #[test]
    fn validation_checks_core_finalizers() {
        let sa = json!({"metadata": {"name": "sa", "namespace": "ns", "finalizers": ["bad"]}});
        let errs: Vec<String> = ServiceAccountStrategy
            .validate(&sa)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                r#"metadata.finalizers[0]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified"#
            ]
        );
        let errs = ServiceAccountStrategy.validate_update(&sa, &sa);
        assert_eq!(errs.len(), 2);
    }

    #[test]
    fn table_cells() {
        let sa = json!({"metadata": {"name": "sa"}, "secrets": [{"name": "a"}]});
        let cells = cells(&sa);
        assert_eq!(cells[..2], [json!("sa"), json!(1)]);
        assert_eq!(cells[2], json!("<unknown>"));
        assert_eq!(
            crate::definition("", "v1", "serviceaccounts")
                .unwrap()
                .table
                .unwrap()
                .columns
                .len(),
            3
        );
    }
}
