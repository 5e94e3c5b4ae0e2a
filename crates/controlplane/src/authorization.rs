//! `--authorization-mode` or `--authorization-config`: the authorizers kapi asks, in order,
//! after `system:masters` (always allowed, as kube-apiserver's privileged-groups
//! authorizer), and the RBAC rule resolver the escalation check shares with the RBAC
//! authorizer.

use std::fmt;
use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_rbac::{NodeAuthorizer, NodeResources, RbacAuthorizer, RbacResources, RuleResolver};
use kapi_server::authn::SYSTEM_PRIVILEGED_GROUP;
use kapi_server::authz::{
    AlwaysAllow, AlwaysDeny, FailurePolicy, PrivilegedGroups, UnionAuthorizer, WebhookAuthorizer,
};
use serde_json::Value;

use crate::builtin_resources::BuiltinResources;
use crate::options::ServeOptions;
use kapi_server::Authorizer;

/// One authorization mode, as `--authorization-mode` spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    AlwaysAllow,
    AlwaysDeny,
    Node,
    Rbac,
    Webhook,
}

impl Mode {
    /// The modes kapi implements, in their flag spelling.
    const ALL: [(&'static str, Mode); 5] = [
        ("AlwaysAllow", Mode::AlwaysAllow),
        ("AlwaysDeny", Mode::AlwaysDeny),
        ("Node", Mode::Node),
        ("RBAC", Mode::Rbac),
        ("Webhook", Mode::Webhook),
    ];

    /// Parses one mode; upstream's error for an unknown one.
    pub fn parse(value: &str) -> Result<Mode, String> {
        Mode::ALL
            .iter()
            .find(|(name, _)| *name == value)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| {
                let names: Vec<&str> = Mode::ALL.iter().map(|(name, _)| *name).collect();
                format!(
                    "authorization-mode {value:?} is not a valid mode (supported: {})",
                    names.join(",")
                )
            })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Mode::ALL
            .iter()
            .find(|(_, mode)| mode == self)
            .map_or("", |(name, _)| *name);
        f.write_str(name)
    }
}

/// Refuses a mode listed twice, as upstream does.
pub fn check_modes(modes: &[Mode]) -> Result<()> {
    for (i, mode) in modes.iter().enumerate() {
        if modes[..i].contains(mode) {
            anyhow::bail!("authorization-mode {mode} has mode specified more than once");
        }
    }
    if modes.is_empty() {
        anyhow::bail!("at least one authorization-mode must be passed");
    }
    Ok(())
}

/// The server's authorizers and the RBAC rule resolver. The resolver serves the RBAC
/// authorizer and, whatever the modes, the escalation check of RBAC writes, as upstream's
/// RBAC storage always checks escalation.
pub struct Authorization {
    pub authorizer: Arc<dyn Authorizer>,
    pub rules: Arc<RuleResolver>,
    /// The RBAC collections, for the bootstrap policy hook.
    pub rbac: RbacResources,
}

/// Builds the authorizer chain of `--authorization-mode` (or `--authorization-config`) over
/// the served RBAC objects.
pub fn build(options: &ServeOptions, resources: &BuiltinResources) -> Result<Authorization> {
    let mut authorizers: Vec<Arc<dyn Authorizer>> =
        vec![Arc::new(PrivilegedGroups::new(&[SYSTEM_PRIVILEGED_GROUP]))];
    let rbac = rbac_resources(resources);
    let rules = RuleResolver::start(
        rbac.roles.clone(),
        rbac.cluster_roles.clone(),
        rbac.role_bindings.clone(),
        rbac.cluster_role_bindings.clone(),
    );
    match &options.authorization_config {
        Some(path) => {
            if !options.authorization_mode.is_empty() {
                anyhow::bail!(
                    "--authorization-config can not be specified when --authorization-mode is specified"
                );
            }
            authorizers.extend(configured(path, &rules, resources)?);
        }
        None => {
            let modes = match options.authorization_mode.as_slice() {
                [] => vec![Mode::Rbac],
                modes => modes.to_vec(),
            };
            check_modes(&modes)?;
            for mode in modes {
                let authorizer: Arc<dyn Authorizer> = match mode {
                    Mode::AlwaysAllow => Arc::new(AlwaysAllow),
                    Mode::AlwaysDeny => Arc::new(AlwaysDeny),
                    Mode::Node => Arc::new(node(resources)),
                    Mode::Rbac => Arc::new(RbacAuthorizer::new(rules.clone())),
                    Mode::Webhook => Arc::new(webhook(options)?),
                };
                authorizers.push(authorizer);
            }
        }
    }
    Ok(Authorization {
        authorizer: Arc::new(UnionAuthorizer::new(authorizers)),
        rules,
        rbac,
    })
}

/// The Node authorizer over the served pods, claims and volume attachments.
fn node(resources: &BuiltinResources) -> NodeAuthorizer {
    NodeAuthorizer::new(NodeResources {
        pods: resources.pods.clone(),
        claims: resources.persistent_volume_claims.clone(),
        attachments: resources.volume_attachments.clone(),
    })
}

