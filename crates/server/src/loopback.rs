//! In-process clients of the server's own handler chain, upstream's loopback client config:
//! the controllers kapi runs (as kube-controller-manager would, through the API) send their
//! requests through the whole chain, authenticated as their own user, authorized, admitted
//! and audited like any client's.
//!
//! A loopback request is handed to the chain as a request from an HTTP/2 connection arrives
//! (its URI absolute, the connection's information as an extension), and its response is
//! read as it streams, so requests skip TCP, TLS and HTTP/2's framing but nothing else. Going
//! through a connection cost each long watch an HTTP/2 stream at both ends, two tasks and
//! buffers: about 11 KB for each of the ~60 watches of the garbage collector
//! (docs/PERFORMANCE.md). The connection information carries the user, which only code in
//! this process can choose: [`LoopbackAuthenticator`], first in the chain, takes it from
//! there, so there is no credential to leak or forge.

use std::net::{Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;
use kapi_apimachinery::status::{ApiError, Status};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::authn::{AuthenticationError, Authenticator, UserInfo};
use crate::body::{Body, BoxError};
use crate::server::{Route, call_route};
use crate::serving::ConnectionInfo;

/// The address loopback requests come from (audit's `sourceIPs`), as upstream's loopback
/// client connects to 127.0.0.1.
const LOOPBACK_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// The server's chain, from which loopback clients are made; given to post-start hooks.
#[derive(Clone)]
pub struct Loopback {
    chain: Arc<parking_lot::Mutex<Route>>,
    drain: CancellationToken,
}

impl Loopback {
    /// Loopback access to `chain`, which refuses new requests once `drain` is cancelled.
    pub(crate) fn new(chain: Route, drain: CancellationToken) -> Loopback {
        Loopback {
            chain: Arc::new(parking_lot::Mutex::new(chain)),
            drain,
        }
    }

    /// A client whose requests are `user`'s, sent with `user_agent` (which names the
    /// manager of its writes in managedFields, as a client's `User-Agent` does).
    pub fn client(&self, user: UserInfo, user_agent: &str) -> LoopbackClient {
        LoopbackClient {
            loopback: self.clone(),
            connection: ConnectionInfo::new(LOOPBACK_ADDR, Vec::new(), Some(user)),
            user_agent: HeaderValue::from_str(user_agent)
                .unwrap_or_else(|_| HeaderValue::from_static("kapi")),
        }
    }
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback").finish_non_exhaustive()
    }
}

/// A client of the server's own API as one user (see the module documentation). Clones
/// share its connection information.
#[derive(Clone)]
pub struct LoopbackClient {
    loopback: Loopback,
    /// What the chain knows of the client's "connection": its user and address.
    connection: ConnectionInfo,
    user_agent: HeaderValue,
}

impl LoopbackClient {
    /// Sends `request` (its path and query in the URI) and returns the response as it
    /// streams. The request reaches the chain as it would from an HTTP/2 connection: with
    /// none of the caller's extensions, without hop-by-hop headers, with a Content-Length
    /// when the body's size is known. Read the response body or drop it: until then the
    /// request holds what a request in progress holds (its flow-control seats, its audit
    /// event).
    pub async fn send(&self, request: Request<Body>) -> Result<Response<Body>, ApiError> {
        if self.loopback.drain.is_cancelled() {
            return Err(ApiError::service_unavailable(
                "loopback request: the server is shutting down",
            ));
        }
        let request = self.as_received(request)?;
        let chain = self.loopback.chain.lock().clone();
        // A panic outside the chain's panic filter ended the connection's task for that
        // request; it must not end the caller's.
        match AssertUnwindSafe(call_route(chain, request))
            .catch_unwind()
            .await
        {
            Ok(Ok(response)) => Ok(response.map(|body| Contained(body).boxed_unsync())),
            Err(panic) => Err(ApiError::service_unavailable(format!(
                "loopback request: the handler panicked: {}",
                crate::filters::panic::panic_reason(&*panic)
            ))),
        }
    }

