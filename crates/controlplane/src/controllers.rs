//! kube-controller-manager's controllers that kapi runs in process, switched by
//! `--controllers` as kube-controller-manager's flag switches them, each started by a
//! post-start hook of the kube-apiserver of the chain.
//!
//! Adding one: its name to [`CONTROLLERS`], and a hook in [`post_start_hooks`] that starts
//! it (from kapi-builtin) with the resources it follows from [`BuiltinResources`].

use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_builtin::token::ServiceAccountTokens;
use kapi_controllers::{
    GARBAGE_COLLECTOR_ACCOUNT, GARBAGE_COLLECTOR_CONTROLLER, LegacyTokens, NAMESPACE_CONTROLLER,
    NamespaceObject, ProtectedStorage,
};
use kapi_server::PostStartHooks;
use kapi_server::endpoints::ApiHandler;
use kapi_server::loopback::{Loopback, LoopbackClient};

use crate::builtin_resources::BuiltinResources;
use crate::pki::PkiFiles;

/// The controller keeping each namespace's `default` ServiceAccount.
const SERVICE_ACCOUNT_CONTROLLER: &str = "serviceaccount-controller";
/// The controller filling service-account-token Secrets with legacy tokens.
const TOKEN_CONTROLLER: &str = "serviceaccount-token-controller";
/// The controller keeping each namespace's `kube-root-ca.crt`.
const ROOT_CA_PUBLISHER: &str = "root-ca-certificate-publisher-controller";
/// The controller releasing deleted claims no pod uses.
const PVC_PROTECTION_CONTROLLER: &str = "persistentvolumeclaim-protection-controller";
/// The controller releasing deleted volumes not bound.
const PV_PROTECTION_CONTROLLER: &str = "persistentvolume-protection-controller";
/// The controller reporting ValidatingAdmissionPolicies' type checking.
const VAP_STATUS_CONTROLLER: &str = "validatingadmissionpolicy-status-controller";

/// The controllers `--controllers` switches, by kube-controller-manager's names.
const CONTROLLERS: [&str; 8] = [
    GARBAGE_COLLECTOR_CONTROLLER,
    NAMESPACE_CONTROLLER,
    SERVICE_ACCOUNT_CONTROLLER,
    TOKEN_CONTROLLER,
    ROOT_CA_PUBLISHER,
    PVC_PROTECTION_CONTROLLER,
    PV_PROTECTION_CONTROLLER,
    VAP_STATUS_CONTROLLER,
];

/// The post-start hooks starting the controllers `controllers` (the `--controllers` flag)
/// enables, plus the resource quota controller, which the ResourceQuota admission plugin
/// needs and kapi always runs.
pub(crate) fn post_start_hooks(
    controllers: &[String],
    resources: &BuiltinResources,
    api: &ApiHandler,
    pki: &PkiFiles,
    tokens: Arc<ServiceAccountTokens>,
) -> Result<PostStartHooks> {
    let enabled = |name: &str| controller_enabled(controllers, name);
    let ca_pem = std::fs::read_to_string(&pki.ca_cert)
        .with_context(|| format!("reading {}", pki.ca_cert.display()))?;
    let mut hooks = PostStartHooks::default();
    let (quotas, weak_api) = (resources.resource_quotas.clone(), api.downgrade());
    hooks.add(
        "start-resource-quota-controller",
        move |context| async move {
            kapi_builtin_admission::start_quota_controller(quotas, weak_api, context.stopping);
            Ok(())
        },
    )?;
    let namespaces = resources.namespaces.clone();
    let objects = namespace_objects(resources, &ca_pem, controllers)?;
    hooks.add(
        "start-serviceaccount-controllers",
        move |context| async move {
            kapi_controllers::start_namespace_objects(namespaces, objects, context.stopping);
            Ok(())
        },
    )?;
    let protected = ProtectedStorage {
        claims: resources.persistent_volume_claims.clone(),
        volumes: resources.persistent_volumes.clone(),
        pods: resources.pods.clone(),
        release_claims: enabled(PVC_PROTECTION_CONTROLLER)?,
        release_volumes: enabled(PV_PROTECTION_CONTROLLER)?,
    };
    hooks.add(
        "start-storage-protection-controllers",
        move |context| async move {
            kapi_controllers::start_protection_controllers(protected, context.stopping);
            Ok(())
        },
    )?;
    if enabled(NAMESPACE_CONTROLLER)? {
        let namespaces = resources.namespaces.clone();
        hooks.add("start-namespace-controller", move |context| async move {
            let client = controller_client(&context.loopback, NAMESPACE_CONTROLLER);
            kapi_controllers::start_namespace_controller(namespaces, client, context.stopping);
            Ok(())
        })?;
    }
    if enabled(GARBAGE_COLLECTOR_CONTROLLER)? {
        let api_services = resources.api_services.clone();
        hooks.add("start-garbage-collector", move |context| async move {
            let client = controller_client(&context.loopback, GARBAGE_COLLECTOR_ACCOUNT);
            kapi_controllers::start_garbage_collector(client, api_services, context.stopping);
            Ok(())
        })?;
    }
    if enabled(VAP_STATUS_CONTROLLER)? {
        let policies = resources.validating_admission_policies.clone();
        let weak_api = api.downgrade();
        hooks.add(
            "start-validating-admission-policy-status-controller",
            move |context| async move {
                tokio::spawn(kapi_admission::typecheck::run_status_controller(
                    policies,
                    weak_api,
                    context.stopping,
                ));
                Ok(())
            },
        )?;
    }
    if enabled(TOKEN_CONTROLLER)? {
        let legacy = LegacyTokens {
            tokens,
            secrets: resources.secrets.clone(),
            accounts: resources.service_accounts.clone(),
            ca_pem,
        };
        hooks.add(
            "start-serviceaccount-token-controller",
            move |context| async move {
                kapi_controllers::start_token_controller(legacy, context.stopping);
                Ok(())
            },
        )?;
    }
    Ok(hooks)
}

