//! Behaviour specific to the embedded backend: durability across reopen, space reuse after
//! compaction, and watchers that fall behind the broadcast.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::{
    EmbeddedConfig, EmbeddedStore, Event, ListOptions, Store, WatchOptions, WatchResponse,
};

fn open(dir: &std::path::Path) -> EmbeddedStore {
    EmbeddedStore::open(EmbeddedConfig::new(dir)).expect("open embedded store")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_keeps_data_history_and_revision() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, deleted) = {
        let store = open(dir.path());
        let first = store.create("/r/a", Bytes::from("1")).await.unwrap();
        let second = store.update("/r/a", Bytes::from("2"), first).await.unwrap();
        store.create("/r/b", Bytes::from("b")).await.unwrap();
        let deleted = store.delete("/r/b", None).await.unwrap().revision;
        (first, second, deleted)
    };
    let store = open(dir.path());
    assert_eq!(store.current_revision().await.unwrap(), deleted);
    let latest = store.get("/r/a", None).await.unwrap().kv.unwrap();
    assert_eq!(
        (latest.value, latest.mod_revision),
        (Bytes::from("2"), second)
    );
    assert_eq!(latest.create_revision, first);
    let old = store.get("/r/a", Some(first)).await.unwrap().kv.unwrap();
    assert_eq!(old.value, Bytes::from("1"));
    assert!(store.get("/r/b", None).await.unwrap().kv.is_none());
    let listed = store.list("/r/", &ListOptions::default()).await.unwrap();
    assert_eq!(listed.kvs.len(), 1);
    let next = store.create("/r/c", Bytes::new()).await.unwrap();
    assert!(next > deleted, "revisions continue after reopen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_reuses_space() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let file = dir.path().join("kapi.redb");
    let value = Bytes::from(vec![7u8; 16 * 1024]);
    let mut revision = store.create("/r/k", value.clone()).await.unwrap();
    let mut sizes = Vec::new();
    for _ in 0..4 {
        for _ in 0..300 {
            revision = store.update("/r/k", value.clone(), revision).await.unwrap();
        }
        store.compact(revision).await.unwrap();
        sizes.push(std::fs::metadata(&file).unwrap().len());
    }
    // 1,200 versions of 16 KiB would need ~19 MiB; compaction keeps the file near one round's.
    assert!(
        sizes[3] <= sizes[0] * 2,
        "file keeps growing after compaction: {sizes:?}"
    );
    let kv = store.get("/r/k", None).await.unwrap().kv.unwrap();
    assert_eq!(kv.mod_revision, revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_watcher_catches_up_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let config = EmbeddedConfig {
        watch_buffer: 4,
        ..EmbeddedConfig::new(dir.path())
    };
    let store = std::sync::Arc::new(EmbeddedStore::open(config).unwrap());
    let start = store.current_revision().await.unwrap();
    let mut watch = store
        .watch(
            "/r/",
            WatchOptions {
                prefix: true,
                after: Some(start),
            },
        )
        .await
        .unwrap();
    // Far more batches than the broadcast holds, written while nobody reads the watch.
    let writes = 800;
    let mut tasks = Vec::new();
    for task in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..writes / 8 {
                store
                    .create(&format!("/r/{task}/{i}"), Bytes::from("v"))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let last = store.current_revision().await.unwrap();
    let mut seen: Vec<Event> = Vec::new();
    while seen.last().map(Event::revision) != Some(last) {
        let item = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("watch delivers")
            .expect("watch open")
            .unwrap();
        if let WatchResponse::Events(events) = item {
            seen.extend(events);
        }
    }
    let revisions: Vec<i64> = seen.iter().map(Event::revision).collect();
    let expected: Vec<i64> = (start + 1..=last).collect();
    assert_eq!(revisions, expected, "every change once, in order");
}

/// The next event of `watch`, within ten seconds.
async fn next_event(watch: &mut kapi_storage::WatchStream) -> Event {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let next = tokio::time::timeout_at(deadline, watch.next()).await;
        match next
            .expect("an event within 10 s")
            .expect("the watch goes on")
        {
            Ok(WatchResponse::Events(mut events)) => return events.remove(0),
            Ok(WatchResponse::Progress(_)) => continue,
            Err(err) => panic!("watch failed: {err}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_survives_reopen_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = |millis| Some(Duration::from_millis(millis));
    let written = {
        let store = open(dir.path());
        store
            .create_expiring("/r/a", Bytes::from("a"), ttl(200))
            .await
            .unwrap();
        store
            .create_expiring("/r/b", Bytes::from("b"), ttl(3000))
            .await
            .unwrap();
        store.create("/r/c", Bytes::from("c")).await.unwrap()
    };
    // The deadline of /r/a passes while the store is closed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut snapshot = Vec::new();
    {
        let store = open(dir.path());
        let options = WatchOptions {
            after: Some(written),
            prefix: true,
        };
        let mut watch = store.watch("/r/", options).await.unwrap();
        let expired = next_event(&mut watch).await;
        assert_eq!(
            (&*expired.kv.key, expired.kind),
            ("/r/a", kapi_storage::EventKind::Delete),
            "a key whose deadline passed while the store was closed is deleted on open"
        );
        store.write_snapshot(&mut snapshot).unwrap();
    }
    let restored = tempfile::tempdir().unwrap();
    EmbeddedStore::restore_snapshot(&mut snapshot.as_slice(), restored.path()).unwrap();
    let store = open(restored.path());
    let options = WatchOptions {
        prefix: true,
        after: None,
    };
    let mut watch = store.watch("/r/", options).await.unwrap();
    let expired = next_event(&mut watch).await;
    assert_eq!(
        (&*expired.kv.key, expired.kind),
        ("/r/b", kapi_storage::EventKind::Delete),
        "a restored snapshot keeps its keys' deadlines"
    );
    assert!(store.get("/r/c", None).await.unwrap().kv.is_some());
}
