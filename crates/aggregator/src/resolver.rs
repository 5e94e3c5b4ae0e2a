//! Where a Service reference leads (upstream's service resolvers, k8s.io/apiserver's
//! util/proxy): with endpoint routing (`--enable-aggregator-routing`, kapi's default) to a
//! ready endpoint of the Service, read from its EndpointSlices and, where it has none, its
//! Endpoints (kapi runs no EndpointSlice mirroring yet); with cluster routing to its
//! ClusterIP. An ExternalName Service leads to its external name either way. APIService
//! proxying and webhook calls resolve through the same [`ServiceResolver`].

use kapi_server::endpoints::Served;
use rand::seq::IndexedRandom;
use serde_json::Value;

/// How Services are reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// At an endpoint's address (upstream's endpoint routing).
    Endpoints,
    /// At the Service's ClusterIP (which needs a service proxy on the host).
    ClusterIp,
}

/// Resolves Service references through the served Services, EndpointSlices and Endpoints.
#[derive(Clone)]
pub struct ServiceResolver {
    pub(crate) services: Served,
    pub(crate) endpoint_slices: Served,
    pub(crate) endpoints: Served,
    pub(crate) routing: Routing,
}

impl ServiceResolver {
    /// A resolver over the given collections, routing as `routing` says.
    pub fn new(
        services: Served,
        endpoint_slices: Served,
        endpoints: Served,
        routing: Routing,
    ) -> Self {
        ServiceResolver {
            services,
            endpoint_slices,
            endpoints,
            routing,
        }
    }

    /// Every address (`host:port`) the Service `namespace`/`name`'s port `port` leads to;
    /// an error in upstream's words when there is none.
    pub fn resolve_all(
        &self,
        namespace: &str,
        name: &str,
        port: i32,
    ) -> Result<Vec<String>, String> {
        let service = self
            .services
            .cached(namespace, name)
            .ok_or_else(|| format!("service \"{name}\" not found"))?;
        let spec = &service["spec"];
        if spec["type"] == "ExternalName" {
            let host = spec["externalName"].as_str().unwrap_or_default();
            return Ok(vec![join_host_port(host, i64::from(port))]);
        }
        let port_name = service_port_name(&service, port)
            .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
        if self.routing == Routing::ClusterIp {
            return match spec["clusterIP"].as_str() {
                Some(ip) if !ip.is_empty() && ip != "None" => {
                    Ok(vec![join_host_port(ip, i64::from(port))])
                }
                _ => Err(format!("service \"{name}\" has no cluster IP")),
            };
        }
        let addresses = self.endpoint_addresses(namespace, name, port_name);
        let addresses = addresses.unwrap_or_default();
        match addresses.is_empty() {
            true => Err(format!("no endpoints available for service \"{name}\"")),
            false => Ok(addresses),
        }
    }

    /// The ready addresses of the Service `namespace`/`name`'s port named `port_name`: from
    /// its EndpointSlices, or from its Endpoints when it has no EndpointSlice; `None` when it
    /// has neither.
    pub(crate) fn endpoint_addresses(
        &self,
        namespace: &str,
        name: &str,
        port_name: &str,
    ) -> Option<Vec<String>> {
        let slices: Vec<Value> = self
            .endpoint_slices
            .cached_list(Some(namespace))
            .into_iter()
            .filter(|slice| slice["metadata"]["labels"]["kubernetes.io/service-name"] == name)
            .collect();
        match slices.is_empty() {
            false => Some(slice_addresses(&slices, port_name)),
            true => self
                .endpoints
                .cached(namespace, name)
                .map(|endpoints| endpoints_addresses(&endpoints, port_name)),
        }
    }

    /// One address of [`resolve_all`](Self::resolve_all), chosen at random as upstream
    /// spreads requests over the endpoints.
    pub fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String> {
        Ok(pick(&self.resolve_all(namespace, name, port)?))
    }
}

/// One of `addresses`, at random, as upstream spreads requests over a Service's endpoints.
pub(crate) fn pick(addresses: &[String]) -> String {
    addresses
        .choose(&mut rand::rng())
        .cloned()
        .unwrap_or_default()
}

