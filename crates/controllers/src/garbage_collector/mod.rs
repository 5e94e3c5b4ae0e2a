//! kube-controller-manager's garbage collector: objects whose owners (their
//! `ownerReferences`) are all gone are deleted, across every resource discovery lists that
//! can be deleted, listed and watched (built-in, custom and aggregated alike), with
//! background, foreground (`foregroundDeletion`, `blockOwnerDeletion`) and orphan (`orphan`)
//! propagation as upstream's.
//!
//! As upstream: a monitor per resource (`monitor.rs`) feeds the dependency graph
//! (`graph.rs`); the graph queues the objects that need a decision, and 20 workers decide
//! (`collector.rs`) through the API as `system:serviceaccount:kube-system:generic-garbage-collector`.
//! The resources are discovered again every 30 seconds and whenever APIServices change (a
//! CRD established or removed, an extension server registered). Failed decisions are retried
//! with per-object backoff from 5 ms to 1000 s; owners verified absent are remembered (the
//! last 500).

mod collector;
mod graph;
mod monitor;
mod plain;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use parking_lot::{Mutex, RwLock};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::discovery::{Resource, discover};
use crate::workqueue::WorkQueue;
use collector::Failure;
use graph::{AbsentOwners, Event, EventType, Graph, Identity, Meta, Node, OwnerRef, Work};

/// The controller's name (`--controllers`), and its service account's in kube-system.
pub const GARBAGE_COLLECTOR_CONTROLLER: &str = "garbage-collector-controller";
/// The service account the collector works as.
pub const GARBAGE_COLLECTOR_ACCOUNT: &str = "generic-garbage-collector";
/// How often the resources are discovered again.
const RESYNC: Duration = Duration::from_secs(30);
/// How long the workers wait for the first monitors' lists.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// The wait before discovering again after discovery failed.
const DISCOVERY_RETRY: Duration = Duration::from_secs(1);
/// Decisions made at once (`--concurrent-gc-syncs`).
const WORKERS: usize = 20;
/// The backoff of a failing decision (client-go's default controller rate limiter).
const BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(1000));
/// The resources the collector leaves alone (upstream's ignored resources).
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// What the monitors, the graph and the workers share.
struct Shared {
    graph: Mutex<Graph>,
    attempt_to_delete: WorkQueue,
    attempt_to_orphan: WorkQueue,
    absent: Mutex<AbsentOwners>,
    /// The resource of each (apiVersion, kind).
    mapper: RwLock<HashMap<(String, String), Resource>>,
    client: LoopbackClient,
    /// The first monitors' lists not done yet (`usize::MAX` before discovery).
    unlisted: AtomicUsize,
    /// Notified when the last of them is done.
    listed: Notify,
}

impl Shared {
    /// The first monitors are `count`.
    fn expect_first_lists(&self, count: usize) {
        self.unlisted.store(count, Ordering::SeqCst);
        if count == 0 {
            self.listed.notify_waiters();
        }
    }

