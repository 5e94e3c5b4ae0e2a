//! Resolves Service references (webhooks' `clientConfig.service`) to an address
//! to call, through the Service's Endpoints, as kube-aggregator's endpoint routing does: kapi
//! runs no service proxy, so a ClusterIP would lead nowhere.

use std::sync::{Arc, OnceLock};

use kapi_apiextensions::ServiceResolver;
use kapi_server::endpoints::Served;
use kapi_server::registry::ReadVersion;
use serde_json::Value;

/// Resolves Service references through the built-in API's Services and Endpoints, set once
/// the built-in handler exists (it is built after the servers it delegates to, which hold
/// the resolver already).
#[derive(Default)]
pub struct EndpointsResolver {
    collections: OnceLock<Collections>,
}

/// The served Services and Endpoints.
struct Collections {
    services: Served,
    endpoints: Served,
}

impl EndpointsResolver {
    pub fn new() -> Arc<EndpointsResolver> {
        Arc::new(EndpointsResolver::default())
    }

    /// Sets the served Services and Endpoints that references are resolved through.
    pub fn set_collections(&self, services: Served, endpoints: Served) {
        let _ = self.collections.set(Collections {
            services,
            endpoints,
        });
    }

    /// The `https://host:port` of the Service `namespace`/`name`'s port `port`: an
    /// ExternalName's host, else the first ready address of its Endpoints with the port's
    /// target port.
    async fn endpoint(&self, namespace: &str, name: &str, port: i32) -> Result<String, String> {
        let served = self
            .collections
            .get()
            .ok_or("the built-in API is not ready")?;
        let service = read(&served.services, namespace, name).await?;
        let spec = &service["spec"];
        if spec["type"] == "ExternalName" {
            let host = spec["externalName"].as_str().unwrap_or_default();
            return Ok(format!("https://{host}:{port}"));
        }
        let service_port = spec["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_i64() == Some(i64::from(port)))
            .ok_or_else(|| format!("no service port {port} found for service {name:?}"))?;
        let port_name = service_port["name"].as_str().unwrap_or_default();
        let endpoints = read(&served.endpoints, namespace, name)
            .await
            .map_err(|_| format!("no endpoints available for service {name:?}"))?;
        endpoint_url(&endpoints, port_name)
            .ok_or_else(|| format!("no endpoints available for service {name:?}"))
    }
}

#[async_trait::async_trait]
impl ServiceResolver for EndpointsResolver {
    async fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String> {
        self.endpoint(namespace, name, port).await
    }
}

/// The first address of `endpoints` with the port named `port_name`.
fn endpoint_url(endpoints: &Value, port_name: &str) -> Option<String> {
    endpoints["subsets"].as_array()?.iter().find_map(|subset| {
        let port = subset["ports"]
            .as_array()?
            .iter()
            .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?;
        let ip = subset["addresses"].as_array()?.first()?["ip"].as_str()?;
        let port = port["port"].as_i64()?;
        Some(match ip.contains(':') {
            true => format!("https://[{ip}]:{port}"),
            false => format!("https://{ip}:{port}"),
        })
    })
}

/// The object `namespace`/`name` of `served`, from its watch cache.
async fn read(served: &Served, namespace: &str, name: &str) -> Result<Value, String> {
    let item = served
        .registry
        .get(
            &served.definition.group_resource(),
            namespace,
            name,
            &ReadVersion::Any,
        )
        .await
        .map_err(|err| err.to_string())?;
    item.decode().map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoints_resolve_by_port_name() {
        let endpoints = json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.5"}], "ports": [{"name": "metrics", "port": 9090}]},
            {"addresses": [{"ip": "fd00::5"}], "ports": [{"name": "https", "port": 8443}]},
        ]});
        assert_eq!(
            endpoint_url(&endpoints, "https").as_deref(),
            Some("https://[fd00::5]:8443")
        );
        assert_eq!(
            endpoint_url(&endpoints, "metrics").as_deref(),
            Some("https://10.0.0.5:9090")
        );
        assert_eq!(endpoint_url(&endpoints, "other"), None);
        assert_eq!(endpoint_url(&json!({}), ""), None);
    }
}
