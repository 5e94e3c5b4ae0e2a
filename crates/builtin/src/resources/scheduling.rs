//! scheduling.k8s.io/v1 PriorityClass, with the system priority classes kube-apiserver
//! bootstraps, and node.k8s.io/v1 RuntimeClass (kubernetes/pkg/apis/scheduling,
//! pkg/apis/node/validation, pkg/registry/scheduling/rest/storage_scheduling.go).

use std::sync::Arc;

use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_dns1123_label;
use kapi_server::registry::Registry;
use kapi_server::resource::{ResourceDefinition, Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{age, col, default_field, invalid_each, table, text, typed};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{start_generation, validate_core, validate_core_update};
use crate::util::{str_of, validate_immutable};

/// The system priority classes: name, value and description.
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The highest value a user-defined priority class may have.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The name prefix reserved for the system priority classes.
const SYSTEM_PREFIX: &str = "system-";

/// The strategies of PriorityClasses and RuntimeClasses.
pub(super) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match (group, kind) {
        ("scheduling.k8s.io", "PriorityClass") => {
            (Arc::new(PriorityClassStrategy), priority_class_table())
        }
        ("node.k8s.io", "RuntimeClass") => (Arc::new(RuntimeClassStrategy), runtime_class_table()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// priorityClassStrategy (pkg/registry/scheduling/priorityclass/strategy.go): the generation
/// is 1 after create and never changes; the system classes cannot be deleted (as upstream's
/// priorityclass storage refuses).
struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn default(&self, class: &mut Value) {
        priority_class_defaults(class);
    }

    fn prepare_for_create(&self, class: &mut Value) {
        priority_class_defaults(class);
        start_generation(class);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        priority_class_defaults(new);
    }

    fn validate(&self, class: &Value) -> FieldErrors {
        validate_core(class, validate_priority_class(class))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_priority_class_update(new, old))
    }

    fn undeletable(&self, name: &str) -> Option<&'static str> {
        SYSTEM_PRIORITY_CLASSES
            .iter()
            .any(|(system, _, _)| *system == name)
            .then_some("this is a system priority class and cannot be deleted")
    }
}

/// runtimeClassStrategy (pkg/registry/node/runtimeclass/strategy.go).
struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    fn validate(&self, class: &Value) -> FieldErrors {
        validate_core(class, validate_runtime_class(class))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_runtime_class_update(new, old))
    }
}

/// SetDefaults_PriorityClass: pods of the class preempt lower priorities.
fn priority_class_defaults(class: &mut Value) {
    let fields = crate::util::fields_mut(class);
    default_field(fields, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// Whether `name` with `value` and `global_default` is one of the system priority classes,
/// or why not (upstream's IsKnownSystemPriorityClass).
fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _, _)| *n == name) {
        Some((_, expected, _)) if *expected != value => {
            Err(format!("value of {name} PriorityClass must be {expected}"))
        }
        Some(_) if global_default => Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        )),
        Some(_) => Ok(()),
        None => Err(format!("{name} is not a known system priority class")),
    }
}

