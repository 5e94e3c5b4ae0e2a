//! flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration
//! (kubernetes/pkg/apis/flowcontrol/v1/defaults.go, pkg/apis/flowcontrol/validation,
//! pkg/registry/flowcontrol/*/strategy.go).

use std::sync::Arc;

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::resource::{Strategy, SubresourceKind, TableConvertor};
use serde_json::{Value, json};

use super::common::{age, col, default_field, items, object_at, table, text, text_at};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{
    reset_status, start_generation, track_generation, validate_core, validate_core_update,
};
use crate::util::str_of;
use validation::{validate_conditions, validate_flow_schema, validate_priority_level};

mod gojson;
mod validation;

/// The matching precedence of a FlowSchema that sets none.
const DEFAULT_MATCHING_PRECEDENCE: i64 = 1000;
/// The nominal concurrency shares of a Limited priority level that sets none.
const DEFAULT_NOMINAL_CONCURRENCY_SHARES: i64 = 30;

/// The strategies of the flow control kinds.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "FlowSchema" => (Arc::new(FLOW_SCHEMA), flow_schema_table()),
        "PriorityLevelConfiguration" => (Arc::new(PRIORITY_LEVEL), priority_level_table()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// flowSchemaStrategy (pkg/registry/flowcontrol/flowschema/strategy.go).
const FLOW_SCHEMA: FlowControlStrategy = FlowControlStrategy {
    defaults: flow_schema_defaults,
    validate_object: validate_flow_schema,
};

/// priorityLevelConfigurationStrategy
/// (pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go).
const PRIORITY_LEVEL: FlowControlStrategy = FlowControlStrategy {
    defaults: priority_level_defaults,
    validate_object: validate_priority_level,
};

/// The strategy of a flow control kind: upstream's two differ only in their defaults and
/// their validation of the object.
struct FlowControlStrategy {
    defaults: fn(&mut Value),
    validate_object: fn(&Value) -> FieldErrors,
}

impl Strategy for FlowControlStrategy {
    fn default(&self, object: &mut Value) {
        (self.defaults)(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        reset_status(object);
        (self.defaults)(object);
        start_generation(object);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        (self.defaults)(new);
        track_generation(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = (self.validate_object)(object);
        errs.extend(validate_conditions(object));
        validate_core(object, errs)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    /// ValidateFlowSchemaStatusUpdate and ValidatePriorityLevelConfigurationStatusUpdate: a
    /// status write is held to the status rules only.
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
mod tests;
