//! CustomResourceDefinition benchmark: how fast a CRD comes alive, how fast its custom
//! resources are created with a schema and CEL rules, what each installed CRD costs in memory,
//! and how long aggregated discovery takes with 1,000 CRDs installed.
//!
//! `cargo bench -p kapi --bench crds`
//!
//! A kapi server on the embedded store runs in this process (see `common::with_server`);
//! memory is the process's resident set, read from `/proc/self/status`.

#![recursion_limit = "256"]

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

mod common;
use common::{CONCURRENCY, creates};

const NAMESPACE: &str = "bench";
/// Custom resources created against the CRD with 5 CEL rules.
const WIDGETS: usize = 5_000;
/// CRDs created one at a time and timed until Established and until their first object.
const TIMED_CRDS: usize = 20;
/// CRDs installed for the memory and discovery figures.
const FLEET: usize = 1_000;
/// CRDs per API group in the fleet (upstream operators ship several kinds per group).
const KINDS_PER_GROUP: usize = 10;
/// Aggregated discovery requests timed.
const DISCOVERY_REQUESTS: usize = 20;
/// The Accept header of kubectl's aggregated discovery request.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn main() {
    common::with_server(|kubeconfig, _| async move {
        let client = common::client(&kubeconfig).await;
        common::start_report(&client, NAMESPACE).await;
        let report = time_to_established(&client, "empty").await;
        println!(
            "| CRD create → Established / → first custom resource created, no other CRDs | {report} |"
        );
        let widgets = install(&client, widget_crd()).await;
        let size = serde_json::to_vec(&widget(0)).expect("json").len();
        let report = creates(WIDGETS, |i| {
            let widgets = widgets.clone();
            async move {
                let object = serde_json::from_value(widget(i)).expect("widget");
                widgets
                    .create(&PostParams::default(), &object)
                    .await
                    .map(drop)
            }
        })
        .await;
        println!(
            "| custom resource creates ({size} B each; structural schema, defaults, 5 CEL rules), concurrency {CONCURRENCY} | {report} |"
        );
        let report = install_fleet(&client).await;
        println!(
            "| {FLEET} more CRDs created and Established (concurrency {CONCURRENCY}) | {report} |"
        );
        let report = time_to_established(&client, "full").await;
        println!(
            "| CRD create → Established / → first custom resource created, {FLEET} other CRDs | {report} |"
        );
        let report = aggregated_discovery(&client).await;
        println!(
            "| aggregated discovery (`GET /apis`, as kubectl asks), {FLEET} CRDs | {report} |"
        );
    });
}

/// Creates [`TIMED_CRDS`] CRDs one after another; for each, the time until it is Established
/// and until a first custom resource of it is created (retried while its path is not served).
async fn time_to_established(client: &kube::Client, tag: &str) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut established = Vec::new();
    let mut first_object = Vec::new();
    for i in 0..TIMED_CRDS {
        let group = format!("timed-{tag}.example.com");
        let crd = fleet_crd(&group, &format!("Timed{i}"));
        let name = crd["metadata"]["name"].as_str().expect("name").to_string();
        let crd = serde_json::from_value(crd).expect("crd");
        let started = Instant::now();
        crds.create(&PostParams::default(), &crd)
            .await
            .expect("create crd");
        while !is_established(&crds.get(&name).await.expect("crd")) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never Established"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        established.push(started.elapsed());
        let api = Api::<DynamicObject>::namespaced_with(
            client.clone(),
            NAMESPACE,
            &resource(&group, &format!("Timed{i}")),
        );
        let object =
            serde_json::from_value(fleet_object(&group, &format!("Timed{i}"))).expect("object");
        while api.create(&PostParams::default(), &object).await.is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "never served");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        first_object.push(started.elapsed());
    }
    format!(
        "Established: {}; first object: {} ({TIMED_CRDS} CRDs, polled every 1 ms)",
        percentiles(&mut established),
        percentiles(&mut first_object)
    )
}

/// The median and worst of `times`, in milliseconds.
fn percentiles(times: &mut [Duration]) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "p50 {:.1} ms, max {:.1} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    )
}

