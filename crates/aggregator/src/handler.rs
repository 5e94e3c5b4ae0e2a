//! The head of the chain (upstream's aggregator handlers): requests for a group version whose
//! APIService names a Service are proxied to it (upstream's proxyHandler); `/apis`, the
//! `/apis/<group>` of groups served elsewhere and the OpenAPI documents merge what the
//! backends serve into the chain's own; everything else goes to the delegate, kube-apiserver.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use kapi_server::body::BoxError;
use kapi_server::endpoints::ApiHandler;
use kapi_server::responses::text_error;
use kapi_server::{Body, UserInfo};

use crate::backends::{Backend, Backends};
use crate::merge;
use crate::remote_docs::RemoteDocuments;

/// The aggregator's handler, a tower service ([`kapi_server::Route`]).
#[derive(Clone)]
pub struct AggregatorHandler {
    pub(crate) delegate: ApiHandler,
    pub(crate) backends: Arc<Backends>,
    pub(crate) documents: Arc<RemoteDocuments>,
    pub(crate) merged: Arc<MergedCache>,
}

/// Merged documents already computed, with their ETags, so that a document the delegate,
/// the backends and their documents have not changed since is neither merged nor hashed
/// again (aggregated discovery with a thousand CRDs is hundreds of kilobytes).
#[derive(Default)]
pub(crate) struct MergedCache(parking_lot::Mutex<HashMap<String, (Bytes, HeaderValue)>>);

/// Documents kept at most: a few documents in a few encodings.
const MERGED_KEPT: usize = 16;

impl MergedCache {
    /// The merged document and ETag of `key`, computing them with `merge` when absent.
    fn get_or_merge(&self, key: String, merge: impl FnOnce() -> Bytes) -> (Bytes, HeaderValue) {
        if let Some(found) = self.0.lock().get(&key) {
            return found.clone();
        }
        let bytes = merge();
        let etag = kapi_server::discovery::etag(&bytes);
        let etag = HeaderValue::from_str(&etag).expect("ETags are header values");
        let mut cache = self.0.lock();
        if cache.len() >= MERGED_KEPT {
            cache.clear();
        }
        cache.insert(key, (bytes.clone(), etag.clone()));
        (bytes, etag)
    }
}

/// What a request's path is to the aggregator.
enum Target<'a> {
    /// Under `/apis/<group>/<version>` (or its OpenAPI v3 document).
    GroupVersion(&'a str, &'a str),
    /// `/apis/<group>`.
    Group(&'a str),
    /// `/apis`.
    Apis,
    /// `/openapi/v2` or `/openapi/v3`.
    OpenApi(merge::OpenApi),
    Other,
}

fn target(path: &str) -> Target<'_> {
    let trimmed = path.trim_end_matches('/');
    let segments: Vec<&str> = trimmed.split('/').skip(1).collect();
    match segments.as_slice() {
        ["apis"] => Target::Apis,
        ["apis", group] => Target::Group(group),
        ["apis", group, version, ..] => Target::GroupVersion(group, version),
        ["openapi", "v3", "apis", group, version, ..] => Target::GroupVersion(group, version),
        ["openapi", "v2"] => Target::OpenApi(merge::OpenApi::V2),
        ["openapi", "v3"] => Target::OpenApi(merge::OpenApi::V3),
        _ => Target::Other,
    }
}

impl AggregatorHandler {
    /// Handles one request.
    pub async fn handle<B>(self, request: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let path = request.uri().path().to_string();
        match target(&path) {
            Target::GroupVersion(group, version) => {
                if let Some(backend) = self.backends.remote(group, version) {
                    return self.proxy(&backend, request).await;
                }
            }
            Target::Group(group) => {
                if let Some(response) = self.remote_group(group) {
                    return response;
                }
            }
            Target::Apis => return self.merged(request, merge::Document::Apis).await,
            Target::OpenApi(which) => {
                return self.merged(request, merge::Document::OpenApi(which)).await;
            }
            Target::Other => {}
        }
        self.delegate.handle(request).await
    }

