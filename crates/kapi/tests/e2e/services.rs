//! Services through the real kubectl: defaults and allocated ClusterIPs and NodePorts read
//! back for every type, conflicting requests rejected with upstream's 422s, `kubectl get`
//! columns, the `kubernetes` Service with its Endpoints and EndpointSlice after start, and
//! allocations surviving a restart (the repair recreates a lost IPAddress).

use crate::common;

use std::time::{Duration, Instant};

use clap::Parser;
use common::{Backend, TestServer, stderr};
use kapi::flags::{Cli, Command};
use kapi::serve;
use kapi_testing::etcd::EtcdCluster;
use serde_json::Value;

/// How long anything asynchronous may take before a test gives up.
const DEADLINE: Duration = Duration::from_secs(30);

async fn apply(server: &TestServer, manifest: &str) -> Value {
    let output = server
        .kubectl_stdin(&["create", "-o", "json", "-f", "-"], Some(manifest))
        .await;
    assert!(
        output.status.success(),
        "create failed: {}",
        stderr(&output)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

async fn create_fails(server: &TestServer, manifest: &str) -> String {
    let output = server
        .kubectl_stdin(&["create", "-f", "-"], Some(manifest))
        .await;
    assert!(!output.status.success(), "create of {manifest} succeeded");
    stderr(&output)
}

async fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&server.kubectl_ok(&args).await).expect("JSON")
}

