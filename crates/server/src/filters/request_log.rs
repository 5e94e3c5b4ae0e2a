//! The outermost filter: gives each request its id and receive time, adds the headers
//! upstream adds to every response (`Audit-Id`, `Cache-Control: no-cache, private`), and
//! writes the access log (upstream's `WithAuditInit`, `WithCacheControl` and `WithHTTPLogging`).
//!
//! The access log is at debug level and names the method, URI, status, latency, request id,
//! user agent and client address; never headers that could carry credentials.

use std::sync::Arc;
use std::time::Instant;

use http::header::{CACHE_CONTROL, USER_AGENT};
use http::{HeaderValue, Request};

use super::{Filter, FilterFuture, FilterLayer, Next, call, request_uri};
use crate::serving::ConnectionInfo;

/// The request and response header carrying the request id.
const AUDIT_ID_HEADER: &str = "audit-id";

/// The request's id: the client's `Audit-ID` header, or a new UUID. A request extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditId(Arc<str>);

impl AuditId {
    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// When the server received the request. A request extension; deadlines and latencies count
/// from it.
#[derive(Clone, Copy, Debug)]
pub struct RequestReceived(pub Instant);

/// The layer that adds [`RequestLog`].
pub type RequestLogLayer = FilterLayer<RequestLog>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestLog;

impl Filter for RequestLog {
    fn filter<S: Next<B>, B: Send + 'static>(
        &self,
        inner: S,
        mut request: Request<B>,
    ) -> FilterFuture {
        let received = Instant::now();
        let (id_header, audit_id) = audit_id(&request);
        let entry = AccessLogEntry::of(&request, &audit_id);
        request.extensions_mut().insert(RequestReceived(received));
        request.extensions_mut().insert(audit_id);
        Box::pin(async move {
            let mut response = call(inner, request).await;
            let headers = response.headers_mut();
            headers.entry(AUDIT_ID_HEADER).or_insert(id_header);
            headers
                .entry(CACHE_CONTROL)
                .or_insert(HeaderValue::from_static("no-cache, private"));
            if let Some(entry) = entry {
                entry.write(response.status().as_u16(), received);
            }
            Ok(response)
        })
    }
}

/// The request's id, as a header value and as the extension.
fn audit_id<B>(request: &Request<B>) -> (HeaderValue, AuditId) {
    if let Some(given) = request.headers().get(AUDIT_ID_HEADER)
        && let Ok(text) = given.to_str()
        && !text.is_empty()
    {
        return (given.clone(), AuditId(Arc::from(text)));
    }
    let uuid = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
    let text = uuid.hyphenated().to_string();
    let value = HeaderValue::from_str(&text).expect("a UUID is a valid header value");
    (value, AuditId(Arc::from(text)))
}

/// What the access log says about a request; `None` when debug logging is off, so the hot
/// path does not copy anything for it.
struct AccessLogEntry {
    method: http::Method,
    uri: String,
    audit_id: AuditId,
    user_agent: String,
    remote_addr: Option<std::net::SocketAddr>,
}

impl AccessLogEntry {
    /// Captures the request's side of the entry.
    fn of<B>(request: &Request<B>, audit_id: &AuditId) -> Option<Self> {
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return None;
        }
        let user_agent = request
            .headers()
            .get(USER_AGENT)
            .and_then(|v| v.to_str().ok());
        Some(AccessLogEntry {
            method: request.method().clone(),
            uri: request_uri(request).to_string(),
            audit_id: audit_id.clone(),
            user_agent: user_agent.unwrap_or_default().to_string(),
            remote_addr: request
                .extensions()
                .get::<ConnectionInfo>()
                .map(|c| c.remote_addr()),
        })
    }

    /// Writes the entry once the response head is ready.
    fn write(self, status: u16, received: Instant) {
        tracing::debug!(
            verb = %self.method,
            uri = %self.uri,
            latency = ?received.elapsed(),
            user_agent = %self.user_agent,
            audit_id = self.audit_id.as_str(),
            src = ?self.remote_addr,
            resp = status,
            "HTTP"
        );
    }
}
