//! Periodic compaction, as kube-apiserver's compactor does it: every interval, compact to the
//! revision that was current one interval ago, so at least one interval of history is kept.
//! Servers sharing a store take turns ([`Store::compaction_turn`]): on etcd, the one that
//! wins the interval's compare-and-swap of `compact_rev_key` compacts, kube-apiservers
//! included, so a store is compacted once per interval however many servers it has.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::{CompactionTurn, Store};

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
            let mut turn = CompactionTurn::default();
            loop {
                ticker.tick().await;
                match store.compaction_turn(turn).await {
                    Ok(next) => turn = next,
                    Err(err) => tracing::warn!(%err, ?turn, "compaction failed"),
                }
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
