//! kube-controller-manager's `endpoints` controller: each Service with a selector gets an
//! Endpoints object of its name listing, per port, the addresses of the pods it selects
//! (ready ones in `addresses`, others in `notReadyAddresses`; terminating pods only with
//! `publishNotReadyAddresses`), packed as upstream's `RepackSubsets` packs them (one subset
//! per set of addresses sharing the same ports), at most 1,000 addresses (then annotated
//! `endpoints.kubernetes.io/over-capacity: truncated`), labelled with the Service's labels
//! (and `service.kubernetes.io/headless` when headless). A Service's Endpoints go with it,
//! and at start Endpoints left without a Service are deleted, as upstream's.

use std::collections::BTreeMap;

use kapi_server::informer::{self, Change};
use kapi_server::loopback::LoopbackClient;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    EndpointsSources, HEADLESS_LABEL, find_port, has_cluster_ip, is_ipv6, object_key, pod_ips,
    pod_ready, pod_reference, queue_services_of_changed_pods, selected_pods, selector,
    service_ports, should_pod_be_in_endpoints, should_set_hostname,
};

/// The controller's name (`--controllers`).
pub const ENDPOINTS_CONTROLLER: &str = "endpoints-controller";
/// The most addresses one Endpoints holds.
const MAX_CAPACITY: usize = 1000;
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";
/// The annotation of Endpoints used as leader-election locks, which are not Services'.
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// Starts the controller, writing through `client` (kube-system's `endpoint-controller`)
/// until `stopping`.
pub fn start_endpoints_controller(
    sources: EndpointsSources,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    let followed = sources.services.clone();
    let queue = super::run_synced(
        ENDPOINTS_CONTROLLER,
        followed,
        &sources,
        client,
        &stopping,
        sync,
    );
    queue_services_of_changed_pods(&sources, queue.clone(), stopping.clone());
    // Deleted Endpoints of a live Service are made again; at start, Endpoints without a
    // Service are looked at (and deleted).
    let mut first = true;
    let endpoints = sources.endpoints.clone();
    let notice = move |change: Change<'_>| {
        match change {
            Change::Resync if first => {
                first = false;
                for object in endpoints.cached_list(None) {
                    if object["metadata"]["annotations"][LEADER_ANNOTATION].is_null() {
                        queue.add(&object_key(&object));
                    }
                }
            }
            Change::Event(event) if event.type_ == kapi_server::cacher::EventType::Deleted => {
                queue.add(&crate::keyed::key(
                    event.object.namespace(),
                    event.object.name(),
                ));
            }
            _ => {}
        }
        true
    };
    tokio::spawn(informer::follow(sources.endpoints, stopping, notice));
}

/// Brings the Endpoints of the Service `key` in line with its pods.
async fn sync(
    sources: EndpointsSources,
    client: LoopbackClient,
    key: String,
) -> Result<(), String> {
    let (sources, client, key) = (&sources, &client, key.as_str());
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    let path = format!("/api/v1/namespaces/{namespace}/endpoints");
    let current = sources.endpoints.cached(namespace, name);
    let Some(service) = sources.services.cached(namespace, name) else {
        if current.is_none() {
            return Ok(());
        }
        return match client
            .json(http::Method::DELETE, &format!("{path}/{name}"), None, None)
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if err.code() == 404 => Ok(()),
            Err(err) => Err(err.to_string()),
        };
    };
    if service["spec"]["type"] == "ExternalName" || selector(&service).is_none() {
        return Ok(());
    }
    let subsets = repack(entries(sources, namespace, &service));
    let labels = endpoints_labels(&service);
    if let Some(current) = &current {
        let current_labels = current["metadata"]["labels"].clone();
        let same = current["subsets"].as_array().map_or(&[][..], Vec::as_slice) == subsets
            && without_headless(&current_labels) == without_headless(&labels)
            && current_labels.get(HEADLESS_LABEL).is_some() == labels.get(HEADLESS_LABEL).is_some()
            && capacity_annotation_correct(current, &subsets);
        if same {
            return Ok(());
        }
    }
    let mut endpoints = current.clone().unwrap_or_else(|| {
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": namespace}})
    });
    let mut subsets = subsets;
    let truncated = truncate(&mut subsets);
    set_or_omit(&mut endpoints, "subsets", Value::Array(subsets));
    let mut annotations = endpoints["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    annotations.remove("endpoints.kubernetes.io/last-change-trigger-time");
    match truncated {
        true => annotations.insert(OVER_CAPACITY.into(), "truncated".into()),
        false => annotations.remove(OVER_CAPACITY),
    };
    let metadata = &mut endpoints["metadata"];
    set_or_omit(metadata, "labels", labels);
    set_or_omit(metadata, "annotations", Value::Object(annotations));
    let written = match current {
        None => {
            client
                .json(http::Method::POST, &path, None, Some(&endpoints))
                .await
        }
        Some(_) => {
            let path = format!("{path}/{name}");
            client
                .json(http::Method::PUT, &path, None, Some(&endpoints))
                .await
        }
    };
    match written {
        Ok(_) => Ok(()),
        Err(err) if current.is_none() && namespace_terminating(&err) => Ok(()),
        Err(err) => Err(format!("syncing endpoints of service {key}: {err}")),
    }
}

