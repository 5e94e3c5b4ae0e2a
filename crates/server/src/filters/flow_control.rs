//! API Priority and Fairness's place in the chain (upstream's `WithPriorityAndFairness`,
//! where the max-in-flight filter sits when it is off): a [`FlowControl`] classifies each
//! request by its user and [`RequestInfo`] and admits it to its priority level, at once,
//! after a wait in one of the level's queues, or not at all. An admitted request holds its
//! seats until its response has been sent, a watch until its initial events have been sent
//! ([`WatchInitialized`], as upstream frees a watch's seats once it is initialised) or it
//! ended or was handed elsewhere (proxied) before; a refused one gets upstream's
//! plain-text 429 with the `Retry-After` its level advises. Every response names the UIDs
//! of the FlowSchema and priority level the request matched (`X-Kubernetes-PF-FlowSchema-UID`,
//! `X-Kubernetes-PF-PriorityLevel-UID`), refusals included. Long-running requests other
//! than watches (proxy, exec, attach, logs, port-forward) are neither classified nor
//! limited, as upstream's. Requests waiting and executing are reported as upstream's
//! `apiserver_current_inqueue_requests` and `apiserver_current_inflight_requests`.
//!
//! A request may wait a quarter of its timeout (`--request-timeout` or its `timeout`
//! parameter), at most a minute, as upstream's; a watch, which has no timeout, a quarter of
//! `--request-timeout`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::header::RETRY_AFTER;
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use kapi_apimachinery::request_info::{RequestInfo, is_mutating_verb};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::long_running::is_long_running;
use super::request_log::RequestReceived;
use super::timeout::request_timeout;
use super::{Filter, FilterFuture, FilterLayer, Next, call, request_info_of};
use crate::authn::UserInfo;
use crate::body::{Body, with_guard};
use crate::metrics::{Dropped, Metrics};
use crate::responses::{api_error, text_error};

/// The header naming the UID of the FlowSchema a request matched.
pub const FLOW_SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
/// The header naming the UID of the priority level a request was given.
pub const PRIORITY_LEVEL_UID: HeaderName =
    HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");
/// The longest a request waits in a queue, whatever its timeout.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// A watch's signal that its initial events have been sent, which frees its seats: a
/// request extension of admitted watches, which the watch handler keeps and signals.
/// Dropping every copy unsignalled (the watch failed, ended, or was proxied) frees them
/// too.
#[derive(Clone)]
pub struct WatchInitialized(Arc<Mutex<Option<oneshot::Sender<()>>>>);

impl WatchInitialized {
    /// Says the watch's initial events have been sent.
    pub fn signal(&self) {
        if let Some(sender) = self.0.lock().take() {
            let _ = sender.send(());
        }
    }
}

/// What one request asks flow control for.
pub struct FlowRequest<'a> {
    pub user: &'a UserInfo,
    pub info: &'a RequestInfo,
    /// The request's query, for what a LIST or watch will cost.
    pub query: &'a str,
    /// How long it may wait in a queue.
    pub wait_limit: Duration,
}

/// Seats a request holds while it executes; dropping them gives them back.
pub type Seats = Box<dyn Send + Sync>;

/// A refusal: how many seconds the client should wait before trying again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfter(pub u32);

/// What flow control decided, or will once the request has waited in its queue; a waiting
/// request's [`Withdrawn`] says whether it left its queue without an answer (its client
/// gone, its future dropped).
pub enum Admission {
    Now(Result<Seats, RetryAfter>),
    Later(WaitFuture, Withdrawn),
}

/// The wait of a queued request, ending with its seats or its refusal.
pub type WaitFuture = Pin<Box<dyn Future<Output = Result<Seats, RetryAfter>> + Send>>;

/// Set by flow control when a waiting request leaves its queue because its future was
/// dropped, not dispatched nor refused: what the filter counts as refused once the future
/// is gone (a request dispatched in the instant its client left is not).
#[derive(Clone, Debug, Default)]
pub struct Withdrawn(Arc<std::sync::atomic::AtomicBool>);

impl Withdrawn {
    /// Says the request left its queue unanswered.
    pub fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }

    fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// What classifies and admits requests (kapi-flowcontrol's FlowSchemas and priority
/// levels).
pub trait FlowControl: Send + Sync + 'static {
    /// Classifies `request` and admits it to its priority level.
    fn admit(&self, request: FlowRequest<'_>) -> (FlowClass, Admission);

    /// Counts the admitted watch `info` (with `query`) among those mutations will notify,
    /// until the returned guard drops (the watch ended).
    fn track_watch(&self, info: &RequestInfo, query: &str) -> Option<Box<dyn Send + Sync>>;
}

/// The UIDs a response carries, ready as header values (a classification copies no text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowClass {
    pub flow_schema_uid: HeaderValue,
    pub priority_level_uid: HeaderValue,
}

