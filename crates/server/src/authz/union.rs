//! Several authorizers in order (upstream's union authorizer and its privileged-groups
//! authorizer): the first that allows or denies decides; when none has an opinion the
//! request is refused with every reason they gave.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Attributes, AuthorizationError, Authorizer, Decision, RulesInfo};
use crate::authn::UserInfo;

/// Tries its authorizers in order.
pub struct UnionAuthorizer {
    authorizers: Vec<Arc<dyn Authorizer>>,
}

impl UnionAuthorizer {
    pub fn new(authorizers: Vec<Arc<dyn Authorizer>>) -> UnionAuthorizer {
        UnionAuthorizer { authorizers }
    }
}

#[async_trait]
impl Authorizer for UnionAuthorizer {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for authorizer in &self.authorizers {
            match authorizer.authorize(attributes).await {
                Ok(Decision::NoOpinion(reason)) => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
                Ok(decided) => return Ok(decided),
                Err(err) => errors.push(err.0),
            }
        }
        if !errors.is_empty() {
            return Err(AuthorizationError(aggregate(&errors)));
        }
        Ok(Decision::NoOpinion(reasons.join("\n")))
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo {
        let mut all = RulesInfo::default();
        for authorizer in &self.authorizers {
            let rules = authorizer.rules_for(user, namespace).await;
            all.resource_rules.extend(rules.resource_rules);
            all.non_resource_rules.extend(rules.non_resource_rules);
            all.incomplete |= rules.incomplete;
            all.errors.extend(rules.errors);
        }
        all
    }
}

/// Errors joined as Go's error aggregate prints them.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Allows every request of a user in one of its groups (`system:masters`), before any other
/// authorizer is asked.
pub struct PrivilegedGroups {
    groups: Vec<String>,
}

impl PrivilegedGroups {
    pub fn new(groups: &[&str]) -> PrivilegedGroups {
        PrivilegedGroups {
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }
}

#[async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        let privileged = self.groups.iter().any(|g| attributes.user.in_group(g));
        Ok(if privileged {
            Decision::Allow(String::new())
        } else {
            Decision::NoOpinion(String::new())
        })
    }

    async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesInfo {
        RulesInfo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_apimachinery::request_info::RequestInfoFactory;

    struct Fixed(Result<Decision, AuthorizationError>);

    #[async_trait]
    impl Authorizer for Fixed {
        async fn authorize(&self, _: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
            self.0.clone()
        }

        async fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
            RulesInfo::unknown("fixed")
        }
    }

    async fn decide(
        authorizers: Vec<Arc<dyn Authorizer>>,
        groups: &[&str],
    ) -> Result<Decision, AuthorizationError> {
        let user = UserInfo {
            name: "u".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        let info = RequestInfoFactory::default()
            .resolve("GET", "/api/v1/pods", None)
            .unwrap();
        UnionAuthorizer::new(authorizers)
            .authorize(&Attributes::of_request(&user, &info))
            .await
    }

    #[tokio::test]
    async fn the_first_opinion_decides() {
        let none = |reason: &str| -> Arc<dyn Authorizer> {
            Arc::new(Fixed(Ok(Decision::NoOpinion(reason.into()))))
        };
        let allow: Arc<dyn Authorizer> = Arc::new(Fixed(Ok(Decision::Allow(String::new()))));
        let deny: Arc<dyn Authorizer> = Arc::new(Fixed(Ok(Decision::Deny("no".into()))));
        let failed: Arc<dyn Authorizer> =
            Arc::new(Fixed(Err(AuthorizationError("webhook down".into()))));
        assert_eq!(
            decide(vec![none(""), allow.clone()], &[]).await,
            Ok(Decision::Allow(String::new()))
        );
        assert_eq!(
            decide(vec![deny, allow.clone()], &[]).await,
            Ok(Decision::Deny("no".into()))
        );
        assert_eq!(
            decide(vec![none("a"), none(""), none("b")], &[]).await,
            Ok(Decision::NoOpinion("a\nb".into()))
        );
        assert_eq!(
            decide(vec![failed.clone(), allow], &[]).await,
            Ok(Decision::Allow(String::new()))
        );
        assert_eq!(
            decide(vec![failed, none("")], &[]).await,
            Err(AuthorizationError("webhook down".into()))
        );
        let masters: Arc<dyn Authorizer> = Arc::new(PrivilegedGroups::new(&["system:masters"]));
        assert_eq!(
            decide(vec![masters.clone(), none("")], &["system:masters"]).await,
            Ok(Decision::Allow(String::new()))
        );
        assert_eq!(
            decide(vec![masters, none("")], &["devs"]).await,
            Ok(Decision::NoOpinion(String::new()))
        );
    }
}
