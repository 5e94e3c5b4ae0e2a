//! Request metrics: counts each finished request and observes its duration, from when it was
//! received until its response body has been sent (upstream's instrumentation of routes),
//! and each response marked [`Terminated`] as a termination. Responses marked [`Unrouted`]
//! are not counted as requests.

use std::sync::Arc;
use std::time::Instant;

use http::Request;

use super::request_log::RequestReceived;
use super::{Filter, FilterFuture, FilterLayer, Next, call, request_info_of};
use crate::body::with_guard;
use crate::metrics::{Metrics, RequestLabels, Terminated, TerminationKey};
use crate::responses::Unrouted;

/// The layer that adds [`RecordMetrics`].
pub type MetricsLayer = FilterLayer<RecordMetrics>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Debug)]
pub struct RecordMetrics {
    metrics: Arc<Metrics>,
}

impl MetricsLayer {
    /// Records into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        FilterLayer(RecordMetrics { metrics })
    }
}

impl Filter for RecordMetrics {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
        let query = request.uri().query().unwrap_or("");
        let info = request_info_of(&request);
        let labels = info
            .and_then(|info| RequestLabels::of(request.method(), query, request.headers(), info));
        let termination = info.map(|info| TerminationKey::of(&request, info));
        let received = request
            .extensions()
            .get::<RequestReceived>()
            .map_or_else(Instant::now, |r| r.0);
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let response = call(inner, request).await;
            let code = response.status().as_u16();
            if let Some(key) =
                termination.filter(|_| response.extensions().get::<Terminated>().is_some())
            {
                metrics.record_termination(labels.as_ref(), &key, code);
            }
            let Some(labels) = labels.filter(|_| response.extensions().get::<Unrouted>().is_none())
            else {
                return Ok(response);
            };
            let record = Record {
                metrics,
                labels: Some(labels),
                code,
                received,
            };
            Ok(response.map(|body| with_guard(body, record)))
        })
    }
}

/// Records a request when dropped, i.e. when its response body is done.
struct Record {
    metrics: Arc<Metrics>,
    /// Taken by `drop`.
    labels: Option<RequestLabels>,
    code: u16,
    received: Instant,
}

impl Drop for Record {
    fn drop(&mut self) {
        if let Some(labels) = self.labels.take() {
            self.metrics
                .record(labels, self.code, self.received.elapsed());
        }
    }
}
