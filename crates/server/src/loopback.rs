//! In-process clients of the server's own handler chain, upstream's loopback client config:
//! the controllers kapi runs (as kube-controller-manager would, through the API) send their
//! requests through the whole chain, authenticated as their own user, authorized, admitted
//! and audited like any client's.
//!
//! A loopback connection is an in-memory pipe served as HTTP/2 by the same code as network
//! connections, so requests skip TCP and TLS but nothing else. The connection carries its
//! user, which only code in this process can choose: [`LoopbackAuthenticator`], first in the
//! chain, takes it from there, so there is no credential to leak or forge.

use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kapi_apimachinery::status::{ApiError, Status};
use serde_json::Value;
use tokio::io::DuplexStream;
use tokio_util::sync::CancellationToken;

use crate::authn::{AuthenticationError, Authenticator, UserInfo};
use crate::body::{Body, BoxError};
use crate::server::Route;
use crate::serving::{ConnectionInfo, serve_http};

/// The address loopback requests come from (audit's `sourceIPs`), as upstream's loopback
/// client connects to 127.0.0.1.
const LOOPBACK_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
/// The buffer of each direction of a loopback pipe.
const PIPE_BUFFER: usize = 256 * 1024;

/// The server's chain, from which loopback clients are made; given to post-start hooks.
#[derive(Clone)]
pub struct Loopback {
    chain: Arc<parking_lot::Mutex<Route>>,
    drain: CancellationToken,
}

impl Loopback {
    /// Loopback access to `chain`, whose connections close when `drain` is cancelled.
    pub(crate) fn new(chain: Route, drain: CancellationToken) -> Loopback {
        Loopback {
            chain: Arc::new(parking_lot::Mutex::new(chain)),
            drain,
        }
    }

    /// A client whose requests are `user`'s, sent with `user_agent` (which names the
    /// manager of its writes in managedFields, as a client's `User-Agent` does).
    pub fn client(&self, user: UserInfo, user_agent: &str) -> LoopbackClient {
        let connector_user = Arc::new(user);
        let connector = Connector {
            loopback: self.clone(),
            user: connector_user.clone(),
        };
        let client = Client::builder(TokioExecutor::new())
            .http2_only(true)
            .build(connector);
        LoopbackClient {
            client,
            user_agent: HeaderValue::from_str(user_agent)
                .unwrap_or_else(|_| HeaderValue::from_static("kapi")),
            loopback: self.clone(),
            user: connector_user,
        }
    }
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback").finish_non_exhaustive()
    }
}

/// Opens loopback connections: each is a pipe whose far end is served by the chain.
#[derive(Clone)]
struct Connector {
    loopback: Loopback,
    user: Arc<UserInfo>,
}

impl tower::Service<http::Uri> for Connector {
    type Response = Pipe;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Pipe, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        if self.loopback.drain.is_cancelled() {
            return std::future::ready(Err("the server is shutting down".into()));
        }
        let (client, server) = tokio::io::duplex(PIPE_BUFFER);
        let info = ConnectionInfo::new(LOOPBACK_ADDR, Vec::new(), Some((*self.user).clone()));
        let chain = self.loopback.chain.lock().clone();
        tokio::spawn(serve_http(
            TokioIo::new(server),
            Some(true),
            info,
            chain,
            self.loopback.drain.clone(),
        ));
        std::future::ready(Ok(Pipe(TokioIo::new(client))))
    }
}

/// The client's end of a loopback connection.
struct Pipe(TokioIo<DuplexStream>);

impl Connection for Pipe {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for Pipe {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Pipe {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// A client of the server's own API as one user (see the module documentation). Clones
/// share its connection.
#[derive(Clone)]
pub struct LoopbackClient {
    client: Client<Connector, Body>,
    user_agent: HeaderValue,
    loopback: Loopback,
    user: Arc<UserInfo>,
}

impl LoopbackClient {
    /// A client of the same user with a connection of its own (HTTP/2 allows a connection
    /// 100 requests at once; each long watch holds one).
    pub fn separate(&self) -> LoopbackClient {
        let user_agent = self.user_agent.to_str().unwrap_or("kapi");
        self.loopback.client((*self.user).clone(), user_agent)
    }

    /// Sends `request` (its path and query in the URI) and returns the response as it
    /// streams.
    pub async fn send(&self, mut request: Request<Body>) -> Result<Response<Incoming>, ApiError> {
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        *request.uri_mut() = format!("http://loopback{path}")
            .parse()
            .map_err(|err| ApiError::bad_request(format!("{err}")))?;
        request
            .headers_mut()
            .insert(header::USER_AGENT, self.user_agent.clone());
        self.client
            .request(request)
            .await
            .map_err(|err| ApiError::service_unavailable(format!("loopback request: {err}")))
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
