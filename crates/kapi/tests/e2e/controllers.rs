//! kube-controller-manager's controllers kapi runs in process, seen through the real kubectl
//! as a user of a cluster sees them: a deleted namespace's content (built-in and custom
//! resources) goes, the namespace reports what holds it in upstream's conditions, and it
//! goes once that is released; objects whose owners go are collected (background, orphan
//! and foreground propagation, upstream's per-resource defaults, owners that never existed
//! or live in another namespace).

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
    // And an object whose owner is being deleted in the foreground.
    let uid = owner(&server, "doomed", "leaving").await;
    let dependent = owned("Secret", "v1", "left", "doomed", "leaving", &uid, "");
    ok_stdin(&server, &["apply", "-f", "-"], &dependent).await;
    server
        .kubectl_ok(&[
            "delete",
            "configmap",
            "leaving",
            "-n",
            "doomed",
            "--cascade=foreground",
            "--wait=false",
        ])
        .await;
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

/// A manifest of a `kind` object `name` in `namespace` owned by the ConfigMap `owner` (uid
/// `uid`), with `extra` metadata fields.
fn owned(
    kind: &str,
    api_version: &str,
    name: &str,
    namespace: &str,
    owner: &str,
    uid: &str,
    extra: &str,
) -> String {
    format!(
        "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{extra}  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: {owner}, uid: {uid}, blockOwnerDeletion: true}}\n"
    )
}

