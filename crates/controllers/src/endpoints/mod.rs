//! kube-controller-manager's endpoint controllers: the `endpoints` controller keeps each
//! selecting Service's Endpoints (`controller.rs`), the `endpointslice` controller its
//! EndpointSlices (`slices.rs`), both from the Pods the Service selects and their status as
//! a kubelet reports it (IPs, readiness, termination); the `endpointslice-mirroring`
//! controller mirrors the Endpoints of Services without a selector into EndpointSlices
//! (`mirroring.rs`). This module holds what they read alike: which pods a Service selects,
//! which of them are endpoints, and the port a Service port leads to on a pod.

mod controller;
mod mirroring;
mod reconcile;
mod slices;

use std::net::IpAddr;
use std::sync::Arc;

use kapi_server::endpoints::Served;
use kapi_server::informer::{self, Change};
use kapi_server::loopback::LoopbackClient;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use controller::{ENDPOINTS_CONTROLLER, start_endpoints_controller};
pub use mirroring::{ENDPOINTSLICE_MIRRORING_CONTROLLER, start_endpointslice_mirroring};
pub use slices::{ENDPOINTSLICE_CONTROLLER, start_endpointslice_controller};

use crate::keyed::{self, Workers};
use crate::workqueue::WorkQueue;

/// The label naming a slice's Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming a slice's manager.
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The label marking a headless Service's Endpoints and slices.
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// The three controllers' workers (`--concurrent-*-syncs`) and backoff (client-go's
/// default rate limiter: 5 ms to 1,000 s).
const WORKERS: Workers = Workers {
    count: 5,
    backoff: (
        std::time::Duration::from_millis(5),
        std::time::Duration::from_secs(1000),
    ),
};

/// The collections the endpoint controllers read.
#[derive(Clone)]
pub struct EndpointsSources {
    pub services: Served,
    pub pods: Served,
    pub nodes: Served,
    pub endpoints: Served,
    pub endpoint_slices: Served,
}

/// Runs one of the controllers: `sync` for the key of each object of `followed` that
/// changes.
fn run_synced<F, Fut>(
    controller: &'static str,
    followed: Served,
    sources: &EndpointsSources,
    client: LoopbackClient,
    stopping: &CancellationToken,
    sync: F,
) -> Arc<WorkQueue>
where
    F: Fn(EndpointsSources, LoopbackClient, String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let sources = sources.clone();
    keyed::run(
        controller,
        followed,
        WORKERS,
        stopping.clone(),
        move |key| sync(sources.clone(), client.clone(), key),
    )
}

/// Queues the key of every Service that selects a pod that changed (before or after the
/// change), and every Service when the pods' follower starts over.
fn queue_services_of_changed_pods(
    sources: &EndpointsSources,
    queue: Arc<WorkQueue>,
    stopping: CancellationToken,
) {
    let services = sources.services.clone();
    let notice = move |change: Change<'_>| {
        match change {
            Change::Resync => {
                for service in services.cached_list(None) {
                    queue.add(&object_key(&service));
                }
            }
            Change::Event(event) => {
                let namespace = event.object.namespace();
                for service in services.cached_list(Some(namespace)) {
                    let selects = |labels: &kapi_apimachinery::labels::LabelSet| {
                        selector(&service).is_some_and(|selector| {
                            selector.iter().all(|(k, v)| labels.get(k) == v.as_str())
                        })
                    };
                    let before = event
                        .prev
                        .as_ref()
                        .is_some_and(|prev| selects(&prev.labels));
                    if selects(&event.object.labels) || before {
                        queue.add(&object_key(&service));
                    }
                }
            }
        }
        true
    };
    tokio::spawn(informer::follow(sources.pods.clone(), stopping, notice));
}

/// Queues the key (`namespace/<service-name label>`) of every slice `manager` keeps that
/// changes, so that a slice changed or deleted by someone else is put right.
fn queue_owners_of_changed_slices(
    sources: &EndpointsSources,
    manager: &'static str,
    queue: Arc<WorkQueue>,
    stopping: CancellationToken,
) {
    let slices = sources.endpoint_slices.clone();
    let notice = move |change: Change<'_>| {
        if let Change::Event(event) = change {
            let labels = &event.object.labels;
            if labels.get(MANAGED_BY_LABEL) == Some(manager)
                && let Some(service) = labels.get(SERVICE_NAME_LABEL)
            {
                queue.add(&keyed::key(event.object.namespace(), service));
            }
        }
        true
    };
    tokio::spawn(informer::follow(slices, stopping, notice));
}

/// The slices of the Service `service` in `namespace` that `manager` keeps.
fn managed_slices(slices: &Served, namespace: &str, service: &str, manager: &str) -> Vec<Value> {
    slices
        .cached_list(Some(namespace))
        .into_iter()
        .filter(|slice| {
            let labels = &slice["metadata"]["labels"];
            labels[SERVICE_NAME_LABEL] == service && labels[MANAGED_BY_LABEL] == manager
        })
        .collect()
}

/// The name prefix of a Service's (or an Endpoints') slices.
fn slice_prefix(name: &str) -> String {
    format!("{name}-")
}

/// An object's `namespace/name` key.
fn object_key(object: &Value) -> String {
    let metadata = &object["metadata"];
    keyed::key(
        metadata["namespace"].as_str().unwrap_or_default(),
        metadata["name"].as_str().unwrap_or_default(),
    )
}

