//! Watches that outlive the gRPC stream they run on.
//!
//! A [`Watch`] remembers the first revision it has not delivered yet. When its etcd stream
//! breaks (the member was killed, the connection dropped, the member lost its leader), it
//! watches again from that revision, on the next server, after a short backoff, so the
//! consumer sees every change exactly once and in order. It gives up with
//! [`StorageError::Unavailable`] only after failing for the request timeout.
//!
//! Progress: every watch asks etcd for a progress notification every progress interval and
//! whenever [`Store::request_progress`](crate::Store::request_progress) is called. etcd answers
//! on the watch's own stream (etcd-client opens one gRPC stream per watch).

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, EventType, WatchOptions as EtcdWatchOptions};
use futures::StreamExt;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::endpoints::CallError;
use super::{Shared, key_value};
use crate::{Event, EventKind, Result, Revision, StorageError, WatchResponse, WatchStream};

/// The first pause before watching again after a failure; doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// One logical watch and the etcd stream it currently runs on.
pub(super) struct Watch {
    shared: Arc<Shared>,
    key: Vec<u8>,
    range_end: Option<Vec<u8>>,
    /// The first revision not delivered yet: where a new etcd watch starts.
    next: Revision,
    /// The highest revision reported in a progress notification, so they never go back.
    progress: Revision,
    /// The current etcd stream and the index of the server it runs on.
    stream: Option<(usize, etcd_client::WatchStream)>,
    /// Since when the watch has had no working stream, if it has none.
    failing_since: Option<Instant>,
    /// The pause before the next attempt to watch again; zero while the watch is healthy.
    backoff: Duration,
    ticker: Interval,
    progress_requests: tokio::sync::watch::Receiver<u64>,
}

/// What woke a watch up.
enum Wake {
    Message(Result<Option<etcd_client::WatchResponse>, etcd_client::Error>),
    ProgressDue,
}

impl Watch {
    /// A watch of `key` (or of `[key, range_end)`) for every change after `after`.
    pub(super) fn new(
        shared: Arc<Shared>,
        key: Vec<u8>,
        range_end: Option<Vec<u8>>,
        after: Revision,
    ) -> Watch {
        let period = shared.progress_interval;
        let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let progress_requests = shared.progress_requests.subscribe();
        Watch {
            shared,
            key,
            range_end,
            next: after + 1,
            progress: after,
            stream: None,
            failing_since: None,
            backoff: Duration::ZERO,
            ticker,
            progress_requests,
        }
    }

    /// Opens the first etcd stream (retrying unavailable servers for up to the request
    /// timeout) and returns the watch as a stream.
    pub(super) async fn open(mut self) -> Result<WatchStream> {
        // The first etcd watch starts one revision early, at `after` itself, so etcd cancels it
        // exactly when `after` is older than the compacted revision, as the Store contract says
        // (etcd alone would still replay from the compacted revision on). The change at
        // `after`, if it is one of ours, is dropped as already delivered.
        self.rewatch((self.next - 1).max(1)).await?;
        let stream = futures::stream::unfold(Some(self), |watch| async move {
            let mut watch = watch?;
            match watch.next().await {
                Ok(response) => Some((Ok(response), Some(watch))),
                // The error is the last item; dropping the watch closes its etcd stream.
                Err(err) => Some((Err(err), None)),
            }
        });
        Ok(stream.boxed())
    }

    /// The next response for the consumer.
    async fn next(&mut self) -> Result<WatchResponse> {
        loop {
            let Some((_, stream)) = self.stream.as_mut() else {
                self.rewatch(self.next).await?;
                continue;
            };
            let wake = tokio::select! {
                message = stream.message() => Wake::Message(message),
                _ = self.ticker.tick() => Wake::ProgressDue,
                _ = self.progress_requests.changed() => Wake::ProgressDue,
            };
            let response = match wake {
                Wake::Message(message) => self.receive(message)?,
                Wake::ProgressDue => {
                    self.ask_progress().await;
                    None
                }
            };
            if let Some(response) = response {
                return Ok(response);
            }
        }
    }

    /// Handles one message of the etcd stream; `None` when there is nothing to deliver.
    fn receive(
        &mut self,
        message: Result<Option<etcd_client::WatchResponse>, etcd_client::Error>,
    ) -> Result<Option<WatchResponse>> {
        match message {
            Ok(Some(response)) => self.response(response),
            Ok(None) => {
                self.lost(&"etcd closed the watch stream");
                Ok(None)
            }
            Err(err) => {
                let err = CallError::Etcd(err);
                if !err.is_unavailable() {
                    return Err(err.into_storage());
                }
                self.lost(&err);
                Ok(None)
            }
        }
    }

