//! Values in flow control validation messages as upstream prints them: field errors render
//! a whole spec as its JSON, and the internal flow control types carry no JSON tags. Their
//! layouts, written with [`StructJson`].

use kapi_apimachinery::gostruct::StructJson;
use serde_json::Value;

/// A `FlowDistinguisherMethod`.
pub(super) fn go_distinguisher(method: &Value) -> String {
    written(|out| distinguisher(out, method))
}

/// A `FlowSchemaSpec`.
pub(super) fn go_flow_schema_spec(spec: &Value) -> String {
    written(|out| {
        out.object(
            [
                "PriorityLevelConfiguration",
                "MatchingPrecedence",
                "DistinguisherMethod",
                "Rules",
            ],
            |out, field| match field {
                "PriorityLevelConfiguration" => name(out, &spec["priorityLevelConfiguration"]),
                "MatchingPrecedence" => out.int(&spec["matchingPrecedence"]),
                "DistinguisherMethod" => out.pointer(&spec["distinguisherMethod"], distinguisher),
                _ => out.list(&spec["rules"], rule),
            },
        )
    })
}

/// A `PriorityLevelConfigurationSpec`.
pub(super) fn go_priority_level_spec(spec: &Value) -> String {
    written(|out| {
        out.object(["Type", "Limited", "Exempt"], |out, field| match field {
            "Type" => out.text(&spec["type"]),
            "Limited" => out.pointer(&spec["limited"], limited),
            _ => out.pointer(&spec["exempt"], exempt),
        })
    })
}

fn written(write: impl FnOnce(&mut StructJson)) -> String {
    let mut out = StructJson::default();
    write(&mut out);
    out.finish()
}

fn distinguisher(out: &mut StructJson, method: &Value) {
    out.object(["Type"], |out, _| out.text(&method["type"]));
}

/// A `PriorityLevelConfigurationReference`, `UserSubject` or `GroupSubject`.
fn name(out: &mut StructJson, reference: &Value) {
    out.object(["Name"], |out, _| out.text(&reference["name"]));
}

/// A `PolicyRulesWithSubjects`.
fn rule(out: &mut StructJson, rule: &Value) {
    let fields = ["Subjects", "ResourceRules", "NonResourceRules"];
    out.object(fields, |out, field| match field {
        "Subjects" => out.list(&rule["subjects"], subject),
        "ResourceRules" => out.list(&rule["resourceRules"], resource_rule),
        _ => out.list(&rule["nonResourceRules"], non_resource_rule),
    });
}

fn subject(out: &mut StructJson, subject: &Value) {
    let fields = ["Kind", "User", "Group", "ServiceAccount"];
    out.object(fields, |out, field| match field {
        "Kind" => out.text(&subject["kind"]),
        "User" => out.pointer(&subject["user"], name),
        "Group" => out.pointer(&subject["group"], name),
        _ => out.pointer(&subject["serviceAccount"], |out, account| {
            out.object(["Namespace", "Name"], |out, field| match field {
                "Namespace" => out.text(&account["namespace"]),
                _ => out.text(&account["name"]),
            })
        }),
    });
}

fn resource_rule(out: &mut StructJson, rule: &Value) {
    let fields = [
        "Verbs",
        "APIGroups",
        "Resources",
        "ClusterScope",
        "Namespaces",
    ];
    out.object(fields, |out, field| match field {
        "Verbs" => out.strings(&rule["verbs"]),
        "APIGroups" => out.strings(&rule["apiGroups"]),
        "Resources" => out.strings(&rule["resources"]),
        "ClusterScope" => out.flag(&rule["clusterScope"]),
        _ => out.strings(&rule["namespaces"]),
    });
}

fn non_resource_rule(out: &mut StructJson, rule: &Value) {
    out.object(["Verbs", "NonResourceURLs"], |out, field| match field {
        "Verbs" => out.strings(&rule["verbs"]),
        _ => out.strings(&rule["nonResourceURLs"]),
    });
}

/// A `LimitedPriorityLevelConfiguration`.
fn limited(out: &mut StructJson, limited: &Value) {
    let fields = [
        "NominalConcurrencyShares",
        "LimitResponse",
        "LendablePercent",
        "BorrowingLimitPercent",
    ];
    out.object(fields, |out, field| match field {
        "NominalConcurrencyShares" => out.int(&limited["nominalConcurrencyShares"]),
        "LimitResponse" => {
            let response = &limited["limitResponse"];
            out.object(["Type", "Queuing"], |out, field| match field {
                "Type" => out.text(&response["type"]),
                _ => out.pointer(&response["queuing"], queuing),
            })
        }
        "LendablePercent" => out.optional_int(&limited["lendablePercent"]),
        _ => out.optional_int(&limited["borrowingLimitPercent"]),
    });
}

fn queuing(out: &mut StructJson, queuing: &Value) {
    let fields = ["Queues", "HandSize", "QueueLengthLimit"];
    out.object(fields, |out, field| match field {
        "Queues" => out.int(&queuing["queues"]),
        "HandSize" => out.int(&queuing["handSize"]),
        _ => out.int(&queuing["queueLengthLimit"]),
    });
}

/// An `ExemptPriorityLevelConfiguration`.
fn exempt(out: &mut StructJson, exempt: &Value) {
    let fields = ["NominalConcurrencyShares", "LendablePercent"];
    out.object(fields, |out, field| match field {
        "NominalConcurrencyShares" => out.optional_int(&exempt["nominalConcurrencyShares"]),
        _ => out.optional_int(&exempt["lendablePercent"]),
    });
}