/// The name of the port `port` of the Service `service` ("" when unnamed); `None` when the
/// Service has no such port.
pub(crate) fn service_port_name(service: &Value, port: i32) -> Option<&str> {
    let ports = service["spec"]["ports"].as_array()?;
    let found = ports
        .iter()
        .find(|p| p["port"].as_i64() == Some(i64::from(port)))?;
    Some(found["name"].as_str().unwrap_or_default())
}

#[async_trait::async_trait]
impl kapi_server::webhook_client::ServiceResolver for ServiceResolver {
    async fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String> {
        let address = ServiceResolver::resolve(self, namespace, name, port)?;
        Ok(format!("https://{address}"))
    }
}

/// The ready endpoints of EndpointSlices with the port named `port_name`.
fn slice_addresses(slices: &[Value], port_name: &str) -> Vec<String> {
    let mut addresses = Vec::new();
    for slice in slices {
        if !matches!(slice["addressType"].as_str(), Some("IPv4" | "IPv6")) {
            continue;
        }
        let ports = slice["ports"].as_array().into_iter().flatten();
        let port = ports
            .filter(|p| p["name"].as_str().unwrap_or_default() == port_name)
            .find_map(|p| p["port"].as_i64());
        let Some(port) = port else { continue };
        for endpoint in slice["endpoints"].as_array().into_iter().flatten() {
            if endpoint["conditions"]["ready"] == false {
                continue;
            }
            if let Some(ip) = endpoint["addresses"][0].as_str() {
                addresses.push(join_host_port(ip, port));
            }
        }
    }
    addresses
}

/// The ready addresses of Endpoints with the port named `port_name`.
fn endpoints_addresses(endpoints: &Value, port_name: &str) -> Vec<String> {
    let mut addresses = Vec::new();
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let ports = subset["ports"].as_array().into_iter().flatten();
        let port = ports
            .filter(|p| p["name"].as_str().unwrap_or_default() == port_name)
            .find_map(|p| p["port"].as_i64());
        let Some(port) = port else { continue };
        for address in subset["addresses"].as_array().into_iter().flatten() {
            if let Some(ip) = address["ip"].as_str() {
                addresses.push(join_host_port(ip, port));
            }
        }
    }
    addresses
}

/// `host:port`, with an IPv6 host in brackets (Go's net.JoinHostPort).
fn join_host_port(host: &str, port: i64) -> String {
    match host.contains(':') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_slices_give_ready_endpoints_of_the_named_port() {
        let slices = [
            json!({"addressType": "IPv4", "ports": [{"name": "https", "port": 8443}],
                "endpoints": [{"addresses": ["10.0.0.5"]},
                    {"addresses": ["10.0.0.6"], "conditions": {"ready": false}}]}),
            json!({"addressType": "IPv6", "ports": [{"name": "https", "port": 8443}],
                "endpoints": [{"addresses": ["fd00::5"], "conditions": {"ready": true}}]}),
            json!({"addressType": "FQDN", "ports": [{"name": "https", "port": 8443}],
                "endpoints": [{"addresses": ["a.example"]}]}),
            json!({"addressType": "IPv4", "ports": [{"name": "metrics", "port": 9090}],
                "endpoints": [{"addresses": ["10.0.0.7"]}]}),
        ];
        assert_eq!(
            slice_addresses(&slices, "https"),
            ["10.0.0.5:8443", "[fd00::5]:8443"]
        );
        assert_eq!(slice_addresses(&slices, "metrics"), ["10.0.0.7:9090"]);
        assert!(slice_addresses(&slices, "other").is_empty());
    }

    #[test]
    fn endpoints_give_their_addresses_of_the_named_port() {
        let endpoints = json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.5"}], "ports": [{"name": "metrics", "port": 9090}]},
            {"addresses": [{"ip": "fd00::5"}], "ports": [{"name": "https", "port": 8443}]},
        ]});
        assert_eq!(endpoints_addresses(&endpoints, "https"), ["[fd00::5]:8443"]);
        assert_eq!(
            endpoints_addresses(&endpoints, "metrics"),
            ["10.0.0.5:9090"]
        );
        assert!(endpoints_addresses(&json!({}), "").is_empty());
    }
}
