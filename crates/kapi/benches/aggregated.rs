//! The aggregator's proxy: GETs and LISTs of flunders through kapi to the sample extension
//! server against the same requests sent to the sample server directly, with the server CPU
//! each request costs, and watch delivery through the proxy against a direct watch.
//!
//! `cargo bench -p kapi --bench aggregated`
//!
//! kapi runs in this process (see `common::with_server`) and the client on this process's
//! main thread, so kapi's CPU is the process's minus the main thread's; the sample server
//! runs as a child process (this benchmark re-run with `KAPI_BENCH_WARDLE` set), delegating
//! to kapi as it would in a cluster, registered by a Service, an EndpointSlice on loopback
//! and an APIService.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

mod common;
use common::{CONCURRENCY, cpu};

/// The namespace of the flunders.
const NAMESPACE: &str = "bench";
/// Set in the child process: `<kubeconfig>\n<dir>\n<port>`.
const WARDLE_ENV: &str = "KAPI_BENCH_WARDLE";
/// Flunders stored before reads are timed.
const FLUNDERS: usize = 1_000;
/// GETs timed per path.
const GETS: usize = 20_000;
/// LISTs (of every flunder) timed per path.
const LISTS: usize = 100;
/// Flunders created one at a time while two watches (proxied and direct) deliver them.
const WATCHED: usize = 500;

fn main() {
    if let Ok(setting) = std::env::var(WARDLE_ENV) {
        return run_wardle(&setting);
    }
    common::with_server(|kubeconfig, data_dir| async move {
        let kapi = common::client(&kubeconfig).await;
        let dir = data_dir.join("wardle");
        std::fs::create_dir_all(&dir).expect("wardle dir");
        let ca = serving_pki(&dir);
        let port = kapi_testing::free_port();
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env(
                WARDLE_ENV,
                format!("{}\n{}\n{port}", kubeconfig.display(), dir.display()),
            )
            .spawn()
            .expect("start the sample server");
        register(&kapi, port, &ca).await;
        let direct = direct_client(&kubeconfig, port, &ca).await;
        common::start_report(&kapi, NAMESPACE).await;
        let proxied = flunders(kapi.clone());
        let direct_flunders = flunders(direct.clone());
        let created = common::creates(FLUNDERS, |i| {
            let proxied = proxied.clone();
            async move {
                let object = flunder(&format!("f-{i}"));
                proxied
                    .create(&PostParams::default(), &object)
                    .await
                    .map(drop)
            }
        })
        .await;
        println!(
            "| {FLUNDERS} flunder creates through kapi's proxy, concurrency {CONCURRENCY} | {created} |"
        );
        let child_pid = child.id();
        let (through, direct_report) = (
            measured(child_pid, || gets(&proxied, "f")).await,
            measured(child_pid, || gets(&direct_flunders, "f")).await,
        );
        println!(
            "| {GETS} GETs of random flunders through kapi's proxy, concurrency {CONCURRENCY} | {through} |"
        );
        println!("| the same GETs direct to the sample server | {direct_report} |");
        let own = own_gets(&kapi, child_pid).await;
        println!("| the same GETs of ConfigMaps kapi serves itself (1,000 stored) | {own} |");
        let (through, direct_report) = (
            measured(child_pid, || lists(&proxied)).await,
            measured(child_pid, || lists(&direct_flunders)).await,
        );
        println!(
            "| {LISTS} LISTs of {FLUNDERS} flunders through kapi's proxy, concurrency 4 | {through} |"
        );
        println!("| the same LISTs direct to the sample server | {direct_report} |");
        let (through, direct_report) = watch_delivery(&proxied, &direct_flunders).await;
        println!(
            "| watch delivery through kapi's proxy of {WATCHED} creates (made directly, one at a time) | {through} |"
        );
        println!("| the same events to a watch of the sample server itself | {direct_report} |");
        let _ = child.kill();
        let _ = child.wait();
    });
}

