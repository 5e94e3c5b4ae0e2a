use super::*;

/// A `kind: List` manifest: created, applied and deleted item by item, validated by kubectl
/// on the client against the protobuf `/openapi/v2` document.
async fn list_manifests(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let list = |value: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"v": value}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "two"}, "stringData": {"v": value}},
        ]})
        .to_string()
    };
    let out = ok_stdin(&server, &["create", "-f", "-"], &list("1")).await;
    assert_eq!(out, "configmap/one created\nsecret/two created\n");
    let out = ok_stdin(&server, &["apply", "-f", "-"], &list("2")).await;
    assert_eq!(out, "configmap/one configured\nsecret/two configured\n");
    let out = server
        .kubectl_ok(&["get", "cm", "one", "-o", "jsonpath={.data.v}"])
        .await;
    assert_eq!(out, "2");
    let out = ok_stdin(&server, &["delete", "-f", "-"], &list("2")).await;
    assert_eq!(out, "configmap \"one\" deleted\nsecret \"two\" deleted\n");
    server.stop().await;
}

/// The typed-client commands (`kubectl create namespace|configmap|secret|serviceaccount`)
/// send protobuf bodies.
async fn typed_client_creates(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = server.kubectl_ok(&["create", "namespace", "team"]).await;
    assert_eq!(out, "namespace/team created\n");
    let out = server
        .kubectl_ok(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=a=1",
            "--from-literal=b=2",
        ])
        .await;
    assert_eq!(out, "configmap/settings created\n");
    let object = get_json(&server, &["cm", "settings", "-n", "team"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "1", "b": "2"}));
    let out = server
        .kubectl_ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "team",
            "--from-literal=user=admin",
        ])
        .await;
    assert_eq!(out, "secret/creds created\n");
    let out = server
        .kubectl_ok(&[
            "get",
            "secret",
            "creds",
            "-n",
            "team",
            "-o",
            "jsonpath={.type} {.data.user}",
        ])
        .await;
    assert_eq!(out, "Opaque YWRtaW4=");
    let out = server
        .kubectl_ok(&["create", "serviceaccount", "robot", "-n", "team"])
        .await;
    assert_eq!(out, "serviceaccount/robot created\n");
    let out = server
        .kubectl_ok(&[
            "create",
            "configmap",
            "dry",
            "--from-literal=a=1",
            "--dry-run=server",
        ])
        .await;
    assert_eq!(out, "configmap/dry created (server dry run)\n");

    let err = fails(&server, &["create", "namespace", "team"], None).await;
    assert_eq!(
        err,
        "Error from server (AlreadyExists): namespaces \"team\" already exists\n"
    );
    let err = fails(
        &server,
        &["create", "configmap", "Bad_Name", "--from-literal=a=1"],
        None,
    )
    .await;
    assert_eq!(
        err,
        format!(
            "error: failed to create configmap: ConfigMap \"Bad_Name\" is invalid: \
             metadata.name: Invalid value: \"Bad_Name\": {DNS1123_SUBDOMAIN}\n"
        )
    );
    server.stop().await;
}

on_both_backends!(list_manifests, typed_client_creates,);