    /// `request` as the chain receives it from an HTTP/2 connection (see [`send`](Self::send)).
    fn as_received(&self, request: Request<Body>) -> Result<Request<Body>, ApiError> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let uri: http::Uri = format!("http://loopback{path}")
            .parse()
            .map_err(|err| ApiError::bad_request(format!("{err}")))?;
        let mut headers = parts.headers;
        crate::proxy::remove_hop_by_hop(&mut headers);
        headers.insert(header::USER_AGENT, self.user_agent.clone());
        let has_content = !matches!(parts.method, Method::GET | Method::HEAD | Method::DELETE);
        if let Some(length) = body.size_hint().exact()
            && (length > 0 || has_content)
            && !headers.contains_key(header::CONTENT_LENGTH)
        {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        let mut received = Request::new(body);
        *received.method_mut() = parts.method;
        *received.uri_mut() = uri;
        *received.version_mut() = http::Version::HTTP_2;
        *received.headers_mut() = headers;
        received.extensions_mut().insert(self.connection.clone());
        Ok(received)
    }

    /// Sends `method` to `path` (with its query) with a JSON `body`, accepting `accept`
    /// (JSON when `None`): the JSON answer, or the `Status` error answered.
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        accept: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let body = body.map(|body| ("application/json", body));
        self.exchange(method, path, accept, body).await
    }

    /// PATCHes `path` with `patch` of `content_type` (a merge, strategic merge or JSON
    /// patch): the object answered, or the `Status` error.
    pub async fn patch(
        &self,
        path: &str,
        content_type: &str,
        patch: &Value,
    ) -> Result<Value, ApiError> {
        self.exchange(Method::PATCH, path, None, Some((content_type, patch)))
            .await
    }

    /// One request with an optional body (its content type and JSON), its JSON answer.
    async fn exchange(
        &self,
        method: Method,
        path: &str,
        accept: Option<&str>,
        body: Option<(&str, &Value)>,
    ) -> Result<Value, ApiError> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::ACCEPT, accept.unwrap_or("application/json"));
        let body = match body {
            Some((content_type, value)) => {
                builder = builder.header(header::CONTENT_TYPE, content_type);
                crate::body::full(serde_json::to_vec(value).map_err(ApiError::internal)?)
            }
            None => crate::body::empty(),
        };
        let request = builder
            .body(body)
            .map_err(|err| ApiError::bad_request(err.to_string()))?;
        let response = self.send(request).await?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|err| ApiError::service_unavailable(format!("loopback response: {err}")))?
            .to_bytes();
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(ApiError::internal);
        }
        Err(error_of(status, &bytes))
    }
}

/// The error a failed response stands for: its `Status`, or (a proxied backend's plain
/// text) a generic one with the text as message.
fn error_of(status: StatusCode, body: &Bytes) -> ApiError {
    if let Ok(parsed) = serde_json::from_slice::<Status>(body)
        && parsed.kind == "Status"
    {
        return parsed.into();
    }
    let text = String::from_utf8_lossy(body).trim().to_string();
    let reason = status
        .canonical_reason()
        .unwrap_or_default()
        .replace(' ', "");
    ApiError::new_generic(status.as_u16(), reason, text)
}

/// A response body whose panics end it with an error. Over a connection, a panic while a
/// body was sent ended only the task sending that response (the client saw its stream
/// reset); read in process, it would end the controller reading it.
struct Contained(Body);

impl http_body::Body for Contained {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let body = Pin::new(&mut self.0);
        match std::panic::catch_unwind(AssertUnwindSafe(|| body.poll_frame(cx))) {
            Ok(frame) => frame,
            Err(panic) => {
                let reason = crate::filters::panic::panic_reason(&*panic);
                tracing::error!(reason, "a loopback response body panicked");
                // The body's own drop may panic too.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    self.0 = crate::body::empty();
                }));
                Poll::Ready(Some(Err(
                    format!("the response body panicked: {reason}").into()
                )))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

/// The authenticator of loopback connections: their user, chosen by the code that opened
/// them. First in the chain; requests from the network carry no loopback user.
pub(crate) struct LoopbackAuthenticator;

