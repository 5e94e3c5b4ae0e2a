//! core/v1 Namespace (kubernetes/pkg/registry/core/namespace, ValidateNamespace*).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_qualified_name;
use kapi_server::resource::Name;
use kapi_server::resource::{NameValidator, Strategy, SubresourceKind, TableConvertor};
use serde_json::{Value, json};

use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{
    child_mut, drop_if_empty, str_at, strings_of, validate_core_metadata_finalizers,
};

/// The finalizer every new namespace gets; the namespace controller removes it once the
/// namespace's content is gone.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// The label every namespace carries with its own name.
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";
/// `status.phase` of a namespace in use.
pub const PHASE_ACTIVE: &str = "Active";
/// `status.phase` of a namespace being deleted.
pub const PHASE_TERMINATING: &str = "Terminating";

/// The strategy and printer columns of namespaces.
pub(crate) fn strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(NamespaceStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("Status", "The status of the namespace", 0),
                age_column(),
            ],
            cells: std::sync::Arc::new(cells),
        }),
    }
}

/// NAME, STATUS, AGE.
fn cells(object: &Value) -> Vec<Value> {
    vec![
        name_cell(object),
        Value::from(str_at(object, &["status", "phase"])),
        age_cell(object),
    ]
}

/// The strategy of namespaces.
pub struct NamespaceStrategy;

/// Sets the `kubernetes.io/metadata.name` label to the name (upstream's defaulting and
/// Canonicalize).
fn set_name_label(object: &mut Value) {
    let name = str_at(object, &["metadata", "name"]).to_string();
    if name.is_empty() {
        return;
    }
    let metadata = child_mut(object, "metadata");
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    crate::util::fields_mut(labels).insert(LABEL_METADATA_NAME.to_string(), Value::String(name));
}

/// `spec` and `status` as a typed Namespace writes them: both present, an empty finalizer
/// list dropped.
fn normalize(object: &mut Value) {
    drop_if_empty(child_mut(object, "spec"), "finalizers");
    child_mut(object, "status");
}

impl Strategy for NamespaceStrategy {
    /// The name label where upstream's decoder sets it (SetDefaults_Namespace), so the
    /// writer owns it.
    fn default(&self, object: &mut Value) {
        set_name_label(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        let status = child_mut(object, "status");
        status.clear();
        status.insert("phase".into(), Value::from(PHASE_ACTIVE));
        let spec = child_mut(object, "spec");
        let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        let list = finalizers.as_array_mut().expect("an array");
        if !list.iter().any(|f| f == FINALIZER_KUBERNETES) {
            list.push(Value::from(FINALIZER_KUBERNETES));
        }
        set_name_label(object);
        normalize(object);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let old_finalizers = old.get("spec").and_then(|s| s.get("finalizers")).cloned();
        let spec = child_mut(new, "spec");
        match old_finalizers {
            Some(finalizers) => spec.insert("finalizers".into(), finalizers),
            None => spec.remove("finalizers"),
        };
        let old_status = old.get("status").cloned().unwrap_or_else(|| json!({}));
        crate::util::fields_mut(new).insert("status".into(), old_status);
        set_name_label(new);
        normalize(new);
    }

    fn name_validator(&self) -> NameValidator {
        kapi_apimachinery::validation::name_is_dns_label
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = validate_core_metadata_finalizers(object);
        let path = Path::root("spec").child("finalizers");
        for finalizer in strings_of(&object["spec"], "finalizers") {
            errs.extend(validate_finalizer_name(finalizer, &path));
        }
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        let mut errs = self.validate(new);
        errs.extend(validate_core_metadata_finalizers(new));
        errs
    }

    /// Status writes are held to the phase rules and finalize writes to the finalizer
    /// rules, as upstream's namespace status and finalize strategies validate them.
    fn validate_subresource_update(
        &self,
        subresource: &SubresourceKind,
        new: &Value,
        old: &Value,
    ) -> FieldErrors {
        match subresource {
            SubresourceKind::Status => validate_status_update(new, old),
            SubresourceKind::Finalize => validate_finalize_update(new, old),
            _ => self.validate_update(new, old),
        }
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        vec![(
            "status.phase".into(),
            str_at(object, &["status", "phase"]).to_string(),
        )]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "status.phase"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("status")])
    }

    fn has_pending_finalizers(&self, object: &Value) -> bool {
        object["spec"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    }

    fn prepare_for_pending_deletion(&self, object: &mut Value) {
        child_mut(object, "status").insert("phase".into(), Value::from(PHASE_TERMINATING));
    }

    fn return_deleted_object(&self) -> bool {
        true
    }

    fn storage_precondition_messages(&self) -> bool {
        true
    }
}

/// A finalizer name of `spec.finalizers`: a qualified name, and a standard one unless it
/// has a domain (upstream's validateFinalizerName).
fn validate_finalizer_name(name: &str, path: &Path) -> FieldErrors {
    let mut errs: FieldErrors = is_qualified_name(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect();
    let standard = [FINALIZER_KUBERNETES, "orphan", "foregroundDeletion"];
    if !name.contains('/') && !standard.contains(&name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
        ));
    }
    errs
}

/// The type-specific validation of an update through `namespaces/{name}/status`
/// (upstream's ValidateNamespaceStatusUpdate, metadata rules aside): the phase must be
/// `Active` unless the namespace is being deleted, then `Terminating`.
pub fn validate_status_update(new: &Value, _old: &Value) -> FieldErrors {
    let mut errs = validate_core_metadata_finalizers(new);
    let phase = str_at(new, &["status", "phase"]);
    let path = Path::root("status").child("Phase");
    if new["metadata"]["deletionTimestamp"].is_null() {
        if phase != PHASE_ACTIVE {
            errs.push(FieldError::invalid(
                &path,
                phase,
                "may only be 'Active' if `deletionTimestamp` is empty",
            ));
        }
    } else if phase != PHASE_TERMINATING {
        errs.push(FieldError::invalid(
            &path,
            phase,
            "may only be 'Terminating' if `deletionTimestamp` is not empty",
        ));
    }
    errs
}

/// The type-specific validation of an update through `namespaces/{name}/finalize`
/// (upstream's ValidateNamespaceFinalizeUpdate, metadata rules aside): each of
/// `spec.finalizers` is a valid finalizer name.
pub fn validate_finalize_update(new: &Value, _old: &Value) -> FieldErrors {
    let mut errs = validate_core_metadata_finalizers(new);
    let path = Path::root("spec").child("finalizers");
    for (i, finalizer) in strings_of(&new["spec"], "finalizers")
        .into_iter()
        .enumerate()
    {
        errs.extend(validate_finalizer_name(finalizer, &path.index(i)));
    }
    errs
}

#[cfg(test)]
mod tests;
