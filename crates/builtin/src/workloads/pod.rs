//! core/v1 Pod and PodTemplate: defaults, the strategies of pkg/registry/core/pod and
//! podtemplate (status on create, generation, the update rules of ValidatePodUpdate) and
//! pods' field selectors.

use kapi_apimachinery::validation::FIELD_IMMUTABLE_ERROR_MSG;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::resource::Name;
use kapi_server::resource::{Strategy, SubresourceKind, own_subresource_validation};
use serde_json::{Value, json};

use super::defaults::{default_pod, default_pod_template};
use super::podspec::{
    inclusive_range, munged_pod_spec, validate_pod_only, validate_pod_spec,
    validate_pod_template_spec,
};
use super::qos::pod_qos;
use crate::strategy::{carry_status, reset_for_create, set_generation, start_generation};
use crate::util::str_of;
use kapi_server::object::bump_generation_on_spec_change;

/// The largest value of an int32 field.
const MAX_INT32: i64 = 2_147_483_647;

/// The fields a pod update may change, as upstream's message lists them.
const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Pods.
pub(crate) struct PodStrategy;

impl Strategy for PodStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        default_pod(object);
    }

    /// Defaults, generation 1, and a status of `Pending` with the QOS class.
    fn prepare_for_create(&self, object: &mut Value) {
        default_pod(object);
        let status = json!({"phase": "Pending", "qosClass": pod_qos(object)});
        reset_for_create(object, status);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        default_pod(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let spec = &object["spec"];
        let path = Path::root("spec");
        let mut errs = validate_pod_spec(spec, &path);
        errs.extend(validate_pod_only(spec, &path));
        if spec["ephemeralContainers"]
            .as_array()
            .is_some_and(|l| !l.is_empty())
        {
            errs.push(FieldError::forbidden(
                &path.child("ephemeralContainers"),
                "cannot be set on create",
            ));
        }
        if !str_of(spec, "nodeName").is_empty()
            && spec["schedulingGates"]
                .as_array()
                .is_some_and(|l| !l.is_empty())
        {
            errs.push(FieldError::forbidden(
                &path.child("nodeName"),
                "cannot be set until all schedulingGates have been cleared",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_pod_update(&new["spec"], &old["spec"])
    }

    /// Upstream's CheckGracefulDelete: the requested period, else the pod's
    /// `terminationGracePeriodSeconds`; at once (0) when not bound to a node or already
    /// terminated; a negative period is 1 s.
    fn graceful_deletion(&self, pod: &Value, requested: Option<i64>) -> Option<i64> {
        let spec = &pod["spec"];
        let mut period = requested
            .or_else(|| spec["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(0);
        let terminated = matches!(str_of(&pod["status"], "phase"), "Failed" | "Succeeded");
        if str_of(spec, "nodeName").is_empty() || terminated {
            period = 0;
        }
        Some(if period < 0 { 1 } else { period })
    }

    /// A status write may not change the QOS class (an empty one keeps the old).
    fn validate_subresource_update(
        &self,
        subresource: &SubresourceKind,
        new: &Value,
        old: &Value,
    ) -> FieldErrors {
        if let Some(errs) = own_subresource_validation(subresource, new, old) {
            return errs;
        }
        if !matches!(subresource, SubresourceKind::Status) {
            return self.validate_update(new, old);
        }
        let mut errs = FieldErrors::new();
        let (qos, old_qos) = (
            str_of(&new["status"], "qosClass"),
            str_of(&old["status"], "qosClass"),
        );
        if !qos.is_empty() && qos != old_qos {
            errs.push(FieldError::invalid(
                &Path::root("status").child("qosClass"),
                qos,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        let (spec, status) = (&object["spec"], &object["status"]);
        let host_network = spec["hostNetwork"].as_bool().unwrap_or(false);
        vec![
            ("spec.nodeName".into(), str_of(spec, "nodeName").to_string()),
            (
                "spec.restartPolicy".into(),
                str_of(spec, "restartPolicy").to_string(),
            ),
            (
                "spec.schedulerName".into(),
                str_of(spec, "schedulerName").to_string(),
            ),
            (
                "spec.serviceAccountName".into(),
                str_of(spec, "serviceAccountName").to_string(),
            ),
            ("spec.hostNetwork".into(), host_network.to_string()),
            ("status.phase".into(), str_of(status, "phase").to_string()),
            (
                "status.podIP".into(),
                str_of(&status["podIPs"][0], "ip").to_string(),
            ),
            (
                "status.nominatedNodeName".into(),
                str_of(status, "nominatedNodeName").to_string(),
            ),
        ]
    }

    fn supports_field(&self, field: &str) -> bool {
        POD_FIELDS.contains(&field)
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("spec"), Name::Borrowed("status")])
    }
}

/// The fields of pods a field selector may use.
const POD_FIELDS: [&str; 8] = [
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];

/// ValidatePodUpdate's spec rules: the new spec must be valid, containers may not be added
/// or removed, and only the updatable fields may change.
fn validate_pod_update(spec: &Value, old: &Value) -> FieldErrors {
    let path = Path::root("spec");
    let mut errs = validate_pod_spec(spec, &path);
    errs.extend(validate_pod_only(spec, &path));
    for key in ["containers", "initContainers"] {
        let count = |s: &Value| s[key].as_array().map_or(0, Vec::len);
        if count(spec) != count(old) {
            errs.push(FieldError::forbidden(
                &path.child(key),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
    }
    let (deadline_errs, stop) = validate_deadline_update(spec, old, &path);
    errs.extend(deadline_errs);
    if stop {
        return errs;
    }
    errs.extend(validate_only_added_tolerations(
        spec,
        old,
        &path.child("tolerations"),
    ));
    if spec == old {
        return errs;
    }
    let munged = munged_pod_spec(spec, old);
    if &munged != old {
        errs.push(FieldError::forbidden(
            &path,
            format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{}",
                crate::util::json_diff(old, &munged)
            ),
        ));
    }
    errs
}

/// activeDeadlineSeconds may be set, or lowered; the flag says validation stops here, as
/// upstream returns early on some of these errors.
fn validate_deadline_update(spec: &Value, old: &Value, path: &Path) -> (FieldErrors, bool) {
    let deadline_path = path.child("activeDeadlineSeconds");
    let new_deadline = spec.get("activeDeadlineSeconds").and_then(Value::as_i64);
    let old_deadline = old.get("activeDeadlineSeconds").and_then(Value::as_i64);
    let (error, stop) = match (new_deadline, old_deadline) {
        (Some(value), _) if !(0..=MAX_INT32).contains(&value) => (
            FieldError::invalid(&deadline_path, value, inclusive_range(0, MAX_INT32)),
            true,
        ),
        (Some(value), Some(previous)) if previous < value => (
            FieldError::invalid(
                &deadline_path,
                value,
                "must be less than or equal to previous value",
            ),
            true,
        ),
        (None, Some(_)) => (
            FieldError::invalid(
                &deadline_path,
                Value::Null,
                "must not update from a positive integer to nil value",
            ),
            false,
        ),
        _ => return (FieldErrors::new(), false),
    };
    (error.into(), stop)
}

/// validateOnlyAddedTolerations: existing tolerations may change only their seconds.
fn validate_only_added_tolerations(spec: &Value, old: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let new_list = spec["tolerations"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let old_list = old["tolerations"].as_array().map_or(&[][..], Vec::as_slice);
    let without_seconds = |t: &Value| {
        let mut t = t.as_object().cloned().unwrap_or_default();
        t.remove("tolerationSeconds");
        t
    };
    for previous in old_list {
        let kept = new_list
            .iter()
            .any(|t| without_seconds(t) == without_seconds(previous));
        if !kept {
            errs.push(FieldError::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            ));
            return errs;
        }
    }
    errs
}

/// PodTemplates.
pub(crate) struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        default_template_of(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        default_template_of(object);
        start_generation(object);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        default_template_of(new);
        let changed = new["template"] != old["template"];
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
        set_generation(new, generation + i64::from(changed));
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        validate_pod_template_spec(&object["template"], &Path::root("template"))
    }
}

/// Defaults the `template` of a PodTemplate object.
fn default_template_of(object: &mut Value) {
    let fields = crate::util::fields_mut(object);
    default_pod_template(fields.entry("template").or_insert_with(|| json!({})));
}
