//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook (k8s.io/apiserver's
//! admission/plugin/webhook): the webhooks of Mutating/ValidatingWebhookConfigurations
//! receive an AdmissionReview (admission.k8s.io/v1) for every write their rules, selectors
//! and matchConditions select. Mutating webhooks run in order (configurations by name) and
//! may patch the object (JSONPatch); with `reinvocationPolicy: IfNeeded` they run once more
//! when a later webhook changed it. Validating webhooks run concurrently and may only deny.
//! A webhook that cannot be called fails the request (500) unless `failurePolicy: Ignore`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use kapi_apimachinery::status::{ApiError, Status};
use kapi_patch::JsonPatch;
use kapi_server::admission::{AdmissionPlugin, Attributes};
use kapi_server::audit::Level;
use kapi_server::authz::Authorizer;
use kapi_server::endpoints::{Served, WeakApiHandler};
use kapi_server::resource::ResourceDefinition;

use crate::matching::Invocation;
use kapi_server::webhook_client::{ServiceResolver, WebhookClient};
use serde_json::{Value, json};

use crate::cel::{Activation, Expression, Inputs, request_json};
use crate::matching;
use crate::parsed::ParsedCollection;

/// How long a webhook may take when its configuration does not say.
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// The AdmissionReview version kapi sends and expects.
const REVIEW_VERSION: &str = "admission.k8s.io/v1";

/// Which of the two plugins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Mutating,
    Validating,
}

/// One webhook of a configuration, parsed once per configuration version.
struct Hook {
    name: String,
    /// The name of its configuration (mutation audit annotations carry it).
    configuration: String,
    client: WebhookClient,
    rules: Value,
    exact: bool,
    namespace_selector: Value,
    object_selector: Value,
    /// Whether it may be called on dry runs (sideEffects None or NoneOnDryRun).
    dry_run_safe: bool,
    timeout: Duration,
    ignore_failures: bool,
    reinvoke: bool,
    /// The matchConditions' expressions, compiled; one that does not compile is kept as its
    /// error.
    match_conditions: Vec<(String, Result<Expression, String>)>,
}

/// The webhooks of one configuration kind, followed from its watch cache.
struct Webhooks {
    phase: Phase,
    configurations: ParsedCollection<Vec<Hook>>,
    namespaces: Served,
    resolver: Arc<dyn ServiceResolver>,
    /// What matchConditions' `authorizer` variable asks.
    authorizer: Arc<dyn Authorizer>,
    /// Where the resources equivalent to a request's are looked up.
    api: WeakApiHandler,
}

impl Webhooks {
    /// Every webhook, configurations in name order, each in its configuration's order.
    fn hooks(&self) -> Vec<Arc<Vec<Hook>>> {
        self.configurations
            .current(|configuration| self.parse(configuration))
            .into_iter()
            .map(|(_, hooks)| hooks)
            .collect()
    }

    /// The webhooks of one configuration.
    fn parse(&self, configuration: &Value) -> Vec<Hook> {
        let configuration_name = configuration["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        let webhooks = configuration["webhooks"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        webhooks
            .iter()
            .map(|hook| Hook {
                name: hook["name"].as_str().unwrap_or_default().to_string(),
                configuration: configuration_name.to_string(),
                client: WebhookClient::new(&hook["clientConfig"], self.resolver.clone()),
                rules: hook["rules"].clone(),
                exact: hook["matchPolicy"] == "Exact",
                namespace_selector: hook["namespaceSelector"].clone(),
                object_selector: hook["objectSelector"].clone(),
                dry_run_safe: matches!(hook["sideEffects"].as_str(), Some("None" | "NoneOnDryRun")),
                timeout: Duration::from_secs(
                    hook["timeoutSeconds"]
                        .as_u64()
                        .unwrap_or(DEFAULT_TIMEOUT_SECONDS),
                ),
                ignore_failures: hook["failurePolicy"] == "Ignore",
                reinvoke: self.phase == Phase::Mutating && hook["reinvocationPolicy"] == "IfNeeded",
                match_conditions: hook["matchConditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let source = c["expression"].as_str().unwrap_or_default().to_string();
                        let compiled = Expression::compile(&source);
                        (source, compiled)
                    })
                    .collect(),
            })
            .collect()
    }

