//! The server chain, as kube-apiserver's CreateServerChain builds it: apiextensions (which
//! delegates to the final 404), then kube-apiserver delegating to it, then the aggregator in
//! front, whose handler is the head: it proxies the group versions of APIServices naming a
//! Service and merges their discovery and OpenAPI, handing everything else to
//! kube-apiserver. (The APIService resource itself is still served by kube-apiserver's
//! handler, from kapi-builtin.)

use anyhow::{Context, Result};
use kapi_aggregator::{AggregatorConfig, AggregatorServer, AvailabilityMetrics};
use kapi_apiextensions::ApiExtensionsServer;
use kapi_server::Authorizer;
use kapi_server::authn::BearerToken;
use kapi_server::{HealthCheck, PostStartHooks, Route};
use std::sync::Arc;

use crate::config::Config;
use crate::kube_apiserver::KubeApiServer;

/// The chain, built: its head handler and what the generic server in front of it needs.
pub(crate) struct ServerChain {
    /// The first handler of the chain, the aggregator's.
    pub head: Route,
    /// The authorizers requests are checked against.
    pub authorizer: Arc<dyn Authorizer>,
    /// The bearer-token authenticators.
    pub bearer_tokens: BearerToken,
    /// Every server's post-start hooks and the in-process controllers'.
    pub hooks: PostStartHooks,
    /// The servers' boot-sequence health checks (healthz, livez and readyz).
    pub health_checks: Vec<HealthCheck>,
    /// The aggregator's availability metric.
    pub aggregator_metrics: AvailabilityMetrics,
    /// API Priority and Fairness, when on.
    pub flow_controller: Option<Arc<kapi_flowcontrol::FlowController>>,
}

/// Builds the chain from `config`.
pub(crate) fn create_server_chain(config: &Config) -> Result<ServerChain> {
    let storage = &config.storage;
    let apiextensions = ApiExtensionsServer::new(
        storage.store.clone(),
        &storage.prefix,
        storage.encryption.clone(),
        config.resolver.clone(),
    );
    let kube = KubeApiServer::new(config, apiextensions.handler())?;
    apiextensions.set_admission(kube.admission.clone());
    let aggregator = AggregatorServer::new(
        &kube.handler,
        AggregatorConfig {
            api_services: kube.resources.api_services.clone(),
            crds: apiextensions.crds(),
            resolver: crate::resolver::service_resolver(&config.options, &kube.resources),
            proxy_client_cert: proxy_client_cert(&config.options)?,
        },
    );
    let flow_controller = kube.flow_controller.clone();
    let mut hooks = kube.hooks;
    hooks.extend(apiextensions.post_start_hooks()?)?;
    hooks.extend(aggregator.post_start_hooks()?)?;
    hooks.extend(crate::controllers::post_start_hooks(
        &config.options,
        &kube.resources,
        &kube.handler,
        &config.pki,
        config.tokens.clone(),
    )?)?;
    Ok(ServerChain {
        head: Route::new(aggregator.handler()),
        authorizer: kube.authorization.authorizer,
        bearer_tokens: kube.bearer_tokens,
        hooks,
        health_checks: aggregator.health_checks(),
        aggregator_metrics: aggregator.metrics().clone(),
        flow_controller,
    })
}

/// The aggregator's client certificate and key (`--proxy-client-cert-file`,
/// `--proxy-client-key-file`; the PKI's front-proxy-client when not given).
fn proxy_client_cert(options: &crate::options::ServeOptions) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let (Some(cert), Some(key)) = (
        &options.proxy_client_cert_file,
        &options.proxy_client_key_file,
    ) else {
        return Ok(None);
    };
    let read = |path: &std::path::Path| {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))
    };
    Ok(Some((read(cert)?, read(key)?)))
}
