//! What several replicas rely on: each server's identity Lease in kube-system, as
//! kube-apiserver keeps it, and the collection of the Leases of servers gone; the
//! `kubernetes` Endpoints listing the servers by each `--endpoint-reconciler-type`.

use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::common::process::{Client, Kapi};
use kapi_testing::etcd::EtcdCluster;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

/// The identity Leases of kube-apiservers, once this server's is there.
async fn identity_leases(admin: &Client) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = admin
            .get(&format!(
                "{LEASES}?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver"
            ))
            .await
            .json();
        let items = listed["items"].as_array().cloned().unwrap_or_default();
        if !items.is_empty() {
            return items;
        }
        assert!(Instant::now() < deadline, "no identity lease: {listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_keeps_an_identity_lease_and_expired_ones_are_collected() {
    let mut kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let leases = identity_leases(&admin).await;
    assert_eq!(leases.len(), 1, "{leases:?}");
    let lease = &leases[0];
    let name = lease["metadata"]["name"].as_str().unwrap().to_string();
    // apiserver-<26 base32 characters of the host name's hash>.
    assert!(name.starts_with("apiserver-") && name.len() == 36, "{name}");
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(
        lease["metadata"]["labels"]["kubernetes.io/hostname"],
        hostname.trim()
    );
    let holder = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(holder.starts_with(&format!("{name}_")), "{holder}");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 3600);
    let renewed = lease["spec"]["renewTime"].as_str().unwrap().to_string();

    // A server gone an hour ago, and an expired Lease of something else.
    let expired = |name: &str, labels: Value| {
        json!({"metadata": {"name": name, "labels": labels},
            "spec": {"holderIdentity": format!("{name}_x"), "leaseDurationSeconds": 3600,
                "renewTime": "2026-01-01T00:00:00.000000Z"}})
    };
    let gone = expired(
        "apiserver-gone",
        json!({"apiserver.kubernetes.io/identity": "kube-apiserver"}),
    );
    let other = expired("not-an-apiserver", json!({}));
    for lease in [gone, other] {
        let reply = admin.write(Method::POST, LEASES, &lease).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
    }

    // The collector looks at start: after a restart the gone server's Lease goes, the
    // other stays, and this server's Lease is renewed, its holder kept.
    kapi.restart().await;
    let admin = kapi.admin();
    let deadline = Instant::now() + Duration::from_secs(20);
    while admin.get(&format!("{LEASES}/apiserver-gone")).await.status != 404 {
        assert!(
            Instant::now() < deadline,
            "the expired identity lease stayed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        admin
            .get(&format!("{LEASES}/not-an-apiserver"))
            .await
            .status,
        200
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let own = admin.get(&format!("{LEASES}/{name}")).await.json();
        assert_eq!(own["spec"]["holderIdentity"], holder.as_str());
        if own["spec"]["renewTime"].as_str().unwrap() > renewed.as_str() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the identity lease was not renewed: {own}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kapi.stop().await;
}

/// The addresses the `kubernetes` Endpoints list, sorted, once `wanted` says they are right.
async fn kubernetes_endpoints(admin: &Client, wanted: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let endpoints = admin
            .get("/api/v1/namespaces/default/endpoints/kubernetes")
            .await
            .json();
        let mut ips: Vec<String> = endpoints["subsets"][0]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|address| address["ip"].as_str().map(str::to_string))
            .collect();
        ips.sort();
        if wanted(&ips) {
            return ips;
        }
        assert!(
            Instant::now() < deadline,
            "the kubernetes endpoints stayed {endpoints}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A second server on `first`'s etcd, advertising `address`, with `flags`.
async fn beside(first: &Kapi, address: &str, flags: &[&str]) -> Kapi {
    let servers = first.etcd().expect("etcd").endpoints().join(",");
    let mut all = vec!["--etcd-servers", &servers, "--advertise-address", address];
    all.extend(flags);
    Kapi::start(Backend::Embedded, &all).await
}

/// With leases (the default) the Endpoints list every live server, and a server killed
/// without a word drops out once its lease's TTL has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_leaves_the_kubernetes_endpoints_within_its_lease() {
    let first = Kapi::start(Backend::Etcd, &["--advertise-address", "10.0.0.1"]).await;
    let mut second = beside(&first, "10.0.0.2", &[]).await;
    let admin = first.admin();
    let both = kubernetes_endpoints(&admin, |ips| ips.len() == 2).await;
    assert_eq!(both, ["10.0.0.1", "10.0.0.2"]);
    second.kill();
    let left = kubernetes_endpoints(&admin, |ips| ips.len() == 1).await;
    assert_eq!(left, ["10.0.0.1"]);
    first.stop().await;
}

/// `master-count`: each server adds itself up to `--apiserver-count`; a server shutting
/// down takes itself out. `none`: the Endpoints are left to others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_count_and_none_reconcilers_keep_the_endpoints_as_upstream() {
    let counted = [
        "--endpoint-reconciler-type",
        "master-count",
        "--apiserver-count",
        "2",
    ];
    let mut flags = vec!["--advertise-address", "10.0.0.1"];
    flags.extend(counted);
    let first = Kapi::start(Backend::Etcd, &flags).await;
    let admin = first.admin();
    assert_eq!(
        kubernetes_endpoints(&admin, |ips| !ips.is_empty()).await,
        ["10.0.0.1"]
    );
    let second = beside(&first, "10.0.0.2", &counted).await;
    let both = kubernetes_endpoints(&admin, |ips| ips.len() == 2).await;
    assert_eq!(both, ["10.0.0.1", "10.0.0.2"]);
    second.stop().await;
    assert_eq!(
        kubernetes_endpoints(&admin, |ips| ips.len() == 1).await,
        ["10.0.0.1"]
    );
    first.stop().await;

    let alone = Kapi::start(Backend::Embedded, &["--endpoint-reconciler-type", "none"]).await;
    let admin = alone.admin();
    assert_eq!(
        admin
            .get("/api/v1/namespaces/default/services/kubernetes")
            .await
            .status,
        200
    );
    assert_eq!(
        admin
            .get("/api/v1/namespaces/default/endpoints/kubernetes")
            .await
            .status,
        404
    );
    alone.stop().await;
    let mut refusing = Kapi::new(Backend::Embedded, &["--apiserver-count", "0"]).await;
    let refused = refusing.launch_refused().await;
    assert!(
        refused.contains("--apiserver-count should be a positive number, but value '0' provided"),
        "{refused}"
    );
}

