//! Following a collection's watch cache, as the in-process controllers do (upstream's
//! informers): every change is handed to the controller, and when the follower falls behind
//! the cache it says so (the controller then looks at everything again) and starts over.

use crate::cacher::{CacheEvent, CacheNotification};
use crate::endpoints::Served;
use tokio_util::sync::CancellationToken;

/// What a follower hands its controller.
pub enum Change<'a> {
    /// One change of the collection.
    Event(&'a CacheEvent),
    /// The follower (re)starts: changes may have been missed, look at everything.
    Resync,
}

/// Wakes `changed` on every change of each of `followed`'s caches until `stopping`, for a
/// controller that looks at everything whenever anything changed (several changes before
/// it looks wake it once).
pub fn notify_on_changes(
    followed: impl IntoIterator<Item = Served>,
    changed: &std::sync::Arc<tokio::sync::Notify>,
    stopping: &CancellationToken,
) {
    for served in followed {
        let changed = changed.clone();
        let notice = move |_: Change<'_>| {
            changed.notify_one();
            true
        };
        tokio::spawn(follow(served, stopping.clone(), notice));
    }
}

/// Hands every change of `served`'s cache to `notice` until `stopping`, or until `notice`
/// returns false (its controller is gone).
pub async fn follow(
    served: Served,
    stopping: CancellationToken,
    mut notice: impl FnMut(Change<'_>) -> bool,
) {
    let registry = &served.registry;
    let prefix = registry.collection_prefix(None);
    loop {
        let Ok(mut subscription) = registry.cacher().subscribe(None, &prefix) else {
            return;
        };
        if !notice(Change::Resync) {
            return;
        }
        loop {
            let notification = tokio::select! {
                _ = stopping.cancelled() => return,
                n = subscription.receiver.recv() => n,
            };
            match notification {
                Ok(CacheNotification::Events(events)) => {
                    if !events.iter().all(|event| notice(Change::Event(event))) {
                        return;
                    }
                }
                Ok(CacheNotification::Progress(_)) => {}
                Err(_) => break,
            }
        }
    }
}
