//! kube-controller-manager's controllers that kapi runs in process, switched by
//! `--controllers` as kube-controller-manager's flag switches them. As kube-controller-
//! manager's, they run only while this replica holds kube-system's `kube-controller-manager`
//! Lease (`--leader-elect`, on by default): one post-start hook of the kube-apiserver of the
//! chain starts the election, and each time the replica becomes the leader it starts every
//! enabled controller with a token that is cancelled when leadership is lost.
//!
//! Adding one: its name to [`CONTROLLERS`], and a [`Starter`] in [`starters`] that starts it
//! with the resources it follows from [`BuiltinResources`].

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_builtin::token::ServiceAccountTokens;
use kapi_controllers::{
    BOOTSTRAP_SIGNER_CONTROLLER, CERTIFICATE_CONTROLLER_ACCOUNT, CSR_APPROVING_CONTROLLER,
    CSR_CLEANER_CONTROLLER, CSR_SIGNING_CONTROLLER, CsrSigning, ENDPOINTS_CONTROLLER,
    ENDPOINTSLICE_CONTROLLER, ENDPOINTSLICE_MIRRORING_CONTROLLER, EndpointsSources,
    GARBAGE_COLLECTOR_ACCOUNT, GARBAGE_COLLECTOR_CONTROLLER, KUBE_APISERVER_CLIENT, KUBELET_CLIENT,
    KUBELET_SERVING, LEGACY_TOKEN_CLEANER_CONTROLLER, LEGACY_UNKNOWN, LeaderElection,
    LegacyTokenCleaner, LegacyTokens, NAMESPACE_CONTROLLER, NamespaceObject, POD_GC_CONTROLLER,
    PodGc, ProtectedStorage, SigningCa, TOKEN_CLEANER_CONTROLLER,
};
use kapi_server::endpoints::{ApiHandler, Served};
use kapi_server::loopback::{Loopback, LoopbackClient};
use kapi_server::{PostStartHooks, UserInfo};
use tokio_util::sync::CancellationToken;

use crate::builtin_resources::BuiltinResources;
use crate::options::ServeOptions;
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
/// How long the controllers wait for the built-in resources' caches to fill.
const CACHE_SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// The file in the data directory naming this replica in the controllers' election.
const IDENTITY_FILE: &str = "controller-manager-identity";

/// The controllers `--controllers` switches, by kube-controller-manager's names.
const CONTROLLERS: [&str; 18] = [
    BOOTSTRAP_SIGNER_CONTROLLER,
    CSR_APPROVING_CONTROLLER,
    CSR_CLEANER_CONTROLLER,
    CSR_SIGNING_CONTROLLER,
    ENDPOINTS_CONTROLLER,
    ENDPOINTSLICE_CONTROLLER,
    ENDPOINTSLICE_MIRRORING_CONTROLLER,
    GARBAGE_COLLECTOR_CONTROLLER,
    LEGACY_TOKEN_CLEANER_CONTROLLER,
    NAMESPACE_CONTROLLER,
    POD_GC_CONTROLLER,
    SERVICE_ACCOUNT_CONTROLLER,
    TOKEN_CLEANER_CONTROLLER,
    TOKEN_CONTROLLER,
    ROOT_CA_PUBLISHER,
    PVC_PROTECTION_CONTROLLER,
    PV_PROTECTION_CONTROLLER,
    VAP_STATUS_CONTROLLER,
];

/// The controllers `*` leaves off, as kube-controller-manager's: they must be named.
const DISABLED_BY_DEFAULT: [&str; 2] = [BOOTSTRAP_SIGNER_CONTROLLER, TOKEN_CLEANER_CONTROLLER];

/// The name of the hook starting the controllers (its readiness check is `poststarthook/`
/// and the name).
const CONTROLLERS_HOOK: &str = "start-kube-controller-manager-controllers";

/// Waits until every cache has listed its collection, as kube-controller-manager waits for
/// its informers: no controller acts on a collection not listed yet (an empty Services
/// cache would make every Endpoints look left over). A cache that takes long is logged and
/// waited for again. False when the server stops first.
async fn wait_for_caches(caches: &[Served], stopping: &CancellationToken) -> bool {
    for served in caches {
        loop {
            let synced = tokio::select! {
                () = stopping.cancelled() => return false,
                synced = served.registry.cacher().wait_for(1, CACHE_SYNC_TIMEOUT) => synced,
            };
            match synced {
                Ok(()) => break,
                Err(err) => tracing::warn!(
                    resource = %served.definition.plural,
                    "the controllers wait for a cache that has not listed yet: {err}"
                ),
            }
        }
    }
    true
}

