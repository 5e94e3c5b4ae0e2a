//! kube-controller-manager's `endpointslice-mirroring` controller: the Endpoints of a
//! Service without a selector (written by whoever keeps them) are mirrored into
//! EndpointSlices, as upstream's: one slice per address type and set of ports, owned by the
//! Endpoints, with its labels (plus `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io`) and
//! annotations (but the trigger time and kubectl's last applied configuration), each
//! address an endpoint whose `ready` condition says which list it was in, at most 1,000
//! addresses of a subset. Endpoints labelled `endpointslice.kubernetes.io/skip-mirror:
//! "true"`, leader-election locks, and Endpoints of Services with a selector (or none) are
//! not mirrored, and their mirrored slices are deleted.

use std::collections::BTreeMap;
use std::net::IpAddr;

use kapi_server::informer::{self, Change};
use kapi_server::loopback::LoopbackClient;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::reconcile::{Desired, Slices};
use super::{EndpointsSources, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, selector};

/// The controller's name (`--controllers`).
pub const ENDPOINTSLICE_MIRRORING_CONTROLLER: &str = "endpointslice-mirroring-controller";
/// Its value of the managed-by label.
const MANAGER: &str = "endpointslicemirroring-controller.k8s.io";
/// The most addresses of one subset mirrored (`--mirroring-max-endpoints-per-subset`).
const MAX_ENDPOINTS_PER_SUBSET: usize = 1000;
const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
/// Annotations of the Endpoints not copied to its slices.
const NOT_MIRRORED: [&str; 2] = [
    "endpoints.kubernetes.io/last-change-trigger-time",
    "kubectl.kubernetes.io/last-applied-configuration",
];

/// Starts the controller, writing through `client` (kube-system's
/// `endpointslicemirroring-controller`) until `stopping`.
pub fn start_endpointslice_mirroring(
    sources: EndpointsSources,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    let followed = sources.endpoints.clone();
    let queue = super::run_synced(
        ENDPOINTSLICE_MIRRORING_CONTROLLER,
        followed,
        &sources,
        client,
        &stopping,
        sync,
    );
    // A Service that changes (gains or loses its selector, comes or goes) changes whether
    // its Endpoints are mirrored.
    let services_queue = queue.clone();
    let notice = move |change: Change<'_>| {
        if let Change::Event(event) = change {
            services_queue.add(&crate::keyed::key(
                event.object.namespace(),
                event.object.name(),
            ));
        }
        true
    };
    tokio::spawn(informer::follow(
        sources.services.clone(),
        stopping.clone(),
        notice,
    ));
    super::queue_owners_of_changed_slices(&sources, MANAGER, queue, stopping);
}

/// Brings the mirrored slices of the Endpoints `key` in line with it.
async fn sync(
    sources: EndpointsSources,
    client: LoopbackClient,
    key: String,
) -> Result<(), String> {
    let (sources, client, key) = (&sources, &client, key.as_str());
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    let existing = super::managed_slices(&sources.endpoint_slices, namespace, name, MANAGER);
    let endpoints = sources.endpoints.cached(namespace, name);
    let service = sources.services.cached(namespace, name);
    let mirrored = match (&endpoints, &service) {
        (Some(endpoints), Some(service)) => should_mirror(endpoints, service),
        _ => false,
    };
    let (desired, metadata) = match (mirrored, endpoints) {
        (true, Some(endpoints)) => (desired(&endpoints), metadata(&endpoints)),
        _ => (Desired::new(), json!({})),
    };
    if desired.is_empty() && existing.is_empty() {
        return Ok(());
    }
    let slices = Slices {
        client,
        slices: &sources.endpoint_slices,
        namespace,
        existing,
        metadata,
        capacity: MAX_ENDPOINTS_PER_SUBSET,
    };
    slices.reconcile(desired, None).await
}

fn should_mirror(endpoints: &Value, service: &Value) -> bool {
    let meta = &endpoints["metadata"];
    selector(service).is_none()
        && meta["labels"][SKIP_MIRROR_LABEL] != "true"
        && meta["annotations"][LEADER_ANNOTATION].is_null()
}

/// The slices the Endpoints' subsets make.
fn desired(endpoints: &Value) -> Desired {
    let mut desired = Desired::new();
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let ports: Vec<Value> = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|port| {
                let mut mirrored = Map::new();
                mirrored.insert(
                    "name".into(),
                    port["name"].as_str().unwrap_or_default().into(),
                );
                mirrored.insert("protocol".into(), port["protocol"].clone());
                mirrored.insert("port".into(), port["port"].clone());
                if let Some(app) = port["appProtocol"].as_str() {
                    mirrored.insert("appProtocol".into(), app.into());
                }
                Value::Object(mirrored)
            })
            .collect();
        let ports = Value::Array(ports);
        let ready = subset["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| (a, true));
        let not_ready = subset["notReadyAddresses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| (a, false));
        for (address, ready) in ready.chain(not_ready).take(MAX_ENDPOINTS_PER_SUBSET) {
            let Some(address_type) = address_type(address["ip"].as_str().unwrap_or_default())
            else {
                continue;
            };
            let slot = desired
                .entry((address_type.to_string(), ports.to_string()))
                .or_insert_with(|| (ports.clone(), Vec::new()));
            slot.1.push(endpoint(address, ready));
        }
    }
    desired
}

fn address_type(ip: &str) -> Option<&'static str> {
    match ip.parse::<IpAddr>().ok()? {
        IpAddr::V4(_) => Some("IPv4"),
        IpAddr::V6(_) => Some("IPv6"),
    }
}

/// Upstream's `addressToEndpoint`.
fn endpoint(address: &Value, ready: bool) -> Value {
    let mut endpoint = Map::new();
    endpoint.insert("addresses".into(), json!([address["ip"]]));
    endpoint.insert("conditions".into(), json!({"ready": ready}));
    if let Some(hostname) = address["hostname"].as_str().filter(|h| !h.is_empty()) {
        endpoint.insert("hostname".into(), hostname.into());
    }
    if !address["targetRef"].is_null() {
        endpoint.insert("targetRef".into(), address["targetRef"].clone());
    }
    if let Some(node) = address["nodeName"].as_str() {
        endpoint.insert("nodeName".into(), node.into());
    }
    Value::Object(endpoint)
}

/// What every mirrored slice of the Endpoints carries.
fn metadata(endpoints: &Value) -> Value {
    let meta = &endpoints["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let mut labels: BTreeMap<String, Value> = meta["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    labels.insert(SERVICE_NAME_LABEL.into(), name.into());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGER.into());
    let annotations: BTreeMap<String, Value> = meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !NOT_MIRRORED.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    json!({
        "generateName": super::slice_prefix(name),
        "labels": labels,
        "annotations": annotations,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Endpoints", "name": name,
            "uid": meta["uid"], "controller": true, "blockOwnerDeletion": true}],
    })
}
