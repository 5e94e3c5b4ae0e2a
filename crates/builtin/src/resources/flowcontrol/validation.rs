//! FlowSchema and PriorityLevelConfiguration validation (upstream's
//! pkg/apis/flowcontrol/validation): the specs, their rules and subjects, the mandatory
//! objects' fixed specs, and the status.

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1123_subdomain, name_is_dns_subdomain, validate_namespace_name,
};
use serde_json::Value;

use super::gojson::{go_distinguisher, go_flow_schema_spec, go_priority_level_spec};
use crate::flowcontrol_bootstrap as bootstrap;
use crate::resources::common::{invalid_each, items, text_at};
use crate::util::str_of;

/// ValidateFlowSchemaSpec, in part: the precedence range, the priority level named, the
/// distinguisher method and the rules' subjects.
pub(super) fn validate_flow_schema(schema: &Value) -> FieldErrors {
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
        errs.push(FieldError::invalid_rendered(
            &path,
            go_flow_schema_spec(spec),
            format!("spec of '{name}' must equal the fixed value"),
        ));
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
        crate::resources::common::require_str(member, "name", &path.child(own), &mut errs);
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
pub(super) fn validate_priority_level(level: &Value) -> FieldErrors {
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
            errs.push(FieldError::invalid_rendered(
                &Path::root("spec"),
                go_priority_level_spec(spec),
                format!("{detail} must equal the fixed value"),
            ));
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
pub(super) fn validate_conditions(object: &Value) -> FieldErrors {
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