/// The layer that adds [`FlowControlFilter`].
pub type FlowControlLayer = FilterLayer<FlowControlFilter>;

/// The filter; without a [`FlowControl`] (`--enable-priority-and-fairness=false`), requests
/// pass untouched.
#[derive(Clone)]
pub struct FlowControlFilter {
    control: Option<Arc<dyn FlowControl>>,
    request_timeout: Duration,
    metrics: Arc<Metrics>,
}

impl FlowControlLayer {
    /// Admits requests by `control`; `request_timeout` bounds how long they wait.
    pub fn new(
        control: Option<Arc<dyn FlowControl>>,
        request_timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        FilterLayer(FlowControlFilter {
            control,
            request_timeout,
            metrics,
        })
    }
}

impl Filter for FlowControlFilter {
    fn filter<S: Next<B>, B: Send + 'static>(
        &self,
        inner: S,
        mut request: Request<B>,
    ) -> FilterFuture {
        let admitted = match self.admit(&request) {
            Ok(admitted) => admitted,
            Err(malformed) => return Box::pin(async move { Ok(*malformed) }),
        };
        let Some((class, admission)) = admitted else {
            return Box::pin(async move { Ok(call(inner, request).await) });
        };
        let metrics = self.metrics.clone();
        let control = self.control.clone();
        let mutating = request_info_of(&request).is_some_and(|info| is_mutating_verb(&info.verb));
        // A request that waits is counted refused if its client leaves first, from here on:
        // this future may be dropped before it first runs.
        let admission = match admission {
            Admission::Now(admitted) => Err(admitted),
            Admission::Later(future, withdrawn) => Ok(Waiting {
                future: Some(future),
                withdrawn,
                dropped: request_info_of(&request).map(|info| Dropped::of(&request, info)),
                metrics: metrics.clone(),
            }),
        };
        Box::pin(async move {
            let admitted = match admission {
                Err(admitted) => admitted,
                Ok(waiting) => {
                    let _waiting = metrics.waiting(mutating);
                    waiting.await
                }
            };
            let mut response = match admitted {
                Ok(seats) => {
                    // Executing until its seats are given back (a watch's once initialised).
                    let seats = (seats, metrics.executing(mutating));
                    let watch = request_info_of(&request).filter(|info| info.verb == "watch");
                    // Counted while it is served: its response lives as long as the watch.
                    let tracked = match (watch, &control) {
                        (Some(info), Some(control)) => {
                            control.track_watch(info, request.uri().query().unwrap_or(""))
                        }
                        _ => None,
                    };
                    if watch.is_some() {
                        let (initialized, done) = oneshot::channel();
                        let signal = WatchInitialized(Arc::new(Mutex::new(Some(initialized))));
                        request.extensions_mut().insert(signal);
                        tokio::spawn(async move {
                            let _ = done.await;
                            drop(seats);
                        });
                        call(inner, request)
                            .await
                            .map(|body| with_guard(body, tracked))
                    } else {
                        call(inner, request)
                            .await
                            .map(|body| with_guard(body, seats))
                    }
                }
                Err(retry_after) => refuse(&metrics, &request, retry_after),
            };
            let headers = response.headers_mut();
            put_first(headers, FLOW_SCHEMA_UID, class.flow_schema_uid);
            put_first(headers, PRIORITY_LEVEL_UID, class.priority_level_uid);
            Ok(response)
        })
    }
}

/// Puts `value` first among the response's `name` headers: upstream sets its own before the
/// handler runs, so an aggregated server's response that carries its own (an extension
/// server with flow control of its own) has both, this server's first.
fn put_first(headers: &mut http::HeaderMap, name: HeaderName, value: HeaderValue) {
    let theirs: Vec<HeaderValue> = headers.get_all(&name).iter().cloned().collect();
    headers.insert(name.clone(), value);
    for value in theirs {
        headers.append(name.clone(), value);
    }
}

/// A waiting request's admission. Dropped before it is decided (the client left), it counts
/// the request refused, as upstream counts a request whose context ended its wait, once flow
/// control says it withdrew the request from its queue: a request dispatched in the instant
/// its client left is not refused.
struct Waiting {
    /// Taken when dropped, so that its waiter is withdrawn before `withdrawn` is read.
    future: Option<WaitFuture>,
    withdrawn: Withdrawn,
    dropped: Option<Dropped>,
    metrics: Arc<Metrics>,
}

impl Future for Waiting {
    type Output = Result<Seats, RetryAfter>;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.future.as_mut() {
            Some(future) => future.as_mut().poll(cx),
            None => std::task::Poll::Pending,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        drop(self.future.take());
        if let Some(dropped) = self.dropped.take().filter(|_| self.withdrawn.is_set()) {
            let code = StatusCode::TOO_MANY_REQUESTS.as_u16();
            self.metrics.record_dropped(dropped, code);
        }
    }
}

