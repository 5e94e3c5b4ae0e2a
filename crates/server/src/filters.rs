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
//! 7. [`max_inflight`]: bounds concurrent requests, answers 429 beyond.
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

use futures::future::BoxFuture;
use http::Response;
use kapi_apimachinery::request_info::RequestInfo;
use tower::Service;

use crate::body::Body;

/// The future of every filter.
pub type FilterFuture = BoxFuture<'static, Result<Response<Body>, Infallible>>;

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
