//! Deleting one namespace's content, as upstream's `namespacedResourcesDeleter`: mark it
//! `Terminating`, delete every deletable namespaced resource in it (the whole collection
//! where the resource allows, else each object), count what is left and on which
//! finalizers, report that in the namespace's conditions, and once nothing is left remove
//! the `kubernetes` finalizer through the `finalize` subresource.

use std::collections::BTreeMap;

use http::Method;
use kapi_apimachinery::gotime::{self, Timestamp};
use kapi_apimachinery::status::ApiError;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};

use super::conditions::Findings;
use crate::discovery::{Resource, discover};

/// The finalizer this controller owns.
pub(super) const FINALIZER: &str = "kubernetes";
/// The wait assumed for objects held by finalizers (upstream's `finalizerEstimateSeconds`).
const FINALIZER_ESTIMATE_SECONDS: u64 = 15;
/// What lists ask for: metadata only, or whole objects from servers that cannot.
const METADATA: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// How a pass over a namespace ended, when it did not fail.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Finished, or nothing to do.
    Done,
    /// Content remains; look again in about this many seconds.
    Remaining(u64),
}

/// Deletes namespaces' content through the API as the namespace controller's user.
pub(super) struct Deleter {
    pub(super) client: LoopbackClient,
}

impl Deleter {
    /// One pass over the namespace `name` (upstream's `Delete`).
    pub(super) async fn delete(&self, name: &str) -> Result<Outcome, String> {
        let path = format!("/api/v1/namespaces/{name}");
        let namespace = match self.client.json(Method::GET, &path, None, None).await {
            Ok(namespace) => namespace,
            Err(err) if err.is_not_found() => return Ok(Outcome::Done),
            Err(err) => return Err(err.to_string()),
        };
        if namespace["metadata"]["deletionTimestamp"].is_null() {
            return Ok(Outcome::Done);
        }
        let namespace = match self
            .retry_on_conflict(namespace, Step::MarkTerminating)
            .await
        {
            Ok(namespace) => namespace,
            Err(err) if err.is_not_found() => return Ok(Outcome::Done),
            Err(err) => return Err(err.to_string()),
        };
        if namespace["metadata"]["deletionTimestamp"].is_null() || finalized(&namespace) {
            return Ok(Outcome::Done);
        }
        let estimate = self.delete_all_content(namespace.clone()).await?;
        if estimate > 0 {
            return Ok(Outcome::Remaining(estimate));
        }
        match self.retry_on_conflict(namespace, Step::Finalize).await {
            Ok(_) => Ok(Outcome::Done),
            Err(err) if err.is_not_found() => Ok(Outcome::Done),
            Err(err) => Err(err.to_string()),
        }
    }

    /// Runs `step` on `namespace`, again on its latest state after each conflict, as long
    /// as it is the same namespace (its uid).
    async fn retry_on_conflict(&self, mut namespace: Value, step: Step) -> Result<Value, ApiError> {
        loop {
            let result = match step {
                Step::MarkTerminating => self.mark_terminating(&namespace).await,
                Step::Finalize => self.finalize(&namespace).await,
            };
            match result {
                Err(err) if err.is_conflict() => {}
                result => return result,
            }
            let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
            let path = format!("/api/v1/namespaces/{name}");
            let latest = self.client.json(Method::GET, &path, None, None).await?;
            if latest["metadata"]["uid"] != namespace["metadata"]["uid"] {
                return Err(ApiError::internal(
                    "namespace uid has changed across retries",
                ));
            }
            namespace = latest;
        }
    }

    /// Sets the phase `Terminating` unless it is set.
    async fn mark_terminating(&self, namespace: &Value) -> Result<Value, ApiError> {
        if namespace["status"]["phase"] == "Terminating" {
            return Ok(namespace.clone());
        }
        let mut updated = namespace.clone();
        updated["status"]["phase"] = "Terminating".into();
        self.write_status(&updated).await
    }

