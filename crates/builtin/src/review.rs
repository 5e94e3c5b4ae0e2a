//! The resources that are computed per request and never stored, answered by [`Creater`]
//! hooks: authentication.k8s.io/v1 TokenReview (kapi's service-account tokens) and
//! SelfSubjectReview (the requester's user), authorization.k8s.io/v1 SubjectAccessReview,
//! SelfSubjectAccessReview, LocalSubjectAccessReview and SelfSubjectRulesReview (answered by
//! the authorizer deciding the server's requests), and the core `bindings` resource.

use std::collections::BTreeMap;
use std::sync::Arc;

use kapi_apimachinery::meta::now_rfc3339;
use kapi_apimachinery::schema::GroupKind;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::authn::Authentication;
use kapi_server::object;
use kapi_server::resource::{CreateRequest, Creater, Strategy};
use kapi_server::{Attributes, Authorizer, Decision, UserInfo};
use serde_json::{Map, Value, json};

use crate::kinds::KindStrategies;
use crate::token::ServiceAccountTokens;
use crate::util::str_of;

/// The hooks of the kinds this module answers.
pub(crate) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    let creater: Arc<dyn Creater> = match (group, kind) {
        ("", "Binding") => Arc::new(crate::subresources::BindingCreater),
        ("authentication.k8s.io", "TokenReview") => Arc::new(TokenReviewCreater),
        ("authentication.k8s.io", "SelfSubjectReview") => Arc::new(SelfSubjectReviewCreater),
        ("authorization.k8s.io", "SubjectAccessReview") => Arc::new(AccessReviewCreater::Subject),
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            Arc::new(AccessReviewCreater::SelfSubject)
        }
        ("authorization.k8s.io", "LocalSubjectAccessReview") => {
            Arc::new(AccessReviewCreater::Local)
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => Arc::new(RulesReviewCreater),
        _ => return None,
    };
    Some(KindStrategies {
        strategy: Arc::new(ComputedStrategy(creater)),
        table: None,
    })
}

/// The strategy of a resource that is never stored: its creates go to the hook.
struct ComputedStrategy(Arc<dyn Creater>);

impl Strategy for ComputedStrategy {
    fn validate(&self, _object: &Value) -> FieldErrors {
        FieldErrors::new()
    }

    fn creater(&self) -> Option<Arc<dyn Creater>> {
        Some(self.0.clone())
    }
}

/// A review as upstream answers it: the request with the computed `status` (an unset
/// `creationTimestamp` left out, as upstream writes it since 1.34).
fn answered(mut review: Value, status: Value) -> Value {
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    if let Some(meta) = review["metadata"].as_object_mut()
        && meta.get("creationTimestamp").is_some_and(Value::is_null)
    {
        meta.remove("creationTimestamp");
    }
    review["status"] = status;
    review
}

/// A user as the reviews' UserInfo shows it (`username`, `uid`, `groups`, `extra`; empty
/// fields left out).
fn user_json(user: &UserInfo) -> Value {
    let mut out = Map::new();
    out.insert("username".into(), Value::from(user.name.as_str()));
    if !user.uid.is_empty() {
        out.insert("uid".into(), Value::from(user.uid.as_str()));
    }
    if !user.groups.is_empty() {
        out.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        out.insert("extra".into(), json!(user.extra));
    }
    Value::Object(out)
}

/// Answers TokenReview: whether the server's authenticators accept the token, as a bearer
/// token alone, for the review's audiences (the API audiences when it names none). Tokens of
/// audience-agnostic authenticators (the token file, OIDC, legacy service-account tokens,
/// webhooks) count for the API audiences among those.
struct TokenReviewCreater;

#[async_trait::async_trait]
impl Creater for TokenReviewCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        let review = request.object.clone();
        let token = str_of(&review["spec"], "token");
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let services = request.api.services();
        let Some(authentication) = services.get::<Arc<Authentication>>() else {
            return Ok(answered(review, json!({ "user": {} })));
        };
        let api_audiences = services
            .get::<Arc<ServiceAccountTokens>>()
            .map(|tokens| tokens.api_audiences().to_vec())
            .unwrap_or_default();
        let mut audiences: Vec<String> = review["spec"]["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        if audiences.is_empty() {
            audiences = api_audiences.clone();
        }
        let reviewed = authentication.review_token(token, audiences.clone()).await;
        let status = match reviewed {
            Ok((user, granted)) => {
                let granted = granted.unwrap_or_else(|| {
                    let agnostic = audiences.iter().filter(|a| api_audiences.contains(a));
                    agnostic.cloned().collect()
                });
                match granted.is_empty() {
                    true => json!({"user": {}, "error": "invalid bearer token"}),
                    false => json!({
                        "authenticated": true,
                        "user": user_json(&user),
                        "audiences": granted,
                    }),
                }
            }
            Err(err) => json!({"user": {}, "error": err.0}),
        };
        Ok(answered(review, status))
    }
}

/// Answers SelfSubjectReview (`kubectl auth whoami`): the requester's user.
struct SelfSubjectReviewCreater;

