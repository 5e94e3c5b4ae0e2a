//! `kapi serve`: the PKI, the storage, the API (kapi-builtin's resources served by the REST
//! core) behind the generic server's chain, run until SIGTERM or SIGINT.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use kapi_apiextensions::ApiExtensionsServer;
use kapi_builtin::{KubernetesService, ServiceAllocator, ServiceRanges};
use kapi_server::endpoints::Served;
use kapi_server::{
    ApiHandler, BoxError, GenericApiServer, HealthCheck, PostStartHookContext, Route, ServerConfig,
    TlsConfig,
};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::data_dir;
use crate::options::ServeOptions;
use crate::pki::{self, PkiFiles};
use crate::resolver::EndpointsResolver;
use crate::storage::Storage;
use crate::store_command;

/// How often the `kubernetes` Service, its Endpoints and EndpointSlice are reconciled.
const KUBERNETES_SERVICE_INTERVAL: Duration = Duration::from_secs(10);
/// How many times the bootstrap hook tries before leaving the rest to the periodic loop.
const INITIAL_RECONCILE_ATTEMPTS: u32 = 5;
/// The names the `kubernetes` service is reached by in a cluster.
const KUBERNETES_SERVICE_NAMES: [&str; 4] = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// Runs the server until a shutdown signal; returns when it has shut down.
pub async fn run(options: ServeOptions) -> Result<()> {
    let server = start(options).await?;
    shutdown_signal().await;
    server.stop().await
}

/// A kapi server started in this process (the binary runs one; tests run several).
pub struct RunningServer {
    /// Where it listens.
    pub address: SocketAddr,
    /// The admin kubeconfig in its data directory.
    pub kubeconfig: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<()>>,
}

