//! The meta/v1 `Status` object and `ApiError`, the one error type that maps to an HTTP
//! response (k8s.io/apimachinery/pkg/api/errors).
//!
//! Every constructor reproduces upstream's code, reason, details and message text exactly:
//! clients branch on the reason and tests compare the messages.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::gofmt::quote;
use crate::schema::{GroupKind, GroupResource};
use crate::validation::field::FieldErrors;

/// `status` of a successful operation.
pub const STATUS_SUCCESS: &str = "Success";
/// `status` of a failed operation.
pub const STATUS_FAILURE: &str = "Failure";

/// The list metadata of a `Status` (meta/v1 ListMeta); empty in errors, but always present
/// in JSON as `"metadata":{}`, as upstream writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// Deprecated self link; never set by kapi.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub self_link: String,
    /// The resource version of a list.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The continue token of a paginated list.
    #[serde(default, rename = "continue", skip_serializing_if = "String::is_empty")]
    pub continue_: String,
    /// How many items a paginated list has left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

/// The meta/v1 `Status` object, in upstream's JSON field order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Always `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Always empty for errors.
    #[serde(default)]
    pub metadata: ListMeta,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A machine-readable reason (`NotFound`, `AlreadyExists`, `Invalid`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extended data; upstream writes `"details":{}` when present but empty, and so do we.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The suggested HTTP status code; 0 is omitted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: i32,
}

/// Details of a `Status`, in upstream's JSON field order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The group of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The kind — for most errors upstream puts the resource (e.g. `configmaps`) here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The UID of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The individual causes, e.g. one per invalid field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// How long the client should wait before retrying; 0 is omitted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: i32,
}

/// One cause of a `Status` error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type (upstream's `CauseType`, JSON `reason`), e.g. `FieldValueInvalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable description of the cause.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field concerned, e.g. `metadata.name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// serde's skip test for the integer fields upstream marks `omitempty`.
fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl Status {
    /// A `Failure` status with kind and apiVersion set, as the server writes it.
    pub fn failure(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            status: STATUS_FAILURE.into(),
            message: message.into(),
            reason: reason.into(),
            code: code.into(),
            ..Status::default()
        }
    }

    /// `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`, the body of
    /// DELETE responses that do not return the object.
    pub fn success() -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            status: STATUS_SUCCESS.into(),
            ..Status::default()
        }
    }

    /// Sets the details.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// The compact JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a Status always serializes")
    }
}

/// Details naming an object by group and resource, as most upstream errors fill them.
fn object_details(resource: &GroupResource, name: String) -> StatusDetails {
    StatusDetails {
        name,
        group: resource.group.clone(),
        kind: resource.resource.clone(),
        ..StatusDetails::default()
    }
}

/// Details carrying only a retry delay.
fn retry_details(retry_after_seconds: u32) -> StatusDetails {
    StatusDetails {
        retry_after_seconds: clamp(retry_after_seconds),
        ..StatusDetails::default()
    }
}

/// Converts a delay to the wire's int32.
fn clamp(seconds: u32) -> i32 {
    i32::try_from(seconds).unwrap_or(i32::MAX)
}

/// An API error: a failure `Status` whose `code` is the HTTP status to answer with.
/// Its `Display` is the status message, as upstream's `StatusError.Error()`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.message)]
pub struct ApiError(Box<Status>);

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        ApiError(Box::new(status))
    }
}

impl ApiError {
    /// The HTTP status code. A status without one answers 200 for `Success` and 500
    /// otherwise, as upstream's ErrorToAPIStatus does.
    pub fn code(&self) -> u16 {
        match u16::try_from(self.0.code) {
            Ok(code) if code != 0 => code,
            _ if self.0.status == STATUS_SUCCESS => 200,
            _ => 500,
        }
    }

    /// The status reason, e.g. `NotFound`.
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// The message (same as `to_string()`).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The status object to write as the response body.
    pub fn status(&self) -> &Status {
        &self.0
    }

    /// Takes the status object.
    pub fn into_status(self) -> Status {
        *self.0
    }

    /// The details' retry delay, when there is one (for the `Retry-After` header).
    pub fn retry_after_seconds(&self) -> Option<u32> {
        let seconds = self.0.details.as_ref()?.retry_after_seconds;
        u32::try_from(seconds).ok().filter(|s| *s > 0)
    }

    /// True for `NotFound` errors.
    pub fn is_not_found(&self) -> bool {
        self.reason() == "NotFound"
    }

