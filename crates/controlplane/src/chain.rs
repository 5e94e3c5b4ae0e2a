//! The server chain, as kube-apiserver's CreateServerChain builds it: apiextensions (which
//! delegates to the final 404), then kube-apiserver delegating to it, then the aggregator in
//! front. The aggregator keeps the chain's local APIServices; it does not serve requests of
//! its own yet (the APIService resource is served by kube-apiserver's handler), so the head
//! handler is still kube-apiserver's.

use anyhow::Result;
use kapi_aggregator::AggregatorServer;
use kapi_apiextensions::ApiExtensionsServer;
use kapi_server::Authorizer;
use kapi_server::authn::BearerToken;
use kapi_server::endpoints::ApiHandler;
use kapi_server::{HealthCheck, PostStartHooks};
use std::sync::Arc;

use crate::config::Config;
use crate::kube_apiserver::KubeApiServer;

/// The chain, built: its head handler and what the generic server in front of it needs.
pub(crate) struct ServerChain {
    /// The first handler of the chain.
    pub head: ApiHandler,
    /// The authorizers requests are checked against.
    pub authorizer: Arc<dyn Authorizer>,
    /// The bearer-token authenticators.
    pub bearer_tokens: BearerToken,
    /// Every server's post-start hooks and the in-process controllers'.
    pub hooks: PostStartHooks,
    /// The servers' boot-sequence health checks (healthz, livez and readyz).
    pub health_checks: Vec<HealthCheck>,
}

/// Builds the chain from `config`.
pub(crate) fn create_server_chain(config: &Config) -> Result<ServerChain> {
    let storage = &config.storage;
    let apiextensions = ApiExtensionsServer::new(
        storage.store.clone(),
        &storage.prefix,
        config.resolver.clone(),
    );
    let kube = KubeApiServer::new(config, apiextensions.handler())?;
    apiextensions.set_admission(kube.admission.clone());
    let aggregator = AggregatorServer::new(
        &kube.handler,
        kube.resources.api_services.clone(),
        apiextensions.crds(),
    );
    let mut hooks = kube.hooks;
    hooks.extend(apiextensions.post_start_hooks()?)?;
    hooks.extend(aggregator.post_start_hooks()?)?;
    hooks.extend(crate::controllers::post_start_hooks(
        &config.options.controllers,
        &kube.resources,
        &kube.handler,
        &config.pki,
        config.tokens.clone(),
    )?)?;
    Ok(ServerChain {
        head: kube.handler,
        authorizer: kube.authorization.authorizer,
        bearer_tokens: kube.bearer_tokens,
        hooks,
        health_checks: aggregator.health_checks(),
    })
}
