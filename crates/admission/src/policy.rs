//! ValidatingAdmissionPolicy (k8s.io/apiserver's admission/plugin/policy/validating): every
//! ValidatingAdmissionPolicyBinding applies its policy to the writes both the policy's
//! `matchConstraints` and the binding's `matchResources` select, with the binding's params
//! (`paramRef`, of the policy's `paramKind`), the policy's `matchConditions` and
//! `variables`, then its `validations`; a failed validation is acted on per the binding's
//! `validationActions` (Deny: refused, 422 by default; Warn: a Warning header; Audit: the
//! `validation.policy.admission.k8s.io/validation_failure` audit annotation). The policy's
//! `auditAnnotations` become `<policy>/<key>` audit annotations. An expression that errors
//! is handled per the policy's `failurePolicy`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kapi_apimachinery::schema::GroupResource;
use kapi_apimachinery::status::{ApiError, Status, StatusCause, StatusDetails};
use kapi_schema::KindSchema;
use kapi_server::admission::{AdmissionPlugin, Attributes};
use kapi_server::authz::Authorizer;
use kapi_server::endpoints::{Served, WeakApiHandler};
use kapi_server::registry::{Item, ListParams, ReadVersion};
use kapi_server::resource::ResourceDefinition;
use serde_json::Value;

use crate::cel::{Activation, Expression, Inputs, request_json};
use crate::matching::{self, Invocation};
use crate::parsed::ParsedCollection;

/// One validation of a policy.
struct Validation {
    expression: Result<Expression, String>,
    message: String,
    message_expression: Option<Result<Expression, String>>,
    reason: String,
}

/// A policy, compiled.
struct Policy {
    /// `apiVersion` and `kind` of its params, if it has any.
    param_kind: Option<(String, String)>,
    match_constraints: Value,
    match_conditions: Vec<(String, Result<Expression, String>)>,
    variables: Vec<(String, Result<Expression, String>)>,
    validations: Vec<Validation>,
    /// `auditAnnotations`: keys and their value expressions.
    audit_annotations: Vec<(String, Result<Expression, String>)>,
    ignore_failures: bool,
}

/// A binding.
struct Binding {
    policy_name: String,
    param_ref: Value,
    match_resources: Value,
    deny: bool,
    warn: bool,
    /// The binding's validationActions, as written (the Audit action's annotation lists
    /// them).
    actions: Vec<String>,
}

fn compile(value: &Value) -> Result<Expression, String> {
    Expression::compile(value.as_str().unwrap_or_default())
}

fn named_expressions(list: &Value) -> Vec<(String, Result<Expression, String>)> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            (
                item["name"].as_str().unwrap_or_default().to_string(),
                compile(&item["expression"]),
            )
        })
        .collect()
}

fn parse_policy(policy: &Value) -> Policy {
    let spec = &policy["spec"];
    let param_kind = spec["paramKind"].as_object().map(|kind| {
        let text = |key: &str| {
            kind.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        (text("apiVersion"), text("kind"))
    });
    Policy {
        param_kind,
        match_constraints: spec["matchConstraints"].clone(),
        match_conditions: named_expressions(&spec["matchConditions"]),
        variables: named_expressions(&spec["variables"]),
        validations: spec["validations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| Validation {
                expression: compile(&v["expression"]),
                message: v["message"].as_str().unwrap_or_default().to_string(),
                message_expression: v.get("messageExpression").map(compile),
                reason: v["reason"].as_str().unwrap_or_default().to_string(),
            })
            .collect(),
        audit_annotations: spec["auditAnnotations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                (
                    a["key"].as_str().unwrap_or_default().to_string(),
                    compile(&a["valueExpression"]),
                )
            })
            .collect(),
        ignore_failures: spec["failurePolicy"] == "Ignore",
    }
}

fn parse_binding(binding: &Value) -> Binding {
    let spec = &binding["spec"];
    let actions: Vec<&str> = spec["validationActions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Binding {
        policy_name: spec["policyName"].as_str().unwrap_or_default().to_string(),
        param_ref: spec["paramRef"].clone(),
        match_resources: spec["matchResources"].clone(),
        deny: actions.contains(&"Deny"),
        warn: actions.contains(&"Warn"),
        actions: actions.iter().map(|a| a.to_string()).collect(),
    }
}