impl FlowControlFilter {
    /// Classifies and admits `request`, or `None` when flow control does not apply to it; a
    /// malformed `timeout` is answered here with the deadline filter's 400, which upstream's
    /// chain gives before flow control sees the request.
    fn admit<B>(
        &self,
        request: &Request<B>,
    ) -> Result<Option<(FlowClass, Admission)>, Box<Response<Body>>> {
        let (Some(control), Some(info)) = (self.control.as_ref(), request_info_of(request)) else {
            return Ok(None);
        };
        let long_running = is_long_running(info);
        if long_running && info.verb != "watch" {
            return Ok(None);
        }
        let Some(user) = request.extensions().get::<UserInfo>() else {
            return Ok(None);
        };
        let query = request.uri().query().unwrap_or("");
        let timeout = match long_running {
            true => self.request_timeout,
            false => {
                request_timeout(query, self.request_timeout).map_err(|e| Box::new(api_error(&e)))?
            }
        };
        // The wait is counted from when the request was received, as upstream's.
        let waited = request
            .extensions()
            .get::<RequestReceived>()
            .map_or(Duration::ZERO, |received| received.0.elapsed());
        Ok(Some(control.admit(FlowRequest {
            user,
            info,
            query,
            wait_limit: (timeout / 4).min(MAX_WAIT).saturating_sub(waited),
        })))
    }
}

