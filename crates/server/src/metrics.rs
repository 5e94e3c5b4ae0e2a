//! The server's Prometheus metrics and `/metrics`.
//!
//! The request metrics are upstream's stable ones, with its names, labels and buckets:
//! `apiserver_request_total` and `apiserver_request_duration_seconds`. They count the requests
//! upstream counts: resource requests that reached a route (component `apiserver`), the
//! health endpoints' roots (subresource = the path, other labels empty), and the requests the
//! in-flight limit rejected. `/metrics` answers in the OpenMetrics text format, which
//! Prometheus reads. The in-flight and in-queue watermarks (`watermark.rs`) are upstream's
//! too.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, Request, Response};
use kapi_apimachinery::request_info::RequestInfo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::body::{Body, full};
use crate::query;

mod watermark;
pub(crate) use watermark::{Counted, Watermarks};

/// Upstream's buckets for `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];
/// The health endpoints upstream instruments (their roots only).
const HEALTH_PATHS: [&str; 3] = ["/healthz", "/livez", "/readyz"];
/// The subresources upstream reports as `CONNECT`.
const CONNECT_SUBRESOURCES: [&str; 5] = ["proxy", "attach", "exec", "portforward", "log"];
/// The verbs upstream reports; anything else is `other`.
const REPORTED_VERBS: [&str; 12] = [
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
];

/// The labels of one request, as upstream names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    verb: &'static str,
    dry_run: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
}

/// [`RequestLabels`] plus the response code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    verb: &'static str,
    dry_run: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
    code: u16,
}

/// The labels of a request the server refused or cut short in self-defense (upstream's
/// `RecordRequestTermination`): a non-resource request's path is its subresource.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TerminationLabels {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
    code: u16,
}

/// Marks a response the server gave in self-defense (a request it cut short), for the
/// metrics filter to count in `apiserver_request_terminations_total`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terminated;

