//! The etcd store under a member failure: a 3-member cluster, 8 concurrent writers and a watch,
//! and the leader killed with SIGKILL mid-run. The store lists the leader first, so it is also
//! the member the store talks to: writes and the watch stream must move to another member while
//! the others elect a new leader. Checks that writes keep being acknowledged after the kill,
//! that every acknowledged write is durable, that the watch delivers every write under its
//! prefix exactly once and in order (compared with the history read back from etcd), and that
//! the killed member catches up after a restart. A second case takes a single member down
//! briefly (the watch must carry on) and then for good (calls and the watch must fail with
//! Unavailable within the request timeout rather than hang).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd_client::{Client, GetOptions};
use futures::StreamExt;
use kapi_storage::{
    EtcdConfig, EtcdStore, Event, Result, Revision, StorageError, Store, WatchOptions,
    WatchResponse,
};
use kapi_testing::etcd::EtcdCluster;
use parking_lot::Mutex;
use tokio::sync::mpsc;

const PREFIX: &str = "/registry/faults/";
const WRITERS: usize = 8;
const KEYS_PER_WRITER: usize = 4;
/// Acknowledged writes before the kill, and at least this many more after it.
const WRITES_BEFORE_KILL: usize = 200;
const WRITES_AFTER_KILL: usize = 200;
/// The longest any phase may take.
const PHASE_TIMEOUT: Duration = Duration::from_secs(20);

/// One acknowledged write.
#[derive(Clone, Debug)]
struct Ack {
    key: String,
    revision: Revision,
    value: String,
}

/// What the writers share: the acknowledged writes, the failed ones, and the stop flag.
#[derive(Default)]
struct Log {
    acks: Mutex<Vec<Ack>>,
    unacknowledged: AtomicUsize,
    stop: AtomicBool,
}

impl Log {
    fn acked(&self) -> usize {
        self.acks.lock().len()
    }
}

/// The index of the cluster's leader among `endpoints`.
async fn leader(endpoints: &[String]) -> usize {
    for (index, endpoint) in endpoints.iter().enumerate() {
        let mut client = Client::connect([endpoint], None).await.unwrap();
        let status = client.status().await.unwrap();
        if status.header().unwrap().member_id() == status.leader() {
            return index;
        }
    }
    panic!("no member of {endpoints:?} is the leader");
}

/// Waits until `condition` holds, checking every 20 ms, failing after [`PHASE_TIMEOUT`].
async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + PHASE_TIMEOUT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates and then updates its own keys until told to stop. A write that fails with
/// Unavailable may or may not have happened, so the key's revision is read again.
async fn writer(id: usize, store: Arc<EtcdStore>, log: Arc<Log>) {
    let mut revisions: Vec<Option<Revision>> = vec![None; KEYS_PER_WRITER];
    let mut seq = 0;
    while !log.stop.load(Ordering::Relaxed) {
        let slot = seq % KEYS_PER_WRITER;
        let key = format!("{PREFIX}w{id}/k{slot}");
        let value = format!("w{id}-{seq}");
        seq += 1;
        let bytes = Bytes::from(value.clone());
        let result = match revisions[slot] {
            None => store.create(&key, bytes).await,
            Some(expected) => store.update(&key, bytes, expected).await,
        };
        match result {
            Ok(revision) => {
                revisions[slot] = Some(revision);
                log.acks.lock().push(Ack {
                    key,
                    revision,
                    value,
                });
            }
            Err(StorageError::Unavailable(_)) => {
                log.unacknowledged.fetch_add(1, Ordering::Relaxed);
                revisions[slot] = current_revision_of(&store, &key).await;
            }
            // An earlier unacknowledged write did happen.
            Err(StorageError::KeyExists { .. }) => {
                revisions[slot] = current_revision_of(&store, &key).await;
            }
            Err(StorageError::Conflict { current, .. }) => {
                revisions[slot] = Some(current.mod_revision);
            }
            Err(err) => panic!("writer {id}: unexpected error writing {key}: {err}"),
        }
    }
}

/// The mod revision of `key` now, or `None` if it is missing or cannot be read (then the next
/// create fails with KeyExists and the writer asks again).
async fn current_revision_of(store: &EtcdStore, key: &str) -> Option<Revision> {
    match store.get(key, None).await {
        Ok(response) => response.kv.map(|kv| kv.mod_revision),
        Err(StorageError::Unavailable(_)) => None,
        Err(err) => panic!("get {key}: {err}"),
    }
}

/// What the watch delivered: its events, and the highest revision it has vouched for (the last
/// event or progress notification).
#[derive(Default)]
struct Seen {
    events: Vec<Event>,
    up_to: Revision,
    error: Option<StorageError>,
}

