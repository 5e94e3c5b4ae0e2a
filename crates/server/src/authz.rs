//! Authorization: may this user do this? The [`Authorizer`] trait (upstream's
//! `authorizer.Authorizer`), the request [`Attributes`] it decides on, the authorizer a bare
//! generic server runs ([`AuthenticatedAuthorizer`]), and [`UnionAuthorizer`], which tries
//! several in order as `--authorization-mode` lists them.

use async_trait::async_trait;
use kapi_apimachinery::quote;
use kapi_apimachinery::request_info::RequestInfo;

use crate::authn::UserInfo;

pub mod modes;
pub mod union;
pub mod webhook;

pub use modes::{AlwaysAllow, AlwaysAllowPaths, AlwaysDeny};
pub use union::{PrivilegedGroups, UnionAuthorizer};
pub use webhook::{FailurePolicy, WebhookAuthorizer};

/// What a request wants to do, as upstream's `authorizer.AttributesRecord`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    /// The Kubernetes verb of resource requests (`get`, `list`, `watch`, `create`, ...), the
    /// lower-cased HTTP method of non-resource requests.
    pub verb: &'a str,
    pub namespace: &'a str,
    pub api_group: &'a str,
    pub api_version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    pub resource_request: bool,
    /// The URL path (non-resource requests are authorized on it).
    pub path: &'a str,
    /// The raw field selector of list, watch and deletecollection requests.
    pub field_selector: &'a str,
    /// The raw label selector of list, watch and deletecollection requests.
    pub label_selector: &'a str,
}

impl<'a> Attributes<'a> {
    /// The attributes of a request from its user and resolved info (upstream's
    /// `GetAuthorizerAttributes`).
    pub fn of_request(user: &'a UserInfo, info: &'a RequestInfo) -> Self {
        Attributes {
            user,
            verb: &info.verb,
            namespace: &info.namespace,
            api_group: &info.api_group,
            api_version: &info.api_version,
            resource: &info.resource,
            subresource: &info.subresource,
            name: &info.name,
            resource_request: info.is_resource_request,
            path: &info.path,
            field_selector: &info.field_selector,
            label_selector: &info.label_selector,
        }
    }

    /// The text a denial starts with, as upstream writes it: `User "u" cannot get path "/x"`,
    /// `User "u" cannot list resource "pods" in API group "" in the namespace "ns"` or
    /// `... at the cluster scope`.
    pub fn forbidden_message(&self) -> String {
        let user = quote(&self.user.name);
        let verb = self.verb;
        if !self.resource_request {
            return format!("User {user} cannot {verb} path {}", quote(self.path));
        }
        let resource = if self.subresource.is_empty() {
            quote(self.resource)
        } else {
            quote(&format!("{}/{}", self.resource, self.subresource))
        };
        let group = quote(self.api_group);
        if self.namespace.is_empty() {
            return format!(
                "User {user} cannot {verb} resource {resource} in API group {group} at the cluster scope"
            );
        }
        let namespace = quote(self.namespace);
        format!(
            "User {user} cannot {verb} resource {resource} in API group {group} in the namespace {namespace}"
        )
    }
}

/// An authorizer's answer, with its reason: an allowance's is what SubjectAccessReviews
/// and the audit log report (`RBAC: allowed by ...`); a denial's or no-opinion's, when not
/// empty, is appended to the 403's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
    /// Neither allowed nor denied: the next authorizer decides; at the end it is a denial.
    NoOpinion(String),
}

/// The authorizer could not decide (for instance, a webhook failed): the request is
/// answered 500.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthorizationError(pub String);

/// A rule on resources an authorizer grants (SelfSubjectRulesReview's `resourceRules`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

/// A rule on non-resource URLs an authorizer grants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// What an authorizer grants a user in a namespace (upstream's `RuleResolver.RulesFor`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesInfo {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// The authorizer may allow more than the rules say (it cannot list what it grants).
    pub incomplete: bool,
    /// What went wrong while resolving the rules.
    pub errors: Vec<String>,
}