impl RunningServer {
    /// Shuts the server down gracefully and waits until it has.
    pub async fn stop(mut self) -> Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        (&mut self.task).await.context("the server task failed")?
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Starts a server: PKI, storage, the API and the serving chain. Returns once it listens;
/// `/readyz` turns ok when its post-start hooks (the system namespaces) have run.
pub async fn start(options: ServeOptions) -> Result<RunningServer> {
    let started = Instant::now();
    // Before anything in the data directory is read or written: a second kapi on it must
    // fail without touching what the running one uses (its kubeconfig above all).
    let data_dir_lock = data_dir::lock(&options.data_dir)?;
    let advertise = advertise_address(&options);
    let server_url = local_url(&options);
    let pki = pki::ensure(
        &options.data_dir,
        &serving_names(&options, advertise),
        &server_url,
    )
    .context("preparing the PKI")?;
    let tokens = Arc::new(pki::service_account_tokens(
        &pki,
        &options.service_account_issuer,
        &options.api_audiences,
        options.service_account_signing_key_file.as_deref(),
        &options.service_account_key_file,
    )?);
    let storage = Storage::open(&options).await?;
    let snapshots = storage
        .embedded
        .clone()
        .and_then(|store| store_command::serve_snapshots(&options.data_dir, store));
    let resolver = EndpointsResolver::new();
    let apiextensions =
        ApiExtensionsServer::new(storage.store.clone(), &storage.prefix, resolver.clone());
    let api = ApiHandler::builder(storage.store.clone(), storage.prefix.clone())
        .resources(kapi_builtin::resources())
        .delegate(apiextensions.handler())
        .service(tokens.clone())
        .schemas(Arc::new(kapi_builtin::BuiltinSchemas))
        .server_address(SocketAddr::new(advertise, options.secure_port).to_string())
        .build();
    resolver.set_api(&api);
    for unserved in kapi_builtin::unserved_resources() {
        let gv = format!("{}/{}", unserved.group, unserved.version);
        tracing::warn!(
            "{} {} is not served: {}",
            gv,
            unserved.plural,
            unserved.reason
        );
    }
    let namespaces = api
        .served("", "v1", "namespaces")
        .context("the built-in resources have no namespaces")?
        .clone();
    let config_maps_served = api
        .served("", "v1", "configmaps")
        .context("the built-in resources have no configmaps")?
        .clone();
    let authorization = crate::authorization::build(&options, &api)?;
    let bearer_tokens = crate::authentication::bearer_tokens(&options, tokens.clone(), &api)?;
    let admission = crate::admission::chain(&options, &api, &authorization, resolver.clone())?;
    api.set_admission(admission.clone());
    apiextensions.set_admission(admission);
    let priority_classes = api
        .served("scheduling.k8s.io", "v1", "priorityclasses")
        .context("the built-in resources have no priorityclasses")?
        .clone();
    let service_hooks = ServiceHooks::new(&api, &options, &storage, advertise)?;
    let api_weak = api.downgrade();
    let quotas = api
        .served("", "v1", "resourcequotas")
        .context("the built-in resources have no resourcequotas")?;
    let namespace_objects = namespace_objects(&api, &pki, &options.controllers)?;
    let protected_storage = protected_storage(&api, &options.controllers)?;
    let legacy_tokens = legacy_tokens(&api, &pki, tokens.clone(), &options.controllers)?;
    let policy_status = policy_status(&api, &options.controllers)?;
    let mut server = GenericApiServer::new(server_config(&options, &pki)?, Route::new(api))?;
    server.set_authorizer(authorization.authorizer);
    if let Some(auditor) = crate::audit::auditor(&options)? {
        server.set_auditor(auditor);
    }
    server.add_authenticator(Arc::new(bearer_tokens));
    let jwks_uri = options.service_account_jwks_uri.clone().unwrap_or_else(|| {
        let advertised = SocketAddr::new(advertise, options.secure_port);
        format!("https://{advertised}/openid/v1/jwks")
    });
    add_issuer_discovery(&mut server, &tokens, &jwks_uri);
    let checks = server.health_checks_mut();
    checks.add_health_check(HealthCheck::storage("etcd", storage.store.clone()));
    checks.add_readyz_check(HealthCheck::storage(
        "etcd-readiness",
        storage.store.clone(),
    ));
    let namespaces_for_objects = namespaces.clone();
    server.add_post_start_hook("start-system-namespaces-controller", move |context| {
        system_namespaces(namespaces, context)
    })?;
    service_hooks.add_to(&mut server)?;
    let authentication_info = cluster_authentication_info(&options, &pki)?;
    let config_maps = config_maps_served.clone();
    server.add_post_start_hook(
        "start-cluster-authentication-info-controller",
        move |context| async move {
            kapi_builtin::start_cluster_authentication_info(
                config_maps,
                authentication_info,
                context.stopping,
            );
            Ok(())
        },
    )?;
    let config_maps = config_maps_served.clone();
    server.add_post_start_hook(
        "start-legacy-token-tracking-controller",
        move |context| async move {
            kapi_builtin::token::start_legacy_token_tracking(config_maps, context.stopping);
            Ok(())
        },
    )?;
    let crd_informer_synced = apiextensions.informer_synced();
    server.add_post_start_hook("start-apiextensions-controllers", move |context| {
        apiextensions.start_controllers(context)
    })?;
    server.add_post_start_hook("crd-informer-synced", move |_| crd_informer_synced)?;
    let weak_api = api_weak.clone();
    server.add_post_start_hook(
        "start-resource-quota-controller",
        move |context| async move {
            kapi_builtin::start_quota_controller(quotas, weak_api, context.stopping);
            Ok(())
        },
    )?;
    let namespaces_followed = namespaces_for_objects;
    server.add_post_start_hook(
        "start-serviceaccount-controllers",
        move |context| async move {
            kapi_builtin::start_namespace_objects(
                namespaces_followed,
                namespace_objects,
                context.stopping,
            );
            Ok(())
        },
    )?;
    server.add_post_start_hook(
        "start-storage-protection-controllers",
        move |context| async move {
            kapi_builtin::start_protection_controllers(protected_storage, context.stopping);
            Ok(())
        },
    )?;
    if let Some((policies, api)) = policy_status {
        server.add_post_start_hook(
            "start-validating-admission-policy-status-controller",
            move |context| async move {
                tokio::spawn(kapi_admission::typecheck::run_status_controller(
                    policies,
                    api,
                    context.stopping,
                ));
                Ok(())
            },
        )?;
    }
    if let Some(legacy_tokens) = legacy_tokens {
        server.add_post_start_hook(
            "start-serviceaccount-token-controller",
            move |context| async move {
                kapi_builtin::token::start_token_controller(legacy_tokens, context.stopping);
                Ok(())
            },
        )?;
    }
    let rbac = authorization.rbac;
    server.add_post_start_hook("rbac/bootstrap-roles", move |context| async move {
        kapi_builtin::rbac::start_bootstrap_policy(rbac, context.stopping)
            .await
            .map_err(Into::into)
    })?;
    server.add_post_start_hook(
        "scheduling/bootstrap-system-priority-classes",
        move |_| async move {
            kapi_builtin::ensure_system_priority_classes(
                &priority_classes.registry,
                &priority_classes.definition,
            )
            .await
            .map_err(Into::into)
        },
    )?;
    let listening = server.bind().await?;
    let address = listening.local_addr()?;
    tracing::info!(
        "kapi serving securely on {address} (advertised as {advertise}); admin kubeconfig: {}; storage: {} under {:?}; started in {:?}",
        pki.kubeconfig.display(),
        storage.description,
        storage.prefix,
        started.elapsed()
    );
    let (shutdown, stop) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // The storage (and its compactor) lives as long as the server serves, and the data
        // directory stays locked until the storage is closed.
        let _data_dir_lock = data_dir_lock;
        let served = listening
            .serve(async {
                let _ = stop.await;
            })
            .await;
        if let Some(snapshots) = snapshots {
            snapshots.stop().await;
        }
        storage.close().await?;
        served.map_err(Into::into)
    });
    Ok(RunningServer {
        address,
        kubeconfig: pki.kubeconfig.clone(),
        shutdown: Some(shutdown),
        task,
    })
}

