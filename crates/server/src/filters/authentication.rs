//! Authentication (upstream's `WithAuthentication`): stores the request's
//! [`UserInfo`](crate::authn::UserInfo) as an extension (with the server's
//! [`Authentication`], for TokenReviews), or answers 401 `Unauthorized`.
//!
//! As upstream, once a request is authenticated its credentials and identity headers are
//! removed so no handler can reuse them, and unauthenticated HTTP/2 requests close their
//! connection after the response (the HTTP/2 denial-of-service mitigation), so anonymous
//! clients cannot hold many streams open.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::WARNING;
use http::{HeaderValue, Request, Response, Version};
use kapi_apimachinery::ApiError;
use tower::{Layer, Service};

use super::{FilterFuture, call, take_ready};
use crate::audit::Auditor;
use crate::authn::{Authentication, with_notes};
use crate::body::Body;
use crate::responses::api_error;
use crate::serving::ConnectionInfo;

/// Adds [`Authenticate`].
#[derive(Clone)]
pub struct AuthenticationLayer {
    authentication: Arc<Authentication>,
    auditor: Option<Arc<Auditor>>,
}

impl AuthenticationLayer {
    /// Authenticates with `authentication`.
    pub fn new(authentication: Authentication, auditor: Option<Arc<Auditor>>) -> Self {
        AuthenticationLayer {
            authentication: Arc::new(authentication),
            auditor,
        }
    }
}

impl<S> Layer<S> for AuthenticationLayer {
    type Service = Authenticate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticate {
            inner,
            authentication: self.authentication.clone(),
            auditor: self.auditor.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct Authenticate<S> {
    inner: S,
    authentication: Arc<Authentication>,
    auditor: Option<Arc<Auditor>>,
}

impl<S, B> Service<Request<B>> for Authenticate<S>
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
        let authentication = self.authentication.clone();
        let auditor = self.auditor.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let (user, mut notes) = with_notes(authentication.authenticate(&parts)).await;
            let close = parts.version == Version::HTTP_2;
            let close = close
                .then(|| parts.extensions.get::<ConnectionInfo>().cloned())
                .flatten();
            let user = match user {
                Ok(user) => user,
                Err(err) => {
                    tracing::warn!(%err, "Unable to authenticate the request");
                    if let Some(auditor) = &auditor {
                        super::audit::failed_authentication(auditor, &parts, &notes.annotations);
                    }
                    close_after_response(close.as_ref());
                    return Ok(api_error(&ApiError::unauthorized("Unauthorized")));
                }
            };
            authentication.clear_credentials(&mut parts.headers);
            let anonymous = user.is_anonymous();
            parts.extensions.insert(user);
            // TokenReview handlers authenticate their tokens with the same authenticators.
            parts.extensions.insert(authentication);
            let warnings = std::mem::take(&mut notes.warnings);
            if !notes.annotations.is_empty() {
                parts.extensions.insert(notes);
            }
            let mut response = call(inner, Request::from_parts(parts, body)).await;
            add_warnings(&mut response, &warnings);
            if anonymous {
                close_after_response(close.as_ref());
            }
            Ok(response)
        })
    }
}

/// Adds the authenticators' warnings to the response, as `Warning` headers.
fn add_warnings(response: &mut Response<Body>, warnings: &[String]) {
    for warning in warnings {
        let header = format!("299 - {}", kapi_apimachinery::quote(warning));
        if let Ok(value) = HeaderValue::from_str(&header) {
            response.headers_mut().append(WARNING, value);
        }
    }
}

/// Asks the connection to close after this response, when it is to be closed.
fn close_after_response(connection: Option<&ConnectionInfo>) {
    if let Some(connection) = connection {
        connection.close_after_response();
    }
}