    /// Proxies `request` to the Service of `backend`, with upstream's plain-text errors: 503
    /// `service unavailable` while the APIService is not available or its Service has no
    /// endpoint, 503 with the cause when the backend cannot be reached.
    async fn proxy<B>(&self, backend: &Backend, request: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        if !backend.available {
            return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
        let transport = match &backend.transport {
            Ok(transport) => transport,
            Err(err) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, err),
        };
        let Some(user) = request.extensions().get::<UserInfo>().cloned() else {
            return text_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
        };
        let endpoint = match &backend.addresses {
            Ok(addresses) => crate::resolver::pick(addresses),
            Err(err) => {
                if let Some(service) = &backend.service {
                    let (namespace, name) = (&service.namespace, &service.name);
                    tracing::warn!("error resolving {namespace}/{name}: {err}");
                }
                return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
            }
        };
        let request = request.map(|body| body.map_err(Into::into).boxed_unsync());
        match transport.forward(request, &endpoint, &user).await {
            Ok(response) => response,
            Err(err) => text_error(StatusCode::SERVICE_UNAVAILABLE, &err.to_string()),
        }
    }

    /// `/apis/<group>` of a group only APIServices naming Services serve (upstream's
    /// apiGroupHandler): its versions by priority.
    fn remote_group(&self, group: &str) -> Option<Response<Body>> {
        let local = self
            .delegate
            .chain_definitions()
            .iter()
            .any(|d| d.group_version.group == group);
        if local {
            return None;
        }
        let table = self.backends.table();
        let document = merge::api_group(&table, group)?;
        Some(json_response(StatusCode::OK, document))
    }

    /// The delegate's `/apis` or OpenAPI document with what the backends serve merged in,
    /// negotiated and tagged as the delegate's own.
    async fn merged<B>(&self, request: Request<B>, document: merge::Document) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        // Generations first: a table or documents newer than their generation may be merged
        // under it, never older ones.
        let generations = (self.backends.generation(), self.documents.generation());
        let table = self.backends.table();
        if !table.values().any(|b| b.service.is_some()) {
            return self.delegate.handle(request).await;
        }
        let if_none_match = request.headers().get(header::IF_NONE_MATCH).cloned();
        let (mut parts, body) = request.into_parts();
        parts.headers.remove(header::IF_NONE_MATCH);
        let response = self.delegate.handle(Request::from_parts(parts, body)).await;
        if response.status() != StatusCode::OK {
            return response;
        }
        let (mut parts, body) = response.into_parts();
        let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
            return text_error(StatusCode::INTERNAL_SERVER_ERROR, "reading the document");
        };
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let documents = self.documents.all();
        let delegate_tag = match parts.headers.get(header::ETAG) {
            Some(tag) => String::from_utf8_lossy(tag.as_bytes()).into_owned(),
            None => kapi_server::discovery::etag(&body),
        };
        let key = format!(
            "{}|{content_type}|{delegate_tag}|{}|{}",
            document.name(),
            generations.0,
            generations.1
        );
        let (bytes, etag_value) = self.merged.get_or_merge(key, || {
            let context = merge::Context {
                definitions: &self.delegate.chain_definitions(),
                backends: &table,
                documents: &documents,
            };
            merge::merge(&document, &content_type, &body, &context).unwrap_or(body.clone())
        });
        let fresh = if_none_match.as_ref() == Some(&etag_value);
        if parts.headers.contains_key(header::ETAG) || fresh {
            parts.headers.insert(header::ETAG, etag_value);
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        if fresh {
            parts.status = StatusCode::NOT_MODIFIED;
            return Response::from_parts(parts, kapi_server::body::empty());
        }
        Response::from_parts(parts, kapi_server::body::full(bytes))
    }
}

/// A JSON response.
fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(kapi_server::body::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl<B> tower::Service<Request<B>> for AggregatorHandler
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = std::convert::Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Response<Body>, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let handler = self.clone();
        Box::pin(async move { Ok(handler.handle(request).await) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_documents_are_computed_once_per_key() {
        let cache = MergedCache::default();
        let mut merges = 0;
        let mut get = |key: &str| {
            cache.get_or_merge(key.into(), || {
                merges += 1;
                Bytes::from_static(b"{}\n")
            })
        };
        let (bytes, etag) = get("apis|json|\"a\"|1|1");
        assert_eq!(get("apis|json|\"a\"|1|1"), (bytes, etag));
        get("apis|json|\"a\"|2|1");
        assert_eq!(merges, 2);
    }
}
