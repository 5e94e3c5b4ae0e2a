//! The strategies, printers and conversions of the built-in kinds outside the core workloads,
//! services and namespace-scoped basics: cluster objects (nodes, persistent volumes, quotas),
//! networking, RBAC, storage, policy, autoscaling, certificates, scheduling, node,
//! admission registration, flow control, dynamic resource allocation and API services.
//!
//! Every kind is described by [`Rules`]: upstream's defaulting (`SetDefaults_*`), what its
//! `PrepareForCreate` resets, its validation and update validation, whether it tracks
//! `metadata.generation`, how its names are validated and its field selectors. [`Rules`]
//! implements the generic registry's [`Strategy`] from them.

mod admissionregistration;
mod apiregistration;
mod autoscaling;
mod certificates;
mod cluster;
mod common;
mod dra;
mod flowcontrol;
mod networking;
mod policy;
mod rbac;
mod scheduling;
mod storage;

use std::sync::Arc;

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::UserInfo;
use kapi_server::resource::{Name, NameValidator, Strategy, TableConvertor};
use serde_json::Value;

use crate::kinds::KindStrategies;

pub(crate) use autoscaling::V1Converter as HorizontalPodAutoscalerV1Converter;
pub use scheduling::{SYSTEM_PRIORITY_CLASSES, ensure_system_priority_classes};

/// A field selector field of a kind and how to read it from an object.
pub(crate) type SelectableField = (&'static str, fn(&Value) -> String);

/// What upstream's registry strategy of one kind does, as data.
pub(crate) struct Rules {
    /// Upstream's defaulting, applied to every write of the main resource (upstream applies
    /// it when decoding a request and again when reading back from storage).
    pub defaults: fn(&mut Value),
    /// What PrepareForCreate clears or sets before defaulting (usually the status).
    pub on_create: fn(&mut Value),
    /// What PrepareForUpdate carries over from the old object besides the status.
    pub on_update: fn(&mut Value, &Value),
    /// Upstream's Validate.
    pub validate: fn(&Value) -> FieldErrors,
    /// What ValidateUpdate adds to the validation of the new object (immutable fields).
    pub validate_update: fn(&Value, &Value) -> FieldErrors,
    /// How the strategy keeps `metadata.generation`.
    pub generation: Generation,
    /// How names are validated.
    pub names: NameValidator,
    /// The resource-specific field selectors.
    pub fields: &'static [SelectableField],
    /// Upstream's AllowCreateOnUpdate.
    pub create_on_update: bool,
    /// Upstream's AllowUnconditionalUpdate.
    pub unconditional_update: bool,
    /// What PrepareForCreate takes from the requesting user.
    pub requester: fn(&mut Value, &UserInfo),
    /// Why a DELETE of a name is refused, if it is.
    pub undeletable: fn(&str) -> Option<&'static str>,
}

/// How a kind's strategy keeps `metadata.generation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Generation {
    /// The strategy leaves it alone.
    Untouched,
    /// It is 1 after create and never changes (PriorityClass).
    Created,
    /// It is 1 after create and grows with every change of the object outside `metadata`
    /// and `status`.
    Tracked,
}

/// No validation beyond the generic metadata checks.
pub(crate) fn no_errors(_object: &Value) -> FieldErrors {
    FieldErrors::new()
}

/// No update rules beyond the validation of the new object.
pub(crate) fn no_update_errors(_new: &Value, _old: &Value) -> FieldErrors {
    FieldErrors::new()
}

/// No defaults.
pub(crate) fn no_defaults(_object: &mut Value) {}

/// PrepareForCreate of kinds with a status: the status starts as the zero value, which Go
/// writes as `{}` when all its fields are optional.
pub(crate) fn reset_status(object: &mut Value) {
    set_status(object, Value::Object(serde_json::Map::new()));
}

/// Replaces the status of an object (PrepareForCreate of kinds whose zero status has
/// fields Go always writes).
pub(crate) fn set_status(object: &mut Value, status: Value) {
    crate::util::fields_mut(object).insert("status".into(), status);
}

/// The rules most kinds start from: no defaults, status reset on create, no validation,
/// DNS subdomain names, updates unconditional and never creating.
pub(crate) const BASE: Rules = Rules {
    defaults: no_defaults,
    on_create: reset_status,
    on_update: |_, _| {},
    validate: no_errors,
    validate_update: no_update_errors,
    generation: Generation::Untouched,
    names: kapi_apimachinery::validation::name_is_dns_subdomain,
    fields: &[],
    create_on_update: false,
    unconditional_update: true,
    requester: |_, _| {},
    undeletable: |_| None,
};

/// The part of an object that counts for its generation: everything but metadata, status
/// and the type fields.
fn generation_relevant(object: &Value) -> Vec<(&String, &Value)> {
    match object.as_object() {
        Some(fields) => fields
            .iter()
            .filter(|(key, _)| {
                !matches!(key.as_str(), "metadata" | "status" | "apiVersion" | "kind")
            })
            .collect(),
        None => Vec::new(),
    }
}

impl Strategy for Rules {
    /// The kind's defaults where upstream's decoder applies them, so the writer owns them;
    /// they run again in prepare for the server's own writes.
    fn default(&self, object: &mut Value) {
        (self.defaults)(object);
    }