/// ValidatePriorityClass: the system- prefix is reserved, user values are bounded, the
/// preemption policy is known.
fn validate_priority_class(class: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let name = crate::util::str_at(class, &["metadata", "name"]);
    let value = class["value"].as_i64().unwrap_or(0);
    if name.starts_with(SYSTEM_PREFIX) {
        if let Err(err) =
            known_system_class(name, value, class["globalDefault"].as_bool() == Some(true))
        {
            errs.push(FieldError::forbidden(
                &Path::root("metadata").child("name"),
                format!("priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {err}"),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(FieldError::forbidden(
            &Path::root("value"),
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
        ));
    }
    match class["preemptionPolicy"].as_str() {
        None | Some("PreemptLowerPriority" | "Never") => {}
        Some("") => errs.push(FieldError::required(&Path::root("preemptionPolicy"), "")),
        Some(other) => errs.push(FieldError::not_supported(
            &Path::root("preemptionPolicy"),
            other,
            ["PreemptLowerPriority", "Never"],
        )),
    }
    errs
}

/// ValidatePriorityClassUpdate: the value and the preemption policy are fixed.
fn validate_priority_class_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if new["value"].as_i64() != old["value"].as_i64() {
        errs.push(FieldError::forbidden(
            &Path::root("value"),
            "may not be changed in an update.",
        ));
    }
    errs.extend(validate_immutable(
        &new["preemptionPolicy"],
        &old["preemptionPolicy"],
        &Path::root("preemptionPolicy"),
    ));
    errs
}

fn priority_class_table() -> TableConvertor {
    table(
        vec![
            typed(
                "Value",
                "integer",
                "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
            ),
            typed(
                "Global-Default",
                "boolean",
                "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
            ),
            age(),
            col(
                "PreemptionPolicy",
                "preemptionPolicy is the Policy for preempting pods with lower priority.",
            ),
        ],
        |class| {
            vec![
                name_cell(class),
                Value::from(class["value"].as_i64().unwrap_or(0)),
                Value::Bool(class["globalDefault"].as_bool() == Some(true)),
                age_cell(class),
                text(str_of(class, "preemptionPolicy")),
            ]
        },
    )
}

/// ValidateRuntimeClass: the handler is a DNS label; overhead and scheduling are checked
/// by their own rules.
fn validate_runtime_class(class: &Value) -> FieldErrors {
    let handler = str_of(class, "handler");
    let path = Path::root("handler");
    if handler.is_empty() {
        return FieldErrors::from(FieldError::required(&path, ""));
    }
    invalid_each(&path, handler, is_dns1123_label(handler))
}

/// ValidateRuntimeClassUpdate: the handler is immutable.
fn validate_runtime_class_update(new: &Value, old: &Value) -> FieldErrors {
    validate_immutable(&new["handler"], &old["handler"], &Path::root("handler"))
}

fn runtime_class_table() -> TableConvertor {
    table(
        vec![
            col(
                "Handler",
                "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class.",
            ),
            age(),
        ],
        |class| {
            vec![
                name_cell(class),
                text(str_of(class, "handler")),
                age_cell(class),
            ]
        },
    )
}

/// Creates the system priority classes that do not exist, as kube-apiserver's scheduling
/// post-start hook does; existing ones are left alone. Every class is attempted and the first
/// error is returned. `definition` is the scheduling.k8s.io/v1 priorityclasses resource.
pub async fn ensure_system_priority_classes(
    registry: &Registry,
    definition: &ResourceDefinition,
) -> Result<(), ApiError> {
    let classes = SYSTEM_PRIORITY_CLASSES
        .iter()
        .map(|(name, value, description)| {
            json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": description,
            })
        });
    crate::util::create_missing(registry, definition, classes.collect()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{Cases, causes, expect};

    #[test]
    fn priority_class_validation() {
        let strategy = strategies("scheduling.k8s.io", "PriorityClass")
            .unwrap()
            .strategy;
        let cases: Cases = vec![
            (json!({"metadata": {"name": "high"}, "value": 1000}), vec![]),
            (
                json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000}),
                vec![],
            ),
            (
                json!({"metadata": {"name": "system-node-critical"}, "value": 5}),
                vec![(
                    "metadata.name",
                    "FieldValueForbidden",
                    "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000",
                )],
            ),
            (
                json!({"metadata": {"name": "system-mine"}, "value": 5}),
                vec![(
                    "metadata.name",
                    "FieldValueForbidden",
                    "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
                )],
            ),
            (
                json!({"metadata": {"name": "huge"}, "value": 1_000_000_001i64, "preemptionPolicy": "Always"}),
                vec![
                    (
                        "value",
                        "FieldValueForbidden",
                        "Forbidden: maximum allowed value of a user defined priority is 1000000000",
                    ),
                    (
                        "preemptionPolicy",
                        "FieldValueNotSupported",
                        r#"Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never""#,
                    ),
                ],
            ),
        ];
        for (class, want) in cases {
            assert_eq!(causes(&strategy.validate(&class)), expect(&want), "{class}");
        }
        let mut class = json!({"metadata": {"name": "high"}, "value": 1000});
        strategy.prepare_for_create(&mut class);
        assert_eq!(class["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(class["metadata"]["generation"], 1);
        let mut changed = class.clone();
        changed["value"] = json!(2000);
        changed["preemptionPolicy"] = json!("Never");
        strategy.prepare_for_update(&mut changed, &class);
        assert_eq!(changed["metadata"]["generation"], 1);
        assert_eq!(
            causes(&strategy.validate_update(&changed, &class)),
            expect(&[
                (
                    "value",
                    "FieldValueForbidden",
                    "Forbidden: may not be changed in an update."
                ),
                (
                    "preemptionPolicy",
                    "FieldValueInvalid",
                    r#"Invalid value: "Never": field is immutable"#
                ),
            ])
        );
    }

    #[test]
    fn runtime_class_rules() {
        let strategy = strategies("node.k8s.io", "RuntimeClass").unwrap().strategy;
        assert!(strategy.validate(&json!({"handler": "runc"})).is_empty());
        assert_eq!(
            causes(&strategy.validate(&json!({}))),
            expect(&[("handler", "FieldValueRequired", "Required value")])
        );
        assert_eq!(
            causes(
                &strategy.validate_update(&json!({"handler": "kata"}), &json!({"handler": "runc"}))
            ),
            expect(&[(
                "handler",
                "FieldValueInvalid",
                r#"Invalid value: "kata": field is immutable"#
            )])
        );
    }
}
