//! The endpoint controllers in kapi, seen through the real kubectl: a Service's Endpoints
//! and EndpointSlices follow its pods as a test sets their status the way a kubelet does
//! (IPs, readiness, deletion), with upstream's conditions, node and zone; a selectorless
//! Service's hand-written Endpoints are mirrored into an EndpointSlice.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Backend, TestServer, ok_stdin};

const SETUP: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: zone-a}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: default, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]
"#;

/// Sets a pod's status as a kubelet reports it: running at `ip`, ready or not.
async fn report(server: &TestServer, pod: &str, ip: &str, ready: bool) {
    let ready = if ready { "True" } else { "False" };
    let status = json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": ready}]}});
    server
        .kubectl_ok(&[
            "patch",
            "pod",
            pod,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ])
        .await;
}

/// Polls `kubectl get <args>` until `done` accepts what it shows.
async fn wait_for(server: &TestServer, args: &[&str], done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut command = [&["get"], args, &["-o", "json"]].concat();
        command.retain(|arg| !arg.is_empty());
        let output = server.kubectl(&command).await;
        let shown: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        if output.status.success() && done(&shown) {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl get {args:?} stays {shown}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The slices of the Service `web` the endpointslice controller keeps.
const WEB_SLICES: [&str; 3] = [
    "endpointslices",
    "-l",
    "kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io",
];

fn endpoints_of(slices: &Value) -> Vec<Value> {
    slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|slice| slice["endpoints"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_and_slices_follow_the_pods_a_kubelet_reports() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    ok_stdin(&server, &["apply", "-f", "-"], SETUP).await;

    // No pod has an address yet: empty Endpoints, one empty slice, as upstream.
    let endpoints = wait_for(&server, &["endpoints", "web"], |_| true).await;
    assert!(endpoints["subsets"].is_null(), "{endpoints}");
    assert_eq!(endpoints["metadata"]["labels"], json!({"tier": "front"}));
    let slices = wait_for(&server, &WEB_SLICES, |s| {
        s["items"].as_array().is_some_and(|i| i.len() == 1)
    })
    .await;
    let slice = &slices["items"][0];
    assert!(
        slice["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("web-")
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["metadata"]["labels"]["tier"], "front");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["controller"], true);

    // web-1 runs and is ready; web-2 runs, not ready.
    report(&server, "web-1", "10.244.0.5", true).await;
    report(&server, "web-2", "10.244.0.6", false).await;
    let endpoints = wait_for(&server, &["endpoints", "web"], |e| {
        e["subsets"][0]["notReadyAddresses"].is_array() && e["subsets"][0]["addresses"].is_array()
    })
    .await;
    let subset = &endpoints["subsets"][0];
    assert_eq!(subset["addresses"][0]["ip"], "10.244.0.5");
    assert_eq!(subset["addresses"][0]["nodeName"], "n1");
    assert_eq!(subset["addresses"][0]["targetRef"]["name"], "web-1");
    assert_eq!(subset["notReadyAddresses"][0]["ip"], "10.244.0.6");
    assert_eq!(
        subset["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
    let table = server.kubectl_ok(&["get", "endpoints", "web"]).await;
    assert!(table.contains("10.244.0.5:8080"), "{table}");
    let slices = wait_for(&server, &WEB_SLICES, |s| endpoints_of(s).len() == 2).await;
    let mut endpoints = endpoints_of(&slices);
    endpoints.sort_by_key(|e| e["addresses"][0].to_string());
    assert_eq!(
        endpoints[0]["conditions"],
        json!({"ready": true, "serving": true, "terminating": false})
    );
    assert_eq!(endpoints[0]["nodeName"], "n1");
    assert_eq!(endpoints[0]["zone"], "zone-a");
    assert_eq!(endpoints[0]["targetRef"]["name"], "web-1");
    assert_eq!(
        endpoints[1]["conditions"],
        json!({"ready": false, "serving": false, "terminating": false})
    );
    assert_eq!(
        slices["items"][0]["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );

    // web-2 becomes ready; web-1 is deleted: terminating for its grace period, it leaves
    // the Endpoints and stays in its slice as terminating, serving but not ready.
    report(&server, "web-2", "10.244.0.6", true).await;
    server
        .kubectl_ok(&["delete", "pod", "web-1", "--wait=false"])
        .await;
    let endpoints = wait_for(&server, &["endpoints", "web"], |e| {
        e["subsets"][0]["addresses"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
            && e["subsets"][0]["addresses"][0]["ip"] == "10.244.0.6"
            && e["subsets"][0]["notReadyAddresses"].is_null()
    })
    .await;
    assert_eq!(endpoints["subsets"].as_array().unwrap().len(), 1);
    let slices = wait_for(&server, &WEB_SLICES, |s| {
        endpoints_of(s)
            .iter()
            .any(|e| e["conditions"]["terminating"] == true)
    })
    .await;
    let terminating = endpoints_of(&slices)
        .into_iter()
        .find(|e| e["targetRef"]["name"] == "web-1")
        .unwrap();
    assert_eq!(
        terminating["conditions"],
        json!({"ready": false, "serving": true, "terminating": true})
    );
    // Its kubelet, done, deletes it for good.
    server
        .kubectl_ok(&["delete", "pod", "web-1", "--grace-period=0", "--force"])
        .await;
    wait_for(&server, &WEB_SLICES, |s| {
        let endpoints = endpoints_of(s);
        endpoints.len() == 1 && endpoints[0]["conditions"]["ready"] == true
    })
    .await;

    // A selectorless Service's Endpoints are mirrored.
    let external = r#"
apiVersion: v1
kind: Service
metadata: {name: db, namespace: default}
spec:
  ports: [{port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: default, labels: {team: data}}
subsets:
- addresses: [{ip: 192.0.2.10}]
  notReadyAddresses: [{ip: 192.0.2.11}]
  ports: [{port: 5432}]
"#;
    ok_stdin(&server, &["apply", "-f", "-"], external).await;
    let mirrored = [
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=db,endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io",
    ];
    let slices = wait_for(&server, &mirrored, |s| endpoints_of(s).len() == 2).await;
    let slice = &slices["items"][0];
    assert_eq!(slice["metadata"]["labels"]["team"], "data");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Endpoints");
    let endpoints = endpoints_of(&slices);
    assert_eq!(
        endpoints[0],
        json!({"addresses": ["192.0.2.10"], "conditions": {"ready": true}})
    );
    assert_eq!(
        endpoints[1],
        json!({"addresses": ["192.0.2.11"], "conditions": {"ready": false}})
    );

    // The Service goes: its Endpoints with it, its slices through the garbage collector.
    server.kubectl_ok(&["delete", "service", "web"]).await;
    wait_for(&server, &["endpoints", "-l", "tier=front"], |e| {
        e["items"].as_array().is_some_and(Vec::is_empty)
    })
    .await;
    wait_for(&server, &WEB_SLICES, |s| {
        s["items"].as_array().is_some_and(Vec::is_empty)
    })
    .await;
}
