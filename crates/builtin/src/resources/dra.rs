//! resource.k8s.io/v1 DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice
//! (kubernetes/pkg/registry/resource/*/strategy.go, pkg/apis/resource/validation).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_dns1123_subdomain;
use kapi_server::resource::{Name, Strategy, TableConvertor};
use serde_json::Value;

use super::common::{age, col, invalid_each, items, table, text, text_at};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{
    reset_status, start_generation, track_generation, validate_core, validate_core_update,
};

/// The strategies of the dynamic resource allocation kinds.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "DeviceClass" => (Arc::new(DeviceClassStrategy), name_and_age_table()),
        "ResourceClaim" => (Arc::new(ResourceClaimStrategy), claim_table()),
        "ResourceClaimTemplate" => (
            Arc::new(ResourceClaimTemplateStrategy),
            name_and_age_table(),
        ),
        "ResourceSlice" => (Arc::new(ResourceSliceStrategy), slice_table()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// deviceClassStrategy (pkg/registry/resource/deviceclass/strategy.go).
struct DeviceClassStrategy;

impl Strategy for DeviceClassStrategy {
    fn prepare_for_create(&self, class: &mut Value) {
        start_generation(class);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        track_generation(new, old);
    }

    fn validate(&self, class: &Value) -> FieldErrors {
        validate_core(class, FieldErrors::new())
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// resourceclaimStrategy (pkg/registry/resource/resourceclaim/strategy.go).
struct ResourceClaimStrategy;

impl Strategy for ResourceClaimStrategy {
    fn prepare_for_create(&self, claim: &mut Value) {
        reset_status(claim);
    }

    fn validate(&self, claim: &Value) -> FieldErrors {
        validate_core(claim, FieldErrors::new())
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let errs = immutable_spec(new, old, "resource.ResourceClaimSpec");
        validate_core_update(self, new, errs)
    }
}

/// resourceClaimTemplateStrategy (pkg/registry/resource/resourceclaimtemplate/strategy.go).
struct ResourceClaimTemplateStrategy;

impl Strategy for ResourceClaimTemplateStrategy {
    fn validate(&self, template: &Value) -> FieldErrors {
        validate_core(template, FieldErrors::new())
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let errs = immutable_spec(new, old, "resource.ResourceClaimTemplateSpec");
        validate_core_update(self, new, errs)
    }
}

/// resourceSliceStrategy (pkg/registry/resource/resourceslice/strategy.go).
struct ResourceSliceStrategy;

impl Strategy for ResourceSliceStrategy {
    fn prepare_for_create(&self, slice: &mut Value) {
        start_generation(slice);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        track_generation(new, old);
    }

    fn validate(&self, slice: &Value) -> FieldErrors {
        validate_core(slice, validate_slice(slice))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    fn selectable_fields(&self, slice: &Value) -> Vec<(Name, String)> {
        vec![
            (
                "spec.nodeName".into(),
                text_at(slice, "/spec/nodeName").to_string(),
            ),
            (
                "spec.driver".into(),
                text_at(slice, "/spec/driver").to_string(),
            ),
        ]
    }

    fn supports_field(&self, field: &str) -> bool {
        matches!(field, "spec.nodeName" | "spec.driver")
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("spec")])
    }
}

/// NAME, AGE.
fn name_and_age_table() -> TableConvertor {
    table(vec![age()], |object| {
        vec![name_cell(object), age_cell(object)]
    })
}

/// NAME, STATE, AGE.
fn claim_table() -> TableConvertor {
    table(
        vec![
            col(
                "State",
                "A summary of the current state (allocated, pending, reserved, etc.).",
            ),
            age(),
        ],
        |claim| vec![name_cell(claim), text(claim_state(claim)), age_cell(claim)],
    )
}

/// NAME, NODE (`<none>` when unset), DRIVER, POOL, AGE.
fn slice_table() -> TableConvertor {
    table(
        vec![
            col(
                "Node",
                "NodeName identifies the node which provides the resources in this pool.",
            ),
            col(
                "Driver",
                "Driver identifies the DRA driver providing the capacity information.",
            ),
            col(
                "Pool",
                "Pool describes the pool that this ResourceSlice belongs to.",
            ),
            age(),
        ],
        |slice| {
            let node = match text_at(slice, "/spec/nodeName") {
                "" => "<none>",
                node => node,
            };
            vec![
                name_cell(slice),
                text(node),
                text(text_at(slice, "/spec/driver")),
                text(text_at(slice, "/spec/pool/name")),
                age_cell(slice),
            ]
        },
    )
}

/// Claims and templates may not change their spec.
fn immutable_spec(new: &Value, old: &Value, type_name: &str) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if new["spec"] != old["spec"] {
        errs.push(crate::util::immutable_rendered(
            &Path::root("spec"),
            format!("{type_name}{{...}}"),
        ));
    }
    errs
}

/// `deleted`, `pending`, `allocated`, `reserved`, `deallocating`, comma-separated.
fn claim_state(claim: &Value) -> String {
    let deleted = !claim["metadata"]["deletionTimestamp"].is_null();
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if claim["status"]["allocation"].is_null() {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !items(claim, "/status/reservedFor").is_empty() {
            states.push("reserved");
        } else if deleted {
            states.push("deallocating");
        }
    }
    states.join(",")
}

/// ValidateResourceSlice, in part: a driver and a pool, and exactly one node selection.
fn validate_slice(slice: &Value) -> FieldErrors {
    let spec = &slice["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let driver = text_at(spec, "/driver");
    if driver.is_empty() {
        errs.push(FieldError::required(&path.child("driver"), ""));
    } else {
        errs.extend(invalid_each(
            &path.child("driver"),
            driver,
            is_dns1123_subdomain(driver),
        ));
    }
    if text_at(spec, "/pool/name").is_empty() {
        errs.push(FieldError::required(&path.child("pool").child("name"), ""));
    }
    let selections = [
        "nodeName",
        "nodeSelector",
        "allNodes",
        "perDeviceNodeSelection",
    ]
    .iter()
    .filter(|key| match &spec[**key] {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Bool(b) => *b,
        _ => true,
    })
    .count();
    if selections != 1 {
        errs.push(FieldError::invalid(
            &path,
            "{`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`}",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};
    use serde_json::json;

    #[test]
    fn claims_and_slices() {
        let claim = json!({"metadata": {"name": "c"}, "status": {"allocation": {}, "reservedFor": [{"name": "p"}]}});
        assert_eq!(claim_state(&claim), "allocated,reserved");
        assert_eq!(claim_state(&json!({})), "pending");
        let strategy = strategies("ResourceClaim").unwrap().strategy;
        let mut created = claim.clone();
        strategy.prepare_for_create(&mut created);
        assert_eq!(created["status"], json!({}));
        let old = json!({"spec": {"devices": {"requests": []}}});
        let new = json!({"spec": {"devices": {"requests": [{"name": "gpu"}]}}});
        assert_eq!(
            causes(&strategy.validate_update(&new, &old)),
            expect(&[(
                "spec",
                "FieldValueInvalid",
                "Invalid value: resource.ResourceClaimSpec{...}: field is immutable"
            )])
        );
        let slices = strategies("ResourceSlice").unwrap().strategy;
        let slice =
            json!({"spec": {"driver": "gpu.example.com", "pool": {"name": "p"}, "nodeName": "n1"}});
        assert!(slices.validate(&slice).is_empty());
        assert_eq!(
            crate::tests::pairs(&slices.selectable_fields(&slice))[0],
            ("spec.nodeName", "n1".to_string())
        );
        assert_eq!(
            causes(&slices.validate(&json!({"spec": {"pool": {}}}))),
            expect(&[
                ("spec.driver", "FieldValueRequired", "Required value"),
                ("spec.pool.name", "FieldValueRequired", "Required value"),
                (
                    "spec",
                    "FieldValueInvalid",
                    r#"Invalid value: "{`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"#
                ),
            ])
        );
    }
}
