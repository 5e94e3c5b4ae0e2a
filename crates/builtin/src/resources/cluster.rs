//! Core v1 cluster objects: Node, PersistentVolume, PersistentVolumeClaim, ResourceQuota,
//! LimitRange and ComponentStatus's printer (kubernetes/pkg/registry/core/*/strategy.go,
//! pkg/apis/core/v1/defaults.go, pkg/apis/core/validation), a module each; this one
//! dispatches to their hooks and holds what several of them validate alike (access modes,
//! volume modes, storage class names, non-negative quantities).

mod component_status;
mod limit_range;
mod node;
mod persistent_volume;
mod persistent_volume_claim;
mod resource_quota;

use std::sync::Arc;

use kapi_apimachinery::Quantity;
use kapi_apimachinery::validation::IS_NEGATIVE_ERROR_MSG;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::resource::Strategy;
use serde_json::Value;

use super::common::{invalid_each, items, text};
use crate::kinds::KindStrategies;
use crate::util::str_of;
use component_status::{ComponentStatusStrategy, component_status_table};
use limit_range::{LimitRangeStrategy, limit_range_table};
use node::{NodeStrategy, node_table};
use persistent_volume::{PersistentVolumeStrategy, pv_table};
use persistent_volume_claim::{PersistentVolumeClaimStrategy, pvc_table};
use resource_quota::{ResourceQuotaStrategy, quota_table};

/// The strategies of the core kinds of this module.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "Node" => (Arc::new(NodeStrategy), node_table()),
        "PersistentVolume" => (Arc::new(PersistentVolumeStrategy), pv_table()),
        "PersistentVolumeClaim" => (Arc::new(PersistentVolumeClaimStrategy), pvc_table()),
        "ResourceQuota" => (Arc::new(ResourceQuotaStrategy), quota_table()),
        "LimitRange" => (Arc::new(LimitRangeStrategy), limit_range_table()),
        "ComponentStatus" => (Arc::new(ComponentStatusStrategy), component_status_table()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];

/// The access modes of a PV or PVC spec: required, supported, ReadWriteOncePod alone.
fn validate_access_modes(spec: &Value, path: &Path, required_detail: &str) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let modes = items(spec, "/accessModes");
    let modes_path = path.child("accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(&modes_path, required_detail));
    }
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&modes_path, mode, ACCESS_MODES));
        }
    }
    let rwop = modes.iter().any(|m| m.as_str() == Some("ReadWriteOncePod"));
    if rwop && modes.len() > 1 {
        errs.push(FieldError::forbidden(
            &modes_path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// ValidateClassName of `storageClassName` (a DNS subdomain).
fn validate_class_name(spec: &Value, path: &Path) -> FieldErrors {
    let class = str_of(spec, "storageClassName");
    if class.is_empty() {
        return FieldErrors::new();
    }
    invalid_each(
        &path.child("storageClassName"),
        class,
        kapi_apimachinery::validation::is_dns1123_subdomain(class),
    )
}

/// ValidateResourceQuantityValue: quantities may not be negative.
fn validate_non_negative(value: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let text = value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string);
    if Quantity::of_field(value).is_some_and(|q| q.signum() < 0) {
        errs.push(FieldError::invalid(path, text, IS_NEGATIVE_ERROR_MSG));
    }
    errs
}

/// `<unset>` for an empty optional name.
fn or_unset(value: &str) -> Value {
    text(if value.is_empty() { "<unset>" } else { value })
}

/// Asserts the causes of the validation errors of `object`.
#[cfg(test)]
fn check(strategy: &dyn Strategy, object: Value, want: &[(&str, &str, &str)]) {
    use crate::util::{causes, expect};
    assert_eq!(
        causes(&strategy.validate(&object)),
        expect(want),
        "{object}"
    );
}
