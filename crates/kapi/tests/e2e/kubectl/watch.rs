use super::*;

/// `kubectl get -w --output-watch-events` prints the list as ADDED, then each change.
async fn watch_table(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("first", &[("a", "1")])).await;
    let watch = Background::start(&server, &["get", "cm", "-w", "--output-watch-events"]);
    watch.wait_for_line(&["ADDED", "first", "1"]).await;
    let out = watch.stdout();
    assert_header(&out, &["EVENT", "NAME", "DATA", "AGE"]);

    create(&server, &configmap("second", &[("a", "1"), ("b", "2")])).await;
    watch.wait_for_line(&["ADDED", "second", "2"]).await;
    server
        .kubectl_ok(&["patch", "cm", "second", "-p", r#"{"data":{"c":"3"}}"#])
        .await;
    watch.wait_for_line(&["MODIFIED", "second", "3"]).await;
    server.kubectl_ok(&["delete", "cm", "second"]).await;
    let out = watch.wait_for_line(&["DELETED", "second", "3"]).await;
    let added = line_index(&out, &["ADDED", "second"]).unwrap();
    let modified = line_index(&out, &["MODIFIED", "second"]).unwrap();
    let deleted = line_index(&out, &["DELETED", "second"]).unwrap();
    assert!(added < modified && modified < deleted, "{out}");
    // Nothing else happened to "first", in another namespace, or twice.
    assert_eq!(
        out.lines().filter(|l| l.contains("first")).count(),
        1,
        "{out}"
    );
    assert_eq!(out.lines().count(), 5, "{out}");

    // Other namespaces are not watched; -A watches them all.
    let all = Background::start(&server, &["get", "cm", "-A", "-w", "--output-watch-events"]);
    all.wait_for_line(&["ADDED", "default", "first"]).await;
    ok_stdin(
        &server,
        &["create", "-n", "kube-public", "-f", "-"],
        &configmap("public", &[]),
    )
    .await;
    all.wait_for_line(&["ADDED", "kube-public", "public"]).await;
    create(&server, &configmap("third", &[])).await;
    watch.wait_for_line(&["ADDED", "third"]).await;
    all.wait_for_line(&["ADDED", "default", "third"]).await;
    assert!(!watch.stdout().contains("public"), "{}", watch.stdout());
    server.stop().await;
}

/// `kubectl get NAME -w -o json`: one object's events as JSON, with increasing
/// resourceVersions; other objects' changes do not appear.
async fn watch_one_object_json(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("watched", &[("a", "1")])).await;
    let watch = Background::start(
        &server,
        &[
            "get",
            "cm",
            "watched",
            "-w",
            "-o",
            "json",
            "--output-watch-events",
        ],
    );
    watch
        .wait_for("the initial event", |out, _| json_stream(out).len() == 1)
        .await;
    create(&server, &configmap("bystander", &[])).await;
    server
        .kubectl_ok(&["label", "cm", "watched", "changed=yes"])
        .await;
    server.kubectl_ok(&["delete", "cm", "bystander"]).await;
    server.kubectl_ok(&["delete", "cm", "watched"]).await;
    let out = watch
        .wait_for("three events", |out, _| json_stream(out).len() >= 3)
        .await;
    let events = json_stream(&out);
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{out}");
    for event in &events {
        assert_eq!(event["object"]["kind"], "ConfigMap", "{event}");
        assert_eq!(event["object"]["metadata"]["name"], "watched", "{event}");
    }
    assert_eq!(events[1]["object"]["metadata"]["labels"]["changed"], "yes");
    let versions: Vec<u64> = events
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .expect("resourceVersion")
        })
        .collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    server.stop().await;
}

/// `kubectl get -w --watch-only` on the other resources: a new namespace is ADDED, its
/// deletion a MODIFIED (Terminating), its finalization a DELETED; leases, secrets,
/// serviceaccounts and events likewise.
async fn watch_only_other_resources(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let watch = |resource: &str| {
        Background::start(
            &server,
            &[
                "get",
                resource,
                "-w",
                "--watch-only",
                "--output-watch-events",
                "-v=6",
            ],
        )
    };
    let namespaces = watch("namespaces");
    let leases = watch("leases");
    let secrets = watch("secrets");
    let serviceaccounts = watch("serviceaccounts");
    let events = watch("events");
    // --watch-only prints nothing before the first change: wait until each watch request
    // has been answered.
    for watch in [&namespaces, &leases, &secrets, &serviceaccounts, &events] {
        watch.watching().await;
    }

    create(&server, &namespace("fleeting")).await;
    namespaces
        .wait_for_line(&["ADDED", "fleeting", "Active"])
        .await;
    server
        .kubectl_ok(&["delete", "ns", "fleeting", "--wait=false"])
        .await;
    namespaces
        .wait_for_line(&["MODIFIED", "fleeting", "Terminating"])
        .await;
    let mut finalized = get_json(&server, &["ns", "fleeting"]).await;
    finalized["spec"]["finalizers"] = serde_json::json!([]);
    ok_stdin(
        &server,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/fleeting/finalize",
            "-f",
            "-",
        ],
        &finalized.to_string(),
    )
    .await;
    namespaces
        .wait_for_line(&["DELETED", "fleeting", "Terminating"])
        .await;
    let out = namespaces.stdout();
    assert_header(&out, &["EVENT", "NAME", "STATUS", "AGE"]);
    assert!(
        !out.contains("default"),
        "--watch-only printed the list:\n{out}"
    );

    create(
        &server,
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lock"},"spec":{"holderIdentity":"me"}}"#,
    )
    .await;
    leases.wait_for_line(&["ADDED", "lock", "me"]).await;
    server
        .kubectl_ok(&[
            "patch",
            "lease",
            "lock",
            "--type=merge",
            "-p",
            r#"{"spec":{"holderIdentity":"you"}}"#,
        ])
        .await;
    leases.wait_for_line(&["MODIFIED", "lock", "you"]).await;

    create(
        &server,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"k":"v"}}"#,
    )
    .await;
    secrets.wait_for_line(&["ADDED", "s", "Opaque", "1"]).await;
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}"#,
    )
    .await;
    serviceaccounts
        .wait_for_line(&["ADDED", "robot", "0"])
        .await;
    server.kubectl_ok(&["delete", "sa", "robot"]).await;
    serviceaccounts
        .wait_for_line(&["DELETED", "robot", "0"])
        .await;

    create(
        &server,
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: seen\ninvolvedObject:\n  kind: Lease\n  \
         name: lock\n  namespace: default\nreason: Watched\nmessage: watch me\ntype: Normal\n",
    )
    .await;
    let out = events
        .wait_for("the event", |out, _| out.contains("Watched"))
        .await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("ADDED") && l.contains("lease/lock") && l.ends_with("watch me")),
        "{out}"
    );
    server.stop().await;
}

on_both_backends!(
    watch_table,
    watch_one_object_json,
    watch_only_other_resources,
);