    fn set_requester(&self, object: &mut Value, user: &UserInfo) {
        (self.requester)(object, user);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        (self.on_create)(object);
        (self.defaults)(object);
        if self.generation != Generation::Untouched {
            kapi_server::object::set_meta(object, "generation", Value::from(1));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        (self.on_update)(new, old);
        (self.defaults)(new);
        if self.generation == Generation::Tracked {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
            let changed = generation_relevant(new) != generation_relevant(old);
            let next = if changed { generation + 1 } else { generation };
            kapi_server::object::set_meta(new, "generation", Value::from(next));
        }
    }

    fn name_validator(&self) -> NameValidator {
        self.names
    }

    /// Upstream validates these kinds' metadata with core's ValidateObjectMeta, which adds
    /// the rules of `metadata.finalizers`.
    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = crate::util::validate_core_metadata_finalizers(object);
        errs.extend((self.validate)(object));
        errs
    }

    /// The new metadata is checked against the old one and again as new, so finalizer
    /// errors appear twice, as upstream reports them.
    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = crate::util::validate_core_metadata_finalizers(new);
        errs.extend(self.validate(new));
        errs.extend((self.validate_update)(new, old));
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        self.create_on_update
    }

    fn allow_unconditional_update(&self) -> bool {
        self.unconditional_update
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(Name, String)> {
        self.fields
            .iter()
            .map(|(name, read)| (Name::Borrowed(*name), read(object)))
            .collect()
    }

    fn supports_field(&self, field: &str) -> bool {
        self.fields.iter().any(|(name, _)| *name == field)
    }

    fn undeletable(&self, name: &str) -> Option<&'static str> {
        (self.undeletable)(name)
    }
}

/// The hooks of a kind from its rules and printer.
fn of_rules(rules: Rules, table: TableConvertor) -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(rules),
        table: Some(table),
    }
}

/// The strategies of the kinds this module owns.
pub(crate) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    let (rules, table) = match group {
        "" => cluster::strategies(kind)?,
        "networking.k8s.io" => networking::strategies(kind)?,
        "rbac.authorization.k8s.io" => rbac::strategies(kind)?,
        "storage.k8s.io" => storage::strategies(kind)?,
        "policy" => policy::strategies(kind)?,
        "autoscaling" => autoscaling::strategies(kind)?,
        "certificates.k8s.io" => certificates::strategies(kind)?,
        "scheduling.k8s.io" | "node.k8s.io" => scheduling::strategies(group, kind)?,
        "admissionregistration.k8s.io" => admissionregistration::strategies(kind)?,
        "flowcontrol.apiserver.k8s.io" => flowcontrol::strategies(kind)?,
        "resource.k8s.io" => dra::strategies(kind)?,
        "apiregistration.k8s.io" => apiregistration::strategies(kind)?,
        _ => return None,
    };
    Some(of_rules(rules, table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generation_follows_changes_outside_metadata_and_status() {
        let rules = Rules {
            generation: Generation::Tracked,
            ..BASE
        };
        let mut created = json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"y": 1}});
        rules.prepare_for_create(&mut created);
        assert_eq!(created["metadata"]["generation"], 1);
        assert_eq!(created["status"], json!({}));
        let mut same = json!({"metadata": {"name": "a", "labels": {"l": "v"}}, "spec": {"x": 1}});
        rules.prepare_for_update(&mut same, &created);
        assert_eq!(same["metadata"]["generation"], 1);
        let mut changed = json!({"metadata": {"name": "a"}, "spec": {"x": 2}});
        rules.prepare_for_update(&mut changed, &created);
        assert_eq!(changed["metadata"]["generation"], 2);
    }

    #[test]
    fn every_owned_kind_has_hooks() {
        let kinds = [
            ("", "Node"),
            ("", "PersistentVolume"),
            ("", "PersistentVolumeClaim"),
            ("", "ResourceQuota"),
            ("", "LimitRange"),
            ("", "ComponentStatus"),
            ("networking.k8s.io", "Ingress"),
            ("networking.k8s.io", "IngressClass"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSINode"),
            ("storage.k8s.io", "CSIStorageCapacity"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("storage.k8s.io", "VolumeAttributesClass"),
            ("policy", "PodDisruptionBudget"),
            ("autoscaling", "HorizontalPodAutoscaler"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            ("scheduling.k8s.io", "PriorityClass"),
            ("node.k8s.io", "RuntimeClass"),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
            ),
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
            ),
            ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
            ("resource.k8s.io", "DeviceClass"),
            ("resource.k8s.io", "ResourceClaim"),
            ("resource.k8s.io", "ResourceClaimTemplate"),
            ("resource.k8s.io", "ResourceSlice"),
            ("apiregistration.k8s.io", "APIService"),
        ];
        for (group, kind) in kinds {
            assert!(strategies(group, kind).is_some(), "{group} {kind}");
        }
        assert!(strategies("", "Pod").is_none());
        assert!(strategies("apps", "Deployment").is_none());
        assert!(crate::kinds::converter("autoscaling", "v1", "HorizontalPodAutoscaler").is_some());
        assert!(crate::kinds::converter("autoscaling", "v2", "HorizontalPodAutoscaler").is_none());
    }
}
