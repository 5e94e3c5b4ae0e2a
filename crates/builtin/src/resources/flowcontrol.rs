//! flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration
//! (kubernetes/pkg/apis/flowcontrol/v1/defaults.go, pkg/apis/flowcontrol/validation,
//! pkg/registry/flowcontrol/*/strategy.go).

use std::sync::Arc;

use kapi_apimachinery::gofmt;
use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1123_subdomain, name_is_dns_subdomain, validate_namespace_name,
};
use kapi_server::resource::{Strategy, SubresourceKind, TableConvertor};
use serde_json::{Value, json};

use super::common::{
    age, col, default_field, invalid_each, items, object_at, table, text, text_at,
};
use crate::flowcontrol_bootstrap as bootstrap;
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{
    reset_status, start_generation, track_generation, validate_core, validate_core_update,
};
use crate::util::str_of;

/// The matching precedence of a FlowSchema that sets none.
const DEFAULT_MATCHING_PRECEDENCE: i64 = 1000;
/// The nominal concurrency shares of a Limited priority level that sets none.
const DEFAULT_NOMINAL_CONCURRENCY_SHARES: i64 = 30;

/// The strategies of the flow control kinds.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "FlowSchema" => (Arc::new(FlowSchemaStrategy), flow_schema_table()),
        "PriorityLevelConfiguration" => (
            Arc::new(PriorityLevelConfigurationStrategy),
            priority_level_table(),
        ),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// flowSchemaStrategy (pkg/registry/flowcontrol/flowschema/strategy.go).
struct FlowSchemaStrategy;

impl Strategy for FlowSchemaStrategy {
    fn default(&self, schema: &mut Value) {
        flow_schema_defaults(schema);
    }

    fn prepare_for_create(&self, schema: &mut Value) {
        reset_status(schema);
        flow_schema_defaults(schema);
        start_generation(schema);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        flow_schema_defaults(new);
        track_generation(new, old);
    }

    fn validate(&self, schema: &Value) -> FieldErrors {
        let mut errs = validate_flow_schema(schema);
        errs.extend(validate_conditions(schema));
        validate_core(schema, errs)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    /// ValidateFlowSchemaStatusUpdate: a status write is held to the status rules only.
    fn validate_subresource_update(
        &self,
        _subresource: &SubresourceKind,
        new: &Value,
        _old: &Value,
    ) -> FieldErrors {
        validate_conditions(new)
    }
}

/// priorityLevelConfigurationStrategy
/// (pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go).
struct PriorityLevelConfigurationStrategy;

impl Strategy for PriorityLevelConfigurationStrategy {
    fn default(&self, level: &mut Value) {
        priority_level_defaults(level);
    }

    fn prepare_for_create(&self, level: &mut Value) {
        reset_status(level);
        priority_level_defaults(level);
        start_generation(level);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        priority_level_defaults(new);
        track_generation(new, old);
    }