/// Service-account issuer discovery, served when the issuer is an `https://` URL as
/// kube-apiserver serves it: the OpenID provider configuration and the verification keys.
fn add_issuer_discovery(
    server: &mut GenericApiServer,
    tokens: &kapi_builtin::token::ServiceAccountTokens,
    jwks_uri: &str,
) {
    if !tokens.issuer().starts_with("https://") {
        return;
    }
    let configuration = tokens.openid_configuration(jwks_uri).to_string();
    server.add_document(
        "/.well-known/openid-configuration",
        "application/json",
        configuration.into_bytes(),
    );
    server.add_document(
        "/openid/v1/jwks",
        "application/jwk-set+json",
        tokens.jwks().to_string().into_bytes(),
    );
}

/// What kube-controller-manager keeps in every namespace and kapi keeps itself: the
/// `default` ServiceAccount (which the ServiceAccount admission plugin needs for every pod)
/// and the `kube-root-ca.crt` ConfigMap with the CA of the data directory's PKI.
fn namespace_objects(
    api: &ApiHandler,
    pki: &pki::PkiFiles,
    controllers: &[String],
) -> Result<Vec<kapi_builtin::NamespaceObject>> {
    let served = |plural: &str| {
        api.served("", "v1", plural)
            .with_context(|| format!("the built-in resources have no {plural}"))
    };
    let mut objects = Vec::new();
    if controller_enabled(controllers, SERVICE_ACCOUNT_CONTROLLER)? {
        let accounts = served("serviceaccounts")?;
        objects.push(kapi_builtin::NamespaceObject::default_service_account(
            accounts,
        ));
    }
    if controller_enabled(controllers, ROOT_CA_PUBLISHER)? {
        let ca = std::fs::read_to_string(&pki.ca_cert)
            .with_context(|| format!("reading {}", pki.ca_cert.display()))?;
        objects.push(kapi_builtin::NamespaceObject::root_ca(
            served("configmaps")?,
            ca,
        ));
    }
    Ok(objects)
}

/// How clients are authenticated, for the `extension-apiserver-authentication` ConfigMap:
/// the client CA (`--client-ca-file`, else the PKI's CA) and the front proxies' settings.
fn cluster_authentication_info(
    options: &ServeOptions,
    pki: &pki::PkiFiles,
) -> Result<kapi_builtin::ClusterAuthenticationInfo> {
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let client_ca = read(options.client_ca_file.as_ref().unwrap_or(&pki.ca_cert))?;
    let request_header = match &options.requestheader_client_ca_file {
        None => None,
        Some(path) => Some(kapi_builtin::RequestHeaderInfo {
            client_ca: read(path)?,
            allowed_names: options.requestheader_allowed_names.clone(),
            username_headers: options.requestheader_username_headers.clone(),
            uid_headers: options.requestheader_uid_headers.clone(),
            group_headers: options.requestheader_group_headers.clone(),
            extra_header_prefixes: options.requestheader_extra_headers_prefix.clone(),
        }),
    };
    Ok(kapi_builtin::ClusterAuthenticationInfo {
        client_ca,
        request_header,
    })
}

