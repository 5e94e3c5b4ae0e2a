//! kube-controller-manager's controllers kapi runs in process, seen through the real kubectl
//! as a user of a cluster sees them: a deleted namespace's content (built-in and custom
//! resources) goes, the namespace reports what holds it in upstream's conditions, and it
//! goes once that is released.

use crate::common;

use common::{Backend, TestServer, get_json, install_crds, ok_stdin};
use serde_json::Value;

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;

const CONTENT: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: doomed}
data: {a: b}
---
apiVersion: v1
kind: Secret
metadata: {name: secret, namespace: doomed}
stringData: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: doomed}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: held, namespace: doomed, finalizers: [example.com/hold]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: free, namespace: doomed}
"#;

/// The condition `type_` of the namespace `name`.
async fn condition(server: &TestServer, name: &str, type_: &str) -> Option<Value> {
    let namespace = get_json(server, &["namespace", name]).await;
    namespace["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

async fn a_deleted_namespace_is_emptied_then_removed(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    install_crds(&server, WIDGET_CRD, &["widgets.example.com"]).await;
    server.kubectl_ok(&["create", "namespace", "doomed"]).await;
    ok_stdin(&server, &["apply", "-f", "-"], CONTENT).await;
    server
        .kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"])
        .await;

    // Everything goes but the widget its finalizer holds, and the namespace says so.
    let finalizers =
        common::wait_namespace_condition(&server, "doomed", "NamespaceFinalizersRemaining").await;
    assert_eq!(finalizers["reason"], "SomeFinalizerRemain");
    assert_eq!(
        finalizers["message"],
        "Some finalizers are remaining: example.com/hold in 1 resource instances"
    );
    let remaining = condition(&server, "doomed", "NamespaceContentRemaining")
        .await
        .expect("the content condition");
    assert_eq!(remaining["status"], "True");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: widgets.example.com has 1 resource instances"
    );
    let discovered = condition(&server, "doomed", "NamespaceDeletionDiscoveryFailure")
        .await
        .expect("the discovery condition");
    assert_eq!(discovered["status"], "False");
    assert_eq!(discovered["reason"], "ResourcesDiscovered");
    let left = server
        .kubectl_ok(&[
            "get",
            "configmaps,secrets,deployments,replicasets,serviceaccounts,widgets",
            "-n",
            "doomed",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(left.trim(), "widget.example.com/held");
    let phase = get_json(&server, &["namespace", "doomed"]).await;
    assert_eq!(phase["status"]["phase"], "Terminating");
    assert_eq!(phase["spec"]["finalizers"][0], "kubernetes");

    // Released, the widget goes and so does the namespace.
    server
        .kubectl_ok(&[
            "patch",
            "widget",
            "held",
            "-n",
            "doomed",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .await;
    server
        .kubectl_ok(&["wait", "--for=delete", "namespace/doomed", "--timeout=60s"])
        .await;

    // A namespace with nothing in it goes as kubectl waits for it.
    server.kubectl_ok(&["create", "namespace", "empty"]).await;
    server.kubectl_ok(&["delete", "namespace", "empty"]).await;
    let gone = server.kubectl(&["get", "namespace", "empty"]).await;
    assert!(common::stderr(&gone).contains(r#"namespaces "empty" not found"#));
    server.stop().await;
}

on_both_backends!(a_deleted_namespace_is_emptied_then_removed);