/// The request as a policy's `matchConstraints` or a binding's `matchResources` selects it
/// (absent: all, as the request's own resource); under `matchPolicy: Equivalent` it may be
/// selected as one of `equivalents` (see [`matching::matched_resource`]).
fn resources_match(
    constraints: &Value,
    attributes: &Attributes<'_>,
    equivalents: &[Arc<ResourceDefinition>],
    (object, old): (Option<&Value>, Option<&Value>),
    namespace_labels: Option<&serde_json::Map<String, Value>>,
) -> Option<Option<Arc<ResourceDefinition>>> {
    if constraints.is_null() {
        return Some(None);
    }
    if !matching::namespace_selector_matches(&constraints["namespaceSelector"], namespace_labels)
        || !matching::object_selector_matches(&constraints["objectSelector"], object, old)
    {
        return None;
    }
    let equivalent = constraints["matchPolicy"] != "Exact";
    let select =
        |rules: &Value| matching::matched_resource(rules, equivalent, attributes, equivalents);
    if select(&constraints["excludeResourceRules"]).is_some() {
        return None;
    }
    let rules = &constraints["resourceRules"];
    // A binding's matchResources without rules narrows nothing (the policy's rules apply).
    if rules.as_array().is_none_or(Vec::is_empty) {
        return Some(None);
    }
    select(rules)
}

/// A failed validation, or one that could not be evaluated (`errored`, which
/// failurePolicy Ignore lets pass): which validation, its message and reason.
struct Violation {
    index: usize,
    message: String,
    reason: String,
    errored: bool,
}

/// What evaluating a policy with one set of params found.
#[derive(Default)]
struct Evaluation {
    /// Every failed validation, in the policy's order.
    violations: Vec<Violation>,
    /// The values of the policy's auditAnnotations (those not null).
    annotations: Vec<(String, String)>,
}

/// Audit annotation values are cut to this length, as upstream.
const MAX_AUDIT_ANNOTATION_VALUE: usize = 10 * 1024;

/// The audit annotation of a failed validation under the Audit action.
const VALIDATION_FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The ValidatingAdmissionPolicy plugin.
pub struct ValidatingAdmissionPolicy {
    policies: ParsedCollection<Policy>,
    bindings: ParsedCollection<Binding>,
    namespaces: Served,
    /// Where params are looked up by their kind.
    api: WeakApiHandler,
    /// What the `authorizer` variable asks.
    authorizer: Arc<dyn Authorizer>,
}

