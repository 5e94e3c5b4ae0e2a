//! Auditing (upstream's `WithAudit`), right after authentication: asks the audit policy
//! what to record of the request, stores the request's [`AuditContext`] for the filters,
//! handlers and admission plugins after it, and emits the events of its stages:
//! RequestReceived; then ResponseStarted and, when the response body ends, ResponseComplete
//! for long-running requests; ResponseComplete for the others; Panic when a handler panics.
//!
//! Error responses are read back for their `Status` (recorded at every level, as
//! upstream), and every response at `RequestResponse`, to record the object.

use std::sync::Arc;

use http::header::USER_AGENT;
use http::request::Parts;
use http::{Request, Response};
use http_body_util::BodyExt;
use kapi_apimachinery::ApiError;
use kapi_apimachinery::request_info::RequestInfo;
use serde_json::{Map, Value, json};

use super::long_running::is_long_running;
use super::request_log::AuditId;
use super::{Filter, FilterFuture, FilterLayer, Next, call};
use crate::audit::user_json;
use crate::audit::{AuditContext, Auditor, EventMetadata, Level, RequestAttributes};
use crate::authn::{AuthenticationNotes, UserInfo};
use crate::body::{self, Body};
use crate::responses::api_error;
use crate::serving::ConnectionInfo;
use kapi_apimachinery::meta::now_rfc3339_micro;

/// The layer that adds [`Audit`].
pub type AuditLayer = FilterLayer<Audit>;

/// The filter: records requests with the auditor; without one, requests pass untouched.
#[derive(Clone)]
pub struct Audit {
    auditor: Option<Arc<Auditor>>,
}

impl AuditLayer {
    pub fn new(auditor: Option<Arc<Auditor>>) -> Self {
        FilterLayer(Audit { auditor })
    }
}

impl Filter for Audit {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
        let (mut parts, body) = request.into_parts();
        let context = self.auditor.as_ref().and_then(|auditor| {
            let info = parts.extensions.get::<RequestInfo>()?;
            let user = parts.extensions.get::<UserInfo>();
            auditor.begin(&attributes(info, user), metadata(&parts, info, user))
        });
        let Some(context) = context else {
            return Box::pin(
                async move { Ok(call(inner, Request::from_parts(parts, body)).await) },
            );
        };
        let info = parts.extensions.get::<RequestInfo>();
        let long_running = info.is_some_and(is_long_running);
        let returns_status = info.is_some_and(|info| info.verb == "delete");
        if let Some(notes) = parts.extensions.get::<AuthenticationNotes>() {
            annotate(&context, &notes.annotations);
        }
        parts.extensions.insert(context.clone());
        Box::pin(async move {
            if !context.emit_waiting("RequestReceived").await {
                // blocking-strict: a request whose audit trail cannot start does not run.
                context.count_rejected();
                return Ok(api_error(&ApiError::internal(
                    "failed to store audit event",
                )));
            }
            let panicked = PanicGuard(Some(context.clone()));
            let response = call(inner, Request::from_parts(parts, body)).await;
            std::mem::forget(panicked);
            Ok(finish(context, response, long_running, returns_status).await)
        })
    }
}

/// Records the response and emits the events that end the request.
async fn finish(
    context: Arc<AuditContext>,
    response: Response<Body>,
    long_running: bool,
    returns_status: bool,
) -> Response<Body> {
    let code = response.status().as_u16();
    context.set_response_status(json!({"metadata": {}, "code": code}));
    if long_running && code < 300 {
        context.emit_waiting("ResponseStarted").await;
        let (parts, body) = response.into_parts();
        let body = body::with_guard(body, CompleteOnDrop(context));
        return Response::from_parts(parts, body);
    }
    // Error Statuses and DELETE's Success Status are recorded at every level.
    let read_back = code >= 400 || returns_status || context.level() == Level::RequestResponse;
    if !read_back {
        context.emit_waiting("ResponseComplete").await;
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            tracing::warn!(%err, "Unable to read a response back for the audit log");
            context.emit_waiting("ResponseComplete").await;
            return Response::from_parts(parts, body::empty());
        }
    };
    if let Some(mut object) = decoded(&bytes) {
        if object.get("kind").and_then(Value::as_str) == Some("Status") {
            context.set_response_status(response_status(&object, code));
        }
        if context.level() == Level::RequestResponse {
            object.entry("metadata").or_insert_with(|| json!({}));
            context.set_response_object(Value::Object(object));
        }
    }
    context.emit_waiting("ResponseComplete").await;
    Response::from_parts(parts, body::full(bytes))
}

