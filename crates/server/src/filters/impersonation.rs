//! Impersonation (upstream's `WithImpersonation`): a request with `Impersonate-User` (and
//! optionally `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-<key>`) acts as
//! that user, once the authorizer allows the requester the `impersonate` verb on each of
//! them; otherwise 403 with upstream's message. The headers are removed afterwards.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::request::Parts;
use http::{HeaderMap, Request, Response};
use kapi_apimachinery::ApiError;
use kapi_apimachinery::request_info::path_unescape;

use super::authorization::{accept, forbidden};
use super::{Filter, FilterFuture, FilterLayer, Next, call};
use crate::audit::AuditContext;
use crate::authn::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo};
use crate::authz::{Attributes, Authorizer, Decision};
use crate::body::Body;
use crate::responses::{api_error, internal_error};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
/// The prefix of service accounts' user names.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The layer that adds [`Impersonate`].
pub type ImpersonationLayer = FilterLayer<Impersonate>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone)]
pub struct Impersonate {
    authorizer: Arc<dyn Authorizer>,
}

impl ImpersonationLayer {
    /// Asks `authorizer` whether the requester may impersonate.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        FilterLayer(Impersonate { authorizer })
    }
}

impl Filter for Impersonate {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
        let authorizer = self.authorizer.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            match impersonated(authorizer.as_ref(), &parts).await {
                Ok(None) => {}
                Ok(Some(user)) => {
                    remove_headers(&mut parts.headers);
                    if let Some(audit) = parts.extensions.get::<Arc<AuditContext>>() {
                        audit.set_impersonated_user(&user);
                    }
                    parts.extensions.insert(user);
                }
                Err(response) => return Ok(response),
            }
            Ok(call(inner, Request::from_parts(parts, body)).await)
        })
    }
}

/// One thing a request asks to act as.
enum Impersonation {
    User(String),
    ServiceAccount(String, String),
    Group(String),
    Extra(String, String),
    Uid(String),
}

/// What the impersonation headers ask for, in upstream's order; 400 when groups, uid or
/// extras come without a user (upstream's answer since 1.35).
fn requests(headers: &HeaderMap) -> Result<Vec<Impersonation>, ApiError> {
    let text = |value: &http::HeaderValue| value.to_str().unwrap_or_default().to_string();
    let mut requests = Vec::new();
    let user = headers.get(USER).map(text).unwrap_or_default();
    if !user.is_empty() {
        requests.push(match service_account(&user) {
            Some((namespace, name)) => Impersonation::ServiceAccount(namespace, name),
            None => Impersonation::User(user.clone()),
        });
    }
    requests.extend(
        headers
            .get_all(GROUP)
            .iter()
            .map(|g| Impersonation::Group(text(g))),
    );
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            // An undecodable key is taken as it is, as upstream does.
            let key = path_unescape(key).unwrap_or_else(|_| key.to_string());
            requests.push(Impersonation::Extra(key, text(value)));
        }
    }
    if let Some(uid) = headers.get(UID).map(text).filter(|uid| !uid.is_empty()) {
        requests.push(Impersonation::Uid(uid));
    }
    if user.is_empty() && !requests.is_empty() {
        let requested: Vec<String> = requests.iter().map(ToString::to_string).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            requested.join(" ")
        )));
    }
    Ok(requests)
}

/// The object reference upstream builds for the request, as Go's `%v` prints it:
/// `{Kind Namespace Name UID APIVersion ResourceVersion FieldPath}`.
impl std::fmt::Display for Impersonation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const VERSION: &str = "authentication.k8s.io/v1";
        let (kind, namespace, name, version, field) = match self {
            Impersonation::User(name) => ("User", "", name.as_str(), "", ""),
            Impersonation::ServiceAccount(namespace, name) => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Impersonation::Group(name) => ("Group", "", name.as_str(), "", ""),
            Impersonation::Extra(key, value) => {
                ("UserExtra", "", value.as_str(), VERSION, key.as_str())
            }
            Impersonation::Uid(uid) => ("UID", "", uid.as_str(), VERSION, ""),
        };
        write!(f, "{{{kind} {namespace} {name}  {version}  {field}}}")
    }
}

/// `system:serviceaccount:<namespace>:<name>` split, if `user` is one.
fn service_account(user: &str) -> Option<(String, String)> {
    let (namespace, name) = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':'))
        .then(|| (namespace.to_string(), name.to_string()))
}

