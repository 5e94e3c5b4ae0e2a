//! What the benchmarks share: running operations at a fixed concurrency and the report line
//! of their rate and latencies, the server's CPU time, and a realistic Pod.

// Each benchmark is a crate of its own that uses a part of this module.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use kapi::flags::{Cli, Command};
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

/// The allocator of the `kapi` binary (src/main.rs), so the in-process server runs as it does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The binary's allocator settings, applied as it applies them (before main).
#[used]
#[unsafe(link_section = ".init_array")]
static CONFIGURE_ALLOCATOR: extern "C" fn() = kapi::allocator::configure;

/// Requests in flight.
pub const CONCURRENCY: usize = 32;

/// Runs `n` operations `op(i)` with [`CONCURRENCY`] in flight; returns the report line.
pub async fn creates<F, Fut>(n: usize, op: F) -> String
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), kube::Error>>,
{
    let started = Instant::now();
    let results: Vec<(Duration, Result<(), kube::Error>)> = futures::stream::iter(0..n)
        .map(|i| {
            let operation = op(i);
            async move {
                let begun = Instant::now();
                let result = operation.await;
                (begun.elapsed(), result)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let elapsed = started.elapsed();
    summary(results, elapsed)
}

pub fn summary(results: Vec<(Duration, Result<(), kube::Error>)>, elapsed: Duration) -> String {
    let mut latencies: Vec<Duration> = Vec::with_capacity(results.len());
    let mut errors = 0;
    let mut first_error = None;
    for (latency, result) in results {
        match result {
            Ok(()) => latencies.push(latency),
            Err(err) => {
                errors += 1;
                first_error.get_or_insert(err.to_string());
            }
        }
    }
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    let mut line = format!(
        "{rate:.0}/s; p50 {:.1} ms, p99 {:.1} ms; {} ok",
        at(0.5),
        at(0.99),
        latencies.len()
    );
    if errors > 0 {
        line.push_str(&format!(
            "; {errors} errors, first: {}",
            first_error.unwrap_or_default()
        ));
    }
    line
}

/// Runs `body` with a kapi server on the embedded store started in this process (on its own
/// multi-threaded runtime, as the binary runs it), on a single-threaded client runtime, so
/// client and server share the machine as on one host; `body` gets the admin kubeconfig and
/// the data directory. The server is stopped afterwards.
pub fn with_server<F, Fut>(body: F)
where
    F: FnOnce(PathBuf, PathBuf) -> Fut,
    Fut: Future<Output = ()>,
{
    with_server_flags(&[], body);
}

/// [`with_server`] with extra `flags` for the server.
pub fn with_server_flags<F, Fut>(flags: &[&str], body: F)
where
    F: FnOnce(PathBuf, PathBuf) -> Fut,
    Fut: Future<Output = ()>,
{
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("server runtime");
    let data_dir = tempfile::tempdir().expect("temp dir");
    let server = server_runtime.block_on(start_server(data_dir.path(), flags));
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    client_runtime.block_on(body(
        server.kubeconfig.clone(),
        data_dir.path().to_path_buf(),
    ));
    server_runtime
        .block_on(server.stop())
        .expect("server stops");
}

async fn start_server(data_dir: &Path, flags: &[&str]) -> kapi::serve::RunningServer {
    let port = kapi_testing::free_port().to_string();
    let dir = data_dir.to_str().expect("utf-8 temp dir");
    let mut args = vec!["kapi", "serve", "--secure-port", &port, "--data-dir", dir];
    args.extend(flags);
    let Command::Serve(options) = Cli::try_parse_from(args).expect("flags").command else {
        panic!("kapi serve flags")
    };
    kapi::serve::start(options).await.expect("kapi starts")
}

/// A client from kubeconfig text.
pub async fn client_from(kubeconfig: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("client config");
    kube::Client::try_from(config).expect("client")
}

/// A client from the kubeconfig at `path`, once the server has created its system namespaces
/// (right after it starts listening).
pub async fn client(path: &Path) -> kube::Client {
    let text = std::fs::read_to_string(path).expect("kubeconfig");
    let client = client_from(&text).await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    while namespaces.get("default").await.is_err() {
        assert!(Instant::now() < deadline, "kapi did not become ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client
}

/// Creates the namespace the workloads run in and prints the report table's header.
pub async fn start_report(client: &kube::Client, namespace: &str) {
    create_namespace(client, namespace).await;
    println!("| workload | result |");
    println!("|---|---|");
}

/// Creates the namespace `namespace`.
pub async fn create_namespace(client: &kube::Client, namespace: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let object =
        serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace");
    namespaces
        .create(&kube::api::PostParams::default(), &object)
        .await
        .expect("create namespace");
}

/// Clock ticks per second of `/proc` stat files (`getconf CLK_TCK`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// The user and system CPU seconds of the `/proc` stat file at `path`.
pub fn cpu(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).expect("a /proc stat file");
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..]
        .split(' ')
        .collect();
    let ticks = |i: usize| fields[i].parse::<f64>().expect("ticks");
    // utime and stime are fields 14 and 15 of the file, 12 and 13 after the command.
    (ticks(11) + ticks(12)) / TICKS_PER_SECOND
}

/// The CPU seconds the in-process server has used: the process's less the calling thread's
/// (the benchmarks' client runs on one thread).
pub fn server_cpu() -> f64 {
    cpu("/proc/self/stat") - cpu("/proc/thread-self/stat")
}

/// Waits until the in-process server is idle (under a tenth of a core over a quarter
/// second), so that what a measurement starts next is not charged for work still running
/// from the last (the controllers and watchers of 10,000 creates run on after the creates
/// return). Returns the seconds waited; gives up after a minute.
pub async fn wait_until_quiet() -> f64 {
    const WINDOW: Duration = Duration::from_millis(250);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let before = server_cpu();
        tokio::time::sleep(WINDOW).await;
        if server_cpu() - before < WINDOW.as_secs_f64() / 10.0 {
            break;
        }
    }
    start.elapsed().as_secs_f64()
}

/// A Pod of about 4 KiB.
pub fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": "web", "tier": "frontend", "release": "2026.11", "team": "platform",
                "pod-template-hash": "7d9f8b6c5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7d9f8b6c5d", "uid": "6f1c3a52-1d0e-4c1b-9a57-2f3e8d4b7c10",
                "controller": true, "blockOwnerDeletion": true}],
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "kubectl.kubernetes.io/default-container": "web",
                "example.com/owner": "platform-team@example.com",
                "example.com/description": "A benchmark pod shaped like a typical web workload with a sidecar, probes, resources and volumes.",
            },
        },
        "spec": pod_spec(),
    })
}