/// Sets `object[field]` to `value`, or removes the field when `value` is empty (Go's
/// `omitempty`, which upstream's writes have).
fn set_or_omit(object: &mut Value, field: &str, value: Value) {
    let empty = match &value {
        Value::Array(items) => items.is_empty(),
        Value::Object(members) => members.is_empty(),
        _ => false,
    };
    if let Some(object) = object.as_object_mut() {
        match empty {
            true => object.remove(field),
            false => object.insert(field.into(), value),
        };
    }
}

/// Whether a create was refused because the namespace is being deleted.
fn namespace_terminating(err: &kapi_apimachinery::status::ApiError) -> bool {
    let causes = err.status().details.iter().flat_map(|d| &d.causes);
    err.code() == 403
        && causes
            .into_iter()
            .any(|c| c.reason == "NamespaceTerminating")
}

/// The Service's labels, with the headless label when it has no cluster IP.
fn endpoints_labels(service: &Value) -> Value {
    let mut labels = service["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    match has_cluster_ip(service) {
        true => labels.remove(HEADLESS_LABEL),
        false => labels.insert(HEADLESS_LABEL.into(), "".into()),
    };
    Value::Object(labels)
}

fn without_headless(labels: &Value) -> Map<String, Value> {
    let mut labels = labels.as_object().cloned().unwrap_or_default();
    labels.remove(HEADLESS_LABEL);
    labels
}

/// One address of one port, ready or not, before packing.
struct Entry {
    address: Value,
    /// `None` for a headless Service without ports.
    port: Option<Value>,
    ready: bool,
}

/// The address and port entries of the pods `service` selects, as upstream's syncService
/// gathers them.
fn entries(sources: &EndpointsSources, namespace: &str, service: &Value) -> Vec<Entry> {
    let publish_not_ready = service["spec"]["publishNotReadyAddresses"] == true;
    let mut entries = Vec::new();
    for pod in selected_pods(&sources.pods, namespace, service) {
        if !should_pod_be_in_endpoints(&pod, publish_not_ready) {
            continue;
        }
        let Some(address) = address_for(service, &pod) else {
            continue;
        };
        let ready = publish_not_ready || pod_ready(&pod);
        let ports = service_ports(service);
        if ports.is_empty() {
            if service["spec"]["clusterIP"] == "None" {
                entries.push(Entry {
                    address,
                    port: None,
                    ready,
                });
            }
            continue;
        }
        for service_port in ports {
            let Some(number) = find_port(&pod, service_port) else {
                continue;
            };
            let mut port = Map::new();
            if let Some(name) = service_port["name"].as_str().filter(|n| !n.is_empty()) {
                port.insert("name".into(), name.into());
            }
            port.insert("port".into(), number.into());
            port.insert("protocol".into(), service_port["protocol"].clone());
            if let Some(app) = service_port["appProtocol"].as_str() {
                port.insert("appProtocol".into(), app.into());
            }
            entries.push(Entry {
                address: address.clone(),
                port: Some(Value::Object(port)),
                ready,
            });
        }
    }
    entries
}

