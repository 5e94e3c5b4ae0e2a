//! coordination.k8s.io/v1 Lease (kubernetes/pkg/registry/coordination/lease,
//! pkg/apis/coordination/validation).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_qualified_name;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::Value;

use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{child_mut, normalize_time, str_at};

/// The coordinated leader election strategies upstream knows.
const LEASE_STRATEGIES: [&str; 1] = ["OldestEmulationVersion"];

const HOLDER_DESCRIPTION: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";

/// The strategy and printer columns of leases.
pub(crate) fn strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(LeaseStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("Holder", HOLDER_DESCRIPTION, 0),
                age_column(),
            ],
            cells: std::sync::Arc::new(cells),
        }),
    }
}

/// NAME, HOLDER, AGE.
fn cells(object: &Value) -> Vec<Value> {
    vec![
        name_cell(object),
        Value::from(str_at(object, &["spec", "holderIdentity"])),
        age_cell(object),
    ]
}

/// The strategy of leases.
pub struct LeaseStrategy;

/// `spec` as a typed Lease writes it: always present, unset pointers omitted, times in
/// MicroTime's form.
fn normalize(object: &mut Value) {
    let mut spec = Value::Object(std::mem::take(child_mut(object, "spec")));
    for key in ["acquireTime", "renewTime"] {
        if spec.get(key).is_some() {
            normalize_time(&mut spec, key, true);
        }
    }
    let mut spec = match spec {
        Value::Object(map) => map,
        _ => unreachable!("an object"),
    };
    spec.retain(|_, value| !value.is_null());
    *child_mut(object, "spec") = spec;
}

impl Strategy for LeaseStrategy {
    /// The CoordinatedLeaderElection feature (off by default) owns `strategy` and
    /// `preferredHolder`; without it they are dropped.
    fn prepare_for_create(&self, object: &mut Value) {
        let spec = child_mut(object, "spec");
        spec.remove("strategy");
        spec.remove("preferredHolder");
        normalize(object);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let spec = child_mut(new, "spec");
        for key in ["strategy", "preferredHolder"] {
            if old["spec"][key].is_null() {
                spec.remove(key);
            }
        }
        normalize(new);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        validate_spec(&object["spec"], &Path::root("spec"))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        self.validate(new)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

/// Upstream's ValidateLeaseSpec.
fn validate_spec(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(duration) = spec.get("leaseDurationSeconds").and_then(Value::as_i64)
        && duration <= 0
    {
        errs.push(FieldError::invalid(
            &path.child("leaseDurationSeconds"),
            duration,
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = spec.get("leaseTransitions").and_then(Value::as_i64)
        && transitions < 0
    {
        errs.push(FieldError::invalid(
            &path.child("leaseTransitions"),
            transitions,
            "must be greater than or equal to 0",
        ));
    }
    let strategy = spec.get("strategy").and_then(Value::as_str);
    if let Some(strategy) = strategy {
        // Upstream names the field twice here.
        let strategy_path = path.child("strategy").child("strategy");
        if strategy.contains('/') {
            for msg in is_qualified_name(strategy) {
                errs.push(FieldError::invalid(&strategy_path, strategy, msg));
            }
        } else if !LEASE_STRATEGIES.contains(&strategy) {
            errs.push(FieldError::not_supported(
                &strategy_path,
                strategy,
                LEASE_STRATEGIES,
            ));
        }
    }
    let preferred = spec
        .get("preferredHolder")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !preferred.is_empty() && strategy.unwrap_or("").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::util::Cases;

    fn messages(errs: &FieldErrors) -> Vec<(String, &'static str, String)> {
        errs.iter()
            .map(|e| (e.field.clone(), e.error_type.as_str(), e.body()))
            .collect()
    }

    #[test]
    fn spec_validation() {
        let cases: Cases = vec![
            (
                json!({"holderIdentity": "a", "leaseDurationSeconds": 10, "leaseTransitions": 0}),
                vec![],
            ),
            (
                json!({"leaseDurationSeconds": 0}),
                vec![(
                    "spec.leaseDurationSeconds",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be greater than 0",
                )],
            ),
            (
                json!({"leaseDurationSeconds": -3, "leaseTransitions": -1}),
                vec![
                    (
                        "spec.leaseDurationSeconds",
                        "FieldValueInvalid",
                        "Invalid value: -3: must be greater than 0",
                    ),
                    (
                        "spec.leaseTransitions",
                        "FieldValueInvalid",
                        "Invalid value: -1: must be greater than or equal to 0",
                    ),
                ],
            ),
            (
                json!({"strategy": "Newest"}),
                vec![(
                    "spec.strategy.strategy",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Newest": supported values: "OldestEmulationVersion""#,
                )],
            ),
            (
                json!({"strategy": "example.com/custom", "preferredHolder": "x"}),
                vec![],
            ),
            (
                json!({"preferredHolder": "x"}),
                vec![(
                    "spec.preferredHolder",
                    "FieldValueForbidden",
                    "Forbidden: may only be specified if `strategy` is defined",
                )],
            ),
        ];
        for (spec, want) in cases {
            let lease = json!({"metadata": {"name": "l", "namespace": "n"}, "spec": spec});
            let got = messages(&LeaseStrategy.validate(&lease));
            let want: Vec<(String, &str, String)> = want
                .into_iter()
                .map(|(f, t, m)| (f.to_string(), t, m.to_string()))
                .collect();
            assert_eq!(got, want, "{spec}");
        }
    }

    #[test]
    fn coordinated_fields_are_dropped() {
        let mut lease = json!({
            "metadata": {"name": "l"},
            "spec": {"strategy": "OldestEmulationVersion", "preferredHolder": "x", "holderIdentity": null,
                     "renewTime": "2024-01-01T00:00:00Z"},
        });
        LeaseStrategy.prepare_for_create(&mut lease);
        assert_eq!(
            lease["spec"],
            json!({"renewTime": "2024-01-01T00:00:00.000000Z"})
        );
        let old = json!({"spec": {"strategy": "OldestEmulationVersion"}});
        let mut new =
            json!({"spec": {"strategy": "OldestEmulationVersion", "preferredHolder": "x"}});
        LeaseStrategy.prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"], json!({"strategy": "OldestEmulationVersion"}));
        let mut bare = json!({"metadata": {"name": "l"}});
        LeaseStrategy.prepare_for_create(&mut bare);
        assert_eq!(bare["spec"], json!({}));
    }

    #[test]
    fn table_and_policy() {
        let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}});
        assert_eq!(cells(&lease)[..2], [json!("l"), json!("me")]);
        let def = crate::definition("coordination.k8s.io", "v1", "leases").unwrap();
        let names: Vec<&str> = def
            .table
            .as_ref()
            .unwrap()
            .columns
            .iter()
            .map(|c| &*c.name)
            .collect();
        assert_eq!(names, ["Name", "Holder", "Age"]);
        assert!(def.strategy.allow_create_on_update());
        assert!(!def.strategy.allow_unconditional_update());
        assert_eq!(def.storage.key_prefix, "leases");
    }
}
