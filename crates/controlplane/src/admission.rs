//! `--enable-admission-plugins` and `--disable-admission-plugins`: which admission plugins
//! run, always in kube-apiserver's order, starting from its default set.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use kapi_admission::policy::ValidatingAdmissionPolicy;
use kapi_admission::webhook::{MutatingWebhook, ValidatingWebhook};
use kapi_builtin_admission::{
    CertificateAuthority, CertificateSubjectRestriction, DefaultClass, DefaultTolerationSeconds,
    LimitRanger, NamespaceLifecycle, NodeRestriction, PersistentVolumeClaimResize, PodSecurity,
    PodSecurityConfiguration, PodTopologyLabels, Priority, ResourceQuota,
    ResourceQuotaConfiguration, RuntimeClass, ServiceAccount, StorageObjectInUseProtection,
    TaintNodesByCondition,
};
use kapi_rbac::EscalationCheck;
use kapi_server::ApiHandler;
use kapi_server::admission::AdmissionPlugin;
use kapi_server::webhook_client::ServiceResolver;
use serde_json::Value;

use crate::authorization::Authorization;
use crate::builtin_resources::BuiltinResources;
use crate::options::ServeOptions;

/// Every plugin kube-apiserver 1.35 knows, in the order they run (upstream's
/// `AllOrderedPlugins`).
const ORDERED: [&str; 35] = [
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
];

/// The plugins on when no flag says otherwise (upstream's default-on set).
const DEFAULT_ON: [&str; 22] = [
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
];

/// The admission chain of the built-in and apiextensions servers: the enabled plugins kapi
/// implements, in order, then the escalation check of RBAC writes, which is always on (it is
/// part of upstream's RBAC storage, not a plugin).
pub fn chain(
    options: &ServeOptions,
    api: &ApiHandler,
    resources: &BuiltinResources,
    authorization: &Authorization,
    resolver: Arc<dyn ServiceResolver>,
) -> Result<Vec<Arc<dyn AdmissionPlugin>>> {
    let (enable, disable) = (
        &options.enable_admission_plugins,
        &options.disable_admission_plugins,
    );
    let names = enabled(enable, disable)?;
    let mut chain = plugins(
        &names,
        enable,
        available(options, api, resources, authorization, resolver)?,
    )?;
    chain.push(Arc::new(EscalationCheck::new(
        authorization.rules.clone(),
        authorization.authorizer.clone(),
    )));
    Ok(chain)
}

/// The plugins' configurations of `--admission-control-config-file`.
#[derive(Default)]
struct AdmissionConfiguration {
    plugins: HashMap<String, Value>,
}

/// The plugins whose configuration kapi reads.
const CONFIGURABLE: [&str; 2] = ["PodSecurity", "ResourceQuota"];

impl AdmissionConfiguration {
    /// Reads the file (an AdmissionConfiguration; a plugin's `path` is relative to it).
    fn read(options: &ServeOptions) -> Result<AdmissionConfiguration> {
        let Some(file) = &options.admission_control_config_file else {
            return Ok(AdmissionConfiguration::default());
        };
        let context = || format!("--admission-control-config-file {}", file.display());
        let text = std::fs::read_to_string(file).with_context(context)?;
        let config: Value = serde_yaml_ng::from_str(&text).with_context(context)?;
        let api_version = config["apiVersion"].as_str().unwrap_or_default();
        let known = [
            "apiserver.config.k8s.io/v1",
            "apiserver.config.k8s.io/v1alpha1",
            "apiserver.k8s.io/v1alpha1",
        ];
        if !known.contains(&api_version) || config["kind"] != "AdmissionConfiguration" {
            bail!(
                "{}: expected an apiserver.config.k8s.io/v1 AdmissionConfiguration",
                context()
            );
        }
        let mut plugins = HashMap::new();
        for plugin in config["plugins"].as_array().into_iter().flatten() {
            let name = plugin["name"].as_str().unwrap_or_default().to_string();
            let configuration = match plugin["path"].as_str() {
                Some(path) => {
                    let path = file.parent().unwrap_or(Path::new(".")).join(path);
                    let text = std::fs::read_to_string(&path).with_context(|| {
                        format!("{}: plugin {name}: {}", context(), path.display())
                    })?;
                    serde_yaml_ng::from_str(&text).with_context(context)?
                }
                None => plugin["configuration"].clone(),
            };
            if !CONFIGURABLE.contains(&name.as_str()) {
                tracing::warn!(
                    "kapi does not read the configuration of the admission plugin {name}"
                );
            }
            plugins.insert(name, configuration);
        }
        Ok(AdmissionConfiguration { plugins })
    }

    fn plugin(&self, name: &str) -> Option<Value> {
        self.plugins.get(name).cloned()
    }
}

