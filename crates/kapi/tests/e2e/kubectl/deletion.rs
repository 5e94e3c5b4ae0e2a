use super::*;

/// Deleting a namespace with content: it turns Terminating, its content stays, new content
/// is forbidden; finalizing it (the namespace controller's last step) deletes it, which
/// `kubectl wait --for=delete` sees. System namespaces cannot be deleted.
async fn namespace_with_content_terminates(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = create(&server, &namespace("team")).await;
    assert_eq!(out, "namespace/team created\n");
    ok_stdin(
        &server,
        &["create", "-n", "team", "-f", "-"],
        &configmap("settings", &[("a", "1")]),
    )
    .await;
    let out = server.kubectl_ok(&["get", "ns", "team"]).await;
    assert_header(&out, &["NAME", "STATUS", "AGE"]);
    assert_eq!(Table::parse(&out).cell("team", "STATUS"), "Active");

    let out = server
        .kubectl_ok(&["delete", "ns", "team", "--wait=false"])
        .await;
    assert_eq!(out, "namespace \"team\" deleted\n");
    let out = server.kubectl_ok(&["get", "ns", "team"]).await;
    assert_eq!(Table::parse(&out).cell("team", "STATUS"), "Terminating");
    let object = get_json(&server, &["ns", "team"]).await;
    assert_eq!(object["status"]["phase"], "Terminating");
    assert!(
        object["metadata"]["deletionTimestamp"].is_string(),
        "{object}"
    );
    assert_eq!(
        object["spec"]["finalizers"],
        serde_json::json!(["kubernetes"])
    );

    // The content stays and can change; nothing new can be created.
    let out = server
        .kubectl_ok(&["get", "cm", "-n", "team", "-o", "name"])
        .await;
    assert_eq!(out, "configmap/settings\n");
    let out = server
        .kubectl_ok(&["label", "cm", "settings", "-n", "team", "still=here"])
        .await;
    assert_eq!(out, "configmap/settings labeled\n");
    let err = fails(
        &server,
        &["create", "-n", "team", "-f", "-"],
        Some(&configmap("late", &[])),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (Forbidden): error when creating \"STDIN\": configmaps \"late\" is \
         forbidden: unable to create new content in namespace team because it is being \
         terminated\n"
    );
    // Deleting it again changes nothing.
    let out = server
        .kubectl_ok(&["delete", "ns", "team", "--wait=false"])
        .await;
    assert_eq!(out, "namespace \"team\" deleted\n");

    // The namespace controller's last step: empty spec.finalizers through /finalize.
    let mut wait = Background::start(
        &server,
        &[
            "wait",
            "--for=delete",
            "namespace/team",
            "--timeout=60s",
            "-v=6",
        ],
    );
    wait.watching().await;
    let mut finalized = get_json(&server, &["ns", "team"]).await;
    finalized["spec"]["finalizers"] = serde_json::json!([]);
    ok_stdin(
        &server,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/team/finalize",
            "-f",
            "-",
        ],
        &finalized.to_string(),
    )
    .await;
    assert_eq!(wait.exit_code().await, Some(0), "{}", wait.stderr());
    assert_condition_met(&wait, "namespace/team");
    let err = fails(&server, &["get", "ns", "team"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): namespaces \"team\" not found\n"
    );

    for system in ["default", "kube-system", "kube-public"] {
        let err = fails(&server, &["delete", "ns", system], None).await;
        assert_eq!(
            err,
            format!(
                "Error from server (Forbidden): namespaces \"{system}\" is forbidden: this \
                 namespace may not be deleted\n"
            )
        );
    }
    server.stop().await;
}

