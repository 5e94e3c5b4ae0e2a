use super::*;

/// Secrets: stringData folds into base64 data, the TYPE/DATA columns, type validation and
/// selection by type, immutability.
async fn secrets(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = create(
        &server,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  user: admin\n\
         data:\n  password: c2VjcmV0\n",
    )
    .await;
    assert_eq!(out, "secret/creds created\n");
    let out = server
        .kubectl_ok(&["get", "secret", "creds", "-o", "jsonpath={.data.user}"])
        .await;
    assert_eq!(out, "YWRtaW4=");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(out)
        .expect("base64");
    assert_eq!(decoded, b"admin");
    let object = get_json(&server, &["secret", "creds"]).await;
    assert_eq!(object["type"], "Opaque");
    assert!(object.get("stringData").is_none(), "{object}");
    assert_eq!(
        object["data"],
        serde_json::json!({"password": "c2VjcmV0", "user": "YWRtaW4="})
    );

    let tls_missing = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-tls\ntype: kubernetes.io/tls\n\
                       data: {}\n";
    let err = fails(&server, &["create", "-f", "-"], Some(tls_missing)).await;
    assert_eq!(
        err,
        "The Secret \"web-tls\" is invalid: \n* data[tls.crt]: Required value\n* \
         data[tls.key]: Required value\n"
    );
    create(
        &server,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-tls\ntype: kubernetes.io/tls\n\
         stringData:\n  tls.crt: cert\n  tls.key: key\n",
    )
    .await;

    let out = server.kubectl_ok(&["get", "secrets"]).await;
    assert_header(&out, &["NAME", "TYPE", "DATA", "AGE"]);
    let table = Table::parse(&out);
    assert_eq!(table.names(), ["creds", "web-tls"]);
    assert_eq!(table.row("creds")[1..3], ["Opaque", "2"]);
    assert_eq!(table.row("web-tls")[1..3], ["kubernetes.io/tls", "2"]);
    let out = server.kubectl_ok(&["get", "secrets", "-o", "wide"]).await;
    assert_header(&out, &["NAME", "TYPE", "DATA", "AGE"]);
    let out = server
        .kubectl_ok(&[
            "get",
            "secrets",
            "--field-selector",
            "type=kubernetes.io/tls",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out, "secret/web-tls\n");

    // The type cannot change; an immutable secret's data cannot either.
    let err = fails(
        &server,
        &[
            "patch",
            "secret",
            "creds",
            "--type=merge",
            "-p",
            r#"{"type":"example.com/other"}"#,
        ],
        None,
    )
    .await;
    assert_eq!(
        err,
        "The Secret \"creds\" is invalid: type: Invalid value: \"example.com/other\": field is \
         immutable\n"
    );
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sealed"},"immutable":true,"stringData":{"k":"v"}}"#,
    )
    .await;
    let err = fails(
        &server,
        &[
            "patch",
            "secret",
            "sealed",
            "-p",
            r#"{"stringData":{"k":"w"}}"#,
        ],
        None,
    )
    .await;
    assert_eq!(
        err,
        "The Secret \"sealed\" is invalid: data: Forbidden: field is immutable when `immutable` \
         is set\n"
    );

    // apply with stringData, then a changed value.
    let manifest = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  token: \
             {value}\n"
        )
    };
    let out = ok_stdin(&server, &["apply", "-f", "-"], &manifest("one")).await;
    assert_eq!(out, "secret/applied created\n");
    let out = ok_stdin(&server, &["apply", "-f", "-"], &manifest("two")).await;
    assert_eq!(out, "secret/applied configured\n");
    let out = server
        .kubectl_ok(&["get", "secret", "applied", "-o", "jsonpath={.data.token}"])
        .await;
    assert_eq!(out, "dHdv");
    server.stop().await;
}

