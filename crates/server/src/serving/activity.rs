//! What a connection is doing, so that it can be closed when it should be:
//!
//! - **Idle connections**, as Go's server closes them for kube-apiserver: a connection must
//!   start its first request within the read-header timeout of its handshake, and one with no
//!   request in progress is closed after the idle timeout. Upstream sets `ReadHeaderTimeout`
//!   to 32 s and `IdleTimeout` to 90 s, for HTTP/1.1 and HTTP/2 alike.
//! - **Responses not sent by their deadline.** A client that stops reading stops hyper from
//!   polling the response body, so a body cannot notice its own deadline; the connection
//!   does, and is closed, which ends the response and gives back what it held (its in-flight
//!   seat, its buffers), as upstream's timeout filter aborts such a response. Over HTTP/2 that
//!   closes the client's other streams too: hyper cannot reset one stream whose window is
//!   exhausted.
//!
//! A request is in progress from the moment hyper hands it to the service until its
//! response body has been sent (or dropped): [`Activity::begin`] returns a guard that the
//! response body carries, and a [`ResponseDeadline`] the request carries, which the timeout
//! filter sets for non-long-running requests.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a new connection may take to start its first request (upstream's
/// `ReadHeaderTimeout`; hyper bounds the reading of each request's head by it too).
pub(crate) const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// How long a connection with no request in progress stays open (upstream's `IdleTimeout`).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How long past its deadline a response may still take before its connection is closed:
/// the timeout filter answers a handler that missed the deadline with a 504, which must
/// still reach a client that reads.
const DEADLINE_GRACE: Duration = Duration::from_secs(2);

/// Why a connection should be closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Nothing in progress for too long.
    Idle,
    /// A response was not finished by its deadline.
    Overdue,
}

/// The requests in progress on one connection.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    state: Mutex<State>,
    next: AtomicU64,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// The deadlines of the requests in progress, by request number (`None` for requests
    /// without one).
    in_progress: BTreeMap<u64, Option<Instant>>,
    /// When the last request finished; `None` before any did.
    last_finished: Option<Instant>,
}

/// Marks one request in progress until dropped.
#[derive(Debug)]
pub(crate) struct InProgress {
    activity: Arc<Activity>,
    id: u64,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        let mut state = self.activity.state.lock();
        state.in_progress.remove(&self.id);
        state.last_finished = Some(Instant::now());
        drop(state);
        self.activity.changed.notify_one();
    }
}

/// The deadline of a request's response, set by the timeout filter: past it the connection
/// is closed if the response has not been sent. A request extension.
#[derive(Clone, Debug)]
pub struct ResponseDeadline {
    activity: Arc<Activity>,
    id: u64,
}

impl ResponseDeadline {
    /// The response must have been sent by `deadline` (give or take a short grace).
    pub fn set(&self, deadline: Instant) {
        if let Some(slot) = self.activity.state.lock().in_progress.get_mut(&self.id) {
            *slot = Some(deadline + DEADLINE_GRACE);
        }
        self.activity.changed.notify_one();
    }
}

impl Activity {
    /// A request has started; it is in progress until the guard is dropped. The deadline
    /// handle goes with the request.
    pub(crate) fn begin(self: &Arc<Self>) -> (InProgress, ResponseDeadline) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.state.lock().in_progress.insert(id, None);
        self.changed.notify_one();
        let activity = self.clone();
        (
            InProgress {
                activity: activity.clone(),
                id,
            },
            ResponseDeadline { activity, id },
        )
    }

    /// Waits until the connection should be closed: a response in progress is past its
    /// deadline, or nothing has been in progress for [`IDLE_TIMEOUT`] (nothing ever started
    /// within [`READ_HEADER_TIMEOUT`] of `since`, the end of the handshake).
    pub(crate) async fn expired(&self, since: Instant) -> Expiry {
        loop {
            // Registered before reading the state, so no change between the two is missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (wake, expiry) = {
                let state = self.state.lock();
                match state.last_finished {
                    _ if !state.in_progress.is_empty() => {
                        let deadline = state.in_progress.values().flatten().min().copied();
                        (deadline, Expiry::Overdue)
                    }
                    Some(finished) => (Some(finished + IDLE_TIMEOUT), Expiry::Idle),
                    None => (Some(since + READ_HEADER_TIMEOUT), Expiry::Idle),
                }
            };
            match wake {
                Some(wake) => tokio::select! {
                    () = tokio::time::sleep_until(wake) => return expiry,
                    () = changed => {}
                },
                None => changed.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_never_starts_a_request_expires_after_the_read_header_timeout() {
        let activity = Arc::new(Activity::default());
        let start = Instant::now();
        assert_eq!(activity.expired(start).await, Expiry::Idle);
        assert_eq!(start.elapsed(), READ_HEADER_TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_in_progress_hold_the_connection_and_idleness_counts_from_the_last() {
        let activity = Arc::new(Activity::default());
        let start = Instant::now();
        let request = activity.begin();
        let waiting = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.expired(start).await })
        };
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(!waiting.is_finished(), "a request in progress is not idle");
        drop(request);
        let ended = Instant::now();
        assert_eq!(waiting.await.unwrap(), Expiry::Idle);
        assert_eq!(ended.elapsed(), IDLE_TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_past_its_deadline_expires_the_connection() {
        let activity = Arc::new(Activity::default());
        let start = Instant::now();
        let (_watch, _) = activity.begin();
        let (_slow, deadline) = activity.begin();
        let waiting = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.expired(start).await })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        deadline.set(start + Duration::from_secs(60));
        assert_eq!(waiting.await.unwrap(), Expiry::Overdue);
        assert_eq!(start.elapsed(), Duration::from_secs(60) + DEADLINE_GRACE);
    }
}
