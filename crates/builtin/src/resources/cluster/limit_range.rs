//! LimitRange: its strategy, the defaulting of container items and validation of the item
//! types and quantities, and its printer (kubernetes/pkg/registry/core/limitrange/strategy.go,
//! pkg/apis/core/v1/defaults.go, pkg/apis/core/validation).

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_qualified_name;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::Value;

use super::validate_non_negative;
use crate::printers::name_cell;
use crate::resources::common::{created_at, each_item, invalid_each, items, object_at};
use crate::strategy::{validate_core, validate_core_update};
use crate::util::str_of;

/// limitrangeStrategy (pkg/registry/core/limitrange/strategy.go).
pub(super) struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    fn default(&self, range: &mut Value) {
        limit_range_defaults(range);
    }

    fn prepare_for_create(&self, range: &mut Value) {
        limit_range_defaults(range);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        limit_range_defaults(new);
    }

    fn validate(&self, range: &Value) -> FieldErrors {
        validate_core(range, validate_limit_range(range))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// SetDefaults_LimitRangeItem: a container's default limit is its max, its default request
/// the default limit or else the min.
fn limit_range_defaults(range: &mut Value) {
    each_item(object_at(range, "/spec"), "limits", |item| {
        if str_of(item, "type") != "Container" {
            return;
        }
        let field = |item: &Value, key: &str| item[key].as_object().cloned().unwrap_or_default();
        let mut default = field(item, "default");
        let mut request = field(item, "defaultRequest");
        for (key, value) in field(item, "max") {
            default.entry(key).or_insert(value);
        }
        for (key, value) in default.iter().chain(field(item, "min").iter()) {
            request.entry(key.clone()).or_insert(value.clone());
        }
        let fields = crate::util::fields_mut(item);
        for (key, map) in [("default", default), ("defaultRequest", request)] {
            if !map.is_empty() {
                fields.insert(key.into(), Value::Object(map));
            }
        }
    });
}

/// ValidateLimitRange, in part: item types are known and unique, Pod items have no
/// defaults, quantities are not negative.
fn validate_limit_range(range: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec").child("limits");
    let mut types = Vec::new();
    for (i, item) in items(range, "/spec/limits").iter().enumerate() {
        let item_path = path.index(i);
        let kind = str_of(item, "type");
        errs.extend(validate_limit_type(kind, &item_path.child("type")));
        if types.contains(&kind) {
            errs.push(FieldError::duplicate(&item_path.child("type"), kind));
        }
        types.push(kind);
        if kind == "Pod" {
            for key in ["default", "defaultRequest"] {
                if item[key].as_object().is_some_and(|m| !m.is_empty()) {
                    errs.push(FieldError::forbidden(
                        &item_path.child(key),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        }
        for key in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            for (name, value) in item[key].as_object().into_iter().flatten() {
                errs.extend(validate_non_negative(
                    value,
                    &item_path.child(key).key(name),
                ));
            }
        }
    }
    errs
}

/// validateLimitRangeTypeName: a qualified name, one of the standard types unless it has a
/// domain prefix.
fn validate_limit_type(kind: &str, path: &Path) -> FieldErrors {
    let problems = is_qualified_name(kind);
    if !problems.is_empty() {
        return invalid_each(path, kind, problems);
    }
    let standard = ["Container", "PersistentVolumeClaim", "Pod"];
    if !kind.contains('/') && !standard.contains(&kind) {
        return FieldErrors::from(FieldError::invalid(
            path,
            kind,
            "must be a standard limit type or fully qualified",
        ));
    }
    FieldErrors::new()
}

pub(super) fn limit_range_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            crate::printers::name_column(0),
            crate::resources::common::created_at_column(),
        ],
        cells: std::sync::Arc::new(|range: &serde_json::Value| {
            vec![name_cell(range), created_at(range)]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::cluster::check;
    use serde_json::json;

    #[test]
    fn limit_range_defaults_and_validation() {
        let mut range = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}]}});
        LimitRangeStrategy.prepare_for_create(&mut range);
        assert_eq!(
            range["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"},
                   "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "1Mi"}})
        );
        check(
            &LimitRangeStrategy,
            json!({"spec": {"limits": [{"type": "Pod", "default": {"cpu": "1"}}, {"type": "Pod"}, {"type": "Node"}]}}),
            &[
                (
                    "spec.limits[0].default",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified when `type` is 'Pod'",
                ),
                (
                    "spec.limits[1].type",
                    "FieldValueDuplicate",
                    r#"Duplicate value: "Pod""#,
                ),
                (
                    "spec.limits[2].type",
                    "FieldValueInvalid",
                    r#"Invalid value: "Node": must be a standard limit type or fully qualified"#,
                ),
            ],
        );
    }
}
