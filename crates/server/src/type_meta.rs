//! An object's type (its `apiVersion` and `kind`) is its resource's, whatever wrote it.
//!
//! kube-apiserver cannot store a ConfigMap as a Secret: built-in objects are decoded into Go
//! types, and a body of another type fails to convert into the resource's. kapi keeps objects
//! as JSON, so it checks instead, at the two places every write passes: where a served object
//! becomes the stored one ([`crate::resource::ResourceDefinition::stored_form`]) and after
//! mutating admission (which may patch the stored form in place). Requests get upstream's
//! answers before they reach either (the handlers decode and patch as upstream does); these
//! checks are the last line, with the answers upstream's decoding would give there:
//!
//! - built-in resources: a missing `apiVersion` or `kind` is the resource's (decoding into a
//!   typed object fills them), another type is a 500 `converting (v1.Secret) to
//!   (core.ConfigMap): unknown conversion`, as upstream's conversion fails;
//! - custom resources: another type (or none) is the 422 of the custom resource validator's
//!   ValidateTypeMeta: `kind: Invalid value: "Foo": must be CronTab`.

use kapi_apimachinery::schema::{GroupKind, GroupVersion, split_api_version};
use kapi_apimachinery::status::{ApiError, Status};
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use crate::object;

/// Go's name of a versioned API type, as conversion errors print it: `v1.Secret`.
pub fn versioned_type_name(version: &str, kind: &str) -> String {
    format!("{version}.{kind}")
}

/// Go's name of a group's internal type, as conversion errors print it: `core.ConfigMap`,
/// `apps.Deployment` (the package is the group's first label).
pub fn internal_type_name(group: &str, kind: &str) -> String {
    let package = match group.split('.').next() {
        None | Some("") => "core",
        Some(label) => label,
    };
    format!("{package}.{kind}")
}

/// Checks that `object` is a `kind` of `group_version`, as described in the module
/// documentation; untyped (unstructured) objects get the custom resources' answer.
pub fn check(
    group_version: &GroupVersion,
    kind: &str,
    typed: bool,
    object: &mut Value,
) -> Result<(), ApiError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let object_kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = split_api_version(api_version);
    let version_matches = group == group_version.group && version == group_version.version;
    if version_matches && object_kind == kind {
        return Ok(());
    }
    if !typed {
        return Err(invalid_type_meta(group_version, kind, object));
    }
    // Here at least one of them is missing or wrong: only missing ones are filled in.
    if (api_version.is_empty() || version_matches)
        && (object_kind.is_empty() || object_kind == kind)
    {
        object["apiVersion"] = Value::from(group_version.api_version());
        object["kind"] = Value::from(kind);
        return Ok(());
    }
    Err(ApiError::from(Status::failure(
        500,
        "",
        unknown_conversion(version, object_kind, &group_version.group, kind),
    )))
}

/// Upstream's conversion error between two types without a conversion.
pub fn unknown_conversion(from_version: &str, from_kind: &str, group: &str, kind: &str) -> String {
    format!(
        "converting ({}) to ({}): unknown conversion",
        versioned_type_name(from_version, from_kind),
        internal_type_name(group, kind)
    )
}

/// The custom resource validator's 422 for an object of another type: the kind and group
/// in the message and details are the object's own.
fn invalid_type_meta(group_version: &GroupVersion, kind: &str, object: &Value) -> ApiError {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let object_kind = object["kind"].as_str().unwrap_or_default();
    let mut errors = FieldErrors::new();
    if object_kind != kind {
        errors.push(FieldError::invalid(
            &Path::root("kind"),
            object_kind,
            format!("must be {kind}"),
        ));
    }
    let expected = format!("{}/{}", group_version.group, group_version.version);
    if api_version != expected {
        errors.push(FieldError::invalid(
            &Path::root("apiVersion"),
            api_version,
            format!("must be {expected}"),
        ));
    }
    let (group, _) = split_api_version(api_version);
    let group_kind = GroupKind::new(group, object_kind);
    ApiError::invalid(&group_kind, object::name(object), &errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core_v1() -> GroupVersion {
        GroupVersion::new("", "v1")
    }

    #[test]
    fn built_in_objects_of_another_type_fail_to_convert() {
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}});
        let err = check(&core_v1(), "ConfigMap", true, &mut secret).unwrap_err();
        assert_eq!((err.code(), err.reason()), (500, ""));
        assert_eq!(
            err.message(),
            "converting (v1.Secret) to (core.ConfigMap): unknown conversion"
        );
        let mut pod = json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {}});
        let err = check(&core_v1(), "ConfigMap", true, &mut pod).unwrap_err();
        assert_eq!(
            err.message(),
            "converting (v1.ConfigMap) to (core.ConfigMap): unknown conversion"
        );
    }

    #[test]
    fn built_in_objects_without_a_type_get_their_resource_s() {
        let mut object = json!({"metadata": {"name": "a"}});
        check(&core_v1(), "ConfigMap", true, &mut object).unwrap();
        assert_eq!(
            (object["apiVersion"].as_str(), object["kind"].as_str()),
            (Some("v1"), Some("ConfigMap"))
        );
        let mut object = json!({"apiVersion": "v1", "metadata": {"name": "a"}});
        check(&core_v1(), "ConfigMap", true, &mut object).unwrap();
        assert_eq!(object["kind"], "ConfigMap");
        let mut object = json!({"kind": "Secret", "metadata": {"name": "a"}});
        assert!(check(&core_v1(), "ConfigMap", true, &mut object).is_err());
    }

    #[test]
    fn custom_resources_of_another_type_are_invalid_as_upstream_s_validator_says() {
        let gv = GroupVersion::new("stable.example.com", "v1");
        let mut object =
            json!({"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "my-cr"}});
        let err = check(&gv, "CronTab", false, &mut object).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            r#"Pod.apps "my-cr" is invalid: [kind: Invalid value: "Pod": must be CronTab, apiVersion: Invalid value: "apps/v1": must be stable.example.com/v1]"#
        );
        let mut object = json!({"apiVersion": "stable.example.com/v1", "kind": "Foo", "metadata": {"name": "my-cr"}});
        let err = check(&gv, "CronTab", false, &mut object).unwrap_err();
        assert_eq!(
            err.message(),
            r#"Foo.stable.example.com "my-cr" is invalid: kind: Invalid value: "Foo": must be CronTab"#
        );
    }
}
