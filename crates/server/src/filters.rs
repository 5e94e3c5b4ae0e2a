//! The handler chain's filters, each a tower layer, in kube-apiserver's order (outermost
//! first):
//!
//! 1. [`request_log`]: the request id (`Audit-Id`), `Cache-Control`, the access log. Outside
//!    panic recovery, as upstream's request-id filter is, so a panic's 500 and log line carry
//!    the id too.
//! 2. [`panic`]: a panicking handler answers 500 and the server lives.
//! 3. [`request_info`]: resolves the [`RequestInfo`] once and stores it in the request.
//!    [`pretty`] follows it: the JSON answers of everything inside are indented for people
//!    who ask (`?pretty=true`, curl), Status errors of the later filters included.
//! 4. [`authentication`]: stores the [`UserInfo`](crate::authn::UserInfo) or answers 401.
//! 5. [`audit`]: records the request in the audit log, as the audit policy asks.
//! 6. [`impersonation`]: replaces the user with the one the `Impersonate-*` headers name,
//!    when the authorizer allows, or answers 403.
//! 7. [`flow_control`]: classifies the request by API Priority and Fairness's FlowSchemas
//!    (the response names them in `X-Kubernetes-PF-*` headers); then [`max_inflight`]
//!    bounds concurrent requests, answers 429 beyond.
//! 8. [`authorization`]: answers 403 unless the authorizer allows.
//! 9. [`metrics`]: counts requests and their durations.
//! 10. [`timeout`]: bounds non-long-running requests (504) and ends long-running ones when
//!     the server drains.
//!
//! Every filter answers with [`Body`] and never fails (`Error = Infallible`); the request body
//! type is left generic so the filters work over any body.

pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod flow_control;
pub mod impersonation;
pub mod long_running;
pub mod max_inflight;
pub mod metrics;
pub mod panic;
pub mod pretty;
pub mod request_info;
pub mod request_log;
pub mod timeout;

use std::convert::Infallible;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Request, Response};
use kapi_apimachinery::request_info::RequestInfo;
use tower::{Layer, Service};

use crate::body::Body;

/// The future of every filter.
pub type FilterFuture = BoxFuture<'static, Result<Response<Body>, Infallible>>;

/// What one filter does with a request, given the inner service (polled ready) to pass it
/// on to. Each filter is its configuration plus this method; [`FilterLayer`] and
/// [`Filtered`] are the tower layer and service around every one of them.
pub trait Filter: Clone + Send + Sync + 'static {
    /// Answers `request`, calling `inner` (with [`call`]) to let it through.
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture;
}

/// The rest of the chain, as a filter sees it: a service that answers with [`Body`], never
/// fails, and can be moved into a `'static` future.
pub trait Next<B>:
    Service<Request<B>, Response = Response<Body>, Error = Infallible, Future: Send> + Send + 'static
{
}

impl<T, B> Next<B> for T where
    T: Service<Request<B>, Response = Response<Body>, Error = Infallible, Future: Send>
        + Send
        + 'static
{
}

/// The tower layer of a [`Filter`].
#[derive(Clone, Debug, Default)]
pub struct FilterLayer<F>(F);

impl<F> FilterLayer<F> {
    /// The layer of `filter`.
    pub(crate) fn of(filter: F) -> Self {
        FilterLayer(filter)
    }
}

impl<F: Clone, S> Layer<S> for FilterLayer<F> {
    type Service = Filtered<F, S>;

    fn layer(&self, inner: S) -> Self::Service {
        Filtered {
            filter: self.0.clone(),
            inner,
        }
    }
}

/// The tower service of a [`Filter`] in front of `inner`.
#[derive(Clone, Debug)]
pub struct Filtered<F, S> {
    filter: F,
    inner: S,
}

impl<F, S, B> Service<Request<B>> for Filtered<F, S>
where
    F: Filter,
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

    fn call(&mut self, request: Request<B>) -> FilterFuture {
        self.filter.filter(take_ready(&mut self.inner), request)
    }
}

/// Takes the service that was polled ready out of `slot`, leaving a fresh clone behind: the
/// usual tower pattern for calling an inner service from a `'static` future.
pub(crate) fn take_ready<S: Clone>(slot: &mut S) -> S {
    let clone = slot.clone();
    std::mem::replace(slot, clone)
}

/// Calls `inner` with `request`: the last step of every filter that lets a request through.
pub(crate) async fn call<S, R>(mut inner: S, request: R) -> Response<Body>
where
    S: Service<R, Response = Response<Body>, Error = Infallible>,
{
    match inner.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The request's [`RequestInfo`]; every filter after [`request_info`] can rely on it.
pub(crate) fn request_info_of<B>(request: &http::Request<B>) -> Option<&RequestInfo> {
    request.extensions().get::<RequestInfo>()
}

/// The request's path and query, as logs and upstream's internal errors quote it.
pub(crate) fn request_uri<B>(request: &http::Request<B>) -> &str {
    request.uri().path_and_query().map_or("/", |pq| pq.as_str())
}