/// The EndpointAddress of `pod` for `service`: its IP of the Service's first family.
fn address_for(service: &Value, pod: &Value) -> Option<Value> {
    let ips = pod_ips(pod);
    let ipv6 = match service["spec"]["ipFamilies"][0].as_str() {
        Some(family) => family == "IPv6",
        None => match service["spec"]["clusterIP"].as_str() {
            Some(ip) if !ip.is_empty() && ip != "None" => is_ipv6(ip),
            _ => ips.first().is_some_and(|ip| is_ipv6(ip)),
        },
    };
    let ip = ips.into_iter().find(|ip| is_ipv6(ip) == ipv6)?;
    let mut address = Map::new();
    address.insert("ip".into(), ip.into());
    if should_set_hostname(pod, service) {
        address.insert("hostname".into(), pod["spec"]["hostname"].clone());
    }
    address.insert(
        "nodeName".into(),
        pod["spec"]["nodeName"].as_str().unwrap_or_default().into(),
    );
    address.insert("targetRef".into(), pod_reference(pod));
    Some(Value::Object(address))
}

/// An address's IP and pod uid.
type AddressKey = (String, String);
/// The addresses serving a port, each ready or not.
type PortMembers = BTreeMap<AddressKey, bool>;

/// Upstream's `RepackSubsets`: every address mapped to the ports it serves (not ready on
/// one port is not ready), addresses serving the same ports in the same state grouped in
/// one subset; addresses, ports and subsets in a canonical order.
fn repack(entries: Vec<Entry>) -> Vec<Value> {
    // (ip, uid) → the address; port → (address key → ready).
    let mut addresses: BTreeMap<AddressKey, Value> = BTreeMap::new();
    let mut by_port: BTreeMap<String, (Option<Value>, PortMembers)> = BTreeMap::new();
    for entry in entries {
        let key = (
            entry.address["ip"].as_str().unwrap_or_default().to_string(),
            entry.address["targetRef"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        addresses.entry(key.clone()).or_insert(entry.address);
        let port_key = entry.port.as_ref().map_or(String::new(), Value::to_string);
        let (_, ready) = by_port
            .entry(port_key)
            .or_insert((entry.port, BTreeMap::new()));
        let was = ready.entry(key).or_insert(entry.ready);
        *was = *was && entry.ready;
    }
    // The same addresses in the same states share one subset.
    let mut groups: BTreeMap<Vec<(AddressKey, bool)>, Vec<Value>> = BTreeMap::new();
    for (_, (port, ready)) in by_port {
        let group = groups.entry(ready.into_iter().collect()).or_default();
        group.extend(port);
    }
    let mut subsets: Vec<Value> = groups
        .into_iter()
        .map(|(members, mut ports)| {
            let pick = |wanted: bool| -> Vec<Value> {
                let mut picked: Vec<&AddressKey> = members
                    .iter()
                    .filter(|(_, ready)| *ready == wanted)
                    .map(|(key, _)| key)
                    .collect();
                picked.sort();
                picked
                    .into_iter()
                    .map(|key| addresses[key].clone())
                    .collect()
            };
            ports.sort_by_key(Value::to_string);
            let mut subset = Map::new();
            let (ready, not_ready) = (pick(true), pick(false));
            if !ready.is_empty() {
                subset.insert("addresses".into(), Value::Array(ready));
            }
            if !not_ready.is_empty() {
                subset.insert("notReadyAddresses".into(), Value::Array(not_ready));
            }
            if !ports.is_empty() {
                subset.insert("ports".into(), Value::Array(ports));
            }
            Value::Object(subset)
        })
        .collect();
    subsets.sort_by_key(Value::to_string);
    subsets
}

/// The number of addresses of `subsets`, ready and not.
fn address_count(subsets: &[Value]) -> (usize, usize) {
    let count = |subset: &Value, field: &str| subset[field].as_array().map_or(0, Vec::len);
    subsets.iter().fold((0, 0), |(ready, not_ready), subset| {
        (
            ready + count(subset, "addresses"),
            not_ready + count(subset, "notReadyAddresses"),
        )
    })
}

/// Upstream's `capacityAnnotationSetCorrectly`.
fn capacity_annotation_correct(endpoints: &Value, subsets: &[Value]) -> bool {
    let (ready, not_ready) = address_count(subsets);
    ready + not_ready <= MAX_CAPACITY
        && endpoints["metadata"]["annotations"][OVER_CAPACITY].is_null()
}

/// Upstream's `truncateEndpoints`: keeps at most [`MAX_CAPACITY`] addresses, each subset its
/// share (rounded up while room remains), dropping not-ready addresses first. Whether anything was dropped.
fn truncate(subsets: &mut [Value]) -> bool {
    let (ready, not_ready) = address_count(subsets);
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = ready > MAX_CAPACITY;
    let (max, total, field) = match truncate_ready {
        true => (MAX_CAPACITY, ready, "addresses"),
        false => (MAX_CAPACITY - ready, not_ready, "notReadyAddresses"),
    };
    let mut room = max;
    for subset in subsets.iter_mut().filter_map(Value::as_object_mut) {
        let addresses = subset.get_mut(field).and_then(Value::as_array_mut);
        if let Some(addresses) = addresses {
            let share = ((addresses.len() as f64 / total as f64) * max as f64).ceil() as usize;
            addresses.truncate(share.min(room));
            room -= addresses.len();
            if addresses.is_empty() {
                subset.remove(field);
            }
        }
        if truncate_ready {
            subset.remove("notReadyAddresses");
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(ip: &str, uid: &str) -> Value {
        json!({"ip": ip, "nodeName": "", "targetRef": {"kind": "Pod", "uid": uid}})
    }

    fn port(number: i64) -> Option<Value> {
        Some(json!({"port": number, "protocol": "TCP"}))
    }

    fn entry(ip: &str, port: Option<Value>, ready: bool) -> Entry {
        Entry {
            address: address(ip, ip),
            port,
            ready,
        }
    }

    #[test]
    fn subsets_are_repacked_as_upstream() {
        // a serves 80 and 443, b only 80; c is not ready on 443 (so not ready there).
        let packed = repack(vec![
            entry("10.0.0.1", port(80), true),
            entry("10.0.0.1", port(443), true),
            entry("10.0.0.2", port(80), true),
            entry("10.0.0.3", port(80), true),
            entry("10.0.0.3", port(443), false),
        ]);
        assert_eq!(packed.len(), 2, "{packed:?}");
        assert!(
            packed.contains(&json!({"addresses": [address("10.0.0.1", "10.0.0.1")],
            "notReadyAddresses": [address("10.0.0.3", "10.0.0.3")], "ports": [port(443)]}))
        );
        assert!(
            packed.contains(&json!({"addresses": [address("10.0.0.1", "10.0.0.1"),
            address("10.0.0.2", "10.0.0.2"), address("10.0.0.3", "10.0.0.3")],
            "ports": [port(80)]}))
        );
        let headless = repack(vec![entry("10.0.0.9", None, true)]);
        assert_eq!(
            headless,
            [json!({"addresses": [address("10.0.0.9", "10.0.0.9")]})]
        );
    }

    #[test]
    fn over_capacity_keeps_each_subsets_share() {
        let many = |n: usize, base: usize| -> Vec<Value> {
            (0..n)
                .map(|i| {
                    address(
                        &format!("10.1.{}.{}", (base + i) / 250, (base + i) % 250),
                        "u",
                    )
                })
                .collect()
        };
        let mut subsets = vec![
            json!({"addresses": many(900, 0), "notReadyAddresses": many(300, 900)}),
            json!({"addresses": many(50, 1200)}),
        ];
        assert!(truncate(&mut subsets));
        let (ready, not_ready) = address_count(&subsets);
        assert_eq!((ready, not_ready), (950, 50));
        let mut small = vec![json!({"addresses": many(3, 0)})];
        assert!(!truncate(&mut small));
    }
}
