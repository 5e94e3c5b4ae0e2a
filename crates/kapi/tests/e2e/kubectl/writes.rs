use super::*;

/// `kubectl apply`: create, unchanged, change and re-apply (three-way: keys removed from
/// the manifest go, changes made by others stay), server dry run and diff.
async fn apply_create_change_reapply(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let first = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    \
                 app: demo\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    let out = ok_stdin(&server, &["apply", "-f", "-"], first).await;
    assert_eq!(out, "configmap/settings created\n");
    let object = get_json(&server, &["cm", "settings"]).await;
    let applied: Value = serde_json::from_str(
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("last-applied annotation"),
    )
    .expect("last-applied is JSON");
    assert_eq!(applied["data"], serde_json::json!({"a": "1", "b": "2"}));
    let out = ok_stdin(&server, &["apply", "-f", "-"], first).await;
    assert_eq!(out, "configmap/settings unchanged\n");

    // Someone else labels it; the next apply keeps that label.
    server
        .kubectl_ok(&["label", "cm", "settings", "owner=ops"])
        .await;
    let second = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    \
                  app: demo\ndata:\n  a: \"changed\"\n  c: \"3\"\n";
    let output = server
        .kubectl_stdin(&["diff", "-f", "-"], Some(second))
        .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let diff = stdout(&output);
    assert!(diff.contains("\n-  a: \"1\"\n"), "{diff}");
    assert!(diff.contains("\n+  a: changed\n"), "{diff}");
    let out = ok_stdin(&server, &["apply", "-f", "-", "--dry-run=server"], second).await;
    assert_eq!(out, "configmap/settings configured (server dry run)\n");
    let object = get_json(&server, &["cm", "settings"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "1", "b": "2"}));

    let out = ok_stdin(&server, &["apply", "-f", "-"], second).await;
    assert_eq!(out, "configmap/settings configured\n");
    let object = get_json(&server, &["cm", "settings"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"a": "changed", "c": "3"})
    );
    assert_eq!(
        object["metadata"]["labels"],
        serde_json::json!({"app": "demo", "owner": "ops"})
    );
    let output = server
        .kubectl_stdin(&["diff", "-f", "-"], Some(second))
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let out = ok_stdin(&server, &["apply", "-f", "-"], second).await;
    assert_eq!(out, "configmap/settings unchanged\n");

    // apply of an invalid manifest fails as create does.
    let err = fails(
        &server,
        &["apply", "-f", "-"],
        Some(&configmap("Bad_Name", &[])),
    )
    .await;
    assert!(
        err.contains("The ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value"),
        "{err}"
    );
    server.stop().await;
}

/// Updates without a resourceVersion are unconditional for these resources (upstream's
/// AllowUnconditionalUpdate): a PUT without one, a patch that removes it, and the apply
/// that follows applying an exported object (its last-applied configuration has the
/// resourceVersion, so the next apply's patch removes it).
async fn unconditional_updates(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("free", &[("a", "1")])).await;

    // Exported with -o yaml (resourceVersion, uid, creationTimestamp) and applied.
    let exported = server
        .kubectl_ok(&["get", "cm", "free", "-o", "yaml"])
        .await;
    let exported = exported.replace("a: \"1\"", "a: \"2\"");
    let output = server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&exported))
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "configmap/free configured\n");
    assert!(
        stderr(&output).contains("missing the kubectl.kubernetes.io/last-applied-configuration"),
        "{}",
        stderr(&output)
    );
    // A clean manifest applied next: the patch sets resourceVersion to null.
    let out = ok_stdin(
        &server,
        &["apply", "-f", "-"],
        &configmap("free", &[("a", "3")]),
    )
    .await;
    assert_eq!(out, "configmap/free configured\n");
    let object = get_json(&server, &["cm", "free"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "3"}));

    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "free",
            "--type=merge",
            "-p",
            r#"{"metadata":{"resourceVersion":null},"data":{"a":"4"}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/free patched\n");

    // A PUT without resourceVersion.
    let out = ok_stdin(
        &server,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/default/configmaps/free",
            "-f",
            "-",
        ],
        &configmap("free", &[("a", "5")]),
    )
    .await;
    let object: Value = serde_json::from_str(&out).expect("PUT answers the object");
    assert_eq!(object["data"], serde_json::json!({"a": "5"}));
    server.stop().await;
}

