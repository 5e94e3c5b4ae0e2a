//! The etcd store over TLS with client-certificate authentication, as kube-apiserver runs with
//! `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile`.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::{
    EtcdConfig, EtcdStore, EventKind, StorageError, Store, WatchOptions, WatchResponse,
};
use kapi_testing::etcd::EtcdCluster;

async fn tls_cluster() -> EtcdCluster {
    tokio::task::spawn_blocking(|| EtcdCluster::start_tls(1))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_creates_reads_and_watches_over_tls() {
    let cluster = tls_cluster().await;
    let tls = cluster.tls().unwrap();
    assert!(cluster.endpoints()[0].starts_with("https://"));
    let mut config = EtcdConfig::new(cluster.endpoints());
    config.ca_file = Some(tls.ca_file.clone());
    config.cert_file = Some(tls.cert_file.clone());
    config.key_file = Some(tls.key_file.clone());
    let store = EtcdStore::connect(config).await.unwrap();

    let options = WatchOptions {
        prefix: true,
        after: None,
    };
    let mut watch = store.watch("/registry/", options).await.unwrap();
    let revision = store
        .create("/registry/a", Bytes::from_static(b"a"))
        .await
        .unwrap();
    let kv = store.get("/registry/a", None).await.unwrap().kv.unwrap();
    assert_eq!((kv.value.as_ref(), kv.mod_revision), (&b"a"[..], revision));

    let next = tokio::time::timeout(Duration::from_secs(10), watch.next()).await;
    match next.unwrap().unwrap().unwrap() {
        WatchResponse::Events(events) => {
            assert_eq!(events.len(), 1, "{events:?}");
            assert_eq!(events[0].kind, EventKind::Put);
            assert_eq!(events[0].kv, kv);
        }
        other => panic!("expected the create event, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_without_a_client_certificate_fails() {
    let cluster = tls_cluster().await;
    let mut config = EtcdConfig::new(cluster.endpoints());
    config.ca_file = Some(cluster.tls().unwrap().ca_file.clone());
    config.request_timeout = Duration::from_secs(2);
    match EtcdStore::connect(config).await {
        Err(StorageError::Unavailable(_)) => {}
        Err(err) => panic!("expected Unavailable, got {err:?}"),
        Ok(_) => panic!("etcd accepted a client without a certificate"),
    }
}