/// Waits until the server is ready (but for the controllers' own hook), as
/// kube-controller-manager waits for a healthy server before it campaigns: until then its
/// RBAC roles and kube-system may be missing, and a failed first attempt would hold the
/// controllers back a whole retry period. Polled, as kube-controller-manager polls, backing
/// off to once a second.
async fn wait_for_ready(loopback: &Loopback, stopping: &CancellationToken) {
    let user = UserInfo {
        name: "system:kube-controller-manager".into(),
        ..UserInfo::default()
    };
    let client = loopback.client(user, &user_agent("wait-for-ready"));
    let path = format!("/readyz?exclude=poststarthook/{CONTROLLERS_HOOK}");
    // Soon after a start the answer changes within milliseconds; later, once a second.
    let mut interval = std::time::Duration::from_millis(50);
    while !stopping.is_cancelled() {
        let request = http::Request::get(&path).body(kapi_server::body::empty());
        let Ok(request) = request else { return };
        let ready = client.send(request).await;
        if ready.is_ok_and(|response| response.status() == http::StatusCode::OK) {
            return;
        }
        tokio::select! {
            () = stopping.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        interval = (interval * 2).min(std::time::Duration::from_secs(1));
    }
}

/// Starts one controller, its requests through the loopback, until the token is cancelled.
type Starter = Box<dyn Fn(&Loopback, CancellationToken) + Send + Sync>;

/// The post-start hook running the controllers `--controllers` enables (plus the resource
/// quota controller, which the ResourceQuota admission plugin needs and kapi always runs),
/// under leader election unless `--leader-elect=false`.
pub(crate) fn post_start_hooks(
    options: &ServeOptions,
    resources: &BuiltinResources,
    api: &ApiHandler,
    pki: &PkiFiles,
    tokens: Arc<ServiceAccountTokens>,
) -> Result<PostStartHooks> {
    let starters = starters(options, resources, api, pki, tokens)?;
    let election = match options.leader_elect {
        true => Some((
            LeaderElection {
                lease_duration: options.leader_elect_lease_duration,
                renew_deadline: options.leader_elect_renew_deadline,
                retry_period: options.leader_elect_retry_period,
            },
            leader_identity(&options.data_dir)?,
        )),
        false => None,
    };
    let caches = resources.all();
    let mut hooks = PostStartHooks::default();
    hooks.add(CONTROLLERS_HOOK, move |context| async move {
        // The controllers start on their own once the server is ready, as a separate
        // kube-controller-manager would: the server's readiness does not wait for them,
        // and a collection that cannot be listed (a value no key decrypts) holds back the
        // controllers, not the server. In the server's tasks: a shutdown waits for the
        // lease's release, which needs the storage still open.
        let tasks = context.tasks.clone();
        tasks.spawn(async move {
            if !wait_for_caches(&caches, &context.stopping).await {
                return;
            }
            wait_for_ready(&context.loopback, &context.stopping).await;
            let loopback = context.loopback.clone();
            let start_all = move |leading: CancellationToken| {
                for start in &starters {
                    start(&loopback, leading.clone());
                }
            };
            match election {
                Some((settings, identity)) => {
                    let user = UserInfo {
                        name: "system:kube-controller-manager".into(),
                        ..UserInfo::default()
                    };
                    let client = context
                        .loopback
                        .client(user, &user_agent("leader-election"));
                    kapi_controllers::run_leader_elected(
                        client,
                        settings,
                        identity,
                        context.stopping,
                        start_all,
                    )
                    .await;
                }
                None => start_all(context.stopping),
            }
        });
        Ok(())
    })?;
    Ok(hooks)
}

/// This replica's identity in the election: the host name and a uuid kept in the data
/// directory, so that a replica restarted after a crash recognizes its own lease rather
/// than waiting for it to expire.
fn leader_identity(data_dir: &Path) -> Result<String> {
    let path = data_dir.join(IDENTITY_FILE);
    let uid = match std::fs::read_to_string(&path) {
        Ok(uid) if !uid.trim().is_empty() => uid.trim().to_string(),
        _ => {
            let uid = kapi_apimachinery::meta::new_uid();
            std::fs::write(&path, &uid).with_context(|| format!("writing {}", path.display()))?;
            uid
        }
    };
    let host = gethostname::gethostname().to_string_lossy().to_string();
    Ok(format!("{host}_{uid}"))
}

/// A starter for each enabled controller.
fn starters(
    options: &ServeOptions,
    resources: &BuiltinResources,
    api: &ApiHandler,
    pki: &PkiFiles,
    tokens: Arc<ServiceAccountTokens>,
) -> Result<Vec<Starter>> {
    let controllers = &options.controllers;
    let enabled = |name: &str| controller_enabled(controllers, name);
    let ca_pem = std::fs::read_to_string(&pki.ca_cert)
        .with_context(|| format!("reading {}", pki.ca_cert.display()))?;
    let mut starters: Vec<Starter> = Vec::new();
    let (quotas, weak_api) = (resources.resource_quotas.clone(), api.downgrade());
    starters.push(Box::new(move |_, stop| {
        kapi_builtin_admission::start_quota_controller(quotas.clone(), weak_api.clone(), stop);
    }));
    let namespaces = resources.namespaces.clone();
    let objects = namespace_objects(resources, &ca_pem, controllers)?;
    starters.push(Box::new(move |_, stop| {
        kapi_controllers::start_namespace_objects(namespaces.clone(), objects.clone(), stop);
    }));
    let protected = ProtectedStorage {
        claims: resources.persistent_volume_claims.clone(),
        volumes: resources.persistent_volumes.clone(),
        pods: resources.pods.clone(),
        release_claims: enabled(PVC_PROTECTION_CONTROLLER)?,
        release_volumes: enabled(PV_PROTECTION_CONTROLLER)?,
    };
    starters.push(Box::new(move |_, stop| {
        kapi_controllers::start_protection_controllers(protected.clone(), stop);
    }));
    if enabled(NAMESPACE_CONTROLLER)? {
        let namespaces = resources.namespaces.clone();
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, NAMESPACE_CONTROLLER);
            kapi_controllers::start_namespace_controller(namespaces.clone(), client, stop);
        }));
    }
    if enabled(GARBAGE_COLLECTOR_CONTROLLER)? {
        let api_services = resources.api_services.clone();
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, GARBAGE_COLLECTOR_ACCOUNT);
            kapi_controllers::start_garbage_collector(client, api_services.clone(), stop);
        }));
    }
    let csrs = &resources.certificate_signing_requests;
    if enabled(CSR_SIGNING_CONTROLLER)? {
        let (csrs, signing) = (csrs.clone(), csr_signing(options, pki)?);
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, CERTIFICATE_CONTROLLER_ACCOUNT);
            kapi_controllers::start_csr_signing(csrs.clone(), client, signing.clone(), stop);
        }));
    }
    if enabled(CSR_APPROVING_CONTROLLER)? {
        let csrs = csrs.clone();
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, CERTIFICATE_CONTROLLER_ACCOUNT);
            kapi_controllers::start_csr_approving(csrs.clone(), client, stop);
        }));
    }
    if enabled(CSR_CLEANER_CONTROLLER)? {
        let csrs = csrs.clone();
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, CERTIFICATE_CONTROLLER_ACCOUNT);
            kapi_controllers::start_csr_cleaner(csrs.clone(), client, stop);
        }));
    }
    let sources = EndpointsSources {
        services: resources.services.clone(),
        pods: resources.pods.clone(),
        nodes: resources.nodes.clone(),
        endpoints: resources.endpoints.clone(),
        endpoint_slices: resources.endpoint_slices.clone(),
    };
    type Start = fn(EndpointsSources, LoopbackClient, CancellationToken);
    let endpoint_controllers: [(&str, &'static str, Start); 3] = [
        (
            ENDPOINTS_CONTROLLER,
            "endpoint-controller",
            kapi_controllers::start_endpoints_controller,
        ),
        (
            ENDPOINTSLICE_CONTROLLER,
            "endpointslice-controller",
            kapi_controllers::start_endpointslice_controller,
        ),
        (
            ENDPOINTSLICE_MIRRORING_CONTROLLER,
            "endpointslicemirroring-controller",
            kapi_controllers::start_endpointslice_mirroring,
        ),
    ];
    for (name, account, start) in endpoint_controllers {
        if enabled(name)? {
            let sources = sources.clone();
            starters.push(Box::new(move |loopback, stop| {
                start(sources.clone(), controller_client(loopback, account), stop);
            }));
        }
    }
    if enabled(POD_GC_CONTROLLER)? {
        let gc = PodGc {
            pods: resources.pods.clone(),
            nodes: resources.nodes.clone(),
            terminated_threshold: options.terminated_pod_gc_threshold,
        };
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, "pod-garbage-collector");
            kapi_controllers::start_pod_gc(gc.clone(), client, stop);
        }));
    }
    if enabled(BOOTSTRAP_SIGNER_CONTROLLER)? {
        let (secrets, config_maps) = (resources.secrets.clone(), resources.config_maps.clone());
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, "bootstrap-signer");
            kapi_controllers::start_bootstrap_signer(
                secrets.clone(),
                config_maps.clone(),
                client,
                stop,
            );
        }));
    }
    if enabled(TOKEN_CLEANER_CONTROLLER)? {
        let secrets = resources.secrets.clone();
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, "token-cleaner");
            kapi_controllers::start_token_cleaner(secrets.clone(), client, stop);
        }));
    }
    if enabled(LEGACY_TOKEN_CLEANER_CONTROLLER)? {
        let cleaner = LegacyTokenCleaner {
            secrets: resources.secrets.clone(),
            service_accounts: resources.service_accounts.clone(),
            pods: resources.pods.clone(),
            config_maps: resources.config_maps.clone(),
            clean_up_period: options.legacy_service_account_token_clean_up_period,
        };
        starters.push(Box::new(move |loopback, stop| {
            let client = controller_client(loopback, "legacy-service-account-token-cleaner");
            kapi_controllers::start_legacy_token_cleaner(cleaner.clone(), client, stop);
        }));
    }
    if enabled(VAP_STATUS_CONTROLLER)? {
        let policies = resources.validating_admission_policies.clone();
        let weak_api = api.downgrade();
        starters.push(Box::new(move |_, stop| {
            tokio::spawn(kapi_admission::typecheck::run_status_controller(
                policies.clone(),
                weak_api.clone(),
                stop,
            ));
        }));
    }
    if enabled(TOKEN_CONTROLLER)? {
        let legacy = LegacyTokens {
            tokens,
            secrets: resources.secrets.clone(),
            accounts: resources.service_accounts.clone(),
            ca_pem,
        };
        starters.push(Box::new(move |_, stop| {
            kapi_controllers::start_token_controller(legacy.clone(), stop);
        }));
    }
    Ok(starters)
}

