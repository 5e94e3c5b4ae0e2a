//! Request lifetimes (upstream's `WithRequestDeadline` and `WithTimeoutForNonLongRunningRequests`).
//!
//! A non-long-running request has until its deadline: `--request-timeout` after it was
//! received, or less when its `timeout` query parameter asks for less. The deadline is a
//! request extension ([`RequestDeadline`]) for handlers to pass on. A handler that has not
//! answered by then is dropped and the client gets upstream's 504; a response whose body is
//! still streaming then is aborted (the stream is reset), as upstream aborts it, and one that
//! the client is not reading is cut by closing its connection (the connection is told the
//! deadline through the request's [`ResponseDeadline`]).
//!
//! A long-running request (watch, ...) has no deadline, but its response ends cleanly when the
//! server drains at shutdown, so clients re-establish it elsewhere.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Request, Response};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use kapi_apimachinery::ApiError;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::long_running::is_long_running;
use super::request_log::RequestReceived;
use super::{Filter, FilterFuture, FilterLayer, Next, call, request_info_of, request_uri};
use crate::body::{Body, BoxError};
use crate::metrics::Terminated;
use crate::query;
use crate::responses::{TEXT_PLAIN_UTF8, api_error, internal_error};
use crate::serving::ResponseDeadline;
use kapi_apimachinery::goduration;

/// The start of the 400 for a malformed `timeout` parameter.
const INVALID_TIMEOUT: &str = "invalid timeout specified in the request URL";
/// The message of the 504.
const TIMEOUT_MESSAGE: &str = "request did not complete within the allotted timeout";

/// When a non-long-running request must be answered. A request extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestDeadline(pub std::time::Instant);

/// The layer that adds [`Timeout`].
pub type TimeoutLayer = FilterLayer<Timeout>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Debug)]
pub struct Timeout {
    request_timeout: Duration,
    drain: CancellationToken,
}

impl TimeoutLayer {
    /// Bounds requests by `request_timeout`, and long-running ones by `drain`.
    pub fn new(request_timeout: Duration, drain: CancellationToken) -> Self {
        FilterLayer(Timeout {
            request_timeout,
            drain,
        })
    }
}

impl Filter for Timeout {
    fn filter<S: Next<B>, B: Send + 'static>(
        &self,
        inner: S,
        mut request: Request<B>,
    ) -> FilterFuture {
        let Some(info) = request_info_of(&request) else {
            let response = internal_error(
                request_uri(&request),
                "no request info found for request during timeout",
            );
            return Box::pin(async move { Ok(response) });
        };
        if is_long_running(info) {
            let drain = self.drain.clone();
            return Box::pin(async move {
                let response = call(inner, request).await;
                Ok(response
                    .map(|body| bounded(body, Bound::Drain(Box::pin(drain.cancelled_owned())))))
            });
        }
        let deadline = match self.deadline(&request) {
            Ok(deadline) => deadline,
            Err(err) => {
                let response = api_error(&err);
                return Box::pin(async move { Ok(response) });
            }
        };
        request
            .extensions_mut()
            .insert(RequestDeadline(deadline.into_std()));
        // The connection closes if the response is still being sent then: a client that
        // does not read stops hyper from polling the body, so the body cannot tell.
        if let Some(response_deadline) = request.extensions().get::<ResponseDeadline>() {
            response_deadline.set(deadline);
        }
        Box::pin(async move {
            match tokio::time::timeout_at(deadline, call(inner, request)).await {
                Ok(response) => {
                    Ok(response.map(|body| bounded(body, Bound::Deadline(deadline, None))))
                }
                Err(_) => Ok(timed_out()),
            }
        })
    }
}

impl Timeout {
    /// The request's deadline, or the 400 for a malformed `timeout` parameter.
    fn deadline<B>(&self, request: &Request<B>) -> Result<Instant, ApiError> {
        let query = request.uri().query().unwrap_or("");
        let timeout = request_timeout(query, self.request_timeout)?;
        let received = request
            .extensions()
            .get::<RequestReceived>()
            .map_or_else(std::time::Instant::now, |r| r.0);
        Ok(Instant::from_std(received) + timeout)
    }
}

/// How long a non-long-running request with `query` has: its `timeout` parameter when
/// that is shorter than `maximum` (`--request-timeout`), else `maximum`; the 400 for a
/// malformed one.
pub(crate) fn request_timeout(query: &str, maximum: Duration) -> Result<Duration, ApiError> {
    let timeout = match query::first(query, "timeout") {
        Some(value) if !value.is_empty() => {
            let nanos = goduration::parse_nanos(&value)
                .map_err(|err| ApiError::bad_request(format!("{INVALID_TIMEOUT} - {err}")))?;
            u64::try_from(nanos)
                .ok()
                .map(Duration::from_nanos)
                .filter(|t| !t.is_zero() && *t < maximum)
                .unwrap_or(maximum)
        }
        _ => maximum,
    };
    Ok(timeout)
}

/// Upstream's 504: the Timeout `Status` as JSON. Upstream writes it without a content type,
/// so Go's server labels it `text/plain; charset=utf-8` by sniffing; so do we, since clients
/// decide how to read the body by that label.
fn timed_out() -> Response<Body> {
    let mut response = api_error(&ApiError::timeout(TIMEOUT_MESSAGE, 0));
    // A termination in self-defense, as upstream's timeout filter records it.
    response.extensions_mut().insert(Terminated);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_PLAIN_UTF8));
    response
}

/// What ends a response body early.
enum Bound {
    /// Past this instant the body fails, aborting the response. The timer is created only if
    /// the body ever has to wait.
    Deadline(Instant, Option<Pin<Box<Sleep>>>),
    /// When the server drains, the body ends cleanly.
    Drain(Pin<Box<WaitForCancellationFutureOwned>>),
}

/// Wraps `body` so that `bound` ends it.
fn bounded(body: Body, bound: Bound) -> Body {
    BoundedBody { body, bound }.boxed_unsync()
}

/// A body ended by its [`Bound`].
struct BoundedBody {
    body: Body,
    bound: Bound,
}

impl http_body::Body for BoundedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        match &mut this.bound {
            Bound::Deadline(deadline, timer) => {
                let timer =
                    timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(*deadline)));
                ready!(timer.as_mut().poll(cx));
                Poll::Ready(Some(Err(TIMEOUT_MESSAGE.into())))
            }
            Bound::Drain(drained) => {
                ready!(drained.as_mut().poll(cx));
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