/// Upstream's 429, for a request flow control or the in-flight limit refused: plain text,
/// with the seconds to wait, counted in `apiserver_request_total` with code 429 (the only
/// sample such a request gets there, as upstream's `RecordDroppedRequest`) and in
/// `apiserver_request_terminations_total`.
pub(crate) fn refuse<B>(
    metrics: &Metrics,
    request: &Request<B>,
    retry_after: RetryAfter,
) -> Response<Body> {
    let code = StatusCode::TOO_MANY_REQUESTS;
    if let Some(info) = request_info_of(request) {
        metrics.record_dropped(Dropped::of(request, info), code.as_u16());
    }
    let mut response = text_error(code, "Too many requests, please try again later.");
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after.0));
    response
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::BodyExt as _;
    use kapi_apimachinery::request_info::RequestInfoFactory;

    use super::*;
    use crate::body::empty;

    fn class(schema: &'static str, level: &'static str) -> FlowClass {
        FlowClass {
            flow_schema_uid: HeaderValue::from_static(schema),
            priority_level_uid: HeaderValue::from_static(level),
        }
    }

    /// Sets its [`Withdrawn`] when dropped.
    struct WithdrawnOnDrop(Withdrawn);

    impl Drop for WithdrawnOnDrop {
        fn drop(&mut self) {
            self.0.set();
        }
    }

    /// A flow control that queues every request for good.
    struct QueuesForever;

    impl FlowControl for QueuesForever {
        fn admit(&self, _: FlowRequest<'_>) -> (FlowClass, Admission) {
            let class = class("schema", "level");
            // Withdrawn when its future is dropped, as a queue set's waiter is.
            let withdrawn = Withdrawn::default();
            let on_drop = WithdrawnOnDrop(withdrawn.clone());
            let waiting = async move {
                let _on_drop = on_drop;
                std::future::pending().await
            };
            (class, Admission::Later(Box::pin(waiting), withdrawn))
        }

        fn track_watch(&self, _: &RequestInfo, _: &str) -> Option<Box<dyn Send + Sync>> {
            None
        }
    }

    /// A flow control that admits every request at once.
    struct AdmitsAll;

    impl FlowControl for AdmitsAll {
        fn admit(&self, _: FlowRequest<'_>) -> (FlowClass, Admission) {
            let class = class("ours", "our-level");
            (class, Admission::Now(Ok(Box::new(()))))
        }

        fn track_watch(&self, _: &RequestInfo, _: &str) -> Option<Box<dyn Send + Sync>> {
            None
        }
    }

    /// A GET of default's ConfigMaps, resolved and authenticated.
    fn configmaps() -> Request<()> {
        let path = "/api/v1/namespaces/default/configmaps";
        let info = RequestInfoFactory::default()
            .resolve("GET", path, None)
            .unwrap();
        let mut request = Request::get(path).body(()).unwrap();
        request.extensions_mut().insert(info);
        request.extensions_mut().insert(UserInfo::default());
        request
    }

    #[tokio::test]
    async fn a_proxied_response_keeps_its_own_flow_headers_after_ours() {
        let filter = FlowControlFilter {
            control: Some(Arc::new(AdmitsAll)),
            request_timeout: Duration::from_secs(60),
            metrics: Arc::new(Metrics::new()),
        };
        let inner = tower::service_fn(|_: Request<()>| async {
            let mut response = Response::new(empty());
            let backend = HeaderValue::from_static("theirs");
            response.headers_mut().insert(FLOW_SCHEMA_UID, backend);
            Ok::<_, Infallible>(response)
        });
        let response = filter.filter(inner, configmaps()).await.unwrap();
        let values = |name| {
            let all = response.headers().get_all(name).iter();
            all.map(|v| v.to_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(values(FLOW_SCHEMA_UID), ["ours", "theirs"]);
        assert_eq!(values(PRIORITY_LEVEL_UID), ["our-level"]);
    }

    #[tokio::test]
    async fn a_malformed_timeout_is_answered_with_its_400_before_flow_control() {
        let filter = FlowControlFilter {
            control: Some(Arc::new(QueuesForever)),
            request_timeout: Duration::from_secs(60),
            metrics: Arc::new(Metrics::new()),
        };
        let inner = tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(empty()))
        });
        let mut request = configmaps();
        *request.uri_mut() = "/api/v1/namespaces/default/configmaps?timeout=abc"
            .parse()
            .unwrap();
        let answered = tokio::time::timeout(Duration::from_secs(5), filter.filter(inner, request))
            .await
            .expect("not queued")
            .unwrap();
        assert_eq!(answered.status(), StatusCode::BAD_REQUEST);
        assert!(answered.headers().get(FLOW_SCHEMA_UID).is_none());
    }

    /// A flow control that dispatches every request at once, but only after its wait.
    struct DispatchesAfterWaiting;

    impl FlowControl for DispatchesAfterWaiting {
        fn admit(&self, _: FlowRequest<'_>) -> (FlowClass, Admission) {
            let class = class("schema", "level");
            let seats: Seats = Box::new(());
            let dispatched = std::future::ready(Ok(seats));
            (
                class,
                Admission::Later(Box::pin(dispatched), Withdrawn::default()),
            )
        }

        fn track_watch(&self, _: &RequestInfo, _: &str) -> Option<Box<dyn Send + Sync>> {
            None
        }
    }

    /// The samples of refusals in `metrics`.
    async fn refusals(metrics: &Metrics) -> Vec<String> {
        let text = metrics.serve().into_body().collect().await.unwrap();
        let text = String::from_utf8(text.to_bytes().to_vec()).unwrap();
        text.lines()
            .filter(|l| l.contains(r#"code="429""#))
            .map(str::to_string)
            .collect()
    }

    #[tokio::test]
    async fn only_a_request_withdrawn_from_its_queue_is_counted_refused_when_its_client_leaves() {
        let inner = || {
            tower::service_fn(|_: Request<()>| async {
                Ok::<_, Infallible>(Response::new(empty()))
            })
        };
        let filter = |control: Arc<dyn FlowControl>, metrics: &Arc<Metrics>| FlowControlFilter {
            control: Some(control),
            request_timeout: Duration::from_secs(60),
            metrics: metrics.clone(),
        };
        // Dispatched, but its client left before the filter ran again: not refused.
        let metrics = Arc::new(Metrics::new());
        let dispatched = filter(Arc::new(DispatchesAfterWaiting), &metrics);
        drop(dispatched.filter(inner(), configmaps()));
        assert!(refusals(&metrics).await.is_empty());
        // Withdrawn from its queue before the filter ever ran: refused.
        let metrics = Arc::new(Metrics::new());
        let queued = filter(Arc::new(QueuesForever), &metrics);
        drop(queued.filter(inner(), configmaps()));
        assert_eq!(
            refusals(&metrics).await.len(),
            2,
            "a request and a termination"
        );
    }

    #[tokio::test]
    async fn a_request_whose_client_leaves_while_it_waits_is_counted_as_refused() {
        let metrics = Arc::new(Metrics::new());
        let filter = FlowControlFilter {
            control: Some(Arc::new(QueuesForever)),
            request_timeout: Duration::from_secs(60),
            metrics: metrics.clone(),
        };
        let inner = tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(empty()))
        });
        // The client leaves: the server drops the request's future while it waits.
        let waiting = filter.filter(inner, configmaps());
        let left = tokio::time::timeout(Duration::from_millis(20), waiting).await;
        assert!(left.is_err(), "the request still waited");
        let text = metrics.serve().into_body().collect().await.unwrap();
        let text = String::from_utf8(text.to_bytes().to_vec()).unwrap();
        let labels = r#"group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver",code="429"} 1"#;
        for counted in [
            format!(r#"apiserver_request_total{{verb="LIST",dry_run="",{labels}"#),
            format!(r#"apiserver_request_terminations_total{{verb="LIST",{labels}"#),
        ] {
            assert!(text.lines().any(|l| l == counted), "{counted}\n{text}");
        }
    }
}