#[async_trait::async_trait]
impl Creater for SelfSubjectReviewCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        Ok(json!({
            "kind": "SelfSubjectReview",
            "apiVersion": request.object["apiVersion"],
            "metadata": { "creationTimestamp": now_rfc3339() },
            "status": { "userInfo": user_json(request.user) },
        }))
    }
}

/// The authorizer deciding this server's requests, which the authorization filter passes on.
fn authorizer(request: &CreateRequest<'_>) -> Result<Arc<dyn Authorizer>, ApiError> {
    request
        .api
        .services()
        .get::<Arc<dyn Authorizer>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("no authorizer is configured"))
}

/// The three access reviews, which differ in whose access they ask about and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AccessReviewCreater {
    /// SubjectAccessReview: any user's, anywhere.
    Subject,
    /// SelfSubjectAccessReview (`kubectl auth can-i`): the requester's.
    SelfSubject,
    /// LocalSubjectAccessReview: any user's, in the request's namespace.
    Local,
}

impl AccessReviewCreater {
    fn kind(self) -> &'static str {
        match self {
            AccessReviewCreater::Subject => "SubjectAccessReview",
            AccessReviewCreater::SelfSubject => "SelfSubjectAccessReview",
            AccessReviewCreater::Local => "LocalSubjectAccessReview",
        }
    }

    /// Upstream's validation of the review: its spec's attributes and subject, its
    /// selectors, and metadata left empty (but for a LocalSubjectAccessReview's namespace,
    /// which its resource attributes must name).
    fn validate(self, review: &Value) -> Result<(), ApiError> {
        let spec = &review["spec"];
        let path = Path::root("spec");
        let (resource, non_resource) =
            (&spec["resourceAttributes"], &spec["nonResourceAttributes"]);
        let mut errors = FieldErrors::new();
        if !resource.is_null() && !non_resource.is_null() {
            errors.push(FieldError::invalid(
                &path.child("nonResourceAttributes"),
                non_resource.clone(),
                "cannot be specified in combination with resourceAttributes",
            ));
        }
        if resource.is_null() && non_resource.is_null() {
            errors.push(FieldError::invalid(
                &path.child("resourceAttributes"),
                "null",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        let groups = spec["groups"].as_array().map_or(0, Vec::len);
        if self != AccessReviewCreater::SelfSubject
            && str_of(spec, "user").is_empty()
            && groups == 0
        {
            errors.push(FieldError::invalid(
                &path.child("user"),
                "",
                "at least one of user or group must be specified",
            ));
        }
        errors.extend(selector_errors(resource));
        let meta = &review["metadata"];
        let namespace = object::namespace(review);
        match self {
            AccessReviewCreater::Local => {
                if !empty_meta(meta, &["managedFields", "namespace"]) {
                    errors.push(FieldError::invalid(
                        &Path::root("metadata"),
                        printed_meta(meta),
                        "must be empty except for namespace",
                    ));
                }
                if resource.is_object() && str_of(resource, "namespace") != namespace {
                    errors.push(FieldError::invalid(
                        &Path::root("spec.resourceAttributes.namespace"),
                        str_of(resource, "namespace"),
                        "must match metadata.namespace",
                    ));
                }
                if !non_resource.is_null() {
                    errors.push(FieldError::invalid(
                        &Path::root("spec.nonResourceAttributes"),
                        non_resource.clone(),
                        "disallowed on this kind of request",
                    ));
                }
            }
            _ if !empty_meta(meta, &["managedFields"]) => errors.push(FieldError::invalid(
                &Path::root("metadata"),
                printed_meta(meta),
                "must be empty",
            )),
            _ => {}
        }
        if errors.is_empty() {
            return Ok(());
        }
        let kind = GroupKind::new("authorization.k8s.io", self.kind());
        Err(ApiError::invalid(&kind, "", &errors))
    }
}

/// Whether metadata holds nothing but zero values outside `ignored` (upstream compares it
/// with an empty ObjectMeta).
fn empty_meta(meta: &Value, ignored: &[&str]) -> bool {
    meta.as_object()
        .into_iter()
        .flatten()
        .all(|(key, value)| ignored.contains(&key.as_str()) || zero(value))
}

/// Whether a value is Go's zero value of its field (which ObjectMeta's JSON leaves out).
fn zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::Bool(flag) => !flag,
    }
}