/// `kubectl patch` with each patch type, `kubectl edit`, and patch errors.
async fn patch_types_and_edit(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("p", &[("a", "1"), ("b", "2")])).await;
    let out = server
        .kubectl_ok(&["patch", "cm", "p", "-p", r#"{"data":{"c":"3"}}"#])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let object = get_json(&server, &["cm", "p"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"a": "1", "b": "2", "c": "3"})
    );

    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=strategic",
            "-p",
            r#"{"data":{"a":null},"metadata":{"labels":{"patched":"strategic"}}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"data":{"b":"two"},"metadata":{"labels":{"merged":"yes"}}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/data/c","value":"three"},{"op":"add","path":"/data/d","value":"4"},{"op":"remove","path":"/metadata/labels/merged"}]"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let object = get_json(&server, &["cm", "p"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"b": "two", "c": "three", "d": "4"})
    );
    assert_eq!(
        object["metadata"]["labels"],
        serde_json::json!({"patched": "strategic"})
    );

    // A patch that changes nothing.
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"data":{"d":"4"}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched (no change)\n");

    // kubectl edit: the editor changes the object, kubectl sends a strategic merge patch.
    let output = kubectl_env(
        &server,
        &["edit", "cm", "p"],
        &[("KUBE_EDITOR", "sed -i -e s/three/edited/")],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "configmap/p edited\n");
    let object = get_json(&server, &["cm", "p"]).await;
    assert_eq!(object["data"]["c"], "edited");
    let output = kubectl_env(&server, &["edit", "cm", "p"], &[("KUBE_EDITOR", "true")]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "Edit cancelled, no changes made.\n");

    // Errors.
    let err = fails(
        &server,
        &["patch", "cm", "missing", "-p", r#"{"data":{"a":"1"}}"#],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"missing\" not found\n"
    );
    let err = fails(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/data/b","value":"wrong"}]"#,
        ],
        None,
    )
    .await;
    assert!(err.starts_with("The request is invalid"), "{err}");
    let err = fails(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"bad":"-x-"}}}"#,
        ],
        None,
    )
    .await;
    assert!(
        err.starts_with(
            "The ConfigMap \"p\" is invalid: metadata.labels: Invalid value: \"-x-\": a valid \
             label must be an empty string or consist of alphanumeric characters"
        ),
        "{err}"
    );
    let err = fails(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"metadata":{"name":"q"}}"#,
        ],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (BadRequest): the name of the object (q) does not match the name on \
         the URL (p)\n"
    );
    // An immutable configmap refuses data changes.
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"a":"1"}}"#,
    )
    .await;
    let err = fails(
        &server,
        &["patch", "cm", "frozen", "-p", r#"{"data":{"a":"2"}}"#],
        None,
    )
    .await;
    assert_eq!(
        err,
        "The ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when \
         `immutable` is set\n"
    );
    server.stop().await;
}

/// `kubectl replace`: with the current resourceVersion, with a stale one (Conflict), of a
/// missing object (NotFound), `--force`, and server dry run.
async fn replace_and_conflict(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("r", &[("a", "1")])).await;
    let stale = server.kubectl_ok(&["get", "cm", "r", "-o", "yaml"]).await;
    let uid = get_json(&server, &["cm", "r"]).await["metadata"]["uid"].clone();

    let out = ok_stdin(
        &server,
        &["replace", "-f", "-"],
        &stale.replace("a: \"1\"", "a: \"2\""),
    )
    .await;
    assert_eq!(out, "configmap/r replaced\n");
    assert_eq!(get_json(&server, &["cm", "r"]).await["data"]["a"], "2");

    let err = fails(
        &server,
        &["replace", "-f", "-"],
        Some(&stale.replace("a: \"1\"", "a: \"3\"")),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (Conflict): error when replacing \"STDIN\": Operation cannot be \
         fulfilled on configmaps \"r\": the object has been modified; please apply your changes \
         to the latest version and try again\n"
    );
    assert_eq!(get_json(&server, &["cm", "r"]).await["data"]["a"], "2");

    let out = ok_stdin(
        &server,
        &["replace", "-f", "-", "--dry-run=server"],
        &configmap("r", &[("a", "dry")]),
    )
    .await;
    assert_eq!(out, "configmap/r replaced (server dry run)\n");
    assert_eq!(get_json(&server, &["cm", "r"]).await["data"]["a"], "2");

    let err = fails(
        &server,
        &["replace", "-f", "-"],
        Some(&configmap("ghost", &[("a", "1")])),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (NotFound): error when replacing \"STDIN\": configmaps \"ghost\" not \
         found\n"
    );

    // --force deletes and creates again: a new uid.
    let out = ok_stdin(
        &server,
        &["replace", "--force", "-f", "-"],
        &stale.replace("a: \"1\"", "a: \"forced\""),
    )
    .await;
    assert_eq!(out, "configmap \"r\" deleted\nconfigmap/r replaced\n");
    let object = get_json(&server, &["cm", "r"]).await;
    assert_eq!(object["data"]["a"], "forced");
    assert_ne!(object["metadata"]["uid"], uid);
    server.stop().await;
}