/// Collects the watch into `seen` until the stream ends or fails.
async fn collect(mut stream: kapi_storage::WatchStream, seen: Arc<Mutex<Seen>>) {
    while let Some(item) = stream.next().await {
        let mut seen = seen.lock();
        match item {
            Ok(WatchResponse::Events(events)) => {
                seen.up_to = seen.up_to.max(events.last().unwrap().revision());
                seen.events.extend(events);
            }
            Ok(WatchResponse::Progress(revision)) => seen.up_to = seen.up_to.max(revision),
            Err(err) => {
                seen.error = Some(err);
                return;
            }
        }
    }
}

/// Every version of every key under the prefix, read back from etcd by walking each key's
/// history from its latest mod revision down: revision -> (key, value).
async fn history(store: &EtcdStore) -> BTreeMap<Revision, (String, Bytes)> {
    let mut versions = BTreeMap::new();
    let list = store.list(PREFIX, &Default::default()).await.unwrap();
    for latest in list.kvs {
        let mut at = Some(latest.mod_revision);
        while let Some(revision) = at {
            let kv = store.get(&latest.key, Some(revision)).await.unwrap().kv;
            at = kv.map(|kv| {
                let previous = versions.insert(kv.mod_revision, (kv.key.to_string(), kv.value));
                assert!(
                    previous.is_none(),
                    "two writes at revision {}",
                    kv.mod_revision
                );
                kv.mod_revision - 1
            });
        }
    }
    versions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_and_watch_survive_a_killed_member() {
    let started = Instant::now();
    let mut cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(3))
        .await
        .unwrap();
    let endpoints = cluster.endpoints();
    let victim = leader(&endpoints).await;
    let mut servers = endpoints.clone();
    servers.swap(0, victim);
    let mut config = EtcdConfig::new(servers);
    config.request_timeout = Duration::from_secs(5);
    config.progress_interval = Duration::from_millis(500);
    let store = Arc::new(EtcdStore::connect(config).await.unwrap());

    let start = store.current_revision().await.unwrap();
    let options = WatchOptions {
        prefix: true,
        after: Some(start),
    };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let collector = tokio::spawn(collect(
        store.watch(PREFIX, options).await.unwrap(),
        seen.clone(),
    ));

    let log = Arc::new(Log::default());
    let writers: Vec<_> = (0..WRITERS)
        .map(|id| tokio::spawn(writer(id, store.clone(), log.clone())))
        .collect();
    wait_until("writes before the kill", || {
        log.acked() >= WRITES_BEFORE_KILL
    })
    .await;

    tokio::task::block_in_place(|| cluster.kill(victim));
    let at_kill = log.acked();
    wait_until("writes after the kill", || {
        log.acked() >= at_kill + WRITES_AFTER_KILL
    })
    .await;
    log.stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    let last = store.current_revision().await.unwrap();
    let acks = log.acks.lock().clone();
    println!(
        "{} writes acknowledged ({at_kill} before the kill), {} unacknowledged, last revision {last}",
        acks.len(),
        log.unacknowledged.load(Ordering::Relaxed),
    );

    // Every acknowledged write is there, at its revision.
    for ack in &acks {
        let kv = store.get(&ack.key, Some(ack.revision)).await.unwrap().kv;
        let kv = kv.unwrap_or_else(|| panic!("acknowledged {ack:?} is missing"));
        assert_eq!(kv.mod_revision, ack.revision, "{ack:?}");
        assert_eq!(kv.value, ack.value.as_bytes(), "{ack:?}");
    }

    // The watch delivered exactly the history of the prefix, in order, once.
    store.request_progress().await.unwrap();
    wait_until("the watch catches up", || {
        let seen = seen.lock();
        seen.up_to >= last || seen.error.is_some()
    })
    .await;
    collector.abort();
    let seen = std::mem::take(&mut *seen.lock());
    assert!(seen.error.is_none(), "the watch failed: {:?}", seen.error);
    let revisions: Vec<Revision> = seen.events.iter().map(Event::revision).collect();
    for pair in revisions.windows(2) {
        assert!(pair[0] < pair[1], "watch revisions out of order: {pair:?}");
    }
    let history = history(&store).await;
    let watched: BTreeSet<Revision> = revisions.iter().copied().collect();
    let written: BTreeSet<Revision> = history.keys().copied().collect();
    assert_eq!(
        watched.difference(&written).collect::<Vec<_>>(),
        Vec::<&Revision>::new(),
        "watched revisions that are not in the history"
    );
    assert_eq!(
        written.difference(&watched).collect::<Vec<_>>(),
        Vec::<&Revision>::new(),
        "revisions in the history that the watch missed"
    );
    for event in &seen.events {
        let (key, value) = &history[&event.revision()];
        assert_eq!((&*event.kv.key, &event.kv.value), (key.as_str(), value));
    }
    for ack in &acks {
        assert!(watched.contains(&ack.revision), "watch missed {ack:?}");
    }

    // The killed member comes back and catches up with everything written without it.
    tokio::task::block_in_place(|| cluster.restart(victim));
    assert_member_caught_up(&endpoints[victim], &history, last).await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the test took {:?}",
        started.elapsed()
    );
}

