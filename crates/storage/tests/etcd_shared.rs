//! Servers sharing one etcd (kapi replicas, or kapi beside kube-apiserver) take turns at
//! compaction through kube-apiserver's `compact_rev_key`: each interval, the one whose
//! compare-and-swap wins compacts the revision it saw an interval earlier; the others learn
//! the key's version and compact nothing, so the store is compacted once per interval.

use bytes::Bytes;
use etcd_client::Client;
use kapi_storage::{CompactionTurn, EtcdConfig, EtcdStore, StorageError, Store};
use kapi_testing::etcd::EtcdCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_etcd_take_turns_at_compaction() {
    let cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(1))
        .await
        .unwrap();
    let connect = || EtcdStore::connect(EtcdConfig::new(cluster.endpoints()));
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    let mut raw = Client::connect(cluster.endpoints(), None).await.unwrap();
    let old = a.create("/registry/x/old", Bytes::from("v")).await.unwrap();

    // The first interval: A takes the turn (the key's version 0 → 1) and compacts nothing;
    // B, expecting version 0 too, learns it is 1.
    let a1 = a.compaction_turn(CompactionTurn::default()).await.unwrap();
    assert_eq!(a1.version, 1);
    assert!(a1.revision > old);
    let b1 = b.compaction_turn(CompactionTurn::default()).await.unwrap();
    assert_eq!(b1.version, 1);
    assert_eq!(
        a.get("/registry/x/old", Some(old))
            .await
            .unwrap()
            .kv
            .unwrap()
            .mod_revision,
        old
    );

    // The next interval: B wins this time and compacts the revision it saw then, writing it
    // as kube-apiserver does (decimal); A, a turn behind, compacts nothing.
    a.create("/registry/x/new", Bytes::from("v")).await.unwrap();
    let b2 = b.compaction_turn(b1).await.unwrap();
    assert_eq!(b2.version, 2);
    let key = raw.get("compact_rev_key", None).await.unwrap();
    let stored = &key.kvs()[0];
    assert_eq!(stored.value_str().unwrap(), b1.revision.to_string());
    assert_eq!(stored.version(), 2);
    let a2 = a.compaction_turn(a1).await.unwrap();
    assert_eq!(a2.version, 2);
    assert!(matches!(
        a.get("/registry/x/old", Some(old)).await,
        Err(StorageError::Compacted { .. })
    ));
    // Compacted to B's revision of the first interval, not later.
    assert!(a.get("/registry/x/old", Some(b1.revision)).await.is_ok());
}