/// A response body (JSON, or protobuf for clients that ask for it) as its object: the audit
/// log records objects as JSON whatever the client was sent, as upstream's does.
fn decoded(bytes: &[u8]) -> Option<Map<String, Value>> {
    let object = match bytes.starts_with(kapi_protobuf::MAGIC) {
        true => kapi_protobuf::decode(bytes).ok()?,
        false => serde_json::from_slice(bytes).ok()?,
    };
    match object {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// The event's `responseStatus` from a returned Status: its bounded fields (status,
/// message, reason, details) and the HTTP code, as upstream copies them.
fn response_status(status: &Map<String, Value>, code: u16) -> Value {
    let mut recorded = Map::new();
    recorded.insert("metadata".into(), json!({}));
    for field in ["status", "message", "reason", "details"] {
        let value = status
            .get(field)
            .filter(|v| !v.is_null() && **v != json!(""));
        if let Some(value) = value {
            recorded.insert(field.into(), value.clone());
        }
    }
    recorded.insert("code".into(), json!(code));
    Value::Object(recorded)
}

/// Emits ResponseComplete when a long-running response's body is done with.
struct CompleteOnDrop(Arc<AuditContext>);

impl Drop for CompleteOnDrop {
    fn drop(&mut self) {
        self.0.emit("ResponseComplete");
    }
}

/// Emits the Panic event when the handler panics (the panic filter, outside, answers).
struct PanicGuard(Option<Arc<AuditContext>>);

impl Drop for PanicGuard {
    fn drop(&mut self) {
        if let Some(context) = self.0.take()
            && std::thread::panicking()
        {
            context.set_response_status(json!({"metadata": {}, "status": "Failure",
                "message": "APIServer panic'd", "code": 500}));
            context.emit("Panic");
        }
    }
}

fn attributes<'a>(info: &'a RequestInfo, user: Option<&'a UserInfo>) -> RequestAttributes<'a> {
    RequestAttributes {
        user,
        verb: &info.verb,
        resource_request: info.is_resource_request,
        api_group: &info.api_group,
        resource: &info.resource,
        subresource: &info.subresource,
        namespace: &info.namespace,
        name: &info.name,
        path: &info.path,
    }
}

/// The request's side of its events.
fn metadata(parts: &Parts, info: &RequestInfo, user: Option<&UserInfo>) -> EventMetadata {
    let uri = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    EventMetadata {
        audit_id: parts
            .extensions
            .get::<AuditId>()
            .map(|id| id.as_str().to_string())
            .unwrap_or_default(),
        request_uri: uri.to_string(),
        verb: info.verb.clone(),
        user: user.map_or_else(|| json!({}), user_json),
        source_ips: source_ips(parts),
        user_agent: parts
            .headers
            .get(USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        object_ref: info.is_resource_request.then(|| object_ref(info)),
        received: now_rfc3339_micro(),
    }
}

/// The object reference of a resource request, with what the path names.
fn object_ref(info: &RequestInfo) -> Map<String, Value> {
    let mut object_ref = Map::new();
    for (field, value) in [
        ("resource", &info.resource),
        ("namespace", &info.namespace),
        ("name", &info.name),
        ("apiGroup", &info.api_group),
        ("apiVersion", &info.api_version),
        ("subresource", &info.subresource),
    ] {
        if !value.is_empty() {
            object_ref.insert(field.into(), json!(value));
        }
    }
    object_ref
}

/// The client's addresses: those of `X-Forwarded-For`, then `X-Real-Ip`, then the peer's
/// (upstream's `SourceIPs`), each once.
fn source_ips(parts: &Parts) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let forwarded = header("x-forwarded-for");
    let real = header("x-real-ip");
    let candidates = forwarded.split(',').chain([real.as_str()]);
    for ip in candidates.map(str::trim).filter(|ip| !ip.is_empty()) {
        if ip.parse::<std::net::IpAddr>().is_ok() && !ips.iter().any(|i| i == ip) {
            ips.push(ip.to_string());
        }
    }
    if let Some(peer) = parts.extensions.get::<ConnectionInfo>() {
        let peer = peer.remote_addr().ip().to_string();
        if !ips.contains(&peer) {
            ips.push(peer);
        }
    }
    ips
}

/// Audits a request that failed authentication (upstream's
/// `WithFailedAuthenticationAudit`): a ResponseStarted event with the 401 and the methods
/// tried, for the policy's rules that do not name users.
pub(crate) fn failed_authentication(
    auditor: &Arc<Auditor>,
    parts: &Parts,
    annotations: &[(String, String)],
) {
    let Some(info) = parts.extensions.get::<RequestInfo>() else {
        return;
    };
    let Some(context) = auditor.begin(&attributes(info, None), metadata(parts, info, None)) else {
        return;
    };
    annotate(&context, annotations);
    context
        .set_response_status(json!({"metadata": {}, "message": auth_methods(parts), "code": 401}));
    context.emit("ResponseStarted");
}

/// Adds the annotations of the request's authentication to its event.
fn annotate(context: &AuditContext, annotations: &[(String, String)]) {
    for (key, value) in annotations {
        context.annotate(key, value);
    }
}

/// What a failed authentication tried, in upstream's words.
fn auth_methods(parts: &Parts) -> String {
    let mut methods = Vec::new();
    let auth = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim();
    let scheme = auth.split(' ').next().unwrap_or_default().to_lowercase();
    if scheme == "basic" {
        methods.push("basic");
    }
    if scheme == "bearer" && auth.contains(' ') {
        methods.push("bearer");
    }
    let certificate = parts.extensions.get::<ConnectionInfo>();
    if certificate.is_some_and(|c| !c.peer_certificates().is_empty()) {
        methods.push("x509");
    }
    if methods.is_empty() {
        return "Authentication failed, no credentials provided".into();
    }
    format!("Authentication failed, attempted: {}", methods.join(", "))
}
