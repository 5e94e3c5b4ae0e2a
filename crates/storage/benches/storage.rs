//! Storage benchmark: both backends, same workloads, one run, same machine.
//!
//! `cargo bench -p kapi-storage --bench storage [-- --backend embedded|etcd|all]`
//!
//! Workloads per backend (fresh store each): creates/s at concurrency 1 and 64, gets/s of
//! random existing keys, LIST of 10,000 keys of 1 KiB, and watch delivery latency with 1,000
//! watchers (time from just before a write is sent until each watcher receives its event).
//! etcd is a real single-member etcd started on loopback, as the tests do.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use kapi_storage::{
    EmbeddedConfig, EmbeddedStore, EtcdConfig, EtcdStore, ListOptions, Store, WatchOptions,
    WatchResponse,
};
use kapi_testing::etcd::EtcdCluster;

const VALUE_SIZE: usize = 1024;
const LIST_KEYS: usize = 10_000;
const WATCHERS: usize = 1_000;
const WATCH_EVENTS: usize = 200;
const WATCH_RATE_PER_S: u64 = 100;

fn main() {
    let backend = std::env::args()
        .skip_while(|arg| arg != "--backend")
        .nth(1)
        .unwrap_or_else(|| "all".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("| backend | workload | result |");
    println!("|---|---|---|");
    if backend == "all" || backend == "embedded" {
        let dir = tempfile::tempdir().expect("temp dir");
        runtime.block_on(async {
            let store = EmbeddedStore::open(EmbeddedConfig::new(dir.path())).expect("open");
            run_all("embedded", Arc::new(store)).await;
        });
    }
    if backend == "all" || backend == "etcd" {
        let cluster = EtcdCluster::start(1);
        runtime.block_on(async {
            let store = EtcdStore::connect(EtcdConfig::new(cluster.endpoints()))
                .await
                .expect("connect to etcd");
            run_all("etcd", Arc::new(store)).await;
        });
    }
}

async fn run_all(backend: &str, store: Arc<dyn Store>) {
    let report = |workload: &str, result: String| println!("| {backend} | {workload} | {result} |");
    let value = Bytes::from(vec![b'x'; VALUE_SIZE]);

    let c1 = load(&store, "/registry/bench/c1/", 1, 1_000, creates(&value)).await;
    report("create, concurrency 1, 1 KiB", c1.summary("creates"));

    let c64 = load(&store, "/registry/bench/c64/", 64, 20_000, creates(&value)).await;
    report("create, concurrency 64, 1 KiB", c64.summary("creates"));

    let gets = load(
        &store,
        "/registry/bench/get/",
        64,
        100_000,
        |store, key| async move {
            let n: usize = key
                .rsplit('/')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let existing = format!("/registry/bench/c64/{}", n % 20_000);
            match store.get(&existing, None).await?.kv {
                Some(_) => Ok(()),
                None => Err(kapi_storage::StorageError::KeyNotFound { key: existing }),
            }
        },
    )
    .await;
    report(
        "get, concurrency 64, random of 20,000",
        gets.summary("gets"),
    );

    report(
        "list 10,000 keys of 1 KiB",
        list_bench(&store, &value).await,
    );
    report(
        &format!(
            "watch delivery, {WATCHERS} watchers, {WATCH_EVENTS} events at {WATCH_RATE_PER_S}/s"
        ),
        watch_bench(&store).await,
    );
}

/// An operation for [`load`] that creates its key with `value`.
fn creates(
    value: &Bytes,
) -> impl Fn(Arc<dyn Store>, String) -> BoxFuture<'static, kapi_storage::Result<()>>
+ Clone
+ Send
+ 'static {
    let value = value.clone();
    move |store, key| {
        let value = value.clone();
        Box::pin(async move { store.create(&key, value).await.map(drop) })
    }
}