    /// One of the first monitors has listed its resource.
    fn first_list_done(&self) {
        if self.unlisted.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.listed.notify_waiters();
        }
    }

    /// Resolves once every first monitor has listed its resource.
    async fn first_lists_done(&self) {
        loop {
            let listed = self.listed.notified();
            tokio::pin!(listed);
            listed.as_mut().enable();
            if self.unlisted.load(Ordering::SeqCst) == 0 {
                return;
            }
            listed.await;
        }
    }

    /// Applies one event to the graph and queues what it asks for.
    fn process(&self, event: Event) {
        let work = self.graph.lock().process(&event);
        self.queue(work);
    }

    /// Applies a monitor's new list of a kind's objects to the graph: first what the list
    /// lacks is forgotten (see [`Graph::forget_unlisted`]), then each object is an update,
    /// under the graph's lock one at a time, as watch events are.
    fn relist(&self, api_version: &Arc<str>, kind: &Arc<str>, listed: Vec<Meta>) {
        let uids: HashSet<&str> = listed.iter().map(|meta| &*meta.uid).collect();
        let work = self.graph.lock().forget_unlisted(api_version, kind, &uids);
        drop(uids);
        self.queue(work);
        for meta in listed {
            self.process(Event {
                type_: EventType::Update,
                virtual_: false,
                api_version: api_version.clone(),
                kind: kind.clone(),
                meta,
            });
        }
    }

    /// Queues what the graph asks for.
    fn queue(&self, work: Work) {
        for uid in &work.attempt_to_delete {
            self.attempt_to_delete.add(uid);
        }
        for uid in &work.attempt_to_delete_later {
            self.attempt_to_delete.add_rate_limited(uid);
        }
        for uid in &work.attempt_to_orphan {
            self.attempt_to_orphan.add(uid);
        }
        let mut absent = self.absent.lock();
        for identity in work.absent {
            absent.add(identity);
        }
        drop(absent);
        for (dependent, reference) in work.invalid_namespace {
            let client = self.client.clone();
            tokio::spawn(
                async move { report_invalid_namespace(&client, &dependent, &reference).await },
            );
        }
    }

    /// The nodes of `node`'s dependents, as the graph has them now.
    fn dependents(&self, node: &Node) -> Vec<Node> {
        let graph = self.graph.lock();
        match graph.node(&node.identity.uid) {
            Some(current) => graph.dependents(current),
            None => Vec::new(),
        }
    }

    /// The resource serving `kind` in `api_version`.
    fn resource_of(&self, api_version: &str, kind: &str) -> Option<Resource> {
        self.mapper
            .read()
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
    }
}

/// Starts the collector, working through `client` (its own user), following `api_services`
/// to notice new resources, until `stopping`.
pub fn start_garbage_collector(
    client: LoopbackClient,
    api_services: Served,
    stopping: CancellationToken,
) {
    let shared = Arc::new(Shared {
        graph: Mutex::default(),
        attempt_to_delete: WorkQueue::new(BACKOFF.0, BACKOFF.1),
        attempt_to_orphan: WorkQueue::new(BACKOFF.0, BACKOFF.1),
        absent: Mutex::default(),
        mapper: RwLock::default(),
        client,
        unlisted: AtomicUsize::new(usize::MAX),
        listed: Notify::new(),
    });
    let changed = Arc::new(Notify::new());
    kapi_server::informer::notify_on_changes([api_services], &changed, &stopping);
    tokio::spawn(sync_monitors(shared.clone(), changed, stopping.clone()));
    for _ in 0..WORKERS {
        tokio::spawn(worker(shared.clone(), Queue::Delete, stopping.clone()));
        tokio::spawn(worker(shared.clone(), Queue::Orphan, stopping.clone()));
    }
}

/// Keeps a monitor running for each resource the collector follows: at start, every
/// [`RESYNC`], and when `changed` is notified.
async fn sync_monitors(shared: Arc<Shared>, changed: Arc<Notify>, stopping: CancellationToken) {
    let mut monitors: HashMap<Resource, CancellationToken> = HashMap::new();
    loop {
        // After a failure (at start, the server's authorizer may not know the collector's
        // role yet), the next attempt comes soon.
        let mut next = RESYNC;
        match discover(&shared.client).await {
            Ok(discovered) => {
                *shared.mapper.write() = discovered.mapper();
                if let Some(failure) = &discovered.failure {
                    tracing::debug!("garbage collector discovery: {failure}");
                }
                let wanted: Vec<Resource> = discovered
                    .preferred
                    .into_iter()
                    .filter(|r| r.has("delete") && r.has("list") && r.has("watch"))
                    .filter(|r| !IGNORED.contains(&(r.group.as_str(), r.resource.as_str())))
                    .collect();
                // A group version that could not be read keeps its monitors, as upstream's;
                // so do all when a whole document could not be read.
                let (failed, complete) = (&discovered.failed, discovered.complete);
                let mut stopped = Vec::new();
                monitors.retain(|resource, stop| {
                    let keep = !complete
                        || wanted.contains(resource)
                        || failed.contains(&resource.api_version());
                    if !keep {
                        stop.cancel();
                        stopped.push(resource.clone());
                    }
                    keep
                });
                // The plain objects of a kind no monitor follows any more are forgotten (its
                // nodes stay, as upstream's).
                for resource in stopped {
                    let followed = wanted
                        .iter()
                        .chain(monitors.keys())
                        .any(|r| r.group == resource.group && r.kind == resource.kind);
                    if !followed {
                        let api_version = resource.api_version();
                        shared
                            .graph
                            .lock()
                            .forget_plain(&api_version, &resource.kind);
                    }
                }
                let first = monitors.is_empty();
                let new: Vec<Resource> = wanted
                    .into_iter()
                    .filter(|r| !monitors.contains_key(r))
                    .collect();
                if first {
                    shared.expect_first_lists(new.len());
                }
                for resource in new {
                    let stop = stopping.child_token();
                    tokio::spawn(monitor::run(
                        shared.clone(),
                        resource.clone(),
                        shared.client.clone(),
                        first,
                        stop.clone(),
                    ));
                    monitors.insert(resource, stop);
                }
            }
            Err(err) => {
                tracing::debug!("garbage collector discovery: {err}");
                next = DISCOVERY_RETRY;
            }
        }
        tokio::select! {
            () = stopping.cancelled() => return,
            () = changed.notified() => {
                // Changes come in bursts (a CRD's versions, its APIServices): let them land.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            () = tokio::time::sleep(next) => {}
        }
    }
}

/// The collector's two queues.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Queue {
    /// Nodes to decide on (attemptToDelete).
    Delete,
    /// Owners whose dependents are to be orphaned (attemptToOrphan).
    Orphan,
}