#[async_trait]
impl Authenticator for LoopbackAuthenticator {
    async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        Ok(request
            .extensions
            .get::<ConnectionInfo>()
            .and_then(ConnectionInfo::loopback_user)
            .cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that panics when polled.
    struct Panicking;

    impl http_body::Body for Panicking {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            panic!("an encoder bug")
        }
    }

    /// A client of `alice` on a chain that answers what reached it: the loopback user, the
    /// version, the URI, the Content-Length and `Upgrade` headers, whether a caller's
    /// extension got through; a path of `/panic` panics.
    fn echoing(drain: &CancellationToken) -> LoopbackClient {
        let route = Route::new(tower::service_fn(|request: Request<Body>| async move {
            assert_ne!(request.uri().path(), "/panic", "a handler bug");
            let user = request
                .extensions()
                .get::<ConnectionInfo>()
                .and_then(|c| c.loopback_user().map(|u| u.name.clone()));
            let header = |name| {
                request
                    .headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_string())
            };
            let echo = serde_json::json!({
                "user": user,
                "version": format!("{:?}", request.version()),
                "uri": request.uri().to_string(),
                "contentLength": header(header::CONTENT_LENGTH),
                "upgrade": header(header::UPGRADE),
                "callerExtension": request.extensions().get::<&str>().is_some(),
            });
            Ok::<_, std::convert::Infallible>(Response::new(crate::body::full(echo.to_string())))
        }));
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        Loopback::new(route, drain.clone()).client(alice, "test")
    }

    #[tokio::test]
    async fn a_request_reaches_the_chain_as_from_an_http2_connection() {
        let client = echoing(&CancellationToken::new());
        let mut request = Request::get("/api/v1/pods?watch=true")
            .header(header::CONNECTION, "upgrade")
            .header(header::UPGRADE, "h2c")
            .body(crate::body::empty())
            .unwrap();
        request.extensions_mut().insert("from the caller");
        let echo = client
            .exchange(Method::GET, "/x", None, None)
            .await
            .unwrap();
        assert_eq!(echo["uri"], "http://loopback/x");
        let response = client.send(request).await.unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let echo: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(echo["user"], "alice");
        assert_eq!(echo["version"], "HTTP/2.0");
        assert_eq!(echo["uri"], "http://loopback/api/v1/pods?watch=true");
        assert_eq!(
            echo["upgrade"],
            Value::Null,
            "hop-by-hop headers are dropped"
        );
        assert_eq!(
            echo["callerExtension"], false,
            "the caller's extensions are not passed on"
        );
        assert_eq!(
            echo["contentLength"],
            Value::Null,
            "a GET without a body has none"
        );
        let echo = client
            .json(Method::POST, "/y", None, Some(&serde_json::json!({"a": 1})))
            .await
            .unwrap();
        assert_eq!(echo["contentLength"], "7");
    }

    #[tokio::test]
    async fn requests_are_refused_once_the_server_drains_and_a_handler_panic_is_an_error() {
        let drain = CancellationToken::new();
        let client = echoing(&drain);
        let err = client
            .exchange(Method::GET, "/panic", None, None)
            .await
            .unwrap_err();
        assert_eq!(err.code(), 503, "{err:?}");
        assert!(err.message().contains("a handler bug"), "{err:?}");
        drain.cancel();
        let err = client
            .exchange(Method::GET, "/x", None, None)
            .await
            .unwrap_err();
        assert_eq!(err.code(), 503, "{err:?}");
        assert!(err.message().contains("shutting down"), "{err:?}");
    }

    #[tokio::test]
    async fn a_panicking_response_body_ends_with_an_error_not_the_reader() {
        let mut body = Contained(Panicking.boxed_unsync());
        let first = body.frame().await.expect("a frame");
        let err = first.expect_err("the panic, as an error");
        assert!(err.to_string().contains("an encoder bug"), "{err}");
        assert!(
            body.frame().await.is_none(),
            "the body ends after the panic"
        );
    }
}
