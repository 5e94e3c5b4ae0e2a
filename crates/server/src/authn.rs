//! Authentication: who sent a request.
//!
//! As kube-apiserver: a list of [`Authenticator`]s is tried in order and the first that
//! recognizes the request wins (upstream's union authenticator); a recognized user gets the
//! group `system:authenticated`; a request nobody recognizes is `system:anonymous` in group
//! `system:unauthenticated` when anonymous requests are allowed, but a request whose
//! credentials failed (an authenticator returned an error) is rejected, not downgraded.

pub mod jws;
pub mod oidc;
pub mod request_header;
pub mod token;
pub mod webhook;
pub mod x509;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

pub use request_header::{RequestHeaderAuthenticator, RequestHeaderConfig};
pub use token::{BearerToken, TokenAuthenticator, TokenFile};
pub use x509::X509Authenticator;

/// The name of unauthenticated requests.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of every authenticated user.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of unauthenticated requests.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group that bypasses authorization and the in-flight limit.
pub const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";
/// The `extra` key identifying the credential a user authenticated with.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// An authenticated identity (upstream's `user.Info`). Requests that passed authentication
/// carry it as a request extension.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The identity of unauthenticated requests.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.into(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
            ..UserInfo::default()
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Whether this is an unauthenticated request (by name or group, as upstream checks).
    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS || self.in_group(ALL_UNAUTHENTICATED)
    }

    /// Adds `system:authenticated` unless the user is anonymous or already in one of the two
    /// catch-all groups (upstream's `AuthenticatedGroupAdder`).
    fn with_authenticated_group(mut self) -> Self {
        if self.name != ANONYMOUS
            && !self.in_group(ALL_AUTHENTICATED)
            && !self.in_group(ALL_UNAUTHENTICATED)
        {
            self.groups.push(ALL_AUTHENTICATED.into());
        }
        self
    }
}

/// Credentials were presented but are not valid. The reason is logged, never sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthenticationError(pub String);

/// One way of recognizing a request's sender (client certificates, tokens, ...).
#[async_trait]
pub trait Authenticator: Send + Sync {
    /// The user the request's credentials prove, `Ok(None)` when the request carries no
    /// credentials of this kind, or an error when they are invalid.
    async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<Option<UserInfo>, AuthenticationError>;
}

/// The authenticators of a server in order, and whether anonymous requests are allowed.
#[derive(Clone)]
pub struct Authentication {
    authenticators: Vec<Arc<dyn Authenticator>>,
    anonymous: bool,
    /// The front-proxy identity headers removed from authenticated requests.
    identity_headers: Arc<RequestHeaderConfig>,
}

impl Authentication {
    /// Tries `authenticators` in order; unrecognized requests are anonymous if `anonymous`.
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>, anonymous: bool) -> Self {
        Authentication {
            authenticators,
            anonymous,
            identity_headers: Arc::new(RequestHeaderConfig::standard_headers()),
        }
    }

    /// Removes `config`'s identity headers (not only the standard ones) from authenticated
    /// requests.
    pub fn set_identity_headers(&mut self, config: RequestHeaderConfig) {
        self.identity_headers = Arc::new(config);
    }

    /// Removes the credentials a request carried once it is authenticated: the
    /// `Authorization` header and the front-proxy identity headers.
    pub(crate) fn clear_credentials(&self, headers: &mut http::HeaderMap) {
        headers.remove(http::header::AUTHORIZATION);
        self.identity_headers.clear(headers);
    }

    /// These authenticators after the loopback connections' (see [`crate::loopback`]).
    pub(crate) fn with_loopback(mut self) -> Self {
        let loopback: Arc<dyn Authenticator> = Arc::new(crate::loopback::LoopbackAuthenticator);
        self.authenticators.insert(0, loopback);
        self
    }

    /// Adds an authenticator, tried after the others.
    pub fn push(&mut self, authenticator: Arc<dyn Authenticator>) {
        self.authenticators.push(authenticator);
    }

    /// The user of a request, or an error when it must be answered 401.
    pub async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<UserInfo, AuthenticationError> {
        let mut errors = Vec::new();
        for authenticator in &self.authenticators {
            match authenticator.authenticate(request).await {
                Ok(Some(user)) => return Ok(user.with_authenticated_group()),
                Ok(None) => {}
                Err(err) => errors.push(err.0),
            }
        }
        if !errors.is_empty() {
            return Err(AuthenticationError(aggregate(&errors)));
        }
        if self.anonymous {
            return Ok(UserInfo::anonymous());
        }
        Err(AuthenticationError("no credentials".into()))
    }
}

