//! Values in flow control validation messages as upstream prints them: field errors render
//! a whole spec as its JSON, and the internal flow control types carry no JSON tags.

use kapi_apimachinery::gofmt;
use serde_json::Value;

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

pub(super) fn go_distinguisher(method: &Value) -> String {
    go_struct(&[("Type", go_string(&method["type"]))])
}

pub(super) fn go_flow_schema_spec(spec: &Value) -> String {
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

pub(super) fn go_priority_level_spec(spec: &Value) -> String {
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
