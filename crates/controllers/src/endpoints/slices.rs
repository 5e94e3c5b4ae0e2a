//! kube-controller-manager's `endpointslice` controller: each Service with a selector gets
//! EndpointSlices (named `<service>-<random>`, owned by the Service, labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
//! endpointslice-controller.k8s.io` besides the Service's labels) listing, per IP family
//! of the Service and per set of ports, the pods it selects: their addresses of that
//! family, their `ready`/`serving`/`terminating` conditions as upstream computes them
//! (terminating pods stay, not ready unless `publishNotReadyAddresses`), node, zone (the
//! node's `topology.kubernetes.io/zone`) and hostname; at most 100 endpoints a slice. A
//! Service without endpoints keeps one empty slice, as upstream's. Slices of a deleted
//! Service go with it through their owner reference (the garbage collector).

use std::collections::BTreeMap;

use kapi_server::loopback::LoopbackClient;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::reconcile::{Desired, Slices};
use super::{
    EndpointsSources, HEADLESS_LABEL, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, find_port,
    has_cluster_ip, is_ipv6, pod_ips, pod_ready, pod_reference, queue_services_of_changed_pods,
    selected_pods, selector, service_ports, should_pod_be_in_endpoints, should_set_hostname,
};

/// The controller's name (`--controllers`).
pub const ENDPOINTSLICE_CONTROLLER: &str = "endpointslice-controller";
/// Its value of the managed-by label.
const MANAGER: &str = "endpointslice-controller.k8s.io";
/// The most endpoints in one slice (`--max-endpoints-per-slice`).
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// Starts the controller, writing through `client` (kube-system's
/// `endpointslice-controller`) until `stopping`.
pub fn start_endpointslice_controller(
    sources: EndpointsSources,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    let followed = sources.services.clone();
    let queue = super::run_synced(
        ENDPOINTSLICE_CONTROLLER,
        followed,
        &sources,
        client,
        &stopping,
        sync,
    );
    queue_services_of_changed_pods(&sources, queue.clone(), stopping.clone());
    super::queue_owners_of_changed_slices(&sources, MANAGER, queue, stopping);
}

/// Brings the slices of the Service `key` in line with its pods.
async fn sync(
    sources: EndpointsSources,
    client: LoopbackClient,
    key: String,
) -> Result<(), String> {
    let (sources, client, key) = (&sources, &client, key.as_str());
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    let Some(service) = sources.services.cached(namespace, name) else {
        return Ok(());
    };
    if service["spec"]["type"] == "ExternalName" || selector(&service).is_none() {
        return Ok(());
    }
    let address_types = address_types(&service);
    let mut desired = Desired::new();
    let publish_not_ready = service["spec"]["publishNotReadyAddresses"] == true;
    let mut skipped = Vec::new();
    for pod in selected_pods(&sources.pods, namespace, &service) {
        if !should_pod_be_in_endpoints(&pod, true) {
            continue;
        }
        // A pod whose node does not exist is left out (and the Service looked at again
        // later), unless its address is to be published regardless, as upstream.
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        if !publish_not_ready && sources.nodes.cached("", node).is_none() {
            let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
            skipped.push(format!(
                "skipping Pod {pod_name} for Service {key}: Node {node} Not Found"
            ));
            continue;
        }
        let ports = endpoint_ports(&service, &pod);
        for address_type in &address_types {
            let Some(endpoint) = endpoint(sources, &service, &pod, address_type) else {
                continue;
            };
            let slot = desired
                .entry((address_type.clone(), ports.to_string()))
                .or_insert_with(|| (ports.clone(), Vec::new()));
            slot.1.push(endpoint);
        }
    }
    let existing = super::managed_slices(&sources.endpoint_slices, namespace, name, MANAGER);
    let placeholder = match service["spec"]["ipFamilies"][0].as_str() {
        Some("IPv6") => "IPv6",
        Some(_) => "IPv4",
        None if service["spec"]["clusterIP"].as_str().is_some_and(is_ipv6) => "IPv6",
        None => "IPv4",
    };
    let slices = Slices {
        client,
        slices: &sources.endpoint_slices,
        namespace,
        existing,
        metadata: metadata(&service),
        capacity: MAX_ENDPOINTS_PER_SLICE,
    };
    slices.reconcile(desired, Some(placeholder)).await?;
    match skipped.is_empty() {
        true => Ok(()),
        false => Err(skipped.join("; ")),
    }
}