    /// True for `AlreadyExists` errors.
    pub fn is_already_exists(&self) -> bool {
        self.reason() == "AlreadyExists"
    }

    /// True for `Conflict` errors.
    pub fn is_conflict(&self) -> bool {
        self.reason() == "Conflict"
    }

    /// True for `Invalid` errors.
    pub fn is_invalid(&self) -> bool {
        self.reason() == "Invalid"
    }

    /// Any failure with the given code, reason and message, without details.
    pub fn new_generic(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Status::failure(code, reason, message).into()
    }

    /// A failure status with details.
    fn with_details(
        code: u16,
        reason: &str,
        message: impl Into<String>,
        details: StatusDetails,
    ) -> Self {
        Status::failure(code, reason, message)
            .with_details(details)
            .into()
    }

    /// 404 `configmaps "x" not found` (upstream's NewNotFound).
    pub fn not_found(resource: &GroupResource, name: impl Into<String>) -> Self {
        let name = name.into();
        let message = format!("{resource} {} not found", quote(&name));
        ApiError::with_details(404, "NotFound", message, object_details(resource, name))
    }

    /// 409 AlreadyExists `configmaps "x" already exists` (upstream's NewAlreadyExists).
    pub fn already_exists(resource: &GroupResource, name: impl Into<String>) -> Self {
        let name = name.into();
        let message = format!("{resource} {} already exists", quote(&name));
        ApiError::with_details(
            409,
            "AlreadyExists",
            message,
            object_details(resource, name),
        )
    }

    /// 409 AlreadyExists for a generated name that collided (upstream's
    /// NewGenerateNameConflict).
    pub fn generate_name_conflict(
        resource: &GroupResource,
        name: impl Into<String>,
        retry_after_seconds: u32,
    ) -> Self {
        let name = name.into();
        let message = format!(
            "{resource} {} already exists, the server was not able to generate a unique name for the object",
            quote(&name)
        );
        let details = StatusDetails {
            retry_after_seconds: clamp(retry_after_seconds),
            ..object_details(resource, name)
        };
        ApiError::with_details(409, "AlreadyExists", message, details)
    }

    /// 409 Conflict `Operation cannot be fulfilled on configmaps "x": <err>` (upstream's
    /// NewConflict).
    pub fn conflict(
        resource: &GroupResource,
        name: impl Into<String>,
        err: impl fmt::Display,
    ) -> Self {
        let name = name.into();
        let message = format!(
            "Operation cannot be fulfilled on {resource} {}: {err}",
            quote(&name)
        );
        ApiError::with_details(409, "Conflict", message, object_details(resource, name))
    }

    /// 422 Invalid `ConfigMap "x" is invalid: <errors>` with one cause per field error
    /// (upstream's NewInvalid). One distinct error is printed alone, several as `[a, b]`.
    pub fn invalid(kind: &GroupKind, name: impl Into<String>, errors: &FieldErrors) -> Self {
        let name = name.into();
        let causes = errors
            .iter()
            .map(|e| StatusCause {
                reason: e.error_type.as_str().to_string(),
                message: e.body(),
                field: e.field.clone(),
            })
            .collect();
        let message = match errors.aggregate_message() {
            Some(all) => format!("{kind} {} is invalid: {all}", quote(&name)),
            None => format!("{kind} {} is invalid", quote(&name)),
        };
        let details = StatusDetails {
            name,
            group: kind.group.clone(),
            kind: kind.kind.clone(),
            causes,
            ..StatusDetails::default()
        };
        ApiError::with_details(422, "Invalid", message, details)
    }

