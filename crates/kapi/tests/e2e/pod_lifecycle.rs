//! Pods as kube-apiserver and kube-controller-manager end them without a kubelet: a pod
//! bound to a node is deleted gracefully (marked with its deadline, its grace period only
//! shortened, gone when deleted with grace period 0 as its kubelet would); one never bound
//! goes at once; the pod garbage collector removes pods bound to nodes that do not exist
//! (after upstream's 40 s quarantine) and terminated pods beyond its threshold.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Backend, TestServer, get_json, ok_stdin};

const PODS: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: bound, namespace: default}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 60
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: unbound, namespace: default}
spec:
  containers: [{name: c, image: nginx}]
"#;

fn seconds(time: &Value) -> i64 {
    let text = time.as_str().expect("a timestamp");
    kapi_apimachinery::gotime::parse_rfc3339(text)
        .expect("RFC 3339")
        .seconds
}

/// Polls until `kubectl get pods` no longer lists `name` (within `limit`).
async fn wait_pod_gone(server: &TestServer, name: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let pods = get_json(server, &["pods"]).await;
        let names: Vec<&str> = pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|pod| pod["metadata"]["name"].as_str())
            .collect();
        if !names.contains(&name) {
            return;
        }
        assert!(Instant::now() < deadline, "pod {name} is still there");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_pods_are_deleted_gracefully() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    ok_stdin(&server, &["apply", "-f", "-"], PODS).await;
    let before = kapi_apimachinery::gotime::Timestamp::now().seconds;
    server
        .kubectl_ok(&["delete", "pod", "bound", "--wait=false"])
        .await;
    let pod = get_json(&server, &["pod", "bound"]).await;
    let meta = &pod["metadata"];
    assert_eq!(meta["deletionGracePeriodSeconds"], 60, "{pod}");
    let deadline = seconds(&meta["deletionTimestamp"]);
    assert!((before + 60..=before + 62).contains(&deadline), "{pod}");
    // A longer grace period changes nothing, a shorter one moves the deadline closer.
    server
        .kubectl_ok(&[
            "delete",
            "pod",
            "bound",
            "--wait=false",
            "--grace-period=120",
        ])
        .await;
    let pod = get_json(&server, &["pod", "bound"]).await;
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 60);
    server
        .kubectl_ok(&[
            "delete",
            "pod",
            "bound",
            "--wait=false",
            "--grace-period=10",
        ])
        .await;
    let pod = get_json(&server, &["pod", "bound"]).await;
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 10);
    assert_eq!(
        seconds(&pod["metadata"]["deletionTimestamp"]),
        deadline - 50
    );
    // Status writes (a kubelet reporting) do not end it.
    server
        .kubectl_ok(&[
            "patch",
            "pod",
            "bound",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Running"}}"#,
        ])
        .await;
    let table = server.kubectl_ok(&["get", "pod", "bound"]).await;
    assert!(table.contains("Terminating"), "{table}");
    // Its kubelet, done, deletes it with grace period 0.
    server
        .kubectl_ok(&["delete", "pod", "bound", "--grace-period=0", "--force"])
        .await;
    wait_pod_gone(&server, "bound", Duration::from_secs(10)).await;
    // A pod never bound to a node has no kubelet to wait for.
    server
        .kubectl_ok(&["delete", "pod", "unbound", "--wait=false"])
        .await;
    wait_pod_gone(&server, "unbound", Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pod_garbage_collector_removes_orphaned_and_excess_terminated_pods() {
    let server = TestServer::start(Backend::Embedded, &["--terminated-pod-gc-threshold=1"]).await;
    let pods = r#"
apiVersion: v1
kind: Pod
metadata: {name: orphan, namespace: default}
spec:
  nodeName: gone-node
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: done-1, namespace: default}
spec:
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: done-2, namespace: default}
spec:
  containers: [{name: c, image: nginx}]
"#;
    ok_stdin(&server, &["apply", "-f", "-"], pods).await;
    for name in ["done-1", "done-2"] {
        server
            .kubectl_ok(&[
                "patch",
                "pod",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"phase":"Succeeded"}}"#,
            ])
            .await;
    }
    // The older terminated pod goes at the next pass (every 20 s).
    wait_pod_gone(&server, "done-1", Duration::from_secs(45)).await;
    let kept = get_json(&server, &["pod", "done-2"]).await;
    assert_eq!(kept["status"]["phase"], "Succeeded");
    // The pod bound to a node that does not exist goes after the quarantine.
    wait_pod_gone(&server, "orphan", Duration::from_secs(90)).await;
}