impl ValidatingAdmissionPolicy {
    /// Policies and bindings from their served collections; namespaces for selectors and
    /// `namespaceObject`; params from the resources `api` serves (down its chain);
    /// `authorizer` for the `authorizer` variable.
    pub fn new(
        policies: Served,
        bindings: Served,
        namespaces: Served,
        api: WeakApiHandler,
        authorizer: Arc<dyn Authorizer>,
    ) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy {
            policies: ParsedCollection::new(policies),
            bindings: ParsedCollection::new(bindings),
            namespaces,
            api,
            authorizer,
        }
    }

    /// The params a binding gives: none (no paramKind), the objects its paramRef names, or
    /// an error message when they cannot be found and the binding says Deny.
    async fn params(
        &self,
        policy: &Policy,
        binding: &Binding,
        attributes: &Attributes<'_>,
    ) -> Result<Vec<Option<Value>>, String> {
        let Some((api_version, kind)) = &policy.param_kind else {
            return Ok(vec![None]);
        };
        if binding.param_ref.is_null() {
            return Err(
                "failed to configure binding: paramRef is required for policies with a paramKind"
                    .into(),
            );
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let found = self
            .api
            .upgrade()
            .and_then(|api| api.served_kind(group, version, kind));
        let Some(served) = found else {
            return Err(format!(
                "failed to configure binding: failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'"
            ));
        };
        let reference = &binding.param_ref;
        let namespace = match reference["namespace"].as_str() {
            Some(namespace) => namespace.to_string(),
            None if served.definition.namespaced => attributes.namespace.to_string(),
            None => String::new(),
        };
        let resource = served.definition.group_resource();
        let found: Vec<Option<Value>> = match reference["name"].as_str() {
            Some(name) => served
                .registry
                .get(&resource, &namespace, name, &ReadVersion::MostRecent)
                .await
                .and_then(|item| item.decode())
                .ok()
                .map(|param| vec![Some(param)])
                .unwrap_or_default(),
            None => {
                let selector =
                    kapi_apimachinery::labels::from_label_selector(&reference["selector"]).ok();
                let params = ListParams {
                    namespace: Some(namespace).filter(|ns| !ns.is_empty()),
                    labels: selector,
                    ..ListParams::default()
                };
                served
                    .registry
                    .list(&resource, &params)
                    .await
                    .map(|listed| {
                        listed
                            .items
                            .iter()
                            .filter_map(|item: &Item| item.decode().ok())
                            .map(Some)
                            .collect()
                    })
                    .unwrap_or_default()
            }
        };
        if found.is_empty() {
            if reference["parameterNotFoundAction"] == "Allow" {
                return Ok(Vec::new());
            }
            return Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into());
        }
        Ok(found)
    }

    /// Evaluates a policy with one set of params: its failed validations and its
    /// audit annotations. An error is a failure of the policy (see `failurePolicy`).
    fn evaluate(&self, policy: &Policy, inputs: &Inputs) -> Result<Evaluation, Violation> {
        let error = |index: usize, message: String| Violation {
            index,
            message,
            reason: String::new(),
            errored: true,
        };
        let mut activation = Activation::new(inputs);
        for (name, condition) in &policy.match_conditions {
            let condition = condition.as_ref().map_err(|err| {
                error(
                    0,
                    format!("compilation failed for matchCondition {name}: {err}"),
                )
            })?;
            if !condition
                .evaluate_bool(&activation)
                .map_err(|err| error(0, format!("matchCondition {name}: {err}")))?
            {
                return Ok(Evaluation::default());
            }
        }
        let mut variables = BTreeMap::new();
        for (name, expression) in &policy.variables {
            // A variable that fails is left unbound: an expression using it then fails.
            if let Ok(Ok(value)) = expression.as_ref().map(|e| e.evaluate(&activation)) {
                variables.insert(name.clone(), value);
                activation.set_variables(&variables);
            }
        }
        let violations = Self::violations(policy, &activation);
        let annotations = Self::audit_annotations(policy, &activation).map_err(|e| error(0, e))?;
        Ok(Evaluation {
            violations,
            annotations,
        })
    }

    /// Every validation that fails or cannot be evaluated, with its message (upstream's
    /// decisions: one per validation).
    fn violations(policy: &Policy, activation: &Activation) -> Vec<Violation> {
        let mut violations = Vec::new();
        for (index, validation) in policy.validations.iter().enumerate() {
            let error = |message: String| Violation {
                index,
                message,
                reason: String::new(),
                errored: true,
            };
            let expression = match validation.expression.as_ref() {
                Ok(expression) => expression,
                Err(err) => {
                    violations.push(error(format!("compilation error: {err}")));
                    continue;
                }
            };
            match expression.evaluate_bool(activation) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(err) => {
                    violations.push(error(format!(
                        "expression '{}' resulted in error: {err}",
                        expression.source
                    )));
                    continue;
                }
            }
            let from_expression = validation
                .message_expression
                .as_ref()
                .and_then(|e| e.as_ref().ok())
                .and_then(|e| match e.evaluate(activation) {
                    Ok(cel::Value::String(text)) if !text.trim().is_empty() => {
                        Some(text.to_string())
                    }
                    _ => None,
                });
            let message = match (from_expression, validation.message.as_str()) {
                (Some(message), _) => message,
                (None, "") => format!("failed expression: {}", expression.source.trim()),
                (None, message) => message.to_string(),
            };
            violations.push(Violation {
                index,
                message,
                reason: validation.reason.clone(),
                errored: false,
            });
        }
        violations
    }

    /// The values of the policy's audit annotations: strings, cut to 10 KiB; null leaves
    /// the annotation out.
    fn audit_annotations(
        policy: &Policy,
        activation: &Activation,
    ) -> Result<Vec<(String, String)>, String> {
        let mut values = Vec::new();
        for (key, expression) in &policy.audit_annotations {
            let expression = expression
                .as_ref()
                .map_err(|err| format!("compilation error: {err}"))?;
            match expression.evaluate(activation) {
                Ok(cel::Value::String(text)) => {
                    let mut value = text.to_string();
                    if value.len() > MAX_AUDIT_ANNOTATION_VALUE {
                        let mut end = MAX_AUDIT_ANNOTATION_VALUE;
                        while !value.is_char_boundary(end) {
                            end -= 1;
                        }
                        value.truncate(end);
                    }
                    values.push((key.clone(), value));
                }
                Ok(cel::Value::Null) => {}
                Ok(other) => {
                    return Err(format!(
                        "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                        expression.source,
                        crate::cel::type_name(&other)
                    ));
                }
                Err(err) => {
                    return Err(format!(
                        "valueExpression '{}' resulted in error: {err}",
                        expression.source
                    ));
                }
            }
        }
        Ok(values)
    }
}

