//! resource.k8s.io/v1 DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice
//! (kubernetes/pkg/registry/resource/*/strategy.go, pkg/apis/resource/validation).

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_dns1123_subdomain;
use kapi_server::resource::TableConvertor;
use serde_json::Value;

use super::common::{age, col, invalid_each, items, table, text, text_at};
use super::{BASE, Generation, Rules, SelectableField};
use crate::printers::{age_cell, name_cell};

const SLICE_FIELDS: &[SelectableField] = &[
    ("spec.nodeName", |slice| {
        text_at(slice, "/spec/nodeName").to_string()
    }),
    ("spec.driver", |slice| {
        text_at(slice, "/spec/driver").to_string()
    }),
];

/// The hooks of the dynamic resource allocation kinds.
pub(super) fn strategies(kind: &str) -> Option<(Rules, TableConvertor)> {
    let name_and_age = || {
        table(vec![age()], |object| {
            vec![name_cell(object), age_cell(object)]
        })
    };
    Some(match kind {
        "DeviceClass" => (
            Rules {
                on_create: |_| {},
                generation: Generation::Tracked,
                ..BASE
            },
            name_and_age(),
        ),
        "ResourceClaim" => (
            Rules {
                validate_update: |new, old| immutable_spec(new, old, "resource.ResourceClaimSpec"),
                ..BASE
            },
            table(
                vec![
                    col(
                        "State",
                        "A summary of the current state (allocated, pending, reserved, etc.).",
                    ),
                    age(),
                ],
                |claim| vec![name_cell(claim), text(claim_state(claim)), age_cell(claim)],
            ),
        ),
        "ResourceClaimTemplate" => (
            Rules {
                on_create: |_| {},
                validate_update: |new, old| {
                    immutable_spec(new, old, "resource.ResourceClaimTemplateSpec")
                },
                ..BASE
            },
            name_and_age(),
        ),
        "ResourceSlice" => (
            Rules {
                on_create: |_| {},
                validate: validate_slice,
                generation: Generation::Tracked,
                fields: SLICE_FIELDS,
                ..BASE
            },
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
            ),
        ),
        _ => return None,
    })
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
    use kapi_server::resource::Strategy;
    use serde_json::json;

    #[test]
    fn claims_and_slices() {
        let claim = json!({"metadata": {"name": "c"}, "status": {"allocation": {}, "reservedFor": [{"name": "p"}]}});
        assert_eq!(claim_state(&claim), "allocated,reserved");
        assert_eq!(claim_state(&json!({})), "pending");
        let rules = strategies("ResourceClaim").unwrap().0;
        let mut created = claim.clone();
        rules.prepare_for_create(&mut created);
        assert_eq!(created["status"], json!({}));
        let old = json!({"spec": {"devices": {"requests": []}}});
        let new = json!({"spec": {"devices": {"requests": [{"name": "gpu"}]}}});
        assert_eq!(
            causes(&rules.validate_update(&new, &old)),
            expect(&[(
                "spec",
                "FieldValueInvalid",
                "Invalid value: resource.ResourceClaimSpec{...}: field is immutable"
            )])
        );
        let slices = strategies("ResourceSlice").unwrap().0;
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
