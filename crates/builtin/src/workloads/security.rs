//! Validation of pod and container security contexts (upstream's
//! validatePodSpecSecurityContext and ValidateSecurityContext): user and group ids,
//! seccomp and AppArmor profiles, the fsGroup change policy and privilege escalation.
//! `privileged` is allowed, as with kube-apiserver's `--allow-privileged=true`.

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use super::podspec::inclusive_range;
use crate::util::str_of;

/// The profile types of seccomp and AppArmor, as upstream lists them.
const PROFILE_TYPES: [&str; 3] = ["Localhost", "RuntimeDefault", "Unconfined"];

/// IsValidUserID / IsValidGroupID for the optional integer `key` of `context`.
fn id_range(context: &Value, key: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(id) = context.get(key).and_then(Value::as_i64)
        && !(0..=2_147_483_647).contains(&id)
    {
        errs.push(FieldError::invalid(
            &path.child(key),
            id,
            inclusive_range(0, 2_147_483_647),
        ));
    }
    errs
}

/// validatePodSpecSecurityContext: `spec` is the pod spec, `path` the path of
/// `spec.securityContext` (where upstream also reports `shareProcessNamespace`).
pub(crate) fn validate_pod_security_context(spec: &Value, path: &Path) -> FieldErrors {
    let context = &spec["securityContext"];
    let mut errs = FieldErrors::new();
    if !context.is_object() {
        return errs;
    }
    for key in ["fsGroup", "runAsUser", "runAsGroup"] {
        errs.extend(id_range(context, key, path));
    }
    for (i, gid) in context["supplementalGroups"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let gid = gid.as_i64().unwrap_or(0);
        if !(0..=2_147_483_647).contains(&gid) {
            errs.push(FieldError::invalid(
                &path.child("supplementalGroups").index(i),
                gid,
                inclusive_range(0, 2_147_483_647),
            ));
        }
    }
    if spec["shareProcessNamespace"].as_bool() == Some(true)
        && spec["hostPID"].as_bool() == Some(true)
    {
        errs.push(FieldError::invalid(
            &path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    if let Some(policy) = context.get("fsGroupChangePolicy").and_then(Value::as_str)
        && !["Always", "OnRootMismatch"].contains(&policy)
    {
        errs.push(FieldError::not_supported(
            &path.child("fsGroupChangePolicy"),
            policy,
            ["Always", "OnRootMismatch"],
        ));
    }
    errs.extend(validate_seccomp(
        &context["seccompProfile"],
        &path.child("seccompProfile"),
    ));
    errs.extend(validate_app_armor(
        &context["appArmorProfile"],
        &path.child("appArmorProfile"),
    ));
    errs
}

/// ValidateSecurityContext of a container.
pub(crate) fn validate_container_security_context(context: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !context.is_object() {
        return errs;
    }
    for key in ["runAsUser", "runAsGroup"] {
        errs.extend(id_range(context, key, path));
    }
    errs.extend(validate_seccomp(
        &context["seccompProfile"],
        &path.child("seccompProfile"),
    ));
    if context["allowPrivilegeEscalation"].as_bool() == Some(false) {
        if context["privileged"].as_bool() == Some(true) {
            errs.push(FieldError::invalid(
                path,
                context.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let added = context["capabilities"]["add"].as_array();
        if added
            .into_iter()
            .flatten()
            .any(|c| c.as_str() == Some("CAP_SYS_ADMIN"))
        {
            errs.push(FieldError::invalid(
                path,
                context.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    errs.extend(validate_app_armor(
        &context["appArmorProfile"],
        &path.child("appArmorProfile"),
    ));
    errs
}

/// validateSeccompProfileField.
fn validate_seccomp(profile: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !profile.is_object() {
        return errs;
    }
    let type_ = str_of(profile, "type");
    match type_ {
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when seccompProfile is set",
        )),
        t if !PROFILE_TYPES.contains(&t) => {
            errs.push(FieldError::not_supported(
                &path.child("type"),
                t,
                PROFILE_TYPES,
            ));
        }
        _ => {}
    }
    let localhost = profile.get("localhostProfile").filter(|v| !v.is_null());
    if type_ == "Localhost" {
        if localhost.is_none() {
            errs.push(FieldError::required(
                &path.child("localhostProfile"),
                "must be set when seccomp type is Localhost",
            ));
        }
    } else if localhost.is_some() {
        errs.push(FieldError::invalid(
            &path.child("localhostProfile"),
            profile.clone(),
            "can only be set when seccomp type is Localhost",
        ));
    }
    errs
}

/// ValidateAppArmorProfileField.
fn validate_app_armor(profile: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !profile.is_object() {
        return errs;
    }
    let localhost = profile.get("localhostProfile").filter(|v| !v.is_null());
    let localhost_path = path.child("localhostProfile");
    match str_of(profile, "type") {
        "Localhost" => match localhost.and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required(
                &localhost_path,
                "must be set when AppArmor type is Localhost",
            )),
            Some(name) if name.trim() != name => errs.push(FieldError::invalid(
                &localhost_path,
                name,
                "must not be padded with whitespace",
            )),
            Some(_) => {}
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(value) = localhost {
                errs.push(FieldError::invalid(
                    &localhost_path,
                    value.clone(),
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            PROFILE_TYPES,
        )),
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::util::{causes, expect};

    #[test]
    fn pod_contexts() {
        let spec = json!({"hostPID": true, "shareProcessNamespace": true,
            "securityContext": {"runAsUser": -1, "fsGroupChangePolicy": "Sometimes",
                                "seccompProfile": {"type": "Localhost"}}});
        let path = Path::root("spec").child("securityContext");
        assert_eq!(
            causes(&validate_pod_security_context(&spec, &path)),
            expect(&[
                (
                    "spec.securityContext.runAsUser",
                    "FieldValueInvalid",
                    "Invalid value: -1: must be between 0 and 2147483647, inclusive"
                ),
                (
                    "spec.securityContext.shareProcessNamespace",
                    "FieldValueInvalid",
                    "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"
                ),
                (
                    "spec.securityContext.fsGroupChangePolicy",
                    "FieldValueNotSupported",
                    "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnRootMismatch\""
                ),
                (
                    "spec.securityContext.seccompProfile.localhostProfile",
                    "FieldValueRequired",
                    "Required value: must be set when seccomp type is Localhost"
                ),
            ])
        );
    }

    #[test]
    fn container_contexts() {
        let path = Path::root("c");
        let context = json!({"allowPrivilegeEscalation": false, "privileged": true,
                             "appArmorProfile": {"type": "Strict"}});
        assert_eq!(
            causes(&validate_container_security_context(&context, &path)),
            expect(&[
                (
                    "c",
                    "FieldValueInvalid",
                    "Invalid value: {\"allowPrivilegeEscalation\":false,\"appArmorProfile\":{\"type\":\"Strict\"},\"privileged\":true}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
                ),
                (
                    "c.appArmorProfile.type",
                    "FieldValueNotSupported",
                    "Unsupported value: \"Strict\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\""
                ),
            ])
        );
        assert!(validate_container_security_context(&json!({"runAsUser": 1000}), &path).is_empty());
    }
}