/// The sample server, in the child process, until it is killed.
fn run_wardle(setting: &str) {
    let mut parts = setting.lines();
    let (kubeconfig, dir, port) = (
        PathBuf::from(parts.next().expect("kubeconfig")),
        PathBuf::from(parts.next().expect("dir")),
        parts.next().expect("port").parse::<u16>().expect("a port"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        use kapi_sample_server::delegated::{self, Delegation};
        let delegation = Delegation::fetch(&kubeconfig).await.expect("the ConfigMap");
        let tls = kapi_server::TlsConfig::from_pem_files(
            &dir.join("serving.crt"),
            &dir.join("serving.key"),
            None,
        )
        .expect("serving certificate");
        let mut config = kapi_server::ServerConfig::new(tls);
        config.secure_port = port;
        delegation.configure(&mut config);
        let store: Arc<dyn kapi_storage::Store> = Arc::new(
            kapi_storage::EmbeddedStore::open(kapi_storage::EmbeddedConfig::new(
                dir.join("wardle.redb"),
            ))
            .expect("store"),
        );
        let mut server = kapi_sample_server::server(config, store, "/registry").expect("server");
        server.add_authenticator(delegated::authenticator(&kubeconfig).expect("authn"));
        server.set_authorizer(delegated::authorizer(&kubeconfig).expect("authz"));
        let listening = server.bind().await.expect("listen");
        listening
            .serve(std::future::pending())
            .await
            .expect("serve");
    });
}

/// A CA and a serving certificate for `api.wardle.svc` in `dir`; the CA's PEM.
fn serving_pki(dir: &Path) -> String {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["api.wardle.svc".into()]).expect("params");
    let cert = params.signed_by(&key, &issuer).expect("certificate");
    std::fs::write(dir.join("serving.crt"), cert.pem()).expect("write");
    std::fs::write(dir.join("serving.key"), key.serialize_pem()).expect("write");
    ca_pem
}

/// Registers the sample server at `port` and waits until its APIService is available.
async fn register(kapi: &kube::Client, port: u16, ca: &str) {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let objects = [
        (
            "/api/v1/namespaces",
            json!({"metadata": {"name": "wardle"}}),
        ),
        (
            "/api/v1/namespaces/wardle/services",
            json!({"metadata": {"name": "api"}, "spec": {"ports": [{"port": 443, "targetPort": port}]}}),
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/wardle/endpointslices",
            json!({"metadata": {"name": "api-1", "labels": {"kubernetes.io/service-name": "api"}},
                "addressType": "IPv4", "ports": [{"name": "", "port": port}],
                "endpoints": [{"addresses": ["127.0.0.1"]}]}),
        ),
        (
            "/apis/apiregistration.k8s.io/v1/apiservices",
            json!({"metadata": {"name": "v1alpha1.wardle.example.com"}, "spec": {
                "group": "wardle.example.com", "version": "v1alpha1", "caBundle": ca,
                "service": {"namespace": "wardle", "name": "api", "port": 443},
                "groupPriorityMinimum": 1000, "versionPriority": 15}}),
        ),
    ];
    for (path, object) in objects {
        let request = http::Request::post(path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&object).expect("json"))
            .expect("request");
        let _: Value = kapi.request(request).await.expect("create");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let request = http::Request::get(
            "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com",
        )
        .body(Vec::new())
        .expect("request");
        let service: Value = kapi.request(request).await.expect("get");
        if service["status"]["conditions"][0]["status"] == "True" {
            return;
        }
        assert!(Instant::now() < deadline, "never available: {service}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client of the sample server itself, as kapi's admin (whose certificate it trusts by
/// the client CA kapi publishes).
async fn direct_client(kubeconfig: &Path, port: u16, ca: &str) -> kube::Client {
    let admin: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(kubeconfig).expect("kubeconfig"))
            .expect("yaml");
    let user = &admin["users"][0]["user"];
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let text = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "wardle",
        "clusters": [{"name": "wardle", "cluster": {"server": format!("https://127.0.0.1:{port}"),
            "certificate-authority-data": ca, "tls-server-name": "api.wardle.svc"}}],
        "users": [{"name": "admin", "user": user}],
        "contexts": [{"name": "wardle", "context": {"cluster": "wardle", "user": "admin"}}],
    });
    common::client_from(&text.to_string()).await
}

/// The flunders of `default` through `client`.
fn flunders(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("wardle.example.com", "v1alpha1", "Flunder");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "flunders");
    Api::namespaced_with(client, NAMESPACE, &resource)
}

fn flunder(name: &str) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"reference": "f-0", "referenceType": "Flunder"}}),
    )
    .expect("flunder")
}

/// [`GETS`] GETs of random objects named `<prefix>-<i>` (i below [`FLUNDERS`]).
async fn gets<K>(api: &Api<K>, prefix: &str) -> (String, usize)
where
    K: Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    let report = common::creates(GETS, |i| {
        let api = api.clone();
        let name = format!("{prefix}-{}", (i * 7919) % FLUNDERS);
        async move { api.get(&name).await.map(drop) }
    })
    .await;
    (report, GETS)
}