/// The plugins kapi implements, by name.
fn available(
    options: &ServeOptions,
    api: &ApiHandler,
    resources: &BuiltinResources,
    authorization: &Authorization,
    resolver: Arc<dyn ServiceResolver>,
) -> Result<HashMap<&'static str, Arc<dyn AdmissionPlugin>>> {
    let namespaces = resources.namespaces.clone();
    let lifecycle = NamespaceLifecycle::new(namespaces.registry.cacher().clone());
    let authorizer = &authorization.authorizer;
    let mutating = MutatingWebhook::new(
        resources.mutating_webhook_configurations.clone(),
        namespaces.clone(),
        resolver.clone(),
        authorizer.clone(),
        api.downgrade(),
    );
    let validating = ValidatingWebhook::new(
        resources.validating_webhook_configurations.clone(),
        namespaces.clone(),
        resolver,
        authorizer.clone(),
        api.downgrade(),
    );
    let configurations = AdmissionConfiguration::read(options)?;
    let pod_security = match configurations.plugin("PodSecurity") {
        Some(config) => PodSecurityConfiguration::parse(&config)
            .map_err(anyhow::Error::msg)
            .context("--admission-control-config-file: PodSecurity")?,
        None => PodSecurityConfiguration::default(),
    };
    let pod_security = PodSecurity::new(namespaces.clone(), resources.pods.clone(), pod_security);
    let policies = ValidatingAdmissionPolicy::new(
        resources.validating_admission_policies.clone(),
        resources.validating_admission_policy_bindings.clone(),
        namespaces,
        api.downgrade(),
        authorizer.clone(),
    );
    let quota = match configurations.plugin("ResourceQuota") {
        Some(config) => ResourceQuotaConfiguration::parse(&config)
            .map_err(anyhow::Error::msg)
            .context("--admission-control-config-file: ResourceQuota")?,
        None => ResourceQuotaConfiguration::default(),
    };
    let quota = ResourceQuota::new(resources.resource_quotas.clone(), quota);
    let limit_ranger = LimitRanger::new(resources.limit_ranges.clone());
    let priority = Priority::new(resources.priority_classes.clone());
    let storage_classes = resources.storage_classes.clone();
    let pvc_resize = PersistentVolumeClaimResize::new(storage_classes.clone());
    let storage_class = DefaultClass::storage(storage_classes);
    let ingress_class = DefaultClass::ingress(resources.ingress_classes.clone());
    let tolerations = DefaultTolerationSeconds::new(
        options.default_not_ready_toleration_seconds,
        options.default_unreachable_toleration_seconds,
    );
    let all: Vec<Arc<dyn AdmissionPlugin>> = vec![
        Arc::new(lifecycle),
        Arc::new(limit_ranger),
        Arc::new(ServiceAccount::new(resources.service_accounts.clone())),
        Arc::new(priority),
        Arc::new(pvc_resize),
        Arc::new(NodeRestriction::new(
            resources.pods.clone(),
            resources.nodes.clone(),
        )),
        Arc::new(TaintNodesByCondition),
        Arc::new(pod_security),
        Arc::new(RuntimeClass::new(resources.runtime_classes.clone())),
        Arc::new(CertificateAuthority::approval(
            authorization.authorizer.clone(),
        )),
        Arc::new(CertificateAuthority::signing(
            authorization.authorizer.clone(),
        )),
        Arc::new(CertificateSubjectRestriction),
        Arc::new(PodTopologyLabels::new(resources.nodes.clone())),
        Arc::new(storage_class),
        Arc::new(StorageObjectInUseProtection),
        Arc::new(ingress_class),
        Arc::new(tolerations),
        Arc::new(mutating),
        Arc::new(policies),
        Arc::new(validating),
        Arc::new(quota),
    ];
    Ok(all
        .into_iter()
        .map(|plugin| (plugin.name(), plugin))
        .collect())
}

/// The names of the enabled plugins in running order: the default set plus `enable` minus
/// `disable`, with upstream's errors for unknown names and contradictions.
pub fn enabled(enable: &[String], disable: &[String]) -> Result<Vec<&'static str>> {
    for (flag, names) in [
        ("enable-admission-plugins", enable),
        ("disable-admission-plugins", disable),
    ] {
        if let Some(unknown) = names.iter().find(|n| !ORDERED.contains(&n.as_str())) {
            bail!("{flag} plugin {unknown:?} is unknown");
        }
    }
    if let Some(both) = enable.iter().find(|n| disable.contains(n)) {
        bail!("{both:?} can not be both enabled and disabled");
    }
    Ok(ORDERED
        .into_iter()
        .filter(|name| {
            let on = DEFAULT_ON.contains(name) || enable.iter().any(|n| n == name);
            on && !disable.iter().any(|n| n == name)
        })
        .collect())
}

/// The plugins to run: those of `names` kapi implements (`available`), in order. Enabled
/// plugins kapi does not implement are refused when asked for explicitly, and reported once
/// otherwise (they are in kube-apiserver's default set).
pub fn plugins(
    names: &[&'static str],
    enable: &[String],
    mut available: HashMap<&'static str, Arc<dyn AdmissionPlugin>>,
) -> Result<Vec<Arc<dyn AdmissionPlugin>>> {
    let mut chain = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        match available.remove(name) {
            Some(plugin) => chain.push(plugin),
            None if enable.iter().any(|n| n == name) => {
                bail!("admission plugin {name:?} is not implemented by kapi")
            }
            None => missing.push(*name),
        }
    }
    if !missing.is_empty() {
        tracing::warn!(
            "default admission plugins kapi does not implement yet: {}",
            missing.join(", ")
        );
    }
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_follow_upstreams_order() {
        let on = enabled(&[], &[]).unwrap();
        assert_eq!(on.len(), DEFAULT_ON.len());
        assert_eq!(on[0], "NamespaceLifecycle");
        assert_eq!(on.last(), Some(&"ResourceQuota"));
        let custom = enabled(&names(&["AlwaysPullImages"]), &names(&["ResourceQuota"])).unwrap();
        assert!(custom.contains(&"AlwaysPullImages"));
        assert!(!custom.contains(&"ResourceQuota"));
    }

    #[test]
    fn bad_flags_are_refused_as_upstream() {
        let err = enabled(&names(&["Nope"]), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"enable-admission-plugins plugin "Nope" is unknown"#
        );
        let err = enabled(&names(&["LimitRanger"]), &names(&["LimitRanger"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""LimitRanger" can not be both enabled and disabled"#
        );
    }
}
