//! Why a patch could not be applied, and how upstream answers each case.

use serde_json::Value;

use kapi_apimachinery::gofmt;

/// The message upstream puts in the `Status` of every JSON patch application error (and of
/// a few strategic merge patch errors): it answers with
/// `errors.NewGenericServerResponse(422, "", GroupResource{}, "", err.Error(), 0, false)`,
/// which keeps only this fixed text and drops the error itself.
pub const UNPROCESSABLE_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// The error `encoding/json` reports when a non-object document is decoded into the
/// apiserver's "which apiVersion and kind is this" probe.
const NOT_AN_OBJECT_DECODE_ERROR: &str = "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// A patch that could not be applied. Each variant says how kube-apiserver answers it;
/// [`status_code`](PatchError::status_code), [`reason`](PatchError::reason),
/// [`message`](PatchError::message), [`has_details`](PatchError::has_details) and
/// [`causes`](PatchError::causes) give the fields of the `Status` to write.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// A malformed patch body: 400 `BadRequest`, with this text as the message.
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well-formed but cannot be applied (a failed JSON patch `test`, a path
    /// that does not exist, a list of lists in a strategic merge patch, ...): 422 `Invalid`
    /// with the fixed [`UNPROCESSABLE_MESSAGE`] and empty `details` (`"details":{}`).
    /// The text here is what upstream's library said; upstream does not send it.
    #[error("{0}")]
    Unprocessable(String),
    /// A JSON patch with more operations than allowed: 413 `RequestEntityTooLarge`.
    #[error(
        "Request entity too large: The allowed maximum operations in a JSON patch is {max}, got {got}"
    )]
    TooManyOperations {
        /// The limit (10000 upstream).
        max: usize,
        /// How many operations the patch has.
        got: usize,
    },
    /// The patched document is not a JSON object (a merge patch that is an array, a JSON
    /// patch that replaces the whole document with an array). Upstream fails to decode it
    /// and answers 422 `Invalid` naming the field `patch`, see [`PatchError::causes`].
    #[error("{}", not_an_object_message(.patched))]
    NotAnObject {
        /// The patched document.
        patched: Value,
    },
    /// An error upstream's strategic merge patch returns without an API status (a missing
    /// merge key, an unknown `$patch` value, mixed element types, ...): upstream answers
    /// 500 with an empty reason and this text as the message.
    #[error("{0}")]
    Internal(String),
}

/// One entry of `details.causes` in the `Status` upstream writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The cause type, JSON `reason` (e.g. `FieldValueInvalid`).
    pub reason: &'static str,
    /// The cause message.
    pub message: String,
    /// The field, JSON `field`.
    pub field: &'static str,
}

impl PatchError {
    /// The HTTP status code upstream answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Unprocessable(_) | PatchError::NotAnObject { .. } => 422,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::Internal(_) => 500,
        }
    }

    /// The `reason` of upstream's `Status` (empty for [`PatchError::Internal`], which
    /// upstream reports as `StatusReasonUnknown`).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::Unprocessable(_) | PatchError::NotAnObject { .. } => "Invalid",
            PatchError::TooManyOperations { .. } => "RequestEntityTooLarge",
            PatchError::Internal(_) => "",
        }
    }

    /// The `message` of upstream's `Status`.
    pub fn message(&self) -> String {
        match self {
            PatchError::Unprocessable(_) => UNPROCESSABLE_MESSAGE.to_string(),
            other => other.to_string(),
        }
    }

    /// Whether upstream's `Status` has a `details` object (`{}` when it has no causes).
    pub fn has_details(&self) -> bool {
        matches!(
            self,
            PatchError::Unprocessable(_) | PatchError::NotAnObject { .. }
        )
    }

    /// The `details.causes` of upstream's `Status`.
    pub fn causes(&self) -> Vec<Cause> {
        match self {
            PatchError::NotAnObject { patched } => vec![Cause {
                reason: "FieldValueInvalid",
                message: not_an_object_cause(patched),
                field: "patch",
            }],
            _ => Vec::new(),
        }
    }
}

/// `Invalid value: "<json>": <decode error>`, the body of the field error upstream builds.
fn not_an_object_cause(patched: &Value) -> String {
    format!(
        "Invalid value: {}: {NOT_AN_OBJECT_DECODE_ERROR}",
        gofmt::quote(&gofmt::json(patched))
    )
}

/// Upstream's `NewInvalid(GroupKind{}, "", ...)` message: empty kind, empty quoted name.
fn not_an_object_message(patched: &Value) -> String {
    format!(" \"\" is invalid: patch: {}", not_an_object_cause(patched))
}

/// Upstream's strategic merge patch error texts (k8s.io/apimachinery/pkg/util/mergepatch).
pub(crate) mod smp {
    use serde_json::{Map, Value};

    use super::PatchError;
    use kapi_apimachinery::gofmt;

    pub(crate) const BAD_JSON_DOC: &str = "invalid JSON document";
    pub(crate) const NO_LIST_OF_LISTS: &str = "lists of lists are not supported";
    pub(crate) const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
    pub(crate) const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
    pub(crate) const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";

    /// "map: %v does not contain declared merge key: %s"
    pub(crate) fn no_merge_key(map: &Map<String, Value>, key: &str) -> PatchError {
        PatchError::Internal(format!(
            "map: {} does not contain declared merge key: {key}",
            gofmt::map_v(map)
        ))
    }

    /// "expected a %s, but received a %s", expecting a JSON object.
    pub(crate) fn expected_map(actual: &Value) -> PatchError {
        bad_arg_type("map[string]interface {}", actual)
    }

    /// "expected a %s, but received a %s", expecting a JSON array.
    pub(crate) fn expected_list(actual: &Value) -> PatchError {
        bad_arg_type("[]interface {}", actual)
    }

    fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
        PatchError::Internal(format!(
            "expected a {expected}, but received a {}",
            gofmt::type_string(actual)
        ))
    }

    /// "unknown patch type: %s in map: %v"
    pub(crate) fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
        PatchError::Internal(format!(
            "unknown patch type: {} in map: {}",
            gofmt::s(directive),
            gofmt::map_v(map)
        ))
    }

    /// "value for key %v is not a map"
    pub(crate) fn not_a_map(index: usize) -> PatchError {
        PatchError::Internal(format!("value for key {index} is not a map"))
    }
}
