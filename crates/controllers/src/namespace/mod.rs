//! kube-controller-manager's namespace controller: a namespace being deleted has all its
//! content deleted, across every namespaced resource discovery lists (built-in, custom and
//! aggregated alike), then its `kubernetes` finalizer is removed and the server deletes it.
//!
//! As upstream: each namespace with a `deletionTimestamp` is looked at 5 seconds after it
//! changes (so that writes admitted just before the deletion land first), by one of 10
//! workers; content that remains (pods terminating, objects held by finalizers) is looked at
//! again after half its estimated wait plus a second; a failed pass is retried with per-key
//! backoff from 5 ms to 60 s; every namespace is looked at again every 5 minutes. Requests go
//! through the server's chain as `system:serviceaccount:kube-system:namespace-controller`,
//! whom the bootstrap RBAC policy grants what it needs.

mod conditions;
mod deleter;

use std::sync::Arc;
use std::time::Duration;

use kapi_server::cacher::EventType;
use kapi_server::endpoints::Served;
use kapi_server::informer::{self, Change};
use kapi_server::loopback::LoopbackClient;
use tokio_util::sync::CancellationToken;

use crate::workqueue::WorkQueue;
use deleter::{Deleter, Outcome};

/// The controller's name, and its service account's in kube-system.
pub const NAMESPACE_CONTROLLER: &str = "namespace-controller";
/// The wait before a changed namespace is looked at (upstream's namespaceDeletionGracePeriod).
const DELETION_GRACE: Duration = Duration::from_secs(5);
/// How often every namespace is looked at again (kube-controller-manager's
/// `--namespace-sync-period`).
const RESYNC: Duration = Duration::from_secs(300);
/// Namespaces worked on at once (`--concurrent-namespace-syncs`).
const WORKERS: usize = 10;
/// The backoff of a failing namespace.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(60));

/// Starts the controller over the namespaces' watch cache, deleting through `client` (the
/// controller's own user) until `stopping`.
pub fn start_namespace_controller(
    namespaces: Served,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    let queue = Arc::new(WorkQueue::new(BACKOFF.0, BACKOFF.1));
    tokio::spawn(enqueue_deleted(namespaces, queue.clone(), stopping.clone()));
    let deleter = Arc::new(Deleter { client });
    for _ in 0..WORKERS {
        tokio::spawn(work(deleter.clone(), queue.clone(), stopping.clone()));
    }
}

/// Queues each namespace with a `deletionTimestamp` after [`DELETION_GRACE`]: when it
/// changes, at start, and every [`RESYNC`].
async fn enqueue_deleted(namespaces: Served, queue: Arc<WorkQueue>, stopping: CancellationToken) {
    let all = {
        let (namespaces, queue) = (namespaces.clone(), queue.clone());
        move || {
            for namespace in namespaces.cached_list(None) {
                enqueue_if_deleted(&namespace, &queue);
            }
        }
    };
    let follower = {
        let (namespaces, queue, all) = (namespaces.clone(), queue.clone(), all.clone());
        informer::follow(namespaces.clone(), stopping.clone(), move |change| {
            match change {
                Change::Resync => all(),
                Change::Event(event) if event.type_ != EventType::Deleted => {
                    if let Some(namespace) = namespaces.cached("", event.object.name()) {
                        enqueue_if_deleted(&namespace, &queue);
                    }
                }
                Change::Event(_) => {}
            }
            true
        })
    };
    tokio::spawn(follower);
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    loop {
        tokio::select! {
            () = stopping.cancelled() => return,
            _ = resync.tick() => all(),
        }
    }
}

/// Queues `namespace` after [`DELETION_GRACE`] if it is being deleted.
fn enqueue_if_deleted(namespace: &serde_json::Value, queue: &WorkQueue) {
    if namespace["metadata"]["deletionTimestamp"].is_null() {
        return;
    }
    if let Some(name) = namespace["metadata"]["name"].as_str() {
        queue.add_after(name, DELETION_GRACE);
    }
}

/// One worker: takes namespaces from the queue until `stopping`.
async fn work(deleter: Arc<Deleter>, queue: Arc<WorkQueue>, stopping: CancellationToken) {
    loop {
        let name = tokio::select! {
            () = stopping.cancelled() => return,
            name = queue.next() => name,
        };
        match deleter.delete(&name).await {
            Ok(Outcome::Done) => queue.forget(&name),
            Ok(Outcome::Remaining(estimate)) => {
                let wait = estimate / 2 + 1;
                tracing::debug!(namespace = name, wait, "content remaining in namespace");
                queue.add_after(&name, Duration::from_secs(wait));
            }
            Err(err) => {
                tracing::warn!(namespace = name, "deleting the namespace's content: {err}");
                queue.add_rate_limited(&name);
            }
        }
        queue.done(&name);
    }
}