    /// What the webhooks of this request share; `object` is in the request's version, `old`
    /// as stored.
    fn review(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Review, ApiError> {
        let old = old.map(|old| served(attributes, old)).transpose()?;
        let kind = kind_of(attributes, object.or(old.as_ref()));
        Ok(Review {
            request: request_json(attributes, &kind, &new_uid()),
            old,
            equivalents: matching::equivalents(&self.api, attributes),
        })
    }

    /// Whether `hook`, matched by its rules, is called for this request (its selectors and
    /// matchConditions, on the objects as the webhook would receive them); the errors of
    /// matchConditions that failed to evaluate, when none was false.
    fn selects(
        &self,
        hook: &Hook,
        attributes: &Attributes<'_>,
        invocation: &Invocation<'_>,
    ) -> Result<bool, String> {
        let (object, old, request) = (invocation.object(), invocation.old(), invocation.request());
        if !matching::object_selector_matches(&hook.object_selector, object, old) {
            return Ok(false);
        }
        let labels = matching::namespace_labels(attributes, object, old, &self.namespaces);
        if !matching::namespace_selector_matches(&hook.namespace_selector, labels.as_ref()) {
            return Ok(false);
        }
        if hook.match_conditions.is_empty() {
            return Ok(true);
        }
        let activation = Activation::new(&Inputs {
            object: object.cloned(),
            old_object: old.cloned(),
            request: request.clone(),
            authorizer: Some(crate::cel::authorizer_variable(
                &self.authorizer,
                attributes,
            )),
            ..Inputs::default()
        });
        // Any false condition skips the webhook, errors or not; otherwise errors fail it.
        let mut errors = Vec::new();
        for (source, condition) in &hook.match_conditions {
            let result = condition
                .as_ref()
                .map_err(|err| format!("compilation failed: {err}"))
                .and_then(|condition| condition.evaluate_bool(&activation));
            match result {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(err) => errors.push(format!("expression '{source}' resulted in error: {err}")),
            }
        }
        match errors.as_slice() {
            [] => Ok(true),
            [one] => Err(one.clone()),
            many => Err(format!("[{}]", many.join(", "))),
        }
    }
}

/// A webhook whose matchConditions failed to evaluate: skipped under `Ignore`, else the
/// request is forbidden, as upstream's webhook dispatcher decides.
fn condition_failure(hook: &Hook, attributes: &Attributes<'_>, err: String) -> Option<ApiError> {
    if hook.ignore_failures {
        return None;
    }
    let resource = attributes.definition.group_resource();
    Some(ApiError::forbidden(&resource, attributes.name, err))
}

/// What every webhook of one request shares: the AdmissionReview request in the request's
/// version, the old object in that version, and the equivalent resources.
struct Review {
    request: Value,
    old: Option<Value>,
    equivalents: Vec<Arc<ResourceDefinition>>,
}

/// The object in the version the request was made in (subresources with their own kind,
/// such as Scale or Eviction, are admitted as they are).
pub(crate) fn served(attributes: &Attributes<'_>, object: &Value) -> Result<Value, ApiError> {
    match attributes.subresource {
        "" | "status" => attributes.definition.served_form(object.clone()),
        _ => Ok(object.clone()),
    }
}

/// The group, version and kind AdmissionReview names for the request.
pub(crate) fn kind_of(attributes: &Attributes<'_>, object: Option<&Value>) -> Value {
    if let Some(object) = object
        && let (Some(api_version), Some(kind)) =
            (object["apiVersion"].as_str(), object["kind"].as_str())
    {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return json!({"group": group, "version": version, "kind": kind});
    }
    let gv = &attributes.definition.group_version;
    json!({"group": gv.group, "version": gv.version, "kind": attributes.definition.kind})
}

/// What a webhook answered.
struct Answer {
    allowed: bool,
    status: Value,
    patch: Option<Vec<u8>>,
    warnings: Vec<String>,
    audit_annotations: Vec<(String, String)>,
}

/// Calls a webhook with an AdmissionReview of its invocation; the checked answer.
async fn call(hook: &Hook, phase: Phase, invocation: &Invocation<'_>) -> Result<Answer, String> {
    let request = invocation.request();
    let mut body = request.clone();
    body["object"] = invocation.object().cloned().unwrap_or(Value::Null);
    body["oldObject"] = invocation.old().cloned().unwrap_or(Value::Null);
    let review = json!({"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview", "request": body});
    let bytes = hook
        .client
        .post_with_deadline(
            serde_json::to_vec(&review).unwrap_or_default(),
            hook.timeout,
        )
        .await
        .map_err(|err| format!("failed to call webhook: {err}"))?;
    let review: Value = serde_json::from_slice(&bytes)
        .map_err(|err| format!("received invalid webhook response: {err}"))?;
    read_answer(&review, request["uid"].as_str().unwrap_or_default(), phase)
        .map_err(|err| format!("received invalid webhook response: {err}"))
}

/// The answer of an AdmissionReview response, checked as upstream checks it.
fn read_answer(review: &Value, uid: &str, phase: Phase) -> Result<Answer, String> {
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let api_version = review["apiVersion"].as_str().unwrap_or_default();
    let kind = review["kind"].as_str().unwrap_or_default();
    if (api_version, kind) != (REVIEW_VERSION, "AdmissionReview") {
        // schema.GroupVersionKind's String(): `<group>/<version>, Kind=<kind>`.
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "expected webhook response of {REVIEW_VERSION}, Kind=AdmissionReview, got {group}/{version}, Kind={kind}"
        ));
    }
    let encoded = response["patch"].as_str().filter(|patch| !patch.is_empty());
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    let patch = match (phase, encoded, patch_type) {
        (Phase::Validating, Some(_), _) => {
            return Err("validating webhook may not return response.patch".into());
        }
        (Phase::Validating, None, Some(_)) => {
            return Err("validating webhook may not return response.patchType".into());
        }
        (Phase::Validating, None, None) | (Phase::Mutating, None, None) => None,
        (Phase::Mutating, Some(_), None) => {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        (Phase::Mutating, None, Some(_)) => {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        (Phase::Mutating, Some(encoded), Some(patch_type)) => {
            match patch_type.as_str().unwrap_or_default() {
                "JSONPatch" => {}
                "" => return Err(r#"webhook returned invalid response.patchType of """#.into()),
                other => return Err(format!("unsupported patch type {other:?}")),
            }
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|err| err.to_string())?,
            )
        }
    };
    Ok(Answer {
        allowed: response["allowed"] == true,
        status: response["status"].clone(),
        patch,
        warnings: response["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect(),
        audit_annotations: response["auditAnnotations"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
    })
}

/// Records what a webhook answered besides its verdict: its warnings for the client, its
/// audit annotations (keyed `<webhook>/<key>`, as upstream; keys that do not make a
/// qualified name are dropped with a warning).
fn record(hook: &Hook, attributes: &Attributes<'_>, answer: &Answer) {
    for warning in &answer.warnings {
        attributes.warnings.add(warning.clone());
    }
    for (key, value) in &answer.audit_annotations {
        let key = format!("{}/{key}", hook.name);
        if kapi_apimachinery::validation::is_qualified_name(&key).is_empty() {
            attributes.audit.add(&key, value);
        } else {
            tracing::warn!(
                key,
                "Admission webhook returned an invalid audit annotation key"
            );
        }
    }
}

/// A denial as the client gets it (upstream's ToStatusErr): the webhook's code (at least
/// 400) and reason, its message after `admission webhook "name" denied the request`.
fn denied(name: &str, status: &Value) -> ApiError {
    let denied_by = format!("admission webhook {name:?} denied the request");
    // The webhook's whole Status (its details too), made a failure of at least 400.
    let mut status: Status = serde_json::from_value(status.clone()).unwrap_or_default();
    status.message = match (status.message.as_str(), status.reason.as_str()) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    };
    let code = status.code.max(400) as u16;
    let details = status.details.take();
    let mut failure = Status::failure(code, status.reason, status.message);
    failure.details = details;
    ApiError::from(failure)
}

/// What a call failure means under the webhook's failure policy: `None` when ignored.
fn failure(hook: &Hook, err: String) -> Option<ApiError> {
    if hook.ignore_failures {
        tracing::warn!("failed calling webhook {:?} (ignored): {err}", hook.name);
        return None;
    }
    Some(ApiError::internal(format!(
        "failed calling webhook {:?}: {err}",
        hook.name
    )))
}

/// The refusal of a dry run by a webhook with side effects.
fn no_dry_run(hook: &Hook) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook {:?} does not support dry run",
        hook.name
    ))
}

