use super::*;

fn pod(spec: Value, status: Value) -> Value {
    json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
                     "labels": {"app": "web"}},
        "spec": spec,
        "status": status,
    })
}

#[test]
fn binding_assigns_an_unassigned_pod_once() {
    let none = (String::new(), String::new());
    let annotations = json!({"a": "b"});
    let labels = json!({"app": "db", "topology.k8s.io/zone": "z1"});
    let bound = bind(
        &pod(json!({}), json!({})),
        &none,
        "n1",
        (&annotations, &labels),
    )
    .unwrap();
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(bound["metadata"]["annotations"], json!({"a": "b"}));
    assert_eq!(bound["metadata"]["labels"], labels);
    let condition = &bound["status"]["conditions"][0];
    assert_eq!(
        (&condition["type"], &condition["status"]),
        (&json!("PodScheduled"), &json!("True"))
    );
    assert!(condition["lastTransitionTime"].is_string());
    assert_eq!(bound["metadata"]["resourceVersion"], "5");

    let cases = [
        (
            pod(json!({"nodeName": "n0"}), json!({})),
            none.clone(),
            409,
            r#"Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "n0""#,
        ),
        (
            pod(json!({"schedulingGates": [{"name": "g"}]}), json!({})),
            none.clone(),
            409,
            r#"Operation cannot be fulfilled on pods/binding "web": pod web has non-empty .spec.schedulingGates"#,
        ),
        (
            pod(json!({}), json!({})),
            ("u2".to_string(), String::new()),
            409,
            r#"Operation cannot be fulfilled on pods "web": Precondition failed: UID in precondition: u2, UID in object meta: u1"#,
        ),
    ];
    for (pod, preconditions, code, message) in cases {
        let err = bind(&pod, &preconditions, "n1", (&Value::Null, &Value::Null)).unwrap_err();
        assert_eq!((err.code(), err.message()), (code, message));
    }
    let mut deleting = pod(json!({}), json!({}));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let err = bind(&deleting, &none, "n1", (&Value::Null, &Value::Null)).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Operation cannot be fulfilled on pods/binding "web": pod web is being deleted, cannot be assigned to a host"#
    );
}

#[test]
fn bindings_must_target_a_named_node() {
    let errors = |binding: Value| -> Vec<String> {
        validate_binding(&binding)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert!(errors(json!({"target": {"name": "n1", "kind": "Node"}})).is_empty());
    assert_eq!(
        errors(json!({"target": {"kind": "Pod"}})),
        [
            r#"target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>""#,
            "target.name: Required value",
        ]
    );
    assert_eq!(
        aggregate_error(&validate_binding(&json!({"target": {}}))).message(),
        "target.name: Required value"
    );
}

fn budget(allowed: i64, status: Value) -> Value {
    let mut budget = json!({
        "metadata": {"name": "pdb", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                   "desiredHealthy": 2, "currentHealthy": 2},
    });
    if let (Some(target), Some(extra)) = (budget["status"].as_object_mut(), status.as_object()) {
        target.extend(extra.clone());
    }
    budget
}

#[test]
fn budgets_allow_evictions_while_disruptions_remain() {
    assert!(check_budget(&budget(1, json!({}))).is_ok());
    let err = check_budget(&budget(0, json!({}))).unwrap_err();
    assert_eq!(err.code(), 429);
    assert_eq!(err.reason(), "TooManyRequests");
    assert_eq!(
        err.message(),
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let cause = &err.status().details.as_ref().unwrap().causes[0];
    assert_eq!(cause.reason, "DisruptionBudget");
    assert_eq!(
        cause.message,
        "The disruption budget pdb needs 2 healthy pods and has 2 currently"
    );

    let err = check_budget(&budget(1, json!({"observedGeneration": 0}))).unwrap_err();
    let details = err.status().details.clone().unwrap();
    assert_eq!(details.retry_after_seconds, 10);
    assert_eq!(
        details.causes[0].message,
        "The disruption budget pdb is still being processed by the server."
    );

    let err = check_budget(&budget(-1, json!({}))).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            403,
            r#"poddisruptionbudget.policy "pdb" is forbidden: pdb disruptions allowed is negative"#
        )
    );

    let after = decremented(&budget(1, json!({})), "web");
    assert_eq!(after["status"]["disruptionsAllowed"], 0);
    assert!(after["status"]["disruptedPods"]["web"].is_string());
    assert_eq!(
        after["status"]["conditions"][0]["type"],
        "DisruptionAllowed"
    );
    assert_eq!(after["status"]["conditions"][0]["status"], "False");
}