/// The address types of a Service's slices: its IP families, else its cluster IP's, else
/// (a headless Service without families) both.
fn address_types(service: &Value) -> Vec<String> {
    let families: Vec<String> = service["spec"]["ipFamilies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|family| family.as_str().map(str::to_string))
        .collect();
    if !families.is_empty() {
        return families;
    }
    match service["spec"]["clusterIP"].as_str() {
        Some(ip) if has_cluster_ip(service) => {
            vec![if is_ipv6(ip) { "IPv6" } else { "IPv4" }.to_string()]
        }
        _ => vec!["IPv4".into(), "IPv6".into()],
    }
}

/// The ports of `pod` the Service's ports lead to, as slices list them.
fn endpoint_ports(service: &Value, pod: &Value) -> Value {
    let ports: Vec<Value> = service_ports(service)
        .iter()
        .filter_map(|service_port| {
            let number = find_port(pod, service_port)?;
            let mut port = Map::new();
            port.insert(
                "name".into(),
                service_port["name"].as_str().unwrap_or_default().into(),
            );
            port.insert("protocol".into(), service_port["protocol"].clone());
            port.insert("port".into(), number.into());
            if let Some(app) = service_port["appProtocol"].as_str() {
                port.insert("appProtocol".into(), app.into());
            }
            Some(Value::Object(port))
        })
        .collect();
    Value::Array(ports)
}

/// The endpoint of `pod` in a slice of `address_type`, if it has an address of that type.
fn endpoint(
    sources: &EndpointsSources,
    service: &Value,
    pod: &Value,
    address_type: &str,
) -> Option<Value> {
    let ipv6 = address_type == "IPv6";
    let addresses: Vec<String> = pod_ips(pod)
        .into_iter()
        .filter(|ip| is_ipv6(ip) == ipv6)
        .collect();
    if addresses.is_empty() {
        return None;
    }
    let publish_not_ready = service["spec"]["publishNotReadyAddresses"] == true;
    let serving = pod_ready(pod);
    let terminating = !pod["metadata"]["deletionTimestamp"].is_null();
    let ready = publish_not_ready || (serving && !terminating);
    let mut endpoint = Map::new();
    endpoint.insert("addresses".into(), json!(addresses));
    endpoint.insert(
        "conditions".into(),
        json!({"ready": ready, "serving": serving, "terminating": terminating}),
    );
    if should_set_hostname(pod, service) {
        endpoint.insert("hostname".into(), pod["spec"]["hostname"].clone());
    }
    endpoint.insert("targetRef".into(), pod_reference(pod));
    if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        endpoint.insert("nodeName".into(), node.into());
        let zone = sources.nodes.cached("", node).and_then(|node| {
            node["metadata"]["labels"]["topology.kubernetes.io/zone"]
                .as_str()
                .filter(|zone| !zone.is_empty())
                .map(str::to_string)
        });
        if let Some(zone) = zone {
            endpoint.insert("zone".into(), zone.into());
        }
    }
    Some(Value::Object(endpoint))
}

/// What every slice of the Service carries: its labels (upstream's
/// `setEndpointSliceLabels`), its owner reference, its name prefix.
fn metadata(service: &Value) -> Value {
    let meta = &service["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let mut labels: BTreeMap<String, Value> = meta["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| {
            ![SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL].contains(&key.as_str())
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if !has_cluster_ip(service) {
        labels.insert(HEADLESS_LABEL.into(), "".into());
    }
    labels.insert(SERVICE_NAME_LABEL.into(), name.into());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGER.into());
    json!({
        "generateName": super::slice_prefix(name),
        "labels": labels,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name,
            "uid": meta["uid"], "controller": true, "blockOwnerDeletion": true}],
    })
}
