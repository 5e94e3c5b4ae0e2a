//! Auditing, as k8s.io/apiserver's pkg/audit: every request the [`Policy`] selects yields
//! audit.k8s.io/v1 `Event`s at its stages (RequestReceived, ResponseStarted for long-running
//! requests, ResponseComplete, Panic), with the level's detail: metadata (user, verb,
//! object reference, response status, annotations), the request object (`Request`), the
//! response object (`RequestResponse`). Events go to every [`Backend`].
//!
//! The audit filter ([`crate::filters::audit`]) starts an [`AuditContext`] per request and
//! stores it in the request's extensions; the impersonation and authorization filters, the
//! handlers and admission plugins add to it through [`AuditAnnotations`].

pub mod backend;
mod metrics;
pub mod policy;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::authn::UserInfo;
pub use backend::{
    Backend, Batching, Format, LogBackend, LogConfig, Mode, Rotation, WebhookBackend,
};
pub use metrics::AuditMetrics;
pub use policy::{Level, Policy, RequestAttributes, RequestAuditConfig};

/// The server's audit policy and backends.
pub struct Auditor {
    policy: Policy,
    backends: Vec<Arc<dyn Backend>>,
    metrics: AuditMetrics,
}

impl Auditor {
    /// `metrics` are those the backends count their losses in.
    pub fn new(policy: Policy, backends: Vec<Arc<dyn Backend>>, metrics: AuditMetrics) -> Auditor {
        Auditor {
            policy,
            backends,
            metrics,
        }
    }

    pub(crate) fn metrics(&self) -> &AuditMetrics {
        &self.metrics
    }

    /// The request's audit context, or `None` when the policy leaves it unaudited.
    pub(crate) fn begin(
        self: &Arc<Self>,
        attributes: &RequestAttributes<'_>,
        metadata: EventMetadata,
    ) -> Option<Arc<AuditContext>> {
        let config = self.policy.evaluate(attributes);
        self.metrics.observe_level(config.level);
        if config.level == Level::None {
            return None;
        }
        Some(Arc::new(AuditContext {
            auditor: self.clone(),
            config,
            event: Mutex::new(EventState {
                metadata,
                impersonated_user: None,
                annotations: BTreeMap::new(),
                request_object: None,
                response_status: None,
                response_object: None,
            }),
        }))
    }
}

/// What every event of a request says about it, fixed when it is received.
pub(crate) struct EventMetadata {
    pub audit_id: String,
    pub request_uri: String,
    pub verb: String,
    /// The authenticated user (`{}` for a request that failed authentication).
    pub user: Value,
    pub source_ips: Vec<String>,
    pub user_agent: Option<String>,
    pub object_ref: Option<Map<String, Value>>,
    pub received: String,
}

struct EventState {
    metadata: EventMetadata,
    impersonated_user: Option<Value>,
    annotations: BTreeMap<String, String>,
    request_object: Option<Value>,
    response_status: Option<Value>,
    response_object: Option<Value>,
}

/// An event as it is written.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: &'static str,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: &'a str,
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: &'a str,
    user: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<&'a Value>,
    #[serde(rename = "sourceIPs")]
    source_ips: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    user_agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<&'a Value>,
    request_received_timestamp: &'a str,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

/// The audit state of one request.
pub struct AuditContext {
    auditor: Arc<Auditor>,
    config: RequestAuditConfig,
    event: Mutex<EventState>,
}

/// The metadata of a JSON request body, without decoding the rest: what a Metadata-level
/// event takes of the request object (its object reference).
pub(crate) fn metadata_only(body: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Body {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        name: Option<String>,
        namespace: Option<String>,
        uid: Option<String>,
        resource_version: Option<String>,
    }
    let body: Body = serde_json::from_slice(body).ok()?;
    let meta = body.metadata;
    Some(
        json!({"metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid,
        "resourceVersion": meta.resource_version}}),
    )
}

