//! Protobuf against JSON: LISTs of 10,000 realistic Pods (about 4 KiB of JSON each) and watch
//! delivery of ConfigMap events, in `application/json` and `application/vnd.kubernetes.protobuf`,
//! reporting the server CPU per request (or per delivered event) and the bytes sent.
//!
//! `cargo bench -p kapi --bench protobuf [-- <kapi serve flags>]`
//!
//! The server runs in this process on the embedded store; the client (kube-rs's HTTP client,
//! reading bodies without parsing them) on this thread, whose CPU is left out of the server's.
//! Flags after `--` go to the server: `--storage-media-type application/vnd.kubernetes.protobuf`
//! measures protobuf storage, `--encryption-provider-config <file>` encryption at rest.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

mod common;
use common::{CONCURRENCY, server_cpu};
use serde_json::json;

const PODS: usize = 10_000;
const LISTS: usize = 10;
const WATCHERS: usize = 50;
const EVENTS: usize = 200;
const NAMESPACE: &str = "bench";
const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn main() {
    // Cargo passes `--bench` to harness-less benches; the rest are the server's flags.
    let flags: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    println!("server flags: {flags:?}");
    common::with_server_flags(&flags, |kubeconfig, _| async move {
        let client = common::client(&kubeconfig).await;
        common::start_report(&client, NAMESPACE).await;
        let report = common::create_pods(&client, NAMESPACE, PODS).await;
        println!("| {PODS} Pod creates, concurrency {CONCURRENCY} | {report} |");
        let path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
        let waited = common::wait_until_quiet().await;
        println!("| idle again after the creates | {waited:.1} s |");
        // The first LIST of each format apart: it is the one that encodes what the watch
        // cache keeps (see --watch-cache-protobuf-mb).
        for accept in [JSON, PROTOBUF] {
            let (cpu, wall, bytes) = list(&client, &path, accept).await;
            println!(
                "| first LIST of {PODS} Pods as {accept} | server CPU {:.1} ms, {:.1} ms wall, {:.1} MB |",
                cpu * 1000.0,
                wall * 1000.0,
                bytes as f64 / 1e6
            );
        }
        println!(
            "| protobuf encodings the watch caches keep | {:.1} MB |",
            kapi_server::cacher::kept_bytes() as f64 / 1e6
        );
        let mut totals = [(0.0, 0.0, 0usize); 2];
        // Alternating, so that both formats see the same machine.
        for _ in 0..LISTS {
            for (i, accept) in [JSON, PROTOBUF].into_iter().enumerate() {
                let (cpu, wall, bytes) = list(&client, &path, accept).await;
                totals[i].0 += cpu;
                totals[i].1 += wall;
                totals[i].2 = bytes;
            }
        }
        for (i, accept) in [JSON, PROTOBUF].into_iter().enumerate() {
            let (cpu, wall, bytes) = totals[i];
            println!(
                "| LIST of {PODS} Pods as {accept}, {LISTS} more lists one at a time | server CPU {:.1} ms per LIST, {:.1} ms per LIST wall, {:.1} MB per LIST |",
                cpu * 1000.0 / LISTS as f64,
                wall * 1000.0 / LISTS as f64,
                bytes as f64 / 1e6
            );
        }
        for accept in [JSON, PROTOBUF] {
            println!("{}", watch_delivery(&client, accept).await);
        }
    });
}

/// One LIST of `path` in `accept`: server CPU seconds, wall seconds and bytes.
async fn list(client: &kube::Client, path: &str, accept: &str) -> (f64, f64, usize) {
    let request = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .expect("request");
    common::wait_until_quiet().await;
    let (cpu, start) = (server_cpu(), Instant::now());
    let response = client.send(request).await.expect("LIST");
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.expect("body");
    let bytes = body.to_bytes().len();
    (server_cpu() - cpu, start.elapsed().as_secs_f64(), bytes)
}

/// [`WATCHERS`] watches of ConfigMaps in `accept`, then [`EVENTS`] creates: server CPU per
/// delivered event and bytes per event, once every watcher has read every event.
async fn watch_delivery(client: &kube::Client, accept: &str) -> String {
    let namespace = format!(
        "watch-{}",
        if accept == PROTOBUF {
            "protobuf"
        } else {
            "json"
        }
    );
    common::create_namespace(client, &namespace).await;
    let path = format!("/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion=0");
    let mut bodies = Vec::new();
    for _ in 0..WATCHERS {
        let request = http::Request::get(&path)
            .header("accept", accept)
            .body(kube::client::Body::empty())
            .expect("request");
        let response = client.send(request).await.expect("watch");
        assert_eq!(response.status(), 200);
        bodies.push(response.into_body());
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let cpu = server_cpu();
    for i in 0..EVENTS {
        let object =
            json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": "v".repeat(256)}});
        let object = serde_json::from_value(object).expect("configmap");
        configmaps
            .create(&PostParams::default(), &object)
            .await
            .expect("create");
    }
    let protobuf = accept == PROTOBUF;
    let mut bytes = 0;
    for body in &mut bodies {
        bytes += read_events(body, EVENTS, protobuf).await;
    }
    let cpu = server_cpu() - cpu;
    let delivered = (WATCHERS * EVENTS) as f64;
    format!(
        "| {WATCHERS} watches as {accept}, {EVENTS} ConfigMap creates (256 B of data) | server CPU {:.1} µs per delivered event (creates included), {:.0} B per event |",
        cpu * 1e6 / delivered,
        bytes as f64 / delivered
    )
}

/// Reads `events` events from a watch body: newline-delimited JSON, or length-prefixed
/// protobuf frames. Returns the bytes read.
async fn read_events(body: &mut kube::client::Body, events: usize, protobuf: bool) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut buffer, mut seen, mut total) = (Vec::new(), 0, 0);
    while seen < events {
        assert!(Instant::now() < deadline, "events did not arrive");
        let frame = body.frame().await.expect("a frame").expect("no error");
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len();
        buffer.extend_from_slice(&data);
        loop {
            let end = match protobuf {
                true if buffer.len() >= 4 => {
                    let len = u32::from_be_bytes(buffer[..4].try_into().expect("4 bytes"));
                    Some(4 + len as usize).filter(|&end| end <= buffer.len())
                }
                true => None,
                false => buffer.iter().position(|&b| b == b'\n').map(|i| i + 1),
            };
            let Some(end) = end else { break };
            buffer.drain(..end);
            seen += 1;
        }
    }
    total
}