/// One worker taking nodes from `which` queue until `stopping`; a failed decision, and a
/// decision on an owner not observed yet, is retried after its backoff.
async fn worker(shared: Arc<Shared>, which: Queue, stopping: CancellationToken) {
    let queue = match which {
        Queue::Delete => &shared.attempt_to_delete,
        Queue::Orphan => &shared.attempt_to_orphan,
    };
    // As upstream, no decision before the graph holds what the first lists found (an owner
    // orphaned before its dependents were seen would lose them), unless a monitor cannot
    // list for [`SYNC_TIMEOUT`]: then, as upstream, the collector proceeds anyway.
    tokio::select! {
        () = stopping.cancelled() => return,
        _ = tokio::time::timeout(SYNC_TIMEOUT, shared.first_lists_done()) => {}
    }
    loop {
        let uid = tokio::select! {
            () = stopping.cancelled() => return,
            uid = queue.next() => uid,
        };
        let node = shared.graph.lock().node(&uid).cloned();
        let requeue = match node {
            None => false,
            Some(node) => {
                let decision = match which {
                    Queue::Delete => shared.attempt_to_delete(&node).await,
                    Queue::Orphan => shared.attempt_to_orphan(&node).await,
                };
                match decision {
                    Ok(()) => {
                        which == Queue::Delete
                            && shared.graph.lock().node(&uid).is_some_and(|n| n.virtual_)
                    }
                    Err(Failure::Gone | Failure::NamespacedOwnerOfClusterScoped) => false,
                    Err(Failure::Error(err)) => {
                        tracing::debug!(item = %node.identity, "garbage collector: {err}");
                        true
                    }
                }
            }
        };
        if requeue {
            queue.add_rate_limited(&uid);
        } else {
            queue.forget(&uid);
        }
        queue.done(&uid);
    }
}

/// Records upstream's `OwnerRefInvalidNamespace` warning on a dependent whose owner
/// reference names an owner in another namespace.
async fn report_invalid_namespace(
    client: &LoopbackClient,
    dependent: &Identity,
    reference: &OwnerRef,
) {
    let invalid = Identity {
        kind: reference.kind.clone(),
        api_version: reference.api_version.clone(),
        namespace: dependent.namespace.clone(),
        name: reference.name.clone(),
        uid: reference.uid.clone(),
    };
    let involved = json!({"kind": &*dependent.kind, "apiVersion": &*dependent.api_version,
        "namespace": &*dependent.namespace, "name": &*dependent.name, "uid": &*dependent.uid});
    let message = format!(
        "ownerRef {invalid} does not exist in namespace {}",
        kapi_apimachinery::gofmt::quote(&dependent.namespace)
    );
    crate::events::record_warning(
        client,
        involved,
        "OwnerRefInvalidNamespace",
        &message,
        GARBAGE_COLLECTOR_CONTROLLER,
    )
    .await;
}
