//! Ready-made responses in upstream's exact wire forms: `Status` errors as JSON, and the plain
//! text answers Go's `http.Error` and `http.NotFound` give where kube-apiserver uses them.

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use kapi_apimachinery::ApiError;

use crate::body::{Body, full};

/// `Content-Type` of JSON responses.
pub const APPLICATION_JSON: &str = "application/json";
/// `Content-Type` of plain text, as Go's `http.Error` sets it.
pub const TEXT_PLAIN_UTF8: &str = "text/plain; charset=utf-8";
/// Name of the header that stops browsers from sniffing content types.
pub const X_CONTENT_TYPE_OPTIONS: &str = "x-content-type-options";

/// Marks a response that no route claimed (the 404 of unknown paths), so the request metrics
/// leave it out: counting arbitrary paths would let clients grow the metrics without bound.
#[derive(Clone, Copy, Debug)]
pub struct Unrouted;

/// The response for an API error: the `Status` as JSON (one line, newline-terminated, as
/// upstream's serializer writes it) with the status's code, and a `Retry-After` header when the
/// status asks for a delay (upstream's `ErrorNegotiated`).
pub fn api_error(err: &ApiError) -> Response<Body> {
    api_error_negotiated(err, None)
}

/// [`api_error`] in the representation the request's `accept` header asks for: protobuf when
/// it prefers protobuf, JSON otherwise (upstream falls back to JSON for errors whatever the
/// client accepts).
pub fn api_error_negotiated(err: &ApiError, accept: Option<&str>) -> Response<Body> {
    let protobuf = crate::endpoints::negotiation::discovery_in_protobuf(accept);
    let mut body = status_body(err, protobuf);
    if !protobuf {
        // One line, as upstream's JSON serializer writes it.
        body.push(b'\n');
    }
    let mut response = Response::new(full(body));
    *response.status_mut() = status_code(err.code());
    let content_type = match protobuf {
        true => crate::endpoints::negotiation::PROTOBUF,
        false => APPLICATION_JSON,
    };
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(seconds) = err.retry_after_seconds() {
        headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// An error's `Status` as a protobuf body, or as JSON (without a newline).
pub fn status_body(err: &ApiError, protobuf: bool) -> Vec<u8> {
    if !protobuf {
        return err.status().to_json().into_bytes();
    }
    let value = serde_json::to_value(err.status()).unwrap_or_default();
    kapi_protobuf::encode("v1", "Status", &value).unwrap_or_else(|_| {
        // A Status kapi made always encodes; were it not to, the body still has to be the
        // protobuf its Content-Type promises: the Status without its details.
        let bare = serde_json::json!({
            "status": "Failure",
            "code": err.code(),
            "message": err.status().message,
        });
        kapi_protobuf::encode("v1", "Status", &bare).unwrap_or_default()
    })
}

/// A plain-text error as Go's `http.Error` writes it: the message and a newline, UTF-8 text,
/// and `X-Content-Type-Options: nosniff`.
pub fn text_error(code: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(full(format!("{message}\n")));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_PLAIN_UTF8));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// The 500 of upstream's `responsewriters.InternalError`, used when the chain itself fails:
/// `Internal Server Error: "<request URI>": <error>` as plain text, HTML-sensitive characters
/// escaped.
pub fn internal_error(request_uri: &str, err: &str) -> Response<Body> {
    let message = format!(
        "Internal Server Error: {}: {err}",
        kapi_apimachinery::quote(request_uri)
    );
    text_error(StatusCode::INTERNAL_SERVER_ERROR, &sanitize(&message))
}

/// A 200 with a fixed document.
pub fn document(content_type: &'static str, body: bytes::Bytes) -> Response<Body> {
    let mut response = Response::new(crate::body::full(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    response
}

/// The 404 of upstream's final not-found handler (Go's `http.NotFound`), for paths no route
/// serves. Marked [`Unrouted`].
pub fn not_found() -> Response<Body> {
    let mut response = text_error(StatusCode::NOT_FOUND, "404 page not found");
    response.extensions_mut().insert(Unrouted);
    response
}

/// Escapes `&`, `<` and `>` as upstream does in messages that echo request data.
pub fn sanitize(message: &str) -> String {
    message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The HTTP status for a Status code; codes outside HTTP's range become 500.
fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
