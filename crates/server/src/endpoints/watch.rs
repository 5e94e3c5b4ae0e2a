//! WATCH: a stream of newline-delimited JSON events (`{"type":"ADDED","object":{...}}`) fed
//! from the resource's watch cache.
//!
//! Semantics as kube-apiserver's:
//! - resourceVersion unset: the current state (a consistent read) as ADDED events, then
//!   changes; "0": any current state the cache has, then changes; N: changes after N, or an
//!   ERROR event 410 Expired when N is older than the cache's window.
//! - sendInitialEvents=true: the state at least as new as N as ADDED events, then a BOOKMARK
//!   annotated `k8s.io/initial-events-end`, then changes.
//! - With selectors, an object that starts matching arrives as ADDED and one that stops
//!   matching as DELETED.
//! - With allowWatchBookmarks, a BOOKMARK with the current revision about once a
//!   `bookmark_interval` (driven by storage progress, so it never skips an event).
//! - The stream ends after timeoutSeconds (or 30-60 minutes), or when the client goes away.
//! - A client that leaves its buffer full (it stopped reading) for [`UNRESPONSIVE_TIMEOUT`]
//!   has its watch closed, as kube-apiserver's cacher closes unresponsive watchers: memory per
//!   watch is its buffer. Over HTTP/1.1 the connection, which holds only that watch, is closed
//!   too; over HTTP/2 the other streams of the connection go on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use kapi_apimachinery::status::ApiError;
use kapi_storage::Revision;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::negotiation::Output;
use super::params::WatchParams;
use super::render::{self, Renderer, partial_metadata};
use crate::body::Body;
use crate::cacher::{
    CacheError, CacheEvent, CacheNotification, CachedObject, Cacher, EventType, Subscription,
};
use crate::filters::flow_control::WatchInitialized;
use crate::registry::{Item, cache_error};
use crate::resource::ResourceDefinition;
use crate::serving::ResponseDeadline;

/// How long a watch waits for the cache to reach the requested revision.
const CACHE_WAIT: Duration = Duration::from_secs(3);
/// How many frames may wait for a slow client before the producer pauses.
const FRAME_BUFFER: usize = 64;
/// How long the buffer may stay full before the watch is closed.
const UNRESPONSIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything one watch needs.
pub struct WatchRequest {
    pub definition: Arc<ResourceDefinition>,
    pub cacher: Arc<Cacher>,
    /// The key prefix of the watched namespace (or all namespaces).
    pub prefix: String,
    /// Only this object, for watches of a named object.
    pub name: Option<String>,
    pub params: WatchParams,
    pub output: Output,
    pub include_object: super::render::IncludeObject,
    pub bookmark_interval: Duration,
    /// The HTTP/1.1 connection's deadline for this response, to close the connection of an
    /// unresponsive client; `None` over HTTP/2.
    pub connection_deadline: Option<ResponseDeadline>,
    /// Told once the initial events are sent (API Priority and Fairness then frees the
    /// watch's seats).
    pub initialized: Option<WatchInitialized>,
}

/// Starts the watch: the body streams events until the watch ends.
pub async fn serve(request: WatchRequest) -> Result<Body, ApiError> {
    let subscription = request.subscribe().await?;
    let (frames, receiver) = mpsc::channel::<Bytes>(FRAME_BUFFER);
    tokio::spawn(async move {
        let mut watcher = Watcher {
            request,
            frames,
            last: 0,
            last_bookmark: Instant::now(),
        };
        watcher.run(subscription).await;
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        let frame = receiver.recv().await?;
        Some((Ok::<_, crate::body::BoxError>(Frame::data(frame)), receiver))
    });
    Ok(StreamBody::new(stream).boxed_unsync())
}