/// The controller keeping each namespace's `default` ServiceAccount.
const SERVICE_ACCOUNT_CONTROLLER: &str = "serviceaccount-controller";
/// The controller keeping each namespace's `kube-root-ca.crt`.
const ROOT_CA_PUBLISHER: &str = "root-ca-certificate-publisher-controller";
/// The controller filling service-account-token Secrets with legacy tokens.
const TOKEN_CONTROLLER: &str = "serviceaccount-token-controller";

/// The legacy token controller's signer and collections, if `--controllers` runs it.
fn legacy_tokens(
    api: &ApiHandler,
    pki: &pki::PkiFiles,
    tokens: Arc<kapi_builtin::token::ServiceAccountTokens>,
    controllers: &[String],
) -> Result<Option<kapi_builtin::token::LegacyTokens>> {
    if !controller_enabled(controllers, TOKEN_CONTROLLER)? {
        return Ok(None);
    }
    let served = |plural: &str| {
        api.served("", "v1", plural)
            .with_context(|| format!("the built-in resources have no {plural}"))
    };
    let ca_pem = std::fs::read_to_string(&pki.ca_cert)
        .with_context(|| format!("reading {}", pki.ca_cert.display()))?;
    Ok(Some(kapi_builtin::token::LegacyTokens {
        tokens,
        secrets: served("secrets")?,
        accounts: served("serviceaccounts")?,
        ca_pem,
    }))
}

/// The controller releasing deleted claims no pod uses.
const PVC_PROTECTION_CONTROLLER: &str = "persistentvolumeclaim-protection-controller";
/// The controller releasing deleted volumes not bound.
const PV_PROTECTION_CONTROLLER: &str = "persistentvolume-protection-controller";

/// The controller reporting ValidatingAdmissionPolicies' type checking.
const VAP_STATUS_CONTROLLER: &str = "validatingadmissionpolicy-status-controller";

/// What the policy status controller follows, unless `--controllers` turns it off.
fn policy_status(
    api: &ApiHandler,
    controllers: &[String],
) -> Result<Option<(Served, kapi_server::endpoints::WeakApiHandler)>> {
    if !controller_enabled(controllers, VAP_STATUS_CONTROLLER)? {
        return Ok(None);
    }
    let policies = api
        .served(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        )
        .context("the built-in resources have no validatingadmissionpolicies")?;
    Ok(Some((policies, api.downgrade())))
}

/// The storage protection controllers' collections and switches.
fn protected_storage(
    api: &ApiHandler,
    controllers: &[String],
) -> Result<kapi_builtin::ProtectedStorage> {
    let served = |plural: &str| {
        api.served("", "v1", plural)
            .with_context(|| format!("the built-in resources have no {plural}"))
    };
    Ok(kapi_builtin::ProtectedStorage {
        claims: served("persistentvolumeclaims")?,
        volumes: served("persistentvolumes")?,
        pods: served("pods")?,
        release_claims: controller_enabled(controllers, PVC_PROTECTION_CONTROLLER)?,
        release_volumes: controller_enabled(controllers, PV_PROTECTION_CONTROLLER)?,
    })
}

