//! Resolves Service references (webhooks' `clientConfig.service`) through the aggregator's
//! [`ServiceResolver`], as kube-apiserver hands its webhooks the aggregator's resolver: kapi
//! runs no service proxy, so by default a reference leads to one of the Service's endpoints.

use std::sync::{Arc, OnceLock};

use kapi_aggregator::{Routing, ServiceResolver};

use crate::builtin_resources::BuiltinResources;
use crate::options::ServeOptions;

/// The chain's Service resolver over the built-in Services, EndpointSlices and Endpoints,
/// routing as `--enable-aggregator-routing` says.
pub(crate) fn service_resolver(
    options: &ServeOptions,
    resources: &BuiltinResources,
) -> ServiceResolver {
    let routing = match options.enable_aggregator_routing {
        true => Routing::Endpoints,
        false => Routing::ClusterIp,
    };
    ServiceResolver::new(
        resources.services.clone(),
        resources.endpoint_slices.clone(),
        resources.endpoints.clone(),
        routing,
    )
}

/// The resolver of the server chain, set once the built-in handler exists (it is built
/// after the servers it delegates to, which hold this already).
#[derive(Default)]
pub struct EndpointsResolver {
    resolver: OnceLock<ServiceResolver>,
}

impl EndpointsResolver {
    pub fn new() -> Arc<EndpointsResolver> {
        Arc::new(EndpointsResolver::default())
    }

    /// Sets the resolver references are resolved through.
    pub fn set(&self, resolver: ServiceResolver) {
        let _ = self.resolver.set(resolver);
    }
}

#[async_trait::async_trait]
impl kapi_apiextensions::ServiceResolver for EndpointsResolver {
    async fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String> {
        let resolver = self.resolver.get().ok_or("the built-in API is not ready")?;
        kapi_apiextensions::ServiceResolver::resolve(resolver, namespace, name, port).await
    }
}
