//! Authentication (upstream's `WithAuthentication`): stores the request's
//! [`UserInfo`](crate::authn::UserInfo) as an extension (with the server's
//! [`Authentication`], for TokenReviews), or answers 401 `Unauthorized`.
//!
//! As upstream, once a request is authenticated its credentials and identity headers are
//! removed so no handler can reuse them, and unauthenticated HTTP/2 requests close their
//! connection after the response (the HTTP/2 denial-of-service mitigation), so anonymous
//! clients cannot hold many streams open.

use std::sync::Arc;

use http::header::WARNING;
use http::{HeaderValue, Request, Response, Version};
use kapi_apimachinery::ApiError;

use super::{Filter, FilterFuture, FilterLayer, Next, call};
use crate::audit::Auditor;
use crate::authn::{Authentication, with_notes};
use crate::body::Body;
use crate::responses::api_error_negotiated;
use crate::serving::ConnectionInfo;

/// The layer that adds [`Authenticate`].
pub type AuthenticationLayer = FilterLayer<Authenticate>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone)]
pub struct Authenticate {
    authentication: Arc<Authentication>,
    auditor: Option<Arc<Auditor>>,
}

impl AuthenticationLayer {
    /// Authenticates with `authentication`.
    pub fn new(authentication: Authentication, auditor: Option<Arc<Auditor>>) -> Self {
        FilterLayer(Authenticate {
            authentication: Arc::new(authentication),
            auditor,
        })
    }
}

impl Filter for Authenticate {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
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
                    let err = ApiError::unauthorized("Unauthorized");
                    let accept = super::authorization::accept(&parts);
                    return Ok(api_error_negotiated(&err, accept));
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
