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
    /// The ConversionReview apiVersion spoken: the first of the CRD's
    /// `conversionReviewVersions` kapi knows (none: every conversion fails, as upstream's).
    review_version: Option<&'static str>,
}

impl Webhook {
    /// The webhook of `config` (a CRD's `spec.conversion.webhook`) for objects of `kind`.
    pub(super) fn new(config: &Value, kind: &str, resolver: Arc<dyn ServiceResolver>) -> Webhook {
        let known = config["conversionReviewVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|v| match v.as_str() {
                Some("v1") => Some("apiextensions.k8s.io/v1"),
                Some("v1beta1") => Some("apiextensions.k8s.io/v1beta1"),
                _ => None,
            });
        Webhook {
            client: WebhookClient::new(&config["clientConfig"], resolver),
            kind: kind.to_string(),
            review_version: known,
        }
    }

    /// `object` in `desired` (an apiVersion), through the webhook unless it is there already.
    pub(super) fn convert_one(&self, object: Value, desired: &str) -> Result<Value, ApiError> {
        if object["apiVersion"].as_str() == Some(desired) {
            return Ok(object);
        }
        let gvk = format!("{}, Kind={}", api_version(&object), self.kind);
        let fail =
            |detail: String| ApiError::internal(format!("conversion webhook for {gvk} {detail}"));
        let original = object.clone();
        let converted = self.call(vec![object], desired).map_err(fail)?;
        let [converted] = <[Value; 1]>::try_from(converted)
            .map_err(|objects| fail(format!("returned {} objects, expected 1", objects.len())))?;
        check_converted(converted, &original, desired, &self.kind).map_err(|err| {
            fail(match err {
                Invalid::Object(detail) => format!("returned invalid object at index 0: {detail}"),
                Invalid::Metadata(detail) => format!("returned invalid metadata: {detail}"),
            })
        })
    }

    /// The objects of a list in `desired`, those not there already converted by one review,
    /// as upstream converts a list.
    pub(super) fn convert_list(
        &self,
        mut objects: Vec<Value>,
        desired: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i]["apiVersion"].as_str() != Some(desired))
            .collect();
        let Some(&first) = pending.first() else {
            return Ok(objects);
        };
        let gvk = format!("{}, Kind={}List", api_version(&objects[first]), self.kind);
        let fail =
            |detail: String| ApiError::internal(format!("conversion webhook for {gvk} {detail}"));
        let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
        let converted = self.call(sent, desired).map_err(fail)?;
        if converted.len() != pending.len() {
            let (got, expected) = (converted.len(), pending.len());
            return Err(fail(format!("returned {got} objects, expected {expected}")));
        }
        for (index, (converted, &at)) in converted.into_iter().zip(&pending).enumerate() {
            let checked = check_converted(converted, &objects[at], desired, &self.kind);
            objects[at] = checked.map_err(|err| {
                fail(match err {
                    Invalid::Object(detail) => {
                        format!("returned invalid converted object at index {index}: {detail}")
                    }
                    Invalid::Metadata(detail) => {
                        format!("returned invalid metadata in object at index {index}: {detail}")
                    }
                })
            })?;
        }
        Ok(objects)
    }

    /// Sends `objects` in one review and waits for the converted ones.
    fn call(&self, objects: Vec<Value>, desired: &str) -> Result<Vec<Value>, String> {
        block_on(self.review(objects, desired))
            .and_then(|result| result)
            .map_err(|err| format!("failed: {err}"))
    }

    /// Sends one ConversionReview; the converted objects of a successful response.
    async fn review(&self, objects: Vec<Value>, desired: &str) -> Result<Vec<Value>, String> {
        let version = self
            .review_version
            .ok_or("no supported conversion review versions")?;
        let uid = kapi_apimachinery::meta::new_uid();
        let review = json!({
            "apiVersion": version,
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let body = self
            .client
            .post(serde_json::to_vec(&review).unwrap_or_default(), TIMEOUT)
            .await?;
        let response: Value = serde_json::from_slice(&body)
            .map_err(|err| format!("unable to decode the response: {err}"))?;
        read_response(&response, &uid, version)
    }
}

/// The converted objects of a ConversionReview response (of `version`, the request's), as
/// upstream's checks accept them.
fn read_response(review: &Value, uid: &str, version: &str) -> Result<Vec<Value>, String> {
    let kind = (review["apiVersion"].as_str(), review["kind"].as_str());
    if kind != (Some(version), Some("ConversionReview")) {
        return Err(format!(
            "expected webhook response of {version}, Kind=ConversionReview, got {}, Kind={}",
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

/// What is wrong with a converted object.
enum Invalid {
    /// Its apiVersion or kind.
    Object(String),
    /// Its metadata (name, namespace and uid must stay).
    Metadata(String),
}

/// The apiVersion of an object ("" without one).
fn api_version(object: &Value) -> &str {
    object["apiVersion"].as_str().unwrap_or_default()
}

/// A converted object, checked against the original: the desired apiVersion, the same
/// kind, the same name, namespace and uid; only labels and annotations may change in metadata.
fn check_converted(
    mut object: Value,
    original: &Value,
    desired: &str,
    kind: &str,
) -> Result<Value, Invalid> {
    let got = api_version(&object);
    if got != desired {
        return Err(Invalid::Object(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        )));
    }
    let got = object["kind"].as_str().unwrap_or_default();
    if got != kind {
        return Err(Invalid::Object(format!(
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
            return Err(Invalid::Metadata(format!(
                "must have the same {what}: {e} != {a}"
            )));
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
        let v1 = "apiextensions.k8s.io/v1";
        assert_eq!(read_response(&ok, "u", v1).unwrap(), [json!({"a": 1})]);
        let mut beta = ok.clone();
        beta["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        let beta_version = "apiextensions.k8s.io/v1beta1";
        assert_eq!(
            read_response(&beta, "u", beta_version).unwrap(),
            [json!({"a": 1})]
        );
        assert_eq!(
            read_response(&ok, "u", beta_version).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1beta1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=ConversionReview"
        );
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
            assert_eq!(read_response(&response, "u", v1).unwrap_err(), want);
        }
    }

    #[test]
    fn the_review_version_is_the_first_the_crd_lists_that_kapi_speaks() {
        let resolver: Arc<dyn ServiceResolver> = Arc::new(super::super::tests::NoServices);
        let version = |versions: Value| {
            let config = json!({"clientConfig": {"url": "https://h/"}, "conversionReviewVersions": versions});
            Webhook::new(&config, "K", resolver.clone()).review_version
        };
        assert_eq!(
            version(json!(["v2", "v1beta1", "v1"])),
            Some("apiextensions.k8s.io/v1beta1")
        );
        assert_eq!(version(json!(["v1"])), Some("apiextensions.k8s.io/v1"));
        assert_eq!(version(json!(["v9"])), None);
    }

    #[test]
    fn converted_objects_keep_their_identity() {
        let original = json!({"apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"x": "1"}}});
        let converted = json!({"apiVersion": "g/v2", "kind": "K",
            "metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}}, "spec": {}});
        let Ok(object) = check_converted(converted.clone(), &original, "g/v2", "K") else {
            panic!("a valid conversion");
        };
        assert_eq!(
            object["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"y": "2"}})
        );
        let Err(Invalid::Object(err)) = check_converted(converted.clone(), &original, "g/v3", "K")
        else {
            panic!("a wrong version");
        };
        assert_eq!(err, "invalid groupVersion (expected g/v3, received g/v2)");
        let mut renamed = converted;
        renamed["metadata"]["name"] = json!("b");
        let Err(Invalid::Metadata(err)) = check_converted(renamed, &original, "g/v2", "K") else {
            panic!("a renamed object");
        };
        assert_eq!(err, "must have the same name: a != b");
    }
}
