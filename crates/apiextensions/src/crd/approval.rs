//! API review approval of CRDs in the protected `k8s.io` and `kubernetes.io` groups
//! (upstream's apihelpers.GetAPIApprovalState and the CRD validation using it).

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use super::access;

/// The annotation recording API review approval of a protected group's CRD.
pub const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The approval annotation of CRDs in the protected `k8s.io` and `kubernetes.io` groups.
pub(crate) fn validate_api_approval(crd: &Value, old: Option<&Value>) -> FieldErrors {
    if !is_protected_community_group(access::group(crd)) {
        return FieldErrors::new();
    }
    let annotation = |object: &Value| {
        object["metadata"]["annotations"][API_APPROVAL_ANNOTATION]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let new_value = annotation(crd);
    let (state, reason) = approval_state(&new_value);
    if old.is_some_and(|old| approval_state(&annotation(old)).0 == state) {
        return FieldErrors::new();
    }
    let path = Path::root("metadata")
        .child("annotations")
        .key(API_APPROVAL_ANNOTATION);
    match state {
        ApprovalState::Approved | ApprovalState::Bypassed => FieldErrors::new(),
        ApprovalState::Missing => FieldErrors::from(FieldError::required(&path, reason)),
        ApprovalState::Invalid => FieldErrors::from(FieldError::invalid(&path, new_value, reason)),
    }
}

/// Whether a group is reserved for Kubernetes community APIs.
pub fn is_protected_community_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.ends_with(&format!(".{domain}")))
}

/// What the approval annotation says (upstream's APIApprovalState).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalState {
    /// A URL of the approving pull request.
    Approved,
    /// `unapproved...`: knowingly not approved.
    Bypassed,
    Missing,
    Invalid,
}

/// The approval state of an annotation value and upstream's words for it (the reason of
/// the KubernetesAPIApprovalPolicyConformant condition and of validation errors).
pub fn approval_state(annotation: &str) -> (ApprovalState, String) {
    if annotation.is_empty() {
        return (
            ApprovalState::Missing,
            format!(
                "protected groups must have approval annotation \"{API_APPROVAL_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        );
    }
    if annotation.starts_with("unapproved") {
        return (
            ApprovalState::Bypassed,
            format!("not approved: {}", kapi_apimachinery::quote(annotation)),
        );
    }
    if is_absolute_url_with_host(annotation) {
        return (ApprovalState::Approved, format!("approved in {annotation}"));
    }
    (
        ApprovalState::Invalid,
        format!(
            "protected groups must have approval annotation \"{API_APPROVAL_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ),
    )
}

/// Whether `value` parses as a request URI with a scheme and a host (`https://host/...`).
fn is_absolute_url_with_host(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    scheme_ok && !host.is_empty() && !value.contains(' ')
}
