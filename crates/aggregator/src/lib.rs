//! kapi's aggregator, the head of kube-apiserver's server chain (k8s.io/kube-aggregator).
//!
//! Built so far: the local APIServices. Every group version the servers behind the
//! aggregator serve has an APIService without a Service (`kubectl get apiservices` lists it
//! as `Local`, `Available`), registered as kube-apiserver registers them ([`local`]'s
//! wanted set, kept by the autoregister controller) and marked available as upstream's
//! local availability controller marks them. Proxying to APIServices that name a Service,
//! their availability checks, and the merged discovery and OpenAPI are still to come.

mod autoregister;
mod available;
mod completion;
mod local;

use kapi_server::endpoints::{ApiHandler, Served};
use kapi_server::{HealthCheck, PostStartHooks, ServerError};

pub use local::{AUTOMANAGED_LABEL, GROUP};

/// The aggregator of a server chain: the APIServices it keeps for the chain behind it.
pub struct AggregatorServer {
    api_services: Served,
    crds: Served,
    built_in: local::Wanted,
}

impl AggregatorServer {
    /// The aggregator in front of `delegate` (the chain's kube-apiserver), keeping
    /// `api_services` (the APIService resource) with a local APIService for each group
    /// version the chain serves and for each served version of `crds`.
    pub fn new(delegate: &ApiHandler, api_services: Served, crds: Served) -> AggregatorServer {
        AggregatorServer {
            api_services,
            crds,
            built_in: local::built_in(&delegate.chain_definitions()),
        }
    }

    /// The aggregator's boot-sequence health check, for `/healthz`, `/livez` and `/readyz`:
    /// `autoregister-completion`, healthy once every built-in group version's APIService
    /// has been seen available.
    pub fn health_checks(&self) -> Vec<HealthCheck> {
        let names = self.built_in.keys().cloned().collect();
        vec![completion::check(self.api_services.clone(), names)]
    }

    /// The aggregator's post-start hooks, by upstream's names: the autoregistration of the
    /// local APIServices and their availability.
    pub fn post_start_hooks(&self) -> Result<PostStartHooks, ServerError> {
        let mut hooks = PostStartHooks::default();
        let autoregister = autoregister::AutoRegister {
            api_services: self.api_services.clone(),
            crds: self.crds.clone(),
            built_in: self.built_in.clone(),
        };
        hooks.add(
            "kube-apiserver-autoregistration",
            move |context| async move {
                autoregister.start(context.stopping);
                Ok(())
            },
        )?;
        let api_services = self.api_services.clone();
        hooks.add(
            "apiservice-status-local-available-controller",
            move |context| async move {
                available::start(api_services, context.stopping);
                Ok(())
            },
        )?;
        Ok(hooks)
    }
}
