//! Which requests are long-running (upstream's `BasicLongRunningRequestCheck` with
//! kube-apiserver's lists): watches, proxies, and the streaming subresources. They are not
//! counted by the in-flight limit and have no request timeout.

use kapi_apimachinery::request_info::RequestInfo;

/// Verbs whose requests run until the client or the server ends them.
const LONG_RUNNING_VERBS: [&str; 2] = ["watch", "proxy"];
/// Subresources that stream for as long as the connection lives.
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// Whether the request is long-running.
pub fn is_long_running(info: &RequestInfo) -> bool {
    LONG_RUNNING_VERBS.contains(&info.verb.as_str())
        || (info.is_resource_request
            && LONG_RUNNING_SUBRESOURCES.contains(&info.subresource.as_str()))
}
