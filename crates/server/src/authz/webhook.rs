//! The Webhook authorization mode (k8s.io/apiserver's plugin/pkg/authorizer/webhook): each
//! decision is asked of a remote service as a SubjectAccessReview (authorization.k8s.io/v1)
//! POSTed to the server of `--authorization-webhook-config-file` (a kubeconfig), and cached:
//! allowed answers for `--authorization-webhook-cache-authorized-ttl` (5m), others for
//! `--authorization-webhook-cache-unauthorized-ttl` (30s).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::{Attributes, AuthorizationError, Authorizer, Decision, RulesInfo};
use crate::UserInfo;
use crate::webhook_client::WebhookClient;

/// How long a review may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Cached answers kept at most (oldest dropped first).
const CACHE_ENTRIES: usize = 10_000;

/// Why the webhook's kubeconfig cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("authorization webhook config {0:?}: {1}")]
pub struct WebhookConfigError(String, String);

/// What a webhook that cannot be asked (or whose match conditions fail) decides, as the
/// structured authorization configuration's `failurePolicy` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The request is decided by the next authorizer.
    NoOpinion,
    /// The request is denied.
    Deny,
}

/// The Webhook authorizer.
pub struct WebhookAuthorizer {
    client: WebhookClient,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    timeout: Duration,
    /// `None` (the `--authorization-mode` webhook): a failed call fails the request.
    failure_policy: Option<FailurePolicy>,
    /// CEL expressions over `request` (the SubjectAccessReview spec) that must all hold for
    /// the webhook to be asked; otherwise it has no opinion.
    match_conditions: Vec<cel::Program>,
    cache: Mutex<HashMap<String, (Instant, Decision)>>,
}

impl WebhookAuthorizer {
    /// The authorizer of the kubeconfig at `path` (see [`WebhookClient::from_kubeconfig`]).
    pub fn from_kubeconfig(
        path: &Path,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
    ) -> Result<WebhookAuthorizer, WebhookConfigError> {
        let client = WebhookClient::from_kubeconfig(path)
            .map_err(|message| WebhookConfigError(path.display().to_string(), message))?;
        Ok(WebhookAuthorizer::new(
            client,
            authorized_ttl,
            unauthorized_ttl,
        ))
    }

    /// Delegated authorization, as an extension API server authorizes requests (upstream's
    /// DelegatingAuthorizerConfig): SubjectAccessReviews created on the API server of the
    /// kubeconfig at `path`, answers cached for `authorized_ttl` / `unauthorized_ttl`.
    pub fn delegated(
        path: &Path,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
    ) -> Result<WebhookAuthorizer, WebhookConfigError> {
        let client = WebhookClient::from_kubeconfig(path)
            .map_err(|message| WebhookConfigError(path.display().to_string(), message))?
            .with_path("/apis/authorization.k8s.io/v1/subjectaccessreviews");
        Ok(WebhookAuthorizer::new(
            client,
            authorized_ttl,
            unauthorized_ttl,
        ))
    }

