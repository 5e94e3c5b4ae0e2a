//! Panic recovery (upstream's `WithPanicRecovery`): a handler that panics answers 500 with
//! upstream's plain-text message, the panic is logged, and the server goes on serving.

use std::any::Any;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use futures::FutureExt;
use http::{Request, Response, StatusCode};
use tower::{Layer, Service};

use super::request_log::AuditId;
use super::{FilterFuture, call, take_ready};
use crate::body::Body;
use crate::responses::text_error;

/// The body of the 500 a panic answers, word for word upstream's.
const PANIC_MESSAGE: &str = "This request caused apiserver to panic. Look in the logs for details.";

/// Adds [`PanicRecovery`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PanicRecoveryLayer;

impl<S> Layer<S> for PanicRecoveryLayer {
    type Service = PanicRecovery<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PanicRecovery { inner }
    }
}

/// Turns a panic while producing the response into a 500.
#[derive(Clone, Debug)]
pub struct PanicRecovery<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for PanicRecovery<S>
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

    fn call(&mut self, request: Request<B>) -> FilterFuture {
        let inner = take_ready(&mut self.inner);
        let method = request.method().clone();
        let uri = request.uri().clone();
        let audit_id = request.extensions().get::<AuditId>().cloned();
        Box::pin(async move {
            match AssertUnwindSafe(call(inner, request)).catch_unwind().await {
                Ok(response) => Ok(response),
                Err(panic) => {
                    let audit_id = audit_id.as_ref().map_or("", |id| id.as_str());
                    let uri = uri.path_and_query().map_or("/", |pq| pq.as_str());
                    let reason = panic_reason(&*panic);
                    tracing::error!(%method, uri, audit_id, reason, "apiserver panic'd");
                    Ok(text_error(StatusCode::INTERNAL_SERVER_ERROR, PANIC_MESSAGE))
                }
            }
        })
    }
}

/// The message a panic was raised with, when it has one.
fn panic_reason(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown")
}
