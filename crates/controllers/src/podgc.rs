//! kube-controller-manager's pod garbage collector: every 20 seconds it force-deletes (grace
//! period 0, marked `Failed` first when not terminated, as upstream) the pods nothing else
//! would ever remove without a kubelet:
//! - pods bound to a node that does not exist, once it has been missing for 40 seconds
//!   (quarantine) and the API confirms it, with the `DisruptionTarget` condition reason
//!   `DeletionByPodGC`;
//! - terminated pods (`Succeeded`, `Failed`) beyond `--terminated-pod-gc-threshold`, evicted
//!   ones and the oldest first;
//! - terminating pods on a node that is not ready and tainted
//!   `node.kubernetes.io/out-of-service`;
//! - terminating pods never bound to a node.

use std::collections::HashMap;
use std::time::Duration;

use kapi_apimachinery::meta::now_rfc3339;
use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The controller's name (`--controllers`).
pub const POD_GC_CONTROLLER: &str = "pod-garbage-collector-controller";
/// How often pods are looked at.
const CHECK_PERIOD: Duration = Duration::from_secs(20);
/// How long a node must be missing before its pods go.
const QUARANTINE: Duration = Duration::from_secs(40);
const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

/// What the pod garbage collector follows and how.
#[derive(Clone)]
pub struct PodGc {
    pub pods: Served,
    pub nodes: Served,
    /// How many terminated pods may exist before the oldest go (0: no limit).
    pub terminated_threshold: usize,
}

/// Starts the controller, deleting through `client` (kube-system's
/// `pod-garbage-collector`) until `stopping`.
pub fn start_pod_gc(gc: PodGc, client: LoopbackClient, stopping: CancellationToken) {
    tokio::spawn(async move {
        let mut missing_since: HashMap<String, Instant> = HashMap::new();
        let mut ticker = tokio::time::interval(CHECK_PERIOD);
        loop {
            tokio::select! {
                () = stopping.cancelled() => return,
                _ = ticker.tick() => {}
            }
            let pods = gc.pods.cached_list(None);
            let mut doomed: Vec<(&Value, Option<Value>)> = Vec::new();
            if gc.terminated_threshold > 0 {
                doomed.extend(
                    terminated_beyond(&pods, gc.terminated_threshold)
                        .into_iter()
                        .map(|p| (p, None)),
                );
            }
            for pod in &pods {
                if !is_terminating(pod) {
                    continue;
                }
                let node_name = pod["spec"]["nodeName"].as_str().unwrap_or_default();
                let out_of_service = !node_name.is_empty()
                    && gc
                        .nodes
                        .cached("", node_name)
                        .is_some_and(|node| out_of_service(&node));
                if node_name.is_empty() || out_of_service {
                    doomed.push((pod, None));
                }
            }
            let gone = missing_nodes(&gc, &client, &pods, &mut missing_since).await;
            let orphaned = json!({"type": "DisruptionTarget", "status": "True",
                "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists"});
            for pod in &pods {
                if pod["spec"]["nodeName"]
                    .as_str()
                    .is_some_and(|node| gone.contains(&node.to_string()))
                {
                    doomed.push((pod, Some(orphaned.clone())));
                }
            }
            for (pod, condition) in doomed {
                if let Err(err) = mark_failed_and_delete(&client, pod, condition).await {
                    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
                    tracing::warn!("{POD_GC_CONTROLLER}: deleting pod {name}: {err}");
                }
            }
        }
    });
}

fn is_terminating(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null()
}

fn is_terminated(pod: &Value) -> bool {
    !matches!(
        pod["status"]["phase"].as_str(),
        None | Some("Pending" | "Running" | "Unknown")
    )
}

