//! One resource's monitor (upstream's metadata informer): lists the resource's objects
//! (metadata only) across all namespaces, then watches from the list's resourceVersion with
//! bookmarks, handing each change to the graph; a watch that ends is resumed from the last
//! resourceVersion seen, one the server can no longer serve (410) starts over with a list,
//! which the graph compares with what it knew. The monitor keeps nothing per object: what an
//! event is compared with is in the graph.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use http::{Method, Request, header};
use http_body_util::BodyExt;
use kapi_apimachinery::status::ApiError;
use kapi_server::loopback::LoopbackClient;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::graph::{Event, EventType, Meta};
use crate::discovery::Resource;

/// What lists ask for.
const LIST_METADATA: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// What watches ask for.
const WATCH_METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The wait after a failed list or watch, doubling up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(30);
/// The fewest namespaces a monitor holds before it drops those no object is in.
const NAMESPACES_PRUNED_FROM: usize = 64;
/// How long one watch request lasts before it is renewed (client-go's 5 to 10 minutes).
const WATCH_SECONDS: u64 = 300;

/// Follows `resource` until `stopping`, through `client`; one of the `first` monitors says
/// when its first list is done.
pub(super) async fn run(
    shared: Arc<Shared>,
    resource: Resource,
    client: LoopbackClient,
    first: bool,
    stopping: CancellationToken,
) {
    let mut monitor = Monitor {
        shared,
        api_version: resource.api_version().into(),
        kind: resource.kind.as_str().into(),
        collection: resource.collection(None),
        resource,
        client,
        namespaces: HashSet::new(),
        prune_namespaces_at: NAMESPACES_PRUNED_FROM,
        first,
    };
    let mut retry = RETRY_MIN;
    loop {
        let outcome = tokio::select! {
            () = stopping.cancelled() => return,
            outcome = monitor.list_and_watch() => outcome,
        };
        // A watch the server ended with an error event starts over after the shortest
        // pause; a failed list or watch after a growing one.
        let pause = match outcome {
            Ok(()) => {
                retry = RETRY_MIN;
                RETRY_MIN
            }
            Err(err) => {
                tracing::debug!(
                    resource = monitor.resource.gvr(),
                    "garbage collector monitor: {err}"
                );
                let pause = retry;
                retry = (retry * 2).min(RETRY_MAX);
                pause
            }
        };
        tokio::select! {
            () = stopping.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

struct Monitor {
    shared: Arc<Shared>,
    resource: Resource,
    api_version: Arc<str>,
    kind: Arc<str>,
    collection: String,
    client: LoopbackClient,
    /// The namespaces of the objects seen, each held once; names nothing else holds any
    /// more (their namespaces emptied) are dropped when the set has doubled.
    namespaces: HashSet<Arc<str>>,
    /// The size at which `namespaces` is next pruned.
    prune_namespaces_at: usize,
    /// One of the first monitors whose first list is not done yet.
    first: bool,
}

impl Monitor {
    /// Lists, then watches until the watch cannot be resumed.
    async fn list_and_watch(&mut self) -> Result<(), ApiError> {
        let mut resource_version = self.list().await?;
        if std::mem::take(&mut self.first) {
            self.shared.first_list_done();
        }
        loop {
            match self.watch(&resource_version).await? {
                Some(latest) => resource_version = latest,
                None => return Ok(()),
            }
        }
    }

    /// Lists every object, for the graph to compare with what it knew. The list's
    /// resourceVersion.
    async fn list(&mut self) -> Result<String, ApiError> {
        let list = self
            .client
            .json(Method::GET, &self.collection, Some(LIST_METADATA), None)
            .await?;
        let listed = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| self.shared_namespace(Meta::of(item)))
            .collect();
        self.shared.relist(&self.api_version, &self.kind, listed);
        Ok(list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Watches from `resource_version`: the resourceVersion to resume from when the watch
    /// ended, or `None` when it must start over with a list (410 Gone).
    async fn watch(&mut self, resource_version: &str) -> Result<Option<String>, ApiError> {
        let path = format!(
            "{}?watch=true&allowWatchBookmarks=true&resourceVersion={resource_version}&timeoutSeconds={WATCH_SECONDS}",
            self.collection
        );
        let request = Request::builder()
            .method(Method::GET)
            .uri(path)
            .header(header::ACCEPT, WATCH_METADATA)
            .body(kapi_server::body::empty())
            .map_err(|err| ApiError::bad_request(err.to_string()))?;
        let response = self.client.send(request).await?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            return Err(ApiError::new_generic(status, "", "watch refused"));
        }
        let mut body = response.into_body();
        let mut buffer = BytesMut::new();
        let mut latest = resource_version.to_string();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|err| ApiError::service_unavailable(err.to_string()))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line = buffer.split_to(end + 1);
                let event: Value = match serde_json::from_slice(&line[..end]) {
                    Ok(event) => event,
                    Err(err) => return Err(ApiError::internal(err)),
                };
                match self.apply(&event) {
                    Some(version) => latest = version,
                    None => return Ok(None),
                }
            }
            if buffer.remaining() > 0 && buffer.len() > 64 * 1024 * 1024 {
                return Err(ApiError::internal("a watch event over 64 MiB"));
            }
        }
        Ok(Some(latest))
    }

    /// Applies one watch event; the resourceVersion it brings, or `None` for an error event
    /// (the watch must start over).
    fn apply(&mut self, event: &Value) -> Option<String> {
        let object = &event["object"];
        let version = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match event["type"].as_str() {
            Some("ADDED") => {
                let meta = self.shared_namespace(Meta::of(object));
                self.changed(EventType::Add, meta)
            }
            Some("MODIFIED") => {
                let meta = self.shared_namespace(Meta::of(object));
                self.changed(EventType::Update, meta)
            }
            Some("DELETED") => self.changed(EventType::Delete, Meta::of(object)),
            Some("BOOKMARK") => {}
            _ => return None,
        }
        Some(version)
    }

    /// `meta` with its namespace the one the monitor holds for its other objects there, so
    /// the monitor and the graph keep one copy of each namespace's name.
    fn shared_namespace(&mut self, mut meta: Meta) -> Meta {
        match self.namespaces.get(&meta.namespace) {
            Some(namespace) => meta.namespace = namespace.clone(),
            None => {
                if self.namespaces.len() >= self.prune_namespaces_at {
                    self.namespaces.retain(|name| Arc::strong_count(name) > 1);
                    self.prune_namespaces_at =
                        (self.namespaces.len() * 2).max(NAMESPACES_PRUNED_FROM);
                }
                self.namespaces.insert(meta.namespace.clone());
            }
        }
        meta
    }

    /// Hands a change to the graph.
    fn changed(&self, type_: EventType, meta: Meta) {
        self.shared.process(Event {
            type_,
            virtual_: false,
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            meta,
        });
    }
}
