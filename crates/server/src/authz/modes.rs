//! The trivial authorization modes: `AlwaysAllow` and `AlwaysDeny` (upstream's
//! authorizerfactory), and the always-allowed paths of delegating servers (upstream's
//! authorization/path).

use async_trait::async_trait;

use super::{Attributes, AuthorizationError, Authorizer, Decision, RulesInfo};
use crate::authn::UserInfo;

/// Allows every request; grants everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysAllow;

#[async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        Ok(Decision::Allow(String::new()))
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
        RulesInfo::everything()
    }
}

/// Has no opinion on any request, with upstream's reason, so requests no earlier
/// authorizer allowed are refused; grants nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysDeny;

#[async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        Ok(Decision::NoOpinion("Everything is forbidden.".into()))
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
        RulesInfo::default()
    }
}

/// Allows requests for the given non-resource paths (a trailing `*` matches any path with
/// that prefix), as a delegating server always allows its health checks; no opinion on
/// others.
#[derive(Clone, Debug, Default)]
pub struct AlwaysAllowPaths(pub Vec<String>);

#[async_trait]
impl Authorizer for AlwaysAllowPaths {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        let allowed = !attributes.resource_request
            && self.0.iter().any(|path| match path.strip_suffix('*') {
                Some(prefix) => attributes.path.starts_with(prefix),
                None => attributes.path == path,
            });
        Ok(match allowed {
            true => Decision::Allow(String::new()),
            false => Decision::NoOpinion(String::new()),
        })
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
        RulesInfo::default()
    }
}