/// [`GETS`] GETs of ConfigMaps from kapi itself, for what a request kapi answers on its own
/// costs next to one it proxies.
async fn own_gets(kapi: &kube::Client, child: u32) -> String {
    use k8s_openapi::api::core::v1::ConfigMap;
    let config_maps: Api<ConfigMap> = Api::namespaced(kapi.clone(), NAMESPACE);
    common::creates(FLUNDERS, |i| {
        let config_maps = config_maps.clone();
        async move {
            let object: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": format!("c-{i}")}, "data": {"key": "value"}}))
            .expect("config map");
            config_maps
                .create(&PostParams::default(), &object)
                .await
                .map(drop)
        }
    })
    .await;
    measured(child, || gets(&config_maps, "c")).await
}

async fn lists(flunders: &Api<DynamicObject>) -> (String, usize) {
    let started = Instant::now();
    let results: Vec<(Duration, Result<(), kube::Error>)> = futures::stream::iter(0..LISTS)
        .map(|_| async {
            let begun = Instant::now();
            let listed = flunders.list(&ListParams::default()).await;
            let listed = listed.map(|list| assert_eq!(list.items.len(), FLUNDERS));
            (begun.elapsed(), listed)
        })
        .buffer_unordered(4)
        .collect()
        .await;
    (common::summary(results, started.elapsed()), LISTS)
}

/// Runs `workload` and appends the server CPU it cost per request: kapi's (this process but
/// its main thread, the client's) and the sample server's (`child`).
async fn measured<F, Fut>(child: u32, workload: F) -> String
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = (String, usize)>,
{
    let child_stat = format!("/proc/{child}/stat");
    let before = (
        cpu("/proc/self/stat"),
        cpu("/proc/thread-self/stat"),
        cpu(&child_stat),
    );
    let (report, requests) = workload().await;
    let after = (
        cpu("/proc/self/stat"),
        cpu("/proc/thread-self/stat"),
        cpu(&child_stat),
    );
    let kapi = (after.0 - before.0) - (after.1 - before.1);
    let wardle = after.2 - before.2;
    let per = |seconds: f64| seconds * 1000.0 / requests as f64;
    format!(
        "{report}; server CPU per request: kapi {:.3} ms, sample server {:.3} ms",
        per(kapi),
        per(wardle)
    )
}

/// Delivery latency of [`WATCHED`] creates (sent directly, one at a time) to a watch through
/// kapi and to a watch of the sample server itself, opened together.
async fn watch_delivery(
    proxied: &Api<DynamicObject>,
    direct: &Api<DynamicObject>,
) -> (String, String) {
    let params = WatchParams::default().labels("app=watched").timeout(290);
    let list = direct
        .list(&ListParams::default().limit(1))
        .await
        .expect("list");
    let version = list.metadata.resource_version.expect("a resourceVersion");
    let through = proxied
        .watch(&params, &version)
        .await
        .expect("watch")
        .boxed();
    let own = direct
        .watch(&params, &version)
        .await
        .expect("watch")
        .boxed();
    let sent: Arc<parking_lot::Mutex<Vec<Instant>>> = Arc::default();
    let arrivals =
        |stream: futures::stream::BoxStream<'static, kube::Result<WatchEvent<DynamicObject>>>| {
            let sent = sent.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut stream = stream;
                while latencies.len() < WATCHED {
                    let object = match stream.next().await {
                        None => break,
                        Some(Ok(WatchEvent::Added(object))) => object,
                        Some(_) => continue,
                    };
                    let index: usize = object.metadata.name.expect("name")[2..]
                        .parse()
                        .expect("index");
                    let at = sent.lock()[index];
                    latencies.push(at.elapsed());
                }
                latencies
            })
        };
    let (through, own) = (arrivals(through), arrivals(own));
    for i in 0..WATCHED {
        let mut object = flunder(&format!("w-{i}"));
        object.metadata.labels = Some([("app".to_string(), "watched".to_string())].into());
        sent.lock().push(Instant::now());
        direct
            .create(&PostParams::default(), &object)
            .await
            .expect("create");
    }
    let report = |mut latencies: Vec<Duration>| {
        latencies.sort();
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        format!(
            "p50 {:.2} ms, p99 {:.2} ms",
            at(0.5).as_secs_f64() * 1000.0,
            at(0.99).as_secs_f64() * 1000.0
        )
    };
    let wait = Duration::from_secs(60);
    let through = tokio::time::timeout(wait, through)
        .await
        .expect("delivered")
        .expect("task");
    let own = tokio::time::timeout(wait, own)
        .await
        .expect("delivered")
        .expect("task");
    (report(through), report(own))
}
