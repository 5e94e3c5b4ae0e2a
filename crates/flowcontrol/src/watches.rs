//! The watches the server serves, counted for the cost of the mutations they will see
//! (upstream's `watch_tracker.go`): by group, resource, namespace and name, as a watch's
//! request names them (selectors are left out: every watch of the resource still looks at
//! each event). Pods are indexed by `spec.nodeName`, so a watch pinned to one node (a
//! kubelet's) is left out, as upstream leaves it out of its approximation.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_apimachinery::fields::Selector;
use kapi_apimachinery::request_info::RequestInfo;
use parking_lot::Mutex;

/// Which watches a watch is counted with.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
struct WatchKey {
    group: String,
    resource: String,
    namespace: String,
    name: String,
}

/// The count of open watches by what they watch.
#[derive(Default)]
pub(crate) struct WatchTracker {
    counts: Mutex<HashMap<WatchKey, usize>>,
}

/// An open watch's place in the count; dropping it (the watch ended) takes it out.
pub(crate) struct TrackedWatch {
    tracker: Arc<WatchTracker>,
    key: WatchKey,
}

impl Drop for TrackedWatch {
    fn drop(&mut self) {
        let mut counts = self.tracker.counts.lock();
        if let Some(count) = counts.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

impl WatchTracker {
    /// Counts the watch `info` (with `query`) until the returned guard drops; `None` for a
    /// request that is no watch, or a watch its resource's index keeps from most events.
    pub(crate) fn register(
        self: &Arc<Self>,
        info: &RequestInfo,
        query: &str,
    ) -> Option<TrackedWatch> {
        if info.verb != "watch" || (info.resource == "pods" && pinned_to_a_node(query)) {
            return None;
        }
        let key = WatchKey {
            group: info.api_group.clone(),
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
        };
        *self.counts.lock().entry(key.clone()).or_default() += 1;
        Some(TrackedWatch {
            tracker: self.clone(),
            key,
        })
    }

    /// The watches a mutation `info` may reach: those of the whole resource, of its
    /// namespace and of its object.
    pub(crate) fn interested(&self, info: &RequestInfo) -> usize {
        if matches!(info.verb.as_str(), "get" | "list" | "watch" | "proxy") {
            return 0;
        }
        let mut key = WatchKey {
            group: info.api_group.clone(),
            resource: info.resource.clone(),
            ..WatchKey::default()
        };
        let counts = self.counts.lock();
        let mut count = counts.get(&key).copied().unwrap_or(0);
        if !info.namespace.is_empty() {
            key.namespace = info.namespace.clone();
            count += counts.get(&key).copied().unwrap_or(0);
        }
        if !info.name.is_empty() {
            key.name = info.name.clone();
            count += counts.get(&key).copied().unwrap_or(0);
        }
        count
    }
}

/// Whether a pod watch's field selector pins `spec.nodeName` to a node.
fn pinned_to_a_node(query: &str) -> bool {
    let selector = kapi_server::query::first(query, "fieldSelector").unwrap_or_default();
    let selector = Selector::parse(&selector).unwrap_or_else(|_| Selector::everything());
    selector
        .requires_exact_match("spec.nodeName")
        .is_some_and(|node| !node.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: &str, namespace: &str, name: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            resource: "pods".into(),
            namespace: namespace.into(),
            name: name.into(),
            ..RequestInfo::default()
        }
    }

    #[test]
    fn mutations_count_the_watches_that_see_them() {
        let tracker = Arc::new(WatchTracker::default());
        let all = tracker.register(&request("watch", "", ""), "");
        let in_a = tracker.register(&request("watch", "a", ""), "");
        let one = tracker.register(
            &request("watch", "a", "p"),
            "fieldSelector=spec.nodeName%3D",
        );
        let kubelet = tracker.register(
            &request("watch", "", ""),
            "fieldSelector=spec.nodeName%3Dn1",
        );
        assert!(kubelet.is_none());
        assert!(tracker.register(&request("get", "a", "p"), "").is_none());
        assert_eq!(tracker.interested(&request("update", "a", "p")), 3);
        assert_eq!(tracker.interested(&request("create", "a", "")), 2);
        assert_eq!(tracker.interested(&request("delete", "b", "q")), 1);
        assert_eq!(tracker.interested(&request("get", "a", "p")), 0);
        drop((all, in_a));
        assert_eq!(tracker.interested(&request("update", "a", "p")), 1);
        drop(one);
        assert_eq!(tracker.interested(&request("update", "a", "p")), 0);
        assert!(tracker.counts.lock().is_empty());
    }
}
