//! API Priority and Fairness's bootstrap configuration through the real kubectl: the
//! mandatory and suggested FlowSchemas and priority levels exist with upstream's columns
//! (FlowSchemas in matching order), written once by the configuration producer; what the
//! producer keeps comes back when deleted or changed, what an operator opted out of (or
//! tuned) stays, and auto-managed objects the bootstrap lacks are removed. Every response
//! names the FlowSchema and priority level its request matched.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::process::{Client, Held, Kapi, Reply};
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
    // The hook finished before /readyz passed: every object is there at once.
    let at_once = get_json(&server, &["flowschemas"]).await;
    let at_once: Vec<String> = at_once["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|s| {
            s["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    // The consumer marks each FlowSchema's Dangling condition once the server serves (its
    // readiness does not wait for it, as upstream's does not).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let schemas = get_json(&server, &["flowschemas"]).await;
        let items = schemas["items"].as_array().expect("items");
        if items
            .iter()
            .all(|s| s["status"]["conditions"][0]["type"] == "Dangling")
        {
            break;
        }
        assert!(Instant::now() < deadline, "not marked: {schemas}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let schemas = rows(&server.kubectl_ok(&["get", "flowschemas"]).await);
    // (The table is in matching order, the list in name order.)
    let mut names: Vec<&String> = schemas[1..].iter().map(|row| &row[0]).collect();
    names.sort();
    assert_eq!(
        names,
        at_once.iter().collect::<Vec<_>>(),
        "all there at once"
    );
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
    // Every one names a priority level that exists: MISSINGPL is False.
    assert!(
        schemas[1..].iter().all(|row| row[5] == "False"),
        "{schemas:?}"
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
        let managers: Vec<(&str, &str, &str)> = object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                let field = |key: &str| entry[key].as_str().unwrap_or_default();
                (field("manager"), field("subresource"), field("operation"))
            })
            .collect();
        assert!(
            managers.contains(&("api-priority-and-fairness-config-producer-v1", "", "Update")),
            "{name}: {managers:?}"
        );
        if object["kind"] == "FlowSchema" {
            // Applied, as upstream's consumer applies it.
            let consumer = (
                "api-priority-and-fairness-config-consumer-v1",
                "status",
                "Apply",
            );
            assert!(managers.contains(&consumer), "{name}: {managers:?}");
            let dangling = &object["status"]["conditions"][0];
            assert_eq!(dangling["type"], "Dangling");
            assert_eq!(dangling["status"], "False");
            assert_eq!(dangling["reason"], "Found");
        }
    }

    // Deleted or changed, what the producer keeps comes back; the exempt level's shares are
    // the operator's to tune; a suggested object opted out stays as changed; the other
    // mandatory objects' specs cannot be changed.
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
    // A mandatory object's spec is fixed: the write is refused, as upstream refuses it.
    let refused = server
        .kubectl(&[
            "patch",
            "prioritylevelconfiguration",
            "catch-all",
            "--type=merge",
            "-p",
            r#"{"spec":{"limited":{"nominalConcurrencyShares":7}}}"#,
        ])
        .await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success()
            && stderr.contains(r#"The PriorityLevelConfiguration "catch-all" is invalid: spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":7,"#)
            && stderr.contains("spec of 'catch-all' must equal the fixed value"),
        "{stderr}"
    );
    patch(
        "prioritylevelconfiguration",
        "workload-low",
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
    // Rules are validated as upstream validates them.
    let bad = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: bad\nspec:\n  priorityLevelConfiguration: {name: global-default}\n  rules:\n  - subjects: [{kind: Group, group: {name: g}}]\n    nonResourceRules: [{verbs: [GET], nonResourceURLs: [healthz]}]\n";
    let refused = server
        .kubectl_stdin(&["create", "-f", "-"], Some(bad))
        .await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(r#"spec.rules[0].nonResourceRules[0].verbs: Unsupported value: ["GET"]: supported values: "create", "delete""#)
            && stderr.contains(r#"spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": must start with slash"#),
        "{stderr}"
    );
    ok_stdin(&server, &["create", "-f", "-"], &extra("mine", "")).await;
    let dangling = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: lost\nspec:\n  priorityLevelConfiguration: {name: nowhere}\n  matchingPrecedence: 6000\n  rules: []\n";
    ok_stdin(&server, &["create", "-f", "-"], dangling).await;
    let lost = wait_for(&server, &["get", "flowschema", "lost"], |fs| {
        fs["status"]["conditions"][0]["status"] == "True"
    })
    .await;
    assert_eq!(lost["status"]["conditions"][0]["reason"], "NotFound");
    assert_eq!(
        lost["status"]["conditions"][0]["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"nowhere\" but there is no such object"
    );

    wait_for(&server, &["get", "flowschema", "catch-all"], |fs| {
        fs["spec"]["matchingPrecedence"] == 10000
    })
    .await;
    wait_for(
        &server,
        &["get", "prioritylevelconfiguration", "workload-low"],
        |pl| pl["spec"]["limited"]["nominalConcurrencyShares"] == 100,
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

/// The UID of a flow control object, read as admin.
async fn uid(admin: &Client, resource: &str, name: &str) -> String {
    let path = format!("/apis/flowcontrol.apiserver.k8s.io/v1/{resource}/{name}");
    let object = admin.get(&path).await.json();
    object["metadata"]["uid"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_name_the_flow_schema_and_priority_level_their_request_matched() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let headers = |reply: &Reply| {
        (
            reply.header("x-kubernetes-pf-flowschema-uid").to_string(),
            reply
                .header("x-kubernetes-pf-prioritylevel-uid")
                .to_string(),
        )
    };
    let schemas = "flowschemas";
    let levels = "prioritylevelconfigurations";
    // system:masters: the exempt schema and level.
    let listed = admin.get("/api/v1/namespaces").await;
    let exempt = (
        uid(&admin, schemas, "exempt").await,
        uid(&admin, levels, "exempt").await,
    );
    assert_eq!(headers(&listed), exempt);
    // Health probes of anyone: probes, exempt.
    let probe = kapi.anonymous().get("/readyz").await;
    let probes = (uid(&admin, schemas, "probes").await, exempt.1.clone());
    assert_eq!(headers(&probe), probes);
    // An authenticated user: global-default, also on a refusal by authorization.
    let alice = kapi.user("alice", "developers");
    let refused = alice.get("/api/v1/namespaces/default/pods").await;
    assert_eq!(refused.status, 403);
    let global = (
        uid(&admin, schemas, "global-default").await,
        uid(&admin, levels, "global-default").await,
    );
    assert_eq!(headers(&refused), global);
    // A node: system-nodes, and node-high for its Node's status.
    let node = kapi.user("system:node:n1", "system:nodes");
    let read = node.get("/api/v1/namespaces/default/pods").await;
    let system_nodes = (
        uid(&admin, schemas, "system-nodes").await,
        uid(&admin, levels, "system").await,
    );
    assert_eq!(headers(&read), system_nodes);
    let status = node.get("/api/v1/nodes/n1/status").await;
    let node_high = (
        uid(&admin, schemas, "system-node-high").await,
        uid(&admin, levels, "node-high").await,
    );
    assert_eq!(headers(&status), node_high);
    kapi.stop().await;
}

/// Creates `body` at `path` as admin.
async fn create(admin: &Client, path: &str, body: Value) {
    let reply = admin.write(http::Method::POST, path, &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

/// alice's held create of ConfigMap `name` (see [`Held`]).
async fn hold(alice: &Client, name: &str) -> Held {
    let body = format!("{:<200}", format!(r#"{{"metadata":{{"name":"{name}"}}}}"#));
    alice
        .hold("/api/v1/namespaces/default/configmaps", &body)
        .await
}

/// A watch of default's ConfigMaps by `client`, open once its response began.
async fn open_watch(client: &Client) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut watch = client.connect().await.expect("connect");
    let head =
        "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: localhost\r\n\r\n";
    tokio::io::AsyncWriteExt::write_all(&mut watch, head.as_bytes())
        .await
        .expect("watch");
    let mut answer = vec![0u8; 256];
    let read = tokio::io::AsyncReadExt::read(&mut watch, &mut answer)
        .await
        .expect("read");
    let answer = String::from_utf8_lossy(&answer[..read]).to_string();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    watch
}

/// The value of the metric sample starting `prefix` (name and labels) in `/metrics`.
fn sample(metrics: &str, prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// Polls a debug table until the row of `level` has `cells` from its second cell on.
async fn wait_for_level(admin: &Client, level: &str, cells: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let dump = admin
            .get("/debug/api_priority_and_fairness/dump_priority_levels")
            .await
            .body;
        let row = dump.lines().find(|l| l.starts_with(&format!("{level},")));
        let found: Vec<&str> = row
            .map(|r| r.split(',').map(str::trim).collect())
            .unwrap_or_default();
        if found.len() > cells.len() && found[1..=cells.len()] == *cells {
            return dump;
        }
        assert!(
            Instant::now() < deadline,
            "{level} never had {cells:?}: {dump}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One user's flood fills its priority level's seats and its queue: a request that cannot
/// queue is refused at once with upstream's 429, one that waits past a quarter of its
/// timeout is refused then, and meanwhile another user's requests and `/readyz` go
/// through; the debug endpoints and metrics show it; once the seats are free, the queued
/// requests run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_queues_and_is_refused_while_others_go_through() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    create(&admin, &format!("{rbac}/clusterroles"), serde_json::json!({
        "metadata": {"name": "configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "watch"]}],
    }))
    .await;
    create(&admin, &format!("{rbac}/clusterrolebindings"), serde_json::json!({
        "metadata": {"name": "configmaps"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "configmaps"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "developers"}],
    }))
    .await;
    // alice's own level: one share of 600 seats (3), nothing lent or borrowed, one queue of
    // two.
    let flowcontrol = "/apis/flowcontrol.apiserver.k8s.io/v1";
    create(&admin, &format!("{flowcontrol}/prioritylevelconfigurations"), serde_json::json!({
        "metadata": {"name": "flood"},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 2}}}},
    }))
    .await;
    create(
        &admin,
        &format!("{flowcontrol}/flowschemas"),
        serde_json::json!({
            "metadata": {"name": "flood"},
            "spec": {"priorityLevelConfiguration": {"name": "flood"}, "matchingPrecedence": 500,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                        "namespaces": ["*"], "clusterScope": true}]}]},
        }),
    )
    .await;
    let flood_uid = uid(&admin, "flowschemas", "flood").await;
    let alice = kapi.user("alice", "developers");
    let probe = "/api/v1/namespaces/default/configmaps/missing";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = alice.get(probe).await;
        if reply.status == 404 && reply.header("x-kubernetes-pf-flowschema-uid") == flood_uid {
            break;
        }
        if Instant::now() >= deadline {
            let flood = admin
                .get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/flood")
                .await
                .body;
            panic!(
                "alice never reached her level: {} {:?} {flood} {}",
                reply.status,
                reply.headers,
                kapi.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let metrics = admin.get("/metrics").await.body;
    let limit = r#"apiserver_flowcontrol_current_limit_seats{priority_level="flood"}"#;
    assert_eq!(sample(&metrics, limit), Some(3.0), "{metrics}");
    let nominal = r#"apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"}"#;
    assert_eq!(sample(&metrics, nominal), Some(49.0));

    // Three held creates take the three seats.
    let mut held = Vec::new();
    for i in 0..3 {
        held.push(hold(&alice, &format!("held-{i}")).await);
    }
    wait_for_level(&admin, "flood", &["0", "false", "false", "0", "3"]).await;
    // A request waits a quarter of its timeout in the queue, then is refused.
    let started = Instant::now();
    let timed_out = alice.get(&format!("{probe}?timeout=4s")).await;
    assert_eq!(timed_out.status, 429, "{}", timed_out.body);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // Two more wait in the queue; the next cannot queue and is refused at once.
    for i in 3..5 {
        held.push(hold(&alice, &format!("held-{i}")).await);
    }
    let dump = wait_for_level(&admin, "flood", &["1", "false", "false", "2", "3"]).await;
    assert!(
        dump.starts_with("PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing,"),
        "{dump}"
    );
    let refused = alice.get(probe).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body, "Too many requests, please try again later.\n");
    assert_eq!(refused.header("content-type"), "text/plain; charset=utf-8");
    assert_eq!(refused.header("x-content-type-options"), "nosniff");
    let retry_after: u32 = refused.header("retry-after").parse().expect("Retry-After");
    assert!((1..=32).contains(&retry_after));
    assert_eq!(refused.header("x-kubernetes-pf-flowschema-uid"), flood_uid);
    assert_eq!(
        refused.header("x-kubernetes-pf-prioritylevel-uid"),
        uid(&admin, "prioritylevelconfigurations", "flood").await
    );
    // Everyone else goes through: another user, health probes, the admin.
    let bob = kapi.user("bob", "developers");
    assert_eq!(bob.get(probe).await.status, 404);
    // A watch holds its seats only until its initial events are sent.
    let watch = open_watch(&bob).await;
    let details = "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let requests = admin.get(details).await.body;
        if !requests.contains("bob") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "bob's watch kept its seat: {requests}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(kapi.anonymous().get("/readyz").await.status, 200);
    assert_eq!(admin.get("/api/v1/namespaces").await.status, 200);
    // The debug tables: the queue holds two, alice's requests among those executing.
    let queues = admin
        .get("/debug/api_priority_and_fairness/dump_queues")
        .await
        .body;
    let row = queues
        .lines()
        .find(|l| l.starts_with("flood,"))
        .expect("flood's queue");
    let cells: Vec<&str> = row.split(',').map(str::trim).collect();
    assert_eq!(cells[1..5], ["0", "2", "3", "3"], "{queues}");
    let requests = admin
        .get("/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1")
        .await
        .body;
    let alices: Vec<&str> = requests
        .lines()
        .filter(|l| l.starts_with("flood,"))
        .collect();
    assert_eq!(alices.len(), 5, "{requests}");
    drop(watch);
    assert!(
        alices
            .iter()
            .all(|l| l.contains("alice") && l.contains("create")),
        "{requests}"
    );
    assert_eq!(
        kapi.user("carol", "developers")
            .get("/debug/api_priority_and_fairness/dump_queues")
            .await
            .status,
        403
    );
    // Upstream's watermarks: the most requests waiting (and executing) in the last second.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = admin.get("/metrics").await.body;
        let waiting = sample(
            &metrics,
            r#"apiserver_current_inqueue_requests{request_kind="mutating"}"#,
        );
        let executing = sample(
            &metrics,
            r#"apiserver_current_inflight_requests{request_kind="mutating"}"#,
        );
        if waiting == Some(2.0) && executing.is_some_and(|n| n >= 3.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "waiting {waiting:?}, executing {executing:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics = admin.get("/metrics").await.body;
    let labels = r#"{priority_level="flood",flow_schema="flood""#;
    let count = |name: &str, rest: &str| sample(&metrics, &format!("{name}{labels}{rest}"));
    let rejected = "apiserver_flowcontrol_rejected_requests_total";
    assert_eq!(
        count(rejected, r#",reason="queue-full"}"#),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(count(rejected, r#",reason="time-out"}"#), Some(1.0));
    assert_eq!(
        count("apiserver_flowcontrol_current_inqueue_requests", "}"),
        Some(2.0)
    );
    assert_eq!(
        count("apiserver_flowcontrol_current_executing_requests", "}"),
        Some(3.0)
    );
    // Each queued request saw its queue's length. Its head found every seat taken, which
    // upstream does not count as no accommodation (seats free, but too few).
    let enqueued = count(
        "apiserver_flowcontrol_request_queue_length_after_enqueue_count",
        "}",
    );
    assert!(enqueued.is_some_and(|n| n >= 2.0), "{metrics}");
    let unaccommodated = count(
        "apiserver_flowcontrol_request_dispatch_no_accommodation_total",
        "}",
    );
    assert_eq!(unaccommodated, Some(0.0), "{metrics}");
    let dropped = r#"apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver",code="429"}"#;
    assert_eq!(sample(&metrics, dropped), Some(2.0));
    let terminated = r#"apiserver_request_terminations_total{verb="GET",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver",code="429"}"#;
    assert_eq!(sample(&metrics, terminated), Some(2.0), "{metrics}");

    // Freed seats go to the queue: every held create is answered.
    for request in held {
        assert_eq!(request.release().await, "HTTP/1.1 201 Created");
    }
    wait_for_level(&admin, "flood", &["0", "true", "false", "0", "0"]).await;
    // The level's progress in virtual time, as of the queued requests' dispatches.
    let metrics = admin.get("/metrics").await.body;
    let level = |name: &str, rest: &str| {
        let found = sample(
            &metrics,
            &format!(r#"apiserver_flowcontrol_{name}{{priority_level="flood"{rest}}}"#),
        );
        found.unwrap_or_else(|| panic!("{name}{rest}: {metrics}"))
    };
    let (r, dispatch_r) = (level("current_r", ""), level("dispatch_r", ""));
    assert!(
        r > 0.0 && dispatch_r > 0.0 && dispatch_r <= r,
        "{r} {dispatch_r}"
    );
    let (s_min, s_max) = (
        level("next_s_bounds", r#",bound="min""#),
        level("next_s_bounds", r#",bound="max""#),
    );
    assert!(
        s_min <= s_max && level("latest_s", "") >= s_min,
        "{metrics}"
    );
    let discounted = level("next_discounted_s_bounds", r#",bound="min""#);
    assert!(discounted <= s_min, "{metrics}");
    assert_eq!(level("epoch_advance_total", r#",success="true""#), 0.0);
    kapi.stop().await;
}

/// A mutation is estimated by the watches its event will reach (upstream's mutating work
/// estimator and watch tracker): with 25 watches of a namespace's ConfigMaps open (and the
/// few the in-process controllers keep), each create there of a user in a queuing level
/// counts them and takes three seats (one per ten watches) for its events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_are_estimated_by_the_watches_they_reach() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let binding = json!({
        "metadata": {"name": "alice-edits"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    });
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    create(&admin, bindings, binding).await;
    let mut watches = Vec::new();
    for _ in 0..25 {
        watches.push(open_watch(&admin).await);
    }
    let alice = kapi.user("alice", "developers");
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut created = 0;
    while created < 2 {
        let body = json!({"metadata": {"name": format!("cm-{created}")}});
        match alice
            .write(http::Method::POST, configmaps, &body)
            .await
            .status
        {
            201 => created += 1,
            status => assert!(Instant::now() < deadline, "alice's create: {status}"),
        }
    }
    let metrics = admin.get("/metrics").await.body;
    let labels = r#"{priority_level="global-default",flow_schema="global-default"}"#;
    let value = |name: &str| sample(&metrics, &format!("{name}{labels}")).expect(name);
    let creates = value("apiserver_flowcontrol_watch_count_samples_count");
    assert!(creates >= 2.0, "{metrics}");
    // The test's 25 watches, and the in-process controllers' own of every ConfigMap.
    let watched = value("apiserver_flowcontrol_watch_count_samples_sum");
    assert!(
        (25.0 * creates..=30.0 * creates).contains(&watched),
        "{watched} watches for {creates} creates"
    );
    let seats = value("apiserver_flowcontrol_work_estimated_seats_sum");
    assert_eq!(seats, 3.0 * creates, "{metrics}");
    // The timing ratios: nanoseconds observed, so far, of each level's utilization and
    // demand, and of read-only and mutating requests.
    for observed in [
        r#"apiserver_flowcontrol_priority_level_seat_utilization_count{phase="executing",priority_level="global-default"}"#,
        r#"apiserver_flowcontrol_priority_level_request_utilization_count{phase="waiting",priority_level="global-default"}"#,
        r#"apiserver_flowcontrol_demand_seats_count{priority_level="global-default"}"#,
        r#"apiserver_flowcontrol_read_vs_write_current_requests_count{phase="executing",request_kind="mutating"}"#,
    ] {
        assert!(
            sample(&metrics, observed).is_some_and(|ns| ns > 0.0),
            "{observed}: {metrics}"
        );
    }
    // Mutations over the levels' nominal limits summed (600 seats): a few executing are
    // below 1%, all the time observed.
    let executing = r#"apiserver_flowcontrol_read_vs_write_current_requests_sum{phase="executing",request_kind="mutating"}"#;
    assert!(
        sample(&metrics, executing).is_some_and(|sum| sum > 0.0),
        "{metrics}"
    );
    let observed = r#"apiserver_flowcontrol_read_vs_write_current_requests_count{phase="executing",request_kind="mutating"}"#;
    let below_one_percent = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_flowcontrol_read_vs_write_current_requests_bucket{")
                && l.contains(r#"phase="executing",request_kind="mutating""#)
                && l.contains(r#"le="0.01""#)
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    assert_eq!(below_one_percent, sample(&metrics, observed), "{metrics}");
    drop(watches);
    kapi.stop().await;
}
