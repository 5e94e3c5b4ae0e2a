//! The trivial authorization modes: `AlwaysAllow` and `AlwaysDeny` (upstream's
//! authorizerfactory).

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
