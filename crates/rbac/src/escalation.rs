//! Escalation prevention on RBAC writes (upstream's policy-based role and binding storage):
//! nobody grants, through a role or a binding, permissions they do not hold themselves,
//! unless they are in `system:masters`, may `escalate` (roles) or may `bind` the role
//! (bindings). Only changes of fields the garbage collector does not own are checked.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_apimachinery::schema::GroupResource;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::authn::SYSTEM_PRIVILEGED_GROUP;
use kapi_server::{Authorizer, Decision, UserInfo};
use serde_json::Value;

use super::resolver::RuleResolver;
use super::rules::{Binding, PolicyRule, compact, go_quoted_list, uncovered};

/// The RBAC group.
const GROUP: &str = "rbac.authorization.k8s.io";

/// The escalation check, run in the mutating phase of RBAC writes, before they are
/// validated (where upstream's RBAC storage runs it).
pub struct EscalationCheck {
    resolver: Arc<RuleResolver>,
    authorizer: Arc<dyn Authorizer>,
}

impl EscalationCheck {
    /// The check resolving the writer's rules with `resolver` and asking `authorizer` for
    /// the `escalate` and `bind` verbs.
    pub fn new(resolver: Arc<RuleResolver>, authorizer: Arc<dyn Authorizer>) -> EscalationCheck {
        EscalationCheck {
            resolver,
            authorizer,
        }
    }

    /// Whether the authorizer allows `verb` on the RBAC `resource` named `name`.
    async fn allowed(
        &self,
        user: &UserInfo,
        verb: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        let attributes = kapi_server::Attributes {
            user,
            verb,
            namespace,
            api_group: GROUP,
            api_version: "*",
            resource,
            subresource: "",
            name,
            resource_request: true,
            path: "",
            field_selector: "",
            label_selector: "",
        };
        matches!(
            self.authorizer.authorize(&attributes).await,
            Ok(Decision::Allow(_))
        )
    }

    /// Refuses `rules` the writer does not hold in `namespace`, with upstream's message.
    fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), String> {
        let (owned, errors) = self.resolver.rules_for(user, namespace);
        let missing = uncovered(&owned, rules);
        if missing.is_empty() {
            return Ok(());
        }
        let mut described: Vec<String> = compact(missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        described.sort();
        described.dedup();
        let mut message = format!(
            "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            kapi_apimachinery::quote(&user.name),
            go_quoted_list(&user.groups),
            described.join("\n")
        );
        if !errors.is_empty() {
            message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(message)
    }

    /// The check of a Role or ClusterRole write.
    async fn check_role(
        &self,
        attributes: &Attributes<'_>,
        role: &Value,
        old: Option<&Value>,
    ) -> Result<(), String> {
        let resource = &attributes.definition.plural;
        let user = attributes.user;
        if self
            .allowed(
                user,
                "escalate",
                resource,
                attributes.namespace,
                attributes.name,
            )
            .await
        {
            return Ok(());
        }
        self.confirm_no_escalation(user, attributes.namespace, &PolicyRule::of_role(role))?;
        let aggregates = |role: &Value| role.get("aggregationRule").is_some_and(|r| !r.is_null());
        if resource == "clusterroles" && (aggregates(role) || old.is_some_and(aggregates)) {
            self.confirm_no_escalation(user, attributes.namespace, &full_authority())
                .map_err(|_| {
                    "must have cluster-admin privileges to use the aggregationRule".to_string()
                })?;
        }
        Ok(())
    }

    /// The check of a RoleBinding or ClusterRoleBinding write.
    async fn check_binding(
        &self,
        attributes: &Attributes<'_>,
        binding: &Value,
    ) -> Result<(), ApiError> {
        let parsed = Binding::from_value(binding);
        let role_resource = match parsed.role_ref.kind.as_str() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            // Validation refuses other kinds.
            _ => return Ok(()),
        };
        let namespace = attributes.namespace;
        if self
            .allowed(
                attributes.user,
                "bind",
                role_resource,
                namespace,
                &parsed.role_ref.name,
            )
            .await
        {
            return Ok(());
        }
        let Some(rules) = self
            .resolver
            .role_reference_rules(&parsed.role_ref, namespace)
        else {
            let resource = GroupResource::new(GROUP, role_resource);
            return Err(ApiError::not_found(&resource, &parsed.role_ref.name));
        };
        self.confirm_no_escalation(attributes.user, namespace, &rules)
            .map_err(|message| forbidden(attributes, &message))
    }
}

/// `*` on everything: what a writer of an aggregated ClusterRole must hold.
fn full_authority() -> Vec<PolicyRule> {
    let all = || vec!["*".to_string()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// Whether an update changes only what the garbage collector writes (owner references and
/// finalizers), which upstream lets through unchecked.
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let strip = |object: &Value| {
        let mut object = object.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
            ] {
                meta.remove(field);
            }
        }
        object
    };
    strip(new) == strip(old)
}

fn forbidden(attributes: &Attributes<'_>, message: &str) -> ApiError {
    ApiError::forbidden(
        &attributes.definition.group_resource(),
        attributes.name,
        message,
    )
}

#[async_trait]
impl AdmissionPlugin for EscalationCheck {
    fn name(&self) -> &'static str {
        "RBACEscalationCheck"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        let Some(object) = object else {
            return Ok(());
        };
        if definition.group_version.group != GROUP
            || !attributes.subresource.is_empty()
            || !matches!(attributes.operation, Operation::Create | Operation::Update)
            || attributes.user.in_group(SYSTEM_PRIVILEGED_GROUP)
            || old.is_some_and(|old| only_gc_fields_change(object, old))
        {
            return Ok(());
        }
        match &*definition.plural {
            "roles" | "clusterroles" => self
                .check_role(attributes, object, old)
                .await
                .map_err(|message| forbidden(attributes, &message)),
            "rolebindings" | "clusterrolebindings" => self.check_binding(attributes, object).await,
            _ => Ok(()),
        }
    }
}
