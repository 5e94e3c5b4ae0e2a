//! Periodic compaction, as kube-apiserver's compactor does it: every interval, compact to the
//! revision that was current one interval ago, so at least one interval of history is kept.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::{StorageError, Store};

/// A background task that compacts a store's history; stops when dropped.
pub struct Compactor {
    task: JoinHandle<()>,
}

impl Compactor {
    /// Starts compacting `store` every `interval` (kube-apiserver's default is 5 minutes).
    pub fn spawn(store: Arc<dyn Store>, interval: Duration) -> Self {
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            let mut previous = None;
            loop {
                ticker.tick().await;
                if let Some(revision) = previous {
                    match store.compact(revision).await {
                        // Another kapi replica on the same etcd compacted first.
                        Ok(()) | Err(StorageError::Compacted { .. }) => {}
                        Err(err) => tracing::warn!(%err, revision, "compaction failed"),
                    }
                }
                previous = match store.current_revision().await {
                    Ok(revision) => Some(revision),
                    Err(err) => {
                        tracing::warn!(%err, "compactor could not read the current revision");
                        None
                    }
                };
            }
        });
        Compactor { task }
    }
}

impl Drop for Compactor {
    fn drop(&mut self) {
        self.task.abort();
    }
}