/// The terminated pods beyond `threshold`, evicted and oldest first.
fn terminated_beyond(pods: &[Value], threshold: usize) -> Vec<&Value> {
    let mut terminated: Vec<&Value> = pods.iter().filter(|pod| is_terminated(pod)).collect();
    let excess = terminated.len().saturating_sub(threshold);
    if excess == 0 {
        return Vec::new();
    }
    let evicted =
        |pod: &Value| pod["status"]["phase"] == "Failed" && pod["status"]["reason"] == "Evicted";
    terminated.sort_by(|a, b| {
        let created = |pod: &Value| {
            pod["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let name = |pod: &Value| {
            pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        evicted(b)
            .cmp(&evicted(a))
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| name(a).cmp(&name(b)))
    });
    terminated.truncate(excess);
    terminated
}

/// Whether a node is not ready and tainted out of service.
fn out_of_service(node: &Value) -> bool {
    let ready = node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let tainted = node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|taint| taint["key"] == OUT_OF_SERVICE_TAINT);
    !ready && tainted
}

/// The nodes pods are bound to that have been missing for [`QUARANTINE`] and that the API
/// confirms are gone; the others start or keep their quarantine.
async fn missing_nodes(
    gc: &PodGc,
    client: &LoopbackClient,
    pods: &[Value],
    missing_since: &mut HashMap<String, Instant>,
) -> Vec<String> {
    let now = Instant::now();
    let mut missing: Vec<String> = pods
        .iter()
        .filter_map(|pod| pod["spec"]["nodeName"].as_str())
        .filter(|node| !node.is_empty() && gc.nodes.cached("", node).is_none())
        .map(str::to_string)
        .collect();
    missing.sort();
    missing.dedup();
    missing_since.retain(|node, _| missing.contains(node));
    let mut gone = Vec::new();
    for node in missing {
        let since = *missing_since.entry(node.clone()).or_insert(now);
        if now.duration_since(since) < QUARANTINE {
            continue;
        }
        let path = format!("/api/v1/nodes/{node}");
        if let Err(err) = client.json(http::Method::GET, &path, None, None).await
            && err.code() == 404
        {
            gone.push(node);
        }
    }
    gone
}

/// Marks `pod` Failed (with `condition`) unless it has terminated, then deletes it at once.
async fn mark_failed_and_delete(
    client: &LoopbackClient,
    pod: &Value,
    condition: Option<Value>,
) -> Result<(), String> {
    let meta = &pod["metadata"];
    let (namespace, name) = (
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default(),
    );
    let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
    if !is_terminated(pod) {
        let mut status = json!({"phase": "Failed"});
        if let Some(mut condition) = condition {
            condition["lastTransitionTime"] = now_rfc3339().into();
            status["conditions"] = json!([condition]);
        }
        let patch = json!({"metadata": {"uid": meta["uid"]}, "status": status});
        let patched = client
            .patch(
                &format!("{path}/status"),
                "application/strategic-merge-patch+json",
                &patch,
            )
            .await;
        match patched {
            Ok(_) => {}
            Err(err) if err.code() == 404 => return Ok(()),
            Err(err) => return Err(err.to_string()),
        }
    }
    let path = format!("{path}?gracePeriodSeconds=0");
    match client.json(http::Method::DELETE, &path, None, None).await {
        Ok(_) => Ok(()),
        Err(err) if err.code() == 404 => Ok(()),
        Err(err) => Err(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminated_pods_beyond_the_threshold_go_evicted_and_oldest_first() {
        let pod = |name: &str, phase: &str, created: &str, reason: &str| {
            json!({"metadata": {"name": name, "creationTimestamp": created},
                "status": {"phase": phase, "reason": reason}})
        };
        let pods = vec![
            pod("running", "Running", "2026-01-01T00:00:00Z", ""),
            pod("old", "Succeeded", "2026-01-02T00:00:00Z", ""),
            pod("new", "Failed", "2026-01-04T00:00:00Z", ""),
            pod("evicted", "Failed", "2026-01-05T00:00:00Z", "Evicted"),
        ];
        let names = |pods: Vec<&Value>| -> Vec<String> {
            pods.iter()
                .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names(terminated_beyond(&pods, 1)), ["evicted", "old"]);
        assert!(terminated_beyond(&pods, 3).is_empty());
    }
}