/// A user as events write it.
pub(crate) fn user_json(user: &UserInfo) -> Value {
    let mut value = json!({"username": user.name});
    if !user.uid.is_empty() {
        value["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        value["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        value["extra"] = json!(user.extra);
    }
    value
}

/// `object` without `metadata.managedFields`, also in a list's items.
fn without_managed_fields(mut object: Value) -> Value {
    // Read without inserting: an object without metadata must not get `"metadata": null`.
    let remove = |object: &mut Value| {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    };
    remove(&mut object);
    if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(remove);
    }
    object
}

impl AuditContext {
    pub fn level(&self) -> Level {
        self.config.level
    }

    /// Emits the event of `stage`, unless the policy omits it; false when a backend lost
    /// it and its mode (`blocking-strict`) says the request must fail.
    pub(crate) fn emit(&self, stage: &str) -> bool {
        let Some(event) = self.staged(stage) else {
            return true;
        };
        let mut stored = true;
        for backend in &self.auditor.backends {
            stored &= backend.process(&event);
        }
        stored
    }

    /// As [`AuditContext::emit`], waiting for the backends whose mode makes requests wait
    /// on a remote write (a `blocking` webhook).
    pub(crate) async fn emit_waiting(&self, stage: &str) -> bool {
        let Some(event) = self.staged(stage) else {
            return true;
        };
        let mut stored = true;
        for backend in &self.auditor.backends {
            stored &= match backend.process_waiting(&event) {
                Some(waiting) => waiting.await,
                None => backend.process(&event),
            };
        }
        stored
    }

    /// The event of `stage`, counted, unless the policy omits the stage.
    fn staged(&self, stage: &str) -> Option<Vec<u8>> {
        if self.config.omit_stages.contains(stage) {
            return None;
        }
        self.auditor.metrics.observe_event();
        Some(self.event(stage))
    }

    /// Counts the request as refused for its lost event
    /// (`apiserver_audit_requests_rejected_total`).
    pub(crate) fn count_rejected(&self) {
        self.auditor.metrics.observe_rejected();
    }

    /// The event of `stage`, serialized (audit.k8s.io/v1 `Event`, fields in upstream's
    /// order).
    fn event(&self, stage: &str) -> Vec<u8> {
        let state = self.event.lock();
        let meta = &state.metadata;
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: self.config.level.as_str(),
            audit_id: &meta.audit_id,
            stage,
            request_uri: &meta.request_uri,
            verb: &meta.verb,
            user: &meta.user,
            impersonated_user: state.impersonated_user.as_ref(),
            source_ips: &meta.source_ips,
            user_agent: meta.user_agent.as_deref(),
            object_ref: meta.object_ref.as_ref(),
            response_status: state.response_status.as_ref(),
            request_object: state.request_object.as_ref(),
            response_object: state.response_object.as_ref(),
            request_received_timestamp: &meta.received,
            stage_timestamp: kapi_apimachinery::meta::now_rfc3339_micro(),
            annotations: &state.annotations,
        };
        serde_json::to_vec(&event).unwrap_or_default()
    }

    /// Records the user the request acts as.
    pub(crate) fn set_impersonated_user(&self, user: &UserInfo) {
        self.event.lock().impersonated_user = Some(user_json(user));
    }

    /// Records the response's status: its code, or the whole `Status` of an error.
    pub(crate) fn set_response_status(&self, status: Value) {
        self.event.lock().response_status = Some(status);
    }

    /// Records the response object (at `RequestResponse`).
    pub(crate) fn set_response_object(&self, object: Value) {
        let object = if self.config.omit_managed_fields {
            without_managed_fields(object)
        } else {
            object
        };
        self.event.lock().response_object = Some(object);
    }

    pub(crate) fn annotate(&self, key: &str, value: &str) {
        let mut state = self.event.lock();
        if let Some(existing) = state.annotations.get(key)
            && existing != value
        {
            tracing::warn!(key, existing, value, "Audit annotation not overwritten");
            return;
        }
        state.annotations.insert(key.into(), value.into());
    }

    /// Records the request's object: its name, namespace, uid and resourceVersion fill in
    /// the object reference; at `Request` and above, the object (or patch) itself.
    fn log_request_object(&self, object: Value) {
        let mut state = self.event.lock();
        if let Some(object_ref) = state.metadata.object_ref.as_mut() {
            let meta = &object["metadata"];
            for (field, from) in [
                ("namespace", "namespace"),
                ("name", "name"),
                ("uid", "uid"),
                ("resourceVersion", "resourceVersion"),
            ] {
                let empty = object_ref
                    .get(field)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                if empty && let Some(value) = meta[from].as_str().filter(|v| !v.is_empty()) {
                    object_ref.insert(field.into(), json!(value));
                }
            }
        }
        if self.config.level >= Level::Request {
            state.request_object = Some(if self.config.omit_managed_fields {
                without_managed_fields(object)
            } else {
                object
            });
        }
    }
}

