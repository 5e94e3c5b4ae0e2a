//! Reliability: what a hostile or clumsy client can do to the `kapi` binary, and what kapi
//! promises in return (docs/RELIABILITY.md lists the promises and where each is tested).
//! Idle and slow connections, abandoned responses, the open-file limit; writes that would
//! change an object's type.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use common::Backend;
use common::process::{Checks, Client, Kapi, Reply};
use http::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The soft open-file limit systemd gives services by default.
const SYSTEMD_SOFT_LIMIT: u64 = 1024;

/// How long kapi lets a connection go without starting a request (upstream's
/// ReadHeaderTimeout), and the slack the test allows on top for a loaded machine.
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
const SLACK: Duration = Duration::from_secs(15);

/// The soft and hard open-file limits of a process, from /proc.
fn open_file_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("an open-file limit");
    let mut numbers = line.split_whitespace().skip(3);
    (
        numbers.next().unwrap_or_default().to_string(),
        numbers.next().unwrap_or_default().to_string(),
    )
}

/// Started with systemd's soft open-file limit, kapi raises it to the hard limit; 1,100
/// unauthenticated clients that complete the TLS handshake and send nothing (and 50 that
/// never even start it) lock nobody out, and all of them are closed within the read-header
/// timeout.
#[tokio::test]
async fn idle_connections_lock_nobody_out_and_are_closed() {
    let mut kapi = Kapi::new(Backend::Embedded, &[]).await;
    kapi.soft_open_files = Some(SYSTEMD_SOFT_LIMIT);
    kapi.launch().await;
    let pid = kapi.child.as_ref().expect("running").id();
    let (soft, hard) = open_file_limits(pid);
    assert_eq!(
        soft, hard,
        "the soft open-file limit is raised to the hard one"
    );

    let anonymous = kapi.anonymous();
    let opened = Instant::now();
    let mut idle = Vec::new();
    for _ in 0..1100 {
        idle.push(anonymous.connect().await.expect("handshake"));
    }
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(
            tokio::net::TcpStream::connect(kapi.address)
                .await
                .expect("connect"),
        );
    }
    eprintln!(
        "1,100 TLS and 50 TCP connections idle after {:?}",
        opened.elapsed()
    );

    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let output = common::kubectl(&kubeconfig, &["get", "namespaces", "-o", "name"], None).await;
    assert!(
        output.status.success(),
        "kubectl is locked out: {}",
        common::stderr(&output)
    );
    assert!(common::stdout(&output).contains("namespace/default"));

    let closed = async {
        let mut buffer = [0u8; 64];
        for mut connection in idle {
            // Closed: end of stream, or an error for a connection reset.
            while matches!(connection.read(&mut buffer).await, Ok(n) if n > 0) {}
        }
        for mut connection in silent {
            while matches!(connection.read(&mut buffer).await, Ok(n) if n > 0) {}
        }
    };
    tokio::time::timeout(READ_HEADER_TIMEOUT + SLACK, closed)
        .await
        .expect("idle connections are closed within the read-header timeout");
    eprintln!(
        "every idle connection closed {:?} after they were opened",
        opened.elapsed()
    );
    assert!(
        !kapi.log().contains("Too many open files"),
        "{}",
        kapi.log()
    );
    kapi.stop().await;
}

// ---------------------------------------------------------------------------------------------
// No write stores an object of another type than its resource's.