/// A Service's selector, `None` when it has none (then the Service's endpoints are not
/// computed from pods). An empty selector selects every pod, as upstream's.
fn selector(service: &Value) -> Option<&Map<String, Value>> {
    service["spec"]["selector"].as_object()
}

/// The pods of `namespace` that `service` selects.
fn selected_pods(pods: &Served, namespace: &str, service: &Value) -> Vec<Value> {
    let Some(selector) = selector(service) else {
        return Vec::new();
    };
    pods.cached_list(Some(namespace))
        .into_iter()
        .filter(|pod| {
            let labels = &pod["metadata"]["labels"];
            selector.iter().all(|(key, value)| labels[key] == *value)
        })
        .collect()
}

/// Whether the Service has a cluster IP (is not headless).
fn has_cluster_ip(service: &Value) -> bool {
    match service["spec"]["clusterIP"].as_str() {
        None | Some("") | Some("None") => false,
        Some(_) => true,
    }
}

/// Upstream's `ShouldPodBeInEndpoints`: not terminal, has an IP, and not terminating
/// unless `include_terminating`.
fn should_pod_be_in_endpoints(pod: &Value, include_terminating: bool) -> bool {
    let status = &pod["status"];
    if matches!(status["phase"].as_str(), Some("Failed" | "Succeeded")) {
        return false;
    }
    let has_ip = status["podIP"].as_str().is_some_and(|ip| !ip.is_empty())
        || status["podIPs"]
            .as_array()
            .is_some_and(|ips| !ips.is_empty());
    if !has_ip {
        return false;
    }
    include_terminating || pod["metadata"]["deletionTimestamp"].is_null()
}

/// Whether the pod's Ready condition is True.
fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|condition| condition["type"] == "Ready" && condition["status"] == "True")
}

/// The pod's IPs, `status.podIPs` (or `podIP` when that is all there is).
fn pod_ips(pod: &Value) -> Vec<String> {
    let status = &pod["status"];
    let listed: Vec<String> = status["podIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|ip| ip["ip"].as_str().map(str::to_string))
        .collect();
    match (listed.is_empty(), status["podIP"].as_str()) {
        (true, Some(ip)) if !ip.is_empty() => vec![ip.to_string()],
        _ => listed,
    }
}

fn is_ipv6(ip: &str) -> bool {
    matches!(ip.parse::<IpAddr>(), Ok(IpAddr::V6(_)))
}

/// Whether a pod's hostname is set for `service` (upstream's `ShouldSetHostname`).
fn should_set_hostname(pod: &Value, service: &Value) -> bool {
    let spec = &pod["spec"];
    spec["hostname"].as_str().is_some_and(|h| !h.is_empty())
        && spec["subdomain"] == service["metadata"]["name"]
        && pod["metadata"]["namespace"] == service["metadata"]["namespace"]
}

/// The pod port `service_port` leads to (upstream's `FindPort`): its number `targetPort`,
/// or the container port of that name and the Service port's protocol (in containers, then
/// in restartable init containers).
fn find_port(pod: &Value, service_port: &Value) -> Option<i64> {
    let target = &service_port["targetPort"];
    if let Some(number) = target.as_i64() {
        return Some(number);
    }
    let name = target.as_str()?;
    let protocol = service_port["protocol"].as_str().unwrap_or("TCP");
    let sidecars = pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|container| container["restartPolicy"] == "Always");
    let containers = pod["spec"]["containers"].as_array().into_iter().flatten();
    containers
        .chain(sidecars)
        .flat_map(|container| container["ports"].as_array().into_iter().flatten())
        .find(|port| port["name"] == name && port["protocol"].as_str().unwrap_or("TCP") == protocol)
        .and_then(|port| port["containerPort"].as_i64())
}

/// The `targetRef` of a pod.
fn pod_reference(pod: &Value) -> Value {
    let metadata = &pod["metadata"];
    json!({"kind": "Pod", "namespace": metadata["namespace"], "name": metadata["name"],
        "uid": metadata["uid"]})
}

/// A Service's ports.
fn service_ports(service: &Value) -> &[Value] {
    service["spec"]["ports"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_and_pods_are_read_as_upstream() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"ports": [{"name": "http", "containerPort": 8080},
                {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}],
                "initContainers": [{"restartPolicy": "Always",
                    "ports": [{"name": "proxy", "containerPort": 15001}]}]},
            "status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}});
        assert_eq!(find_port(&pod, &json!({"targetPort": 9090})), Some(9090));
        assert_eq!(
            find_port(&pod, &json!({"targetPort": "http", "protocol": "TCP"})),
            Some(8080)
        );
        assert_eq!(
            find_port(&pod, &json!({"targetPort": "dns", "protocol": "TCP"})),
            None
        );
        assert_eq!(
            find_port(&pod, &json!({"targetPort": "dns", "protocol": "UDP"})),
            Some(53)
        );
        assert_eq!(
            find_port(&pod, &json!({"targetPort": "proxy"})),
            Some(15001)
        );
        assert!(should_pod_be_in_endpoints(&pod, false));
        let mut terminating = pod.clone();
        terminating["metadata"]["deletionTimestamp"] = json!("2026-11-28T00:00:00Z");
        assert!(!should_pod_be_in_endpoints(&terminating, false));
        assert!(should_pod_be_in_endpoints(&terminating, true));
        let mut done = pod.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert!(!should_pod_be_in_endpoints(&done, true));
        assert_eq!(pod_ips(&pod), ["10.0.0.1", "fd00::1"]);
        assert!(!pod_ready(&pod));
    }
}
