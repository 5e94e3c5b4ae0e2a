//! The conversion webhook: a ConversionReview (apiextensions.k8s.io/v1) sent to the CRD's
//! `clientConfig` through kapi-server's webhook client, with upstream's 30 s timeout and its
//! checks of the response and their messages.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kapi_apimachinery::status::ApiError;
pub use kapi_server::webhook_client::ServiceResolver;
use kapi_server::webhook_client::WebhookClient;
use serde_json::{Value, json};

/// How long a conversion webhook may take, as upstream's.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One CRD's conversion webhook.
pub(super) struct Webhook {
    client: WebhookClient,
    kind: String,
}

impl Webhook {
    /// The webhook of `config` (a CRD's `spec.conversion.webhook`) for objects of `kind`.
    pub(super) fn new(config: &Value, kind: &str, resolver: Arc<dyn ServiceResolver>) -> Webhook {
        Webhook {
            client: WebhookClient::new(&config["clientConfig"], resolver),
            kind: kind.to_string(),
        }
    }

    /// `object` in `desired` (an apiVersion), through the webhook unless it is there already.
    pub(super) fn convert_one(&self, object: Value, desired: &str) -> Result<Value, ApiError> {
        if object["apiVersion"].as_str() == Some(desired) {
            return Ok(object);
        }
        let from = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let gvk = format!("{from}, Kind={}", self.kind);
        let original = object.clone();
        let reviewed = block_on(self.review(vec![object], desired));
        let converted = reviewed.and_then(|result| result).map_err(|err| {
            ApiError::internal(format!("conversion webhook for {gvk} failed: {err}"))
        })?;
        let converted = check_converted(converted, &original, desired, &self.kind)
            .map_err(|err| ApiError::internal(format!("conversion webhook for {gvk} {err}")))?;
        Ok(converted)
    }

    /// Sends one ConversionReview; the converted objects of a successful response.
    async fn review(&self, objects: Vec<Value>, desired: &str) -> Result<Vec<Value>, String> {
        let uid = kapi_apimachinery::meta::new_uid();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let body = self
            .client
            .post(serde_json::to_vec(&review).unwrap_or_default(), TIMEOUT)
            .await?;
        let response: Value = serde_json::from_slice(&body)
            .map_err(|err| format!("unable to decode the response: {err}"))?;
        read_response(&response, &uid)
    }
}

/// The converted objects of a ConversionReview response, as upstream's checks accept them.
fn read_response(review: &Value, uid: &str) -> Result<Vec<Value>, String> {
    let kind = (review["apiVersion"].as_str(), review["kind"].as_str());
    if kind != (Some("apiextensions.k8s.io/v1"), Some("ConversionReview")) {
        return Err(format!(
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}, Kind={}",
            kind.0.unwrap_or_default(),
            kind.1.unwrap_or_default()
        ));
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let result = &response["result"];
    if result["status"] != "Success" {
        if let Some(message) = result["message"].as_str().filter(|m| !m.is_empty()) {
            return Err(message.to_string());
        }
        let status = result["status"].as_str().unwrap_or_default();
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The one converted object, checked against the original: the desired apiVersion, the same
/// kind, the same name, namespace and uid; only labels and annotations may change in metadata.
fn check_converted(
    converted: Vec<Value>,
    original: &Value,
    desired: &str,
    kind: &str,
) -> Result<Value, String> {
    let [mut object] = <[Value; 1]>::try_from(converted)
        .map_err(|objects| format!("returned {} objects, expected 1", objects.len()))?;
    let invalid = |detail: String| format!("returned invalid object at index 0: {detail}");
    let got = object["apiVersion"].as_str().unwrap_or_default();
    if got != desired {
        return Err(invalid(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        )));
    }
    let got = object["kind"].as_str().unwrap_or_default();
    if got != kind {
        return Err(invalid(format!(
            "invalid kind (expected {kind}, received {got})"
        )));
    }
    let (before, after) = (&original["metadata"], &object["metadata"]);
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        if before[field] != after[field] && !(after[field].is_null() && before[field] == "") {
            let (e, a) = (
                before[field].as_str().unwrap_or_default(),
                after[field].as_str().unwrap_or_default(),
            );
            return Err(format!(
                "returned invalid metadata: must have the same {what}: {e} != {a}"
            ));
        }
    }
    let mut metadata = before.clone();
    for field in ["labels", "annotations"] {
        match after.get(field) {
            Some(value) if !value.is_null() => metadata[field] = value.clone(),
            _ => drop(metadata.as_object_mut().map(|m| m.remove(field))),
        }
    }
    object["metadata"] = metadata;
    Ok(object)
}

/// Runs `future` to completion from synchronous code inside or outside a runtime: converters
/// are synchronous (called in storage update closures and renderers), webhooks are not.
fn block_on<F>(future: F) -> Result<F::Output, String>
where
    F: Future + Send,
    F::Output: Send,
{
    use tokio::runtime::{Builder, Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            Ok(tokio::task::block_in_place(|| handle.block_on(future)))
        }
        _ => std::thread::scope(|scope| {
            let call = scope.spawn(|| {
                let runtime = Builder::new_current_thread().enable_all().build();
                runtime
                    .map(|rt| rt.block_on(future))
                    .map_err(|err| err.to_string())
            });
            call.join()
                .map_err(|_| "the conversion call panicked".to_string())?
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_checked_as_upstream_checks_them() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"},
                "convertedObjects": [{"a": 1}]}});
        assert_eq!(read_response(&ok, "u").unwrap(), [json!({"a": 1})]);
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "Status"}),
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
                "no response provided",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": "x", "result": {"status": "Success"}}}),
                "expected response.uid=\"u\", got \"x\"",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": "u", "result": {"status": "Failure", "message": "nope"}}}),
                "nope",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": "u", "result": {"status": "Failure"}}}),
                "response.result.status was 'Failure', not 'Success'",
            ),
        ];
        for (response, want) in cases {
            assert_eq!(read_response(&response, "u").unwrap_err(), want);
        }
    }

    #[test]
    fn converted_objects_keep_their_identity() {
        let original = json!({"apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"x": "1"}}});
        let converted = json!({"apiVersion": "g/v2", "kind": "K",
            "metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}}, "spec": {}});
        let object = check_converted(vec![converted.clone()], &original, "g/v2", "K").unwrap();
        assert_eq!(
            object["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"y": "2"}})
        );
        let err = check_converted(vec![], &original, "g/v2", "K").unwrap_err();
        assert_eq!(err, "returned 0 objects, expected 1");
        let err = check_converted(vec![converted.clone()], &original, "g/v3", "K").unwrap_err();
        assert_eq!(
            err,
            "returned invalid object at index 0: invalid groupVersion (expected g/v3, received g/v2)"
        );
        let mut renamed = converted;
        renamed["metadata"]["name"] = json!("b");
        let err = check_converted(vec![renamed], &original, "g/v2", "K").unwrap_err();
        assert_eq!(
            err,
            "returned invalid metadata: must have the same name: a != b"
        );
    }
}
