//! What the aggregator knows of each APIService to route its requests (upstream's
//! proxyHandler handling info): whether it is local or names a Service, the transport to
//! that Service (built once per spec, its connections pooled), the addresses the Service
//! leads to, and whether it is available. Kept from the watch caches of the APIServices,
//! Services, EndpointSlices and Endpoints, the table swapped whole on every change, so a
//! request reads it without waiting or decoding anything.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine;
use kapi_server::endpoints::Served;
use kapi_server::informer;
use kapi_server::proxy::{ProxyTls, ProxyTransport};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::resolver::ServiceResolver;

/// The Service an APIService names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: i32,
}

/// One APIService, as requests are routed by it.
pub(crate) struct Backend {
    /// The APIService's name (`<version>.<group>`).
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority_minimum: i64,
    pub version_priority: i64,
    /// The Service requests are proxied to; none for a local APIService.
    pub service: Option<ServiceRef>,
    /// The transport to the Service, or why it could not be built.
    pub transport: Result<Arc<ProxyTransport>, String>,
    /// The addresses (`host:port`) the Service leads to, or why there are none.
    pub addresses: Result<Vec<String>, String>,
    /// Whether its `Available` condition is true.
    pub available: bool,
}

/// The APIServices by name.
pub(crate) type Table = BTreeMap<String, Arc<Backend>>;

/// The routing table, kept current.
pub(crate) struct Backends {
    table: RwLock<Arc<Table>>,
    /// The aggregator's client certificate and key (PEM), presented to every backend.
    client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// Where Services lead.
    resolver: ServiceResolver,
    /// The transports built so far, by APIService name, with the spec they were built for.
    transports: Mutex<HashMap<String, (Value, Arc<ProxyTransport>)>>,
    /// Bumped whenever an APIService changes (not when only addresses do), for those that
    /// follow them (discovery, OpenAPI).
    changes: watch::Sender<u64>,
}

impl Backends {
    pub(crate) fn new(
        client_cert: Option<(Vec<u8>, Vec<u8>)>,
        resolver: ServiceResolver,
    ) -> Arc<Backends> {
        Arc::new(Backends {
            table: RwLock::new(Arc::default()),
            client_cert,
            resolver,
            transports: Mutex::new(HashMap::new()),
            changes: watch::channel(0).0,
        })
    }

    /// The current table.
    pub(crate) fn table(&self) -> Arc<Table> {
        self.table.read().clone()
    }

    /// The APIService of `group`/`version` if it names a Service.
    pub(crate) fn remote(&self, group: &str, version: &str) -> Option<Arc<Backend>> {
        let table = self.table.read();
        let backend = table.get(&format!("{version}.{group}"))?;
        backend.service.is_some().then(|| backend.clone())
    }

    /// How many times the APIServices changed (addresses aside).
    pub(crate) fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    /// A receiver told of every change of the table.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Keeps the table from the caches of `api_services` and of the resolver's collections
    /// until `stopping`.
    pub(crate) fn follow(self: &Arc<Self>, api_services: Served, stopping: CancellationToken) {
        let changed = Arc::new(Notify::new());
        let followed = [
            api_services.clone(),
            self.resolver.services.clone(),
            self.resolver.endpoint_slices.clone(),
            self.resolver.endpoints.clone(),
        ];
        informer::notify_on_changes(followed, &changed, &stopping);
        let backends = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopping.cancelled() => return,
                    _ = changed.notified() => {}
                }
                // What a backend is made of: the spec, the status and the name.
                backends.refresh(&api_services.cached_list_parts(&["spec", "status"], &["name"]));
            }
        });
    }

    /// Rebuilds the table from the APIServices `items`.
    pub(crate) fn refresh(&self, items: &[Value]) {
        let mut transports = self.transports.lock();
        let mut table = Table::new();
        for item in items {
            let backend = self.backend_of(item, &mut transports);
            table.insert(backend.name.clone(), Arc::new(backend));
        }
        transports.retain(|name, _| table.contains_key(name));
        let previous = std::mem::replace(&mut *self.table.write(), Arc::new(table));
        if !same_api_services(&previous, &self.table()) {
            self.changes.send_modify(|generation| *generation += 1);
        }
    }

    /// The backend of one APIService, reusing the transport built for the same spec.
    fn backend_of(
        &self,
        item: &Value,
        transports: &mut HashMap<String, (Value, Arc<ProxyTransport>)>,
    ) -> Backend {
        let spec = &item["spec"];
        let name = kapi_server::object::name(item).to_string();
        let service = spec["service"].as_object().map(|service| ServiceRef {
            namespace: text(&service["namespace"]),
            name: text(&service["name"]),
            port: service["port"].as_i64().unwrap_or(443) as i32,
        });
        let transport = match &service {
            None => Err(String::new()),
            Some(service) => match transports.get(&name) {
                Some((built_for, transport)) if built_for == spec => Ok(transport.clone()),
                _ => {
                    let built = self.transport(spec, service).map(Arc::new);
                    if let Ok(transport) = &built {
                        transports.insert(name.clone(), (spec.clone(), transport.clone()));
                    }
                    built
                }
            },
        };
        let addresses = match &service {
            None => Err(String::new()),
            Some(s) => self.resolver.resolve_all(&s.namespace, &s.name, s.port),
        };
        let conditions = item["status"]["conditions"].as_array();
        let available = conditions
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        Backend {
            name,
            group: text(&spec["group"]),
            version: text(&spec["version"]),
            group_priority_minimum: spec["groupPriorityMinimum"].as_i64().unwrap_or_default(),
            version_priority: spec["versionPriority"].as_i64().unwrap_or_default(),
            service,
            transport,
            addresses,
            available,
        }
    }

    /// The transport of an APIService's spec (upstream's BuildTransportConfig): its
    /// caBundle or `insecureSkipTLSVerify`, the Service's DNS name verified, the
    /// aggregator's client certificate presented.
    fn transport(&self, spec: &Value, service: &ServiceRef) -> Result<ProxyTransport, String> {
        let ca_bundle = spec["caBundle"]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        let server_name = format!("{}.{}.svc", service.name, service.namespace);
        ProxyTransport::new(&ProxyTls {
            ca_bundle: &ca_bundle,
            insecure: spec["insecureSkipTLSVerify"] == true,
            server_name: &server_name,
            client_cert: self.client_cert.as_ref(),
        })
    }
}

/// Whether two tables route the same APIServices the same way (addresses aside).
fn same_api_services(a: &Table, b: &Table) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((name_a, a), (name_b, b))| {
            name_a == name_b
                && a.service == b.service
                && a.available == b.available
                && a.group_priority_minimum == b.group_priority_minimum
                && a.version_priority == b.version_priority
                && match (&a.transport, &b.transport) {
                    (Ok(x), Ok(y)) => Arc::ptr_eq(x, y),
                    (Err(x), Err(y)) => x == y,
                    _ => false,
                }
        })
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}