impl RulesInfo {
    /// Everything: `*` on every resource and non-resource URL.
    pub fn everything() -> RulesInfo {
        let all = || vec!["*".to_string()];
        RulesInfo {
            resource_rules: vec![ResourceRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                resource_names: Vec::new(),
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: all(),
                non_resource_urls: all(),
            }],
            ..RulesInfo::default()
        }
    }

    /// Nothing known: the `kind` authorizer cannot list what it grants. The error is
    /// upstream's, which kubectl shows as "the list may be incomplete".
    pub fn unknown(kind: &str) -> RulesInfo {
        RulesInfo {
            incomplete: true,
            errors: vec![format!(
                "{kind} authorizer does not support user rule resolution"
            )],
            ..RulesInfo::default()
        }
    }
}

/// Decides whether a request is allowed.
#[async_trait]
pub trait Authorizer: Send + Sync {
    /// The decision for `attributes`.
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError>;

    /// The rules the authorizer grants `user` in `namespace`, as far as it can tell.
    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo;
}

/// The non-resource paths anyone may GET (upstream's `system:public-info-viewer` role).
const PUBLIC_INFO_PATHS: [&str; 5] = ["/healthz", "/livez", "/readyz", "/version", "/version/"];

/// Allows every authenticated user everything, and anonymous requests only what upstream's
/// default policy grants `system:unauthenticated`: GET of the health and version paths.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuthenticatedAuthorizer;

#[async_trait]
impl Authorizer for AuthenticatedAuthorizer {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        if !attributes.user.is_anonymous() {
            return Ok(Decision::Allow(String::new()));
        }
        let public = !attributes.resource_request
            && attributes.verb == "get"
            && PUBLIC_INFO_PATHS.contains(&attributes.path);
        Ok(if public {
            Decision::Allow(String::new())
        } else {
            Decision::NoOpinion(String::new())
        })
    }

    async fn rules_for(&self, user: &UserInfo, _namespace: &str) -> RulesInfo {
        if !user.is_anonymous() {
            return RulesInfo::everything();
        }
        RulesInfo {
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["get".to_string()],
                non_resource_urls: PUBLIC_INFO_PATHS.iter().map(|p| p.to_string()).collect(),
            }],
            ..RulesInfo::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_apimachinery::request_info::RequestInfoFactory;

    fn info(method: &str, path: &str) -> RequestInfo {
        RequestInfoFactory::default()
            .resolve(method, path, None)
            .unwrap()
    }

    #[test]
    fn messages_read_as_upstream() {
        let anonymous = UserInfo::anonymous();
        let api = info("GET", "/api");
        assert_eq!(
            Attributes::of_request(&anonymous, &api).forbidden_message(),
            r#"User "system:anonymous" cannot get path "/api""#
        );
        let list = info("GET", "/api/v1/namespaces/default/configmaps");
        assert_eq!(
            Attributes::of_request(&anonymous, &list).forbidden_message(),
            r#"User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        let status = info("PUT", "/apis/apps/v1/deployments/x/status");
        assert_eq!(
            Attributes::of_request(&anonymous, &status).forbidden_message(),
            r#"User "system:anonymous" cannot update resource "deployments/status" in API group "apps" at the cluster scope"#
        );
    }

    #[tokio::test]
    async fn anonymous_may_read_public_info_only() {
        let anonymous = UserInfo::anonymous();
        let decide = |method: &'static str, path: &'static str| {
            let anonymous = anonymous.clone();
            async move {
                let info = info(method, path);
                AuthenticatedAuthorizer
                    .authorize(&Attributes::of_request(&anonymous, &info))
                    .await
                    .unwrap()
            }
        };
        assert_eq!(
            decide("GET", "/healthz").await,
            Decision::Allow(String::new())
        );
        assert_eq!(
            decide("GET", "/version/").await,
            Decision::Allow(String::new())
        );
        assert_eq!(
            decide("GET", "/readyz/etcd").await,
            Decision::NoOpinion(String::new())
        );
        assert_eq!(
            decide("POST", "/healthz").await,
            Decision::NoOpinion(String::new())
        );
        assert_eq!(
            decide("GET", "/api").await,
            Decision::NoOpinion(String::new())
        );
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        let info = info("DELETE", "/api/v1/namespaces/default");
        assert_eq!(
            AuthenticatedAuthorizer
                .authorize(&Attributes::of_request(&alice, &info))
                .await
                .unwrap(),
            Decision::Allow(String::new())
        );
    }
}
