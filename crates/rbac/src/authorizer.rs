//! The RBAC authorizer (`--authorization-mode=RBAC`): a request is allowed when a rule of a
//! role bound to its user allows it; otherwise RBAC has no opinion, and says which bindings
//! name roles that do not exist.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_server::authz::{AuthorizationError, NonResourceRule, ResourceRule, RulesInfo};
use kapi_server::{Attributes, Authorizer, Decision, UserInfo};

use super::resolver::{RuleResolver, RuleSource};
use super::rules::decide;

/// Decides requests on the RBAC objects of the server.
pub struct RbacAuthorizer {
    resolver: Arc<RuleResolver>,
}

impl RbacAuthorizer {
    pub fn new(resolver: Arc<RuleResolver>) -> RbacAuthorizer {
        RbacAuthorizer { resolver }
    }
}

#[async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        self.resolver.wait_synced().await;
        let mut allowed_by = None;
        let mut errors = Vec::new();
        self.resolver.visit_rules_for(
            attributes.user,
            attributes.namespace,
            &mut errors,
            |source, rule| {
                if !rule.allows(attributes) {
                    return true;
                }
                let (RuleSource::ClusterRoleBinding(binding) | RuleSource::RoleBinding(binding)) =
                    source;
                allowed_by = Some(binding.describe(attributes.user));
                false
            },
        );
        Ok(decide(allowed_by, &errors))
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo {
        self.resolver.wait_synced().await;
        let (rules, errors) = self.resolver.rules_for(user, namespace);
        let mut info = RulesInfo {
            errors,
            ..RulesInfo::default()
        };
        for rule in rules {
            if !rule.resources.is_empty() {
                info.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups,
                    resources: rule.resources,
                    resource_names: rule.resource_names,
                });
            }
            if !rule.non_resource_urls.is_empty() {
                info.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        info
    }
}