/// Whether `--controllers` enables `name`, as kube-controller-manager reads the flag: `-name`
/// disables, `name` enables, otherwise `*` enables; an unknown name is an error.
fn controller_enabled(controllers: &[String], name: &str) -> Result<bool> {
    let known = [
        SERVICE_ACCOUNT_CONTROLLER,
        TOKEN_CONTROLLER,
        ROOT_CA_PUBLISHER,
        PVC_PROTECTION_CONTROLLER,
        PV_PROTECTION_CONTROLLER,
        VAP_STATUS_CONTROLLER,
    ];
    for given in controllers {
        let bare = given.trim_start_matches('-');
        if given != "*" && !known.contains(&bare) {
            anyhow::bail!("--controllers: unknown controller {given:?}; kapi runs {known:?}");
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

/// The system namespaces post-start hook: creates default, kube-system, kube-public and
/// kube-node-lease before the server reports ready, then keeps them there every minute, as
/// kube-apiserver's system namespaces controller does.
async fn system_namespaces(
    namespaces: Served,
    context: PostStartHookContext,
) -> Result<(), BoxError> {
    let ensure = |served: Served| async move {
        kapi_builtin::ensure_system_namespaces(&served.registry, &served.definition).await
    };
    ensure(namespaces.clone()).await?;
    tokio::spawn(async move {
        let mut every_minute = tokio::time::interval(Duration::from_secs(60));
        every_minute.tick().await;
        loop {
            tokio::select! {
                _ = context.stopping.cancelled() => return,
                _ = every_minute.tick() => {}
            }
            if let Err(err) = ensure(namespaces.clone()).await {
                tracing::warn!(%err, "ensuring the system namespaces");
            }
        }
    });
    Ok(())
}

/// Service allocation, wired into the services registry (its write hooks: ClusterIPs from
/// `--service-cluster-ip-range`, NodePorts from `--service-node-port-range`), and the
/// post-start hooks that repair it from the stored Services and keep the `kubernetes`
/// Service reconciled.
struct ServiceHooks {
    allocator: Arc<ServiceAllocator>,
    services: Served,
    kubernetes: KubernetesService,
}

impl ServiceHooks {
    /// Sets the allocator on the services registry of `api`.
    fn new(
        api: &ApiHandler,
        options: &ServeOptions,
        storage: &Storage,
        advertise: IpAddr,
    ) -> Result<ServiceHooks> {
        let served = |group: &str, plural: &str| {
            api.served(group, "v1", plural)
                .with_context(|| format!("the built-in resources have no {plural}"))
        };
        let services = served("", "services")?;
        let ranges = ServiceRanges {
            cluster_ips: options.service_cluster_ip_range,
            node_ports: options.service_node_port_range,
        };
        let allocator = ServiceAllocator::new(
            ranges,
            served("networking.k8s.io", "ipaddresses")?,
            storage.store.clone(),
            &storage.prefix,
        );
        services.registry.set_write_hooks(allocator.clone());
        let kubernetes = KubernetesService {
            services: services.clone(),
            endpoints: served("", "endpoints")?,
            endpoint_slices: served("discovery.k8s.io", "endpointslices")?,
            service_cidrs: served("networking.k8s.io", "servicecidrs")?,
            cidr: options.service_cluster_ip_range,
            advertise,
            secure_port: options.secure_port,
            store: storage.store.clone(),
            storage_prefix: storage.prefix.clone(),
        };
        Ok(ServiceHooks {
            allocator,
            services,
            kubernetes,
        })
    }

    /// Adds the repair and bootstrap post-start hooks (upstream's names).
    fn add_to(self, server: &mut GenericApiServer) -> Result<()> {
        let ServiceHooks {
            allocator,
            services,
            kubernetes,
        } = self;
        server.add_post_start_hook("start-service-ip-repair-controllers", move |_| async move {
            allocator.repair(&services).await.map_err(Into::into)
        })?;
        server.add_post_start_hook("bootstrap-controller", move |context| {
            kubernetes_service(kubernetes, context)
        })?;
        Ok(())
    }
}

/// The bootstrap controller's post-start hook: the `kubernetes` Service, its Endpoints,
/// EndpointSlice and the default ServiceCIDR, created before the server reports ready and
/// reconciled every 10 seconds after; on shutdown this server leaves the Endpoints.
async fn kubernetes_service(
    target: KubernetesService,
    context: PostStartHookContext,
) -> Result<(), BoxError> {
    for attempt in 1..=INITIAL_RECONCILE_ATTEMPTS {
        match kapi_builtin::reconcile_kubernetes_service(&target).await {
            Ok(()) => break,
            Err(err) if attempt == INITIAL_RECONCILE_ATTEMPTS => {
                tracing::warn!(%err, "reconciling the kubernetes service; retrying every 10s");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(KUBERNETES_SERVICE_INTERVAL);
        interval.tick().await;
        loop {
            tokio::select! {
                _ = context.stopping.cancelled() => break,
                _ = interval.tick() => {}
            }
            if let Err(err) = kapi_builtin::reconcile_kubernetes_service(&target).await {
                tracing::warn!(%err, "reconciling the kubernetes service");
            }
        }
        if let Err(err) = kapi_builtin::leave_kubernetes_endpoints(&target).await {
            tracing::warn!(%err, "removing this server from the kubernetes endpoints");
        }
    });
    Ok(())
}

/// The server's settings from the flags; the TLS files given by flags win over the PKI's.
fn server_config(options: &ServeOptions, pki: &PkiFiles) -> Result<ServerConfig> {
    if options.tls_cert_file.is_some() {
        tracing::warn!(
            "--tls-cert-file is set: the admin kubeconfig trusts kapi's own CA, which may not have issued that certificate"
        );
    }
    if options.client_ca_file.is_some() {
        tracing::warn!(
            "--client-ca-file is set: the admin kubeconfig's certificate is issued by kapi's own CA, which it may not include"
        );
    }
    let cert = options.tls_cert_file.as_ref().unwrap_or(&pki.serving_cert);
    let key = options
        .tls_private_key_file
        .as_ref()
        .unwrap_or(&pki.serving_key);
    let client_ca = options.client_ca_file.as_ref().unwrap_or(&pki.ca_cert);
    let tls = TlsConfig::from_pem_files(cert, key, Some(client_ca))?;
    let mut config = ServerConfig::new(tls);
    config.bind_address = options.bind_address;
    config.secure_port = options.secure_port;
    config.max_requests_inflight = options.max_requests_inflight;
    config.max_mutating_requests_inflight = options.max_mutating_requests_inflight;
    config.request_timeout = options.request_timeout;
    config.anonymous_auth = options.anonymous_auth;
    config.shutdown_delay = options.shutdown_delay_duration;
    config.request_header = crate::authentication::request_header(options)?;
    Ok(config)
}

/// `--advertise-address`, else the bind address, else (bound to all interfaces) the first
/// non-loopback address of the machine.
fn advertise_address(options: &ServeOptions) -> IpAddr {
    if let Some(address) = options.advertise_address {
        return address;
    }
    if !options.bind_address.is_unspecified() {
        return options.bind_address;
    }
    let addresses = machine_addresses();
    let first_v4 = addresses
        .iter()
        .find(|ip| ip.is_ipv4() && !ip.is_loopback());
    let first = first_v4.or_else(|| addresses.iter().find(|ip| !ip.is_loopback()));
    first.copied().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The URL local clients (the admin kubeconfig) reach the server at: the bind address, or
/// loopback when bound to all interfaces.
fn local_url(options: &ServeOptions) -> String {
    let host = match options.bind_address {
        ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    let host = match host {
        IpAddr::V6(v6) => format!("[{v6}]"),
        IpAddr::V4(v4) => v4.to_string(),
    };
    format!("https://{host}:{}", options.secure_port)
}

/// Every name the serving certificate must be valid for.
fn serving_names(options: &ServeOptions, advertise: IpAddr) -> BTreeSet<String> {
    let service_ip = options.service_cluster_ip_range.nth(0).to_string();
    let mut names: BTreeSet<String> = ["localhost", "127.0.0.1", &service_ip]
        .into_iter()
        .chain(KUBERNETES_SERVICE_NAMES)
        .map(String::from)
        .collect();
    names.insert(Ipv6Addr::LOCALHOST.to_string());
    if let Some(hostname) = gethostname::gethostname()
        .to_str()
        .filter(|h| !h.is_empty())
    {
        names.insert(hostname.to_ascii_lowercase());
    }
    names.extend(machine_addresses().iter().map(IpAddr::to_string));
    names.insert(advertise.to_string());
    names.extend(options.tls_san.iter().filter(|s| !s.is_empty()).cloned());
    names
}

/// The machine's interface addresses, IPv6 link-local ones left out (they need a zone).
fn machine_addresses() -> Vec<IpAddr> {
    let interfaces = if_addrs::get_if_addrs().unwrap_or_default();
    let link_local = |ip: &IpAddr| matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local());
    interfaces
        .iter()
        .map(|i| i.ip())
        .filter(|ip| !link_local(ip))
        .collect()
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
    tracing::info!("received a shutdown signal");
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
