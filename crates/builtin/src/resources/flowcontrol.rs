//! flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration
//! (kubernetes/pkg/apis/flowcontrol/v1/defaults.go, pkg/apis/flowcontrol/validation,
//! pkg/registry/flowcontrol/*/strategy.go).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::is_dns1123_subdomain;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{
    age, col, default_field, invalid_each, items, object_at, table, text, text_at,
};
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
        validate_core(schema, validate_flow_schema(schema))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
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
        validate_core(level, validate_priority_level(level))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// SetDefaults_FlowSchemaSpec: the default matching precedence.
fn flow_schema_defaults(schema: &mut Value) {
    default_field(
        object_at(schema, "/spec"),
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
    if let Some(method) = spec
        .pointer("/distinguisherMethod/type")
        .and_then(Value::as_str)
        && !matches!(method, "ByUser" | "ByNamespace")
    {
        errs.push(FieldError {
            error_type: ErrorType::NotSupported,
            field: path.child("distinguisherMethod").child("type").to_string(),
            bad_value: Some(format!(r#"{{"Type":{}}}"#, Value::from(method))),
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
    errs
}

/// ValidateFlowSchemaPolicyRulesWithSubjects, in part: subjects and at least one rule.
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
    errs
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
        if kind == "ServiceAccount" && str_of(member, "namespace").is_empty() {
            errs.push(FieldError::required(
                &path.child(own).child("namespace"),
                "must specify namespace for service account",
            ));
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

/// ValidatePriorityLevelConfigurationSpec, in part: the type and the configuration it needs.
fn validate_priority_level(level: &Value) -> FieldErrors {
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
            if spec["limited"].is_null() {
                errs.push(FieldError::required(
                    &path.child("limited"),
                    "must not be empty when type is Limited",
                ));
            }
            if !spec["exempt"].is_null() {
                errs.push(FieldError::forbidden(
                    &path.child("exempt"),
                    "must be nil if the type is Limited",
                ));
            }
            let limited = path.child("limited");
            validate_shares(&spec["limited"], &limited, &mut errs);
            if let Some(percent) = spec
                .pointer("/limited/borrowingLimitPercent")
                .and_then(Value::as_i64)
                .filter(|p| *p < 0)
            {
                errs.push(FieldError::invalid(
                    &limited.child("borrowingLimitPercent"),
                    percent,
                    "if specified, must be a non-negative integer",
                ));
            }
            if spec["limited"].is_object() {
                let response = &spec["limited"]["limitResponse"];
                validate_limit_response(response, &limited.child("limitResponse"), &mut errs);
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

/// The shares and lendable percentage of an exempt or limited level.
fn validate_shares(config: &Value, path: &Path, errs: &mut FieldErrors) {
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
        assert_eq!(
            causes(&strategy.validate(&queuing(20_000_000, 2, 0))),
            expect(&[
                (
                    "spec.limited.nominalConcurrencyShares",
                    "FieldValueInvalid",
                    "Invalid value: -1: must be a non-negative integer"
                ),
                (
                    "spec.limited.borrowingLimitPercent",
                    "FieldValueInvalid",
                    "Invalid value: -2: if specified, must be a non-negative integer"
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
            ])
        );
        let hand = |queues, hand| {
            let errs = strategy.validate(&queuing(queues, hand, 1));
            causes(&errs).last().cloned()
        };
        assert_eq!(
            hand(7, 8).unwrap().2,
            "Invalid value: 8: should not be greater than queues (7)"
        );
        assert_eq!(
            hand(1024, 7).unwrap().2,
            "Invalid value: 7: required entropy bits of deckSize 1024 and handSize 7 should not be greater than 60"
        );
        assert_eq!(
            hand(1024, 6).unwrap().0,
            "spec.limited.borrowingLimitPercent"
        );
    }
}