/// `kubectl delete` by name, by selector, --all, of a missing object, with finalizers,
/// and `kubectl wait --for=delete`.
async fn delete_and_wait(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let objects: Vec<Value> = ["a", "b", "c", "d"]
        .iter()
        .map(|name| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"group": if *name < "c" { "one" } else { "two" }}}})
        })
        .collect();
    create(&server, &documents(&objects)).await;

    let out = server.kubectl_ok(&["delete", "cm", "a"]).await;
    assert_eq!(out, "configmap \"a\" deleted\n");
    let err = fails(&server, &["delete", "cm", "a"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"a\" not found\n"
    );
    let output = server
        .kubectl(&["delete", "cm", "a", "--ignore-not-found"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let out = server
        .kubectl_ok(&["delete", "cm", "b", "--dry-run=server"])
        .await;
    assert_eq!(out, "configmap \"b\" deleted (server dry run)\n");
    server.kubectl_ok(&["get", "cm", "b"]).await;
    let out = server
        .kubectl_ok(&["delete", "cm", "-l", "group=one"])
        .await;
    assert_eq!(out, "configmap \"b\" deleted\n");

    // wait --for=delete while another kubectl deletes.
    let mut wait = Background::start(
        &server,
        &["wait", "--for=delete", "cm/c", "--timeout=60s", "-v=6"],
    );
    wait.watching().await;
    server.kubectl_ok(&["delete", "cm", "c"]).await;
    assert_eq!(wait.exit_code().await, Some(0), "{}", wait.stderr());
    assert_condition_met(&wait, "configmap/c");

    // A finalizer holds the object, marked for deletion, until it is removed.
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}"#,
    )
    .await;
    let out = server
        .kubectl_ok(&["delete", "cm", "held", "--wait=false"])
        .await;
    assert_eq!(out, "configmap \"held\" deleted\n");
    let object = get_json(&server, &["cm", "held"]).await;
    assert!(
        object["metadata"]["deletionTimestamp"].is_string(),
        "{object}"
    );
    let output = server
        .kubectl(&["wait", "--for=delete", "cm/held", "--timeout=1s"])
        .await;
    assert_eq!(output.status.code(), Some(1));
    // client-go may log a reflector warning first when its one-second watch is cancelled.
    let said = stderr(&output);
    assert!(
        said.ends_with("error: timed out waiting for the condition on configmaps/held\n"),
        "{said}"
    );
    // Marking an object with a generation deleted bumps it, as upstream's markAsDeleting.
    server
        .kubectl_ok(&["create", "deployment", "held", "--image=nginx"])
        .await;
    let finalizer = r#"{"metadata":{"finalizers":["example.com/hold"]}}"#;
    server
        .kubectl_ok(&["patch", "deployment", "held", "-p", finalizer])
        .await;
    server
        .kubectl_ok(&["delete", "deployment", "held", "--wait=false"])
        .await;
    let object = get_json(&server, &["deployment", "held"]).await;
    assert_eq!(object["metadata"]["generation"], 2, "{object}");

    let mut wait = Background::start(
        &server,
        &["wait", "--for=delete", "cm/held", "--timeout=60s", "-v=6"],
    );
    wait.watching().await;
    server
        .kubectl_ok(&[
            "patch",
            "cm",
            "held",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .await;
    assert_eq!(wait.exit_code().await, Some(0), "{}", wait.stderr());
    assert_condition_met(&wait, "configmap/held");
    let err = fails(&server, &["get", "cm", "held"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"held\" not found\n"
    );

    // --all, and by file.
    create(&server, &configmap("e", &[])).await;
    let out = server.kubectl_ok(&["delete", "cm", "--all"]).await;
    assert_eq!(out, "configmap \"d\" deleted\nconfigmap \"e\" deleted\n");
    let output = server.kubectl(&["get", "cm"]).await;
    assert_eq!(
        stderr(&output),
        "No resources found in default namespace.\n"
    );
    let manifest = configmap("f", &[]);
    create(&server, &manifest).await;
    let out = ok_stdin(&server, &["delete", "-f", "-"], &manifest).await;
    assert_eq!(out, "configmap \"f\" deleted\n");
    server.stop().await;
}

/// `--dry-run=server` on every write verb: the answer looks like the real one, nothing is
/// stored.
async fn dry_run_server(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = ok_stdin(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        &configmap("dry", &[("a", "1")]),
    )
    .await;
    assert_eq!(out, "configmap/dry created (server dry run)\n");
    let err = fails(&server, &["get", "cm", "dry"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"dry\" not found\n"
    );
    let out = ok_stdin(
        &server,
        &["create", "-f", "-", "--dry-run=server", "-o", "json"],
        &configmap("dry", &[("a", "1")]),
    )
    .await;
    let object: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(object["metadata"]["name"], "dry");
    assert!(object["metadata"]["uid"].is_string(), "{object}");
    assert!(
        object["metadata"]["creationTimestamp"].is_string(),
        "{object}"
    );

    let out = ok_stdin(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        &namespace("dry-ns"),
    )
    .await;
    assert_eq!(out, "namespace/dry-ns created (server dry run)\n");
    fails(&server, &["get", "ns", "dry-ns"], None).await;

    create(&server, &configmap("real", &[("a", "1")])).await;
    let err = fails(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        Some(&configmap("real", &[])),
    )
    .await;
    assert!(err.contains("configmaps \"real\" already exists"), "{err}");
    let err = fails(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        Some(&configmap("Bad_Name", &[])),
    )
    .await;
    assert!(
        err.starts_with("The ConfigMap \"Bad_Name\" is invalid"),
        "{err}"
    );

    let out = ok_stdin(
        &server,
        &["apply", "-f", "-", "--dry-run=server"],
        &configmap("real", &[("a", "2")]),
    )
    .await;
    assert_eq!(out, "configmap/real configured (server dry run)\n");
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "real",
            "--dry-run=server",
            "-o",
            "jsonpath={.data.a}",
            "-p",
            r#"{"data":{"a":"3"}}"#,
        ])
        .await;
    assert_eq!(out, "3");
    let out = server
        .kubectl_ok(&["delete", "cm", "real", "--dry-run=server"])
        .await;
    assert_eq!(out, "configmap \"real\" deleted (server dry run)\n");
    // Admission runs on dry runs too: system namespaces refuse deletion.
    let err = fails(
        &server,
        &["delete", "ns", "default", "--dry-run=server"],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (Forbidden): namespaces \"default\" is forbidden: this namespace may \
         not be deleted\n"
    );
    let object = get_json(&server, &["cm", "real"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "1"}));
    assert!(object["metadata"]["annotations"].is_null(), "{object}");
    server.stop().await;
}

on_both_backends!(
    namespace_with_content_terminates,
    delete_and_wait,
    dry_run_server,
);