/// A loopback client of a controller as kube-controller-manager's with
/// `--use-service-account-credentials`: the user of its service account `account` in
/// kube-system (which the bootstrap RBAC policy binds to `system:controller:<account>`), and
/// its user agent.
fn controller_client(loopback: &Loopback, account: &str) -> LoopbackClient {
    let user = kapi_builtin::token::service_account_user_info("kube-system", account);
    let version = kapi_server::version::VersionInfo::current();
    // client-go's default: the commit's first 7 characters, or "unknown".
    let commit: String = version.git_commit.chars().take(7).collect();
    let commit = if commit.is_empty() {
        "unknown".into()
    } else {
        commit
    };
    let user_agent = format!(
        "kube-controller-manager/{} ({}) kubernetes/{commit}/{}",
        version.git_version, version.platform, user.name
    );
    loopback.client(user, &user_agent)
}

/// What kube-controller-manager keeps in every namespace and kapi keeps itself: the
/// `default` ServiceAccount (which the ServiceAccount admission plugin needs for every pod)
/// and the `kube-root-ca.crt` ConfigMap with the CA of the data directory's PKI.
fn namespace_objects(
    resources: &BuiltinResources,
    ca_pem: &str,
    controllers: &[String],
) -> Result<Vec<NamespaceObject>> {
    let mut objects = Vec::new();
    if controller_enabled(controllers, SERVICE_ACCOUNT_CONTROLLER)? {
        let accounts = resources.service_accounts.clone();
        objects.push(NamespaceObject::default_service_account(accounts));
    }
    if controller_enabled(controllers, ROOT_CA_PUBLISHER)? {
        let config_maps = resources.config_maps.clone();
        objects.push(NamespaceObject::root_ca(config_maps, ca_pem.to_string()));
    }
    Ok(objects)
}

/// Whether `--controllers` enables `name`, as kube-controller-manager reads the flag: `-name`
/// disables, `name` enables, otherwise `*` enables; an unknown name is an error.
fn controller_enabled(controllers: &[String], name: &str) -> Result<bool> {
    for given in controllers {
        let bare = given.trim_start_matches('-');
        if given != "*" && !CONTROLLERS.contains(&bare) {
            anyhow::bail!("--controllers: unknown controller {given:?}; kapi runs {CONTROLLERS:?}");
        }
    }
    if controllers
        .iter()
        .any(|c| c.strip_prefix('-') == Some(name))
    {
        return Ok(false);
    }
    Ok(controllers.iter().any(|c| c == name || c == "*"))
}

#[cfg(test)]
mod controller_flag_tests {
    use super::*;

    #[test]
    fn controllers_are_read_as_kube_controller_manager_reads_them() {
        let flag = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(controller_enabled(&flag(&["*"]), ROOT_CA_PUBLISHER).unwrap());
        let without = flag(&["*", "-root-ca-certificate-publisher-controller"]);
        assert!(!controller_enabled(&without, ROOT_CA_PUBLISHER).unwrap());
        assert!(controller_enabled(&without, SERVICE_ACCOUNT_CONTROLLER).unwrap());
        let only = flag(&["serviceaccount-controller"]);
        assert!(!controller_enabled(&only, ROOT_CA_PUBLISHER).unwrap());
        assert!(controller_enabled(&flag(&["nope"]), ROOT_CA_PUBLISHER).is_err());
    }
}
