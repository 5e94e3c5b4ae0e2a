//! Reading a CustomResourceDefinition (apiextensions.k8s.io/v1, as JSON) the way the
//! controllers and the custom resource handler need it, and setting its status conditions
//! as upstream's apihelpers do.

use kapi_apimachinery::meta::now_rfc3339;
use serde_json::{Map, Value};

/// A CRD's names (`spec.names` or `status.acceptedNames`) and its group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrdNames {
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

impl CrdNames {
    /// The names requested in `spec.names`.
    pub fn spec(crd: &Value) -> CrdNames {
        Self::from_names(crd, &crd["spec"]["names"])
    }

    /// The names the naming controller accepted (`status.acceptedNames`).
    pub fn accepted(crd: &Value) -> CrdNames {
        Self::from_names(crd, &crd["status"]["acceptedNames"])
    }

    fn from_names(crd: &Value, names: &Value) -> CrdNames {
        let text = |key: &str| names[key].as_str().unwrap_or_default().to_string();
        CrdNames {
            group: group(crd).to_string(),
            plural: text("plural"),
            singular: text("singular"),
            kind: text("kind"),
            list_kind: text("listKind"),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
        }
    }
}

/// The strings of a JSON array (others skipped); empty when it is not an array.
pub(crate) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `spec.group`.
pub fn group(crd: &Value) -> &str {
    crd["spec"]["group"].as_str().unwrap_or_default()
}

/// Whether the custom resources are namespaced (`spec.scope: Namespaced`).
pub fn is_namespaced(crd: &Value) -> bool {
    crd["spec"]["scope"].as_str() == Some("Namespaced")
}

/// The entries of `spec.versions`.
pub fn versions(crd: &Value) -> &[Value] {
    crd["spec"]["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The entry of `spec.versions` named `name`.
pub fn version<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    versions(crd)
        .iter()
        .find(|v| v["name"].as_str() == Some(name))
}

/// The versions with `served: true`, in `spec.versions` order.
pub fn served_versions(crd: &Value) -> impl Iterator<Item = &Value> {
    versions(crd)
        .iter()
        .filter(|v| v["served"].as_bool() == Some(true))
}

/// The name of the first version with `storage: true`.
pub fn storage_version(crd: &Value) -> Option<&str> {
    versions(crd)
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
}

/// Whether `version` is in `status.storedVersions` (upstream's IsStoredVersion).
pub fn is_stored_version(crd: &Value, version: &str) -> bool {
    crd["status"]["storedVersions"]
        .as_array()
        .is_some_and(|stored| stored.iter().any(|v| v.as_str() == Some(version)))
}

/// A version's `subresources` (null when it has none).
pub fn subresources<'a>(crd: &'a Value, version_name: &str) -> &'a Value {
    version(crd, version_name).map_or(&Value::Null, |v| &v["subresources"])
}

/// Whether a version has the `status` subresource.
pub fn has_status_subresource(crd: &Value, version_name: &str) -> bool {
    subresources(crd, version_name)["status"].is_object()
}

/// A version's scale subresource paths, when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// e.g. `.status.selector`; `None` when not set.
    pub label_selector_path: Option<String>,
}

/// A version's `subresources.scale`, when present.
pub fn scale_subresource(crd: &Value, version_name: &str) -> Option<ScaleSubresource> {
    let scale = &subresources(crd, version_name)["scale"];
    scale.as_object()?;
    let text = |key: &str| scale[key].as_str().unwrap_or_default().to_string();
    Some(ScaleSubresource {
        spec_replicas_path: text("specReplicasPath"),
        status_replicas_path: text("statusReplicasPath"),
        label_selector_path: scale["labelSelectorPath"]
            .as_str()
            .filter(|p| !p.is_empty())
            .map(str::to_string),
    })
}

/// A version's `additionalPrinterColumns` (empty when none).
pub fn printer_columns<'a>(crd: &'a Value, version_name: &str) -> &'a [Value] {
    version(crd, version_name)
        .and_then(|v| v["additionalPrinterColumns"].as_array())
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A version's `schema.openAPIV3Schema`, when present.
pub fn version_schema<'a>(crd: &'a Value, version_name: &str) -> Option<&'a Value> {
    version(crd, version_name)
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .filter(|s| s.is_object())
}

/// The condition types upstream's controllers set on a CRD.
pub mod condition_type {
    pub const ESTABLISHED: &str = "Established";
    pub const NAMES_ACCEPTED: &str = "NamesAccepted";
    pub const NON_STRUCTURAL_SCHEMA: &str = "NonStructuralSchema";
    pub const TERMINATING: &str = "Terminating";
    pub const KUBERNETES_API_APPROVAL_POLICY_CONFORMANT: &str =
        "KubernetesAPIApprovalPolicyConformant";
}

/// One `status.conditions` entry to set (its `lastTransitionTime` is managed by
/// [`set_condition`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// The condition of `type_` in `status.conditions`.
pub fn find_condition<'a>(crd: &'a Value, type_: &str) -> Option<&'a Value> {
    crd["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"].as_str() == Some(type_))
}

/// Whether the condition of `type_` has status `True` (e.g. the CRD is Established).
pub fn is_condition_true(crd: &Value, type_: &str) -> bool {
    find_condition(crd, type_).is_some_and(|c| c["status"].as_str() == Some("True"))
}

/// Sets a condition now, as upstream's SetCRDCondition: appended when new; otherwise its
/// status, reason and message replaced, and `lastTransitionTime` moved only when the
/// status changes (or was unset).
pub fn set_condition(crd: &mut Value, condition: &Condition) {
    set_condition_at(crd, condition, &now_rfc3339());
}

/// [`set_condition`] with the current time given (`now`, RFC 3339).
pub fn set_condition_at(crd: &mut Value, condition: &Condition, now: &str) {
    let Some(crd) = crd.as_object_mut() else {
        return;
    };
    let status = crd
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if !status.is_object() {
        *status = Value::Object(Map::new());
    }
    let conditions = &mut status["conditions"];
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(conditions) = conditions else {
        unreachable!("made an array above");
    };
    let existing = conditions
        .iter_mut()
        .find(|c| c["type"].as_str() == Some(condition.type_.as_str()));
    let Some(existing) = existing else {
        conditions.push(condition_value(condition, now));
        return;
    };
    let transition_unset = existing["lastTransitionTime"]
        .as_str()
        .is_none_or(str::is_empty);
    if existing["status"].as_str() != Some(condition.status.as_str()) || transition_unset {
        existing["lastTransitionTime"] = Value::from(now);
    }
    existing["status"] = Value::from(condition.status.as_str());
    set_or_remove(existing, "reason", &condition.reason);
    set_or_remove(existing, "message", &condition.message);
}

/// Removes the condition of `type_` (upstream's RemoveCRDCondition).
pub fn remove_condition(crd: &mut Value, type_: &str) {
    if let Some(conditions) = crd
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        conditions.retain(|c| c["type"].as_str() != Some(type_));
    }
}

/// A condition as the typed v1 struct writes it (`reason` and `message` omitted when empty).
fn condition_value(condition: &Condition, now: &str) -> Value {
    let mut value = serde_json::json!({
        "type": condition.type_,
        "status": condition.status,
        "lastTransitionTime": now,
    });
    set_or_remove(&mut value, "reason", &condition.reason);
    set_or_remove(&mut value, "message", &condition.message);
    value
}

fn set_or_remove(object: &mut Value, key: &str, text: &str) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    if text.is_empty() {
        map.remove(key);
    } else {
        map.insert(key.into(), Value::from(text));
    }
}