/// The user the request acts as (`None` without impersonation headers), or the response
/// refusing it.
async fn impersonated(
    authorizer: &dyn Authorizer,
    parts: &Parts,
) -> Result<Option<UserInfo>, Response<Body>> {
    let uri = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let requests = requests(&parts.headers).map_err(|err| api_error(&err))?;
    if requests.is_empty() {
        return Ok(None);
    }
    let Some(requester) = parts.extensions.get::<UserInfo>() else {
        return Err(internal_error(uri, "no user found for request"));
    };
    let groups_given = requests
        .iter()
        .any(|r| matches!(r, Impersonation::Group(_)));
    let mut user = UserInfo::default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in &requests {
        let (group, resource, namespace, name, subresource) = match request {
            Impersonation::User(name) => {
                user.name = name.clone();
                ("", "users", "", name.as_str(), "")
            }
            Impersonation::ServiceAccount(namespace, name) => {
                user.name = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".to_string(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
                ("", "serviceaccounts", namespace.as_str(), name.as_str(), "")
            }
            Impersonation::Group(name) => {
                user.groups.push(name.clone());
                ("", "groups", "", name.as_str(), "")
            }
            Impersonation::Extra(key, value) => {
                extra.entry(key.clone()).or_default().push(value.clone());
                (
                    "authentication.k8s.io",
                    "userextras",
                    "",
                    value.as_str(),
                    key.as_str(),
                )
            }
            Impersonation::Uid(uid) => {
                user.uid = uid.clone();
                ("authentication.k8s.io", "uids", "", uid.as_str(), "")
            }
        };
        let attributes = Attributes {
            user: requester,
            verb: "impersonate",
            namespace,
            api_group: group,
            api_version: "v1",
            resource,
            subresource,
            name,
            resource_request: true,
            path: parts.uri.path(),
            field_selector: "",
            label_selector: "",
        };
        match authorizer.authorize(&attributes).await {
            Ok(Decision::Allow(_)) => {}
            Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => {
                return Err(forbidden(&attributes, &reason, accept(parts)));
            }
            Err(err) => return Err(forbidden(&attributes, &err.0, accept(parts))),
        }
    }
    user.extra = extra;
    add_catch_all_group(&mut user);
    Ok(Some(user))
}

/// `system:authenticated` for an impersonated user (unless a catch-all group was asked
/// for), `system:unauthenticated` for an impersonated anonymous user.
fn add_catch_all_group(user: &mut UserInfo) {
    if user.name == ANONYMOUS {
        if !user.in_group(ALL_UNAUTHENTICATED) {
            user.groups.push(ALL_UNAUTHENTICATED.into());
        }
    } else if !user.in_group(ALL_AUTHENTICATED) && !user.in_group(ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_AUTHENTICATED.into());
    }
}

/// Removes the impersonation headers once they are honoured.
fn remove_headers(headers: &mut HeaderMap) {
    let extras: Vec<http::HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with(EXTRA_PREFIX))
        .cloned()
        .collect();
    for name in extras.iter().map(|n| n.as_str()).chain([USER, GROUP, UID]) {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{AuthorizationError, RulesInfo};
    use async_trait::async_trait;

    /// Allows impersonating users and groups named `ok*`, and anything in namespace `ok`.
    struct OnlyOk;

    #[async_trait]
    impl Authorizer for OnlyOk {
        async fn authorize(&self, a: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
            let ok = a.verb == "impersonate" && (a.name.starts_with("ok") || a.namespace == "ok");
            Ok(if ok {
                Decision::Allow(String::new())
            } else {
                Decision::NoOpinion(String::new())
            })
        }

        async fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
            RulesInfo::unknown("test")
        }
    }

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut builder = http::Request::builder().uri("/api/v1/pods");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let (mut parts, ()) = builder.body(()).unwrap().into_parts();
        parts.extensions.insert(UserInfo {
            name: "admin".into(),
            ..UserInfo::default()
        });
        parts
    }

    async fn status(headers: &[(&str, &str)]) -> Result<Option<UserInfo>, u16> {
        impersonated(&OnlyOk, &parts(headers))
            .await
            .map_err(|r| r.status().as_u16())
    }

    #[tokio::test]
    async fn impersonation_is_authorized_per_request() {
        assert_eq!(status(&[]).await, Ok(None));
        let user = status(&[
            ("Impersonate-User", "ok-alice"),
            ("Impersonate-Group", "ok-devs"),
            ("Impersonate-Extra-ok%2Fscopes", "ok-view"),
        ])
        .await
        .unwrap()
        .unwrap();
        assert_eq!(user.name, "ok-alice");
        assert_eq!(user.groups, ["ok-devs", ALL_AUTHENTICATED]);
        assert_eq!(user.extra["ok/scopes"], ["ok-view"]);
        let robot = status(&[("Impersonate-User", "system:serviceaccount:ok:robot")])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            robot.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ok",
                ALL_AUTHENTICATED
            ]
        );
        assert_eq!(status(&[("Impersonate-User", "mallory")]).await, Err(403));
        assert_eq!(
            status(&[
                ("Impersonate-User", "ok-alice"),
                ("Impersonate-Group", "admins")
            ])
            .await,
            Err(403)
        );
        assert_eq!(status(&[("Impersonate-Group", "ok-devs")]).await, Err(400));
        let anonymous = status(&[("Impersonate-User", "ok")])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(anonymous.groups, [ALL_AUTHENTICATED]);
    }

    #[tokio::test]
    async fn refusals_read_as_upstream() {
        let response = impersonated(&OnlyOk, &parts(&[("Impersonate-User", "mallory")]))
            .await
            .unwrap_err();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            status["message"],
            r#"users "mallory" is forbidden: User "admin" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let err = requests(&parts(&[("Impersonate-Group", "g"), ("Impersonate-Uid", "u")]).headers)
            .err()
            .unwrap();
        assert_eq!(
            (err.code(), err.message()),
            (
                400,
                "requested [{Group  g    } {UID  u  authentication.k8s.io/v1  }] without impersonating a user"
            )
        );
    }
}
