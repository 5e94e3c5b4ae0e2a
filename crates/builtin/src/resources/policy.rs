//! policy/v1 PodDisruptionBudget (kubernetes/pkg/apis/policy/validation,
//! pkg/registry/policy/poddisruptionbudget/strategy.go).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{IS_NEGATIVE_ERROR_MSG, validate_label_selector};
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{age, col, table, text, typed};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{reset_for_create, track_generation, validate_core, validate_core_update};

/// The unhealthy pod eviction policies, sorted.
const EVICTION_POLICIES: [&str; 2] = ["AlwaysAllow", "IfHealthyBudget"];
const PERCENT_ERROR: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// The strategy of PodDisruptionBudgets.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    (kind == "PodDisruptionBudget").then(|| KindStrategies {
        strategy: Arc::new(PodDisruptionBudgetStrategy),
        table: Some(pdb_table()),
    })
}

/// podDisruptionBudgetStrategy (pkg/registry/policy/poddisruptionbudget/strategy.go).
struct PodDisruptionBudgetStrategy;

impl Strategy for PodDisruptionBudgetStrategy {
    /// An empty status, whose counters Go always writes.
    fn prepare_for_create(&self, pdb: &mut Value) {
        reset_for_create(
            pdb,
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        );
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        track_generation(new, old);
    }

    fn validate(&self, pdb: &Value) -> FieldErrors {
        validate_core(pdb, validate_pdb(pdb))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// ValidatePodDisruptionBudgetSpec: one of minAvailable and maxUnavailable, each a
/// non-negative number or a percentage up to 100%; a valid selector; a known eviction
/// policy.
fn validate_pdb(pdb: &Value) -> FieldErrors {
    let spec = &pdb["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let min = &spec["minAvailable"];
    let max = &spec["maxUnavailable"];
    if !min.is_null() && !max.is_null() {
        errs.push(FieldError {
            error_type: ErrorType::Invalid,
            field: path.to_string(),
            bad_value: Some(render_spec(spec)),
            detail: "minAvailable and maxUnavailable cannot be both set".to_string(),
        });
    }
    for key in ["minAvailable", "maxUnavailable"] {
        if !spec[key].is_null() {
            errs.extend(validate_int_or_percent(&spec[key], &path.child(key)));
        }
    }
    if !spec["selector"].is_null() {
        errs.extend(validate_label_selector(
            &spec["selector"],
            &path.child("selector"),
        ));
    }
    if let Some(policy) = spec["unhealthyPodEvictionPolicy"].as_str()
        && !EVICTION_POLICIES.contains(&policy)
    {
        errs.push(FieldError::not_supported(
            &path.child("unhealthyPodEvictionPolicy"),
            policy,
            EVICTION_POLICIES,
        ));
    }
    errs
}

/// The spec as upstream prints the internal type: its JSON, with Go's field names.
fn render_spec(spec: &Value) -> String {
    let field = |key: &str| spec.get(key).cloned().unwrap_or(Value::Null);
    format!(
        r#"{{"MinAvailable":{},"Selector":{},"MaxUnavailable":{},"UnhealthyPodEvictionPolicy":{}}}"#,
        field("minAvailable"),
        field("selector"),
        field("maxUnavailable"),
        field("unhealthyPodEvictionPolicy")
    )
}

/// ValidatePositiveIntOrPercent and IsNotMoreThan100Percent.
fn validate_int_or_percent(value: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    match value {
        Value::String(s) => {
            let number = s
                .strip_suffix('%')
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            match number {
                None => errs.push(FieldError::invalid(path, s.as_str(), PERCENT_ERROR)),
                Some(n) if n.parse::<u64>().map_or(true, |n| n > 100) => errs.push(
                    FieldError::invalid(path, s.as_str(), "must not be greater than 100%"),
                ),
                Some(_) => {}
            }
        }
        other => {
            let n = other.as_i64().unwrap_or(0);
            if n < 0 {
                errs.push(FieldError::invalid(path, n, IS_NEGATIVE_ERROR_MSG));
            }
        }
    }
    errs
}

fn pdb_table() -> TableConvertor {
    table(
        vec![
            col(
                "Min Available",
                "The minimum number of pods that must be available.",
            ),
            col(
                "Max Unavailable",
                "The maximum number of pods that may be unavailable.",
            ),
            typed(
                "Allowed Disruptions",
                "integer",
                "Calculated number of pods that may be disrupted at this time.",
            ),
            age(),
        ],
        pdb_cells,
    )
}

/// NAME, MIN AVAILABLE, MAX UNAVAILABLE (`N/A` when unset), ALLOWED DISRUPTIONS, AGE.
fn pdb_cells(pdb: &Value) -> Vec<Value> {
    let shown = |v: &Value| match v {
        Value::String(s) => text(s.as_str()),
        Value::Number(n) => text(n.to_string()),
        _ => text("N/A"),
    };
    vec![
        name_cell(pdb),
        shown(&pdb["spec"]["minAvailable"]),
        shown(&pdb["spec"]["maxUnavailable"]),
        Value::from(pdb["status"]["disruptionsAllowed"].as_i64().unwrap_or(0)),
        age_cell(pdb),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{Cases, causes, expect};

    #[test]
    fn pdb_validation() {
        let strategy = strategies("PodDisruptionBudget").unwrap().strategy;
        let not_percent = format!(r#"Invalid value: "x": {PERCENT_ERROR}"#);
        let cases: Cases = vec![
            (
                json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
                vec![],
            ),
            (json!({"maxUnavailable": "50%"}), vec![]),
            (
                json!({"minAvailable": "150%", "unhealthyPodEvictionPolicy": "Never"}),
                vec![
                    (
                        "spec.minAvailable",
                        "FieldValueInvalid",
                        r#"Invalid value: "150%": must not be greater than 100%"#,
                    ),
                    (
                        "spec.unhealthyPodEvictionPolicy",
                        "FieldValueNotSupported",
                        r#"Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget""#,
                    ),
                ],
            ),
            (
                json!({"minAvailable": -1, "maxUnavailable": "x"}),
                vec![
                    (
                        "spec",
                        "FieldValueInvalid",
                        r#"Invalid value: {"MinAvailable":-1,"Selector":null,"MaxUnavailable":"x","UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set"#,
                    ),
                    (
                        "spec.minAvailable",
                        "FieldValueInvalid",
                        "Invalid value: -1: must be greater than or equal to 0",
                    ),
                    ("spec.maxUnavailable", "FieldValueInvalid", &not_percent),
                ],
            ),
        ];
        for (spec, want) in cases {
            let pdb = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": spec});
            assert_eq!(causes(&strategy.validate(&pdb)), expect(&want), "{spec}");
        }
    }

    #[test]
    fn pdb_status_generation_and_printer() {
        let strategy = strategies("PodDisruptionBudget").unwrap().strategy;
        let mut pdb = json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 5}});
        strategy.prepare_for_create(&mut pdb);
        assert_eq!(pdb["metadata"]["generation"], 1);
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
        assert_eq!(pdb["status"]["expectedPods"], 0);
        assert_eq!(pdb_cells(&pdb)[1..4], [json!("2"), json!("N/A"), json!(0)]);
    }
}