/// Creates the ConfigMap `name` in `namespace`; its uid.
async fn owner(server: &TestServer, namespace: &str, name: &str) -> String {
    server
        .kubectl_ok(&["create", "configmap", name, "-n", namespace])
        .await;
    server
        .kubectl_ok(&[
            "get",
            "configmap",
            name,
            "-n",
            namespace,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await
}

/// Waits (up to 30 s) until `kubectl get <args>` finds nothing.
async fn wait_gone(server: &TestServer, args: &[&str]) {
    let args = [&["wait", "--for=delete", "--timeout=30s"], args].concat();
    server.kubectl_ok(&args).await;
}

async fn dependents_follow_their_owners(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    install_crds(&server, WIDGET_CRD, &["widgets.example.com"]).await;

    // Background (kubectl's default): the owner goes, then its dependents, custom ones too.
    let uid = owner(&server, "default", "owner").await;
    let secret = owned("Secret", "v1", "dep", "default", "owner", &uid, "");
    let widget = owned(
        "Widget",
        "example.com/v1",
        "dep",
        "default",
        "owner",
        &uid,
        "",
    );
    ok_stdin(
        &server,
        &["apply", "-f", "-"],
        &format!("{secret}---\n{widget}"),
    )
    .await;
    server.kubectl_ok(&["delete", "configmap", "owner"]).await;
    wait_gone(&server, &["secret/dep", "widget/dep"]).await;

    // Orphan: the dependent stays, without its reference.
    let uid = owner(&server, "default", "parent").await;
    let secret = owned("Secret", "v1", "orphan", "default", "parent", &uid, "");
    ok_stdin(&server, &["apply", "-f", "-"], &secret).await;
    server
        .kubectl_ok(&["delete", "configmap", "parent", "--cascade=orphan"])
        .await;
    let orphan = get_json(&server, &["secret", "orphan"]).await;
    assert!(orphan["metadata"]["ownerReferences"].is_null(), "{orphan}");

    // Foreground: the owner waits, marked, for its blocking dependent to go.
    let uid = owner(&server, "default", "waiting").await;
    let hold = "  finalizers: [example.com/hold]\n";
    let secret = owned("Secret", "v1", "blocker", "default", "waiting", &uid, hold);
    ok_stdin(&server, &["apply", "-f", "-"], &secret).await;
    server
        .kubectl_ok(&[
            "delete",
            "configmap",
            "waiting",
            "--cascade=foreground",
            "--wait=false",
        ])
        .await;
    let mut marked = Value::Null;
    for _ in 0..100 {
        marked = get_json(&server, &["secret", "blocker"]).await;
        if !marked["metadata"]["deletionTimestamp"].is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        !marked["metadata"]["deletionTimestamp"].is_null(),
        "{marked}"
    );
    let waiting = get_json(&server, &["configmap", "waiting"]).await;
    assert_eq!(waiting["metadata"]["finalizers"][0], "foregroundDeletion");
    server
        .kubectl_ok(&[
            "patch",
            "secret",
            "blocker",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .await;
    wait_gone(&server, &["configmap/waiting"]).await;

    // An owner that never existed: the dependent goes.
    let secret = owned(
        "Secret",
        "v1",
        "dangling",
        "default",
        "ghost",
        "0f0f0f0f-0000-4000-8000-000000000000",
        "",
    );
    ok_stdin(&server, &["apply", "-f", "-"], &secret).await;
    wait_gone(&server, &["secret/dangling"]).await;

    // A Job deleted without a policy orphans its pods, as upstream's batch/v1 does.
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: batch}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n";
    ok_stdin(&server, &["apply", "-f", "-"], job).await;
    let job_uid = server
        .kubectl_ok(&["get", "job", "batch", "-o", "jsonpath={.metadata.uid}"])
        .await;
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: batch-pod\n  ownerReferences:\n  - {{apiVersion: batch/v1, kind: Job, name: batch, uid: {job_uid}, controller: true, blockOwnerDeletion: true}}\nspec:\n  restartPolicy: Never\n  containers: [{{name: c, image: busybox}}]\n"
    );
    ok_stdin(&server, &["apply", "-f", "-"], &pod).await;
    server
        .kubectl_ok(&[
            "delete",
            "--raw",
            "/apis/batch/v1/namespaces/default/jobs/batch",
        ])
        .await;
    wait_gone(&server, &["job/batch"]).await;
    let pod = get_json(&server, &["pod", "batch-pod"]).await;
    assert!(pod["metadata"]["ownerReferences"].is_null(), "{pod}");

    // A reference to an owner in another namespace resolves to nothing: a warning event,
    // and the dependent goes.
    server.kubectl_ok(&["create", "namespace", "other"]).await;
    let uid = owner(&server, "other", "foreign").await;
    let secret = owned("Secret", "v1", "misplaced", "default", "foreign", &uid, "");
    ok_stdin(&server, &["apply", "-f", "-"], &secret).await;
    wait_gone(&server, &["secret/misplaced"]).await;
    let mut message = String::new();
    for _ in 0..100 {
        message = server
            .kubectl_ok(&[
                "get",
                "events",
                "--field-selector=reason=OwnerRefInvalidNamespace",
                "-o",
                "jsonpath={.items[*].message}",
            ])
            .await;
        if !message.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        message,
        format!(
            r#"ownerRef [v1/ConfigMap, namespace: default, name: foreign, uid: {uid}] does not exist in namespace "default""#
        )
    );
    server.stop().await;
}

on_both_backends!(
    a_deleted_namespace_is_emptied_then_removed,
    dependents_follow_their_owners,
    owner_chains_go_as_their_propagation_says
);

/// Two replicas on a three-member etcd: one holds kube-system's `kube-controller-manager`
/// Lease and runs the controllers; killed, the other takes the lease over and runs them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_runs_the_controllers_until_another_takes_over() {
    use common::process::Kapi;
    use http::Method;
    use serde_json::json;
    use std::time::{Duration, Instant};

    let etcd = tokio::task::spawn_blocking(|| kapi_testing::etcd::EtcdCluster::start(3))
        .await
        .expect("etcd");
    let endpoints = etcd.endpoints().join(",");
    let flags = [
        "--etcd-servers",
        endpoints.as_str(),
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
    ];
    let mut replicas = [
        Kapi::start(Backend::Embedded, &flags).await,
        Kapi::start(Backend::Embedded, &flags).await,
    ];
    let identity = |kapi: &Kapi| {
        std::fs::read_to_string(kapi.data_dir.path().join("controller-manager-identity"))
            .expect("the election identity")
    };
    const LEASE: &str =
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager";
    // Which replica holds the lease, once one does.
    let holder = |replicas: &[Kapi; 2], asked: usize| {
        let admin = replicas[asked].admin();
        let ids = [identity(&replicas[0]), identity(&replicas[1])];
        async move {
            let lease = admin.get(LEASE).await.json();
            let holder = lease["spec"]["holderIdentity"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            ids.iter()
                .position(|id| holder.ends_with(&format!("_{id}")))
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let leader = loop {
        if let Some(leader) = holder(&replicas, 0).await {
            break leader;
        }
        assert!(Instant::now() < deadline, "no replica took the lease");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let follower = 1 - leader;
    // Only the leader started its controllers; a namespace made through the follower gets
    // its default ServiceAccount from them.
    const ACQUIRED: &str = "successfully acquired lease";
    assert!(replicas[leader].log().contains(ACQUIRED));
    assert!(!replicas[follower].log().contains(ACQUIRED));
    let admin = replicas[follower].admin();
    let served_by_the_leader = |name: &'static str, deadline: Instant| {
        let admin = &admin;
        async move {
            let namespace =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            let created = admin
                .write(Method::POST, "/api/v1/namespaces", &namespace)
                .await;
            assert_eq!(created.status, 201);
            let account = format!("/api/v1/namespaces/{name}/serviceaccounts/default");
            while admin.get(&account).await.status != 200 {
                assert!(
                    Instant::now() < deadline,
                    "no default ServiceAccount in {name}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    served_by_the_leader("first", deadline).await;

    // The leader dies; the other replica takes the lease once it expires, and works.
    replicas[leader].kill();
    let deadline = Instant::now() + Duration::from_secs(30);
    while holder(&replicas, follower).await != Some(follower) {
        assert!(Instant::now() < deadline, "the lease was not taken over");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lease = admin.get(LEASE).await.json();
    assert_eq!(lease["spec"]["leaseTransitions"], 1, "{lease}");
    assert!(replicas[follower].log().contains(ACQUIRED));
    served_by_the_leader("second", deadline).await;
    let [first, second] = replicas;
    first.stop().await;
    second.stop().await;
}

/// Deployment → ReplicaSet → Pod chains, as their controllers would write them, deleted
/// through kube-rs in each propagation; and a custom resource owning a ConfigMap.
async fn owner_chains_go_as_their_propagation_says(backend: Backend) {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
    use kube::core::GroupVersionKind;
    use serde_json::json;

    let server = TestServer::start(backend, &[]).await;
    install_crds(&server, WIDGET_CRD, &["widgets.example.com"]).await;
    let kubeconfig = kube::config::Kubeconfig::read_from(&server.kubeconfig).expect("kubeconfig");
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("config");
    let client = kube::Client::try_from(config).expect("client");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let reference = |kind: &str, api_version: &str, name: &str, uid: &str| {
        json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": true, "blockOwnerDeletion": true}])
    };
    let template = json!({"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    // A chain named `name`: its Deployment, ReplicaSet and Pod.
    let chain = |name: String| {
        let (deployments, replica_sets, pods) =
            (deployments.clone(), replica_sets.clone(), pods.clone());
        let template = template.clone();
        async move {
            let deployment: Deployment = serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}}))
            .unwrap();
            let deployment = deployments
                .create(&PostParams::default(), &deployment)
                .await
                .unwrap();
            let uid = deployment.metadata.uid.unwrap();
            let replica_set: ReplicaSet = serde_json::from_value(json!({
                "metadata": {"name": format!("{name}-rs"),
                    "ownerReferences": reference("Deployment", "apps/v1", &name, &uid)},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}}))
            .unwrap();
            let replica_set = replica_sets
                .create(&PostParams::default(), &replica_set)
                .await
                .unwrap();
            let uid = replica_set.metadata.uid.unwrap();
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("{name}-pod"), "labels": {"app": "web"},
                    "ownerReferences": reference("ReplicaSet", "apps/v1", &format!("{name}-rs"), &uid)},
                "spec": template["spec"]}))
            .unwrap();
            pods.create(&PostParams::default(), &pod).await.unwrap();
        }
    };
    // Background: the Deployment goes at once, then the ReplicaSet, then the Pod.
    chain("back".into()).await;
    deployments
        .delete("back", &DeleteParams::background())
        .await
        .unwrap();
    collected(&replica_sets, "back-rs").await;
    collected(&pods, "back-pod").await;

    // Foreground: the Deployment stays, marked, until its dependents are gone.
    chain("fore".into()).await;
    let marked = deployments
        .delete("fore", &DeleteParams::foreground())
        .await
        .unwrap();
    let marked = marked
        .left()
        .expect("the deployment is kept while its dependents go");
    assert_eq!(marked.metadata.finalizers.unwrap(), ["foregroundDeletion"]);
    collected(&deployments, "fore").await;
    assert!(replica_sets.get_opt("fore-rs").await.unwrap().is_none());
    assert!(pods.get_opt("fore-pod").await.unwrap().is_none());

    // Orphan: the ReplicaSet stays without its owner, the Pod with its.
    chain("orphan".into()).await;
    deployments
        .delete("orphan", &DeleteParams::orphan())
        .await
        .unwrap();
    collected(&deployments, "orphan").await;
    let replica_set = replica_sets.get("orphan-rs").await.unwrap();
    assert!(
        replica_set.metadata.owner_references.is_none(),
        "{replica_set:?}"
    );
    let pod = pods.get("orphan-pod").await.unwrap();
    assert_eq!(pod.metadata.owner_references.unwrap()[0].name, "orphan-rs");

    // A custom resource owning a ConfigMap.
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk));
    let widget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
        "kind": "Widget", "metadata": {"name": "owner"}}))
    .unwrap();
    let widget = widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let uid = widget.metadata.uid.unwrap();
    let owned: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "widget-data",
        "ownerReferences": reference("Widget", "example.com/v1", "owner", &uid)}}))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &owned)
        .await
        .unwrap();
    widgets
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    collected(&config_maps, "widget-data").await;
    server.stop().await;
}

