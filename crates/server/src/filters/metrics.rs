//! Request metrics: counts each finished request and observes its duration, from when it was
//! received until its response body has been sent (upstream's instrumentation of routes).
//! Responses marked [`Unrouted`] are not counted.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{Request, Response};
use tower::{Layer, Service};

use super::request_log::RequestReceived;
use super::{FilterFuture, call, request_info_of, take_ready};
use crate::body::{Body, with_guard};
use crate::metrics::{Metrics, RequestLabels};
use crate::responses::Unrouted;

/// Adds [`RecordMetrics`].
#[derive(Clone, Debug)]
pub struct MetricsLayer {
    metrics: Arc<Metrics>,
}

impl MetricsLayer {
    /// Records into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        MetricsLayer { metrics }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = RecordMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RecordMetrics {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct RecordMetrics<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B> Service<Request<B>> for RecordMetrics<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = FilterFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> FilterFuture {
        let inner = take_ready(&mut self.inner);
        let query = request.uri().query().unwrap_or("");
        let labels = request_info_of(&request)
            .and_then(|info| RequestLabels::of(request.method(), query, request.headers(), info));
        let received = request
            .extensions()
            .get::<RequestReceived>()
            .map_or_else(Instant::now, |r| r.0);
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let response = call(inner, request).await;
            let Some(labels) = labels.filter(|_| response.extensions().get::<Unrouted>().is_none())
            else {
                return Ok(response);
            };
            let code = response.status().as_u16();
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
