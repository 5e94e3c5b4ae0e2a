//! Events expire `--event-ttl` after their last write, as kube-apiserver stores them (on
//! etcd through leases; in the embedded store by its own expiry), also when the deadline
//! passes while kapi is down; nothing else expires.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::Backend;
use crate::common::process::{DEADLINE, Kapi};

const CORE_EVENTS: &str = "/api/v1/namespaces/default/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

fn core_event(name: &str) -> serde_json::Value {
    json!({"metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "kept"},
        "reason": "Tested", "message": "an event", "type": "Normal"})
}

/// Polls `path` until it answers 404.
async fn wait_gone(kapi: &Kapi, path: &str) {
    let admin = kapi.admin();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let reply = admin.get(path).await;
        match reply.status {
            404 => return,
            200 if Instant::now() < deadline => {}
            _ => panic!("{path} has not expired: {reply:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn events_expire_after_the_event_ttl_also_across_a_restart(backend: Backend) {
    let mut kapi = Kapi::start(backend, &["--event-ttl=2s"]).await;
    let admin = kapi.admin();
    admin
        .create(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "kept"}}),
        )
        .await;
    admin.create(CORE_EVENTS, core_event("core")).await;
    admin
        .create(
            EVENTS,
            json!({"metadata": {"name": "new-style"}, "eventTime": "2026-11-28T00:00:00.000000Z",
                "regarding": {"kind": "ConfigMap", "namespace": "default", "name": "kept"},
                "reportingController": "example.com/tester", "reportingInstance": "tester-1",
                "action": "Testing", "reason": "Tested", "type": "Normal"}),
        )
        .await;
    wait_gone(&kapi, &format!("{CORE_EVENTS}/core")).await;
    wait_gone(&kapi, &format!("{EVENTS}/new-style")).await;

    // The deadline passes while kapi is down.
    admin
        .create(CORE_EVENTS, core_event("over-a-restart"))
        .await;
    let written = Instant::now();
    kapi.terminate().await;
    tokio::time::sleep_until((written + Duration::from_secs(3)).into()).await;
    kapi.launch().await;
    wait_gone(&kapi, &format!("{CORE_EVENTS}/over-a-restart")).await;

    // Events take no part in garbage collection: a foreground deletion adds no finalizer.
    let admin = kapi.admin();
    admin.create(CORE_EVENTS, core_event("foreground")).await;
    let path = format!("{CORE_EVENTS}/foreground?propagationPolicy=Foreground");
    let deleted = admin.send(http::Method::DELETE, &path, &[], "").await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(
        admin.get(&format!("{CORE_EVENTS}/foreground")).await.status,
        404
    );

    let kept = kapi
        .admin()
        .get("/api/v1/namespaces/default/configmaps/kept")
        .await;
    assert_eq!(
        kept.status, 200,
        "objects other than Events do not expire: {kept:?}"
    );
    kapi.stop().await;
}

on_both_backends!(events_expire_after_the_event_ttl_also_across_a_restart);
