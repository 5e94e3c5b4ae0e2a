//! The aggregator's local APIServices through the real kubectl, as kube-apiserver 1.35 keeps
//! them: one per built-in group version, `Local` and `Available` before `/readyz` passes;
//! one per served version of each CRD, following the versions it serves and gone with it;
//! APIServices the aggregator does not manage left alone.

use crate::common;

use common::{Backend, TestServer, cells, fails, get_json, install_crds, ok_stdin};
use serde_json::json;

/// What `kubectl get apiservices` lists on a fresh kube-apiserver 1.35.
const BUILT_IN: [&str; 21] = [
    "v1.",
    "v1.admissionregistration.k8s.io",
    "v1.apiextensions.k8s.io",
    "v1.apps",
    "v1.authentication.k8s.io",
    "v1.authorization.k8s.io",
    "v1.autoscaling",
    "v1.batch",
    "v1.certificates.k8s.io",
    "v1.coordination.k8s.io",
    "v1.discovery.k8s.io",
    "v1.events.k8s.io",
    "v1.flowcontrol.apiserver.k8s.io",
    "v1.networking.k8s.io",
    "v1.node.k8s.io",
    "v1.policy",
    "v1.rbac.authorization.k8s.io",
    "v1.resource.k8s.io",
    "v1.scheduling.k8s.io",
    "v1.storage.k8s.io",
    "v2.autoscaling",
];

const WIDGETS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.aggregated.example.com}
spec:
  group: aggregated.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v2, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
"#;

/// Waits until the APIService `name` exists and is Available.
async fn wait_available(server: &TestServer, name: &str) {
    let service = format!("apiservice/{name}");
    server
        .kubectl_ok(&["wait", "--for=create", &service, "--timeout=20s"])
        .await;
    let available = "--for=condition=Available";
    server
        .kubectl_ok(&["wait", available, &service, "--timeout=20s"])
        .await;
}

async fn built_in_group_versions_are_local_and_available(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    // Registered and available before the server is ready (autoregister-completion).
    let listed = server.kubectl_ok(&["get", "apiservices"]).await;
    let rows: Vec<Vec<String>> = listed.lines().skip(1).map(cells).collect();
    let names: Vec<&str> = rows.iter().map(|row| row[0].as_str()).collect();
    assert_eq!(names, BUILT_IN);
    for row in &rows {
        assert_eq!(row[1..3], ["Local", "True"], "{row:?}");
    }
    let apps = get_json(&server, &["apiservice", "v1.apps"]).await;
    assert_eq!(
        apps["metadata"]["labels"],
        json!({"kube-aggregator.kubernetes.io/automanaged": "onstart"})
    );
    assert_eq!(
        apps["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    let condition = &apps["status"]["conditions"][0];
    assert_eq!(condition["reason"], "Local");
    assert_eq!(
        condition["message"],
        "Local APIServices are always available"
    );
    let core = get_json(&server, &["apiservice", "v1."]).await;
    assert_eq!(
        core["spec"],
        json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
    );
    server.stop().await;
}

async fn crd_versions_come_and_go_with_what_they_serve(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    install_crds(&server, WIDGETS_CRD, &["widgets.aggregated.example.com"]).await;
    wait_available(&server, "v1.aggregated.example.com").await;
    let v1 = get_json(&server, &["apiservice", "v1.aggregated.example.com"]).await;
    assert_eq!(
        v1["metadata"]["labels"],
        json!({"kube-aggregator.kubernetes.io/automanaged": "true"})
    );
    assert_eq!(
        v1["spec"],
        json!({"group": "aggregated.example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    let unserved = fails(
        &server,
        &["get", "apiservice", "v2.aggregated.example.com"],
        None,
    )
    .await;
    assert!(unserved.contains("NotFound"), "{unserved}");

    // Serving v2 registers it; an edited spec is put back.
    let serve_v2 = r#"[{"op": "replace", "path": "/spec/versions/1/served", "value": true}]"#;
    let crd = "crd/widgets.aggregated.example.com";
    server
        .kubectl_ok(&["patch", crd, "--type=json", "-p", serve_v2])
        .await;
    wait_available(&server, "v2.aggregated.example.com").await;
    let edit = r#"{"spec": {"versionPriority": 7}}"#;
    let v2 = "apiservice/v2.aggregated.example.com";
    server
        .kubectl_ok(&["patch", v2, "--type=merge", "-p", edit])
        .await;
    let restored = "--for=jsonpath={.spec.versionPriority}=100";
    server
        .kubectl_ok(&["wait", restored, v2, "--timeout=20s"])
        .await;

    // An APIService nobody manages is marked available and otherwise left alone.
    let unmanaged = r#"
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.unmanaged.example.com}
spec: {group: unmanaged.example.com, version: v1alpha1, groupPriorityMinimum: 500, versionPriority: 5}
"#;
    ok_stdin(&server, &["create", "-f", "-"], unmanaged).await;
    wait_available(&server, "v1alpha1.unmanaged.example.com").await;

    // The CRD's deletion takes its APIServices with it.
    server.kubectl_ok(&["delete", crd]).await;
    for name in ["v1.aggregated.example.com", "v2.aggregated.example.com"] {
        let service = format!("apiservice/{name}");
        server
            .kubectl_ok(&["wait", "--for=delete", &service, "--timeout=20s"])
            .await;
    }
    let left = get_json(&server, &["apiservice", "v1alpha1.unmanaged.example.com"]).await;
    assert_eq!(left["spec"]["versionPriority"], 5);
    server.stop().await;
}

on_both_backends!(
    built_in_group_versions_are_local_and_available,
    crd_versions_come_and_go_with_what_they_serve,
);

/// The start pass: a built-in group version's APIService deleted while kapi ran is back
/// after a restart, and a managed APIService of a group version no longer served is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_brings_the_built_in_api_services_back() {
    use common::process::Kapi;
    use http::Method;

    const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
    let mut kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let apps = format!("{API_SERVICES}/v1.apps");
    assert_eq!(
        admin.write(Method::DELETE, &apps, &json!({})).await.status,
        200
    );
    let stale = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.gone.example.com",
            "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
        "spec": {"group": "gone.example.com", "version": "v1",
            "groupPriorityMinimum": 1000, "versionPriority": 100}});
    assert_eq!(
        admin.write(Method::POST, API_SERVICES, &stale).await.status,
        201
    );

    // Ready again only once v1.apps is registered and available (autoregister-completion).
    kapi.restart().await;
    let admin = kapi.admin();
    let back = admin.get(&apps).await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(back.json()["status"]["conditions"][0]["status"], "True");
    let gone = format!("{API_SERVICES}/v1.gone.example.com");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while admin.get(&gone).await.status != 404 {
        assert!(
            std::time::Instant::now() < deadline,
            "{gone} was not deleted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    kapi.stop().await;
}
