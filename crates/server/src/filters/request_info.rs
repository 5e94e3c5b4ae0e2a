//! Resolves each request's [`RequestInfo`] once (upstream's `WithRequestInfo`) and stores it
//! as a request extension for every later filter and the handlers.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};
use kapi_apimachinery::request_info::RequestInfoFactory;
use tower::{Layer, Service};

use super::{FilterFuture, call, request_uri, take_ready};
use crate::body::Body;
use crate::responses::{internal_error, text_error};

/// Adds [`ResolveRequestInfo`].
#[derive(Clone, Debug)]
pub struct RequestInfoLayer {
    factory: Arc<RequestInfoFactory>,
}

impl RequestInfoLayer {
    /// Resolves with `factory`.
    pub fn new(factory: RequestInfoFactory) -> Self {
        RequestInfoLayer {
            factory: Arc::new(factory),
        }
    }
}

impl<S> Layer<S> for RequestInfoLayer {
    type Service = ResolveRequestInfo<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ResolveRequestInfo {
            inner,
            factory: self.factory.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct ResolveRequestInfo<S> {
    inner: S,
    factory: Arc<RequestInfoFactory>,
}

impl<S, B> Service<Request<B>> for ResolveRequestInfo<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = FilterFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> FilterFuture {
        let uri = request.uri();
        match self
            .factory
            .resolve(request.method().as_str(), uri.path(), uri.query())
        {
            Ok(info) => {
                request.extensions_mut().insert(info);
                let inner = take_ready(&mut self.inner);
                Box::pin(async move { Ok(call(inner, request).await) })
            }
            Err(err) => {
                let response = resolve_error(request_uri(&request), &err);
                Box::pin(async move { Ok(response) })
            }
        }
    }
}

/// The answer to a request whose info cannot be resolved: a path with a malformed escape is
/// a 400, as Go's HTTP server answers before any handler runs; anything else is upstream's
/// `failed to create RequestInfo` internal error.
fn resolve_error(uri: &str, err: &str) -> Response<Body> {
    if err.starts_with("invalid URL escape") {
        return text_error(StatusCode::BAD_REQUEST, "400 Bad Request");
    }
    internal_error(uri, &format!("failed to create RequestInfo: {err}"))
}