/// A PATCH of `body` as `content_type`.
async fn patch(client: &Client, path: &str, content_type: &str, body: &str) -> Reply {
    client
        .send(
            Method::PATCH,
            path,
            &[("content-type", content_type)],
            body.to_string(),
        )
        .await
}

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// Checks a patch's answer: `code`, and a message `message` (or, for upstream's 422 about the
/// field `patch`, whose value is the whole patched object, one that starts so and ends with
/// `message`).
fn expect(checks: &mut Checks, reply: &Reply, code: u16, message: &str) {
    let status = serde_json::from_str::<Value>(&reply.body).unwrap_or_default();
    let actual = status["message"].as_str().unwrap_or_default();
    let matches = if code == 422 && actual.starts_with(r#" "" is invalid: patch: Invalid value: "#)
    {
        actual.ends_with(message)
    } else {
        actual == message
    };
    checks.check(reply.status == code && matches, || {
        format!(
            "{}: expected {code} {message:?}, got {} {}",
            reply.request, reply.status, reply.body
        )
    });
}

/// Patches that change or remove `kind` and `apiVersion`, of every patch type, through the
/// resource and its status subresource: kapi answers what upstream's patch handler answers
/// (apiserver pkg/endpoints/handlers/patch.go decodes the patched JSON by the type it names),
/// and the stored object keeps its type whatever the answer.
#[tokio::test]
async fn patches_never_change_an_object_s_type() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let mut checks = Checks::default();
    let cms = "/api/v1/namespaces/default/configmaps";
    admin
        .create(cms, json!({"metadata": {"name": "k1"}, "data": {"a": "b"}}))
        .await;
    let k1 = &format!("{cms}/k1");
    let no_conversion = "converting (v1.Secret) to (core.ConfigMap): unknown conversion";
    let replace_kind = r#"[{"op":"replace","path":"/kind","value":"Secret"}]"#;
    expect(
        &mut checks,
        &patch(&admin, k1, JSON_PATCH, replace_kind).await,
        422,
        no_conversion,
    );
    let pod_in_apps = r#"no kind "Pod" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30""#;
    let to_pod = r#"{"kind":"Pod","apiVersion":"apps/v1"}"#;
    expect(
        &mut checks,
        &patch(&admin, k1, MERGE_PATCH, to_pod).await,
        422,
        pod_in_apps,
    );
    // Without apiVersion the patched JSON decodes into the internal type, which has no
    // field names: the name is lost (or, strictly, every field is unknown).
    let lost_name =
        "the name of the object (k1 based on URL) was undeterminable: name must be provided";
    let remove_version = r#"[{"op":"remove","path":"/apiVersion"}]"#;
    expect(
        &mut checks,
        &patch(&admin, k1, JSON_PATCH, remove_version).await,
        400,
        lost_name,
    );
    let strict = &format!("{k1}?fieldValidation=Strict");
    let unknown = r#"strict decoding error: unknown field "data", unknown field "metadata""#;
    expect(
        &mut checks,
        &patch(&admin, strict, JSON_PATCH, remove_version).await,
        422,
        unknown,
    );
    // A missing kind is the resource's; a strategic merge patch cannot change the type.
    for (content_type, body) in [
        (JSON_PATCH, r#"[{"op":"remove","path":"/kind"}]"#),
        (MERGE_PATCH, r#"{"kind":null,"data":{"c":"d"}}"#),
        (
            STRATEGIC_PATCH,
            r#"{"kind":"Secret","apiVersion":"apps/v1","data":{"e":"f"}}"#,
        ),
    ] {
        let reply = patch(&admin, k1, content_type, body).await;
        checks.check(
            reply.status == 200 && reply.json()["kind"] == "ConfigMap",
            || format!("{}: {} {}", reply.request, reply.status, reply.body),
        );
    }
    let apply = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"k1"}}"#;
    let applied = patch(&admin, &format!("{k1}?fieldManager=t"), APPLY_PATCH, apply).await;
    expect(
        &mut checks,
        &applied,
        400,
        "invalid object type: /v1, Kind=Secret",
    );
    let stored = admin.get(k1).await.json();
    checks.check(
        stored["kind"] == "ConfigMap" && stored["apiVersion"] == "v1" && stored["data"]["e"] == "f",
        || format!("the stored object changed type: {stored}"),
    );

    // Another served version of the same kind converts, as upstream decodes it.
    let hpas = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let hpa = json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}});
    admin.create(hpas, hpa).await;
    let to_v1 = r#"{"apiVersion":"autoscaling/v1"}"#;
    let reply = patch(&admin, &format!("{hpas}/h"), MERGE_PATCH, to_v1).await;
    checks.check(
        reply.status == 200
            && reply.json()["apiVersion"] == "autoscaling/v2"
            && reply.json()["spec"]["maxReplicas"] == 3,
        || format!("{}: {} {}", reply.request, reply.status, reply.body),
    );

    // Through a subresource.
    let pods = "/api/v1/namespaces/default/pods";
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    admin.create(pods, pod).await;
    let to_cm = r#"{"kind":"ConfigMap"}"#;
    let reply = patch(&admin, &format!("{pods}/p/status"), MERGE_PATCH, to_cm).await;
    expect(
        &mut checks,
        &reply,
        422,
        "converting (v1.ConfigMap) to (core.Pod): unknown conversion",
    );
    checks.check(
        admin.get(&format!("{pods}/p")).await.json()["kind"] == "Pod",
        || "the pod changed type".to_string(),
    );

    // Custom resources: the custom resource validator refuses another type.
    install_gadgets(&admin).await;
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    admin
        .create(
            gadgets,
            json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}),
        )
        .await;
    let g = &format!("{gadgets}/g");
    let reply = patch(&admin, g, MERGE_PATCH, r#"{"kind":"Foo"}"#).await;
    expect(
        &mut checks,
        &reply,
        422,
        r#"Foo.example.com "g" is invalid: kind: Invalid value: "Foo": must be Gadget"#,
    );
    let reply = patch(&admin, g, MERGE_PATCH, r#"{"apiVersion":"example.com/v2"}"#).await;
    expect(
        &mut checks,
        &reply,
        422,
        r#"Gadget.example.com "g" is invalid: apiVersion: Invalid value: "example.com/v2": must be example.com/v1"#,
    );
    let reply = patch(&admin, g, JSON_PATCH, r#"[{"op":"remove","path":"/kind"}]"#).await;
    checks.check(
        reply.status == 422 && reply.body.contains("Object 'Kind' is missing in"),
        || format!("{}: {} {}", reply.request, reply.status, reply.body),
    );
    let reply = patch(
        &admin,
        g,
        JSON_PATCH,
        r#"[{"op":"remove","path":"/apiVersion"}]"#,
    )
    .await;
    expect(
        &mut checks,
        &reply,
        500,
        "Internal error occurred: Object 'apiVersion' is missing in 'object has no apiVersion field'",
    );
    checks.check(admin.get(g).await.json()["kind"] == "Gadget", || {
        "the gadget changed type".to_string()
    });
    kapi.stop().await;
    checks.finish();
}

/// Installs `gadgets.example.com` (v1 stored, v2 served, any fields) and waits until its
/// objects can be listed.
async fn install_gadgets(admin: &Client) {
    let versions = ["v1", "v2"].map(|v| {
        json!({"name": v, "served": true, "storage": v == "v1", "schema": {"openAPIV3Schema":
            {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    });
    let crd = json!({
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "versions": versions,
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}},
    });
    admin
        .create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        )
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin.get("/apis/example.com/v1/gadgets").await.status != 200 {
        assert!(Instant::now() < deadline, "gadgets are never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A mutating webhook whose patch changes the object's kind: a built-in object fails to
/// convert (500, as upstream's dispatcher decodes the patched object), a custom resource is
/// refused by its validator (422); nothing is stored.
#[tokio::test]
async fn webhook_patches_never_change_an_object_s_type() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    install_gadgets(&admin).await;
    let (address, ca) = common::serve_webhook(|_, review: Value| async move {
        let patch = json!([{"op": "replace", "path": "/kind", "value": "Secret"}]);
        let response = json!({"uid": review["request"]["uid"], "allowed": true,
            "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())});
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    })
    .await;
    let hook = json!({
        "name": "retype.example.com",
        "clientConfig": {"url": format!("https://{address}/"),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["", "example.com"], "apiVersions": ["v1"],
            "resources": ["configmaps", "gadgets"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    let configurations = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
    admin
        .create(
            configurations,
            json!({"metadata": {"name": "retype"}, "webhooks": [hook]}),
        )
        .await;
    let mut checks = Checks::default();
    let cms = "/api/v1/namespaces/default/configmaps";
    let deadline = Instant::now() + Duration::from_secs(30);
    let reply = loop {
        // The configuration reaches admission through its watch cache.
        let name = format!("c{}", Instant::now().elapsed().as_nanos());
        let reply = admin
            .write(Method::POST, cms, &json!({"metadata": {"name": name}}))
            .await;
        if reply.status != 201 || Instant::now() > deadline {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    expect(
        &mut checks,
        &reply,
        500,
        "converting (v1.Secret) to (core.ConfigMap): unknown conversion",
    );
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    let gadget =
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}});
    let reply = admin.write(Method::POST, gadgets, &gadget).await;
    expect(
        &mut checks,
        &reply,
        422,
        r#"Secret.example.com "g" is invalid: kind: Invalid value: "Secret": must be Gadget"#,
    );
    let listed = admin.get(gadgets).await.json();
    checks.check(listed["items"] == json!([]), || format!("stored: {listed}"));
    kapi.stop().await;
    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// Clients that do not read.

/// The resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib * 1024
}

/// Creates `count` ConfigMaps of `size` bytes of data in the default namespace, 50 at once.
async fn fill_configmaps(admin: &Client, count: usize, size: usize) {
    let value = "x".repeat(size);
    for start in (0..count).step_by(50) {
        let creates = (start..(start + 50).min(count)).map(|i| {
            let body = json!({"metadata": {"name": format!("cm-{i:05}")}, "data": {"v": value}});
            admin.create("/api/v1/namespaces/default/configmaps", body)
        });
        futures::future::join_all(creates).await;
    }
}

/// Lets group `group` read ConfigMaps (and nothing else) everywhere.
async fn grant_configmap_reads(admin: &Client, group: &str) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let role = json!({"metadata": {"name": "read-configmaps"}, "rules": [{"apiGroups": [""],
        "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]});
    let binding = json!({"metadata": {"name": "read-configmaps"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "read-configmaps"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]});
    admin.create(&format!("{rbac}/clusterroles"), role).await;
    admin
        .create(&format!("{rbac}/clusterrolebindings"), binding)
        .await;
}

/// Sends `GET path` over HTTP/1.1 on a new connection and never reads the answer.
async fn unread_get(
    client: &Client,
    path: &str,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut tls = client.connect().await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    tls.write_all(request.as_bytes())
        .await
        .expect("send the request");
    tls.flush().await.expect("flush");
    tls
}

/// Reads a connection until the server closes it; how many bytes came (of TLS records: the
/// test reads below TLS, as decrypting megabytes in a debug build would take longer than
/// the server takes to close).
async fn read_until_closed(mut connection: TlsStream<TcpStream>) -> usize {
    let (tcp, _) = connection.get_mut();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0;
    while let Ok(n @ 1..) = tcp.read(&mut buffer).await {
        total += n;
    }
    total
}

/// 200 clients allowed only to list ConfigMaps ask for a 10 MB list and never read it: kapi
/// encodes lists as they are sent, so its memory grows by a small buffer per client, not by
/// the list; the health checks keep answering; and every response is cut at the request
/// timeout (here 10 s), giving back what it held. API Priority and Fairness is off: it
/// would run a few of these lists at a time and answer the others 429 after a quarter of
/// the timeout, on connections that stay open (flowcontrol.rs tests that); this test is
/// about the lists that run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_nobody_reads_hold_little_memory_and_are_cut_at_the_request_timeout() {
    const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
    let flags = [
        "--request-timeout=10s",
        "--enable-priority-and-fairness=false",
    ];
    let kapi = Kapi::start(Backend::Embedded, &flags).await;
    let pid = kapi.child.as_ref().expect("running").id();
    let admin = kapi.admin();
    fill_configmaps(&admin, 1000, 10_000).await;
    grant_configmap_reads(&admin, "readers").await;
    let reader = kapi.user("reader", "readers");
    let path = "/api/v1/namespaces/default/configmaps";
    let whole = reader.get(path).await;
    assert_eq!(whole.status, 200);
    let list_size = whole.body.len();
    assert!(list_size > 10_000_000, "a 10 MB list: {list_size}");

    let before = rss(pid);
    let mut unread = Vec::new();
    for _ in 0..200 {
        unread.push(unread_get(&reader, path).await);
    }
    let sent = Instant::now();
    // Past the request timeout (and the 2 s in which a 504 could still be written), no
    // response may still be open; the test reads nothing until then.
    let mut peak = before;
    let mut in_flight = None;
    while sent.elapsed() < REQUEST_TIMEOUT + Duration::from_secs(3) {
        peak = peak.max(rss(pid));
        // Upstream's watermark: the most read-only requests in flight in the last second.
        if in_flight.is_none() && sent.elapsed() > Duration::from_secs(2) {
            let metrics = admin.get("/metrics").await.body;
            let read_only = r#"apiserver_current_inflight_requests{request_kind="readOnly"} "#;
            in_flight = metrics.lines().find_map(|line| {
                let value = line.strip_prefix(read_only)?;
                value.trim().parse::<u64>().ok()
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let in_flight = in_flight.expect("apiserver_current_inflight_requests");
    assert!((200..=400).contains(&in_flight), "{in_flight} in flight");
    let ready = admin.get("/readyz").await;
    assert_eq!((ready.status, ready.body.as_str()), (200, "ok"));
    let growth = peak.saturating_sub(before);
    eprintln!(
        "200 unread 10 MB lists: RSS {} MiB before, peak {} MiB (+{} MiB)",
        before >> 20,
        peak >> 20,
        growth >> 20
    );
    assert!(growth <= 100 << 20, "RSS grew by {} MiB", growth >> 20);

    let cut = futures::future::join_all(unread.into_iter().map(read_until_closed));
    let received = tokio::time::timeout(Duration::from_secs(10), cut)
        .await
        .unwrap_or_else(|_| panic!("the unread lists are not cut: {}", kapi.log()));
    eprintln!(
        "the unread lists were cut {:?} after they were sent",
        sent.elapsed()
    );
    assert!(
        received.iter().all(|&bytes| bytes < list_size),
        "a response was sent whole: {received:?}"
    );
    kapi.stop().await;
}

/// A watch whose client pauses while more notifications arrive than its cache keeps for it
/// is not dropped: it resumes from the cache's event window and its client sees every
/// event, once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_falls_behind_resumes_from_the_event_window() {
    const OBJECTS: usize = 300;
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let mut watch = unread_get(&admin, "/api/v1/namespaces/default/configmaps?watch=true").await;
    // One write (and one notification) at a time, 18 MB in all: more than the socket
    // buffers and the watch's own buffer hold, so the watch stops taking notifications
    // while the client reads nothing, and more of them come than its channel keeps (128).
    let value = "x".repeat(60_000);
    for i in 0..OBJECTS {
        let body = json!({"metadata": {"name": format!("lag-{i:05}")}, "data": {"v": value}});
        admin
            .create("/api/v1/namespaces/default/configmaps", body)
            .await;
    }
    let resumed =
        "a watch fell behind its cache's notifications; resuming it from the event window";
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut raw, mut buffer, mut body) = (Vec::new(), vec![0u8; 256 * 1024], Vec::new());
    let (mut names, mut searched) = (Vec::new(), 0);
    while names.len() < OBJECTS {
        assert!(
            Instant::now() < deadline,
            "{} of {OBJECTS} events",
            names.len()
        );
        let n = tokio::time::timeout(Duration::from_secs(10), watch.read(&mut buffer))
            .await
            .expect("the watch goes on")
            .expect("read the watch");
        assert!(
            n > 0,
            "the watch ended after {} events: {}",
            names.len(),
            kapi.log()
        );
        raw.extend_from_slice(&buffer[..n]);
        dechunk(&mut raw, &mut body);
        // Each event names its object once.
        let pattern = br#""name":"lag-"#;
        while let Some(at) = body[searched..]
            .windows(pattern.len())
            .position(|w| w == pattern)
            .map(|at| searched + at)
        {
            let Some(name) = body.get(at + 8..at + 17) else {
                break;
            };
            names.push(String::from_utf8_lossy(name).into_owned());
            searched = at + 17;
        }
    }
    let expected: Vec<String> = (0..OBJECTS).map(|i| format!("lag-{i:05}")).collect();
    assert_eq!(names, expected);
    assert!(
        kapi.log().contains(resumed),
        "the watch never fell behind: {}",
        kapi.log()
    );
    kapi.stop().await;
}

/// Moves the chunks of an HTTP/1.1 chunked body that `raw` holds whole (after the response
/// head, which it drops first) to `body`.
fn dechunk(raw: &mut Vec<u8>, body: &mut Vec<u8>) {
    if raw.starts_with(b"HTTP/1.1") {
        match raw.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(head) => drop(raw.drain(..head + 4)),
            None => return,
        }
    }
    while let Some(line) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..line]).expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("a hexadecimal chunk size");
        if raw.len() < line + 2 + size + 2 {
            return;
        }
        body.extend_from_slice(&raw[line + 2..line + 2 + size]);
        raw.drain(..line + 2 + size + 2);
    }
}

/// A watch whose client stops reading is closed once its buffer has been full for a while
/// (and its HTTP/1.1 connection with it), as kube-apiserver's cacher closes unresponsive
/// watchers; a watch whose client reads sees every event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_nobody_reads_are_closed() {
    const OBJECTS: usize = 250;
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let path = "/api/v1/namespaces/default/configmaps?watch=true";
    let unread = unread_get(&admin, path).await;
    let mut reading = unread_get(&admin, path).await;
    let reader = tokio::spawn(async move {
        const ADDED: &[u8] = br#"{"type":"ADDED","#;
        let (mut seen, mut buffer, mut tail) = (0, vec![0u8; 64 * 1024], Vec::new());
        while seen < OBJECTS {
            let n = reading.read(&mut buffer).await.expect("the watch goes on");
            assert!(n > 0, "the reading watch ended");
            // Events may straddle reads: keep the last bytes of the previous one.
            tail.extend_from_slice(&buffer[..n]);
            seen += tail.windows(ADDED.len()).filter(|w| *w == ADDED).count();
            tail.drain(..tail.len().saturating_sub(ADDED.len() - 1));
        }
        seen
    });
    // 25 MB of events: more than the socket buffers and the watch's own buffer hold.
    let started = Instant::now();
    fill_configmaps(&admin, OBJECTS, 100_000).await;
    // Reading would let the response go on to its end: wait for the server to give up on
    // the watch and close its connection first.
    let deadline = Instant::now() + Duration::from_secs(60);
    for closing in [
        "closing the watch of a client that stopped reading",
        "closing a connection whose response was not sent by its deadline",
    ] {
        while !kapi.log().contains(closing) {
            assert!(Instant::now() < deadline, "not {closing}: {}", kapi.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let received = tokio::time::timeout(Duration::from_secs(10), read_until_closed(unread))
        .await
        .unwrap_or_else(|_| panic!("the unread watch's connection stays: {}", kapi.log()));
    eprintln!(
        "a watch nobody read was closed {:?} after the writes began, {received} bytes sent",
        started.elapsed()
    );
    assert!(
        received < 25_000_000,
        "the watch sent everything: {received}"
    );
    let seen = tokio::time::timeout(Duration::from_secs(60), reader).await;
    eprintln!("reader done");
    assert_eq!(
        seen.expect("the reading watch sees every event").unwrap(),
        OBJECTS
    );
    kapi.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Nothing acknowledged is lost.

/// kill -9 rounds per backend: `KAPI_KILL_ROUNDS`, or 5 (docs/RELIABILITY.md records a run
/// of 20 per backend).
fn kill_rounds() -> usize {
    std::env::var("KAPI_KILL_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(5)
}

/// Creates ConfigMaps `<prefix>-<n>` one after another until a create fails (the server was
/// killed); the names the server acknowledged (201).
async fn create_until_killed(
    client: Client,
    prefix: String,
    count: Arc<AtomicUsize>,
) -> Vec<String> {
    let mut acknowledged = Vec::new();
    for n in 0.. {
        let name = format!("{prefix}-{n}");
        let body = json!({"metadata": {"name": name}, "data": {"round": prefix}}).to_string();
        let path = "/api/v1/namespaces/default/configmaps";
        let headers = [("content-type", "application/json")];
        match client
            .try_send(Method::POST, path, &headers, body.into())
            .await
        {
            Ok(reply) if reply.status == 201 => {
                acknowledged.push(name);
                count.fetch_add(1, Ordering::Relaxed);
            }
            Ok(reply) if reply.status >= 500 => break,
            Ok(reply) => panic!("create {name}: {} {}", reply.status, reply.body),
            Err(_) => break,
        }
    }
    acknowledged
}

/// The `kapi` binary is killed with SIGKILL while 16 clients create objects, then started
/// again on the same store, for several rounds: every create it acknowledged is there, whole.
async fn acknowledged_writes_survive_kill_9(backend: Backend) {
    let mut kapi = Kapi::start(backend, &[]).await;
    let mut acknowledged = std::collections::BTreeSet::new();
    let rounds = kill_rounds();
    for round in 0..rounds {
        let count = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..16)
            .map(|writer| {
                let prefix = format!("r{round}-w{writer}");
                tokio::spawn(create_until_killed(kapi.admin(), prefix, count.clone()))
            })
            .collect();
        // Kill at a different point of the writes in each round: after 50 to 150 of them.
        let kill_after = 50 + (round * 37) % 100;
        let deadline = Instant::now() + Duration::from_secs(60);
        while count.load(Ordering::Relaxed) < kill_after {
            assert!(
                Instant::now() < deadline,
                "round {round}: too few writes acknowledged"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        kapi.kill();
        for writer in writers {
            acknowledged.extend(writer.await.expect("a writer"));
        }
        kapi.launch().await;
        let listed = kapi
            .admin()
            .get("/api/v1/namespaces/default/configmaps")
            .await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        let stored: std::collections::BTreeSet<String> = listed.json()["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|item| item["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        let lost: Vec<_> = acknowledged.difference(&stored).collect();
        assert!(
            lost.is_empty(),
            "round {round}: acknowledged creates lost: {lost:?}"
        );
    }
    eprintln!(
        "{backend:?}: {rounds} kill -9 rounds, {} creates acknowledged, 0 lost",
        acknowledged.len()
    );
    kapi.stop().await;
}

on_both_backends!(acknowledged_writes_survive_kill_9);

// ---------------------------------------------------------------------------------------------
// Input upstream accepts.

/// Requests upstream accepts that kapi refused: invalid UTF-8 in a JSON string (Go's decoder
/// reads it as U+FFFD), and kubectl impersonating a user with 600 groups over HTTP/2 (headers
/// past h2's default 16 KiB; upstream allows 1 MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_upstream_accepts() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let mut body = br#"{"metadata":{"name":"utf8"},"data":{"k":"a"#.to_vec();
    body.extend_from_slice(b"\xff\xfe");
    body.extend_from_slice(br#"b"}}"#);
    let headers = [("content-type", "application/json")];
    let path = "/api/v1/namespaces/default/configmaps";
    let reply = admin.send(Method::POST, path, &headers, body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["data"]["k"], "a\u{fffd}\u{fffd}b");

    // The same over HTTP/1.1 (this client speaks only HTTP/1.1): 600 header lines.
    let names: Vec<String> = (0..600).map(|i| format!("group-{i:04}")).collect();
    let mut headers = vec![
        ("impersonate-user", "someone"),
        ("impersonate-group", "system:masters"),
    ];
    headers.extend(
        names
            .iter()
            .map(|name| ("impersonate-group", name.as_str())),
    );
    let reply = kapi
        .admin()
        .send(Method::GET, "/api/v1/namespaces", &headers, "")
        .await;
    assert_eq!(
        reply.status, 200,
        "600 header lines over HTTP/1.1: {}",
        reply.body
    );

    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let groups: Vec<String> = (0..600)
        .map(|i| format!("--as-group=group-{i:04}"))
        .collect();
    let mut args = vec!["get", "namespaces", "-o", "name", "--as=someone"];
    args.push("--as-group=system:masters");
    args.extend(groups.iter().map(String::as_str));
    let output = common::kubectl(&kubeconfig, &args, None).await;
    assert!(
        output.status.success(),
        "600 impersonated groups: {}",
        common::stderr(&output)
    );
    kapi.stop().await;
}

// ---------------------------------------------------------------------------------------------
// A damaged store does not start silently.

/// A data directory remembers that it held a store (and its revision): kapi refuses to start
/// on a store file that is missing, empty, or older than the one it served, naming the
/// damage, instead of serving an empty or rolled-back cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_emptied_or_rolled_back_store_refuses_to_start() {
    let mut kapi = Kapi::start(Backend::Embedded, &[]).await;
    let store = kapi.data_dir.path().join("store/kapi.redb");
    kapi.terminate().await;
    let older = kapi.data_dir.path().join("older.redb");
    std::fs::copy(&store, &older).expect("copy the store");
    kapi.launch().await;
    let admin = kapi.admin();
    admin
        .create(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "kept"}}),
        )
        .await;
    kapi.terminate().await;
    let current = kapi.data_dir.path().join("current.redb");
    std::fs::copy(&store, &current).expect("copy the store");

    std::fs::copy(&older, &store).expect("roll the store back");
    let log = kapi.launch_refused().await;
    assert!(
        log.contains("the store file was replaced or rolled back"),
        "{log}"
    );
    std::fs::write(&store, b"").expect("empty the store");
    let log = kapi.launch_refused().await;
    assert!(
        log.contains("kapi.redb is empty, but this data directory held a store"),
        "{log}"
    );
    std::fs::remove_file(&store).expect("remove the store");
    let log = kapi.launch_refused().await;
    assert!(
        log.contains("kapi.redb is missing, but this data directory held a store"),
        "{log}"
    );

    std::fs::copy(&current, &store).expect("restore the store");
    kapi.launch().await;
    let kept = kapi
        .admin()
        .get("/api/v1/namespaces/default/configmaps/kept")
        .await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    kapi.stop().await;
}

/// Runs `kapi store <args>`; its exit status and its output (stdout, then stderr).
fn kapi_store(args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .arg("store")
        .args(args)
        .output()
        .expect("run kapi store");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn data_dir_arg(kapi: &Kapi) -> String {
    format!("--data-dir={}", kapi.data_dir.path().display())
}

/// A store file with flipped bytes or cut short is refused at start with a message naming
/// the damage, `kapi store check` names it too, and a snapshot restores the data directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_store_refuses_to_start_and_a_snapshot_restores_it() {
    let mut kapi = Kapi::start(Backend::Embedded, &[]).await;
    let marker = "a value that marks this ConfigMap in the store file";
    kapi.admin()
        .create(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "marked"}, "data": {"k": marker}}),
        )
        .await;
    let snapshot = kapi.data_dir.path().join("backup.snap");
    let snapshot_arg = snapshot.display().to_string();
    let (ok, said) = kapi_store(&["snapshot", &data_dir_arg(&kapi), &snapshot_arg]);
    assert!(
        ok && said.contains("from the kapi serving the data directory"),
        "{said}"
    );
    kapi.terminate().await;
    let identity = std::fs::read_to_string(kapi.data_dir.path().join("store-identity"));
    assert!(
        identity.unwrap().ends_with(" closed\n"),
        "a clean stop is recorded"
    );
    let (ok, said) = kapi_store(&["check", &data_dir_arg(&kapi)]);
    assert!(ok && said.contains(": ok: revision"), "{said}");

    let store = kapi.data_dir.path().join("store/kapi.redb");
    let pristine = std::fs::read(&store).expect("read the store");
    // Every copy of the marker (the live page's, and freed pages' older ones).
    let copies: Vec<usize> = (0..pristine.len() - marker.len())
        .filter(|&at| pristine[at..].starts_with(marker.as_bytes()))
        .collect();
    assert!(!copies.is_empty(), "the marker in the store file");
    let mut flipped = pristine.clone();
    for at in copies {
        flipped[at + 7] ^= 0x04;
    }
    std::fs::write(&store, &flipped).expect("flip a byte");
    let log = kapi.launch_refused().await;
    assert!(log.contains("is damaged and will not be served"), "{log}");
    let (ok, said) = kapi_store(&["check", &data_dir_arg(&kapi)]);
    assert!(!ok && said.contains("is damaged"), "{said}");

    std::fs::write(&store, &pristine[..pristine.len() / 2]).expect("cut the store");
    let log = kapi.launch_refused().await;
    assert!(log.contains("is damaged and will not be served"), "{log}");

    let (ok, said) = kapi_store(&["restore", &data_dir_arg(&kapi), &snapshot_arg]);
    assert!(!ok && said.contains("already holds a store"), "{said}");
    std::fs::rename(&store, kapi.data_dir.path().join("damaged.redb")).expect("move it away");
    let (ok, said) = kapi_store(&["restore", &data_dir_arg(&kapi), &snapshot_arg]);
    assert!(ok, "{said}");
    kapi.launch().await;
    let marked = kapi
        .admin()
        .get("/api/v1/namespaces/default/configmaps/marked")
        .await;
    assert_eq!(marked.status, 200, "{}", marked.body);
    assert_eq!(marked.json()["data"]["k"], marker);
    kapi.stop().await;
}

/// A snapshot taken from the serving kapi while 8 clients create objects restores to a
/// store that serves every object acknowledged at or before the snapshot's revision, at
/// that resourceVersion, and none acknowledged after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_under_write_load_restores_every_acknowledged_write() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let count = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (client, stop, count) = (kapi.admin(), stop.clone(), count.clone());
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for n in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("w{writer}-{n}");
                    let created = client
                        .create(
                            "/api/v1/namespaces/default/configmaps",
                            json!({"metadata": {"name": name}}),
                        )
                        .await;
                    let version = created["metadata"]["resourceVersion"].as_str().unwrap();
                    acknowledged.push((name, version.parse::<i64>().unwrap()));
                    count.fetch_add(1, Ordering::Relaxed);
                }
                acknowledged
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::Relaxed) < 200 {
        assert!(Instant::now() < deadline, "too few writes acknowledged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let snapshot = kapi.data_dir.path().join("load.snap").display().to_string();
    let (ok, said) = kapi_store(&["snapshot", &data_dir_arg(&kapi), &snapshot]);
    assert!(ok, "{said}");
    let after = count.load(Ordering::Relaxed);
    while count.load(Ordering::Relaxed) < after + 100 {
        assert!(
            Instant::now() < deadline,
            "writes stopped after the snapshot"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("a writer"));
    }
    let revision: i64 = said
        .split("revision ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|revision| revision.parse().ok())
        .unwrap_or_else(|| panic!("no revision in {said:?}"));

    let mut restored = Kapi::new(Backend::Embedded, &[]).await;
    let restored_dir = restored.data_dir.path().display().to_string();
    let (ok, said) = kapi_store(&["restore", &format!("--data-dir={restored_dir}"), &snapshot]);
    assert!(ok, "{said}");
    restored.launch().await;
    let listed = restored
        .admin()
        .get("/api/v1/namespaces/default/configmaps")
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let stored: std::collections::BTreeMap<String, i64> = listed.json()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            let meta = &item["metadata"];
            let version = meta["resourceVersion"].as_str().unwrap().parse().unwrap();
            (meta["name"].as_str().unwrap().to_string(), version)
        })
        .collect();
    let (before, later): (Vec<_>, Vec<_>) = acknowledged
        .iter()
        .partition(|(_, version)| *version <= revision);
    assert!(
        !before.is_empty() && !later.is_empty(),
        "writes on both sides"
    );
    for (name, version) in &before {
        assert_eq!(
            stored.get(name),
            Some(version),
            "{name} lost by the snapshot"
        );
    }
    for (name, _) in &later {
        assert!(!stored.contains_key(name), "{name} is after the snapshot");
    }
    eprintln!(
        "snapshot at revision {revision}: {} acknowledged before it all restored, {} after it absent",
        before.len(),
        later.len()
    );
    restored.stop().await;
    kapi.stop().await;
}
