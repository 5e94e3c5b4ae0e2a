//! The flow control kinds' strategies, validation and tables against upstream's messages.

use super::*;
use crate::flowcontrol_bootstrap as bootstrap;
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
    let at = |i: usize, url: usize| format!("{rule}.nonResourceRules[{i}].nonResourceURLs[{url}]");
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