fn service(name: &str, spec: &str) -> String {
    format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

fn in_range(ip: &str, prefix: &str) -> bool {
    ip.starts_with(prefix)
}

#[tokio::test(flavor = "multi_thread")]
async fn services_of_every_type_are_defaulted_and_allocated() {
    for backend in [Backend::Embedded, Backend::Etcd] {
        let server =
            TestServer::start(backend, &["--service-cluster-ip-range=10.100.0.0/16"]).await;
        let cluster_ip = apply(
            &server,
            &service("web", "  selector: {app: web}\n  ports:\n  - port: 80\n"),
        )
        .await;
        let spec = &cluster_ip["spec"];
        assert_eq!(spec["type"], "ClusterIP");
        assert_eq!(spec["sessionAffinity"], "None");
        assert_eq!(spec["internalTrafficPolicy"], "Cluster");
        assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        assert_eq!(spec["ipFamilies"], serde_json::json!(["IPv4"]));
        assert_eq!(spec["ports"][0]["protocol"], "TCP");
        // The creator owns the defaulted fields, as upstream defaults when decoding.
        let shown = server
            .kubectl_ok(&["get", "svc", "web", "-o", "json", "--show-managed-fields"])
            .await;
        let shown: Value = serde_json::from_str(&shown).expect("JSON");
        let owned = &shown["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
        for field in ["f:sessionAffinity", "f:type", "f:internalTrafficPolicy"] {
            assert!(owned.get(field).is_some(), "{field} in {owned}");
        }
        let port = &owned["f:ports"][r#"k:{"port":80,"protocol":"TCP"}"#];
        assert!(port.get("f:targetPort").is_some(), "{owned}");
        assert_eq!(spec["ports"][0]["targetPort"], 80);
        let ip = spec["clusterIP"].as_str().unwrap();
        assert!(in_range(ip, "10.100."), "{ip}");
        assert_eq!(spec["clusterIPs"], serde_json::json!([ip]));
        assert_eq!(
            cluster_ip["status"],
            serde_json::json!({"loadBalancer": {}})
        );
        let ipaddress = get_json(&server, &["get", "ipaddress", ip]).await;
        assert_eq!(ipaddress["spec"]["parentRef"]["name"], "web");
        assert_eq!(ipaddress["spec"]["parentRef"]["resource"], "services");

        let node_port = apply(
            &server,
            &service("np", "  type: NodePort\n  ports:\n  - port: 80\n    name: http\n  - port: 443\n    name: https\n    nodePort: 30443\n"),
        )
        .await;
        let spec = &node_port["spec"];
        assert_eq!(spec["externalTrafficPolicy"], "Cluster");
        let auto = spec["ports"][0]["nodePort"].as_i64().unwrap();
        assert!((30000..=32767).contains(&auto), "{auto}");
        assert_eq!(spec["ports"][1]["nodePort"], 30443);

        let lb = apply(
            &server,
            &service(
                "lb",
                "  type: LoadBalancer\n  externalTrafficPolicy: Local\n  ports:\n  - port: 80\n",
            ),
        )
        .await;
        let spec = &lb["spec"];
        assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
        assert!(spec["ports"][0]["nodePort"].as_i64().unwrap() >= 30000);
        assert!(spec["healthCheckNodePort"].as_i64().unwrap() >= 30000);

        let external = apply(
            &server,
            &service("ext", "  type: ExternalName\n  externalName: example.com\n"),
        )
        .await;
        assert!(external["spec"].get("clusterIP").is_none());
        assert!(external["spec"].get("ipFamilies").is_none());

        let headless = apply(
            &server,
            &service("headless", "  clusterIP: None\n  ports:\n  - port: 80\n"),
        )
        .await;
        assert_eq!(headless["spec"]["clusterIPs"], serde_json::json!(["None"]));
        // Without a selector, a headless service takes both families (upstream's default).
        assert_eq!(headless["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(
            headless["spec"]["ipFamilies"],
            serde_json::json!(["IPv4", "IPv6"])
        );

        let table = server.kubectl_ok(&["get", "svc", "-o", "wide"]).await;
        let lines: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines[0],
            [
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE",
                "SELECTOR"
            ]
        );
        let row = |name: &str| lines.iter().find(|l| l[0] == name).cloned().unwrap();
        assert_eq!(row("web")[1..5], ["ClusterIP", ip, "<none>", "80/TCP"]);
        assert_eq!(row("web")[6], "app=web");
        assert_eq!(row("headless")[2], "None");
        assert_eq!(
            row("ext")[1..5],
            ["ExternalName", "<none>", "example.com", "<none>"]
        );
        assert_eq!(row("lb")[3], "<pending>");
        assert_eq!(row("np")[4], format!("80:{auto}/TCP,443:30443/TCP"));

        let by_type = server
            .kubectl_ok(&[
                "get",
                "svc",
                "--field-selector",
                "spec.type=NodePort",
                "-o",
                "name",
            ])
            .await;
        assert_eq!(by_type.trim(), "service/np");

        // Deleting releases the IP and the ports.
        server.kubectl_ok(&["delete", "svc", "np", "web"]).await;
        let gone = server.kubectl(&["get", "ipaddress", ip]).await;
        assert!(!gone.status.success());
        apply(
            &server,
            &service(
                "again",
                "  type: NodePort\n  ports:\n  - port: 443\n    nodePort: 30443\n",
            ),
        )
        .await;
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn conflicting_and_invalid_requests_are_rejected_as_upstream() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    apply(
        &server,
        &service("a", "  clusterIP: 10.96.100.100\n  ports:\n  - port: 80\n"),
    )
    .await;
    let taken = create_fails(
        &server,
        &service("b", "  clusterIP: 10.96.100.100\n  ports:\n  - port: 80\n"),
    )
    .await;
    assert!(
        taken.contains(r#"The Service "b" is invalid: spec.clusterIPs: Invalid value: "10.96.100.100": failed to allocate IP 10.96.100.100: provided IP is already allocated"#),
        "{taken}"
    );
    let out_of_range = create_fails(
        &server,
        &service("c", "  clusterIP: 192.168.0.10\n  ports:\n  - port: 80\n"),
    )
    .await;
    assert!(
        out_of_range.contains("failed to allocate IP 192.168.0.10: the provided network does not match the current range"),
        "{out_of_range}"
    );
    apply(
        &server,
        &service(
            "d",
            "  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 31000\n",
        ),
    )
    .await;
    let port_taken = create_fails(
        &server,
        &service(
            "e",
            "  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 31000\n",
        ),
    )
    .await;
    assert!(
        port_taken.contains(
            r#"spec.ports[0].nodePort: Invalid value: 31000: provided port is already allocated"#
        ),
        "{port_taken}"
    );
    let port_range = create_fails(
        &server,
        &service(
            "f",
            "  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 80\n",
        ),
    )
    .await;
    assert!(
        port_range.contains("spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"),
        "{port_range}"
    );
    let no_ports = create_fails(&server, &service("g", "  selector: {app: x}\n")).await;
    assert!(
        no_ports.contains("spec.ports: Required value"),
        "{no_ports}"
    );
    let update = server
        .kubectl(&[
            "patch",
            "svc",
            "a",
            "-p",
            r#"{"spec":{"clusterIP":"10.96.100.101","clusterIPs":["10.96.100.101"]}}"#,
        ])
        .await;
    assert!(
        stderr(&update).contains(
            "spec.clusterIPs[0]: Invalid value: [\"10.96.100.101\"]: may not change once set"
        ),
        "{}",
        stderr(&update)
    );
    // The failed requests left nothing reserved.
    apply(&server, &service("h", "  type: NodePort\n  clusterIP: 10.96.100.102\n  ports:\n  - port: 80\n    nodePort: 31001\n")).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kubernetes_service_exists_after_start() {
    let server = TestServer::start(Backend::Embedded, &["--advertise-address=10.1.2.3"]).await;
    let service = get_json(&server, &["get", "svc", "kubernetes"]).await;
    assert_eq!(service["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(service["spec"]["ports"][0]["name"], "https");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    let port: i64 = server.url().rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port);
    // The Endpoints and the EndpointSlice follow once the server is ready, as upstream's
    // controller writes them once /readyz passes.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let endpoints = server.kubectl(&["get", "endpoints", "kubernetes"]).await;
        let table = String::from_utf8_lossy(&endpoints.stdout).to_string();
        let slice = server
            .kubectl(&["get", "endpointslice", "kubernetes", "-o", "json"])
            .await;
        let slice: Value = serde_json::from_slice(&slice.stdout).unwrap_or_default();
        if table.contains(&format!("10.1.2.3:{port}"))
            && slice["endpoints"][0]["addresses"][0] == "10.1.2.3"
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no Endpoints for this server: {table} {slice}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cidr = get_json(&server, &["get", "servicecidr", "kubernetes"]).await;
    assert_eq!(cidr["spec"]["cidrs"], serde_json::json!(["10.96.0.0/12"]));
    assert_eq!(cidr["status"]["conditions"][0]["type"], "Ready");
    assert_eq!(cidr["status"]["conditions"][0]["status"], "True");
    server.stop().await;
}

/// The kapi binary on one data directory (and store), restartable: a process, so that a
/// restart releases the embedded store's lock.
struct Kapi {
    child: Option<std::process::Child>,
    args: Vec<String>,
    kubeconfig: std::path::PathBuf,
}

impl Kapi {
    fn new(data_dir: &std::path::Path, etcd: Option<&EtcdCluster>) -> Kapi {
        let port = kapi_testing::free_port().to_string();
        let dir = data_dir.to_str().expect("utf-8 temp dir").to_string();
        let mut args = vec![
            "serve".into(),
            "--secure-port".into(),
            port,
            "--data-dir".into(),
            dir,
        ];
        if let Some(etcd) = etcd {
            args.extend(["--etcd-servers".into(), etcd.endpoints().join(",")]);
        }
        let kubeconfig = data_dir.join("admin.kubeconfig");
        Kapi {
            child: None,
            args,
            kubeconfig,
        }
    }

    /// Starts the process and waits until the `kubernetes` Service is served.
    async fn start(&mut self) {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(&self.args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start kapi");
        self.child = Some(child);
        let deadline = Instant::now() + DEADLINE;
        while !self
            .kubectl(&["get", "svc", "kubernetes"], None)
            .await
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "kapi did not become ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the process with SIGTERM and waits for it to exit.
    async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id().to_string();
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        assert!(killed.expect("run kill").success());
        let deadline = Instant::now() + DEADLINE;
        while child.try_wait().expect("wait for kapi").is_none() {
            assert!(Instant::now() < deadline, "kapi did not stop on SIGTERM");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> std::process::Output {
        common::kubectl(&self.kubeconfig, args, stdin).await
    }
}

impl Drop for Kapi {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn allocations_survive_a_restart() {
    for backend in [Backend::Embedded, Backend::Etcd] {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let etcd = common::etcd_for(backend).await;
        let mut kapi = Kapi::new(data_dir.path(), etcd.as_ref());
        kapi.start().await;
        let keep = service(
            "keep",
            "  type: NodePort\n  clusterIP: 10.96.7.7\n  ports:\n  - port: 80\n    nodePort: 32000\n",
        );
        let created = kapi.kubectl(&["create", "-f", "-"], Some(&keep)).await;
        assert!(created.status.success(), "{}", stderr(&created));
        // Lose the IPAddress: the repair at the next start brings it back.
        let deleted = kapi
            .kubectl(&["delete", "ipaddress", "10.96.7.7"], None)
            .await;
        assert!(deleted.status.success(), "{}", stderr(&deleted));
        kapi.stop().await;

        kapi.start().await;
        let deadline = Instant::now() + DEADLINE;
        while !kapi
            .kubectl(&["get", "ipaddress", "10.96.7.7"], None)
            .await
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "the IPAddress was not repaired");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let same_ip = service("other", "  clusterIP: 10.96.7.7\n  ports:\n  - port: 80\n");
        let conflict = kapi.kubectl(&["create", "-f", "-"], Some(&same_ip)).await;
        let message = stderr(&conflict);
        assert!(
            message.contains("provided IP is already allocated"),
            "{message}"
        );
        let same_port = service(
            "other",
            "  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 32000\n",
        );
        let conflict = kapi.kubectl(&["create", "-f", "-"], Some(&same_port)).await;
        let message = stderr(&conflict);
        assert!(
            message.contains("provided port is already allocated"),
            "{message}"
        );
        let kubernetes = kapi
            .kubectl(
                &[
                    "get",
                    "svc",
                    "kubernetes",
                    "-o",
                    "jsonpath={.spec.clusterIP}",
                ],
                None,
            )
            .await;
        assert_eq!(String::from_utf8_lossy(&kubernetes.stdout), "10.96.0.1");
        kapi.stop().await;
    }
}

/// Two servers on one etcd: each allocates from the shared IPAddresses and RangeAllocation,
/// so no ClusterIP or NodePort is handed out twice, and the `kubernetes` Endpoints list both
/// advertised addresses.
#[tokio::test(flavor = "multi_thread")]
async fn replicas_on_one_etcd_share_allocations_and_endpoints() {
    let etcd = tokio::task::spawn_blocking(|| EtcdCluster::start(1))
        .await
        .expect("etcd");
    let servers = etcd.endpoints().join(",");
    let start = |advertise: &'static str| {
        let servers = servers.clone();
        async move {
            let data_dir = tempfile::tempdir().expect("temp dir");
            let port = kapi_testing::free_port().to_string();
            let dir = data_dir.path().to_str().unwrap().to_string();
            let args = [
                "kapi",
                "serve",
                "--secure-port",
                &port,
                "--data-dir",
                &dir,
                "--etcd-servers",
                &servers,
                "--advertise-address",
                advertise,
                "--service-cluster-ip-range",
                "10.0.0.0/27",
                "--service-node-port-range",
                "30000-30031",
            ];
            let Command::Serve(options) = Cli::try_parse_from(args).expect("flags").command else {
                panic!("kapi serve flags")
            };
            let server = serve::start(options).await.expect("kapi starts");
            (server, data_dir)
        }
    };
    let (a, _a_dir) = start("10.10.0.1").await;
    let (b, _b_dir) = start("10.10.0.2").await;
    let deadline = Instant::now() + DEADLINE;
    let endpoints = [
        "get",
        "endpoints",
        "kubernetes",
        "-o",
        "jsonpath={.subsets[0].addresses[*].ip}",
    ];
    loop {
        let out = common::kubectl(&a.kubeconfig, &endpoints, None).await;
        if String::from_utf8_lossy(&out.stdout) == "10.10.0.1 10.10.0.2" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "endpoints: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // 30 usable IPs, one the kubernetes Service's: 29 more services fit, created on both
    // servers at once.
    let mut creates = Vec::new();
    for i in 0..29 {
        let kubeconfig = if i % 2 == 0 {
            a.kubeconfig.clone()
        } else {
            b.kubeconfig.clone()
        };
        let manifest = service(
            &format!("s{i}"),
            "  type: NodePort\n  ports:\n  - port: 80\n",
        );
        creates.push(tokio::spawn(async move {
            common::kubectl(&kubeconfig, &["create", "-f", "-"], Some(&manifest)).await
        }));
    }
    for create in creates {
        let out = create.await.unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let listed = common::kubectl(&a.kubeconfig, &["get", "svc", "-o", "json"], None).await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let items = listed["items"].as_array().unwrap();
    let mut ips: Vec<&str> = items
        .iter()
        .map(|s| s["spec"]["clusterIP"].as_str().unwrap())
        .collect();
    let mut ports: Vec<i64> = items
        .iter()
        .filter_map(|s| s["spec"]["ports"][0]["nodePort"].as_i64())
        .collect();
    ips.sort_unstable();
    ips.dedup();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!((ips.len(), ports.len()), (30, 29));
    let full = service("full", "  ports:\n  - port: 80\n");
    let full = common::kubectl(&b.kubeconfig, &["create", "-f", "-"], Some(&full)).await;
    let message = stderr(&full);
    assert!(
        message.contains("failed to allocate a serviceIP: range is full"),
        "{message}"
    );
    a.stop().await.expect("stops");
    b.stop().await.expect("stops");
}
