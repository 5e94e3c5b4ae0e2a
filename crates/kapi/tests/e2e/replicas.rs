//! What several replicas rely on: each server's identity Lease in kube-system, as
//! kube-apiserver keeps it, and the collection of the Leases of servers gone.

use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::common::process::{Client, Kapi};

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
