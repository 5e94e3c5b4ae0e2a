//! Protobuf responses (`application/vnd.kubernetes.protobuf`), which client-go components ask
//! for first. Every built-in kind (the objects of fixtures/every-kind.yaml, kinds from
//! discovery) is read with GET and LIST in JSON and in protobuf; the protobuf is read by
//! k8s-pb's messages, generated from upstream's `.proto` files (an implementation
//! independent of kapi's), and must hold exactly what the JSON holds. Watch frames, Status
//! errors, discovery documents, PartialObjectMetadata and the 406s of custom resources and
//! Tables are checked the same way.

use crate::common;

use std::time::Duration;

use common::Backend;
use common::process::{Client, Kapi, Reply};
use http::Method;
use kapi_protobuf::{MAGIC, schema};
use prost::Message;
use serde_json::{Value, json};

use crate::round_trip::{
    EVERY_KIND, api_version_kind, certificate_signing_request, creatable_kinds, object_path,
};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Whether `value` is a Go zero value: Go's JSON shows some unset fields (`""`, `0`,
/// `false`, `null`, `{}`, structs of them) and leaves others out, per each field's tags, and
/// kapi's stored JSON does not always make the same choice; protobuf only has "not set".
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.values().all(is_zero),
    }
}

/// Where `a` and `b` differ, other than in members one of them leaves out and the other
/// holds at a zero value.
fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                let here = format!("{path}.{key}");
                match (x.get(key), y.get(key)) {
                    (Some(v), Some(w)) => difference(v, w, &here)?,
                    (Some(v), None) | (None, Some(v)) if is_zero(v) => continue,
                    _ => return Some(here),
                };
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| difference(v, w, &format!("{path}[{i}]"))),
        (v, w) if v == w || (is_zero(v) && is_zero(w)) => None,
        _ => Some(path.to_string()),
    }
}

/// Reads a protobuf body: its envelope, its object through k8s-pb's message (which must
/// read it), and the JSON that object is.
fn read(body: &[u8]) -> Value {
    let rest = body.strip_prefix(MAGIC).expect("the protobuf magic");
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(rest).expect("an Unknown");
    let type_meta = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
    );
    let message = schema::lookup(&api_version, &kind).expect("a kind kapi knows");
    let raw = unknown.raw.unwrap_or_default();
    let again = kapi_testing::k8s_pb::reencode(message.name, &raw)
        .unwrap_or_else(|err| panic!("k8s-pb cannot read {api_version} {kind}: {err}"));
    kapi_protobuf::decode_object(&api_version, &kind, &again).expect("decodes")
}

async fn get_as(client: &Client, path: &str, accept: &str) -> Reply {
    client
        .send(
            Method::GET,
            path,
            &[("accept", accept)],
            bytes::Bytes::new(),
        )
        .await
}

