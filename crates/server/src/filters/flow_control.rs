//! API Priority and Fairness's place in the chain (upstream's `WithPriorityAndFairness`,
//! where max-in-flight sits): a [`FlowControl`] classifies each request by its user and
//! [`RequestInfo`], and the response carries the UIDs of the FlowSchema and priority level
//! it matched (`X-Kubernetes-PF-FlowSchema-UID`, `X-Kubernetes-PF-PriorityLevel-UID`).
//! Long-running requests other than watches (proxy, exec, attach, logs, port-forward) are
//! not classified, as upstream's. Queuing by priority level is not built yet: the
//! max-in-flight limits still bound what runs.

use std::sync::Arc;

use http::{HeaderName, HeaderValue, Request};
use kapi_apimachinery::request_info::RequestInfo;

use super::long_running::is_long_running;
use super::{Filter, FilterFuture, FilterLayer, Next, call, request_info_of};
use crate::authn::UserInfo;

/// The header naming the UID of the FlowSchema a request matched.
pub const FLOW_SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
/// The header naming the UID of the priority level a request was given.
pub const PRIORITY_LEVEL_UID: HeaderName =
    HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

/// What classifies requests (kapi-flowcontrol's FlowSchemas).
pub trait FlowControl: Send + Sync + 'static {
    /// The UIDs of the FlowSchema and the priority level of `user`'s request `info` (empty
    /// for the bootstrap objects standing in for missing mandatory ones).
    fn classify(&self, user: &UserInfo, info: &RequestInfo) -> FlowClass;
}

/// The UIDs a response carries, ready as header values (a classification copies no text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowClass {
    pub flow_schema_uid: HeaderValue,
    pub priority_level_uid: HeaderValue,
}

/// The layer that adds [`FlowControlFilter`].
pub type FlowControlLayer = FilterLayer<FlowControlFilter>;

/// The filter; without a [`FlowControl`], requests pass unclassified.
#[derive(Clone)]
pub struct FlowControlFilter {
    control: Option<Arc<dyn FlowControl>>,
}

impl FlowControlLayer {
    pub fn new(control: Option<Arc<dyn FlowControl>>) -> Self {
        FilterLayer(FlowControlFilter { control })
    }
}

impl Filter for FlowControlFilter {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
        let class = self.classify(&request);
        Box::pin(async move {
            let mut response = call(inner, request).await;
            if let Some(class) = class {
                let headers = response.headers_mut();
                headers.insert(FLOW_SCHEMA_UID, class.flow_schema_uid);
                headers.insert(PRIORITY_LEVEL_UID, class.priority_level_uid);
            }
            Ok(response)
        })
    }
}

impl FlowControlFilter {
    fn classify<B>(&self, request: &Request<B>) -> Option<FlowClass> {
        let control = self.control.as_ref()?;
        let info = request_info_of(request)?;
        if is_long_running(info) && info.verb != "watch" {
            return None;
        }
        let user = request.extensions().get::<UserInfo>()?;
        Some(control.classify(user, info))
    }
}