    /// Handles one response of etcd's: a compaction ends the watch, a cancellation breaks the
    /// stream, events are delivered once, an empty response is a progress notification.
    fn response(&mut self, response: etcd_client::WatchResponse) -> Result<Option<WatchResponse>> {
        if response.compact_revision() != 0 {
            return Err(StorageError::Compacted {
                requested: self.next - 1,
                compacted: response.compact_revision(),
            });
        }
        if response.canceled() {
            let reason = format!("etcd canceled the watch: {}", response.cancel_reason());
            self.lost(&reason);
            return Ok(None);
        }
        if response.created() {
            self.failing_since = None;
            return Ok(None);
        }
        self.backoff = Duration::ZERO;
        if response.events().is_empty() {
            return Ok(Some(self.progress_notification(&response)));
        }
        let events = response
            .events()
            .iter()
            .map(event)
            .filter(|event| event.as_ref().map_or(true, |e| e.revision() >= self.next))
            .collect::<Result<Vec<_>>>()?;
        let Some(last) = events.last() else {
            return Ok(None);
        };
        self.next = last.revision() + 1;
        Ok(Some(WatchResponse::Events(events)))
    }

    /// A progress notification: every change up to its revision has been delivered. Never
    /// below what was delivered or notified before: etcd releases without the fix for
    /// etcd-io/etcd#15220 (Debian's 3.4.23 among them) may answer a progress request with a
    /// revision older than an event they already sent.
    fn progress_notification(&mut self, response: &etcd_client::WatchResponse) -> WatchResponse {
        let notified = response.header().map_or(0, |header| header.revision());
        self.progress = self.progress.max(notified).max(self.next - 1);
        WatchResponse::Progress(self.progress)
    }

    /// Asks etcd for a progress notification on the current stream. A failed send means the
    /// stream is closing; reading it reports why.
    async fn ask_progress(&mut self) {
        if let Some((_, stream)) = self.stream.as_mut() {
            let _ = stream.request_progress().await;
        }
    }

    /// Drops a broken stream and moves the store off its server.
    fn lost(&mut self, reason: &dyn Display) {
        if let Some((server, _)) = self.stream.take() {
            self.shared.endpoints.fail_over(server, reason);
        }
        self.failing_since.get_or_insert_with(Instant::now);
        tracing::warn!(next = self.next, %reason, "etcd watch broke; watching again");
    }

    /// Opens an etcd watch from `start` (the first undelivered revision, but see
    /// [`Watch::open`]), retrying with backoff while servers are unavailable, for up to the
    /// request timeout.
    async fn rewatch(&mut self, start: Revision) -> Result<()> {
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        let timeout = self.shared.endpoints.request_timeout();
        loop {
            if !self.backoff.is_zero() {
                tokio::time::sleep(self.backoff).await;
            }
            self.backoff = (self.backoff * 2).clamp(MIN_BACKOFF, MAX_BACKOFF);
            let (server, result) = self.open_stream(start, since + timeout).await;
            let err = match result {
                Ok(stream) => {
                    self.stream = Some((server, stream));
                    return Ok(());
                }
                Err(err) if err.is_unavailable() => err,
                Err(err) => return Err(err.into_storage()),
            };
            self.shared.endpoints.fail_over(server, &err);
            if since.elapsed() >= timeout {
                return Err(StorageError::Unavailable(format!(
                    "etcd watch could not start at revision {start} for {timeout:?}: {err}"
                )));
            }
        }
    }

    /// One attempt to open an etcd watch from `start` on the active server.
    async fn open_stream(
        &self,
        start: Revision,
        deadline: Instant,
    ) -> (usize, Result<etcd_client::WatchStream, CallError>) {
        let mut options = EtcdWatchOptions::new()
            .with_start_revision(start)
            .with_prev_key()
            .with_progress_notify();
        if let Some(end) = &self.range_end {
            options = options.with_range(end.clone());
        }
        let key = &self.key;
        let call = |client: Client| {
            let (key, options) = (key.clone(), options.clone());
            async move {
                let mut watch = client
                    .watch_client()
                    .max_decoding_message_size(super::MAX_RESPONSE);
                watch.watch(key, Some(options)).await
            }
        };
        self.shared.endpoints.attempt(&call, deadline).await
    }
}

/// The error that a watch known to start in compacted history ends with, which carries the
/// compacted revision (etcd reports it within about 100 ms, when it syncs the watch).
pub(super) async fn compaction_error(
    mut stream: WatchStream,
    after: Revision,
    wait: Duration,
) -> StorageError {
    let unknown = StorageError::Compacted {
        requested: after,
        compacted: 0,
    };
    let first_error = async {
        while let Some(item) = stream.next().await {
            if let Err(err) = item {
                return Some(err);
            }
        }
        None
    };
    match tokio::time::timeout(wait, first_error).await {
        Ok(Some(err)) => err,
        _ => unknown,
    }
}

/// Our event from etcd's.
fn event(event: &etcd_client::Event) -> Result<Event> {
    let kind = match event.event_type() {
        EventType::Put => EventKind::Put,
        EventType::Delete => EventKind::Delete,
    };
    let kv = event
        .kv()
        .ok_or_else(|| StorageError::Internal("etcd watch event without a key-value".into()))?;
    Ok(Event {
        kind,
        kv: key_value(kv)?,
        prev_kv: event.prev_kv().map(key_value).transpose()?,
    })
}
