//! API Priority and Fairness's bootstrap configuration (upstream's `bootstrap/default.go`):
//! part of the API, as the mandatory objects' specs are fixed by validation, and kept by
//! kapi-flowcontrol's configuration producer. Every object carries the annotation
//! `apf.kubernetes.io/autoupdate-spec: "true"` and no labels, and is written fully
//! defaulted, so that defaulting changes nothing in it.

use serde_json::{Value, json};

/// The annotation that says whether the producer keeps an object's spec.
pub const AUTOUPDATE_SPEC: &str = "apf.kubernetes.io/autoupdate-spec";

const API_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "annotations": {AUTOUPDATE_SPEC: "true"}},
        "spec": spec,
    })
}

fn queuing(name: &str, shares: i64, lendable: i64, queues: i64, hand_size: i64) -> Value {
    object(
        "PriorityLevelConfiguration",
        name,
        json!({
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": 50},
                },
                "lendablePercent": lendable,
            },
        }),
    )
}

/// The mandatory priority levels, in upstream's order: `catch-all`, `exempt`.
pub fn mandatory_priority_levels() -> Vec<Value> {
    vec![
        object(
            "PriorityLevelConfiguration",
            "catch-all",
            json!({
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 5,
                    "limitResponse": {"type": "Reject"},
                    "lendablePercent": 0,
                },
            }),
        ),
        object(
            "PriorityLevelConfiguration",
            "exempt",
            json!({
                "type": "Exempt",
                "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
            }),
        ),
    ]
}

/// The suggested priority levels, in upstream's order.
pub fn suggested_priority_levels() -> Vec<Value> {
    vec![
        queuing("system", 30, 33, 64, 6),
        queuing("node-high", 40, 25, 64, 6),
        queuing("leader-election", 10, 0, 16, 4),
        queuing("workload-high", 40, 50, 128, 6),
        queuing("workload-low", 100, 90, 128, 6),
        queuing("global-default", 20, 50, 128, 6),
    ]
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

fn kube_system_service_accounts() -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}})
}

/// Every verb on every resource, cluster-scoped and in every namespace.
fn all_resources() -> Value {
    json!([{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
        "clusterScope": true, "namespaces": ["*"],
    }])
}

fn all_non_resources() -> Value {
    json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}])
}

/// A FlowSchema of one rule.
fn schema(
    name: &str,
    precedence: i64,
    level: &str,
    distinguisher: Option<&str>,
    rule: Value,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rule],
    });
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    object("FlowSchema", name, spec)
}

/// A rule of `subjects` over everything.
fn everything(subjects: Value) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": all_resources(),
        "nonResourceRules": all_non_resources(),
    })
}

/// Everyone, authenticated or not.
fn everyone() -> Value {
    json!([
        group("system:unauthenticated"),
        group("system:authenticated")
    ])
}

/// The mandatory FlowSchemas, in upstream's order: `exempt`, `catch-all`.
pub fn mandatory_flow_schemas() -> Vec<Value> {
    vec![
        schema(
            "exempt",
            1,
            "exempt",
            None,
            everything(json!([group("system:masters")])),
        ),
        schema(
            "catch-all",
            10000,
            "catch-all",
            Some("ByUser"),
            everything(everyone()),
        ),
    ]
}

/// The suggested FlowSchemas, in upstream's order.
pub fn suggested_flow_schemas() -> Vec<Value> {
    let leases = json!({
        "verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
        "namespaces": ["*"],
    });
    vec![
        schema(
            "system-nodes",
            500,
            "system",
            Some("ByUser"),
            everything(json!([group("system:nodes")])),
        ),
        schema(
            "system-node-high",
            400,
            "node-high",
            Some("ByUser"),
            json!({
                "subjects": [group("system:nodes")],
                "resourceRules": [
                    {
                        "verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
                        "clusterScope": true, "namespaces": ["*"],
                    },
                    leases,
                ],
            }),
        ),
        schema(
            "probes",
            2,
            "exempt",
            None,
            json!({
                "subjects": everyone(),
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]},
                ],
            }),
        ),
        schema(
            "system-leader-election",
            100,
            "leader-election",
            Some("ByUser"),
            json!({
                "subjects": [
                    user("system:kube-controller-manager"),
                    user("system:kube-scheduler"),
                    kube_system_service_accounts(),
                ],
                "resourceRules": [{
                    "verbs": ["get", "create", "update"],
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "namespaces": ["*"],
                }],
            }),
        ),
        schema(
            "kube-controller-manager",
            800,
            "workload-high",
            Some("ByNamespace"),
            everything(json!([user("system:kube-controller-manager")])),
        ),
        schema(
            "kube-scheduler",
            800,
            "workload-high",
            Some("ByNamespace"),
            everything(json!([user("system:kube-scheduler")])),
        ),
        schema(
            "kube-system-service-accounts",
            900,
            "workload-high",
            Some("ByNamespace"),
            everything(json!([kube_system_service_accounts()])),
        ),
        schema(
            "service-accounts",
            9000,
            "workload-low",
            Some("ByUser"),
            everything(json!([group("system:serviceaccounts")])),
        ),
        schema(
            "global-default",
            9900,
            "global-default",
            Some("ByUser"),
            everything(everyone()),
        ),
    ]
}

/// The name of a bootstrap object.
pub fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}