/// Reads the member's own copy (serializable reads are answered locally) until it has applied
/// `last`, then compares its keys with the cluster's.
async fn assert_member_caught_up(
    endpoint: &str,
    history: &BTreeMap<Revision, (String, Bytes)>,
    last: Revision,
) {
    let mut client = Client::connect([endpoint], None).await.unwrap();
    let local = GetOptions::new().with_prefix().with_serializable();
    let deadline = Instant::now() + PHASE_TIMEOUT;
    let response = loop {
        let response = client.get(PREFIX, Some(local.clone())).await.unwrap();
        if response.header().unwrap().revision() >= last {
            break response;
        }
        assert!(Instant::now() < deadline, "the restarted member is behind");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut latest = BTreeMap::new();
    for (revision, (key, value)) in history {
        latest.insert(key.clone(), (*revision, value.clone()));
    }
    let local: BTreeMap<_, _> = response
        .kvs()
        .iter()
        .map(|kv| {
            let value = Bytes::copy_from_slice(kv.value());
            (
                kv.key_str().unwrap().to_string(),
                (kv.mod_revision(), value),
            )
        })
        .collect();
    assert_eq!(local, latest, "the restarted member's keys");
}

/// Forwards a watch's items to a channel, so the watch is polled all the time, also while
/// etcd is down.
fn forward(
    mut stream: kapi_storage::WatchStream,
) -> mpsc::UnboundedReceiver<Result<WatchResponse>> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            if sender.send(item).is_err() {
                return;
            }
        }
    });
    receiver
}

/// The next event batch on a forwarded watch, skipping progress notifications.
async fn next_events(receiver: &mut mpsc::UnboundedReceiver<Result<WatchResponse>>) -> Vec<Event> {
    loop {
        let item = tokio::time::timeout(PHASE_TIMEOUT, receiver.recv()).await;
        match item
            .expect("no watch response in time")
            .expect("the watch ended")
        {
            Ok(WatchResponse::Events(events)) => return events,
            Ok(WatchResponse::Progress(_)) => {}
            Err(err) => panic!("the watch failed: {err}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_survives_a_short_outage_and_reports_a_long_one() {
    let mut cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(1))
        .await
        .unwrap();
    let mut config = EtcdConfig::new(cluster.endpoints());
    let request_timeout = Duration::from_secs(3);
    config.request_timeout = request_timeout;
    config.progress_interval = Duration::from_millis(200);
    let store = EtcdStore::connect(config).await.unwrap();
    let options = WatchOptions {
        prefix: true,
        after: None,
    };
    let mut watch = forward(store.watch(PREFIX, options).await.unwrap());
    let a = store
        .create(&format!("{PREFIX}a"), Bytes::new())
        .await
        .unwrap();
    assert_eq!(next_events(&mut watch).await[0].revision(), a);

    // Down for less than the request timeout: the watch carries on by itself.
    tokio::task::block_in_place(|| {
        cluster.kill(0);
        cluster.restart(0);
    });
    let b = store
        .create(&format!("{PREFIX}b"), Bytes::new())
        .await
        .unwrap();
    let events = next_events(&mut watch).await;
    assert_eq!((events.len(), events[0].revision()), (1, b), "{events:?}");

    // Down for good: calls and the watch fail with Unavailable, within the request timeout.
    tokio::task::block_in_place(|| cluster.kill(0));
    let failed_at = Instant::now();
    let read = store.get(&format!("{PREFIX}a"), None).await;
    assert!(
        matches!(read, Err(StorageError::Unavailable(_))),
        "{read:?}"
    );
    assert!(failed_at.elapsed() <= request_timeout + Duration::from_secs(1));
    let last = loop {
        let item = tokio::time::timeout(request_timeout * 3, watch.recv()).await;
        match item.expect("the watch did not give up in time") {
            Some(Ok(WatchResponse::Progress(_))) => {}
            other => break other,
        }
    };
    assert!(
        matches!(last, Some(Err(StorageError::Unavailable(_)))),
        "expected the watch to end with Unavailable, got {last:?}"
    );
    assert!(watch.recv().await.is_none(), "an error is the last item");
}
