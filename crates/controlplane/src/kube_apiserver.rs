//! The kube-apiserver of the chain: the built-in API (kapi-builtin's resources on the generic
//! REST core) delegating what it does not serve to apiextensions, with the authentication,
//! authorization and admission its config gives, and the post-start hooks upstream's
//! kube-apiserver registers: the system namespaces, Service IP repair and the `kubernetes`
//! Service, cluster authentication info, legacy token tracking, RBAC bootstrap roles and the
//! system priority classes. kube-controller-manager's controllers kapi runs are added by
//! [`crate::controllers`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use kapi_builtin::{KubernetesService, ServiceAllocator, ServiceRanges};
use kapi_server::admission::AdmissionPlugin;
use kapi_server::authn::BearerToken;
use kapi_server::endpoints::Served;
use kapi_server::{
    ApiHandler, BoxError, GenericApiServer, PostStartHookContext, PostStartHooks, ServerError,
    UserInfo,
};

use crate::authorization::Authorization;
use crate::builtin_resources::BuiltinResources;
use crate::config::Config;
use crate::options::ServeOptions;
use crate::pki::PkiFiles;
use crate::storage::Storage;

/// How often the `kubernetes` Service, its Endpoints and EndpointSlice are reconciled.
const KUBERNETES_SERVICE_INTERVAL: Duration = Duration::from_secs(10);
/// How many times the bootstrap hook tries before leaving the rest to the periodic loop.
const INITIAL_RECONCILE_ATTEMPTS: u32 = 5;

/// The kube-apiserver of the chain, built and wired.
pub(crate) struct KubeApiServer {
    /// Its handler, the head of the chain until an aggregator is put before it.
    pub handler: ApiHandler,
    /// The built-in resources the control plane wires in.
    pub resources: BuiltinResources,
    /// The authorizers of the flags (the generic server asks them for every request).
    pub authorization: Authorization,
    /// The bearer-token authenticators of the flags.
    pub bearer_tokens: BearerToken,
    /// The admission chain, which the servers after this one in the chain share.
    pub admission: Vec<Arc<dyn AdmissionPlugin>>,
    /// Its post-start hooks.
    pub hooks: PostStartHooks,
    /// API Priority and Fairness (when `--enable-priority-and-fairness`), its
    /// configuration kept by its hooks.
    pub flow_controller: Option<Arc<kapi_flowcontrol::FlowController>>,
}

impl KubeApiServer {
    /// Builds the built-in API over the config's storage, delegating to `delegate`, and
    /// wires its authentication, authorization, admission and hooks.
    pub(crate) fn new(config: &Config, delegate: ApiHandler) -> Result<KubeApiServer> {
        let options = &config.options;
        let storage = &config.storage;
        let handler = ApiHandler::builder(storage.store.clone(), storage.prefix.clone())
            .resources(kapi_builtin::resources(options.event_ttl))
            .delegate(delegate)
            .service(config.tokens.clone())
            .schemas(Arc::new(kapi_builtin::BuiltinSchemas))
            // APIServices are JSON as the aggregator's codec writes them.
            .storage_media_type(options.storage_media_type(), &["apiregistration.k8s.io"])
            .encryption(storage.encryption.clone())
            .server_address(SocketAddr::new(config.advertise, options.secure_port).to_string())
            .build();
        for unserved in kapi_builtin::unserved_resources() {
            let gv = format!("{}/{}", unserved.group, unserved.version);
            tracing::warn!(
                "{} {} is not served: {}",
                gv,
                unserved.plural,
                unserved.reason
            );
        }
        let resources = BuiltinResources::of(&handler)?;
        config
            .resolver
            .set(crate::resolver::service_resolver(options, &resources));
        let authorization = crate::authorization::build(options, &resources)?;
        let bearer_tokens =
            crate::authentication::bearer_tokens(options, config.tokens.clone(), &resources)?;
        let admission = crate::admission::chain(
            options,
            &handler,
            &resources,
            &authorization,
            config.resolver.clone(),
        )?;
        handler.set_admission(admission.clone());
        let flow_controller = match options.enable_priority_and_fairness {
            true => Some(Arc::new(flow_controller(options, &handler)?)),
            false => None,
        };
        let hooks = post_start_hooks(config, &resources, &authorization, &flow_controller)?;
        Ok(KubeApiServer {
            handler,
            resources,
            authorization,
            bearer_tokens,
            admission,
            hooks,
            flow_controller,
        })
    }
}