/// Writes `name` through `admin`, again while the store is failing over (an etcd member just
/// died: the request may fail with 5xx, or time out, before the client moves on).
async fn create_retrying(admin: &Client, path: &str, body: Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reply = admin.write(Method::POST, path, &body).await;
        match reply.status {
            201 => return reply.json(),
            // Written by an attempt whose answer was lost.
            409 => {
                let name = body["metadata"]["name"].as_str().unwrap();
                return admin.get(&format!("{path}/{name}")).await.json();
            }
            _ => {
                assert!(Instant::now() < deadline, "{path}: {}", reply.body);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Three kapi replicas on a three-member etcd: what is written through one is read
/// (consistently) and watched through the others, allocations never collide across
/// replicas, and a CRD made on one is served by all; through the death of an etcd member
/// and then of a replica, mid-stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_three_etcd_members_agree_through_failures() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::watcher::{self, Event};

    let mut etcd = tokio::task::spawn_blocking(|| EtcdCluster::start(3))
        .await
        .expect("etcd");
    let servers = etcd.endpoints().join(",");
    let start = |address: &'static str| {
        let servers = servers.clone();
        async move {
            let flags = ["--etcd-servers", &servers, "--advertise-address", address];
            Kapi::start(Backend::Embedded, &flags).await
        }
    };
    let a = start("10.0.0.1").await;
    let mut b = start("10.0.0.2").await;
    let c = start("10.0.0.3").await;
    let (admin_a, admin_c) = (a.admin(), c.admin());
    let reply = admin_a
        .write(
            Method::POST,
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "ha"}}),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);

    // B and C watch; A writes; an etcd member dies halfway.
    let watch = |kapi: &Kapi| {
        let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
        async move {
            let client = crate::common::kube_client_at(&kubeconfig).await;
            let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, "ha");
            watcher::watcher(api, watcher::Config::default()).boxed()
        }
    };
    let (mut on_b, mut on_c) = (watch(&b).await, watch(&c).await);
    let configmaps = "/api/v1/namespaces/ha/configmaps";
    let mut written = Vec::new();
    for i in 0..10 {
        if i == 5 {
            tokio::task::block_in_place(|| etcd.kill(0));
        }
        let name = format!("cm-{i}");
        let created = create_retrying(
            &admin_a,
            configmaps,
            json!({"metadata": {"name": name}, "data": {"i": i.to_string()}}),
        )
        .await;
        let version = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        written.push((name, version));
    }
    // Each watcher sees every write with the version A answered (after its initial list).
    for (replica, stream) in [("B", &mut on_b), ("C", &mut on_c)] {
        let mut seen = Vec::new();
        while seen.len() < written.len() {
            let event = tokio::time::timeout(Duration::from_secs(60), stream.next())
                .await
                .unwrap_or_else(|_| panic!("{replica}'s watch saw {seen:?} of {written:?}"))
                .expect("the watch goes on");
            if let Ok(Event::Apply(cm) | Event::InitApply(cm)) = event {
                let version = cm.metadata.resource_version.clone().unwrap_or_default();
                let name = cm.metadata.name.clone().unwrap_or_default();
                // Only the writes (kube-root-ca.crt lives here too).
                if name.starts_with("cm-") && !seen.iter().any(|(n, _)| *n == name) {
                    seen.push((name, version));
                }
            }
        }
        seen.sort();
        assert_eq!(seen, written, "{replica}");
    }
    // A consistent list on C has every write.
    let listed = admin_c.get(configmaps).await.json();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .filter(|name| name.starts_with("cm-"))
        .collect();
    assert_eq!(names.len(), 10, "{names:?}");

    // Allocations through every replica never collide.
    let services = "/api/v1/namespaces/ha/services";
    let mut node_ports = Vec::new();
    let mut cluster_ips = Vec::new();
    for (i, kapi) in [&a, &b, &c].iter().enumerate() {
        let service = json!({"metadata": {"name": format!("svc-{i}")},
            "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let created = create_retrying(&kapi.admin(), services, service).await;
        node_ports.push(created["spec"]["ports"][0]["nodePort"].clone());
        cluster_ips.push(created["spec"]["clusterIP"].clone());
    }
    node_ports.dedup();
    cluster_ips.dedup();
    assert_eq!(
        (node_ports.len(), cluster_ips.len()),
        (3, 3),
        "{node_ports:?} {cluster_ips:?}"
    );

    // A CRD made on A is established and served on C.
    let widgets = crate::common::install_widgets(&admin_a).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin_c.get(widgets).await.status != 200 {
        assert!(
            Instant::now() < deadline,
            "C never served the CRD made on A"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // B dies; A's writes still reach C's watch, and the Endpoints drop B.
    b.kill();
    let created = create_retrying(
        &admin_a,
        configmaps,
        json!({"metadata": {"name": "after"}, "data": {"i": "after"}}),
    )
    .await;
    let version = created["metadata"]["resourceVersion"].as_str().unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), on_c.next())
            .await
            .expect("C's watch goes on after B died")
            .expect("the watch goes on");
        if let Ok(Event::Apply(cm)) = event
            && cm.metadata.name.as_deref() == Some("after")
        {
            assert_eq!(cm.metadata.resource_version.as_deref(), Some(version));
            break;
        }
    }
    let left = kubernetes_endpoints(&admin_c, |ips| ips.len() == 2).await;
    assert_eq!(left, ["10.0.0.1", "10.0.0.3"]);
    tokio::task::block_in_place(|| etcd.restart(0));
    c.stop().await;
    a.stop().await;
}
