//! Authorization (upstream's `WithAuthorization`): lets the request through when the
//! [`Authorizer`] allows it; answers 403 `Forbidden` with upstream's message otherwise, and
//! 500 when the authorizer failed.

use std::sync::Arc;

use http::request::Parts;
use http::{HeaderValue, Request, Response};
use kapi_apimachinery::ApiError;
use kapi_apimachinery::request_info::RequestInfo;
use kapi_apimachinery::schema::GroupResource;

use super::{Filter, FilterFuture, FilterLayer, Next, call};
use crate::audit::AuditAnnotations;
use crate::authn::UserInfo;
use crate::authz::{Attributes, Authorizer, Decision};
use crate::body::Body;
use crate::responses::{X_CONTENT_TYPE_OPTIONS, api_error_negotiated, internal_error, sanitize};

/// The audit annotations of every authorized request: the decision and its reason.
const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// The layer that adds [`Authorize`].
pub type AuthorizationLayer = FilterLayer<Authorize>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone)]
pub struct Authorize {
    authorizer: Arc<dyn Authorizer>,
}

impl AuthorizationLayer {
    /// Authorizes with `authorizer`.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        FilterLayer(Authorize { authorizer })
    }
}

impl Filter for Authorize {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
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
            Err(forbidden(&attributes, &reason, accept(request)))
        }
        Err(err) => Err(internal_error(uri, &err.to_string())),
    }
}

/// The request's Accept header, which errors are negotiated by.
pub(crate) fn accept(request: &Parts) -> Option<&str> {
    request
        .headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
}

/// The 403 for a refused request (upstream's `responsewriters.Forbidden`).
pub(crate) fn forbidden(
    attributes: &Attributes<'_>,
    reason: &str,
    accept: Option<&str>,
) -> Response<Body> {
    let mut message = sanitize(&attributes.forbidden_message());
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let resource = GroupResource::new(attributes.api_group, attributes.resource);
    let err = ApiError::forbidden(&resource, attributes.name, message);
    let mut response = api_error_negotiated(&err, accept);
    response
        .headers_mut()
        .insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
