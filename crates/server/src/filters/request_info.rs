//! Resolves each request's [`RequestInfo`] once (upstream's `WithRequestInfo`) and stores it
//! as a request extension for every later filter and the handlers.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use kapi_apimachinery::request_info::RequestInfoFactory;

use super::{Filter, FilterFuture, FilterLayer, Next, call, request_uri};
use crate::body::Body;
use crate::responses::{internal_error, text_error};

/// The layer that adds [`ResolveRequestInfo`].
pub type RequestInfoLayer = FilterLayer<ResolveRequestInfo>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Debug)]
pub struct ResolveRequestInfo {
    factory: Arc<RequestInfoFactory>,
}

impl RequestInfoLayer {
    /// Resolves with `factory`.
    pub fn new(factory: RequestInfoFactory) -> Self {
        FilterLayer(ResolveRequestInfo {
            factory: Arc::new(factory),
        })
    }
}

impl Filter for ResolveRequestInfo {
    fn filter<S: Next<B>, B: Send + 'static>(
        &self,
        inner: S,
        mut request: Request<B>,
    ) -> FilterFuture {
        let uri = request.uri();
        match self
            .factory
            .resolve(request.method().as_str(), uri.path(), uri.query())
        {
            Ok(info) => {
                request.extensions_mut().insert(info);
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