/// ServiceAccounts: the SECRETS column, and strategic vs merge patch of the secrets list
/// (merged by name vs replaced).
async fn serviceaccounts(backend: Backend) {
    // Without the controller that gives each namespace its `default` account, the list holds
    // only this test's accounts.
    let server = TestServer::start(backend, &["--controllers=-serviceaccount-controller"]).await;
    let out = create(
        &server,
        r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"},"secrets":[{"name":"a"}]}"#,
    )
    .await;
    assert_eq!(out, "serviceaccount/robot created\n");
    create(
        &server,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: plain\n",
    )
    .await;
    let out = server.kubectl_ok(&["get", "sa"]).await;
    assert_header(&out, &["NAME", "SECRETS", "AGE"]);
    let table = Table::parse(&out);
    assert_eq!(table.names(), ["plain", "robot"]);
    assert_eq!(table.cell("robot", "SECRETS"), "1");
    assert_eq!(table.cell("plain", "SECRETS"), "0");
    let out = server
        .kubectl_ok(&["get", "serviceaccounts", "-o", "wide"])
        .await;
    assert_header(&out, &["NAME", "SECRETS", "AGE"]);

    let secret_names = |object: &Value| -> Vec<String> {
        let mut names: Vec<String> = object["secrets"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|s| s["name"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    server
        .kubectl_ok(&[
            "patch",
            "sa",
            "robot",
            "-p",
            r#"{"secrets":[{"name":"b"}]}"#,
        ])
        .await;
    let object = get_json(&server, &["sa", "robot"]).await;
    assert_eq!(secret_names(&object), ["a", "b"]);
    server
        .kubectl_ok(&[
            "patch",
            "sa",
            "robot",
            "--type=merge",
            "-p",
            r#"{"secrets":[{"name":"c"}],"automountServiceAccountToken":false}"#,
        ])
        .await;
    let object = get_json(&server, &["sa", "robot"]).await;
    assert_eq!(secret_names(&object), ["c"]);
    assert_eq!(object["automountServiceAccountToken"], false);

    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"Robot"}}"#),
    )
    .await;
    assert_eq!(
        err,
        format!(
            "The ServiceAccount \"Robot\" is invalid: metadata.name: Invalid value: \"Robot\": \
             {DNS1123_SUBDOMAIN}\n"
        )
    );
    let out = server.kubectl_ok(&["delete", "sa", "robot"]).await;
    assert_eq!(out, "serviceaccount \"robot\" deleted\n");
    server.stop().await;
}

/// Core v1 and events.k8s.io/v1 events: one store seen through both groups, the events
/// table, and field selectors.
async fn events(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let core = "apiVersion: v1\nkind: Event\nmetadata:\n  name: cm-changed\ninvolvedObject:\n  \
                apiVersion: v1\n  kind: ConfigMap\n  name: target\n  namespace: default\n\
                reason: Testing\nmessage: hello there\ntype: Normal\ncount: 3\n\
                firstTimestamp: \"2024-01-01T00:00:00Z\"\nlastTimestamp: \"2024-01-01T00:05:00Z\"\n\
                source:\n  component: tester\n";
    let out = create(&server, core).await;
    assert_eq!(out, "event/cm-changed created\n");
    let new = r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"note"},
        "eventTime":"2024-01-01T00:00:00.000000Z","reportingController":"example.com/ctl",
        "reportingInstance":"ctl-1","action":"Reconcile","reason":"Failed",
        "regarding":{"apiVersion":"v1","kind":"ConfigMap","name":"other","namespace":"default"},
        "note":"it went wrong","type":"Warning"}"#;
    let out = create(&server, new).await;
    assert_eq!(out, "event.events.k8s.io/note created\n");

    let out = server.kubectl_ok(&["get", "events"]).await;
    assert_header(&out, &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    let table = Table::parse(&out);
    let row = |reason: &str| -> Vec<String> {
        table
            .rows
            .iter()
            .find(|row| row[2] == reason)
            .unwrap_or_else(|| panic!("no event {reason} in:\n{out}"))
            .clone()
    };
    assert_eq!(
        row("Testing")[1..],
        ["Normal", "Testing", "configmap/target", "hello there"]
    );
    assert_eq!(
        row("Failed")[1..],
        ["Warning", "Failed", "configmap/other", "it went wrong"]
    );
    let out = server.kubectl_ok(&["get", "ev", "-o", "wide"]).await;
    assert_header(
        &out,
        &[
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME",
        ],
    );
    let table = Table::parse(&out);
    let by_name = |name: &str| -> Vec<String> {
        table
            .rows
            .iter()
            .find(|row| row.last().map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no event {name} in:\n{out}"))
            .clone()
    };
    assert_eq!(by_name("cm-changed")[5], "tester");
    assert_eq!(by_name("cm-changed")[8], "3");
    assert_eq!(by_name("note")[5], "example.com/ctl, ctl-1");
    assert_eq!(by_name("note")[8], "1");
    let out = server.kubectl_ok(&["get", "events.events.k8s.io"]).await;
    assert_header(&out, &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(Table::parse(&out).rows.len(), 2, "{out}");

    // The same objects through both groups.
    let as_new = get_json(&server, &["events.v1.events.k8s.io", "cm-changed"]).await;
    assert_eq!(as_new["apiVersion"], "events.k8s.io/v1");
    assert_eq!(as_new["note"], "hello there");
    assert_eq!(as_new["regarding"]["name"], "target");
    assert_eq!(as_new["deprecatedCount"], 3);
    let as_core = get_json(&server, &["events", "note"]).await;
    assert_eq!(as_core["apiVersion"], "v1");
    assert_eq!(as_core["message"], "it went wrong");
    assert_eq!(as_core["involvedObject"]["name"], "other");
    assert_eq!(as_core["reportingComponent"], "example.com/ctl");

    // Field selectors of core events.
    let select = |selector: &'static str| {
        let server = &server;
        async move {
            server
                .kubectl_ok(&["get", "events", "--field-selector", selector, "-o", "name"])
                .await
        }
    };
    assert_eq!(select("type=Warning").await, "event/note\n");
    assert_eq!(select("reason=Testing").await, "event/cm-changed\n");
    assert_eq!(select("involvedObject.name=other").await, "event/note\n");
    assert_eq!(
        select("involvedObject.kind=ConfigMap,source=tester").await,
        "event/cm-changed\n"
    );

    // Validation: an events.k8s.io event needs an eventTime.
    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(
            &new.replace("\"eventTime\":\"2024-01-01T00:00:00.000000Z\",", "")
                .replace("{\"name\":\"note\"}", "{\"name\":\"untimed\"}"),
        ),
    )
    .await;
    assert_eq!(
        err,
        "The Event \"untimed\" is invalid: eventTime: Required value\n"
    );
    server.stop().await;
}

