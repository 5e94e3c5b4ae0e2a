//! Watches of the embedded store.
//!
//! A watcher subscribes to the broadcast of committed batches *before* it reads anything, so
//! every batch committed after its read reaches it through the broadcast. It then:
//! 1. replays the log from disk while it is behind (started from an old revision), then
//! 2. follows the broadcast, skipping what it has already seen.
//!
//! When it falls more than the broadcast's capacity behind, it re-subscribes and replays from
//! disk again from the last revision it handled, then sends a progress notification (one that
//! may have been lost with the skipped broadcast). No watcher can miss or repeat a change, and
//! none can slow the others or the writers down.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::broadcast::{self, error::RecvError};

use super::{Notification, Shared, history};
use crate::{Event, Result, Revision, StorageError, WatchOptions, WatchResponse, WatchStream};

/// How many log entries one replay step reads.
const REPLAY_CHUNK: usize = 1024;

/// What a watch selects: one key or every key under a prefix.
struct Selector {
    key: Arc<str>,
    prefix: bool,
}

impl Selector {
    fn matches(&self, key: &str) -> bool {
        if self.prefix {
            key.starts_with(&*self.key)
        } else {
            key == &*self.key
        }
    }
}

/// Where a watcher is.
enum Phase {
    /// Behind the broadcast: replaying the log from disk. `recovering` after a lag.
    Replaying { recovering: bool },
    /// Following the broadcast.
    Live,
    /// Ended with an error.
    Done,
}

struct Watcher {
    shared: Arc<Shared>,
    selector: Arc<Selector>,
    /// Every change up to this revision has been handled (sent or filtered out).
    handled: Revision,
    notifications: broadcast::Receiver<Notification>,
    phase: Phase,
}

/// Starts a watch of `key` as `options` say.
pub(super) fn start(
    shared: Arc<Shared>,
    key: Arc<str>,
    options: WatchOptions,
) -> Result<WatchStream> {
    // Subscribe and read the revision under the lock, so nothing commits in between.
    let (notifications, current, compacted) = {
        let state = shared.state.read();
        let sender = state
            .notifications
            .as_ref()
            .ok_or_else(|| StorageError::Internal("the embedded store is closed".into()))?;
        (sender.subscribe(), state.revision, state.compacted)
    };
    let after = options.after.unwrap_or(current);
    if after < compacted {
        return Err(StorageError::Compacted {
            requested: after,
            compacted,
        });
    }
    let phase = if after < current {
        Phase::Replaying { recovering: false }
    } else {
        Phase::Live
    };
    let watcher = Watcher {
        shared,
        selector: Arc::new(Selector {
            key,
            prefix: options.prefix,
        }),
        handled: after,
        notifications,
        phase,
    };
    Ok(futures::stream::unfold(watcher, |mut watcher| async move {
        let item = watcher.next().await?;
        Some((item, watcher))
    })
    .boxed())
}

impl Watcher {
    /// The next item of the stream; `None` once it has ended.
    async fn next(&mut self) -> Option<Result<WatchResponse>> {
        loop {
            let item = match self.phase {
                Phase::Done => return None,
                Phase::Replaying { recovering } => self.replay_step(recovering).await,
                Phase::Live => self.live_step().await?,
            };
            match item {
                Ok(None) => continue,
                Ok(Some(response)) => return Some(Ok(response)),
                Err(err) => {
                    self.phase = Phase::Done;
                    return Some(Err(err));
                }
            }
        }
    }

    /// Replays one chunk of the log from disk.
    async fn replay_step(&mut self, recovering: bool) -> Result<Option<WatchResponse>> {
        let shared = self.shared.clone();
        let selector = self.selector.clone();
        let after = self.handled;
        let (events, handled, caught_up) = tokio::task::spawn_blocking(move || {
            history::replay(&shared, after, REPLAY_CHUNK, |key| selector.matches(key))
        })
        .await
        .map_err(StorageError::internal)??;
        self.handled = handled;
        if !events.is_empty() {
            return Ok(Some(WatchResponse::Events(events)));
        }
        if caught_up {
            self.phase = Phase::Live;
            if recovering {
                return Ok(Some(WatchResponse::Progress(self.handled)));
            }
        }
        Ok(None)
    }

    /// Takes the next broadcast notification; `None` when the store is gone.
    async fn live_step(&mut self) -> Option<Result<Option<WatchResponse>>> {
        let response = match self.notifications.recv().await {
            Ok(Notification::Events(batch)) => self.select(&batch).map(WatchResponse::Events),
            Ok(Notification::Progress(revision)) if revision >= self.handled => {
                self.handled = revision;
                Some(WatchResponse::Progress(revision))
            }
            Ok(Notification::Progress(_)) => None,
            Err(RecvError::Lagged(skipped)) => {
                tracing::debug!(skipped, handled = self.handled, "watcher lagged; replaying");
                self.notifications = self.notifications.resubscribe();
                self.phase = Phase::Replaying { recovering: true };
                None
            }
            Err(RecvError::Closed) => return None,
        };
        Some(Ok(response))
    }

    /// The events of `batch` this watch selects and has not handled yet.
    fn select(&mut self, batch: &[Event]) -> Option<Vec<Event>> {
        let events: Vec<Event> = batch
            .iter()
            .filter(|event| event.revision() > self.handled && self.selector.matches(&event.kv.key))
            .cloned()
            .collect();
        if let Some(last) = batch.last() {
            self.handled = self.handled.max(last.revision());
        }
        (!events.is_empty()).then_some(events)
    }
}