    /// 400 BadRequest with the given message (upstream's NewBadRequest).
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new_generic(400, "BadRequest", message)
    }

    /// 401 Unauthorized; an empty message becomes `not authorized` (upstream's
    /// NewUnauthorized).
    pub fn unauthorized(message: impl Into<String>) -> Self {
        let mut message = message.into();
        if message.is_empty() {
            message = "not authorized".into();
        }
        ApiError::new_generic(401, "Unauthorized", message)
    }

    /// 403 Forbidden (upstream's NewForbidden): `configmaps "x" is forbidden: <reason>`,
    /// `configmaps is forbidden: <reason>` without a name, `forbidden: <reason>` without a
    /// resource.
    pub fn forbidden(
        resource: &GroupResource,
        name: impl Into<String>,
        reason: impl fmt::Display,
    ) -> Self {
        let name = name.into();
        let message = if resource.is_empty() {
            format!("forbidden: {reason}")
        } else if name.is_empty() {
            format!("{resource} is forbidden: {reason}")
        } else {
            format!("{resource} {} is forbidden: {reason}", quote(&name))
        };
        ApiError::with_details(403, "Forbidden", message, object_details(resource, name))
    }

    /// 405 MethodNotAllowed `<action> is not supported on resources of kind "configmaps"`
    /// (upstream's NewMethodNotSupported).
    pub fn method_not_supported(resource: &GroupResource, action: impl fmt::Display) -> Self {
        let message = format!(
            "{action} is not supported on resources of kind {}",
            quote(&resource.to_string())
        );
        let details = object_details(resource, String::new());
        ApiError::with_details(405, "MethodNotAllowed", message, details)
    }

    /// 406 NotAcceptable `only the following media types are accepted: a, b` (the apiserver's
    /// content negotiation error).
    pub fn not_acceptable<S: AsRef<str>>(accepted: impl IntoIterator<Item = S>) -> Self {
        let message = format!(
            "only the following media types are accepted: {}",
            join(accepted)
        );
        ApiError::new_generic(406, "NotAcceptable", message)
    }

    /// 415 UnsupportedMediaType `the body of the request was in an unknown format - accepted
    /// media types include: a, b` (the apiserver's content negotiation error).
    pub fn unsupported_media_type<S: AsRef<str>>(accepted: impl IntoIterator<Item = S>) -> Self {
        let message = format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            join(accepted)
        );
        ApiError::new_generic(415, "UnsupportedMediaType", message)
    }

    /// 413 RequestEntityTooLarge `Request entity too large: <message>` (upstream's
    /// NewRequestEntityTooLargeError).
    pub fn request_entity_too_large(message: impl fmt::Display) -> Self {
        let message = format!("Request entity too large: {message}");
        ApiError::new_generic(413, "RequestEntityTooLarge", message)
    }

    /// 410 Expired, e.g. for a too old resourceVersion (upstream's NewResourceExpired).
    pub fn resource_expired(message: impl Into<String>) -> Self {
        ApiError::new_generic(410, "Expired", message)
    }

    /// 410 Gone (upstream's deprecated NewGone).
    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new_generic(410, "Gone", message)
    }

    /// 429 TooManyRequests with `details.retryAfterSeconds` (upstream's NewTooManyRequests).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        let details = retry_details(retry_after_seconds);
        ApiError::with_details(429, "TooManyRequests", message, details)
    }

    /// 500 InternalError `Internal error occurred: <err>` with the error as a cause (upstream's
    /// NewInternalError).
    pub fn internal(err: impl fmt::Display) -> Self {
        let text = err.to_string();
        let message = format!("Internal error occurred: {text}");
        let details = StatusDetails {
            causes: vec![StatusCause {
                message: text,
                ..StatusCause::default()
            }],
            ..StatusDetails::default()
        };
        ApiError::with_details(500, "InternalError", message, details)
    }

    /// 500 ServerTimeout `The <operation> operation against <resource> could not be completed
    /// at this time, please try again.` (upstream's NewServerTimeout; the operation goes in
    /// details.name, as upstream does).
    pub fn server_timeout(
        resource: &GroupResource,
        operation: impl Into<String>,
        retry_after_seconds: u32,
    ) -> Self {
        let operation = operation.into();
        let message = format!(
            "The {operation} operation against {resource} could not be completed at this time, please try again."
        );
        let details = StatusDetails {
            retry_after_seconds: clamp(retry_after_seconds),
            ..object_details(resource, operation)
        };
        ApiError::with_details(500, "ServerTimeout", message, details)
    }

    /// 503 ServiceUnavailable (upstream's NewServiceUnavailable).
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        ApiError::new_generic(503, "ServiceUnavailable", message)
    }

    /// 503 ServiceUnavailable with `details.retryAfterSeconds` (as upstream's not-found
    /// handler answers requests made before every known path was installed).
    pub fn service_unavailable_retry(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        let details = retry_details(retry_after_seconds);
        ApiError::with_details(503, "ServiceUnavailable", message, details)
    }

    /// 504 Timeout `Timeout: <message>` with `details.retryAfterSeconds` (upstream's
    /// NewTimeoutError).
    pub fn timeout(message: impl fmt::Display, retry_after_seconds: u32) -> Self {
        let details = retry_details(retry_after_seconds);
        ApiError::with_details(504, "Timeout", format!("Timeout: {message}"), details)
    }

    /// 504 Timeout for a read at a resourceVersion newer than the server has seen, with the
    /// `ResourceVersionTooLarge` cause clients look for (the apiserver's storage
    /// NewTooLargeResourceVersionError).
    pub fn too_large_resource_version(
        minimum: u64,
        current: u64,
        retry_after_seconds: u32,
    ) -> Self {
        let mut err = ApiError::timeout(
            format_args!("Too large resource version: {minimum}, current: {current}"),
            retry_after_seconds,
        );
        let cause = StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        };
        err.0
            .details
            .get_or_insert_with(StatusDetails::default)
            .causes = vec![cause];
        err
    }
}

