//! The real kubectl against kapi, on the embedded store and on etcd: the everyday verbs on
//! namespaces, configmaps, secrets, serviceaccounts, events and leases.

mod common;

use common::{Backend, TestServer};

/// A fresh server lists exactly the four system namespaces.
async fn system_namespaces(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let names = server.kubectl_ok(&["get", "ns", "-o", "name"]).await;
    let mut names: Vec<&str> = names.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["namespace/default", "namespace/kube-node-lease", "namespace/kube-public", "namespace/kube-system"]
    );
    server.stop().await;
}

on_both_backends!(system_namespaces);