impl WatchRequest {
    /// Subscribes to the cache where the request's resourceVersion says to start.
    async fn subscribe(&self) -> Result<Subscription, ApiError> {
        let resource = self.definition.group_resource();
        let to_api = |err| cache_error(err, &resource, "");
        let starts_now = matches!(self.params.resource_version, None | Some(0));
        if !self.params.send_initial_events && !starts_now {
            return self
                .cacher
                .subscribe(self.params.resource_version, &self.prefix)
                .map_err(to_api);
        }
        if self.params.send_initial_events && self.params.resource_version.is_none() {
            // A consistent read of the initial state.
            return self
                .cacher
                .subscribe_current(&self.prefix, CACHE_WAIT)
                .await
                .map_err(to_api);
        }
        let waited = match self.params.resource_version {
            None => self.cacher.wait_fresh(CACHE_WAIT).await.map(drop),
            Some(revision) => self.cacher.wait_for(revision, CACHE_WAIT).await,
        };
        match waited {
            // The cache cannot prove it is current: start from its state, which the
            // subscription then carries forward to every later change.
            Ok(()) | Err(CacheError::Unordered) => {}
            Err(err) => return Err(to_api(err)),
        }
        let mut subscription = self.cacher.subscribe(None, &self.prefix).map_err(to_api)?;
        if !self.params.send_initial_events {
            // sendInitialEvents=false: changes from now on only.
            subscription.initial.clear();
        }
        Ok(subscription)
    }

    /// Whether `object` is in the watched namespace, has the watched name and matches the
    /// selectors.
    fn selects(&self, object: &CachedObject) -> bool {
        object.key.starts_with(&self.prefix)
            && self.name.as_ref().is_none_or(|name| name == object.name())
            && self.params.list.matches(object)
    }
}

/// The producer of one watch's frames.
struct Watcher {
    request: WatchRequest,
    frames: mpsc::Sender<Bytes>,
    /// The last revision sent (event or bookmark).
    last: Revision,
    last_bookmark: Instant,
}

impl Watcher {
    async fn run(&mut self, subscription: Subscription) {
        let deadline = tokio::time::sleep(self.timeout());
        tokio::pin!(deadline);
        let Subscription {
            backlog,
            initial,
            revision,
            mut receiver,
        } = subscription;
        if !self.send_initial(initial, backlog, revision).await {
            return;
        }
        if let Some(initialized) = self.request.initialized.take() {
            initialized.signal();
        }
        loop {
            let notification = tokio::select! {
                _ = &mut deadline => return,
                _ = self.frames.closed() => return,
                notification = receiver.recv() => notification,
            };
            let sent = match notification {
                Ok(CacheNotification::Events(events)) => self.send_events(&events).await,
                Ok(CacheNotification::Progress(revision)) => self.progress(revision).await,
                Err(RecvError::Lagged(_)) => {
                    tracing::info!(
                        resource = %self.request.definition.group_resource(),
                        "a watch fell behind its cache's notifications; resuming it from the event window"
                    );
                    match self.request.cacher.subscribe(Some(self.last), "") {
                        Ok(resumed) => {
                            receiver = resumed.receiver;
                            self.send_events(&resumed.backlog).await
                        }
                        Err(_) => false,
                    }
                }
                Err(RecvError::Closed) => false,
            };
            if !sent {
                return;
            }
        }
    }

    /// The watch's lifetime: timeoutSeconds, or 30 to 60 minutes as upstream picks it.
    fn timeout(&self) -> Duration {
        self.request.params.timeout.unwrap_or_else(|| {
            let jitter: f64 = rand::random();
            Duration::from_secs_f64(1800.0 * (1.0 + jitter))
        })
    }

    /// Sends the initial state (as ADDED events, plus the initial-events-end bookmark when
    /// asked) and the backlog of events after the requested revision.
    async fn send_initial(
        &mut self,
        initial: Vec<Arc<CachedObject>>,
        backlog: Vec<Arc<CacheEvent>>,
        revision: Revision,
    ) -> bool {
        let selected: Vec<_> = initial
            .into_iter()
            .filter(|o| self.request.selects(o))
            .collect();
        for object in selected {
            if !self.send(EventType::Added.as_str(), &object).await {
                return false;
            }
        }
        self.last = revision;
        let params = &self.request.params;
        let end_bookmark = params.send_initial_events && params.allow_bookmarks;
        if end_bookmark && !self.bookmark(revision, true).await {
            return false;
        }
        self.send_events(&backlog).await
    }

    /// Sends the events of a batch that this watch selects.
    async fn send_events(&mut self, events: &[Arc<CacheEvent>]) -> bool {
        for event in events {
            if event.revision() <= self.last {
                continue;
            }
            self.last = event.revision();
            if let Some(type_) = self.event_type(event)
                && !self.send(type_, &event.object).await
            {
                return false;
            }
        }
        true
    }

