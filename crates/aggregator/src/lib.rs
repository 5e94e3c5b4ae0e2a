//! kapi's aggregator, the head of kube-apiserver's server chain (k8s.io/kube-aggregator).
//!
//! Every group version the servers behind the aggregator serve has an APIService without a
//! Service (`kubectl get apiservices` lists it as `Local`, `Available`), registered as
//! kube-apiserver registers them ([`local`]'s wanted set, kept by the autoregister
//! controller) and marked available as upstream's local availability controller marks them.
//! APIServices naming a Service route their group version to it: requests are proxied
//! ([`handler`], through kapi-server's front-proxy transport), their availability checked
//! ([`remote`]), and their discovery and OpenAPI merged into the chain's ([`merge`], from the
//! documents [`remote_docs`] fetches).

mod autoregister;
mod available;
mod backends;
mod completion;
mod handler;
mod local;
mod merge;
mod metrics;
mod remote;
mod remote_docs;
mod resolver;

use std::sync::Arc;

use kapi_server::endpoints::{ApiHandler, Served};
use kapi_server::{HealthCheck, PostStartHooks, ServerError};

pub use handler::AggregatorHandler;
pub use local::{AUTOMANAGED_LABEL, GROUP};
pub use metrics::AvailabilityMetrics;
pub use resolver::{Routing, ServiceResolver};

/// Who the aggregator is to backends when it asks them itself (its availability checks, and
/// the discovery and OpenAPI it fetches), as upstream's: `system:kube-aggregator` of
/// `system:masters`, so a backend always lets it in.
fn aggregator_user() -> kapi_server::UserInfo {
    kapi_server::UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..kapi_server::UserInfo::default()
    }
}

/// What the aggregator is built from.
pub struct AggregatorConfig {
    /// The APIService resource.
    pub api_services: Served,
    /// The CustomResourceDefinition resource, whose served versions get local APIServices.
    pub crds: Served,
    /// Where Services lead.
    pub resolver: ServiceResolver,
    /// The client certificate and key (PEM) presented to extension API servers
    /// (`--proxy-client-cert-file`, `--proxy-client-key-file`).
    pub proxy_client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

/// The aggregator of a server chain.
pub struct AggregatorServer {
    config: AggregatorConfig,
    delegate: ApiHandler,
    built_in: local::Wanted,
    backends: Arc<backends::Backends>,
    documents: Arc<remote_docs::RemoteDocuments>,
    merged: Arc<handler::MergedCache>,
    metrics: AvailabilityMetrics,
}

impl AggregatorServer {
    /// The aggregator in front of `delegate` (the chain's kube-apiserver).
    pub fn new(delegate: &ApiHandler, config: AggregatorConfig) -> AggregatorServer {
        AggregatorServer {
            built_in: local::built_in(&delegate.chain_definitions()),
            backends: backends::Backends::new(
                config.proxy_client_cert.clone(),
                config.resolver.clone(),
            ),
            documents: Arc::default(),
            merged: Arc::default(),
            metrics: AvailabilityMetrics::default(),
            delegate: delegate.clone(),
            config,
        }
    }

    /// The head handler of the chain: proxies remote group versions, merges discovery and
    /// OpenAPI, and hands everything else to the delegate.
    pub fn handler(&self) -> AggregatorHandler {
        AggregatorHandler {
            delegate: self.delegate.clone(),
            backends: self.backends.clone(),
            documents: self.documents.clone(),
            merged: self.merged.clone(),
        }
    }

    /// The availability metric, to register with the server's metrics.
    pub fn metrics(&self) -> &AvailabilityMetrics {
        &self.metrics
    }

    /// The aggregator's boot-sequence health check, for `/healthz`, `/livez` and `/readyz`:
    /// `autoregister-completion`, healthy once every built-in group version's APIService
    /// has been seen available.
    pub fn health_checks(&self) -> Vec<HealthCheck> {
        let names = self.built_in.keys().cloned().collect();
        vec![completion::check(self.config.api_services.clone(), names)]
    }

    /// The aggregator's post-start hooks, by upstream's names: the autoregistration of the
    /// local APIServices, their availability, the routing of remote ones with their
    /// availability checks, and the fetching of their discovery and OpenAPI.
    pub fn post_start_hooks(&self) -> Result<PostStartHooks, ServerError> {
        let mut hooks = PostStartHooks::default();
        let autoregister = autoregister::AutoRegister {
            api_services: self.config.api_services.clone(),
            crds: self.config.crds.clone(),
            built_in: self.built_in.clone(),
        };
        hooks.add(
            "kube-apiserver-autoregistration",
            move |context| async move {
                autoregister.start(context.stopping);
                Ok(())
            },
        )?;
        let api_services = self.config.api_services.clone();
        hooks.add(
            "apiservice-status-local-available-controller",
            move |context| async move {
                available::start(api_services, context.stopping);
                Ok(())
            },
        )?;
        let backends = self.backends.clone();
        let api_services = self.config.api_services.clone();
        let documents = self.documents.clone();
        hooks.add(
            "apiservice-registration-controller",
            move |context| async move {
                backends.follow(api_services, context.stopping.clone());
                documents.start(backends, context.stopping);
                Ok(())
            },
        )?;
        let remote = remote::RemoteAvailability {
            api_services: self.config.api_services.clone(),
            resolver: self.config.resolver.clone(),
            backends: self.backends.clone(),
            metrics: self.metrics.clone(),
        };
        hooks.add(
            "apiservice-status-remote-available-controller",
            move |context| async move {
                remote.start(context.stopping);
                Ok(())
            },
        )?;
        Ok(hooks)
    }
}
