//! The shape most of kube-controller-manager's controllers share: follow one collection
//! (upstream's informer), queue the key of every object that changes (every object's when
//! the follower starts over), and let workers sync one key at a time, a key that fails
//! retried with per-key backoff (upstream's rate-limited work queue).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kapi_server::endpoints::Served;
use kapi_server::informer::{self, Change};
use tokio_util::sync::CancellationToken;

use crate::workqueue::WorkQueue;

/// How a keyed controller works its queue.
#[derive(Clone, Copy)]
pub(crate) struct Workers {
    /// Keys synced at once.
    pub count: usize,
    /// The first and the longest wait before a failed key is synced again.
    pub backoff: (Duration, Duration),
}

/// An object's key, as client-go's `MetaNamespaceKeyFunc`: `namespace/name`, or `name` for
/// a cluster-scoped object.
pub(crate) fn key(namespace: &str, name: &str) -> String {
    match namespace {
        "" => name.to_string(),
        namespace => format!("{namespace}/{name}"),
    }
}

/// Follows `served` until `stopping`, calling `sync` with the key of each object that
/// changed (or was deleted); an `Err` (its message is logged as `controller`'s) has the key
/// synced again after a backoff.
pub(crate) fn run<F, Fut>(
    controller: &'static str,
    served: Served,
    workers: Workers,
    stopping: CancellationToken,
    sync: F,
) -> Arc<WorkQueue>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let queue = Arc::new(WorkQueue::new(workers.backoff.0, workers.backoff.1));
    let enqueue = {
        let (queue, served) = (queue.clone(), served.clone());
        move |change: Change<'_>| {
            match change {
                Change::Event(event) => {
                    queue.add(&key(event.object.namespace(), event.object.name()))
                }
                Change::Resync => {
                    let prefix = served.registry.collection_prefix(None);
                    for object in served.registry.cacher().list(&prefix, |_| true).objects {
                        queue.add(&key(object.namespace(), object.name()));
                    }
                }
            }
            true
        }
    };
    tokio::spawn(informer::follow(served, stopping.clone(), enqueue));
    let sync = Arc::new(sync);
    for _ in 0..workers.count {
        let (queue, sync, stopping) = (queue.clone(), sync.clone(), stopping.clone());
        tokio::spawn(async move {
            loop {
                let key = tokio::select! {
                    () = stopping.cancelled() => return,
                    key = queue.next() => key,
                };
                match sync(key.clone()).await {
                    Ok(()) => queue.forget(&key),
                    Err(err) => {
                        tracing::warn!(controller, key, "{err}");
                        queue.add_rate_limited(&key);
                    }
                }
                queue.done(&key);
            }
        });
    }
    queue
}
