//! Authorization (upstream's `WithAuthorization`): lets the request through when the
//! [`Authorizer`] allows it; answers 403 `Forbidden` with upstream's message otherwise, and
//! 500 when the authorizer failed.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::request::Parts;
use http::{HeaderValue, Request, Response};
use kapi_apimachinery::ApiError;
use kapi_apimachinery::request_info::RequestInfo;
use kapi_apimachinery::schema::GroupResource;
use tower::{Layer, Service};

use super::{FilterFuture, call, take_ready};
use crate::audit::AuditAnnotations;
use crate::authn::UserInfo;
use crate::authz::{Attributes, Authorizer, Decision};
use crate::body::Body;
use crate::responses::{X_CONTENT_TYPE_OPTIONS, api_error, internal_error, sanitize};

/// The audit annotations of every authorized request: the decision and its reason.
const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// Adds [`Authorize`].
#[derive(Clone)]
pub struct AuthorizationLayer {
    authorizer: Arc<dyn Authorizer>,
}

impl AuthorizationLayer {
    /// Authorizes with `authorizer`.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        AuthorizationLayer { authorizer }
    }
}

impl<S> Layer<S> for AuthorizationLayer {
    type Service = Authorize<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authorize {
            inner,
            authorizer: self.authorizer.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct Authorize<S> {
    inner: S,
    authorizer: Arc<dyn Authorizer>,
}

impl<S, B> Service<Request<B>> for Authorize<S>
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
        let authorizer = self.authorizer.clone();
        Box::pin(async move {
            // Only the head is borrowed across the authorizer's await: bodies need not be Sync.
            let (mut parts, body) = request.into_parts();
            match decide(authorizer.as_ref(), &parts).await {
                Ok(()) => {
                    // Handlers answering access reviews ask the same authorizer.
                    parts.extensions.insert(authorizer);
                    Ok(call(inner, Request::from_parts(parts, body)).await)
                }
                Err(response) => Ok(response),
            }
        })
    }
}

/// `Ok` when the request may go on, or the response that refuses it.
async fn decide(authorizer: &dyn Authorizer, request: &Parts) -> Result<(), Response<Body>> {
    let uri = request.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let extensions = &request.extensions;
    let (Some(info), Some(user)) = (
        extensions.get::<RequestInfo>(),
        extensions.get::<UserInfo>(),
    ) else {
        return Err(internal_error(uri, "no RequestInfo found in the context"));
    };
    let attributes = Attributes::of_request(user, info);
    let audit = AuditAnnotations::of(extensions);
    match authorizer.authorize(&attributes).await {
        Ok(Decision::Allow(reason)) => {
            audit.add(DECISION_ANNOTATION, "allow");
            audit.add(REASON_ANNOTATION, &reason);
            Ok(())
        }
        Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => {
            tracing::debug!(uri, reason, "Forbidden");
            audit.add(DECISION_ANNOTATION, "forbid");
            audit.add(REASON_ANNOTATION, &reason);
            Err(forbidden(&attributes, &reason))
        }
        Err(err) => Err(internal_error(uri, &err.to_string())),
    }
}

/// The 403 for a refused request (upstream's `responsewriters.Forbidden`).
pub(crate) fn forbidden(attributes: &Attributes<'_>, reason: &str) -> Response<Body> {
    let mut message = sanitize(&attributes.forbidden_message());
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let resource = GroupResource::new(attributes.api_group, attributes.resource);
    let mut response = api_error(&ApiError::forbidden(&resource, attributes.name, message));
    response
        .headers_mut()
        .insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
