//! Events the controllers record, as client-go's event recorder writes them (core/v1
//! Events named `<object>.<nanoseconds in hex>`, in the object's namespace or `default`).

use http::Method;
use kapi_apimachinery::gotime::{Timestamp, format_rfc3339};
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};

/// Records a Warning about `involved` (an ObjectReference) from `component`; a failure is
/// logged, as the recorder's are.
pub(crate) async fn record_warning(
    client: &LoopbackClient,
    involved: Value,
    reason: &str,
    message: &str,
    component: &str,
) {
    let now = Timestamp::now();
    let nanos = i128::from(now.seconds) * 1_000_000_000 + i128::from(now.nanos);
    let name = involved["name"].as_str().unwrap_or_default();
    let namespace = match involved["namespace"].as_str() {
        Some(namespace) if !namespace.is_empty() => namespace.to_string(),
        _ => "default".to_string(),
    };
    let time = format_rfc3339(now.seconds);
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{nanos:x}"), "namespace": namespace},
        "involvedObject": involved,
        "reason": reason, "message": message, "type": "Warning",
        "source": {"component": component},
        "firstTimestamp": time, "lastTimestamp": time, "count": 1,
        "reportingComponent": component, "reportingInstance": "",
    });
    let path = format!("/api/v1/namespaces/{namespace}/events");
    if let Err(err) = client.json(Method::POST, &path, None, Some(&event)).await {
        tracing::warn!(reason, "recording an event: {err}");
    }
}