pub fn pod_spec() -> Value {
    let mut env: Vec<Value> = (0..12)
        .map(|i| json!({"name": format!("SETTING_{i}"), "value": format!("value-of-setting-number-{i}")}))
        .collect();
    env.extend([
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}),
        json!({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "web-db", "key": "password"}}}),
    ]);
    json!({
        "serviceAccountName": "default",
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000},
        "containers": [
            {
                "name": "web",
                "image": "registry.example.com/team/web:1.27.3",
                "args": ["--port=8080", "--metrics-port=9090", "--log-level=info"],
                "ports": [
                    {"name": "http", "containerPort": 8080},
                    {"name": "metrics", "containerPort": 9090},
                ],
                "env": env,
                "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"},
                },
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
                "startupProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "failureThreshold": 30},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10},
                "volumeMounts": [
                    {"name": "config", "mountPath": "/etc/web"},
                    {"name": "cache", "mountPath": "/var/cache/web"},
                ],
            },
            {
                "name": "log-shipper",
                "image": "registry.example.com/team/log-shipper:3.1.0",
                "args": ["--input=/var/log/web", "--output=collector.logging.svc:24224"],
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"cpu": "200m", "memory": "128Mi"},
                },
                "volumeMounts": [{"name": "logs", "mountPath": "/var/log/web"}],
            },
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": "web-config"}},
            {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "logs", "emptyDir": {}},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
        ],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
    })
}

/// Creates `n` realistic Pods ([`pod`]) in `namespace` at [`CONCURRENCY`], once the
/// namespace's ServiceAccount exists; returns the report of [`creates`]. Their owner, the
/// ReplicaSet [`pod`] names, is created first: the garbage collector deletes Pods whose
/// owner does not exist, as upstream's does, which would empty the namespace while it is
/// measured.
pub async fn create_pods(client: &kube::Client, namespace: &str, n: usize) -> String {
    wait_for_service_account(client, namespace).await;
    let owner = create_owner(client, namespace, n).await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), namespace);
    creates(n, |i| {
        let (pods, owner) = (pods.clone(), owner.clone());
        async move {
            let mut pod = pod(&format!("pod-{i}"));
            pod["metadata"]["ownerReferences"][0]["uid"] = Value::String(owner);
            let pod = serde_json::from_value(pod).expect("pod");
            pods.create(&Default::default(), &pod).await.map(drop)
        }
    })
    .await
}

/// Creates the ReplicaSet of [`pod`]'s owner reference (kapi runs no ReplicaSet controller,
/// so it stays as created) and returns its uid.
async fn create_owner(client: &kube::Client, namespace: &str, replicas: usize) -> String {
    let sets: Api<k8s_openapi::api::apps::v1::ReplicaSet> =
        Api::namespaced(client.clone(), namespace);
    let owner = pod("owner")["metadata"]["ownerReferences"][0]["name"].clone();
    let set = json!({
        "metadata": {"name": owner},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()},
        },
    });
    let set = serde_json::from_value(set).expect("replicaset");
    let created = sets.create(&Default::default(), &set).await.expect("owner");
    created.metadata.uid.expect("a uid")
}

/// Waits until the namespace's `default` ServiceAccount exists (the controller makes it just
/// after the namespace): Pods name it, and admission refuses them until it is there.
pub async fn wait_for_service_account(client: &kube::Client, namespace: &str) {
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), namespace);
    let deadline = Instant::now() + Duration::from_secs(30);
    while accounts.get("default").await.is_err() {
        assert!(Instant::now() < deadline, "no default ServiceAccount");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
