//! Panic recovery (upstream's `WithPanicRecovery`): a handler that panics answers 500 with
//! upstream's plain-text message, the panic is logged, and the server goes on serving.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use http::{Request, StatusCode};

use super::request_log::AuditId;
use super::{Filter, FilterFuture, FilterLayer, Next, call};
use crate::responses::text_error;

/// The body of the 500 a panic answers, word for word upstream's.
const PANIC_MESSAGE: &str = "This request caused apiserver to panic. Look in the logs for details.";

/// The layer that adds [`PanicRecovery`].
pub type PanicRecoveryLayer = FilterLayer<PanicRecovery>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct PanicRecovery;

impl Filter for PanicRecovery {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
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
pub(crate) fn panic_reason(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown")
}