/// Where admission plugins and handlers add to a request's audit event; does nothing when
/// the request is not audited. Cheap to clone.
#[derive(Clone, Default)]
pub struct AuditAnnotations(Option<Arc<AuditContext>>);

impl AuditAnnotations {
    /// The audit annotations of the request whose extensions are `extensions`.
    pub fn of(extensions: &http::Extensions) -> AuditAnnotations {
        AuditAnnotations(extensions.get::<Arc<AuditContext>>().cloned())
    }

    /// The request's audit level (`None` when not audited).
    pub fn level(&self) -> Level {
        self.0.as_ref().map_or(Level::None, |c| c.level())
    }

    /// Adds an annotation; a key is set once (a later, different value is dropped with a
    /// warning, as upstream).
    pub fn add(&self, key: &str, value: &str) {
        if let Some(context) = &self.0 {
            context.annotate(key, value);
        }
    }

    /// Records the request's object (or patch, or options).
    pub fn log_request_object(&self, object: Value) {
        if let Some(context) = &self.0 {
            context.log_request_object(object);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Mutex<Vec<Value>>);

    impl Backend for Collect {
        fn process(&self, event: &[u8]) -> bool {
            self.0.lock().push(serde_json::from_slice(event).unwrap());
            true
        }
    }

    #[test]
    fn events_carry_what_the_level_allows() {
        let policy = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Request\n  omitManagedFields: true\n",
        )
        .unwrap();
        let collect = Arc::new(Collect(Mutex::new(Vec::new())));
        let auditor = Arc::new(Auditor::new(
            policy,
            vec![collect.clone()],
            AuditMetrics::default(),
        ));
        let user = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        let attributes = RequestAttributes {
            user: Some(&user),
            verb: "create",
            resource_request: true,
            api_group: "",
            resource: "configmaps",
            subresource: "",
            namespace: "ns",
            name: "",
            path: "/api/v1/namespaces/ns/configmaps",
        };
        let mut object_ref = Map::new();
        object_ref.insert("resource".into(), json!("configmaps"));
        object_ref.insert("namespace".into(), json!("ns"));
        let context = auditor
            .begin(
                &attributes,
                EventMetadata {
                    audit_id: "id".into(),
                    request_uri: "/api/v1/namespaces/ns/configmaps".into(),
                    verb: "create".into(),
                    user: user_json(&user),
                    source_ips: vec!["127.0.0.1".into()],
                    user_agent: None,
                    object_ref: Some(object_ref),
                    received: kapi_apimachinery::meta::now_rfc3339_micro(),
                },
            )
            .unwrap();
        let annotations = AuditAnnotations(Some(context.clone()));
        annotations.log_request_object(
            json!({"metadata": {"name": "c", "managedFields": [{}]}, "data": {"a": "b"}}),
        );
        annotations.add("example.com/x", "1");
        annotations.add("example.com/x", "2");
        context.set_response_status(json!({"metadata": {}, "code": 201}));
        context.emit("RequestReceived");
        context.emit("ResponseComplete");
        let events = collect.0.lock();
        assert_eq!(events.len(), 1);
        let event = &events[0];
        assert_eq!(event["stage"], "ResponseComplete");
        assert_eq!(event["level"], "Request");
        assert_eq!(event["objectRef"]["name"], "c");
        assert_eq!(
            event["requestObject"],
            json!({"metadata": {"name": "c"}, "data": {"a": "b"}})
        );
        assert!(event.get("responseObject").is_none());
        assert_eq!(event["annotations"], json!({"example.com/x": "1"}));
        assert_eq!(event["responseStatus"]["code"], 201);
    }
}
