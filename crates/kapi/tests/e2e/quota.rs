//! ResourceQuota end to end: usage kept current by the quota controller, and concurrent
//! creates never admitted beyond the quota.

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer, get_json};
use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

/// Waits until the quota's `status.used.pods` is `want`.
async fn wait_used(server: &TestServer, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let quota = get_json(server, &["resourcequota", "pods", "-n", "q"]).await;
        if quota["status"]["used"]["pods"] == want {
            assert_eq!(quota["status"]["hard"]["pods"], "5");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "used never became {want}: {quota}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap()
}

async fn quota_is_never_exceeded(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    server.kubectl_ok(&["create", "namespace", "q"]).await;
    server
        .kubectl_ok(&["create", "quota", "pods", "--hard=pods=5", "-n", "q"])
        .await;
    wait_used(&server, "0").await;
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), "q");
    let creates = (0..20).map(|i| {
        let pods = pods.clone();
        async move {
            pods.create(&PostParams::default(), &pod(&format!("p{i}")))
                .await
        }
    });
    let results = join_all(creates).await;
    let admitted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(admitted, 5, "{results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        let message = refused.to_string();
        assert!(
            message
                .contains("exceeded quota: pods, requested: pods=1, used: pods=5, limited: pods=5"),
            "{message}"
        );
    }
    wait_used(&server, "5").await;
    // Deleting gives the quota back.
    let admitted: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    for name in &admitted[..2] {
        pods.delete(name, &DeleteParams::default()).await.unwrap();
    }
    wait_used(&server, "3").await;
    pods.create(&PostParams::default(), &pod("again"))
        .await
        .unwrap();
    wait_used(&server, "4").await;
}

on_both_backends!(quota_is_never_exceeded);