/// The Webhook authorizer of `--authorization-webhook-config-file`.
fn webhook(options: &ServeOptions) -> Result<WebhookAuthorizer> {
    let path = options
        .authorization_webhook_config_file
        .as_deref()
        .context("authorization-mode Webhook's authorization-webhook-config-file must be set")?;
    Ok(WebhookAuthorizer::from_kubeconfig(
        path,
        options.authorization_webhook_cache_authorized_ttl,
        options.authorization_webhook_cache_unauthorized_ttl,
    )?)
}

/// The authorizers of an AuthorizationConfiguration file, in order.
fn configured(
    path: &std::path::Path,
    rules: &Arc<RuleResolver>,
    resources: &BuiltinResources,
) -> Result<Vec<Arc<dyn Authorizer>>> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let config: Value =
        serde_yaml_ng::from_str(&text).with_context(|| format!("parsing {name}"))?;
    if config["kind"] != "AuthorizationConfiguration" {
        anyhow::bail!("{name}: kind must be AuthorizationConfiguration");
    }
    let entries = config["authorizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if entries.is_empty() {
        anyhow::bail!(
            "{name}: authorizers: Required value: at least one authorization mode must be defined"
        );
    }
    let mut names = Vec::new();
    let mut authorizers: Vec<Arc<dyn Authorizer>> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{name}: authorizers[{i}]");
        let kind = entry["type"].as_str().unwrap_or_default();
        let entry_name = entry["name"].as_str().unwrap_or_default();
        if entry_name.is_empty() || names.contains(&entry_name) {
            anyhow::bail!("{at}.name: a unique name is required");
        }
        names.push(entry_name);
        authorizers.push(match kind {
            "AlwaysAllow" => Arc::new(AlwaysAllow),
            "AlwaysDeny" => Arc::new(AlwaysDeny),
            "RBAC" => Arc::new(RbacAuthorizer::new(rules.clone())),
            "Node" => Arc::new(node(resources)),
            "Webhook" => Arc::new(configured_webhook(&entry["webhook"]).with_context(|| at.clone())?),
            other => anyhow::bail!("{at}.type: {other:?} is not supported by kapi (AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook)"),
        });
    }
    Ok(authorizers)
}

/// A Webhook authorizer of the structured configuration.
fn configured_webhook(webhook: &Value) -> Result<WebhookAuthorizer> {
    let duration = |field: &str, default: &str| -> Result<std::time::Duration> {
        let text = webhook[field].as_str().unwrap_or(default);
        kapi_apimachinery::goduration::parse(text).with_context(|| format!("webhook.{field}"))
    };
    let connection = &webhook["connectionInfo"];
    if connection["type"] != "KubeConfigFile" {
        anyhow::bail!("webhook.connectionInfo.type: only KubeConfigFile is supported by kapi");
    }
    let kubeconfig = connection["kubeConfigFile"]
        .as_str()
        .context("webhook.connectionInfo.kubeConfigFile is required")?;
    let cached = |field: &str| webhook[field].as_bool() != Some(false);
    let authorized_ttl = if cached("cacheAuthorizedRequests") {
        duration("authorizedTTL", "5m")?
    } else {
        std::time::Duration::ZERO
    };
    let unauthorized_ttl = if cached("cacheUnauthorizedRequests") {
        duration("unauthorizedTTL", "30s")?
    } else {
        std::time::Duration::ZERO
    };
    let failure_policy = match webhook["failurePolicy"].as_str() {
        Some("NoOpinion") => FailurePolicy::NoOpinion,
        Some("Deny") => FailurePolicy::Deny,
        other => anyhow::bail!("webhook.failurePolicy: {other:?} must be NoOpinion or Deny"),
    };
    let conditions: Vec<String> = webhook["matchConditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["expression"].as_str().map(String::from))
        .collect();
    let authorizer = WebhookAuthorizer::from_kubeconfig(
        std::path::Path::new(kubeconfig),
        authorized_ttl,
        unauthorized_ttl,
    )?;
    authorizer
        .with_policy(duration("timeout", "30s")?, failure_policy, &conditions)
        .map_err(anyhow::Error::msg)
}

/// The served rbac.authorization.k8s.io/v1 collections.
fn rbac_resources(resources: &BuiltinResources) -> RbacResources {
    RbacResources {
        roles: resources.roles.clone(),
        cluster_roles: resources.cluster_roles.clone(),
        role_bindings: resources.role_bindings.clone(),
        cluster_role_bindings: resources.cluster_role_bindings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_upstream_spells_them() {
        assert_eq!(Mode::parse("RBAC"), Ok(Mode::Rbac));
        assert!(
            Mode::parse("rbac")
                .unwrap_err()
                .contains("is not a valid mode")
        );
        assert!(check_modes(&[Mode::Rbac, Mode::Rbac]).is_err());
        assert!(check_modes(&[]).is_err());
        assert!(check_modes(&[Mode::AlwaysAllow, Mode::Rbac]).is_ok());
        assert_eq!(Mode::parse("AlwaysDeny"), Ok(Mode::AlwaysDeny));
    }
}