/// Joins strings with `, `.
fn join<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::field::{FieldError, Path};

    fn configmaps() -> GroupResource {
        GroupResource::new("", "configmaps")
    }

    #[test]
    fn not_found_json_matches_upstream() {
        let err = ApiError::not_found(&configmaps(), "x");
        assert_eq!(
            err.status().to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
        );
        assert_eq!(err.to_string(), r#"configmaps "x" not found"#);
        assert_eq!((err.code(), err.reason()), (404, "NotFound"));
        assert!(err.is_not_found());
        let grouped = ApiError::not_found(&GroupResource::new("apps", "deployments"), "d");
        assert_eq!(grouped.message(), r#"deployments.apps "d" not found"#);
        assert_eq!(grouped.status().details.as_ref().unwrap().group, "apps");
    }

    #[test]
    fn success() {
        assert_eq!(
            Status::success().to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}"#
        );
        let details = StatusDetails {
            name: "x".into(),
            kind: "configmaps".into(),
            uid: "u".into(),
            ..StatusDetails::default()
        };
        assert_eq!(
            Status::success().with_details(details).to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x","kind":"configmaps","uid":"u"}}"#
        );
    }

    #[test]
    fn conflict_and_already_exists() {
        let err = ApiError::already_exists(&configmaps(), "x");
        assert_eq!((err.code(), err.reason()), (409, "AlreadyExists"));
        assert_eq!(err.message(), r#"configmaps "x" already exists"#);
        let err = ApiError::conflict(
            &configmaps(),
            "x",
            "the object has been modified; please apply your changes to the latest version and try again",
        );
        assert_eq!((err.code(), err.reason()), (409, "Conflict"));
        assert_eq!(
            err.message(),
            r#"Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again"#
        );
        let err = ApiError::generate_name_conflict(&configmaps(), "x-abcde", 1);
        assert_eq!(err.retry_after_seconds(), Some(1));
        assert!(
            err.message()
                .ends_with("not able to generate a unique name for the object")
        );
    }

    #[test]
    fn invalid_single_and_many() {
        let kind = GroupKind::new("", "Kind");
        let path = Path::root("field[0]").child("name");
        let one: FieldErrors = FieldError::invalid(&path, "bar", "detail").into();
        let err = ApiError::invalid(&kind, "name", &one);
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            r#"Kind "name" is invalid: field[0].name: Invalid value: "bar": detail"#
        );
        let details = err.status().details.clone().unwrap();
        assert_eq!(
            (details.kind.as_str(), details.name.as_str()),
            ("Kind", "name")
        );
        assert_eq!(
            details.causes,
            vec![StatusCause {
                reason: "FieldValueInvalid".into(),
                message: r#"Invalid value: "bar": detail"#.into(),
                field: "field[0].name".into(),
            }]
        );
        let err = ApiError::invalid(&kind, "name", &FieldErrors::new());
        assert_eq!(err.message(), r#"Kind "name" is invalid"#);
        let many: FieldErrors = vec![
            FieldError::required(&Path::root("a"), ""),
            FieldError::required(&Path::root("a"), ""),
            FieldError::duplicate(&Path::root("b"), "bar"),
        ]
        .into();
        let err = ApiError::invalid(&GroupKind::new("apps", "Deployment"), "d", &many);
        assert_eq!(
            err.message(),
            r#"Deployment.apps "d" is invalid: [a: Required value, b: Duplicate value: "bar"]"#
        );
        assert_eq!(err.status().details.as_ref().unwrap().causes.len(), 3);
        assert_eq!(
            err.status().to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Deployment.apps \"d\" is invalid: [a: Required value, b: Duplicate value: \"bar\"]","reason":"Invalid","details":{"name":"d","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"a"},{"reason":"FieldValueRequired","message":"Required value","field":"a"},{"reason":"FieldValueDuplicate","message":"Duplicate value: \"bar\"","field":"b"}]},"code":422}"#
        );
    }

    #[test]
    fn forbidden_forms() {
        let err = ApiError::forbidden(&configmaps(), "x", "User \"bob\" cannot get resource");
        assert_eq!(
            err.message(),
            r#"configmaps "x" is forbidden: User "bob" cannot get resource"#
        );
        assert_eq!((err.code(), err.reason()), (403, "Forbidden"));
        let err = ApiError::forbidden(&configmaps(), "", "no");
        assert_eq!(err.message(), "configmaps is forbidden: no");
        let err = ApiError::forbidden(&GroupResource::default(), "", "no");
        assert_eq!(err.message(), "forbidden: no");
        assert_eq!(
            err.status().to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: no","reason":"Forbidden","details":{},"code":403}"#
        );
    }

    #[test]
    fn simple_errors() {
        let cases = [
            (ApiError::bad_request("bad"), 400, "BadRequest", "bad"),
            (
                ApiError::unauthorized(""),
                401,
                "Unauthorized",
                "not authorized",
            ),
            (
                ApiError::unauthorized("Unauthorized"),
                401,
                "Unauthorized",
                "Unauthorized",
            ),
            (
                ApiError::resource_expired("too old resource version: 1 (5)"),
                410,
                "Expired",
                "too old resource version: 1 (5)",
            ),
            (ApiError::gone("gone"), 410, "Gone", "gone"),
            (
                ApiError::request_entity_too_large("limit is 3145728"),
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728",
            ),
            (
                ApiError::service_unavailable("apiserver is shutting down"),
                503,
                "ServiceUnavailable",
                "apiserver is shutting down",
            ),
            (
                ApiError::new_generic(418, "Teapot", "short and stout"),
                418,
                "Teapot",
                "short and stout",
            ),
            (
                ApiError::method_not_supported(&configmaps(), "patch"),
                405,
                "MethodNotAllowed",
                r#"patch is not supported on resources of kind "configmaps""#,
            ),
            (
                ApiError::not_acceptable(["application/json", "application/yaml"]),
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json, application/yaml",
            ),
            (
                ApiError::unsupported_media_type(["application/json"]),
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json",
            ),
        ];
        for (err, code, reason, message) in cases {
            assert_eq!(
                (err.code(), err.reason(), err.message()),
                (code, reason, message)
            );
            assert_eq!(err.retry_after_seconds(), None);
        }
    }

    #[test]
    fn errors_with_retry() {
        let err = ApiError::too_many_requests("storage is (re)initializing", 1);
        assert_eq!(
            (err.code(), err.reason(), err.retry_after_seconds()),
            (429, "TooManyRequests", Some(1))
        );
        let err = ApiError::timeout("request did not complete within the allotted timeout", 0);
        assert_eq!(
            err.message(),
            "Timeout: request did not complete within the allotted timeout"
        );
        assert_eq!(
            (err.code(), err.reason(), err.retry_after_seconds()),
            (504, "Timeout", None)
        );
        assert!(
            err.status()
                .to_json()
                .contains(r#""details":{},"code":504"#)
        );
        let err = ApiError::server_timeout(&configmaps(), "create", 2);
        assert_eq!(
            err.message(),
            "The create operation against configmaps could not be completed at this time, please try again."
        );
        assert_eq!(
            (err.code(), err.reason(), err.retry_after_seconds()),
            (500, "ServerTimeout", Some(2))
        );
        assert_eq!(err.status().details.as_ref().unwrap().name, "create");
    }

    #[test]
    fn internal_and_too_large_resource_version() {
        let err = ApiError::internal("boom");
        assert_eq!(
            err.status().to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: boom","reason":"InternalError","details":{"causes":[{"message":"boom"}]},"code":500}"#
        );
        let err = ApiError::too_large_resource_version(105, 100, 1);
        assert_eq!(
            err.status().to_json(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 105, current: 100","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#
        );
    }

    #[test]
    fn status_round_trips() {
        let err = ApiError::not_found(&configmaps(), "x");
        let decoded: Status = serde_json::from_str(&err.status().to_json()).unwrap();
        assert_eq!(&decoded, err.status());
        assert_eq!(ApiError::from(decoded), err);
        let no_code = ApiError::from(Status {
            code: 0,
            ..Status::failure(0, "", "")
        });
        assert_eq!(no_code.code(), 500);
        assert_eq!(ApiError::from(Status::success()).code(), 200);
    }
}