/// Installs [`FLEET`] CRDs and waits until all are Established; reports the time taken and
/// the growth of the resident set per CRD.
async fn install_fleet(client: &kube::Client) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let before = resident_bytes();
    let started = Instant::now();
    futures::stream::iter(0..FLEET)
        .map(|i| {
            let crds = crds.clone();
            async move {
                let group = format!("fleet{}.example.com", i / KINDS_PER_GROUP);
                let crd =
                    serde_json::from_value(fleet_crd(&group, &format!("Kind{i}"))).expect("crd");
                crds.create(&PostParams::default(), &crd)
                    .await
                    .expect("create crd");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<()>()
        .await;
    let params = ListParams::default().labels("bench=fleet");
    loop {
        let list = crds.list(&params).await.expect("list crds");
        if list.items.iter().filter(|c| is_established(c)).count() == FLEET {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "fleet never Established"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let established = started.elapsed();
    while served_fleet_kinds(client).await < FLEET {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "fleet never served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let served = started.elapsed();
    let after = resident_bytes();
    let per_crd = after.saturating_sub(before) as f64 / FLEET as f64 / 1024.0;
    format!(
        "all Established after {:.1} s, all served (in discovery) after {:.1} s; resident set {:.1} → {:.1} MiB: {per_crd:.0} KiB per CRD",
        established.as_secs_f64(),
        served.as_secs_f64(),
        before as f64 / 1048576.0,
        after as f64 / 1048576.0
    )
}

/// The number of kinds of the fleet's groups in aggregated discovery.
async fn served_fleet_kinds(client: &kube::Client) -> usize {
    let document = aggregated(client).await;
    let groups = document["items"].as_array().cloned().unwrap_or_default();
    groups
        .iter()
        .filter(|g| {
            g["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("fleet"))
        })
        .flat_map(|g| g["versions"].as_array().cloned().unwrap_or_default())
        .map(|v| v["resources"].as_array().map_or(0, Vec::len))
        .sum()
}

/// The aggregated discovery document of `/apis`.
async fn aggregated(client: &kube::Client) -> Value {
    let request = http::Request::get("/apis")
        .header(http::header::ACCEPT, AGGREGATED)
        .body(Vec::new())
        .expect("request");
    let body = client.request_text(request).await.expect("discovery");
    serde_json::from_str(&body).expect("discovery JSON")
}

/// Times [`DISCOVERY_REQUESTS`] aggregated discovery requests for `/apis`.
async fn aggregated_discovery(client: &kube::Client) -> String {
    let mut times = Vec::new();
    let mut document = Value::Null;
    for _ in 0..DISCOVERY_REQUESTS {
        let started = Instant::now();
        document = aggregated(client).await;
        times.push(started.elapsed());
    }
    let groups = document["items"].as_array().map_or(0, Vec::len);
    let size = serde_json::to_vec(&document).expect("json").len();
    format!(
        "{} ({groups} groups, {:.1} MiB document)",
        percentiles(&mut times),
        size as f64 / 1048576.0
    )
}

/// Whether `crd` has the condition Established=True.
fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

/// The resident set of this process (server and client), from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// The namespaced resource of kind `kind` in `group`, version v1.
fn resource(group: &str, kind: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

/// Creates `crd` and waits until it is Established; the API of its objects in [`NAMESPACE`].
async fn install(client: &kube::Client, crd: Value) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd["metadata"]["name"].as_str().expect("name").to_string();
    let group = crd["spec"]["group"].as_str().expect("group").to_string();
    let kind = crd["spec"]["names"]["kind"]
        .as_str()
        .expect("kind")
        .to_string();
    let crd = serde_json::from_value(crd).expect("crd");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("create crd");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !is_established(&crds.get(&name).await.expect("crd")) {
        assert!(Instant::now() < deadline, "the CRD was not Established");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Api::namespaced_with(client.clone(), NAMESPACE, &resource(&group, &kind))
}

/// `widgets.bench.example.com`: a structural schema with defaults, an enum, a map, a list-map
/// with defaulted keys, five CEL rules and a status subresource.
fn widget_crd() -> Value {
    json!({
        "metadata": {"name": "widgets.bench.example.com"},
        "spec": {
            "group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas <= maxReplicas"},
                            {"rule": "self.ports.all(p, p.port > 0 && p.port < 65536)"},
                            {"rule": "self.image.startsWith('registry.example.com/')",
                             "messageExpression": "'image ' + self.image + ' is not from the registry'"},
                            {"rule": "self.labels.size() <= 16", "reason": "FieldValueForbidden"},
                            {"rule": "self.mode != 'Passive' || self.replicas == 0",
                             "fieldPath": ".replicas"}],
                        "properties": {
                            "image": {"type": "string", "maxLength": 253},
                            "replicas": {"type": "integer", "minimum": 0, "default": 1},
                            "maxReplicas": {"type": "integer", "default": 10},
                            "mode": {"type": "string", "enum": ["Active", "Passive"], "default": "Active"},
                            "labels": {"type": "object", "maxProperties": 32,
                                "additionalProperties": {"type": "string", "maxLength": 63}},
                            "ports": {"type": "array", "maxItems": 16, "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object",
                                "required": ["name", "port"], "properties": {
                                    "name": {"type": "string", "maxLength": 15},
                                    "port": {"type": "integer"},
                                    "protocol": {"type": "string", "default": "TCP"}}}}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}],
        },
    })
}

/// A Widget of about 600 bytes.
fn widget(i: usize) -> Value {
    let labels: serde_json::Map<String, Value> = (0..8)
        .map(|n| {
            (
                format!("label-{n}"),
                Value::from(format!("value-{n}-of-{i}")),
            )
        })
        .collect();
    json!({
        "apiVersion": "bench.example.com/v1", "kind": "Widget",
        "metadata": {"name": format!("widget-{i}"), "labels": {"app": "bench"}},
        "spec": {
            "image": "registry.example.com/team/widget:2.4.1",
            "replicas": 3, "maxReplicas": 12, "labels": labels,
            "ports": [{"name": "http", "port": 8080}, {"name": "grpc", "port": 9090},
                {"name": "metrics", "port": 9100, "protocol": "TCP"}],
        },
    })
}

/// An operator's CRD as they usually look: a spec of about 20 fields (nested objects, a
/// list-map, a map, enums, defaults, two CEL rules), a status with conditions, printer
/// columns, a short name and a category, status and scale subresources. About 5 KiB.
fn fleet_crd(group: &str, kind: &str) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    let condition = json!({"type": "object", "required": ["type", "status"], "properties": {
        "type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string"}, "message": {"type": "string"},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "observedGeneration": {"type": "integer", "format": "int64"}}});
    let spec = json!({"type": "object", "required": ["image"],
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
            {"rule": "!has(self.tls) || self.tls.secretName != ''", "message": "tls needs a secret"}],
        "properties": {
            "image": {"type": "string", "maxLength": 512},
            "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
            "maxReplicas": {"type": "integer", "format": "int32", "default": 10},
            "paused": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["Active", "Standby", "Disabled"], "default": "Active"},
            "schedule": {"type": "string", "pattern": "^(@every .+|[0-9*/, -]+)$"},
            "timeout": {"type": "string"},
            "port": {"x-kubernetes-int-or-string": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"},
                    "secretRef": {"type": "object", "properties": {
                        "name": {"type": "string"}, "key": {"type": "string"}}}}}},
            "resources": {"type": "object", "properties": {
                "limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
                "requests": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}}}},
            "tls": {"type": "object", "properties": {
                "secretName": {"type": "string"}, "issuer": {"type": "string"},
                "dnsNames": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}}},
            "storage": {"type": "object", "properties": {
                "size": {"type": "string"}, "class": {"type": "string"},
                "accessModes": {"type": "array", "items": {"type": "string"}}}},
            "selector": {"type": "object", "properties": {
                "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    let status = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"},
        "selector": {"type": "string"}, "phase": {"type": "string"},
        "observedGeneration": {"type": "integer", "format": "int64"},
        "conditions": {"type": "array", "items": condition,
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}}});
    json!({
        "metadata": {"name": format!("{plural}.{group}"), "labels": {"bench": if group.starts_with("fleet") { "fleet" } else { "timed" }}},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                "shortNames": [format!("{}x", kind.to_lowercase())], "categories": ["bench"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                "additionalPrinterColumns": [
                    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
                    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": spec, "status": status}}}}],
        },
    })
}

/// A valid object of the fleet CRD of `kind` in `group`.
fn fleet_object(group: &str, kind: &str) -> Value {
    json!({
        "apiVersion": format!("{group}/v1"), "kind": kind,
        "metadata": {"name": "first"},
        "spec": {"image": "registry.example.com/app:1.0", "replicas": 2, "port": "http",
            "env": [{"name": "MODE", "value": "fast"}], "tls": {"secretName": "app-tls"}},
    })
}