    fn new(
        client: WebhookClient,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
    ) -> WebhookAuthorizer {
        WebhookAuthorizer {
            client,
            authorized_ttl,
            unauthorized_ttl,
            timeout: TIMEOUT,
            failure_policy: None,
            match_conditions: Vec::new(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The structured configuration's settings: the call's timeout, what a failure decides,
    /// and the match conditions (CEL sources; one that does not compile is an error).
    pub fn with_policy(
        mut self,
        timeout: Duration,
        failure_policy: FailurePolicy,
        match_conditions: &[String],
    ) -> Result<WebhookAuthorizer, String> {
        self.timeout = timeout;
        self.failure_policy = Some(failure_policy);
        self.match_conditions = match_conditions
            .iter()
            .map(|source| {
                cel::Program::compile(source)
                    .map_err(|err| format!("matchConditions {source:?}: {err}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Whether every match condition holds for the review `spec`.
    fn matches(&self, spec: &Value) -> Result<bool, String> {
        if self.match_conditions.is_empty() {
            return Ok(true);
        }
        let mut context = cel::Context::default();
        context
            .add_variable("request", spec.clone())
            .map_err(|err| err.to_string())?;
        for condition in &self.match_conditions {
            match condition.execute(&context) {
                Ok(cel::Value::Bool(true)) => {}
                Ok(cel::Value::Bool(false)) => return Ok(false),
                Ok(other) => return Err(format!("match condition gave {other:?}, not a bool")),
                Err(err) => return Err(err.to_string()),
            }
        }
        Ok(true)
    }

    /// The decision when the webhook cannot decide: its failure policy, or an error.
    fn failed(&self, reason: String) -> Result<Decision, AuthorizationError> {
        match self.failure_policy {
            None => Err(AuthorizationError(reason)),
            Some(FailurePolicy::NoOpinion) => Ok(Decision::NoOpinion(reason)),
            Some(FailurePolicy::Deny) => Ok(Decision::Deny(reason)),
        }
    }

    /// The cached decision for `spec`, if still fresh.
    fn cached(&self, key: &str) -> Option<Decision> {
        let cache = self.cache.lock();
        let (expires, decision) = cache.get(key)?;
        (*expires > Instant::now()).then(|| decision.clone())
    }

    fn remember(&self, key: String, decision: &Decision) {
        let ttl = if matches!(decision, Decision::Allow(_)) {
            self.authorized_ttl
        } else {
            self.unauthorized_ttl
        };
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_ENTRIES {
            let now = Instant::now();
            cache.retain(|_, (expires, _)| *expires > now);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now() + ttl, decision.clone()));
    }
}

/// The SubjectAccessReview spec of a request.
fn spec(attributes: &Attributes<'_>) -> Value {
    let user = attributes.user;
    let mut spec = json!({"user": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        spec["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        spec["extra"] = json!(user.extra);
    }
    if attributes.resource_request {
        spec["resourceAttributes"] = json!({
            "namespace": attributes.namespace,
            "verb": attributes.verb,
            "group": attributes.api_group,
            "version": attributes.api_version,
            "resource": attributes.resource,
            "subresource": attributes.subresource,
            "name": attributes.name,
        });
    } else {
        spec["nonResourceAttributes"] = json!({"path": attributes.path, "verb": attributes.verb});
    }
    spec
}

/// The decision of a SubjectAccessReview's status.
fn decision(status: &Value) -> Decision {
    let reason = status["reason"].as_str().unwrap_or_default().to_string();
    if status["allowed"] == true {
        Decision::Allow(reason)
    } else if status["denied"] == true {
        Decision::Deny(reason)
    } else {
        Decision::NoOpinion(reason)
    }
}

#[async_trait]
impl Authorizer for WebhookAuthorizer {
    async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesInfo {
        RulesInfo::unknown("webhook")
    }

    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        let spec = spec(attributes);
        match self.matches(&spec) {
            Ok(true) => {}
            Ok(false) => return Ok(Decision::NoOpinion(String::new())),
            Err(err) => return self.failed(format!("evaluating match conditions: {err}")),
        }
        let key = spec.to_string();
        if let Some(decision) = self.cached(&key) {
            return Ok(decision);
        }
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec});
        let posted = self
            .client
            .post(
                serde_json::to_vec(&review).unwrap_or_default(),
                self.timeout,
            )
            .await;
        let body = match posted {
            Ok(body) => body,
            Err(err) => return self.failed(err),
        };
        let answer: Value = match serde_json::from_slice(&body) {
            Ok(answer) => answer,
            Err(err) => return self.failed(format!("decoding the SubjectAccessReview: {err}")),
        };
        let decision = decision(&answer["status"]);
        self.remember(key, &decision);
        Ok(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_decide_as_upstream() {
        assert_eq!(
            decision(&json!({"allowed": true})),
            Decision::Allow(String::new())
        );
        assert_eq!(
            decision(&json!({"allowed": false, "denied": true, "reason": "no"})),
            Decision::Deny("no".into())
        );
        assert_eq!(
            decision(&json!({"allowed": false, "reason": "maybe"})),
            Decision::NoOpinion("maybe".into())
        );
    }

    #[test]
    fn specs_carry_the_request() {
        let user = crate::authn::UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into()],
            ..Default::default()
        };
        let info = kapi_apimachinery::request_info::RequestInfoFactory::default()
            .resolve("GET", "/api/v1/namespaces/a/pods/p", None)
            .unwrap();
        let spec = spec(&Attributes::of_request(&user, &info));
        assert_eq!(spec["user"], "alice");
        assert_eq!(spec["resourceAttributes"]["resource"], "pods");
        assert_eq!(spec["resourceAttributes"]["name"], "p");
        assert_eq!(spec["resourceAttributes"]["verb"], "get");
    }
}
