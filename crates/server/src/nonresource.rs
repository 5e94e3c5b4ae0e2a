//! The end of the chain: the non-resource endpoints this crate serves (`/healthz`, `/livez`,
//! `/readyz` and their checks, `/version`, `/metrics`), and the route for everything else.

use std::sync::Arc;

use http::request::Parts;
use http::{Request, Response};
use kapi_apimachinery::request_info::RequestInfo;

use crate::body::Body;
use crate::filters::{Filter, FilterFuture, FilterLayer, Next, call};
use crate::healthz::HealthEndpoint;
use crate::metrics::Metrics;
use crate::version::VersionInfo;

/// The endpoints served before the route.
pub(crate) struct Endpoints {
    pub(crate) health: [HealthEndpoint; 3],
    pub(crate) version: VersionInfo,
    pub(crate) metrics: Arc<Metrics>,
    /// Fixed documents served on GET: path, content type, body.
    pub(crate) documents: Vec<(String, &'static str, bytes::Bytes)>,
    /// Handlers of their paths, for every method.
    pub(crate) handlers: Vec<(String, NonResourceHandler)>,
}

/// Answers a non-resource request from its head (method, path, query).
pub type NonResourceHandler = Arc<dyn Fn(&Parts) -> Response<Body> + Send + Sync>;

/// Serves [`Endpoints`], and passes other requests to the route: the chain's last filter.
#[derive(Clone)]
pub(crate) struct NonResourceRouter {
    endpoints: Arc<Endpoints>,
}

impl NonResourceRouter {
    /// Serves `endpoints` in front of the route the layer wraps.
    pub(crate) fn layer(endpoints: Endpoints) -> FilterLayer<NonResourceRouter> {
        FilterLayer::of(NonResourceRouter {
            endpoints: Arc::new(endpoints),
        })
    }
}

impl Endpoints {
    /// The response of the endpoint at `path` (decoded), or `None` when no endpoint is there.
    async fn serve(&self, request: &Parts, path: &str) -> Option<Response<Body>> {
        if path == "/metrics" {
            return Some(self.metrics.serve());
        }
        if request.method == http::Method::GET
            && let Some((_, content_type, body)) = self.documents.iter().find(|(p, _, _)| p == path)
        {
            return Some(crate::responses::document(content_type, body.clone()));
        }
        if let Some((_, handler)) = self.handlers.iter().find(|(p, _)| p == path) {
            return Some(handler(request));
        }
        if let Some(response) = self.version.serve(&request.method, path) {
            return Some(response);
        }
        let query = request.uri.query().unwrap_or("");
        for endpoint in &self.health {
            if let Some(response) = endpoint.serve(path, query).await {
                return Some(response);
            }
        }
        None
    }
}

impl Filter for NonResourceRouter {
    fn filter<S: Next<B>, B: Send + 'static>(&self, route: S, request: Request<B>) -> FilterFuture {
        let endpoints = self.endpoints.clone();
        Box::pin(async move {
            // Only the head is borrowed across awaits: bodies need not be Sync.
            let (parts, body) = request.into_parts();
            let served = match parts.extensions.get::<RequestInfo>() {
                Some(info) if !info.is_resource_request => {
                    endpoints.serve(&parts, &info.path).await
                }
                _ => None,
            };
            match served {
                Some(response) => Ok(response),
                None => Ok(call(route, Request::from_parts(parts, body)).await),
            }
        })
    }
}