/// API Priority and Fairness sharing `--max-requests-inflight` +
/// `--max-mutating-requests-inflight` seats, estimating LISTs by the watch caches of
/// `handler` and the servers it delegates to.
fn flow_controller(
    options: &ServeOptions,
    handler: &ApiHandler,
) -> Result<kapi_flowcontrol::FlowController> {
    let (read_only, mutating) = (
        options.max_requests_inflight,
        options.max_mutating_requests_inflight,
    );
    let concurrency = read_only.saturating_add(mutating);
    if concurrency == 0 {
        anyhow::bail!(
            "invalid configuration: MaxRequestsInFlight={read_only} and MaxMutatingRequestsInFlight={mutating}; they must add up to something positive"
        );
    }
    let served = handler.downgrade();
    let stats: kapi_flowcontrol::StatsFn = Arc::new(move |info| {
        let handler = served.upgrade()?;
        handler.object_stats(&info.api_group, &info.api_version, &info.resource)
    });
    Ok(kapi_flowcontrol::FlowController::new(concurrency, stats))
}

/// kube-apiserver's loopback user, as which its own post-start hooks write.
fn apiserver() -> UserInfo {
    UserInfo {
        name: "system:apiserver".into(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..UserInfo::default()
    }
}

/// The identity Lease of this server and the collection of expired ones (upstream's
/// APIServerIdentity hooks), written as kube-apiserver's loopback user.
fn add_identity_lease_hooks(hooks: &mut PostStartHooks) -> Result<()> {
    let hostname = gethostname::gethostname().to_string_lossy().into_owned();
    let timing = kapi_controllers::IdentityLeaseTiming::default();
    let own = hostname.clone();
    hooks.add(
        "start-kube-apiserver-identity-lease-controller",
        move |context| async move {
            let client = context.loopback.client(apiserver(), "kube-apiserver");
            kapi_controllers::start_identity_lease_controller(
                client,
                own,
                timing,
                context.stopping,
            );
            Ok(())
        },
    )?;
    hooks.add(
        "start-kube-apiserver-identity-lease-garbage-collector",
        move |context| async move {
            let client = context.loopback.client(apiserver(), "kube-apiserver");
            kapi_controllers::start_identity_lease_gc(client, &hostname, timing, context.stopping);
            Ok(())
        },
    )?;
    Ok(())
}

/// kube-apiserver's own post-start hooks, with upstream's names.
fn post_start_hooks(
    config: &Config,
    resources: &BuiltinResources,
    authorization: &Authorization,
    flow_controller: &Option<Arc<kapi_flowcontrol::FlowController>>,
) -> Result<PostStartHooks> {
    let mut hooks = PostStartHooks::default();
    let namespaces = resources.namespaces.clone();
    hooks.add("start-system-namespaces-controller", move |context| {
        system_namespaces(namespaces, context)
    })?;
    ServiceAllocation::new(
        resources,
        &config.options,
        &config.storage,
        config.advertise,
    )
    .add_to(&mut hooks)?;
    let authentication_info = cluster_authentication_info(&config.options, &config.pki)?;
    let config_maps = resources.config_maps.clone();
    hooks.add(
        "start-cluster-authentication-info-controller",
        move |context| async move {
            kapi_controllers::start_cluster_authentication_info(
                config_maps,
                authentication_info,
                context.stopping,
            );
            Ok(())
        },
    )?;
    add_identity_lease_hooks(&mut hooks)?;
    let reloaded = config.options.encryption_provider_config_automatic_reload;
    if let Some(encryption) = config.storage.encryption.clone().filter(|_| reloaded) {
        hooks.add(
            "start-encryption-provider-config-automatic-reload",
            move |context| async move {
                tokio::spawn(async move {
                    tokio::select! {
                        _ = context.stopping.cancelled() => {}
                        _ = encryption.reload_forever() => {}
                    }
                });
                Ok(())
            },
        )?;
    }
    let config_maps = resources.config_maps.clone();
    hooks.add(
        "start-legacy-token-tracking-controller",
        move |context| async move {
            kapi_controllers::start_legacy_token_tracking(config_maps, context.stopping);
            Ok(())
        },
    )?;
    let rbac = authorization.rbac.clone();
    hooks.add("rbac/bootstrap-roles", move |context| async move {
        kapi_rbac::start_bootstrap_policy(rbac, context.stopping)
            .await
            .map_err(Into::into)
    })?;
    let flow_control = kapi_flowcontrol::FlowControlResources {
        flow_schemas: resources.flow_schemas.clone(),
        priority_levels: resources.priority_level_configurations.clone(),
        controller: flow_controller.clone(),
    };
    hooks.add(
        "priority-and-fairness-config-producer",
        move |context| async move {
            // Upstream's consumer applies the Dangling conditions with the loopback client.
            let client = context.loopback.client(apiserver(), "kube-apiserver");
            kapi_flowcontrol::run_config_producer(flow_control, client, context.stopping)
                .await
                .map_err(Into::into)
        },
    )?;
    if let Some(controller) = flow_controller.clone() {
        hooks.add(
            "priority-and-fairness-config-consumer",
            move |context| async move {
                tokio::spawn(controller.run_adjustments(context.stopping));
                Ok(())
            },
        )?;
    }
    let priority_classes = resources.priority_classes.clone();
    hooks.add(
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
    Ok(hooks)
}

/// Service-account issuer discovery, served when the issuer is an `https://` URL as
/// kube-apiserver serves it: the OpenID provider configuration and the verification keys.
pub(crate) fn add_issuer_discovery(
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

/// How clients are authenticated, for the `extension-apiserver-authentication` ConfigMap:
/// the client CA (`--client-ca-file`, else the PKI's CA) and the front proxies' settings.
fn cluster_authentication_info(
    options: &ServeOptions,
    pki: &PkiFiles,
) -> Result<kapi_controllers::ClusterAuthenticationInfo> {
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let client_ca = read(options.client_ca_file.as_ref().unwrap_or(&pki.ca_cert))?;
    let request_header = match &options.requestheader_client_ca_file {
        None => None,
        Some(path) => Some(kapi_controllers::RequestHeaderInfo {
            client_ca: read(path)?,
            allowed_names: options.requestheader_allowed_names.clone(),
            username_headers: options.requestheader_username_headers.clone(),
            uid_headers: options.requestheader_uid_headers.clone(),
            group_headers: options.requestheader_group_headers.clone(),
            extra_header_prefixes: options.requestheader_extra_headers_prefix.clone(),
        }),
    };
    Ok(kapi_controllers::ClusterAuthenticationInfo {
        client_ca,
        request_header,
    })
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
struct ServiceAllocation {
    allocator: Arc<ServiceAllocator>,
    services: Served,
    kubernetes: KubernetesService,
}

impl ServiceAllocation {
    /// Sets the allocator on the services registry.
    fn new(
        resources: &BuiltinResources,
        options: &ServeOptions,
        storage: &Storage,
        advertise: IpAddr,
    ) -> ServiceAllocation {
        let services = resources.services.clone();
        let ranges = ServiceRanges {
            cluster_ips: options.service_cluster_ip_range,
            node_ports: options.service_node_port_range,
        };
        let allocator = ServiceAllocator::new(
            ranges,
            resources.ip_addresses.clone(),
            storage.store.clone(),
            &storage.prefix,
        );
        services.registry.set_write_steps(allocator.clone());
        let kubernetes = KubernetesService {
            services: services.clone(),
            endpoints: resources.endpoints.clone(),
            endpoint_slices: resources.endpoint_slices.clone(),
            service_cidrs: resources.service_cidrs.clone(),
            cidr: options.service_cluster_ip_range,
            advertise,
            secure_port: options.secure_port,
            store: storage.store.clone(),
            storage_prefix: storage.prefix.clone(),
            reconciler: options.endpoint_reconciler(),
        };
        ServiceAllocation {
            allocator,
            services,
            kubernetes,
        }
    }

    /// Adds the repair and bootstrap post-start hooks (upstream's names).
    fn add_to(self, hooks: &mut PostStartHooks) -> Result<(), ServerError> {
        let ServiceAllocation {
            allocator,
            services,
            kubernetes,
        } = self;
        hooks.add("start-service-ip-repair-controllers", move |_| async move {
            allocator.repair(&services).await.map_err(Into::into)
        })?;
        hooks.add("bootstrap-controller", move |context| {
            kubernetes_service(kubernetes, context)
        })?;
        Ok(())
    }
}

/// The bootstrap controller's post-start hook, as upstream's: the `kubernetes` Service and
/// the default ServiceCIDR created before the server reports ready (this server taken out of
/// Endpoints an unclean exit left it in); once every hook has finished, this server's lease,
/// the Endpoints and the EndpointSlice, reconciled every 10 seconds after (upstream's
/// controller waits for `/readyz` before its first pass). On shutdown this server leaves the
/// Endpoints.
async fn kubernetes_service(
    target: KubernetesService,
    context: PostStartHookContext,
) -> Result<(), BoxError> {
    for attempt in 1..=INITIAL_RECONCILE_ATTEMPTS {
        match kapi_builtin::start_kubernetes_service(&target).await {
            Ok(()) => break,
            Err(err) if attempt == INITIAL_RECONCILE_ATTEMPTS => {
                tracing::warn!(%err, "reconciling the kubernetes service; retrying every 10s");
            }
            Err(_) => tokio::select! {
                _ = context.stopping.cancelled() => break,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            },
        }
    }
    // Shutting down already: the server may have stopped waiting for its tasks, and this
    // server has written no lease to leave.
    if context.stopping.is_cancelled() {
        return Ok(());
    }
    // In the server's tasks: leaving the Endpoints is a shutdown step the server waits for
    // before its storage closes (upstream's pre-shutdown hook).
    context.tasks.spawn(async move {
        tokio::select! {
            _ = context.stopping.cancelled() => {}
            _ = context.started.cancelled() => {}
        }
        // Made once the hooks are done, so that a slow start leaves no backlog of ticks.
        let mut interval = tokio::time::interval(KUBERNETES_SERVICE_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // The first tick is at once.
            tokio::select! {
                biased;
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