/// The HTTP code of a policy's reason, as upstream maps it.
fn reason_code(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// The refusal of a write: upstream's admission Forbidden error with the policy's reason.
fn denial(
    attributes: &Attributes<'_>,
    policy: &str,
    binding: &str,
    message: &str,
    reason: &str,
) -> ApiError {
    let text = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {message}"
    );
    let resource: GroupResource = attributes.definition.group_resource();
    let mut status = ApiError::forbidden(&resource, attributes.name, text.clone()).into_status();
    let reason = if reason.is_empty() { "Invalid" } else { reason };
    status.reason = reason.to_string();
    status.code = i32::from(reason_code(reason));
    let details = status.details.get_or_insert_with(StatusDetails::default);
    details.causes.push(StatusCause {
        message: text,
        ..StatusCause::default()
    });
    ApiError::from(Status { ..status })
}

#[async_trait]
impl AdmissionPlugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
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
        let bindings = self.bindings.current(parse_binding);
        if bindings.is_empty() {
            return Ok(());
        }
        let policies: BTreeMap<String, Arc<Policy>> =
            self.policies.current(parse_policy).into_iter().collect();
        let served = |o: &Value| crate::webhook::served(attributes, o);
        let object = object.map(served).transpose()?;
        let old = old.map(served).transpose()?;
        let labels =
            matching::namespace_labels(attributes, object.as_ref(), old.as_ref(), &self.namespaces);
        let kind = crate::webhook::kind_of(attributes, object.as_ref().or(old.as_ref()));
        let request = request_json(attributes, &kind, "");
        let namespace_object = self.namespace_object(attributes.namespace);
        let authorizer = crate::cel::authorizer_variable(&self.authorizer, attributes);
        let object_schema = self.object_schema(attributes);
        let equivalents = matching::equivalents(&self.api, attributes);
        let mut denied = None;
        // Audit annotations by policy, then key: each distinct value once.
        let mut annotations: BTreeMap<&str, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (binding_name, binding) in &bindings {
            let Some(policy) = policies.get(&binding.policy_name) else {
                continue;
            };
            let objects = (object.as_ref(), old.as_ref());
            let Some(matched) = resources_match(
                &policy.match_constraints,
                attributes,
                &equivalents,
                objects,
                labels.as_ref(),
            ) else {
                continue;
            };
            let binding_matches = resources_match(
                &binding.match_resources,
                attributes,
                &equivalents,
                objects,
                labels.as_ref(),
            );
            if binding_matches.is_none() {
                continue;
            }
            // Under Equivalent, the policy sees the objects in the version it matched.
            let object_schema = match &matched {
                Some(definition) => self.object_schema(&Attributes {
                    definition,
                    ..*attributes
                }),
                None => object_schema.clone(),
            };
            let invocation = Invocation::new(attributes, matched, &request, objects.0, objects.1)?;
            let evaluations = match self.params(policy, binding, attributes).await {
                Ok(params) => params
                    .into_iter()
                    .map(|params| {
                        self.evaluate(
                            policy,
                            &Inputs {
                                object: invocation.object().cloned(),
                                old_object: invocation.old().cloned(),
                                request: invocation.request().clone(),
                                params,
                                namespace_object: namespace_object.clone(),
                                authorizer: Some(authorizer.clone()),
                                object_schema: object_schema.clone(),
                                params_schema: self.params_schema(policy),
                            },
                        )
                    })
                    .collect(),
                Err(message) => vec![Err(Violation {
                    index: 0,
                    message,
                    reason: String::new(),
                    errored: true,
                })],
            };
            for evaluation in evaluations {
                let violations = match evaluation {
                    Ok(evaluation) => {
                        let collected = annotations.entry(&binding.policy_name).or_default();
                        for (key, value) in evaluation.annotations {
                            let values = collected.entry(key).or_default();
                            if !values.contains(&value) {
                                values.push(value);
                            }
                        }
                        evaluation.violations
                    }
                    Err(violation) => vec![violation],
                };
                for violation in violations {
                    if violation.errored && policy.ignore_failures {
                        continue;
                    }
                    let refusal = act_on(attributes, binding_name, binding, violation);
                    denied = denied.or(refusal);
                }
            }
        }
        for (policy, keys) in annotations {
            for (key, values) in keys {
                attributes
                    .audit
                    .add(&format!("{policy}/{key}"), &values.join(", "));
            }
        }
        denied.map_or(Ok(()), Err)
    }
}