/// Leases: the HOLDER column, renewals keep MicroTime precision, apply, validation.
async fn leases(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let manifest = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: node-1\n  \
                    namespace: kube-node-lease\nspec:\n  holderIdentity: node-1\n  \
                    leaseDurationSeconds: 40\n  renewTime: \"2024-01-01T00:00:00.123456Z\"\n";
    let out = create(&server, manifest).await;
    assert_eq!(out, "lease.coordination.k8s.io/node-1 created\n");
    let out = server
        .kubectl_ok(&["get", "leases", "-n", "kube-node-lease"])
        .await;
    assert_header(&out, &["NAME", "HOLDER", "AGE"]);
    assert_eq!(Table::parse(&out).cell("node-1", "HOLDER"), "node-1");
    let out = server
        .kubectl_ok(&["get", "lease", "-n", "kube-node-lease", "-o", "wide"])
        .await;
    assert_header(&out, &["NAME", "HOLDER", "AGE"]);
    let out = server
        .kubectl_ok(&["get", "leases.coordination.k8s.io", "-A"])
        .await;
    assert_header(&out, &["NAMESPACE", "NAME", "HOLDER", "AGE"]);
    let output = server.kubectl(&["get", "leases"]).await;
    assert!(output.status.success());
    assert_eq!(
        stderr(&output),
        "No resources found in default namespace.\n"
    );

    // A renewal.
    let out = server
        .kubectl_ok(&[
            "patch",
            "lease",
            "node-1",
            "-n",
            "kube-node-lease",
            "--type=merge",
            "-p",
            r#"{"spec":{"renewTime":"2024-01-01T00:00:10.654321Z"}}"#,
        ])
        .await;
    assert_eq!(out, "lease.coordination.k8s.io/node-1 patched\n");
    let out = server
        .kubectl_ok(&[
            "get",
            "lease",
            "node-1",
            "-n",
            "kube-node-lease",
            "-o",
            "jsonpath={.spec.renewTime} {.spec.leaseDurationSeconds}",
        ])
        .await;
    assert_eq!(out, "2024-01-01T00:00:10.654321Z 40");

    // apply: create, change the holder, re-apply.
    let applied = |holder: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: leader\nspec:\n  \
             holderIdentity: {holder}\n  leaseDurationSeconds: 15\n"
        )
    };
    let out = ok_stdin(&server, &["apply", "-f", "-"], &applied("a")).await;
    assert_eq!(out, "lease.coordination.k8s.io/leader created\n");
    let out = ok_stdin(&server, &["apply", "-f", "-"], &applied("b")).await;
    assert_eq!(out, "lease.coordination.k8s.io/leader configured\n");
    let out = server.kubectl_ok(&["get", "lease"]).await;
    assert_eq!(Table::parse(&out).cell("leader", "HOLDER"), "b");

    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0}}"#,
        ),
    )
    .await;
    assert_eq!(
        err,
        "The Lease \"bad\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be \
         greater than 0\n"
    );
    server.stop().await;
}

on_both_backends!(secrets, serviceaccounts, events, leases,);