/// The MutatingAdmissionWebhook plugin.
pub struct MutatingWebhook(Webhooks);

impl MutatingWebhook {
    /// Webhooks from `configurations` (mutatingwebhookconfigurations); namespace labels from
    /// `namespaces`; Service references resolved with `resolver`.
    pub fn new(
        configurations: Served,
        namespaces: Served,
        resolver: Arc<dyn ServiceResolver>,
        authorizer: Arc<dyn Authorizer>,
        api: WeakApiHandler,
    ) -> MutatingWebhook {
        MutatingWebhook(Webhooks {
            phase: Phase::Mutating,
            configurations: ParsedCollection::new(configurations),
            namespaces,
            resolver,
            authorizer,
            api,
        })
    }

    /// Runs one webhook on `current` in round `round` (1 for reinvocations) as the
    /// `index`th webhook; whether it changed it. Every call is recorded in the audit event
    /// (`mutation.webhook.admission.k8s.io/round_<r>_index_<i>`), and, at the Request level,
    /// the patch it returned.
    async fn run(
        &self,
        hook: &Hook,
        (round, index): (usize, usize),
        attributes: &Attributes<'_>,
        review: &Review,
        current: &mut Option<Value>,
    ) -> Result<bool, ApiError> {
        let Some(equivalent) =
            matching::matched_resource(&hook.rules, !hook.exact, attributes, &review.equivalents)
        else {
            return Ok(false);
        };
        let invocation = Invocation::new(
            attributes,
            equivalent,
            &review.request,
            current.as_ref(),
            review.old.as_ref(),
        )?;
        match self.0.selects(hook, attributes, &invocation) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(err) => return condition_failure(hook, attributes, err).map_or(Ok(false), Err),
        }
        if attributes.dry_run && !hook.dry_run_safe {
            return Err(no_dry_run(hook));
        }
        let suffix = format!("round_{round}_index_{index}");
        let mutation = |mutated: bool| {
            let value = json!({"configuration": hook.configuration, "webhook": hook.name,
                "mutated": mutated});
            let key = format!("mutation.webhook.admission.k8s.io/{suffix}");
            attributes.audit.add(&key, &value.to_string());
        };
        let answer = match call(hook, Phase::Mutating, &invocation).await {
            Ok(answer) => answer,
            Err(err) => {
                mutation(false);
                return failure(hook, err).map_or(Ok(false), Err);
            }
        };
        record(hook, attributes, &answer);
        if !answer.allowed {
            mutation(false);
            return Err(denied(&hook.name, &answer.status));
        }
        let Some(patch) = answer.patch else {
            mutation(false);
            return Ok(false);
        };
        // A patch that does not decode is a failure to call the webhook (its failure policy
        // applies); one that does not apply is an internal error.
        let patch = match JsonPatch::decode(&patch) {
            Ok(patch) => patch,
            Err(err) => {
                mutation(false);
                let err = format!("received undecodable patch in webhook response: {err}");
                return failure(hook, err).map_or(Ok(false), Err);
            }
        };
        if patch.is_empty() {
            mutation(false);
            return Ok(false);
        }
        let Some(object) = invocation.object() else {
            // A delete has no object to change.
            mutation(false);
            return Err(ApiError::internal(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        };
        let object = patch.apply(object).map_err(ApiError::internal)?;
        let changed = Some(&object) != invocation.object();
        mutation(changed);
        if changed {
            *current = Some(invocation.as_requested(attributes, object)?);
        }
        if attributes.audit.level() >= Level::Request {
            let value = json!({"configuration": hook.configuration, "webhook": hook.name,
                "patch": patch.operations(), "patchType": "JSONPatch"});
            let key = format!("patch.webhook.admission.k8s.io/{suffix}");
            attributes.audit.add(&key, &value.to_string());
        }
        Ok(changed)
    }
}

#[async_trait]
impl AdmissionPlugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !matching::intercepted(attributes) {
            return Ok(());
        }
        let configurations = self.0.hooks();
        if configurations.iter().all(|c| c.is_empty()) {
            return Ok(());
        }
        let mut current = match object.as_deref() {
            Some(object) => Some(served(attributes, object)?),
            None => None,
        };
        let review = self.0.review(attributes, current.as_ref(), old)?;
        let hooks: Vec<&Hook> = configurations.iter().flat_map(|c| c.iter()).collect();
        let mut changed_after = vec![false; hooks.len()];
        for (i, hook) in hooks.iter().enumerate() {
            if self
                .run(hook, (0, i), attributes, &review, &mut current)
                .await?
            {
                changed_after[..i].iter_mut().for_each(|c| *c = true);
            }
        }
        // IfNeeded webhooks that ran before a later webhook's change run once more.
        for (i, (hook, changed)) in hooks.iter().zip(&changed_after).enumerate() {
            if hook.reinvoke && *changed {
                self.run(hook, (1, i), attributes, &review, &mut current)
                    .await?;
            }
        }
        if let (Some(object), Some(current)) = (object, current) {
            let stored = match attributes.subresource {
                "" | "status" => attributes.definition.stored_form(current)?,
                _ => current,
            };
            *object = stored;
        }
        Ok(())
    }
}