/// Metadata as upstream prints the ObjectMeta of an error: without its zero values.
fn printed_meta(meta: &Value) -> Value {
    let fields = meta.as_object().into_iter().flatten();
    let set = fields.filter(|(_, value)| !zero(value));
    Value::Object(
        set.map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// The errors of a review's field and label selectors (upstream's
/// validateResourceAttributes): a raw selector or requirements, not both, and each
/// requirement well formed (operators this server does not know are let through).
fn selector_errors(resource: &Value) -> FieldErrors {
    let mut errors = FieldErrors::new();
    for field in ["fieldSelector", "labelSelector"] {
        let selector = &resource[field];
        if !selector.is_object() {
            continue;
        }
        let path = Path::root("spec.resourceAttributes").child(field);
        let raw = str_of(selector, "rawSelector");
        let requirements = selector["requirements"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        if !raw.is_empty() && !requirements.is_empty() {
            errors.push(FieldError::invalid(
                &path.child("rawSelector"),
                raw,
                "may not specified at the same time as requirements",
            ));
        }
        if raw.is_empty() && requirements.is_empty() {
            errors.push(FieldError::required(
                &path.child("requirements"),
                format!(
                    "when {} is specified, requirements or rawSelector is required",
                    path.as_str()
                ),
            ));
        }
        for (i, requirement) in requirements.iter().enumerate() {
            let at = path.child("requirements").index(i);
            errors.extend(match field {
                "fieldSelector" => {
                    validation::validate_field_selector_requirement(requirement, &at)
                }
                _ => validation::validate_label_selector_requirement(requirement, true, &at),
            });
        }
    }
    errors
}

/// The user a SubjectAccessReview's spec names.
fn spec_user(spec: &Value) -> UserInfo {
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let extra: BTreeMap<String, Vec<String>> = spec["extra"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
        .unwrap_or_default();
    UserInfo {
        name: str_of(spec, "user").to_string(),
        uid: str_of(spec, "uid").to_string(),
        groups: strings(&spec["groups"]),
        extra,
    }
}

/// Asks the authorizer about `spec`'s attributes for `user`; the review's status.
async fn decide(authorizer: &dyn Authorizer, user: &UserInfo, spec: &Value) -> Value {
    let resource = &spec["resourceAttributes"];
    let non_resource = &spec["nonResourceAttributes"];
    let field = |object: &Value, key: &str| str_of(object, key).to_string();
    let (verb, path) = if resource.is_object() {
        (field(resource, "verb"), String::new())
    } else {
        (field(non_resource, "verb"), field(non_resource, "path"))
    };
    let text = |key: &str| field(resource, key);
    let (namespace, group, version, plural, subresource, name) = (
        text("namespace"),
        text("group"),
        text("version"),
        text("resource"),
        text("subresource"),
        text("name"),
    );
    let field_selector = str_of(&resource["fieldSelector"], "rawSelector").to_string();
    let label_selector = str_of(&resource["labelSelector"], "rawSelector").to_string();
    let attributes = Attributes {
        user,
        verb: &verb,
        namespace: &namespace,
        api_group: &group,
        api_version: &version,
        resource: &plural,
        subresource: &subresource,
        name: &name,
        resource_request: resource.is_object(),
        path: &path,
        field_selector: &field_selector,
        label_selector: &label_selector,
    };
    let mut status = Map::new();
    match authorizer.authorize(&attributes).await {
        Ok(decision) => {
            let (allowed, denied, reason) = match decision {
                Decision::Allow(reason) => (true, false, reason),
                Decision::Deny(reason) => (false, true, reason),
                Decision::NoOpinion(reason) => (false, false, reason),
            };
            status.insert("allowed".into(), allowed.into());
            if denied {
                status.insert("denied".into(), true.into());
            }
            if !reason.is_empty() {
                status.insert("reason".into(), reason.into());
            }
        }
        Err(err) => {
            status.insert("allowed".into(), false.into());
            status.insert("evaluationError".into(), err.to_string().into());
        }
    }
    Value::Object(status)
}

#[async_trait::async_trait]
impl Creater for AccessReviewCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        let review = request.object.clone();
        self.validate(&review)?;
        let spec = &review["spec"];
        let user = match self {
            AccessReviewCreater::SelfSubject => request.user.clone(),
            _ => spec_user(spec),
        };
        let status = decide(authorizer(&request)?.as_ref(), &user, spec).await;
        Ok(answered(review, status))
    }
}

/// Answers SelfSubjectRulesReview with the rules the server's authorizers grant the
/// requester in the namespace, incomplete when one of them cannot list what it grants.
struct RulesReviewCreater;

#[async_trait::async_trait]
impl Creater for RulesReviewCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        let namespace = str_of(&request.object["spec"], "namespace").to_string();
        if namespace.is_empty() {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        // Upstream answers with a new review holding the status only.
        let review = json!({"apiVersion": request.object["apiVersion"],
            "kind": request.object["kind"], "metadata": {}, "spec": {}});
        let authorizer = authorizer(&request)?;
        let rules = authorizer.rules_for(request.user, &namespace).await;
        let resource_rules: Vec<Value> = rules
            .resource_rules
            .iter()
            .map(|rule| {
                let mut value = json!({
                    "verbs": rule.verbs,
                    "apiGroups": rule.api_groups,
                    "resources": rule.resources,
                });
                if !rule.resource_names.is_empty() {
                    value["resourceNames"] = json!(rule.resource_names);
                }
                value
            })
            .collect();
        let non_resource_rules: Vec<Value> = rules
            .non_resource_rules
            .iter()
            .map(|rule| json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls}))
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": rules.incomplete,
        });
        match rules.errors.as_slice() {
            [] => {}
            [one] => status["evaluationError"] = json!(one),
            many => status["evaluationError"] = json!(format!("[{}]", many.join(", "))),
        }
        Ok(answered(review, status))
    }
}

#[cfg(test)]
mod tests;