/// Latencies and wall time of one load run.
struct LoadResult {
    ok: usize,
    errors: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl LoadResult {
    fn summary(&self, what: &str) -> String {
        format!(
            "{:.0} {what}/s ({} ok, {} errors in {:.2} s); latency {}",
            self.ok as f64 / self.elapsed.as_secs_f64(),
            self.ok,
            self.errors,
            self.elapsed.as_secs_f64(),
            percentiles(&self.latencies),
        )
    }
}

/// Runs `n` operations with `concurrency` in flight; operation `i` gets key `prefix` + `i`.
async fn load<F, Fut>(
    store: &Arc<dyn Store>,
    prefix: &str,
    concurrency: usize,
    n: usize,
    op: F,
) -> LoadResult
where
    F: Fn(Arc<dyn Store>, String) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = kapi_storage::Result<()>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (store, next, op, prefix) =
                (store.clone(), next.clone(), op.clone(), prefix.to_string());
            tokio::spawn(async move {
                let (mut latencies, mut errors) = (Vec::new(), 0);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return (latencies, errors);
                    }
                    let sent = Instant::now();
                    match op(store.clone(), format!("{prefix}{i}")).await {
                        Ok(()) => latencies.push(sent.elapsed()),
                        Err(_) => errors += 1,
                    }
                }
            })
        })
        .collect();
    let mut result = LoadResult {
        ok: 0,
        errors: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::new(),
    };
    for worker in workers {
        let (latencies, errors) = worker.await.expect("worker");
        result.ok += latencies.len();
        result.errors += errors;
        result.latencies.extend(latencies);
    }
    result.elapsed = started.elapsed();
    result
}

/// Fills a prefix with 10,000 keys of 1 KiB and times full LISTs of it.
async fn list_bench(store: &Arc<dyn Store>, value: &Bytes) -> String {
    let filled = load(
        store,
        "/registry/bench/list/",
        64,
        LIST_KEYS,
        creates(value),
    )
    .await;
    assert_eq!(filled.ok, LIST_KEYS, "list fill failed");
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let list = store
            .list("/registry/bench/list/", &ListOptions::default())
            .await
            .expect("list");
        latencies.push(started.elapsed());
        assert_eq!(list.kvs.len(), LIST_KEYS);
    }
    format!("20 lists; latency {}", percentiles(&latencies))
}

/// Opens 1,000 watchers on one prefix, writes paced events whose value is the send time, and
/// measures per (event, watcher) delivery latency.
async fn watch_bench(store: &Arc<dyn Store>) -> String {
    let prefix = "/registry/bench/watch/";
    let base = Instant::now();
    let after = store.current_revision().await.expect("revision");
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let options = WatchOptions {
            prefix: true,
            after: Some(after),
        };
        let mut stream = store.watch(prefix, options).await.expect("watch");
        watchers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(WATCH_EVENTS);
            while latencies.len() < WATCH_EVENTS {
                let next = tokio::time::timeout(Duration::from_secs(30), stream.next()).await;
                let Ok(Some(Ok(WatchResponse::Events(events)))) = next else {
                    match next {
                        Ok(Some(Ok(WatchResponse::Progress(_)))) => continue,
                        _ => break,
                    }
                };
                let now = base.elapsed();
                for event in events {
                    let sent: u64 = std::str::from_utf8(&event.kv.value)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    latencies.push(now.saturating_sub(Duration::from_nanos(sent)));
                }
            }
            latencies
        }));
    }
    let mut pace = tokio::time::interval(Duration::from_micros(1_000_000 / WATCH_RATE_PER_S));
    for i in 0..WATCH_EVENTS {
        pace.tick().await;
        let sent = base.elapsed().as_nanos().to_string();
        store
            .create(&format!("{prefix}{i}"), Bytes::from(sent))
            .await
            .expect("create");
    }
    let mut latencies = Vec::new();
    for watcher in watchers {
        latencies.extend(watcher.await.expect("watcher"));
    }
    let expected = WATCHERS * WATCH_EVENTS;
    format!(
        "{} of {expected} delivered; latency {}",
        latencies.len(),
        percentiles(&latencies)
    )
}

/// "p50 x ms, p99 y ms, max z ms" of `latencies`.
fn percentiles(latencies: &[Duration]) -> String {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let at = |q: f64| {
        let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    format!(
        "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        at(0.50),
        at(0.99),
        at(1.0)
    )
}