#[test]
fn pods_not_running_or_not_ready_may_skip_the_budget() {
    for (phase, ignores) in [
        ("Pending", true),
        ("Succeeded", true),
        ("Failed", true),
        ("Running", false),
    ] {
        assert_eq!(
            can_ignore_budget(&pod(json!({}), json!({"phase": phase}))),
            ignores,
            "{phase}"
        );
    }
    let ready = pod(
        json!({}),
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
    );
    let unready = pod(json!({}), json!({"phase": "Running"}));
    assert!(!skips_budget(&ready, &budget(0, json!({}))));
    assert!(skips_budget(&unready, &budget(0, json!({}))));
    assert!(!skips_budget(
        &unready,
        &budget(0, json!({"currentHealthy": 1}))
    ));
    let mut always = budget(0, json!({"currentHealthy": 1}));
    always["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
    assert!(skips_budget(&unready, &always));
}

#[test]
fn eviction_delete_options_carry_the_preconditions() {
    let eviction = json!({"deleteOptions": {"preconditions": {"uid": "u1", "resourceVersion": ""},
                                            "dryRun": ["All"]}});
    let options = delete_options(&eviction, false);
    assert_eq!(options.precondition_uid.as_deref(), Some("u1"));
    assert_eq!(options.precondition_resource_version, None);
    assert!(options.dry_run);
}

#[test]
fn ephemeral_container_writes_take_only_the_ephemeral_containers() {
    let part = ephemeral_containers_part();
    let current = pod(
        json!({"containers": [{"name": "app", "image": "a"}]}),
        json!({"phase": "Running"}),
    );
    let mut written = current.clone();
    written["spec"]["containers"][0]["image"] = json!("b");
    written["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    written["status"] = json!({});
    let merged = (part.merge)(&current, &written);
    assert_eq!(merged["spec"]["containers"], current["spec"]["containers"]);
    assert_eq!(merged["status"], current["status"]);
    assert_eq!(
        merged["spec"]["ephemeralContainers"],
        written["spec"]["ephemeralContainers"]
    );
    assert!((part.validate)(&merged, &current).is_empty());

    let errors = |new: &Value, old: &Value| -> Vec<String> {
        (part.validate)(new, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let mut changed = merged.clone();
    changed["spec"]["ephemeralContainers"][0]["image"] = json!("other");
    assert_eq!(
        errors(&changed, &merged),
        [
            "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be changed\n"
        ]
    );
    assert_eq!(
        errors(&current, &merged),
        [
            "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be removed\n"
        ]
    );
    let mut clash = current.clone();
    clash["spec"]["ephemeralContainers"] = json!([{"name": "app"}]);
    assert_eq!(
        errors(&clash, &current),
        [
            "spec.ephemeralContainers[0].name: Duplicate value: \"app\"",
            "spec.ephemeralContainers[0].image: Required value",
        ]
    );
}

#[test]
fn resize_writes_take_only_resources_and_resize_policy() {
    let part = resize_part();
    let current = pod(
        json!({"containers": [{"name": "app", "image": "a", "resources": {"requests": {"cpu": "1"}}}]}),
        json!({"phase": "Running"}),
    );
    let mut written = current.clone();
    written["spec"]["containers"][0]["image"] = json!("b");
    written["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "2"}});
    written["spec"]["containers"][0]["resizePolicy"] =
        json!([{"resourceName": "cpu", "restartPolicy": "NotRequired"}]);
    let merged = (part.merge)(&current, &written);
    assert_eq!(merged["spec"]["containers"][0]["image"], "a");
    assert_eq!(
        merged["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "2"}})
    );
    assert_eq!(
        merged["spec"]["containers"][0]["resizePolicy"],
        written["spec"]["containers"][0]["resizePolicy"]
    );
    assert!((part.validate)(&merged, &current).is_empty());

    let done = pod(json!({"containers": []}), json!({"phase": "Succeeded"}));
    let errors: Vec<String> = (part.validate)(&done, &done)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        ["spec: Forbidden: pod resize may not be performed on terminated pods"]
    );
}