    fn validate(&self, level: &Value) -> FieldErrors {
        let mut errs = validate_priority_level(level);
        errs.extend(validate_conditions(level));
        validate_core(level, errs)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    /// ValidatePriorityLevelConfigurationStatusUpdate: the status rules only.
    fn validate_subresource_update(
        &self,
        _subresource: &SubresourceKind,
        new: &Value,
        _old: &Value,
    ) -> FieldErrors {
        validate_conditions(new)
    }
}

/// SetDefaults_FlowSchemaSpec: the default matching precedence, for a spec that sets none
/// or 0 (the field is a plain `int32` in Go, where the two are one).
fn flow_schema_defaults(schema: &mut Value) {
    let spec = object_at(schema, "/spec");
    if spec.get("matchingPrecedence").and_then(Value::as_i64) == Some(0) {
        spec.remove("matchingPrecedence");
    }
    default_field(
        spec,
        "matchingPrecedence",
        json!(DEFAULT_MATCHING_PRECEDENCE),
    );
}

/// SetDefaults of the exempt and limited priority levels and their queuing.
fn priority_level_defaults(level: &mut Value) {
    if level["spec"]["exempt"].is_object() {
        let exempt = object_at(level, "/spec/exempt");
        default_field(exempt, "nominalConcurrencyShares", json!(0));
        default_field(exempt, "lendablePercent", json!(0));
    }
    if level["spec"]["limited"].is_object() {
        let limited = object_at(level, "/spec/limited");
        default_field(
            limited,
            "nominalConcurrencyShares",
            json!(DEFAULT_NOMINAL_CONCURRENCY_SHARES),
        );
        default_field(limited, "lendablePercent", json!(0));
    }
    if level
        .pointer("/spec/limited/limitResponse/queuing")
        .is_some_and(Value::is_object)
    {
        let queuing = object_at(level, "/spec/limited/limitResponse/queuing");
        for (key, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
            if queuing.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
                queuing.insert(key.into(), json!(value));
            }
        }
    }
}

/// ValidateFlowSchemaSpec, in part: the precedence range, the priority level named, the
/// distinguisher method and the rules' subjects.
fn validate_flow_schema(schema: &Value) -> FieldErrors {
    let spec = &schema["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let precedence = spec["matchingPrecedence"].as_i64().unwrap_or(0);
    let precedence_path = path.child("matchingPrecedence");
    if precedence <= 0 {
        errs.push(FieldError::invalid(
            &precedence_path,
            precedence,
            "must be a positive value",
        ));
    }
    if precedence > 10000 {
        errs.push(FieldError::invalid(
            &precedence_path,
            precedence,
            "must not be greater than 10000",
        ));
    }
    let name = text_at(schema, "/metadata/name");
    if precedence == 1 && name != "exempt" {
        errs.push(FieldError::invalid(
            &precedence_path,
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    let method = &spec["distinguisherMethod"];
    if method.is_object() && !matches!(str_of(method, "type"), "ByUser" | "ByNamespace") {
        errs.push(FieldError {
            error_type: ErrorType::NotSupported,
            field: path.child("distinguisherMethod").child("type").to_string(),
            bad_value: Some(go_distinguisher(method)),
            detail: r#"supported values: "ByNamespace", "ByUser""#.to_string(),
        });
    }
    let level = text_at(spec, "/priorityLevelConfiguration/name");
    let level_path = path.child("priorityLevelConfiguration").child("name");
    if level.is_empty() {
        errs.push(FieldError::required(
            &level_path,
            "must reference a priority level",
        ));
    } else {
        errs.extend(invalid_each(
            &level_path,
            level,
            is_dns1123_subdomain(level),
        ));
    }
    for (i, rule) in items(spec, "/rules").iter().enumerate() {
        errs.extend(validate_rule(rule, &path.child("rules").index(i)));
    }
    let name = text_at(schema, "/metadata/name");
    if let Some(fixed) = mandatory_spec(bootstrap::mandatory_flow_schemas(), name)
        && semantic(spec) != semantic(&fixed)
    {
        errs.push(FieldError {
            error_type: ErrorType::Invalid,
            field: path.to_string(),
            bad_value: Some(go_flow_schema_spec(spec)),
            detail: format!("spec of '{name}' must equal the fixed value"),
        });
    }
    errs
}

/// The spec of the mandatory object of that name, if it is one.
fn mandatory_spec(objects: Vec<Value>, name: &str) -> Option<Value> {
    objects
        .into_iter()
        .find(|o| bootstrap::name_of(o) == name)
        .map(|mut o| o["spec"].take())
}

/// A spec as Go's semantic equality sees it: what a Go struct cannot tell from its zero
/// value (null, false, "", an empty list) is left out.
fn semantic(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !matches!(v, Value::Null | Value::Bool(false)))
                .filter(|(_, v)| {
                    v.as_str() != Some("") && v.as_array().is_none_or(|a| !a.is_empty())
                })
                .map(|(k, v)| (k.clone(), semantic(v)))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

/// ValidateFlowSchemaPolicyRulesWithSubjects: subjects, at least one rule, and each rule.
fn validate_rule(rule: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let subjects = items(rule, "/subjects");
    if subjects.is_empty() {
        errs.push(FieldError::required(
            &path.child("subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        errs.extend(validate_subject(subject, &path.child("subjects").index(i)));
    }
    if items(rule, "/resourceRules").is_empty() && items(rule, "/nonResourceRules").is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, resource_rule) in items(rule, "/resourceRules").iter().enumerate() {
        let at = path.child("resourceRules").index(i);
        validate_resource_rule(resource_rule, &at, &mut errs);
    }
    for (i, non_resource_rule) in items(rule, "/nonResourceRules").iter().enumerate() {
        let at = path.child("nonResourceRules").index(i);
        validate_non_resource_rule(non_resource_rule, &at, &mut errs);
    }
    errs
}

/// The verbs a rule may name besides `*` (upstream's `supportedVerbs`, sorted as its
/// message lists them).
const SUPPORTED_VERBS: [&str; 9] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];

/// The strings of the list at `key` (absent: none).
fn strings<'a>(rule: &'a Value, key: &str) -> Vec<&'a str> {
    items(rule, &format!("/{key}"))
        .iter()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

/// The list at `key` of a rule, where `*` may only stand alone: Required (with `required`'s
/// message) when empty, Invalid (`mixed`) when `*` has company. Returns the items to check
/// one by one: none when the list holds `*`.
fn wildcard_list<'a>(
    rule: &'a Value,
    key: &str,
    path: &Path,
    (required, mixed): (Option<&str>, &str),
    errs: &mut FieldErrors,
) -> Vec<&'a str> {
    let values = strings(rule, key);
    let at = path.child(key);
    if values.is_empty() {
        if let Some(required) = required {
            errs.push(FieldError::required(&at, required));
        }
    } else if values.contains(&"*") {
        if values.len() > 1 {
            errs.push(FieldError::invalid(&at, values, mixed));
        }
        return Vec::new();
    }
    values
}

/// A rule's verbs: at least one, `*` alone, or supported ones.
fn validate_verbs(rule: &Value, path: &Path, errs: &mut FieldErrors) {
    let verbs = wildcard_list(
        rule,
        "verbs",
        path,
        (
            Some("verbs must contain at least one value"),
            "if '*' is present, must not specify other verbs",
        ),
        errs,
    );
    if !verbs.iter().all(|v| SUPPORTED_VERBS.contains(v)) {
        let at = path.child("verbs");
        errs.push(FieldError::not_supported(&at, verbs, SUPPORTED_VERBS));
    }
}

/// ValidateFlowSchemaResourcePolicyRule.
fn validate_resource_rule(rule: &Value, path: &Path, errs: &mut FieldErrors) {
    validate_verbs(rule, path, errs);
    wildcard_list(
        rule,
        "apiGroups",
        path,
        (
            Some("resource rules must supply at least one api group"),
            "if '*' is present, must not specify other api groups",
        ),
        errs,
    );
    wildcard_list(
        rule,
        "resources",
        path,
        (
            Some("resource rules must supply at least one resource"),
            "if '*' is present, must not specify other resources",
        ),
        errs,
    );
    let required = (rule["clusterScope"] != true)
        .then_some("resource rules that are not cluster scoped must supply at least one namespace");
    let mixed = "if '*' is present, must not specify other namespaces";
    let namespaces = wildcard_list(rule, "namespaces", path, (required, mixed), errs);
    for (i, namespace) in namespaces.iter().enumerate() {
        for message in validate_namespace_name(namespace, false) {
            errs.push(FieldError::invalid(
                &path.child("namespaces").index(i),
                *namespace,
                format!("each member of this list must be '*' or a DNS-1123 label; {message}"),
            ));
        }
    }
}

/// ValidateFlowSchemaNonResourcePolicyRule.
fn validate_non_resource_rule(rule: &Value, path: &Path, errs: &mut FieldErrors) {
    validate_verbs(rule, path, errs);
    let urls = wildcard_list(
        rule,
        "nonResourceURLs",
        path,
        (
            Some("nonResourceURLs must contain at least one value"),
            "if '*' is present, must not specify other non-resource URLs",
        ),
        errs,
    );
    for (i, url) in urls.iter().enumerate() {
        if let Some(problem) = non_resource_url_problem(url) {
            let at = path.child("nonResourceURLs").index(i);
            errs.push(FieldError::invalid(&at, *url, problem));
        }
    }
}

/// What is wrong with a non-resource URL of a rule (upstream's `ValidateNonResourceURLPath`):
/// it starts with a slash, has no white-space nor double slash, and a wildcard only as its
/// last segment.
fn non_resource_url_problem(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        Some("must start with slash")
    } else if url.contains(' ') {
        Some("must not contain white-space")
    } else if url.contains("//") {
        Some("must not contain double slash")
    } else if url.matches('*').count() > 1 || (url.contains('*') && !url.ends_with("/*")) {
        Some("wildcard can only do suffix matching")
    } else {
        None
    }
}

/// ValidateFlowSchemaSubject: the member of the subject's kind, and no other.
fn validate_subject(subject: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let members = [
        ("ServiceAccount", "serviceAccount"),
        ("User", "user"),
        ("Group", "group"),
    ];
    let kind = str_of(subject, "kind");
    let Some((_, own)) = members.iter().find(|(k, _)| *k == kind) else {
        errs.push(FieldError::not_supported(
            &path.child("kind"),
            kind,
            ["Group", "ServiceAccount", "User"],
        ));
        return errs;
    };
    let member = &subject[*own];
    if member.is_null() {
        let detail = format!("{own} is required when subject kind is '{kind}'");
        errs.push(FieldError::required(&path.child(own), detail));
    } else {
        super::common::require_str(member, "name", &path.child(own), &mut errs);
        if kind == "ServiceAccount" {
            validate_service_account_subject(member, &path.child(own), &mut errs);
        }
    }
    for (other_kind, other) in members.iter().filter(|(_, m)| m != own) {
        if !subject[*other].is_null() {
            let detail = format!("{other} is forbidden when subject kind is not '{other_kind}'");
            errs.push(FieldError::forbidden(&path.child(other), detail));
        }
    }
    errs
}

/// ValidateServiceAccountSubject's formats: a service account's name (unless `*`) and its
/// namespace's.
fn validate_service_account_subject(subject: &Value, path: &Path, errs: &mut FieldErrors) {
    let name = str_of(subject, "name");
    if !name.is_empty() && name != "*" {
        let at = path.child("name");
        errs.extend(invalid_each(&at, name, name_is_dns_subdomain(name, false)));
    }
    let namespace = str_of(subject, "namespace");
    let at = path.child("namespace");
    if namespace.is_empty() {
        errs.push(FieldError::required(
            &at,
            "must specify namespace for service account",
        ));
    } else {
        errs.extend(invalid_each(
            &at,
            namespace,
            validate_namespace_name(namespace, false),
        ));
    }
}

/// ValidatePriorityLevelConfiguration: the spec, and the mandatory levels' fixed specs
/// (`exempt`'s but for its `exempt` field, which is the operator's to tune).
fn validate_priority_level(level: &Value) -> FieldErrors {
    let mut errs = validate_priority_level_spec(level);
    let name = text_at(level, "/metadata/name");
    let spec = &level["spec"];
    if let Some(mut fixed) = mandatory_spec(bootstrap::mandatory_priority_levels(), name) {
        let (mut compared, mut detail) = (semantic(spec), format!("spec of '{name}'"));
        if name == "exempt" {
            compared.as_object_mut().map(|s| s.remove("exempt"));
            fixed.as_object_mut().map(|s| s.remove("exempt"));
            detail.push_str(" except the 'spec.exempt' field");
        }
        if compared != semantic(&fixed) {
            errs.push(FieldError {
                error_type: ErrorType::Invalid,
                field: "spec".to_string(),
                bad_value: Some(go_priority_level_spec(spec)),
                detail: format!("{detail} must equal the fixed value"),
            });
        }
    }
    errs
}

/// ValidatePriorityLevelConfigurationSpec: the type and the configuration it needs.
fn validate_priority_level_spec(level: &Value) -> FieldErrors {
    let spec = &level["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let kind = str_of(spec, "type");
    if (text_at(level, "/metadata/name") == "exempt") != (kind == "Exempt") {
        errs.push(FieldError::invalid(
            &path.child("type"),
            kind,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match str_of(spec, "type") {
        "Exempt" => {
            if !spec["limited"].is_null() {
                errs.push(FieldError::forbidden(
                    &path.child("limited"),
                    "must be nil if the type is not Limited",
                ));
            }
            validate_shares(&spec["exempt"], &path.child("exempt"), &mut errs);
        }
        "Limited" => {
            if !spec["exempt"].is_null() {
                errs.push(FieldError::forbidden(
                    &path.child("exempt"),
                    "must be nil if the type is Limited",
                ));
            }
            if spec["limited"].is_null() {
                errs.push(FieldError::required(
                    &path.child("limited"),
                    "must not be empty when type is Limited",
                ));
            } else {
                validate_limited(&spec["limited"], &path.child("limited"), &mut errs);
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            ["Exempt", "Limited"],
        )),
    }
    errs
}

/// The most queues a priority level may have, and the most hash bits its shuffle sharding
/// may need (upstream's validation and `shufflesharding.MaxHashBits`).
const MAX_QUEUES: i64 = 10_000_000;
const MAX_HASH_BITS: i64 = 60;

/// The shares and lendable percentage of an exempt level (ValidateExemptPriorityLevelConfiguration).
fn validate_shares(config: &Value, path: &Path, errs: &mut FieldErrors) {
    validate_nominal_shares(config, path, errs);
    validate_lendable_percent(config, path, errs);
}

/// ValidateLimitedPriorityLevelConfiguration, in upstream's order: the shares, the response
/// to requests beyond the level's seats, then the lendable and borrowing percentages.
fn validate_limited(limited: &Value, path: &Path, errs: &mut FieldErrors) {
    validate_nominal_shares(limited, path, errs);
    let response = &limited["limitResponse"];
    validate_limit_response(response, &path.child("limitResponse"), errs);
    validate_lendable_percent(limited, path, errs);
    if let Some(percent) = limited["borrowingLimitPercent"].as_i64().filter(|p| *p < 0) {
        errs.push(FieldError::invalid(
            &path.child("borrowingLimitPercent"),
            percent,
            "if specified, must be a non-negative integer",
        ));
    }
}

fn validate_nominal_shares(config: &Value, path: &Path, errs: &mut FieldErrors) {
    if let Some(shares) = config["nominalConcurrencyShares"]
        .as_i64()
        .filter(|n| *n < 0)
    {
        errs.push(FieldError::invalid(
            &path.child("nominalConcurrencyShares"),
            shares,
            "must be a non-negative integer",
        ));
    }
}

fn validate_lendable_percent(config: &Value, path: &Path, errs: &mut FieldErrors) {
    if let Some(percent) = config["lendablePercent"]
        .as_i64()
        .filter(|p| !(0..=100).contains(p))
    {
        errs.push(FieldError::invalid(
            &path.child("lendablePercent"),
            percent,
            "must be between 0 and 100, inclusive",
        ));
    }
}

/// A limited level's response to requests beyond its seats: rejection, or queues whose
/// shuffle sharding can be dealt.
fn validate_limit_response(response: &Value, path: &Path, errs: &mut FieldErrors) {
    let queuing = &response["queuing"];
    match str_of(response, "type") {
        "Reject" if !queuing.is_null() => errs.push(FieldError::forbidden(
            &path.child("queuing"),
            "must be nil if limited.limitResponse.type is not Limited",
        )),
        "Reject" => {}
        "Queue" if queuing.is_null() => errs.push(FieldError::required(
            &path.child("queuing"),
            "must not be empty if limited.limitResponse.type is Limited",
        )),
        "Queue" => validate_queuing(queuing, &path.child("queuing"), errs),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            ["Queue", "Reject"],
        )),
    }
}

fn validate_queuing(queuing: &Value, path: &Path, errs: &mut FieldErrors) {
    let number = |field: &str| queuing[field].as_i64().unwrap_or(0);
    let (limit, queues, hand) = (
        number("queueLengthLimit"),
        number("queues"),
        number("handSize"),
    );
    if limit <= 0 {
        let at = path.child("queueLengthLimit");
        errs.push(FieldError::invalid(&at, limit, "must be positive"));
    }
    if queues <= 0 {
        errs.push(FieldError::invalid(
            &path.child("queues"),
            queues,
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        let message = format!("must not be greater than {MAX_QUEUES}");
        errs.push(FieldError::invalid(&path.child("queues"), queues, &message));
    }
    let at = path.child("handSize");
    if hand <= 0 {
        errs.push(FieldError::invalid(&at, hand, "must be positive"));
    } else if hand > queues {
        let message = format!("should not be greater than queues ({queues})");
        errs.push(FieldError::invalid(&at, hand, &message));
    } else if entropy_bits(queues, hand) > MAX_HASH_BITS {
        let message = format!(
            "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
        );
        errs.push(FieldError::invalid(&at, hand, &message));
    }
}

/// The hash bits dealing `hand` of `deck` queues needs (upstream's `RequiredEntropyBits`:
/// the ceiling of log2(deck) × hand).
fn entropy_bits(deck: i64, hand: i64) -> i64 {
    ((deck as f64).log2() * hand as f64).ceil() as i64
}

/// ValidateFlowSchemaStatus / ValidatePriorityLevelConfigurationStatus: each condition has
/// a type, and no type twice.
fn validate_conditions(object: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut seen = std::collections::HashSet::new();
    for (i, condition) in items(object, "/status/conditions").iter().enumerate() {
        let at = Path::root("status")
            .child("conditions")
            .index(i)
            .child("type");
        let kind = str_of(condition, "type");
        if !seen.insert(kind) {
            errs.push(FieldError::duplicate(&at, kind));
        }
        if kind.is_empty() {
            errs.push(FieldError::required(&at, "must not be empty"));
        }
    }
    errs
}

/// How Go's `encoding/json` writes upstream's internal flow control structs, as its field
/// errors print a whole spec: the fields in declaration order under their Go names, absent
/// pointers and lists as `null`.
fn go_struct(fields: &[(&str, String)]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("\"{name}\":{value}"))
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn go_string(value: &Value) -> String {
    gofmt::json(&Value::from(value.as_str().unwrap_or_default()))
}

fn go_int(value: &Value) -> String {
    value.as_i64().unwrap_or(0).to_string()
}

fn go_optional_int(value: &Value) -> String {
    value.as_i64().map_or("null".to_string(), |n| n.to_string())
}

fn go_pointer(value: &Value, render: impl Fn(&Value) -> String) -> String {
    if value.is_object() {
        render(value)
    } else {
        "null".to_string()
    }
}

fn go_list(value: &Value, render: impl Fn(&Value) -> String) -> String {
    match value.as_array() {
        Some(list) => format!(
            "[{}]",
            list.iter().map(render).collect::<Vec<_>>().join(",")
        ),
        None => "null".to_string(),
    }
}

fn go_strings(value: &Value) -> String {
    go_list(value, go_string)
}

fn go_distinguisher(method: &Value) -> String {
    go_struct(&[("Type", go_string(&method["type"]))])
}

fn go_flow_schema_spec(spec: &Value) -> String {
    let name = |v: &Value| go_struct(&[("Name", go_string(&v["name"]))]);
    let subject = |v: &Value| {
        go_struct(&[
            ("Kind", go_string(&v["kind"])),
            ("User", go_pointer(&v["user"], name)),
            ("Group", go_pointer(&v["group"], name)),
            (
                "ServiceAccount",
                go_pointer(&v["serviceAccount"], |sa| {
                    go_struct(&[
                        ("Namespace", go_string(&sa["namespace"])),
                        ("Name", go_string(&sa["name"])),
                    ])
                }),
            ),
        ])
    };
    let resource_rule = |v: &Value| {
        go_struct(&[
            ("Verbs", go_strings(&v["verbs"])),
            ("APIGroups", go_strings(&v["apiGroups"])),
            ("Resources", go_strings(&v["resources"])),
            ("ClusterScope", (v["clusterScope"] == true).to_string()),
            ("Namespaces", go_strings(&v["namespaces"])),
        ])
    };
    let non_resource_rule = |v: &Value| {
        go_struct(&[
            ("Verbs", go_strings(&v["verbs"])),
            ("NonResourceURLs", go_strings(&v["nonResourceURLs"])),
        ])
    };
    let rule = |v: &Value| {
        go_struct(&[
            ("Subjects", go_list(&v["subjects"], subject)),
            ("ResourceRules", go_list(&v["resourceRules"], resource_rule)),
            (
                "NonResourceRules",
                go_list(&v["nonResourceRules"], non_resource_rule),
            ),
        ])
    };
    go_struct(&[
        (
            "PriorityLevelConfiguration",
            name(&spec["priorityLevelConfiguration"]),
        ),
        ("MatchingPrecedence", go_int(&spec["matchingPrecedence"])),
        (
            "DistinguisherMethod",
            go_pointer(&spec["distinguisherMethod"], go_distinguisher),
        ),
        ("Rules", go_list(&spec["rules"], rule)),
    ])
}

fn go_priority_level_spec(spec: &Value) -> String {
    let queuing = |v: &Value| {
        go_struct(&[
            ("Queues", go_int(&v["queues"])),
            ("HandSize", go_int(&v["handSize"])),
            ("QueueLengthLimit", go_int(&v["queueLengthLimit"])),
        ])
    };
    let limited = |v: &Value| {
        let response = &v["limitResponse"];
        go_struct(&[
            (
                "NominalConcurrencyShares",
                go_int(&v["nominalConcurrencyShares"]),
            ),
            (
                "LimitResponse",
                go_struct(&[
                    ("Type", go_string(&response["type"])),
                    ("Queuing", go_pointer(&response["queuing"], queuing)),
                ]),
            ),
            ("LendablePercent", go_optional_int(&v["lendablePercent"])),
            (
                "BorrowingLimitPercent",
                go_optional_int(&v["borrowingLimitPercent"]),
            ),
        ])
    };
    let exempt = |v: &Value| {
        go_struct(&[
            (
                "NominalConcurrencyShares",
                go_optional_int(&v["nominalConcurrencyShares"]),
            ),
            ("LendablePercent", go_optional_int(&v["lendablePercent"])),
        ])
    };
    go_struct(&[
        ("Type", go_string(&spec["type"])),
        ("Limited", go_pointer(&spec["limited"], limited)),
        ("Exempt", go_pointer(&spec["exempt"], exempt)),
    ])
}

fn flow_schema_table() -> TableConvertor {
    let mut convertor = table(
        vec![
            col(
                "PriorityLevel",
                "`name` is the name of the priority level configuration being referenced Required.",
            ),
            col(
                "MatchingPrecedence",
                "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request.",
            ),
            col(
                "DistinguisherMethod",
                "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema.",
            ),
            age(),
            col(
                "MissingPL",
                "references a broken or non-existent PriorityLevelConfiguration",
            ),
        ],
        flow_schema_cells,
    );
    convertor.order = Some(by_precedence);
    convertor
}

/// FlowSchemas in the order requests are matched: by matchingPrecedence, then name
/// (upstream's printer sorts its list rows so).
fn by_precedence(a: &Value, b: &Value) -> std::cmp::Ordering {
    let precedence = |schema: &Value| schema["spec"]["matchingPrecedence"].as_i64().unwrap_or(0);
    let name = |schema: &Value| {
        schema["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    precedence(a)
        .cmp(&precedence(b))
        .then_with(|| name(a).cmp(&name(b)))
}

/// NAME, PRIORITYLEVEL, MATCHINGPRECEDENCE, DISTINGUISHERMETHOD, AGE, MISSINGPL (the
/// status of the Dangling condition, `?` without it).
fn flow_schema_cells(schema: &Value) -> Vec<Value> {
    let method = match text_at(schema, "/spec/distinguisherMethod/type") {
        "" => "<none>",
        method => method,
    };
    let dangling = items(schema, "/status/conditions")
        .iter()
        .find(|c| str_of(c, "type") == "Dangling")
        .map_or("?", |c| str_of(c, "status"));
    vec![
        name_cell(schema),
        text(text_at(schema, "/spec/priorityLevelConfiguration/name")),
        Value::from(schema["spec"]["matchingPrecedence"].as_i64().unwrap_or(0)),
        text(method),
        age_cell(schema),
        text(dangling),
    ]
}

fn priority_level_table() -> TableConvertor {
    table(
        vec![
            col(
                "Type",
                "`type` indicates whether this priority level is subject to limitation on request execution.",
            ),
            col(
                "NominalConcurrencyShares",
                "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level.",
            ),
            col(
                "Queues",
                "`queues` is the number of queues for this priority level.",
            ),
            col(
                "HandSize",
                "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.",
            ),
            col(
                "QueueLengthLimit",
                "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time.",
            ),
            age(),
        ],
        priority_level_cells,
    )
}

/// NAME, TYPE, NOMINALCONCURRENCYSHARES, QUEUES, HANDSIZE, QUEUELENGTHLIMIT, AGE
/// (`<none>` where the level has no such setting).
fn priority_level_cells(level: &Value) -> Vec<Value> {
    let value = |pointer: &str| match level.pointer(pointer) {
        Some(v) if !v.is_null() => v.clone(),
        _ => text("<none>"),
    };
    let limited = level["spec"]["limited"].is_object();
    let queuing = |key: &str| {
        if limited {
            value(&format!("/spec/limited/limitResponse/queuing/{key}"))
        } else {
            text("<none>")
        }
    };
    vec![
        name_cell(level),
        text(text_at(level, "/spec/type")),
        if limited {
            value("/spec/limited/nominalConcurrencyShares")
        } else {
            text("<none>")
        },
        queuing("queues"),
        queuing("handSize"),
        queuing("queueLengthLimit"),
        age_cell(level),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};

    #[test]
    fn flow_schema_rules() {
        let strategy = strategies("FlowSchema").unwrap().strategy;
        let mut schema = json!({"metadata": {"name": "s"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}}, "status": {"conditions": []}});
        strategy.prepare_for_create(&mut schema);
        assert_eq!(schema["spec"]["matchingPrecedence"], 1000);
        assert_eq!(schema["metadata"]["generation"], 1);
        assert!(strategy.validate(&schema).is_empty());
        assert_eq!(
            flow_schema_cells(&schema)[1..4],
            [json!("global-default"), json!(1000), json!("<none>")]
        );
        let bad = json!({"metadata": {"name": "s"}, "spec": {"matchingPrecedence": 20000,
            "distinguisherMethod": {"type": "ByGroup"}, "rules": [{"subjects": [
                {"kind": "User"}, {"kind": "Group", "group": {"name": "g"}, "user": {"name": "u"}}, {"kind": "Robot"}]}]}});
        assert_eq!(
            causes(&strategy.validate(&bad)),
            expect(&[
                (
                    "spec.matchingPrecedence",
                    "FieldValueInvalid",
                    "Invalid value: 20000: must not be greater than 10000"
                ),
                (
                    "spec.distinguisherMethod.type",
                    "FieldValueNotSupported",
                    r#"Unsupported value: {"Type":"ByGroup"}: supported values: "ByNamespace", "ByUser""#
                ),
                (
                    "spec.priorityLevelConfiguration.name",
                    "FieldValueRequired",
                    "Required value: must reference a priority level"
                ),
                (
                    "spec.rules[0].subjects[0].user",
                    "FieldValueRequired",
                    "Required value: user is required when subject kind is 'User'"
                ),
                (
                    "spec.rules[0].subjects[1].user",
                    "FieldValueForbidden",
                    "Forbidden: user is forbidden when subject kind is not 'User'"
                ),
                (
                    "spec.rules[0].subjects[2].kind",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User""#
                ),
                (
                    "spec.rules[0]",
                    "FieldValueRequired",
                    "Required value: at least one of resourceRules and nonResourceRules has to be non-empty"
                ),
            ])
        );
        let first = json!({"metadata": {"name": "mine"}, "spec": {"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "global-default"}}});
        assert_eq!(
            causes(&strategy.validate(&first)),
            expect(&[(
                "spec.matchingPrecedence",
                "FieldValueInvalid",
                "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"
            )])
        );
    }

    #[test]
    fn priority_level_rules() {
        let strategy = strategies("PriorityLevelConfiguration").unwrap().strategy;
        let mut level = json!({"metadata": {"name": "l"}, "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}});
        strategy.prepare_for_create(&mut level);
        assert_eq!(
            level["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
                   "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        assert!(strategy.validate(&level).is_empty());
        assert_eq!(
            priority_level_cells(&level)[1..6],
            [json!("Limited"), json!(30), json!(64), json!(8), json!(50)]
        );
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        assert!(strategy.validate(&exempt).is_empty());
        assert_eq!(priority_level_cells(&exempt)[2], "<none>");
        assert_eq!(
            causes(&strategy.validate(&json!({"spec": {"type": "Limited"}}))),
            expect(&[(
                "spec.limited",
                "FieldValueRequired",
                "Required value: must not be empty when type is Limited"
            )])
        );
        // Queues that could not be dealt, shares below zero: upstream's messages.
        let queuing = |queues: i64, hand: i64, limit: i64| {
            json!({"metadata": {"name": "l"}, "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": -1, "borrowingLimitPercent": -2,
                "limitResponse": {"type": "Queue", "queuing": {
                    "queues": queues, "handSize": hand, "queueLengthLimit": limit}}}}})
        };
        // Upstream's order: the shares, the queuing, then the percentages.
        assert_eq!(
            causes(&strategy.validate(&queuing(20_000_000, 2, 0))),
            expect(&[
                (
                    "spec.limited.nominalConcurrencyShares",
                    "FieldValueInvalid",
                    "Invalid value: -1: must be a non-negative integer"
                ),
                (
                    "spec.limited.limitResponse.queuing.queueLengthLimit",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be positive"
                ),
                (
                    "spec.limited.limitResponse.queuing.queues",
                    "FieldValueInvalid",
                    "Invalid value: 20000000: must not be greater than 10000000"
                ),
                (
                    "spec.limited.borrowingLimitPercent",
                    "FieldValueInvalid",
                    "Invalid value: -2: if specified, must be a non-negative integer"
                ),
            ])
        );
        let hand = |queues, hand| {
            let errs = strategy.validate(&queuing(queues, hand, 1));
            causes(&errs)
                .into_iter()
                .find(|cause| cause.0 == "spec.limited.limitResponse.queuing.handSize")
                .map(|cause| cause.2)
        };
        assert_eq!(
            hand(7, 8).unwrap(),
            "Invalid value: 8: should not be greater than queues (7)"
        );
        assert_eq!(
            hand(1024, 7).unwrap(),
            "Invalid value: 7: required entropy bits of deckSize 1024 and handSize 7 should not be greater than 60"
        );
        assert_eq!(hand(1024, 6), None);
        // A Limited level with an exempt section: the exempt field is named first.
        let both = json!({"metadata": {"name": "l"}, "spec": {"type": "Limited", "exempt": {}}});
        assert_eq!(
            causes(&strategy.validate(&both))
                .iter()
                .map(|cause| cause.0.as_str())
                .collect::<Vec<_>>(),
            ["spec.exempt", "spec.limited"]
        );
    }

    /// The bootstrap object of that kind and name, defaulted as a write would be.
    fn mandatory(kind: &str, name: &str) -> Value {
        let objects = match kind {
            "FlowSchema" => bootstrap::mandatory_flow_schemas(),
            _ => bootstrap::mandatory_priority_levels(),
        };
        let mut object = objects
            .into_iter()
            .find(|o| bootstrap::name_of(o) == name)
            .unwrap();
        strategies(kind)
            .unwrap()
            .strategy
            .prepare_for_create(&mut object);
        object
    }

    #[test]
    fn the_mandatory_objects_specs_are_fixed() {
        let schemas = strategies("FlowSchema").unwrap().strategy;
        let levels = strategies("PriorityLevelConfiguration").unwrap().strategy;
        for name in ["exempt", "catch-all"] {
            assert!(schemas.validate(&mandatory("FlowSchema", name)).is_empty());
            let level = mandatory("PriorityLevelConfiguration", name);
            assert!(levels.validate(&level).is_empty(), "{name}");
        }
        // What Go cannot tell from its zero value is the same spec.
        let mut same = mandatory("FlowSchema", "catch-all");
        same["spec"]["rules"][0]["resourceRules"][0]["apiGroups"] = json!(["*"]);
        same["spec"]["rules"][0]["nonResourceRules"][0]["extra"] = json!(null);
        assert!(schemas.validate(&same).is_empty());

        let mut changed = mandatory("FlowSchema", "catch-all");
        changed["spec"]["matchingPrecedence"] = json!(9999);
        let errs = causes(&schemas.validate(&changed));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].0, "spec");
        assert!(
            errs[0].2.starts_with(r#"Invalid value: {"PriorityLevelConfiguration":{"Name":"catch-all"},"MatchingPrecedence":9999,"DistinguisherMethod":{"Type":"ByUser"},"Rules":[{"Subjects":[{"Kind":"Group","User":null,"Group":{"Name":"system:unauthenticated"},"ServiceAccount":null},"#),
            "{}",
            errs[0].2
        );
        assert!(
            errs[0]
                .2
                .ends_with(r#""NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":["*"]}]}]}: spec of 'catch-all' must equal the fixed value"#),
            "{}",
            errs[0].2
        );

        let mut shares = mandatory("PriorityLevelConfiguration", "catch-all");
        shares["spec"]["limited"]["nominalConcurrencyShares"] = json!(7);
        assert_eq!(
            causes(&levels.validate(&shares)),
            expect(&[(
                "spec",
                "FieldValueInvalid",
                r#"Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":7,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'catch-all' must equal the fixed value"#
            )])
        );
        // The exempt level's exempt field is the operator's; the rest is fixed.
        let mut exempt = mandatory("PriorityLevelConfiguration", "exempt");
        exempt["spec"]["exempt"]["nominalConcurrencyShares"] = json!(3);
        assert!(levels.validate(&exempt).is_empty());
        exempt["spec"]["limited"] = json!({"nominalConcurrencyShares": 1});
        let errs = causes(&levels.validate(&exempt));
        assert_eq!(
            errs.last().unwrap().2,
            r#"Invalid value: {"Type":"Exempt","Limited":{"NominalConcurrencyShares":1,"LimitResponse":{"Type":"","Queuing":null},"LendablePercent":null,"BorrowingLimitPercent":null},"Exempt":{"NominalConcurrencyShares":3,"LendablePercent":0}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#
        );
    }

    #[test]
    fn policy_rules_are_validated() {
        let strategy = strategies("FlowSchema").unwrap().strategy;
        let schema = |rule: Value| {
            let mut schema = json!({"metadata": {"name": "s"}, "spec": {
                "priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 0,
                "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "*", "name": "Bad Name"}}]}]}});
            let rule_object = schema["spec"]["rules"][0].as_object_mut().unwrap();
            rule_object.extend(rule.as_object().unwrap().clone());
            strategy.prepare_for_create(&mut schema);
            schema
        };
        let mut resources = schema(json!({"resourceRules": [
            {"verbs": [], "apiGroups": [], "resources": ["*", "pods"], "namespaces": ["*", "a"]},
            {"verbs": ["*", "get"], "apiGroups": ["", "*"], "resources": [], "namespaces": []},
            {"verbs": ["GET"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["Bad_NS"]},
            {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true}]}));
        // matchingPrecedence 0 is unset, as in Go.
        assert_eq!(resources["spec"]["matchingPrecedence"], 1000);
        resources["spec"]["distinguisherMethod"] = json!({});
        let rule = "spec.rules[0]";
        assert_eq!(
            causes(&strategy.validate(&resources)),
            expect(&[
                (
                    "spec.distinguisherMethod.type",
                    "FieldValueNotSupported",
                    r#"Unsupported value: {"Type":""}: supported values: "ByNamespace", "ByUser""#
                ),
                (
                    format!("{rule}.subjects[0].serviceAccount.name").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: "Bad Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
                ),
                (
                    format!("{rule}.subjects[0].serviceAccount.namespace").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: "*": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
                ),
                (
                    format!("{rule}.resourceRules[0].verbs").as_str(),
                    "FieldValueRequired",
                    "Required value: verbs must contain at least one value"
                ),
                (
                    format!("{rule}.resourceRules[0].apiGroups").as_str(),
                    "FieldValueRequired",
                    "Required value: resource rules must supply at least one api group"
                ),
                (
                    format!("{rule}.resourceRules[0].resources").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: ["*","pods"]: if '*' is present, must not specify other resources"#
                ),
                (
                    format!("{rule}.resourceRules[0].namespaces").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: ["*","a"]: if '*' is present, must not specify other namespaces"#
                ),
                (
                    format!("{rule}.resourceRules[1].verbs").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: ["*","get"]: if '*' is present, must not specify other verbs"#
                ),
                (
                    format!("{rule}.resourceRules[1].apiGroups").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: ["","*"]: if '*' is present, must not specify other api groups"#
                ),
                (
                    format!("{rule}.resourceRules[1].resources").as_str(),
                    "FieldValueRequired",
                    "Required value: resource rules must supply at least one resource"
                ),
                (
                    format!("{rule}.resourceRules[1].namespaces").as_str(),
                    "FieldValueRequired",
                    "Required value: resource rules that are not cluster scoped must supply at least one namespace"
                ),
                (
                    format!("{rule}.resourceRules[2].verbs").as_str(),
                    "FieldValueNotSupported",
                    r#"Unsupported value: ["GET"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch""#
                ),
                (
                    format!("{rule}.resourceRules[2].namespaces[0]").as_str(),
                    "FieldValueInvalid",
                    r#"Invalid value: "Bad_NS": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
                ),
            ])
        );
        let urls = schema(json!({"nonResourceRules": [
            {"verbs": ["get"], "nonResourceURLs": ["", "healthz", "/a b", "/a//b", "/a*", "/a/*/b/*", "/", "/a/*"]},
            {"verbs": ["get"], "nonResourceURLs": ["*", "/x"]},
            {"verbs": ["get"], "nonResourceURLs": []}]}));
        let messages: Vec<(String, String)> = causes(&strategy.validate(&urls))
            .into_iter()
            .filter(|cause| cause.0.contains("nonResource"))
            .map(|cause| (cause.0, cause.2))
            .collect();
        let at =
            |i: usize, url: usize| format!("{rule}.nonResourceRules[{i}].nonResourceURLs[{url}]");
        assert_eq!(
            messages,
            [
                (at(0, 0), r#"Invalid value: "": must not be empty"#.to_string()),
                (at(0, 1), r#"Invalid value: "healthz": must start with slash"#.to_string()),
                (at(0, 2), r#"Invalid value: "/a b": must not contain white-space"#.to_string()),
                (at(0, 3), r#"Invalid value: "/a//b": must not contain double slash"#.to_string()),
                (at(0, 4), r#"Invalid value: "/a*": wildcard can only do suffix matching"#.to_string()),
                (at(0, 5), r#"Invalid value: "/a/*/b/*": wildcard can only do suffix matching"#.to_string()),
                (
                    format!("{rule}.nonResourceRules[1].nonResourceURLs"),
                    r#"Invalid value: ["*","/x"]: if '*' is present, must not specify other non-resource URLs"#.to_string()
                ),
                (
                    format!("{rule}.nonResourceRules[2].nonResourceURLs"),
                    "Required value: nonResourceURLs must contain at least one value".to_string()
                ),
            ]
        );
    }

    #[test]
    fn status_writes_are_held_to_the_status_rules() {
        for kind in ["FlowSchema", "PriorityLevelConfiguration"] {
            let strategy = strategies(kind).unwrap().strategy;
            let old = json!({"metadata": {"name": "x"}, "spec": {}});
            let new = json!({"metadata": {"name": "x"}, "spec": {}, "status": {"conditions": [
                {"type": "Dangling", "status": "True"}, {"type": "Dangling"}, {"status": "False"}]}});
            assert_eq!(
                causes(&strategy.validate_subresource_update(&SubresourceKind::Status, &new, &old)),
                expect(&[
                    (
                        "status.conditions[1].type",
                        "FieldValueDuplicate",
                        r#"Duplicate value: "Dangling""#
                    ),
                    (
                        "status.conditions[2].type",
                        "FieldValueRequired",
                        "Required value: must not be empty"
                    ),
                ]),
                "{kind}"
            );
        }
    }
}
