//! `kapi serve`: the config completed from the options, the server chain built from it, the
//! generic server in front of the chain, run until SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_server::{GenericApiServer, HealthCheck, ServerConfig, TlsConfig};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::chain::create_server_chain;
use crate::config::Config;
use crate::kube_apiserver::add_issuer_discovery;
use crate::options::ServeOptions;
use crate::pki::PkiFiles;

/// Runs the server until a shutdown signal; returns when it has shut down. `when_started`
/// runs in the caller's task once the server's start is over (its post-start hooks have
/// finished), unless the shutdown comes first.
pub async fn run(options: ServeOptions, when_started: impl Future<Output = ()>) -> Result<()> {
    let mut server = start(options).await?;
    let started = server.started.take();
    let after_start = async {
        if let Some(started) = started {
            started.await;
            when_started.await;
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        () = shutdown_signal() => {}
        () = after_start => {}
    }
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
    /// Resolves once the post-start hooks have finished ([`run`] takes it).
    started: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
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

/// Starts a server: completes the config (PKI, storage), builds the server chain, puts the
/// generic server's handler chain in front of it and listens. Returns once it listens;
/// `/readyz` turns ok when its post-start hooks (the system namespaces) have run.
pub async fn start(options: ServeOptions) -> Result<RunningServer> {
    let config = Config::complete(options).await?;
    let chain = create_server_chain(&config)?;
    let Config {
        options,
        started,
        data_dir_lock,
        advertise,
        pki,
        tokens,
        storage,
        snapshots,
        resolver: _,
    } = config;
    let mut server = GenericApiServer::new(server_config(&options, &pki)?, chain.head)?;
    chain
        .aggregator_metrics
        .register(server.metrics_mut().registry_mut());
    storage
        .encryption_metrics
        .register(server.metrics_mut().registry_mut());
    server.set_authorizer(chain.authorizer);
    if let Some(controller) = chain.flow_controller {
        install_flow_control(&mut server, controller);
    }
    if let Some(auditor) = crate::audit::auditor(&options)? {
        server.set_auditor(auditor);
    }
    server.add_authenticator(Arc::new(chain.bearer_tokens));
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
    if let Some(encryption) = storage.encryption.clone().filter(|e| e.has_kms_check()) {
        // Upstream's KMS check is on /healthz and /readyz, not /livez: a plugin down stops
        // the traffic, never the process.
        let check = HealthCheck::new("kms-providers", move || {
            let encryption = encryption.clone();
            async move { encryption.check_kms().await.map_err(Into::into) }
        });
        checks.add_healthz_check(check.clone());
        checks.add_readyz_check(check);
    }
    for check in chain.health_checks {
        checks.add_health_check(check);
    }
    server.add_post_start_hooks(chain.hooks)?;
    let listening = server.bind().await?;
    let address = listening.local_addr()?;
    let hooks_finished = Box::pin(listening.started());
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
        started: Some(hooks_finished),
    })
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
    kapi_server::cacher::set_budget(options.watch_cache_protobuf_mb.saturating_mul(1 << 20));
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

/// API Priority and Fairness in front of the handlers, its metrics, and its debug endpoints
/// (`/debug/api_priority_and_fairness/dump_*`, plain text as upstream's; `dump_requests`
/// with who asked for what when `includeRequestDetails` is given).
fn install_flow_control(
    server: &mut GenericApiServer,
    controller: Arc<kapi_flowcontrol::FlowController>,
) {
    controller
        .metrics()
        .register(server.metrics_mut().registry_mut());
    for endpoint in ["dump_priority_levels", "dump_queues", "dump_requests"] {
        let controller = controller.clone();
        let handler: kapi_server::NonResourceHandler = Arc::new(move |request| {
            let query = request.uri.query().unwrap_or("");
            let details = kapi_server::query::first(query, "includeRequestDetails")
                .is_some_and(|v| !v.is_empty());
            let table = controller.dump(endpoint, details).unwrap_or_default();
            kapi_server::responses::document(kapi_server::responses::TEXT_PLAIN_UTF8, table.into())
        });
        let path = format!("/debug/api_priority_and_fairness/{endpoint}");
        server.add_non_resource_handler(&path, handler);
    }
    server.set_flow_control(controller);
}