/// What a request's termination is counted under, taken before the request is served:
/// a resource request's labels, or a non-resource request's verb and path.
#[derive(Debug)]
pub(crate) enum TerminationKey {
    Resource,
    NonResource { verb: &'static str, path: String },
}

/// The most paths and resources refused and cut-short requests are counted under. A
/// refused request is counted before it is routed, under the path or resource it names,
/// which its client chooses freely: past this many, new ones are counted together under
/// [`OVERFLOW`] rather than each kept for ever.
const MAX_REFUSAL_LABEL_SETS: usize = 1024;
/// The subresource (or path) refusals past [`MAX_REFUSAL_LABEL_SETS`] are counted under.
const OVERFLOW: &str = "<other>";

/// A histogram with upstream's request-duration buckets.
fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The metrics registry of a server. Other parts of kapi register their own metrics with
/// [`Metrics::registry_mut`] before the server starts.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    terminations: Family<TerminationLabels, Counter>,
    /// The hashes of the label sets refusals and terminations were counted under.
    refusal_labels: parking_lot::Mutex<(RandomState, HashSet<u64>)>,
    durations: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// Requests executing under a limit (the in-flight limit's slots, or API Priority and
    /// Fairness's seats), and requests waiting in flow control's queues.
    executing: Watermarks,
    waiting: Watermarks,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry holding the request metrics.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<CodeLabels, Counter>::default();
        let durations = Family::new_with_constructor(duration_histogram as fn() -> Histogram);
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code",
            requests.clone(),
        );
        let terminations = Family::<TerminationLabels, Counter>::default();
        registry.register(
            "apiserver_request_terminations",
            "Number of requests which apiserver terminated in self-defense.",
            terminations.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component",
            durations.clone(),
        );
        let (executing, waiting) = (Watermarks::default(), Watermarks::default());
        registry.register(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            executing.clone(),
        );
        registry.register(
            "apiserver_current_inqueue_requests",
            "Maximal number of queued requests in this apiserver per request kind in last second.",
            waiting.clone(),
        );
        registry.register(
            "kapi_watch_cache_protobuf_bytes",
            "Bytes of protobuf encodings the watch caches of the process keep for LISTs (see --watch-cache-protobuf-mb)",
            crate::cacher::KeptBytesGauge,
        );
        Metrics {
            registry,
            requests,
            terminations,
            refusal_labels: Default::default(),
            durations,
            executing,
            waiting,
        }
    }

    /// The registry, to add metrics to before the server starts.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Counts one finished request and observes its duration.
    pub(crate) fn record(&self, labels: RequestLabels, code: u16, elapsed: Duration) {
        self.durations
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.requests.get_or_create(&labels.with_code(code)).inc();
    }

    /// Counts a request (`mutating`, or read-only) executing under a limit until the result
    /// drops.
    pub(crate) fn executing(&self, mutating: bool) -> Counted {
        self.executing.count(mutating)
    }

    /// Counts a request waiting in a flow-control queue until the result drops.
    pub(crate) fn waiting(&self, mutating: bool) -> Counted {
        self.waiting.count(mutating)
    }

    /// Counts one request refused before it ran with `code` (a 429): in
    /// `apiserver_request_total` (upstream's `RecordDroppedRequest`) and as a termination.
    pub(crate) fn record_dropped(&self, dropped: Dropped, code: u16) {
        let Dropped {
            mut labels,
            mut key,
        } = dropped;
        if !self.admits(Some(&labels), &key) {
            labels.group.clear();
            labels.version.clear();
            labels.resource.clear();
            labels.subresource = OVERFLOW.to_string();
            key = TerminationKey::overflow(labels.verb);
        }
        self.count_termination(Some(&labels), &key, code);
        self.requests.get_or_create(&labels.with_code(code)).inc();
    }

    /// Counts a request the server cut short with `code`: a resource request under its
    /// `labels`, a non-resource one under its `key`'s verb and path.
    pub(crate) fn record_termination(
        &self,
        labels: Option<&RequestLabels>,
        key: &TerminationKey,
        code: u16,
    ) {
        if self.admits(labels, key) {
            self.count_termination(labels, key, code);
        } else if let Some(verb) = key.verb().or(labels.map(|l| l.verb)) {
            self.count_termination(labels, &TerminationKey::overflow(verb), code);
        }
    }

    /// Whether the request `labels` and `key` describe is counted under its own labels:
    /// seen before, or fewer than [`MAX_REFUSAL_LABEL_SETS`] seen; past them, under
    /// [`OVERFLOW`].
    fn admits(&self, labels: Option<&RequestLabels>, key: &TerminationKey) -> bool {
        let mut seen = self.refusal_labels.lock();
        let hash = match (key, labels) {
            (TerminationKey::NonResource { path, .. }, _) => seen.0.hash_one(path),
            (TerminationKey::Resource, Some(l)) => {
                seen.0
                    .hash_one((&l.group, &l.version, &l.resource, &l.subresource))
            }
            (TerminationKey::Resource, None) => return true,
        };
        seen.1.contains(&hash) || (seen.1.len() < MAX_REFUSAL_LABEL_SETS && seen.1.insert(hash))
    }

    fn count_termination(&self, labels: Option<&RequestLabels>, key: &TerminationKey, code: u16) {
        let labels = match (key, labels) {
            (TerminationKey::NonResource { verb, path }, _) => TerminationLabels {
                verb,
                group: String::new(),
                version: String::new(),
                resource: String::new(),
                subresource: path.clone(),
                scope: "",
                component: "apiserver",
                code,
            },
            (TerminationKey::Resource, Some(labels)) => TerminationLabels {
                verb: labels.verb,
                group: labels.group.clone(),
                version: labels.version.clone(),
                resource: labels.resource.clone(),
                subresource: labels.subresource.clone(),
                scope: labels.scope,
                component: "apiserver",
                code,
            },
            (TerminationKey::Resource, None) => return,
        };
        self.terminations.get_or_create(&labels).inc();
    }

    /// `/metrics`: every registered metric in the OpenMetrics text format.
    pub(crate) fn serve(&self) -> Response<Body> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        let mut response = Response::new(full(text));
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        );
        response
    }
}

impl RequestLabels {
    /// The labels upstream would record for this request, or `None` when upstream does not
    /// instrument it (non-resource requests other than the health endpoints' roots).
    pub(crate) fn of(
        method: &Method,
        query: &str,
        headers: &HeaderMap,
        info: &RequestInfo,
    ) -> Option<RequestLabels> {
        let instrumented_path =
            !info.is_resource_request && HEALTH_PATHS.contains(&info.path.as_str());
        if !info.is_resource_request && !instrumented_path {
            return None;
        }
        let scope = scope(info);
        let verb = reported_verb(method, scope, query, headers, info);
        if info.is_resource_request {
            return Some(RequestLabels::resource(verb, query, scope, info));
        }
        Some(RequestLabels {
            verb,
            dry_run: dry_run(query),
            group: String::new(),
            version: String::new(),
            resource: String::new(),
            subresource: info.path.clone(),
            scope,
            component: "",
        })
    }

    /// A resource request's labels.
    fn resource(verb: &'static str, query: &str, scope: &'static str, info: &RequestInfo) -> Self {
        RequestLabels {
            verb,
            dry_run: dry_run(query),
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            scope,
            component: "apiserver",
        }
    }

    /// These labels plus a response code.
    fn with_code(self, code: u16) -> CodeLabels {
        CodeLabels {
            verb: self.verb,
            dry_run: self.dry_run,
            group: self.group,
            version: self.version,
            resource: self.resource,
            subresource: self.subresource,
            scope: self.scope,
            component: self.component,
            code,
        }
    }
}

/// Upstream's `CleanScope`: `resource` for named objects and creates, `namespace`,
/// `cluster`, or empty for non-resource requests.
fn scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else if info.is_resource_request {
        "cluster"
    } else {
        ""
    }
}

