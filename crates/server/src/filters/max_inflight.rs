//! The in-flight limit (upstream's `WithMaxInFlightLimit`): at most `--max-requests-inflight`
//! read-only (`get`, `list`, `watch`) and `--max-mutating-requests-inflight` other requests at
//! once; long-running requests are not counted. Beyond the limit a request is answered 429
//! with `Retry-After: 1`, unless its user is in `system:masters`. A limit of 0 is no limit.
//! Health checks (`/healthz`, `/livez`, `/readyz` and their subpaths) are never counted nor
//! refused, as upstream's flow control exempts probes: a server busy serving is not unhealthy.
//!
//! A request holds its slot until its response body has been sent, as upstream holds it
//! until the handler has written everything; the slots in use are reported as upstream's
//! `apiserver_current_inflight_requests`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Request, Response};

use super::flow_control::{RetryAfter, refuse};
use super::long_running::is_long_running;
use super::{Filter, FilterFuture, FilterLayer, Next, call, request_info_of, request_uri};
use crate::authn::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::body::{Body, with_guard};
use crate::metrics::{Counted, Metrics};
use crate::responses::internal_error;
use kapi_apimachinery::request_info::{RequestInfo, is_mutating_verb};

/// A counting semaphore that never waits.
#[derive(Debug)]
struct Slots {
    limit: usize,
    used: AtomicUsize,
}

/// A taken slot, given back when dropped, and the request counted in flight meanwhile.
struct Slot {
    slots: Arc<Slots>,
    _counted: Counted,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.used.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Slots {
    /// Slots for `limit` requests; `None` for no limit.
    fn new(limit: usize) -> Option<Arc<Self>> {
        (limit > 0).then(|| {
            Arc::new(Slots {
                limit,
                used: AtomicUsize::new(0),
            })
        })
    }

    /// Takes a slot if one is free, counting it (as `mutating` or read-only) in `metrics`.
    fn try_take(self: &Arc<Self>, metrics: &Metrics, mutating: bool) -> Option<Slot> {
        let taken = self.used.fetch_add(1, Ordering::AcqRel);
        if taken >= self.limit {
            self.used.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot {
            slots: self.clone(),
            _counted: metrics.executing(mutating),
        })
    }
}

/// The layer that adds [`MaxInFlight`].
pub type MaxInFlightLayer = FilterLayer<MaxInFlight>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Debug)]
pub struct MaxInFlight {
    read_only: Option<Arc<Slots>>,
    mutating: Option<Arc<Slots>>,
    metrics: Arc<Metrics>,
}

impl MaxInFlightLayer {
    /// Limits read-only and mutating requests separately; 0 disables a limit.
    pub fn new(read_only: usize, mutating: usize, metrics: Arc<Metrics>) -> Self {
        FilterLayer(MaxInFlight {
            read_only: Slots::new(read_only),
            mutating: Slots::new(mutating),
            metrics,
        })
    }
}

/// What the limit decided for a request.
enum Admission {
    /// Not limited (long-running, no limit, or privileged).
    Free,
    /// Admitted in this slot.
    Slot(Slot),
    /// Refused with this response.
    Refused(Response<Body>),
}

impl Filter for MaxInFlight {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
        let admission = self.admit(&request);
        Box::pin(async move {
            match admission {
                Admission::Free => Ok(call(inner, request).await),
                Admission::Slot(slot) => Ok(call(inner, request)
                    .await
                    .map(|body| with_guard(body, slot))),
                Admission::Refused(response) => Ok(response),
            }
        })
    }
}

impl MaxInFlight {
    /// Decides whether `request` runs now.
    fn admit<B>(&self, request: &Request<B>) -> Admission {
        let Some(info) = request_info_of(request) else {
            let error = "no RequestInfo found in context, handler chain must be wrong";
            return Admission::Refused(internal_error(request_uri(request), error));
        };
        if is_long_running(info) || is_health_check(info) {
            return Admission::Free;
        }
        let mutating = is_mutating_verb(&info.verb);
        let slots = if mutating {
            &self.mutating
        } else {
            &self.read_only
        };
        let Some(slots) = slots else {
            return Admission::Free;
        };
        if let Some(slot) = slots.try_take(&self.metrics, mutating) {
            return Admission::Slot(slot);
        }
        let privileged = request
            .extensions()
            .get::<UserInfo>()
            .is_some_and(|u| u.in_group(SYSTEM_PRIVILEGED_GROUP));
        if privileged {
            return Admission::Free;
        }
        Admission::Refused(refuse(&self.metrics, request, RetryAfter(1)))
    }
}

/// Whether the request is a health check: `/healthz`, `/livez`, `/readyz` or a subpath.
fn is_health_check(info: &RequestInfo) -> bool {
    !info.is_resource_request
        && ["/healthz", "/livez", "/readyz"].iter().any(|check| {
            info.path
                .strip_prefix(check)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}