/// The ValidatingAdmissionWebhook plugin.
pub struct ValidatingWebhook(Webhooks);

impl ValidatingWebhook {
    /// Webhooks from `configurations` (validatingwebhookconfigurations).
    pub fn new(
        configurations: Served,
        namespaces: Served,
        resolver: Arc<dyn ServiceResolver>,
        authorizer: Arc<dyn Authorizer>,
        api: WeakApiHandler,
    ) -> ValidatingWebhook {
        ValidatingWebhook(Webhooks {
            phase: Phase::Validating,
            configurations: ParsedCollection::new(configurations),
            namespaces,
            resolver,
            authorizer,
            api,
        })
    }

    /// One webhook's verdict: `Ok` when it allows (or is not selected, or its failure is
    /// ignored).
    async fn verdict(
        &self,
        hook: &Hook,
        attributes: &Attributes<'_>,
        review: &Review,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(equivalent) =
            matching::matched_resource(&hook.rules, !hook.exact, attributes, &review.equivalents)
        else {
            return Ok(());
        };
        let invocation = Invocation::new(
            attributes,
            equivalent,
            &review.request,
            object,
            review.old.as_ref(),
        )?;
        match self.0.selects(hook, attributes, &invocation) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(err) => return condition_failure(hook, attributes, err).map_or(Ok(()), Err),
        }
        if attributes.dry_run && !hook.dry_run_safe {
            return Err(no_dry_run(hook));
        }
        let answer = match call(hook, Phase::Validating, &invocation).await {
            Ok(answer) => answer,
            Err(err) => return failure(hook, err).map_or(Ok(()), Err),
        };
        record(hook, attributes, &answer);
        if answer.allowed {
            Ok(())
        } else {
            Err(denied(&hook.name, &answer.status))
        }
    }
}