/// Waits (up to 30 s) until `api` has no object `name`.
async fn collected<K>(api: &kube::Api<K>, name: &str)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while api.get_opt(name).await.expect("get").is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "{name} was not collected"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The legacy token cleaner: an auto-generated token Secret unused for the clean-up period
/// is labelled invalid, one invalid that long is deleted, one a pod mounts stays. The
/// period is a second and tracking is made to have started long ago; the cleaner looks at
/// start, so the server is restarted once the Secrets are older than the period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unused_legacy_tokens_are_invalidated_then_deleted() {
    use crate::common::process::Kapi;
    use serde_json::json;
    let mut kapi = Kapi::start(
        Backend::Embedded,
        &["--legacy-service-account-token-clean-up-period=1s"],
    )
    .await;
    let admin = kapi.admin();
    let tracking = "/api/v1/namespaces/kube-system/configmaps/kube-apiserver-legacy-service-account-token-tracking";
    let reply = admin
        .write(
            http::Method::PATCH,
            tracking,
            &json!({"data": {"since": "2020-01-01"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // A token Secret whose account does not exist is deleted by the token controller, as
    // upstream's is: wait for the service account controller to make `default`.
    let account = "/api/v1/namespaces/default/serviceaccounts/default";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while admin.get(account).await.status != 200 {
        assert!(std::time::Instant::now() < deadline, "no default account");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let secrets = "/api/v1/namespaces/default/secrets";
    let token = |name: &str, labels: Value| {
        json!({"metadata": {"name": name, "labels": labels,
            "annotations": {"kubernetes.io/service-account.name": "default"}},
            "type": "kubernetes.io/service-account-token"})
    };
    admin
        .create(
            secrets,
            token(
                "old",
                json!({"kubernetes.io/legacy-token-invalid-since": "2020-01-01"}),
            ),
        )
        .await;
    admin.create(secrets, token("unused", json!({}))).await;
    admin.create(secrets, token("mounted", json!({}))).await;
    admin
        .create(
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "user"}, "spec": {"containers": [{"name": "c", "image": "nginx"}],
                "volumes": [{"name": "t", "secret": {"secretName": "mounted"}}]}}),
        )
        .await;
    let listed = json!({"secrets": [{"name": "old"}, {"name": "unused"}, {"name": "mounted"}]});
    let reply = admin.write(http::Method::PATCH, account, &listed).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // The Secrets must be older than the period when the cleaner looks. Creation times are
    // whole seconds, as is the cleaner's clock, so a Secret made at x.9 s reads as made at x
    // and is older than 1 s only from x + 2 s: wait a little over 2 s.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    kapi.restart().await;
    let admin = kapi.admin();
    // Under a loaded machine the restarted server's controllers can take a while to win
    // the leader election and start.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let old = admin.get(&format!("{secrets}/old")).await.status;
        let unused = admin.get(&format!("{secrets}/unused")).await.json();
        let label = &unused["metadata"]["labels"]["kubernetes.io/legacy-token-invalid-since"];
        if old == 404 && label.is_string() {
            let today = kapi_apimachinery::gotime::format_rfc3339(
                kapi_apimachinery::gotime::Timestamp::now().seconds,
            );
            assert_eq!(label.as_str().unwrap(), &today[..10]);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "old: {old}, unused: {unused}\nthe server's log:\n{}",
            kapi.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // A mounted token is never marked (its empty labels may or may not have been rewritten).
    let mounted = admin.get(&format!("{secrets}/mounted")).await.json();
    let label = &mounted["metadata"]["labels"]["kubernetes.io/legacy-token-invalid-since"];
    assert!(label.is_null(), "{mounted}");
    kapi.stop().await;
}
