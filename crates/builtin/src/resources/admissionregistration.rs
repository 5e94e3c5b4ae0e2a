//! admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration,
//! MutatingWebhookConfiguration, ValidatingAdmissionPolicy and its bindings
//! (kubernetes/pkg/apis/admissionregistration/v1/defaults.go,
//! pkg/apis/admissionregistration/validation, apiserver/pkg/util/webhook/validation.go).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, validate_label_selector,
};
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Map, Value, json};

use super::common::{
    age, col, default_field, each_item, invalid_each, items, object_at, table, text, text_at, typed,
};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{
    reset_status, start_generation, track_generation, validate_core, validate_core_update,
};
use crate::util::{str_of, strings_of};

/// The AdmissionReview versions a webhook may speak.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const URL_FORM: &str = "; desired format: https://host[/path]";

/// The strategies of the admission registration kinds.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "ValidatingWebhookConfiguration" => (
            Arc::new(WebhookConfigurationStrategy { mutating: false }),
            webhooks_table(),
        ),
        "MutatingWebhookConfiguration" => (
            Arc::new(WebhookConfigurationStrategy { mutating: true }),
            webhooks_table(),
        ),
        "ValidatingAdmissionPolicy" => (Arc::new(PolicyStrategy), policy_table()),
        "ValidatingAdmissionPolicyBinding" => (Arc::new(BindingStrategy), binding_table()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// validatingWebhookConfigurationStrategy and mutatingWebhookConfigurationStrategy
/// (pkg/registry/admissionregistration/{validating,mutating}webhookconfiguration/strategy.go),
/// which differ in the kind of webhooks they hold.
struct WebhookConfigurationStrategy {
    /// MutatingWebhookConfigurations rather than ValidatingWebhookConfigurations.
    mutating: bool,
}

impl Strategy for WebhookConfigurationStrategy {
    fn default(&self, config: &mut Value) {
        webhook_defaults(config, self.mutating);
    }

    fn prepare_for_create(&self, config: &mut Value) {
        webhook_defaults(config, self.mutating);
        start_generation(config);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        webhook_defaults(new, self.mutating);
        track_generation(new, old);
    }

    fn validate(&self, config: &Value) -> FieldErrors {
        validate_core(config, validate_webhooks(config, self.mutating))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// validatingAdmissionPolicyStrategy
/// (pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go).
struct PolicyStrategy;

impl Strategy for PolicyStrategy {
    fn default(&self, policy: &mut Value) {
        policy_defaults(policy);
    }

    fn prepare_for_create(&self, policy: &mut Value) {
        reset_status(policy);
        policy_defaults(policy);
        start_generation(policy);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        policy_defaults(new);
        track_generation(new, old);
    }

    fn validate(&self, policy: &Value) -> FieldErrors {
        validate_core(policy, validate_policy(policy))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// validatingAdmissionPolicyBindingStrategy
/// (pkg/registry/admissionregistration/validatingadmissionpolicybinding/strategy.go).
struct BindingStrategy;

impl Strategy for BindingStrategy {
    fn default(&self, binding: &mut Value) {
        binding_defaults(binding);
    }

    fn prepare_for_create(&self, binding: &mut Value) {
        binding_defaults(binding);
        start_generation(binding);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        binding_defaults(new);
        track_generation(new, old);
    }

    fn validate(&self, binding: &Value) -> FieldErrors {
        validate_core(binding, validate_binding(binding))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

// ---- defaults ----

/// SetDefaults_MatchResources: Equivalent matching and selectors matching everything.
fn match_defaults(fields: &mut Map<String, Value>) {
    default_field(fields, "matchPolicy", json!("Equivalent"));
    default_field(fields, "namespaceSelector", json!({}));
    default_field(fields, "objectSelector", json!({}));
}

/// SetDefaults_Rule: rules apply in every scope.
fn rule_defaults(fields: &mut Map<String, Value>, key: &str) {
    each_item(fields, key, |rule| {
        default_field(crate::util::fields_mut(rule), "scope", json!("*"));
    });
}

/// SetDefaults_ValidatingWebhook / MutatingWebhook, their rules and service references.
fn webhook_defaults(config: &mut Value, mutating: bool) {
    each_item(crate::util::fields_mut(config), "webhooks", |hook| {
        let fields = crate::util::fields_mut(hook);
        default_field(fields, "failurePolicy", json!("Fail"));
        match_defaults(fields);
        default_field(fields, "timeoutSeconds", json!(10));
        if mutating {
            default_field(fields, "reinvocationPolicy", json!("Never"));
        }
        rule_defaults(fields, "rules");
        if let Some(service) = fields
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            default_field(service, "port", json!(443));
        }
    });
}

/// SetDefaults_ValidatingAdmissionPolicySpec and its match resources.
fn policy_defaults(policy: &mut Value) {
    let spec = object_at(policy, "/spec");
    default_field(spec, "failurePolicy", json!("Fail"));
    if let Some(constraints) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        match_defaults(constraints);
        rule_defaults(constraints, "resourceRules");
        rule_defaults(constraints, "excludeResourceRules");
    }
}

/// The match resources of a binding are defaulted as a policy's.
fn binding_defaults(binding: &mut Value) {
    if let Some(resources) = binding
        .pointer_mut("/spec/matchResources")
        .and_then(Value::as_object_mut)
    {
        match_defaults(resources);
        rule_defaults(resources, "resourceRules");
        rule_defaults(resources, "excludeResourceRules");
    }
}

// ---- webhook validation ----

/// validateValidatingWebhookConfiguration / validateMutatingWebhookConfiguration.
fn validate_webhooks(config: &Value, mutating: bool) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut names = Vec::new();
    for (i, hook) in items(config, "/webhooks").iter().enumerate() {
        let path = Path::root("webhooks").index(i);
        errs.extend(validate_webhook(hook, mutating, &path));
        errs.extend(validate_review_versions(
            &strings_of(hook, "admissionReviewVersions"),
            &path.child("admissionReviewVersions"),
        ));
        let name = str_of(hook, "name");
        if !name.is_empty() {
            if names.contains(&name) {
                errs.push(FieldError::duplicate(&path.child("name"), name));
            } else {
                names.push(name);
            }
        }
    }
    errs
}

/// IsFullyQualifiedName: a DNS subdomain of at least three labels.
fn validate_fully_qualified(name: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let problems = is_dns1123_subdomain(name);
    if !problems.is_empty() {
        errs.push(FieldError::invalid(path, name, problems.join(",")));
    } else if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
    errs
}

/// validateValidatingWebhook / validateMutatingWebhook.
fn validate_webhook(hook: &Value, mutating: bool, path: &Path) -> FieldErrors {
    let mut errs = validate_fully_qualified(str_of(hook, "name"), &path.child("name"));
    for (i, rule) in items(hook, "/rules").iter().enumerate() {
        errs.extend(validate_rule_with_operations(
            rule,
            &path.child("rules").index(i),
        ));
    }
    let policies: [(&str, &[&str]); 2] = [
        ("failurePolicy", &["Fail", "Ignore"]),
        ("matchPolicy", &["Equivalent", "Exact"]),
    ];
    for (key, valid) in policies {
        if let Some(value) = hook[key].as_str()
            && !valid.contains(&value)
        {
            errs.push(FieldError::not_supported(&path.child(key), value, valid));
        }
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if !hook[key].is_null() {
            errs.extend(validate_label_selector(&hook[key], &path.child(key)));
        }
    }
    match hook["sideEffects"].as_str() {
        None => errs.push(FieldError::required(
            &path.child("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some("None" | "NoneOnDryRun") => {}
        Some(other) => errs.push(FieldError::not_supported(
            &path.child("sideEffects"),
            other,
            ["None", "NoneOnDryRun"],
        )),
    }
    if let Some(timeout) = hook["timeoutSeconds"].as_i64()
        && !(1..=30).contains(&timeout)
    {
        errs.push(FieldError::invalid(
            &path.child("timeoutSeconds"),
            timeout,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    if mutating
        && let Some(policy) = hook["reinvocationPolicy"].as_str()
        && !matches!(policy, "Never" | "IfNeeded")
    {
        errs.push(FieldError::not_supported(
            &path.child("reinvocationPolicy"),
            policy,
            ["IfNeeded", "Never"],
        ));
    }
    errs.extend(validate_client_config(
        &hook["clientConfig"],
        &path.child("clientConfig"),
    ));
    errs
}

/// A webhook's client config: exactly one of a URL and a service.
fn validate_client_config(config: &Value, path: &Path) -> FieldErrors {
    let url = config["url"].as_str();
    let service = &config["service"];
    match (url, service.is_null()) {
        (Some(url), true) => validate_url(url, &path.child("url")),
        (None, false) => validate_service(service, &path.child("service")),
        _ => FieldErrors::from(FieldError::required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

/// ValidateWebhookURL: https, a host, no user information, fragment or query.
fn validate_url(url: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        rest.split('/').next().unwrap_or("")
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme,
            format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// ValidateWebhookService: name, namespace, port and a path of DNS subdomain segments.
fn validate_service(service: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if str_of(service, "name").is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "service name is required",
        ));
    }
    if str_of(service, "namespace").is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = service["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = service["path"].as_str() else {
        return errs;
    };
    let path_path = path.child("path");
    if url_path == "/" || url_path.is_empty() {
        return errs;
    }
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &path_path,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(
            &path_path,
            url_path,
            "must start with a '/'",
        ));
    }
    let trimmed = url_path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &path_path,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &path_path,
                url_path,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errs
}

/// validateAdmissionReviewVersions: at least one, unique DNS-1035 labels, one known.
fn validate_review_versions(versions: &[&str], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        ));
        return errs;
    }
    for (i, version) in versions.iter().enumerate() {
        if versions[..i].contains(version) {
            errs.push(FieldError::invalid(
                &path.index(i),
                *version,
                "duplicate version",
            ));
            continue;
        }
        errs.extend(invalid_each(
            &path.index(i),
            version,
            is_dns1035_label(version),
        ));
    }
    if !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        errs.push(FieldError::invalid(
            path,
            json!(versions),
            format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// validateRuleWithOperations: known operations (`*` alone) and the rule.
fn validate_rule_with_operations(rule: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let operations = strings_of(rule, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(&path.child("operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errs.push(FieldError::invalid(
            &path.child("operations"),
            json!(&operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, operation) in operations.iter().enumerate() {
        if !OPERATIONS.contains(operation) {
            errs.push(FieldError::not_supported(
                &path.child("operations").index(i),
                *operation,
                OPERATIONS,
            ));
        }
    }
    errs.extend(validate_rule(rule, path));
    errs
}

/// validateRule: API groups, versions, resources and scope.
fn validate_rule(rule: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = strings_of(rule, key);
        if rule[key].as_array().is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(&path.child(key), ""));
        }
        if list.len() > 1 && list.contains(&"*") {
            errs.push(FieldError::invalid(
                &path.child(key),
                json!(&list),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, version) in strings_of(rule, "apiVersions").iter().enumerate() {
        if version.is_empty() {
            errs.push(FieldError::required(
                &path.child("apiVersions").index(i),
                "",
            ));
        }
    }
    errs.extend(validate_resources(
        &strings_of(rule, "resources"),
        &path.child("resources"),
    ));
    if let Some(scope) = rule["scope"].as_str()
        && !matches!(scope, "*" | "Cluster" | "Namespaced")
    {
        errs.push(FieldError::not_supported(
            &path.child("scope"),
            scope,
            ["*", "Cluster", "Namespaced"],
        ));
    }
    errs
}

/// validateResources: resources and subresources with consistent wildcards.
fn validate_resources(resources: &[&str], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut wildcard_sub = Vec::new();
    let mut wildcard_res = Vec::new();
    let mut single_wildcard = false;
    let mut plain_resource = false;
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            errs.push(FieldError::required(&path.index(i), ""));
            continue;
        }
        single_wildcard |= *entry == "*";
        let Some((resource, sub)) = entry.split_once('/') else {
            plain_resource = *entry != "*";
            continue;
        };
        if wildcard_sub.contains(&resource) {
            errs.push(FieldError::invalid(
                &path.index(i),
                *entry,
                format!("if '{resource}/*' is present, must not specify {entry}"),
            ));
        }
        if wildcard_res.contains(&sub) {
            errs.push(FieldError::invalid(
                &path.index(i),
                *entry,
                format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            wildcard_sub.push(resource);
        }
        if resource == "*" {
            wildcard_res.push(sub);
        }
    }
    if resources.len() > 1 && resources.contains(&"*/*") {
        errs.push(FieldError::invalid(
            path,
            json!(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain_resource {
        errs.push(FieldError::invalid(
            path,
            json!(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

fn webhooks_table() -> TableConvertor {
    table(
        vec![
            typed(
                "Webhooks",
                "integer",
                "Webhooks indicates the number of webhooks registered in this configuration",
            ),
            age(),
        ],
        |config| {
            vec![
                name_cell(config),
                Value::from(items(config, "/webhooks").len()),
                age_cell(config),
            ]
        },
    )
}

// ---- ValidatingAdmissionPolicy ----

/// ValidateValidatingAdmissionPolicySpec, in part: something to check, a known failure
/// policy, expressions present, resource rules valid.
fn validate_policy(policy: &Value) -> FieldErrors {
    let spec = &policy["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    if items(spec, "/validations").is_empty() && items(spec, "/auditAnnotations").is_empty() {
        errs.push(FieldError::required(
            &path.child("validations"),
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    if let Some(policy) = spec["failurePolicy"].as_str()
        && !matches!(policy, "Fail" | "Ignore")
    {
        errs.push(FieldError::not_supported(
            &path.child("failurePolicy"),
            policy,
            ["Fail", "Ignore"],
        ));
    }
    for (i, validation) in items(spec, "/validations").iter().enumerate() {
        let validation_path = path.child("validations").index(i);
        if str_of(validation, "expression").trim().is_empty() {
            errs.push(FieldError::required(
                &validation_path.child("expression"),
                "",
            ));
        }
    }
    if spec["matchConstraints"].is_null() {
        errs.push(FieldError::required(&path.child("matchConstraints"), ""));
    } else {
        for (i, rule) in items(spec, "/matchConstraints/resourceRules")
            .iter()
            .enumerate()
        {
            let rule_path = path
                .child("matchConstraints")
                .child("resourceRules")
                .index(i);
            errs.extend(validate_rule_with_operations(rule, &rule_path));
        }
    }
    errs
}

fn policy_table() -> TableConvertor {
    table(
        vec![
            typed(
                "Validations",
                "integer",
                "Validations indicates the number of validation rules defined in this configuration",
            ),
            col(
                "ParamKind",
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            age(),
        ],
        policy_cells,
    )
}

/// NAME, VALIDATIONS, PARAMKIND (`apiVersion/kind` or `<unset>`), AGE.
fn policy_cells(policy: &Value) -> Vec<Value> {
    let kind = &policy["spec"]["paramKind"];
    let param_kind = if kind.is_object() {
        format!("{}/{}", str_of(kind, "apiVersion"), str_of(kind, "kind"))
    } else {
        "<unset>".to_string()
    };
    vec![
        name_cell(policy),
        Value::from(items(policy, "/spec/validations").len()),
        text(param_kind),
        age_cell(policy),
    ]
}

/// ValidateValidatingAdmissionPolicyBinding, in part: the policy named, the paramRef and the
/// validation actions.
fn validate_binding(binding: &Value) -> FieldErrors {
    let spec = &binding["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let policy = str_of(spec, "policyName");
    if policy.is_empty() {
        errs.push(FieldError::required(&path.child("policyName"), ""));
    }
    for message in is_dns1123_subdomain(policy)
        .into_iter()
        .filter(|_| !policy.is_empty())
    {
        errs.push(FieldError::invalid(
            &path.child("policyName"),
            policy,
            message,
        ));
    }
    errs.extend(validate_param_ref(
        &spec["paramRef"],
        &path.child("paramRef"),
    ));
    errs.extend(validate_validation_actions(
        spec,
        &path.child("validationActions"),
    ));
    errs
}

/// A binding's paramRef: a name (a path segment) or a selector, not both, and what to do
/// when no parameter is found.
fn validate_param_ref(reference: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !reference.is_object() {
        return errs;
    }
    let name = str_of(reference, "name");
    let selector = &reference["selector"];
    let exclusive = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for message in kapi_apimachinery::validation::validate_path_segment_name(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, message));
        }
        if selector.is_object() {
            errs.push(FieldError::forbidden(&path.child("name"), exclusive));
        }
    }
    if selector.is_object() {
        errs.extend(validate_label_selector(selector, &path.child("selector")));
        if !name.is_empty() {
            errs.push(FieldError::forbidden(&path.child("selector"), exclusive));
        }
    }
    if name.is_empty() && !selector.is_object() {
        errs.push(FieldError::required(
            path,
            "one of name or selector must be specified",
        ));
    }
    let action_path = path.child("parameterNotFoundAction");
    match str_of(reference, "parameterNotFoundAction") {
        "" => errs.push(FieldError::required(&action_path, "")),
        "Deny" | "Allow" => {}
        other => errs.push(FieldError::not_supported(
            &action_path,
            other,
            ["Deny", "Allow"],
        )),
    }
    errs
}

/// A binding's validation actions: known, each once, at least one, not both Deny and Warn.
fn validate_validation_actions(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let actions = strings_of(spec, "validationActions");
    for (i, action) in actions.iter().enumerate() {
        let action_path = path.index(i);
        if !matches!(*action, "Deny" | "Warn" | "Audit") {
            errs.push(FieldError::not_supported(
                &action_path,
                *action,
                ["Audit", "Deny", "Warn"],
            ));
        }
        if actions[..i].contains(action) {
            errs.push(FieldError::duplicate(&action_path, *action));
        }
    }
    if actions.contains(&"Deny") && actions.contains(&"Warn") {
        errs.push(FieldError::invalid(
            path,
            json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if actions.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one validation action is required",
        ));
    }
    errs
}

fn binding_table() -> TableConvertor {
    table(
        vec![
            col(
                "PolicyName",
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
            col(
                "ParamRef",
                "ParamRef indicates the param resource which sets the configration param",
            ),
            age(),
        ],
        binding_cells,
    )
}

/// NAME, POLICYNAME, PARAMREF (`namespace/name`, `*` for all), AGE.
fn binding_cells(binding: &Value) -> Vec<Value> {
    let reference = &binding["spec"]["paramRef"];
    let shown = if reference.is_object() {
        let name = match str_of(reference, "name") {
            "" => "*",
            name => name,
        };
        match str_of(reference, "namespace") {
            "" => name.to_string(),
            namespace => format!("{namespace}/{name}"),
        }
    } else {
        "<unset>".to_string()
    };
    vec![
        name_cell(binding),
        text(text_at(binding, "/spec/policyName")),
        text(shown),
        age_cell(binding),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};

    fn strategy(kind: &str) -> Arc<dyn Strategy> {
        strategies(kind).unwrap().strategy
    }

    fn hook(overrides: Value) -> Value {
        let mut hook = json!({"name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "svc", "namespace": "ns"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]});
        for (k, v) in overrides.as_object().unwrap() {
            hook[k] = v.clone();
        }
        hook
    }

    #[test]
    fn webhook_defaults() {
        let strategy = strategy("MutatingWebhookConfiguration");
        let mut config = json!({"metadata": {"name": "m"}, "webhooks": [hook(json!({}))]});
        strategy.prepare_for_create(&mut config);
        let hook = &config["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["objectSelector"], json!({}));
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        assert_eq!(config["metadata"]["generation"], 1);
        assert!(strategy.validate(&config).is_empty());
        let mut validating = json!({"webhooks": [hook.clone()]});
        super::webhook_defaults(&mut validating, false);
        assert!(
            validating["webhooks"][0]
                .get("reinvocationPolicy")
                .is_some()
        );
    }

    #[test]
    fn webhook_validation() {
        let strategy = strategy("ValidatingWebhookConfiguration");
        let config = json!({"webhooks": [
            hook(json!({"name": "check", "sideEffects": null, "timeoutSeconds": 31, "admissionReviewVersions": ["v2"],
                        "clientConfig": {"url": "http://example.com/x?y=1"}})),
            hook(json!({"name": "check.example.com", "failurePolicy": "Maybe", "clientConfig": {},
                        "rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"], "resources": ["*", "pods"]}]})),
            hook(json!({"clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/a//B"}}})),
        ]});
        assert_eq!(
            causes(&strategy.validate(&config)),
            expect(&[
                (
                    "webhooks[0].name",
                    "FieldValueInvalid",
                    r#"Invalid value: "check": should be a domain with at least three segments separated by dots"#
                ),
                (
                    "webhooks[0].sideEffects",
                    "FieldValueRequired",
                    "Required value: must specify one of None, NoneOnDryRun"
                ),
                (
                    "webhooks[0].timeoutSeconds",
                    "FieldValueInvalid",
                    "Invalid value: 31: the timeout value must be between 1 and 30 seconds"
                ),
                (
                    "webhooks[0].clientConfig.url",
                    "FieldValueInvalid",
                    r#"Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#
                ),
                (
                    "webhooks[0].clientConfig.url",
                    "FieldValueInvalid",
                    r#"Invalid value: "y=1": query parameters are not permitted in the URL"#
                ),
                (
                    "webhooks[0].admissionReviewVersions",
                    "FieldValueInvalid",
                    r#"Invalid value: ["v2"]: must include at least one of v1, v1beta1"#
                ),
                (
                    "webhooks[1].rules[0].operations",
                    "FieldValueInvalid",
                    r#"Invalid value: ["*","CREATE"]: if '*' is present, must not specify other operations"#
                ),
                (
                    "webhooks[1].rules[0].apiGroups",
                    "FieldValueRequired",
                    "Required value"
                ),
                (
                    "webhooks[1].rules[0].resources",
                    "FieldValueInvalid",
                    r#"Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources"#
                ),
                (
                    "webhooks[1].failurePolicy",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Maybe": supported values: "Fail", "Ignore""#
                ),
                (
                    "webhooks[1].clientConfig",
                    "FieldValueRequired",
                    "Required value: exactly one of url or service is required"
                ),
                (
                    "webhooks[2].clientConfig.service.path",
                    "FieldValueInvalid",
                    r#"Invalid value: "/a//B": segment[1] may not be empty"#
                ),
                (
                    "webhooks[2].clientConfig.service.path",
                    "FieldValueInvalid",
                    r#"Invalid value: "/a//B": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
                ),
                (
                    "webhooks[2].name",
                    "FieldValueDuplicate",
                    r#"Duplicate value: "check.example.com""#
                ),
            ])
        );
        assert_eq!((webhooks_table().cells)(&config)[1], 3);
    }

    #[test]
    fn admission_policies() {
        let strategy = strategy("ValidatingAdmissionPolicy");
        let mut policy = json!({"metadata": {"name": "p"}, "spec": {"validations": [{"expression": "true"}],
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]}},
            "status": {"observedGeneration": 3}});
        strategy.prepare_for_create(&mut policy);
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
        assert_eq!(
            policy["spec"]["matchConstraints"]["matchPolicy"],
            "Equivalent"
        );
        assert_eq!(policy["status"], json!({}));
        assert!(strategy.validate(&policy).is_empty());
        assert_eq!(policy_cells(&policy)[1..3], [json!(1), json!("<unset>")]);
        let binding = json!({"spec": {"validationActions": ["Deny", "Deny", "Block"],
            "paramRef": {"namespace": "ns", "parameterNotFoundAction": "Deny"}}});
        assert_eq!(
            causes(
                &super::strategies("ValidatingAdmissionPolicyBinding")
                    .unwrap()
                    .strategy
                    .validate(&binding)
            ),
            expect(&[
                ("spec.policyName", "FieldValueRequired", "Required value"),
                (
                    "spec.paramRef",
                    "FieldValueRequired",
                    "Required value: one of name or selector must be specified"
                ),
                (
                    "spec.validationActions[1]",
                    "FieldValueDuplicate",
                    r#"Duplicate value: "Deny""#
                ),
                (
                    "spec.validationActions[2]",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Block": supported values: "Audit", "Deny", "Warn""#
                ),
            ])
        );
        assert_eq!(binding_cells(&binding)[2], "ns/*");
        let both = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Warn"],
            "paramRef": {"name": "a", "selector": {}}}});
        let hooks = super::strategies("ValidatingAdmissionPolicyBinding").unwrap();
        assert_eq!(
            causes(&hooks.strategy.validate(&both)),
            expect(&[
                (
                    "spec.paramRef.name",
                    "FieldValueForbidden",
                    "Forbidden: name and selector are mutually exclusive"
                ),
                (
                    "spec.paramRef.selector",
                    "FieldValueForbidden",
                    "Forbidden: name and selector are mutually exclusive"
                ),
                (
                    "spec.paramRef.parameterNotFoundAction",
                    "FieldValueRequired",
                    "Required value"
                ),
                (
                    "spec.validationActions",
                    "FieldValueInvalid",
                    r#"Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"#
                ),
            ])
        );
    }
}
