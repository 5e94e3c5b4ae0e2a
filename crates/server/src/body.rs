//! The one response body type of the server, and small helpers to build and wrap bodies.
//!
//! Every layer of the chain and every handler answers with [`Body`], a boxed body, so layers
//! can wrap bodies (to hold an in-flight slot or to bound a response's lifetime) without
//! generic types leaking into the chain.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};

/// The error type of bodies: any error that can cross threads.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The response body of every handler and filter.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A body that sends `bytes` at once.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A body without content.
pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// Wraps `body` so that `guard` is dropped only when the body is: when the response has been
/// sent completely, or when the client went away. Filters use it to keep per-request state
/// (an in-flight slot, a latency measurement) alive for the whole response, as upstream's
/// filters do by deferring until the handler has written everything.
pub fn with_guard<G: Send + 'static>(body: Body, guard: G) -> Body {
    Guarded {
        body,
        _guard: guard,
    }
    .boxed_unsync()
}

/// A body that owns a value for as long as it lives. See [`with_guard`].
struct Guarded<G> {
    body: Body,
    _guard: G,
}

impl<G> http_body::Body for Guarded<G>
where
    G: Send + 'static,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        // `Body` is Unpin (a box) and the guard is never pinned, so the wrapper is Unpin too.
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<G> Unpin for Guarded<G> {}