/// `kubectl label` and `kubectl annotate` on namespaced and cluster-scoped objects, and
/// selecting by the labels set.
async fn label_and_annotate(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("x", &[])).await;

    let out = server.kubectl_ok(&["label", "cm", "x", "tier=web"]).await;
    assert_eq!(out, "configmap/x labeled\n");
    let err = fails(&server, &["label", "cm", "x", "tier=db"], None).await;
    assert_eq!(
        err,
        "error: 'tier' already has a value (web), and --overwrite is false\n"
    );
    let out = server
        .kubectl_ok(&["label", "cm", "x", "tier=db", "--overwrite"])
        .await;
    assert_eq!(out, "configmap/x labeled\n");
    let out = server
        .kubectl_ok(&["get", "cm", "-l", "tier=db", "-o", "name"])
        .await;
    assert_eq!(out, "configmap/x\n");
    let out = server.kubectl_ok(&["label", "cm", "x", "tier-"]).await;
    assert_eq!(out, "configmap/x unlabeled\n");
    let object = get_json(&server, &["cm", "x"]).await;
    assert!(
        object["metadata"]
            .get("labels")
            .is_none_or(|l| l.get("tier").is_none()),
        "{object}"
    );

    let out = server
        .kubectl_ok(&["annotate", "cm", "x", "note=hello world"])
        .await;
    assert_eq!(out, "configmap/x annotated\n");
    let out = server
        .kubectl_ok(&[
            "get",
            "cm",
            "x",
            "-o",
            "jsonpath={.metadata.annotations.note}",
        ])
        .await;
    assert_eq!(out, "hello world");
    let err = fails(&server, &["annotate", "cm", "x", "note=again"], None).await;
    assert_eq!(
        err,
        "error: --overwrite is false but found the following declared annotation(s): 'note' \
         already has a value (hello world)\n"
    );
    server
        .kubectl_ok(&["annotate", "cm", "x", "note=again", "--overwrite"])
        .await;
    let out = server.kubectl_ok(&["annotate", "cm", "x", "note-"]).await;
    assert_eq!(out, "configmap/x annotated\n");

    // Cluster-scoped: namespaces.
    let out = server
        .kubectl_ok(&["label", "ns", "default", "team=core"])
        .await;
    assert_eq!(out, "namespace/default labeled\n");
    let out = server
        .kubectl_ok(&["get", "ns", "-l", "team=core", "-o", "name"])
        .await;
    assert_eq!(out, "namespace/default\n");
    let out = server.kubectl_ok(&["get", "ns", "-L", "team"]).await;
    assert_header(&out, &["NAME", "STATUS", "AGE", "TEAM"]);
    assert_eq!(Table::parse(&out).cell("default", "TEAM"), "core");
    // The name label is set by the server and kept.
    let out = server
        .kubectl_ok(&[
            "get",
            "ns",
            "-l",
            "kubernetes.io/metadata.name=kube-system",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out, "namespace/kube-system\n");
    let out = server
        .kubectl_ok(&["annotate", "ns", "kube-public", "owner=me"])
        .await;
    assert_eq!(out, "namespace/kube-public annotated\n");

    // Many at once with a selector, and a dry run.
    create(&server, &configmap("y", &[])).await;
    let out = server
        .kubectl_ok(&["label", "cm", "--all", "batch=1"])
        .await;
    assert_eq!(out, "configmap/x labeled\nconfigmap/y labeled\n");
    let out = server
        .kubectl_ok(&["label", "cm", "-l", "batch=1", "second=2"])
        .await;
    assert_eq!(out, "configmap/x labeled\nconfigmap/y labeled\n");
    let out = server
        .kubectl_ok(&["label", "cm", "x", "dry=run", "--dry-run=server"])
        .await;
    assert_eq!(out, "configmap/x labeled (server dry run)\n");
    let out = server
        .kubectl_ok(&["get", "cm", "-l", "dry", "-o", "name"])
        .await;
    assert_eq!(out, "");
    server.stop().await;
}

on_both_backends!(
    apply_create_change_reapply,
    unconditional_updates,
    patch_types_and_edit,
    replace_and_conflict,
    label_and_annotate,
);