/// GETs `path` in JSON and protobuf until both show the same resourceVersion (controllers
/// may write between them); fails unless they hold the same object.
async fn same_in_both(client: &Client, path: &str) -> Result<(), String> {
    for _ in 0..10 {
        let json = get_as(client, path, "application/json").await;
        let proto = get_as(client, path, PROTOBUF).await;
        if json.status != 200 || proto.status != 200 {
            return Err(format!("GET {path}: {} / {}", json.status, proto.status));
        }
        let content_type = proto
            .headers
            .get("content-type")
            .map(|v| v.to_str().unwrap());
        if content_type != Some(PROTOBUF) {
            return Err(format!("GET {path}: content-type {content_type:?}"));
        }
        let (mut json, proto) = (json.json(), read(&proto.bytes));
        // Protobuf list items carry no apiVersion and kind (the list's message says them).
        let items = json.get_mut("items").and_then(Value::as_array_mut);
        for item in items.into_iter().flatten() {
            if let Some(item) = item.as_object_mut() {
                item.remove("apiVersion");
                item.remove("kind");
            }
        }
        let revision = |v: &Value| v["metadata"]["resourceVersion"].clone();
        if revision(&json) != revision(&proto) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        if let Some(at) = difference(&json, &proto, "") {
            return Err(format!(
                "{path}: differs at {at}:\n  json  {json}\n  proto {proto}"
            ));
        }
        return Ok(());
    }
    Err(format!("{path}: changed under every read"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_kind_reads_the_same_in_protobuf_and_json() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let created = common::kubectl(&kubeconfig, &["create", "-f", "-"], Some(EVERY_KIND)).await;
    assert!(created.status.success(), "{}", common::stderr(&created));
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    admin.create(csrs, certificate_signing_request()).await;

    let mut samples: Vec<Value> = EVERY_KIND
        .split("\n---\n")
        .map(|document| serde_yaml_ng::from_str(document).expect("a YAML object"))
        .collect();
    samples.push(certificate_signing_request());
    let kinds = creatable_kinds(&admin).await;
    let mut failures = Vec::new();
    for (kind, collection) in &kinds {
        let sample = samples.iter().find(|s| api_version_kind(s) == *kind);
        let sample = sample.expect("round_trip checks every kind has a sample");
        let object = object_path(collection, sample);
        if let Err(failure) = same_in_both(&admin, &object).await {
            failures.push(failure);
        }
        // The list the object is in (its namespace's, for namespaced kinds).
        let list = object.rsplit_once('/').expect("a path").0;
        if let Err(failure) = same_in_both(&admin, list).await {
            failures.push(failure);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{} kinds read the same in protobuf and JSON", kinds.len());
    kapi.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_frames_status_discovery_and_metadata_in_protobuf() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for name in ["a", "b"] {
        let cm = json!({"metadata": {"name": name, "labels": {"pb": "yes"}}, "data": {"k": name}});
        admin.create(configmaps, cm).await;
    }
    // Only this test's objects (not kube-root-ca.crt, which a controller writes).
    let selected = format!("{configmaps}?labelSelector=pb%3Dyes");

    // A watch: length-prefixed WatchEvents (read with k8s-pb's message), ADDED for each
    // object, then the BOOKMARK that ends the initial events.
    let watch = format!(
        "{selected}&watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    let reply = get_as(&admin, &watch, &format!("{PROTOBUF};stream=watch")).await;
    assert_eq!(reply.status, 200);
    let content_type = reply.headers.get("content-type").unwrap();
    assert_eq!(
        content_type,
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let events = frames(&reply.bytes);
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "BOOKMARK"], "{events:?}");
    let list = admin.get(&selected).await.json();
    for ((_, object), item) in events.iter().zip(list["items"].as_array().unwrap()) {
        let mut item = item.clone();
        item["kind"] = json!("ConfigMap");
        item["apiVersion"] = json!("v1");
        assert_eq!(difference(object, &item, ""), None, "{object}\n{item}");
    }
    let bookmark = &events[2].1;
    assert_eq!(bookmark["kind"], "ConfigMap");
    let annotations = &bookmark["metadata"]["annotations"];
    assert_eq!(annotations["k8s.io/initial-events-end"], "true");
    // The watch left the watch cache the objects' messages: a LIST frames them as items.
    same_in_both(&admin, &selected)
        .await
        .expect("a list of the watched objects");
    // And a GET served from the cache frames it as a body.
    same_in_both(&admin, &format!("{configmaps}/a?resourceVersion=0"))
        .await
        .expect("a GET from the cache");

    // Errors are Status objects in protobuf too.
    let missing = get_as(&admin, &format!("{configmaps}/nope"), PROTOBUF).await;
    assert_eq!(missing.status, 404);
    let json = get_as(&admin, &format!("{configmaps}/nope"), "application/json").await;
    assert_eq!(read(&missing.bytes), json.json());
    let anonymous = kapi.anonymous();
    let forbidden = get_as(&anonymous, configmaps, PROTOBUF).await;
    assert_eq!(forbidden.status, 403);
    assert_eq!(read(&forbidden.bytes)["reason"], "Forbidden");

    // Discovery documents.
    for path in ["/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"] {
        let proto = get_as(&admin, path, &format!("{PROTOBUF}, */*")).await;
        assert_eq!(proto.status, 200, "{path}");
        let mut json = admin.get(path).await.json();
        // Unversioned meta kinds: protobuf's envelope names them v1, their JSON may not.
        json["apiVersion"] = json!("v1");
        assert_eq!(difference(&read(&proto.bytes), &json, ""), None, "{path}");
    }
    let aggregated = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let proto = get_as(&admin, "/apis", &format!("{PROTOBUF};{aggregated}")).await;
    let json = get_as(&admin, "/apis", &format!("application/json;{aggregated}")).await;
    assert_eq!(
        proto.headers.get("content-type").unwrap().to_str().unwrap(),
        format!("{PROTOBUF};{aggregated}")
    );
    assert_eq!(proto.headers.get("etag"), json.headers.get("etag"));
    assert_eq!(difference(&read(&proto.bytes), &json.json(), ""), None);

    // PartialObjectMetadata(List) in protobuf; Tables only in JSON.
    let meta_list = format!("{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
    let proto = read(&get_as(&admin, &selected, &meta_list).await.bytes);
    assert_eq!(proto["kind"], "PartialObjectMetadataList");
    let names: Vec<&str> = proto["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let table = format!("{PROTOBUF};as=Table;g=meta.k8s.io;v=v1");
    let refused = get_as(&admin, configmaps, &table).await;
    assert_eq!(refused.status, 406, "{}", refused.body);
    // A PartialObjectMetadataList asked of one object is upstream's 406 (in JSON: errors
    // take no transformation), whatever follows it.
    let one = format!("{configmaps}/a");
    let wrong = get_as(&admin, &one, &format!("{meta_list}, application/json")).await;
    assert_eq!(wrong.status, 406);
    assert_eq!(
        wrong.json()["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    // It comes once the object was read, as upstream's transform refuses: a missing one is
    // a 404 first.
    let missing = get_as(&admin, &format!("{configmaps}/missing"), &meta_list).await;
    assert_eq!(missing.status, 404, "{}", missing.body);

    // Custom resources have no protobuf: 406, as upstream, unless JSON is accepted too.
    let widgets = common::install_widgets(&admin).await;
    let reply = get_as(&admin, widgets, PROTOBUF).await;
    assert_eq!(reply.status, 406, "{}", reply.body);
    // The Status itself is in protobuf, which the client asked for.
    assert_eq!(
        read(&reply.bytes)["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let both = get_as(&admin, widgets, &format!("{PROTOBUF}, application/json")).await;
    assert_eq!(both.status, 200);
    assert_eq!(both.json()["kind"], "WidgetList");
    let metadata = get_as(&admin, widgets, &meta_list).await;
    assert_eq!(read(&metadata.bytes)["kind"], "PartialObjectMetadataList");
    kapi.stop().await;
}

/// The events of a protobuf watch body: (type, object) of each length-prefixed WatchEvent,
/// read with k8s-pb's message.
fn frames(mut body: &[u8]) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    while !body.is_empty() {
        let len = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
        let event =
            k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&body[4..4 + len])
                .expect("a WatchEvent");
        let object = event.object.and_then(|o| o.raw).unwrap_or_default();
        events.push((event.r#type.unwrap_or_default(), read(&object)));
        body = &body[4 + len..];
    }
    events
}

/// A protobuf LIST writes its items' total length first, so it measures every item before it
/// sends one: it keeps the first megabyte of items it encoded to measure and encodes the rest
/// again as it sends them, and the watch cache remembers each object's length, so that later
/// LISTs encode as the client reads. Every path must give the list the JSON gives: a list
/// over that megabyte (first, and again with the encodings kept or the lengths remembered),
/// after one of its objects changed, pages of it, and a list at an exact resourceVersion,
/// read from storage where nothing is remembered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_lists_in_protobuf_read_the_same_as_in_json() {
    let kept = large_lists_read_the_same(&[]).await;
    assert!(
        kept > 300 * 8 * 1024,
        "every item's encoding is kept: {kept}"
    );
}

/// The same with a budget that keeps the encodings of some items of the list only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_lists_in_protobuf_read_the_same_beyond_the_kept_encodings() {
    let kept = large_lists_read_the_same(&["--watch-cache-protobuf-mb=1"]).await;
    assert!((1..=1 << 20).contains(&kept), "within the budget: {kept}");
}

/// Runs the large-list checks on a server started with `flags`; returns the bytes of
/// encodings its watch caches keep at the end.
async fn large_lists_read_the_same(flags: &[&str]) -> u64 {
    let kapi = Kapi::start(Backend::Embedded, flags).await;
    let admin = kapi.admin();
    admin
        .create("/api/v1/namespaces", json!({"metadata": {"name": "big"}}))
        .await;
    let configmaps = "/api/v1/namespaces/big/configmaps";
    let data = "x".repeat(8 * 1024);
    for i in 0..300 {
        let body = json!({"metadata": {"name": format!("cm-{i:03}"), "labels": {"n": i.to_string()}},
            "data": {"value": data}});
        admin.create(configmaps, body).await;
    }
    for _ in 0..2 {
        same_in_both(&admin, configmaps)
            .await
            .expect("the whole list");
    }
    let changed = json!({"metadata": {"name": "cm-000"}, "data": {"value": "changed"}});
    let reply = admin
        .write(Method::PUT, &format!("{configmaps}/cm-000"), &changed)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.json());
    same_in_both(&admin, configmaps)
        .await
        .expect("the list after a change");
    same_in_both(&admin, &format!("{configmaps}?limit=100"))
        .await
        .expect("a page");
    let revision = admin.get(configmaps).await.json()["metadata"]["resourceVersion"].clone();
    let revision = revision.as_str().expect("a resourceVersion");
    let exact = format!("{configmaps}?resourceVersion={revision}&resourceVersionMatch=Exact");
    same_in_both(&admin, &exact)
        .await
        .expect("a list read from storage");
    let proto = read(&get_as(&admin, configmaps, PROTOBUF).await.bytes);
    let names = proto["items"].as_array().expect("items").iter();
    let made = names.filter(|item| {
        item["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("cm-"))
    });
    assert_eq!(made.count(), 300);
    assert_eq!(proto["items"][0]["data"]["value"], "changed");
    // A watch's initial events frame the messages the LISTs kept (encoding the others).
    let watch = format!(
        "{configmaps}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2"
    );
    let events = frames(
        &get_as(&admin, &watch, &format!("{PROTOBUF};stream=watch"))
            .await
            .bytes,
    );
    let list = admin.get(configmaps).await.json();
    let items = list["items"].as_array().expect("items");
    assert_eq!(
        events.len(),
        items.len() + 1,
        "each object, then a bookmark"
    );
    for ((type_, object), item) in events.iter().zip(items) {
        let mut item = item.clone();
        item["kind"] = json!("ConfigMap");
        item["apiVersion"] = json!("v1");
        assert_eq!(type_, "ADDED");
        assert_eq!(difference(object, &item, ""), None, "{object}\n{item}");
    }
    let metrics = admin.get("/metrics").await.body;
    let kept = metrics
        .lines()
        .find_map(|line| line.strip_prefix("kapi_watch_cache_protobuf_bytes "))
        .and_then(|value| value.trim().parse().ok())
        .expect("kapi_watch_cache_protobuf_bytes");
    kapi.stop().await;
    kept
}