    /// Removes [`FINALIZER`] from the namespace's finalizers (the rest, sorted).
    async fn finalize(&self, namespace: &Value) -> Result<Value, ApiError> {
        let mut rest: Vec<&str> = namespace["spec"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|f| *f != FINALIZER)
            .collect();
        rest.sort_unstable();
        rest.dedup();
        let mut finalized = namespace.clone();
        finalized["spec"]["finalizers"] = json!(rest);
        let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
        let path = format!("/api/v1/namespaces/{name}/finalize");
        self.client
            .json(Method::PUT, &path, None, Some(&finalized))
            .await
    }

    /// Writes the namespace's status.
    async fn write_status(&self, namespace: &Value) -> Result<Value, ApiError> {
        let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
        let path = format!("/api/v1/namespaces/{name}/status");
        self.client
            .json(Method::PUT, &path, None, Some(namespace))
            .await
    }

    /// Deletes everything in the namespace and reports it in its conditions: the seconds
    /// to wait for what remains (0 when nothing does), or the errors.
    async fn delete_all_content(&self, mut namespace: Value) -> Result<u64, String> {
        let name = namespace["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let deleted_at = namespace["metadata"]["deletionTimestamp"]
            .as_str()
            .and_then(gotime::parse_rfc3339)
            .unwrap_or_else(Timestamp::now);
        let mut findings = Findings::default();
        let mut errors = Vec::new();
        let resources = match discover(&self.client).await {
            Ok(discovered) => {
                if let Some(failure) = discovered.failure {
                    errors.push(failure.clone());
                    findings.discovery_failure = Some(failure);
                }
                let deletable = |r: &Resource| r.namespaced && r.has("delete");
                discovered.preferred.into_iter().filter(deletable).collect()
            }
            Err(err) => {
                errors.push(err.to_string());
                findings.discovery_failure = Some(err.to_string());
                Vec::new()
            }
        };
        let mut estimate = 0;
        for resource in &resources {
            let left = self.delete_resource(resource, &name, deleted_at).await;
            if let Some(err) = left.error {
                errors.push(err.clone());
                findings.content_errors.push(err);
            }
            estimate = estimate.max(left.estimate);
            if left.remaining > 0 {
                let key = format!("{}.{}", resource.resource, resource.group);
                *findings.remaining.entry(key).or_default() += left.remaining;
                for (finalizer, n) in left.finalizers {
                    *findings.finalizers.entry(finalizer).or_default() += n;
                }
            }
        }
        if findings.update(&mut namespace)
            && let Err(err) = self.write_status(&namespace).await
        {
            tracing::warn!(
                namespace = name,
                "couldn't update status condition for namespace: {err}"
            );
        }
        match errors.len() {
            0 => Ok(estimate),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Deletes one resource's objects in `namespace` and looks at what is left
    /// (upstream's `deleteAllContentForGroupVersionResource`).
    async fn delete_resource(
        &self,
        resource: &Resource,
        namespace: &str,
        deleted_at: Timestamp,
    ) -> Left {
        let estimate = match self.grace_estimate(resource, namespace, deleted_at).await {
            Ok(estimate) => estimate,
            Err(err) => return Left::failed(0, err),
        };
        let collection = resource.collection(Some(namespace));
        match self.delete_collection(resource, &collection).await {
            Ok(true) => {}
            Ok(false) => {
                if let Err(err) = self.delete_each(resource, &collection).await {
                    return Left::failed(estimate, err.to_string());
                }
            }
            Err(err) => return Left::failed(estimate, err.to_string()),
        }
        if !resource.has("list") {
            return Left::waiting(estimate);
        }
        let items = match self.list_metadata(&collection).await {
            Ok(items) => items,
            Err(err) => return Left::failed(estimate, err.to_string()),
        };
        if items.is_empty() {
            return Left::waiting(0);
        }
        let mut finalizers = BTreeMap::new();
        for item in &items {
            for finalizer in item["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(finalizer) = finalizer.as_str() {
                    *finalizers.entry(finalizer.to_string()).or_default() += 1;
                }
            }
        }
        let mut left = Left {
            estimate,
            remaining: items.len(),
            finalizers,
            error: None,
        };
        if estimate == 0 {
            if left.finalizers.is_empty() {
                left.error = Some(format!(
                    "unexpected items still remain in namespace: {namespace} for gvr: {}",
                    resource.gvr()
                ));
            } else {
                left.estimate = FINALIZER_ESTIMATE_SECONDS;
            }
        }
        left
    }

    /// Deletes the whole collection in the background: whether the resource allowed it.
    async fn delete_collection(
        &self,
        resource: &Resource,
        collection: &str,
    ) -> Result<bool, ApiError> {
        if !resource.has("deletecollection") {
            return Ok(false);
        }
        match self
            .client
            .json(Method::DELETE, collection, None, Some(&background()))
            .await
        {
            Ok(_) => Ok(true),
            Err(err) if unsupported(&err) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Deletes each object of the collection in the background.
    async fn delete_each(&self, resource: &Resource, collection: &str) -> Result<(), ApiError> {
        if !resource.has("list") {
            return Ok(());
        }
        for item in self.list_metadata(collection).await? {
            let Some(name) = item["metadata"]["name"].as_str() else {
                continue;
            };
            let path = format!("{collection}/{name}");
            match self
                .client
                .json(Method::DELETE, &path, None, Some(&background()))
                .await
            {
                Err(err) if !unsupported(&err) => return Err(err),
                _ => {}
            }
        }
        Ok(())
    }

    /// The objects of a collection, metadata only where the server can; none when it
    /// cannot be listed.
    async fn list_metadata(&self, collection: &str) -> Result<Vec<Value>, ApiError> {
        match self
            .client
            .json(Method::GET, collection, Some(METADATA), None)
            .await
        {
            Ok(mut list) => Ok(match list["items"].take() {
                Value::Array(items) => items,
                _ => Vec::new(),
            }),
            Err(err) if unsupported(&err) => Ok(Vec::new()),
            Err(err) => Err(err),
        }
    }

    /// The seconds the namespace's pods may still take to terminate gracefully: the longest
    /// grace period of its running pods, or 0 once that long has passed since the namespace
    /// was deleted. Other resources terminate at once.
    async fn grace_estimate(
        &self,
        resource: &Resource,
        namespace: &str,
        deleted_at: Timestamp,
    ) -> Result<u64, String> {
        if !(resource.group.is_empty() && resource.resource == "pods") {
            return Ok(0);
        }
        let path = format!("/api/v1/namespaces/{namespace}/pods");
        let pods = self
            .client
            .json(Method::GET, &path, None, None)
            .await
            .map_err(|err| err.to_string())?;
        let estimate = pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|pod| {
                !matches!(
                    pod["status"]["phase"].as_str(),
                    Some("Succeeded" | "Failed")
                )
            })
            .filter_map(|pod| pod["spec"]["terminationGracePeriodSeconds"].as_u64())
            .max()
            .unwrap_or(0);
        let elapsed = Timestamp::now().nanos_since(deleted_at) / 1_000_000_000;
        Ok(if elapsed >= i128::from(estimate) {
            0
        } else {
            estimate
        })
    }
}

/// What a pass left of one resource.
struct Left {
    /// Seconds to wait before looking again.
    estimate: u64,
    /// Objects left.
    remaining: usize,
    /// Objects left, by finalizer.
    finalizers: BTreeMap<String, usize>,
    /// Why deleting them failed.
    error: Option<String>,
}

impl Left {
    /// Nothing known to remain; wait `estimate` seconds.
    fn waiting(estimate: u64) -> Left {
        Left {
            estimate,
            remaining: 0,
            finalizers: BTreeMap::new(),
            error: None,
        }
    }

    /// The resource failed with `error`.
    fn failed(estimate: u64, error: String) -> Left {
        Left {
            error: Some(error),
            ..Left::waiting(estimate)
        }
    }
}

/// A write to retry on conflict.
#[derive(Clone, Copy)]
enum Step {
    MarkTerminating,
    Finalize,
}

/// Whether the namespace has no finalizers left.
fn finalized(namespace: &Value) -> bool {
    namespace["spec"]["finalizers"]
        .as_array()
        .is_none_or(Vec::is_empty)
}

/// Whether an error says the operation is not served for the resource (405, or a 404 from
/// a resource that lists verbs it does not serve).
fn unsupported(err: &ApiError) -> bool {
    err.code() == 405 || err.is_not_found()
}

/// The DeleteOptions of every deletion: background propagation, so that the garbage
/// collector does not orphan dependents (the namespace goes as a whole).
fn background() -> Value {
    json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
}
