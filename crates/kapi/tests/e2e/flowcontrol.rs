//! API Priority and Fairness's bootstrap configuration through the real kubectl: the
//! mandatory and suggested FlowSchemas and priority levels exist with upstream's columns
//! (FlowSchemas in matching order), written once by the configuration producer; what the
//! producer keeps comes back when deleted or changed, what an operator opted out of (or
//! tuned) stays, and auto-managed objects the bootstrap lacks are removed.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Backend, TestServer, cells, get_json, ok_stdin};

/// Polls `kubectl get <args> -o json` until `done` accepts it.
async fn wait_for(server: &TestServer, args: &[&str], done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut with_json = args.to_vec();
        with_json.extend(["-o", "json"]);
        let output = server.kubectl(&with_json).await;
        let value: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        if done(&value) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl get {args:?} never got there: {value}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The rows of a `kubectl get` table, as cells.
fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().map(cells).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrap_configuration_is_kept_as_upstreams_producer_keeps_it() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    // The hook finished before /readyz passed: everything is there at once.
    let schemas = rows(&server.kubectl_ok(&["get", "flowschemas"]).await);
    assert_eq!(
        schemas[0],
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    let order: Vec<(&str, &str, &str, &str)> = schemas[1..]
        .iter()
        .map(|row| {
            (
                row[0].as_str(),
                row[1].as_str(),
                row[2].as_str(),
                row[3].as_str(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("exempt", "exempt", "1", "<none>"),
            ("probes", "exempt", "2", "<none>"),
            ("system-leader-election", "leader-election", "100", "ByUser"),
            ("system-node-high", "node-high", "400", "ByUser"),
            ("system-nodes", "system", "500", "ByUser"),
            (
                "kube-controller-manager",
                "workload-high",
                "800",
                "ByNamespace"
            ),
            ("kube-scheduler", "workload-high", "800", "ByNamespace"),
            (
                "kube-system-service-accounts",
                "workload-high",
                "900",
                "ByNamespace"
            ),
            ("service-accounts", "workload-low", "9000", "ByUser"),
            ("global-default", "global-default", "9900", "ByUser"),
            ("catch-all", "catch-all", "10000", "ByUser"),
        ]
    );
    let levels = rows(
        &server
            .kubectl_ok(&["get", "prioritylevelconfigurations"])
            .await,
    );
    assert_eq!(
        levels[0],
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    let shown: Vec<Vec<&str>> = levels[1..]
        .iter()
        .map(|row| row[..6].iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        shown,
        [
            ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"],
            ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"],
            ["global-default", "Limited", "20", "128", "6", "50"],
            ["leader-election", "Limited", "10", "16", "4", "50"],
            ["node-high", "Limited", "40", "64", "6", "50"],
            ["system", "Limited", "30", "64", "6", "50"],
            ["workload-high", "Limited", "40", "128", "6", "50"],
            ["workload-low", "Limited", "100", "128", "6", "50"],
        ]
    );

    // Written once by the producer, annotated to be kept, and left alone since.
    let before = get_json(
        &server,
        &[
            "flowschemas,prioritylevelconfigurations",
            "--show-managed-fields",
        ],
    )
    .await;
    for object in before["items"].as_array().unwrap() {
        let name = &object["metadata"]["name"];
        assert_eq!(object["metadata"]["generation"], 1, "{name}");
        assert_eq!(
            object["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
            "true"
        );
        assert_eq!(
            object["metadata"]["managedFields"][0]["manager"],
            "api-priority-and-fairness-config-producer-v1"
        );
    }

    // Deleted or changed, what the producer keeps comes back; the exempt level's shares are
    // the operator's to tune; a suggested object opted out stays as changed.
    server
        .kubectl_ok(&["delete", "flowschema", "catch-all"])
        .await;
    let patch = |kind: &'static str, name: &'static str, patch: &'static str| {
        let server = &server;
        async move {
            server
                .kubectl_ok(&["patch", kind, name, "--type=merge", "-p", patch])
                .await
        }
    };
    patch(
        "prioritylevelconfiguration",
        "catch-all",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":7}}}"#,
    )
    .await;
    patch(
        "prioritylevelconfiguration",
        "exempt",
        r#"{"spec":{"exempt":{"nominalConcurrencyShares":3}}}"#,
    )
    .await;
    patch("flowschema", "global-default", r#"{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}},"spec":{"matchingPrecedence":9800}}"#).await;
    patch(
        "flowschema",
        "service-accounts",
        r#"{"spec":{"matchingPrecedence":9100}}"#,
    )
    .await;
    // Auto-managed objects the bootstrap does not have are removed; others are not.
    let extra = |name: &str, annotation: &str| {
        format!(
            "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: {name}\n{annotation}spec:\n  priorityLevelConfiguration: {{name: global-default}}\n  matchingPrecedence: 5000\n  rules: []\n"
        )
    };
    let managed = extra(
        "obsolete",
        "  annotations: {apf.kubernetes.io/autoupdate-spec: \"true\"}\n",
    );
    ok_stdin(&server, &["create", "-f", "-"], &managed).await;
    ok_stdin(&server, &["create", "-f", "-"], &extra("mine", "")).await;

    wait_for(&server, &["get", "flowschema", "catch-all"], |fs| {
        fs["spec"]["matchingPrecedence"] == 10000
    })
    .await;
    wait_for(
        &server,
        &["get", "prioritylevelconfiguration", "catch-all"],
        |pl| pl["spec"]["limited"]["nominalConcurrencyShares"] == 5,
    )
    .await;
    wait_for(&server, &["get", "flowschema", "service-accounts"], |fs| {
        fs["spec"]["matchingPrecedence"] == 9000
    })
    .await;
    wait_for(&server, &["get", "flowschemas"], |list| {
        let names: Vec<&str> = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["metadata"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        !names.contains(&"obsolete") && names.contains(&"mine")
    })
    .await;
    let exempt = get_json(&server, &["prioritylevelconfiguration", "exempt"]).await;
    assert_eq!(exempt["spec"]["exempt"]["nominalConcurrencyShares"], 3);
    let global = get_json(&server, &["flowschema", "global-default"]).await;
    assert_eq!(global["spec"]["matchingPrecedence"], 9800);
    assert_eq!(
        global["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "false"
    );
    server.stop().await;
}