/// The CA of each signer the CSR signing controller serves, as kube-controller-manager's
/// `--cluster-signing-*` flags give them: one CA for all (by default the data directory's),
/// or each signer's own, the signers without one not served.
fn csr_signing(options: &ServeOptions, pki: &PkiFiles) -> Result<CsrSigning> {
    let o = options;
    let own = [
        (
            KUBE_APISERVER_CLIENT,
            "kube-apiserver-client",
            &o.cluster_signing_kube_apiserver_client_cert_file,
            &o.cluster_signing_kube_apiserver_client_key_file,
        ),
        (
            KUBELET_CLIENT,
            "kubelet-client",
            &o.cluster_signing_kubelet_client_cert_file,
            &o.cluster_signing_kubelet_client_key_file,
        ),
        (
            KUBELET_SERVING,
            "kubelet-serving",
            &o.cluster_signing_kubelet_serving_cert_file,
            &o.cluster_signing_kubelet_serving_key_file,
        ),
        (
            LEGACY_UNKNOWN,
            "legacy-unknown",
            &o.cluster_signing_legacy_unknown_cert_file,
            &o.cluster_signing_legacy_unknown_key_file,
        ),
    ];
    let any_own = own
        .iter()
        .any(|(_, _, cert, key)| cert.is_some() || key.is_some());
    let shared = (&o.cluster_signing_cert_file, &o.cluster_signing_key_file);
    let mut files = Vec::new();
    match (any_own, shared) {
        (true, (None, None)) => {
            for (signer, flag, cert, key) in own {
                match (cert, key) {
                    (Some(cert), Some(key)) => files.push((signer, cert.clone(), key.clone())),
                    (None, None) => {}
                    _ => anyhow::bail!(
                        "--cluster-signing-{flag}-cert-file and --cluster-signing-{flag}-key-file \
                         must be given together"
                    ),
                }
            }
        }
        (true, _) => anyhow::bail!(
            "cannot specify --cluster-signing-{{cert,key}}-file and other \
             --cluster-signing-*-file flags at the same time"
        ),
        (false, (Some(cert), Some(key))) => {
            files = own
                .map(|(signer, ..)| (signer, cert.clone(), key.clone()))
                .to_vec();
        }
        (false, (None, None)) => {
            files = own
                .map(|(signer, ..)| (signer, pki.ca_cert.clone(), pki.ca_key.clone()))
                .to_vec();
        }
        (false, _) => anyhow::bail!(
            "--cluster-signing-cert-file and --cluster-signing-key-file must be given together"
        ),
    }
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let signers = files
        .into_iter()
        .map(|(signer, cert, key)| {
            let ca = SigningCa {
                cert_pem: read(&cert)?,
                key_pem: read(&key)?,
            };
            Ok((signer.to_string(), ca))
        })
        .collect::<Result<_>>()?;
    Ok(CsrSigning {
        signers,
        duration: options.cluster_signing_duration,
    })
}