impl Authentication {
    /// Authenticates a bare bearer token as a TokenReview does (upstream authenticates a
    /// request carrying nothing but `Authorization: Bearer <token>`), for `audiences`: the
    /// user, with the audiences an audience-aware authenticator (service-account tokens)
    /// granted, `None` when the one that knew the token is audience-agnostic.
    pub async fn review_token(
        &self,
        token: &str,
        audiences: Vec<String>,
    ) -> Result<(UserInfo, Option<Vec<String>>), AuthenticationError> {
        let invalid = || AuthenticationError("invalid bearer token".into());
        let header =
            http::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| invalid())?;
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.headers.insert(http::header::AUTHORIZATION, header);
        let review = RefCell::new(TokenReviewScope {
            audiences,
            granted: None,
        });
        TOKEN_REVIEW
            .scope(review, async {
                let user = self.authenticate(&parts).await?;
                let granted = TOKEN_REVIEW.with(|review| review.borrow_mut().granted.take());
                Ok((user, granted))
            })
            .await
    }
}

/// What a TokenReview asks of the authenticators: the audiences the token is reviewed for,
/// and those an audience-aware authenticator granted.
struct TokenReviewScope {
    audiences: Vec<String>,
    granted: Option<Vec<String>>,
}

tokio::task_local! {
    /// What the authentication under way adds to its request (see [`AuthenticationNotes`]).
    static NOTES: RefCell<AuthenticationNotes>;
    /// The TokenReview under way, if the authentication is one's.
    static TOKEN_REVIEW: RefCell<TokenReviewScope>;
}

/// The audiences a TokenReview under way checks the token for; `None` when the
/// authentication is a request's own (which wants the API audiences).
pub fn reviewed_audiences() -> Option<Vec<String>> {
    TOKEN_REVIEW
        .try_with(|review| review.borrow().audiences.clone())
        .ok()
}

/// Records the audiences an audience-aware authenticator found the token valid for, for the
/// TokenReview under way (nothing outside one).
pub fn grant_audiences(audiences: Vec<String>) {
    let _ = TOKEN_REVIEW.try_with(|review| review.borrow_mut().granted = Some(audiences));
}

/// What authenticators add to the request they authenticate, as upstream's do through the
/// request's context: audit annotations (`authentication.k8s.io/legacy-token` and the like),
/// which land in the request's audit event (or its failed authentication's), and warnings,
/// sent as `Warning` headers.
#[derive(Clone, Debug, Default)]
pub(crate) struct AuthenticationNotes {
    pub(crate) annotations: Vec<(String, String)>,
    pub(crate) warnings: Vec<String>,
}

/// Adds an audit annotation to the request being authenticated; does nothing outside a
/// request's authentication (in a TokenReview, say).
pub fn add_audit_annotation(key: &str, value: String) {
    let _ = NOTES.try_with(|notes| notes.borrow_mut().annotations.push((key.into(), value)));
}

/// Adds a warning to the response of the request being authenticated; does nothing
/// outside a request's authentication.
pub fn add_warning(text: &str) {
    let _ = NOTES.try_with(|notes| {
        let warnings = &mut notes.borrow_mut().warnings;
        if !warnings.iter().any(|w| w == text) {
            warnings.push(text.into());
        }
    });
}

/// Runs `authentication`, collecting what its authenticators add.
pub(crate) async fn with_notes<T>(
    authentication: impl Future<Output = T>,
) -> (T, AuthenticationNotes) {
    NOTES
        .scope(RefCell::default(), async {
            let output = authentication.await;
            (output, NOTES.with(RefCell::take))
        })
        .await
}

/// Joins several errors as upstream's aggregate error prints them.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Result<Option<UserInfo>, AuthenticationError>);

    #[async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(
            &self,
            _: &http::request::Parts,
        ) -> Result<Option<UserInfo>, AuthenticationError> {
            self.0.clone()
        }
    }

    fn parts() -> http::request::Parts {
        http::Request::new(()).into_parts().0
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    #[tokio::test]
    async fn first_recognizer_wins_and_gets_the_authenticated_group() {
        let chain = Authentication::new(
            vec![
                Arc::new(Fixed(Ok(None))),
                Arc::new(Fixed(Ok(Some(user("alice", &["dev"]))))),
            ],
            true,
        );
        let alice = chain.authenticate(&parts()).await.unwrap();
        assert_eq!(alice.groups, ["dev", ALL_AUTHENTICATED]);
    }

    #[tokio::test]
    async fn unrecognized_requests_are_anonymous_unless_credentials_failed() {
        let anonymous = Authentication::new(vec![Arc::new(Fixed(Ok(None)))], true);
        assert_eq!(
            anonymous.authenticate(&parts()).await.unwrap(),
            UserInfo::anonymous()
        );

        let failing = Arc::new(Fixed(Err(AuthenticationError("bad cert".into()))));
        let failed = Authentication::new(vec![failing], true);
        assert_eq!(
            failed.authenticate(&parts()).await.unwrap_err().0,
            "bad cert"
        );

        let closed = Authentication::new(vec![], false);
        assert!(closed.authenticate(&parts()).await.is_err());
    }
}