/// Acts on a failed validation as the binding's validationActions say: a Warning header
/// (Warn), an audit annotation (Audit), and the refusal to return (Deny).
fn act_on(
    attributes: &Attributes<'_>,
    binding_name: &str,
    binding: &Binding,
    violation: Violation,
) -> Option<ApiError> {
    let policy = &binding.policy_name;
    let message = &violation.message;
    if binding.warn {
        attributes.warnings.add(format!(
            "Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{binding_name}': {message}"
        ));
    }
    if binding.actions.iter().any(|a| a == "Audit") {
        let failure = serde_json::json!([{"message": message, "policy": policy,
            "binding": binding_name, "expressionIndex": violation.index,
            "validationActions": binding.actions}]);
        attributes
            .audit
            .add(VALIDATION_FAILURE_ANNOTATION, &failure.to_string());
    }
    binding
        .deny
        .then(|| denial(attributes, policy, binding_name, message, &violation.reason))
}

impl ValidatingAdmissionPolicy {
    /// The schema of the object written, in the request's version (none for subresources
    /// other than status).
    fn object_schema(&self, attributes: &Attributes<'_>) -> Option<KindSchema> {
        if !matches!(attributes.subresource, "" | "status") {
            return None;
        }
        let definition = attributes.definition;
        let gv = &definition.group_version;
        let schema = self
            .api
            .upgrade()?
            .kind_schema(&gv.group, &gv.version, &definition.kind)?;
        schema.is_typed().then_some(schema)
    }

    /// The schema of a policy's params.
    fn params_schema(&self, policy: &Policy) -> Option<KindSchema> {
        let (api_version, kind) = policy.param_kind.as_ref()?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let schema = self.api.upgrade()?.kind_schema(group, version, kind)?;
        schema.is_typed().then_some(schema)
    }

    /// The request's namespace object (`namespaceObject`), from the namespaces' cache.
    fn namespace_object(&self, namespace: &str) -> Option<Value> {
        if namespace.is_empty() {
            return None;
        }
        let key = self.namespaces.registry.key("", namespace);
        let (cached, _) = self.namespaces.registry.cacher().get(&key);
        cached.and_then(|ns| Item::from(&*ns).decode().ok())
    }
}