/// A loopback client of a controller as kube-controller-manager's with
/// `--use-service-account-credentials`: the user of its service account `account` in
/// kube-system (which the bootstrap RBAC policy binds to `system:controller:<account>`), and
/// its user agent.
fn controller_client(loopback: &Loopback, account: &str) -> LoopbackClient {
    let user = kapi_builtin::token::service_account_user_info("kube-system", account);
    let user_agent = user_agent(&user.name);
    loopback.client(user, &user_agent)
}

/// kube-controller-manager's user agent for a client named `suffix` (client-go's default:
/// the commit's first 7 characters, or "unknown").
fn user_agent(suffix: &str) -> String {
    let version = kapi_server::version::VersionInfo::current();
    let commit: String = version.git_commit.chars().take(7).collect();
    let commit = if commit.is_empty() {
        "unknown".into()
    } else {
        commit
    };
    format!(
        "kube-controller-manager/{} ({}) kubernetes/{commit}/{suffix}",
        version.git_version, version.platform
    )
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

/// Whether `--controllers` enables `name`, as kube-controller-manager reads the flag: the
/// first of `name` (or an alias of it, [`ALIASES`]) and `-name` decides, otherwise `*`
/// enables all but [`DISABLED_BY_DEFAULT`]; an unknown name is an error.
fn controller_enabled(controllers: &[String], name: &str) -> Result<bool> {
    let mut enabled = None;
    let mut star = false;
    for given in controllers {
        let (off, bare) = match given.strip_prefix('-') {
            Some(bare) => (true, bare),
            None => (false, given.as_str()),
        };
        if bare == "*" {
            star = true;
            continue;
        }
        let canonical = ALIASES
            .iter()
            .find(|(alias, _)| *alias == bare)
            .map_or(bare, |(_, canonical)| canonical);
        if !CONTROLLERS.contains(&canonical) {
            anyhow::bail!("--controllers: unknown controller {given:?}; kapi runs {CONTROLLERS:?}");
        }
        if canonical == name && enabled.is_none() {
            enabled = Some(!off);
        }
    }
    Ok(enabled.unwrap_or(star && !DISABLED_BY_DEFAULT.contains(&name)))
}

/// kube-controller-manager's older names of the controllers kapi runs, which
/// `--controllers` accepts as it does.
const ALIASES: [(&str, &str); 17] = [
    ("bootstrapsigner", BOOTSTRAP_SIGNER_CONTROLLER),
    ("csrapproving", CSR_APPROVING_CONTROLLER),
    ("csrcleaner", CSR_CLEANER_CONTROLLER),
    ("csrsigning", CSR_SIGNING_CONTROLLER),
    ("endpoint", ENDPOINTS_CONTROLLER),
    ("endpointslice", ENDPOINTSLICE_CONTROLLER),
    ("endpointslicemirroring", ENDPOINTSLICE_MIRRORING_CONTROLLER),
    ("garbagecollector", GARBAGE_COLLECTOR_CONTROLLER),
    (
        "legacy-service-account-token-cleaner",
        LEGACY_TOKEN_CLEANER_CONTROLLER,
    ),
    ("namespace", NAMESPACE_CONTROLLER),
    ("podgc", POD_GC_CONTROLLER),
    ("pv-protection", PV_PROTECTION_CONTROLLER),
    ("pvc-protection", PVC_PROTECTION_CONTROLLER),
    ("root-ca-cert-publisher", ROOT_CA_PUBLISHER),
    ("serviceaccount", SERVICE_ACCOUNT_CONTROLLER),
    ("serviceaccount-token", TOKEN_CONTROLLER),
    ("tokencleaner", TOKEN_CLEANER_CONTROLLER),
];

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
        assert!(!controller_enabled(&flag(&["*"]), TOKEN_CLEANER_CONTROLLER).unwrap());
        let named = flag(&["*", "token-cleaner-controller"]);
        assert!(controller_enabled(&named, TOKEN_CLEANER_CONTROLLER).unwrap());
        let aliased = flag(&["*", "-garbagecollector", "tokencleaner"]);
        assert!(!controller_enabled(&aliased, GARBAGE_COLLECTOR_CONTROLLER).unwrap());
        assert!(controller_enabled(&aliased, TOKEN_CLEANER_CONTROLLER).unwrap());
        assert!(controller_enabled(&aliased, NAMESPACE_CONTROLLER).unwrap());
    }
}