/// Upstream's reported verb: the HTTP method, GET of collections as LIST, `watch=true` as
/// WATCH, apply patches as APPLY, connect subresources as CONNECT, unknown methods as `other`.
fn reported_verb(
    method: &Method,
    scope: &str,
    query: &str,
    headers: &HeaderMap,
    info: &RequestInfo,
) -> &'static str {
    if info.is_resource_request && CONNECT_SUBRESOURCES.contains(&info.subresource.as_str()) {
        return "CONNECT";
    }
    let is_get = method == Method::GET || method == Method::HEAD;
    if is_get && is_watch(query) {
        return "WATCH";
    }
    if is_get {
        return if scope != "resource" && !scope.is_empty() {
            "LIST"
        } else {
            "GET"
        };
    }
    if method == Method::PATCH
        && headers
            .get(CONTENT_TYPE)
            .is_some_and(|v| v == "application/apply-patch+yaml")
    {
        return "APPLY";
    }
    REPORTED_VERBS
        .iter()
        .find(|v| **v == method.as_str())
        .copied()
        .unwrap_or("other")
}

/// Whether the query asks for a watch (`watch` present and not `0` or `false`).
fn is_watch(query: &str) -> bool {
    query::option_flag(query::first(query, "watch").as_deref())
}

/// What a refused request is counted under, taken while the request is at hand: a
/// non-resource request without its group, version, resource and path, as upstream's
/// `RecordDroppedRequest` counts it, and its termination's key.
#[derive(Debug)]
pub(crate) struct Dropped {
    labels: RequestLabels,
    key: TerminationKey,
}

impl Dropped {
    pub(crate) fn of<B>(request: &Request<B>, info: &RequestInfo) -> Dropped {
        let query = request.uri().query().unwrap_or("");
        let scope = scope(info);
        let verb = reported_verb(request.method(), scope, query, request.headers(), info);
        let labels = match info.is_resource_request {
            true => RequestLabels::resource(verb, query, scope, info),
            false => RequestLabels {
                verb,
                dry_run: dry_run(query),
                group: String::new(),
                version: String::new(),
                resource: String::new(),
                subresource: String::new(),
                scope,
                component: "apiserver",
            },
        };
        Dropped {
            labels,
            key: TerminationKey::of(request, info),
        }
    }
}

impl TerminationKey {
    /// The key of requests counted past [`MAX_REFUSAL_LABEL_SETS`].
    fn overflow(verb: &'static str) -> TerminationKey {
        TerminationKey::NonResource {
            verb,
            path: OVERFLOW.to_string(),
        }
    }

    /// A non-resource request's verb.
    fn verb(&self) -> Option<&'static str> {
        match self {
            TerminationKey::NonResource { verb, .. } => Some(verb),
            TerminationKey::Resource => None,
        }
    }

    /// The key of `request`: a non-resource request's verb and path are kept (its labels
    /// in `apiserver_request_total`, if any, leave them out).
    pub(crate) fn of<B>(request: &Request<B>, info: &RequestInfo) -> TerminationKey {
        if info.is_resource_request {
            return TerminationKey::Resource;
        }
        let query = request.uri().query().unwrap_or("");
        let verb = reported_verb(request.method(), "", query, request.headers(), info);
        TerminationKey::NonResource {
            verb,
            path: info.path.clone(),
        }
    }
}

/// Upstream's `cleanDryRun`: empty without `dryRun`, `All` when every value is `All`,
/// `invalid` otherwise.
fn dry_run(query: &str) -> &'static str {
    if !query.contains("dryRun") {
        return "";
    }
    let mut values = query::pairs(query)
        .filter(|(k, _)| k == "dryRun")
        .map(|(_, v)| v)
        .peekable();
    if values.peek().is_none() {
        return "";
    }
    if values.all(|v| v == "All") {
        "All"
    } else {
        "invalid"
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt as _;

    use super::*;

    #[tokio::test]
    async fn refusals_under_paths_a_client_chooses_are_counted_under_a_bounded_set_of_labels() {
        let metrics = Metrics::new();
        let refuse = |path: &str| {
            let key = TerminationKey::NonResource {
                verb: "GET",
                path: path.to_string(),
            };
            metrics.record_termination(None, &key, 429);
        };
        for i in 0..MAX_REFUSAL_LABEL_SETS + 500 {
            refuse(&format!("/random-{i}"));
        }
        refuse("/random-0");
        let text = metrics.serve().into_body().collect().await.unwrap();
        let text = String::from_utf8(text.to_bytes().to_vec()).unwrap();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("apiserver_request_terminations_total{"))
            .collect();
        // Each path seen first has its own series; the rest are counted together.
        assert_eq!(series.len(), MAX_REFUSAL_LABEL_SETS + 1);
        let count = |subresource: &str| {
            let labels = format!(r#"subresource="{subresource}""#);
            let line = series.iter().find(|l| l.contains(&labels));
            line.and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        };
        assert_eq!(count("/random-0"), Some(2));
        assert_eq!(count(OVERFLOW), Some(500));
    }
}
