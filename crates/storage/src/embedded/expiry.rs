//! Keys that expire: the embedded store's counterpart of the etcd leases kube-apiserver
//! attaches to Events (`--event-ttl`).
//!
//! A write given a time to live sets its key's deadline; any later write without one (and a
//! delete) clears it, as a put without a lease detaches etcd's. When a deadline passes, the
//! committer deletes the key as any delete does: a new revision, a Delete event to watchers.
//!
//! Deadlines are wall-clock milliseconds since the Unix epoch, kept in the `expiry` table
//! (key → deadline) in the same transaction as the write that set them, so they survive a
//! restart: keys whose deadline passed while the store was closed are deleted as soon as it
//! opens. The committer keeps them in memory too, ordered by deadline.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A key's deadline: wall-clock milliseconds since the Unix epoch.
pub(super) type Deadline = u64;

/// The deadline of a write made now with time to live `ttl`.
pub(super) fn deadline(ttl: Option<Duration>) -> Option<Deadline> {
    ttl.map(|ttl| now().saturating_add(ttl.as_millis().try_into().unwrap_or(u64::MAX)))
}

/// Now, as a [`Deadline`].
pub(super) fn now() -> Deadline {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis().try_into().unwrap_or(u64::MAX))
}

/// The deadlines of the keys that have one, by key and in deadline order.
#[derive(Default)]
pub(super) struct Expiring {
    by_key: HashMap<Arc<str>, Deadline>,
    by_deadline: BTreeSet<(Deadline, Arc<str>)>,
}

impl Expiring {
    /// Sets (or with `None` clears) `key`'s deadline.
    pub fn set(&mut self, key: &Arc<str>, deadline: Option<Deadline>) {
        if let Some(old) = self.by_key.remove(key) {
            self.by_deadline.remove(&(old, key.clone()));
        }
        if let Some(deadline) = deadline {
            self.by_key.insert(key.clone(), deadline);
            self.by_deadline.insert((deadline, key.clone()));
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<Deadline> {
        self.by_deadline.first().map(|(deadline, _)| *deadline)
    }

    /// Up to `max` keys whose deadline is at or before `now`, earliest first.
    pub fn due(&self, now: Deadline, max: usize) -> Vec<Arc<str>> {
        self.by_deadline
            .iter()
            .take_while(|(deadline, _)| *deadline <= now)
            .take(max)
            .map(|(_, key)| key.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }
}