#[async_trait]
impl AdmissionPlugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !matching::intercepted(attributes) {
            return Ok(());
        }
        let configurations = self.0.hooks();
        if configurations.iter().all(|c| c.is_empty()) {
            return Ok(());
        }
        let object = object.map(|o| served(attributes, o)).transpose()?;
        let review = self.0.review(attributes, object.as_ref(), old)?;
        let verdicts = configurations
            .iter()
            .flat_map(|c| c.iter())
            .map(|hook| self.verdict(hook, attributes, &review, object.as_ref()));
        let verdicts = futures::future::join_all(verdicts).await;
        verdicts
            .into_iter()
            .collect::<Result<Vec<()>, ApiError>>()
            .map(drop)
    }
}

/// A new AdmissionReview uid.
fn new_uid() -> String {
    kapi_apimachinery::meta::new_uid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_as_upstream_checks_them() {
        let ok = json!({"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(r#"[{"op":"add","path":"/x","value":1}]"#),
                "warnings": ["careful"]}});
        let answer = read_answer(&ok, "u", Phase::Mutating).unwrap();
        assert!(answer.allowed && answer.patch.is_some());
        assert_eq!(answer.warnings, ["careful"]);
        assert_eq!(
            read_answer(&ok, "u", Phase::Validating).err().unwrap(),
            "validating webhook may not return response.patch"
        );
        let mut untyped = ok.clone();
        untyped["response"]["patchType"] = Value::Null;
        assert_eq!(
            read_answer(&untyped, "u", Phase::Mutating).err().unwrap(),
            "webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            read_answer(&ok, "v", Phase::Mutating).err().unwrap(),
            r#"expected response.uid="v", got "u""#
        );
        let wrong = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true}});
        assert_eq!(
            read_answer(&wrong, "u", Phase::Mutating).err().unwrap(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        let untyped = json!({"response": {"uid": "u", "allowed": true}});
        assert_eq!(
            read_answer(&untyped, "u", Phase::Mutating).err().unwrap(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
        );
        assert_eq!(
            read_answer(&json!({}), "u", Phase::Mutating).err().unwrap(),
            "webhook response was absent"
        );
    }

    #[test]
    fn denials_read_as_upstream() {
        let status = denied(
            "deny.example.com",
            &json!({"code": 403, "message": "no pods on Sundays"}),
        )
        .into_status();
        assert_eq!(status.code, 403);
        assert_eq!(
            status.message,
            r#"admission webhook "deny.example.com" denied the request: no pods on Sundays"#
        );
        // The webhook's reason and details reach the client.
        let status = denied(
            "teapot.example.com",
            &json!({"code": 418, "reason": "Teapot", "details": {"name": "x"}}),
        )
        .into_status();
        assert_eq!((status.code, status.reason.as_str()), (418, "Teapot"));
        assert_eq!(
            status.message,
            r#"admission webhook "teapot.example.com" denied the request: Teapot"#
        );
        assert_eq!(status.details.unwrap().name, "x");
        let status = denied("w", &Value::Null).into_status();
        assert_eq!(status.code, 400);
        assert_eq!(
            status.message,
            r#"admission webhook "w" denied the request without explanation"#
        );
    }
}