    /// The type this watch sees an event as, given its selectors, or `None` if it does not.
    fn event_type(&self, event: &CacheEvent) -> Option<&'static str> {
        let now = self.request.selects(&event.object);
        let before = event
            .prev
            .as_ref()
            .is_some_and(|prev| self.request.selects(prev));
        match (event.type_, before, now) {
            (EventType::Added, _, true) => Some("ADDED"),
            (EventType::Modified, true, true) => Some("MODIFIED"),
            (EventType::Modified, false, true) => Some("ADDED"),
            (EventType::Modified, true, false) => Some("DELETED"),
            (EventType::Deleted, true, _) | (EventType::Deleted, _, true) => Some("DELETED"),
            _ => None,
        }
    }

    /// Records storage progress, sending a bookmark when one is due.
    async fn progress(&mut self, revision: Revision) -> bool {
        if revision <= self.last {
            return true;
        }
        self.last = revision;
        let due = self.last_bookmark.elapsed() >= self.request.bookmark_interval;
        if self.request.params.allow_bookmarks && due {
            return self.bookmark(revision, false).await;
        }
        true
    }

    async fn bookmark(&mut self, revision: Revision, initial_events_end: bool) -> bool {
        self.last_bookmark = Instant::now();
        let mut metadata = json!({ "resourceVersion": revision.to_string() });
        if initial_events_end {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let definition = &self.request.definition;
        let output = self.request.output;
        let object = match output {
            Output::Json | Output::Yaml | Output::Protobuf => json!({
                "kind": definition.kind,
                "apiVersion": definition.group_version.api_version(),
                "metadata": metadata,
            }),
            Output::Table { v1beta1 } | Output::PartialMetadata { v1beta1, .. } => {
                partial_metadata(&json!({ "metadata": metadata }), v1beta1)
            }
        };
        let frame = match render::encode(output, &object) {
            Ok(encoded) => event_frame(output, "BOOKMARK", &encoded),
            Err(err) => error_frame(output, &err),
        };
        self.push(frame).await
    }

    /// Queues a frame for the client; false when the watch is over: the client went away, or
    /// left its buffer full for [`UNRESPONSIVE_TIMEOUT`].
    async fn push(&mut self, frame: Vec<u8>) -> bool {
        match self
            .frames
            .send_timeout(Bytes::from(frame), UNRESPONSIVE_TIMEOUT)
            .await
        {
            Ok(()) => true,
            Err(mpsc::error::SendTimeoutError::Closed(_)) => false,
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                tracing::info!(
                    resource = %self.request.definition.group_resource(),
                    closing_connection = self.request.connection_deadline.is_some(),
                    "closing the watch of a client that stopped reading"
                );
                if let Some(deadline) = &self.request.connection_deadline {
                    deadline.set(tokio::time::Instant::now());
                }
                false
            }
        }
    }

    /// Sends one event frame.
    async fn send(&mut self, type_: &str, object: &Arc<CachedObject>) -> bool {
        let output = self.request.output;
        let frame = match self.frame(type_, object) {
            Ok(frame) => frame,
            Err(err) => error_frame(output, &err),
        };
        self.push(frame).await
    }

    fn frame(&self, type_: &str, object: &Arc<CachedObject>) -> Result<Vec<u8>, ApiError> {
        let output = match self.request.output {
            Output::Yaml => Output::Json,
            other => other,
        };
        let renderer = Renderer {
            definition: &self.request.definition,
            output,
            include_object: self.request.include_object,
        };
        let encoded = renderer.object(&Item::from(object))?;
        Ok(event_frame(output, type_, &encoded))
    }
}

/// One event of a watch stream in `output`'s framing: a line of JSON, or a length-prefixed
/// protobuf `WatchEvent`. `object` is the event's object already encoded.
fn event_frame(output: Output, type_: &str, object: &[u8]) -> Vec<u8> {
    if output.is_protobuf() {
        let mut frame = Vec::with_capacity(object.len() + 32);
        kapi_protobuf::watch_frame(&mut frame, type_, object);
        return frame;
    }
    let mut frame = Vec::with_capacity(object.len() + 32);
    frame.extend_from_slice(b"{\"type\":\"");
    frame.extend_from_slice(type_.as_bytes());
    frame.extend_from_slice(b"\",\"object\":");
    frame.extend_from_slice(object);
    frame.extend_from_slice(b"}\n");
    frame
}

/// An ERROR event carrying `err`'s Status.
pub fn error_frame(output: Output, err: &ApiError) -> Vec<u8> {
    let object = crate::responses::status_body(err, output.is_protobuf());
    event_frame(output, "ERROR", &object)
}
