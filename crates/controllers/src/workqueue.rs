//! A queue of keys to work on, as client-go's rate-limited delaying work queue: a key waiting
//! is queued once however often it is added; a key being worked on is handed to no other
//! worker, and one added meanwhile is handed out again when the first is done; keys can be
//! added after a delay (the earliest delay wins); a key that keeps failing waits longer each
//! time (exponential per-key backoff) until it is forgotten.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The queue; share it in an `Arc` between the producers and the workers.
pub(crate) struct WorkQueue {
    state: Mutex<State>,
    wake: Notify,
    /// The first and the longest backoff of a failing key.
    backoff: (Duration, Duration),
}

#[derive(Default)]
struct State {
    /// Keys ready to hand out, in order.
    ready: VecDeque<String>,
    /// Keys in `ready`, or added while being worked on.
    dirty: HashSet<String>,
    /// Keys handed out and not done.
    processing: HashSet<String>,
    /// Keys added with a delay, by when they are due.
    delayed: BTreeSet<(Instant, String)>,
    /// When each delayed key is due.
    due: HashMap<String, Instant>,
    /// Failures in a row of each key.
    failures: HashMap<String, u32>,
}

impl WorkQueue {
    /// An empty queue whose failing keys wait from `base` doubling up to `max`.
    pub(crate) fn new(base: Duration, max: Duration) -> WorkQueue {
        WorkQueue {
            state: Mutex::default(),
            wake: Notify::new(),
            backoff: (base, max),
        }
    }

    /// Queues `key` now.
    pub(crate) fn add(&self, key: &str) {
        let mut state = self.state.lock();
        if state.dirty.insert(key.to_string()) && !state.processing.contains(key) {
            state.ready.push_back(key.to_string());
        }
        drop(state);
        self.wake.notify_waiters();
    }

    /// Queues `key` once `delay` has passed (or earlier, if it is already due earlier).
    pub(crate) fn add_after(&self, key: &str, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let when = Instant::now() + delay;
        let mut state = self.state.lock();
        if let Some(&due) = state.due.get(key) {
            if due <= when {
                return;
            }
            state.delayed.remove(&(due, key.to_string()));
        }
        state.due.insert(key.to_string(), when);
        state.delayed.insert((when, key.to_string()));
        drop(state);
        self.wake.notify_waiters();
    }

    /// Queues `key` after its backoff, which doubles with each call until [`forget`](Self::forget).
    pub(crate) fn add_rate_limited(&self, key: &str) {
        let failures = {
            let mut state = self.state.lock();
            let failures = state.failures.entry(key.to_string()).or_default();
            *failures = failures.saturating_add(1);
            *failures
        };
        let (base, max) = self.backoff;
        let delay = base
            .checked_mul(1u32.checked_shl(failures - 1).unwrap_or(u32::MAX))
            .map_or(max, |delay| delay.min(max));
        self.add_after(key, delay);
    }

    /// Forgets `key`'s failures.
    pub(crate) fn forget(&self, key: &str) {
        self.state.lock().failures.remove(key);
    }

    /// The next key to work on, once one is ready; the caller calls [`done`](Self::done)
    /// with it afterwards.
    pub(crate) async fn next(&self) -> String {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let next_due = {
                let mut state = self.state.lock();
                state.promote_due(Instant::now());
                if let Some(key) = state.ready.pop_front() {
                    state.dirty.remove(&key);
                    state.processing.insert(key.clone());
                    return key;
                }
                state.delayed.first().map(|(when, _)| *when)
            };
            match next_due {
                Some(when) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(when) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Ends the work on `key`; if it was added meanwhile, it is queued again.
    pub(crate) fn done(&self, key: &str) {
        let mut state = self.state.lock();
        state.processing.remove(key);
        if state.dirty.contains(key) {
            state.ready.push_back(key.to_string());
            drop(state);
            self.wake.notify_waiters();
        }
    }
}

impl State {
    /// Moves the delayed keys due by `now` to the ready ones.
    fn promote_due(&mut self, now: Instant) {
        while let Some((when, _)) = self.delayed.first()
            && *when <= now
        {
            let (_, key) = self.delayed.pop_first().expect("a first entry");
            self.due.remove(&key);
            if self.dirty.insert(key.clone()) && !self.processing.contains(&key) {
                self.ready.push_back(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_key_is_queued_once_and_never_handed_out_twice_at_a_time() {
        let queue = WorkQueue::new(Duration::from_millis(5), Duration::from_secs(60));
        queue.add("a");
        queue.add("a");
        queue.add("b");
        assert_eq!(queue.next().await, "a");
        queue.add("a");
        assert_eq!(queue.next().await, "b");
        let pending = tokio::time::timeout(Duration::from_secs(1), queue.next()).await;
        assert!(pending.is_err(), "a is being worked on");
        queue.done("a");
        assert_eq!(queue.next().await, "a");
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_keys_come_when_due_and_the_earliest_delay_wins() {
        let queue = WorkQueue::new(Duration::from_millis(5), Duration::from_secs(60));
        let start = Instant::now();
        queue.add_after("late", Duration::from_secs(10));
        queue.add_after("a", Duration::from_secs(5));
        queue.add_after("a", Duration::from_secs(8));
        assert_eq!(queue.next().await, "a");
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert_eq!(queue.next().await, "late");
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn failing_keys_back_off_exponentially_until_forgotten() {
        let queue = WorkQueue::new(Duration::from_millis(5), Duration::from_millis(30));
        let mut waits = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            queue.add_rate_limited("a");
            let key = queue.next().await;
            waits.push(start.elapsed().as_millis());
            queue.done(&key);
        }
        assert_eq!(waits, [5, 10, 20, 30, 30]);
        queue.forget("a");
        let start = Instant::now();
        queue.add_rate_limited("a");
        queue.next().await;
        assert_eq!(start.elapsed(), Duration::from_millis(5));
    }
}
