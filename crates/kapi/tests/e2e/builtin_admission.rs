//! The built-in admission plugins end to end: ResourceQuota (usage kept current by the quota
//! controller, concurrent creates never admitted beyond the quota), LimitRanger, Priority,
//! DefaultTolerationSeconds, DefaultStorageClass and RuntimeClass.

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer, get_json};
use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

/// Waits until the quota's `status.used.pods` is `want`.
async fn wait_used(server: &TestServer, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let quota = get_json(server, &["resourcequota", "pods", "-n", "q"]).await;
        if quota["status"]["used"]["pods"] == want {
            assert_eq!(quota["status"]["hard"]["pods"], "5");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "used never became {want}: {quota}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Creates `manifest` once a new quota admits it: a quota refuses everything until the
/// controller has counted it.
async fn create_once_counted(server: &TestServer, manifest: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server
        .kubectl_stdin(&["create", "-f", "-"], Some(manifest))
        .await
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "the quota was never counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server started with `--admission-control-config-file` naming the first of `files`
/// (name, content), all written to a directory kept as long as the server runs.
async fn with_admission_configuration(files: &[(&str, &str)]) -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let flag = format!(
        "--admission-control-config-file={}",
        dir.path().join(files[0].0).display()
    );
    (dir, TestServer::start(Backend::Embedded, &[&flag]).await)
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap()
}

async fn quota_is_never_exceeded(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    server.kubectl_ok(&["create", "namespace", "q"]).await;
    server
        .kubectl_ok(&["create", "quota", "pods", "--hard=pods=5", "-n", "q"])
        .await;
    wait_used(&server, "0").await;
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), "q");
    let creates = (0..20).map(|i| {
        let pods = pods.clone();
        async move {
            pods.create(&PostParams::default(), &pod(&format!("p{i}")))
                .await
        }
    });
    let results = join_all(creates).await;
    let admitted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(admitted, 5, "{results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        let message = refused.to_string();
        assert!(
            message
                .contains("exceeded quota: pods, requested: pods=1, used: pods=5, limited: pods=5"),
            "{message}"
        );
    }
    wait_used(&server, "5").await;
    // Deleting gives the quota back.
    let admitted: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    for name in &admitted[..2] {
        pods.delete(name, &DeleteParams::default()).await.unwrap();
    }
    wait_used(&server, "3").await;
    pods.create(&PostParams::default(), &pod("again"))
        .await
        .unwrap();
    wait_used(&server, "4").await;
}

on_both_backends!(quota_is_never_exceeded);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_ranges_default_and_bound_containers() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server.kubectl_ok(&["create", "namespace", "lr"]).await;
    let range = r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"cpu","namespace":"lr"},
        "spec":{"limits":[{"type":"Container","default":{"cpu":"500m"},"defaultRequest":{"cpu":"200m"},"max":{"cpu":"1"}}]}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], range).await;
    let pod = |name: &str, resources: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"lr"}},
            "spec":{{"containers":[{{"name":"c","image":"busybox","resources":{resources}}}]}}}}"#
        )
    };
    // The LimitRange is read from its watch cache: retry until its defaults are applied.
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let name = format!("p{i}");
        common::ok_stdin(&server, &["create", "-f", "-"], &pod(&name, "{}")).await;
        let created = get_json(&server, &["pod", &name, "-n", "lr"]).await;
        let resources = &created["spec"]["containers"][0]["resources"];
        if resources["limits"]["cpu"] == "500m" {
            assert_eq!(resources["requests"]["cpu"], "200m");
            assert_eq!(
                created["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
                "LimitRanger plugin set: cpu request for container c; cpu limit for container c"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no defaults: {created}");
    }
    let err = common::fails(
        &server,
        &["create", "-f", "-"],
        Some(&pod("big", r#"{"limits":{"cpu":"2"}}"#)),
    )
    .await;
    assert!(
        err.contains(
            r#"pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_get_their_priority_and_default_tolerations() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let pod = |name: &str, class: &str| {
        let class = if class.is_empty() {
            String::new()
        } else {
            format!(r#","priorityClassName":"{class}""#)
        };
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"c","image":"busybox"}}]{class}}}}}"#
        )
    };
    let priority = |pod: &serde_json::Value| pod["spec"]["priority"].as_i64();
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("plain", "")).await;
    assert_eq!(
        priority(&get_json(&server, &["pod", "plain"]).await),
        Some(0)
    );
    common::ok_stdin(
        &server,
        &["create", "-f", "-"],
        &pod("critical", "system-cluster-critical"),
    )
    .await;
    assert_eq!(
        priority(&get_json(&server, &["pod", "critical"]).await),
        Some(2_000_000_000)
    );
    let err = common::fails(
        &server,
        &["create", "-f", "-"],
        Some(&pod("lost", "missing")),
    )
    .await;
    assert!(
        err.contains(r#"pods "lost" is forbidden: no PriorityClass with name missing was found"#),
        "{err}"
    );
    server
        .kubectl_ok(&[
            "create",
            "priorityclass",
            "everyone",
            "--value=7",
            "--global-default",
            "--preemption-policy=Never",
        ])
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let name = format!("p{i}");
        common::ok_stdin(&server, &["create", "-f", "-"], &pod(&name, "")).await;
        let created = get_json(&server, &["pod", &name]).await;
        if priority(&created) == Some(7) {
            assert_eq!(created["spec"]["priorityClassName"], "everyone");
            assert_eq!(created["spec"]["preemptionPolicy"], "Never");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the default class was never used: {created}"
        );
    }
    // Only one class may be the global default; an updated pod keeps its priority.
    let second = [
        "create",
        "priorityclass",
        "second",
        "--value=8",
        "--global-default",
    ];
    let err = common::fails(&server, &second, None).await;
    assert!(
        err.contains(r#"priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass everyone is already marked as default. Only one default can exist"#),
        "{err}"
    );
    let mut critical = get_json(&server, &["pod", "critical"]).await;
    let spec = critical["spec"].as_object_mut().unwrap();
    spec.remove("priority");
    spec.remove("preemptionPolicy");
    common::ok_stdin(&server, &["replace", "-f", "-"], &critical.to_string()).await;
    let replaced = get_json(&server, &["pod", "critical"]).await;
    assert_eq!(priority(&replaced), Some(2_000_000_000));
    // The system classes cannot be deleted.
    let delete = ["delete", "priorityclass", "system-node-critical"];
    let err = common::fails(&server, &delete, None).await;
    assert!(
        err.contains(r#"priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted"#),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_get_the_default_storage_class() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let class = r#"{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast",
        "annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/fast"}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], class).await;
    let claim = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"{name}"}},
            "spec":{{"accessModes":["ReadWriteOnce"],"resources":{{"requests":{{"storage":"1Gi"}}}}}}}}"#
        )
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let name = format!("c{i}");
        common::ok_stdin(&server, &["create", "-f", "-"], &claim(&name)).await;
        let created = get_json(&server, &["pvc", &name]).await;
        if created["spec"]["storageClassName"] == "fast" {
            break;
        }
        assert!(Instant::now() < deadline, "no default class: {created}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_classes_bring_overhead_and_unknown_ones_are_refused() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let class = r#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"sandboxed"},
        "handler":"runsc","overhead":{"podFixed":{"cpu":"250m"}}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], class).await;
    let pod = |name: &str, class: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},
            "spec":{{"runtimeClassName":"{class}","containers":[{{"name":"c","image":"busybox"}}]}}}}"#
        )
    };
    let err = common::fails(
        &server,
        &["create", "-f", "-"],
        Some(&pod("lost", "missing")),
    )
    .await;
    assert!(
        err.contains(r#"pod rejected: RuntimeClass "missing" not found"#),
        "{err}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let name = format!("p{i}");
        let created = server
            .kubectl_stdin(&["create", "-f", "-"], Some(&pod(&name, "sandboxed")))
            .await;
        if created.status.success() {
            let created = get_json(&server, &["pod", &name]).await;
            assert_eq!(
                created["spec"]["overhead"],
                serde_json::json!({"cpu": "250m"})
            );
            break;
        }
        assert!(Instant::now() < deadline, "{}", common::stderr(&created));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_nodes_are_tainted_not_ready() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], node).await;
    let node = get_json(&server, &["node", "n1"]).await;
    assert_eq!(
        node["spec"]["taints"],
        serde_json::json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );
}

/// A bound claim grows only with an expandable class, and its growth is charged to the
/// storage quota (refused beyond it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_grow_only_with_an_expandable_class() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let class = |name: &str, expandable: bool| {
        format!(
            r#"{{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{{"name":"{name}"}},
            "provisioner":"example.com/p","allowVolumeExpansion":{expandable}}}"#
        )
    };
    for (name, expandable) in [("rigid", false), ("elastic", true)] {
        common::ok_stdin(&server, &["create", "-f", "-"], &class(name, expandable)).await;
        let claim = format!(
            r#"{{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"{name}"}},
            "spec":{{"storageClassName":"{name}","accessModes":["ReadWriteOnce"],"resources":{{"requests":{{"storage":"1Gi"}}}}}}}}"#
        );
        common::ok_stdin(&server, &["create", "-f", "-"], &claim).await;
        server
            .kubectl_ok(&[
                "patch",
                "pvc",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"phase":"Bound"}}"#,
            ])
            .await;
    }
    server
        .kubectl_ok(&["create", "quota", "storage", "--hard=requests.storage=3Gi"])
        .await;
    let storage_used = || async {
        get_json(&server, &["resourcequota", "storage"]).await["status"]["used"]["requests.storage"]
            .clone()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while storage_used().await != "2Gi" {
        assert!(Instant::now() < deadline, "the quota was never counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let grow = r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#;
    let err = common::fails(
        &server,
        &["patch", "pvc", "rigid", "--type=merge", "-p", grow],
        None,
    )
    .await;
    assert!(
        err.contains("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"),
        "{err}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let output = server
            .kubectl(&["patch", "pvc", "elastic", "--type=merge", "-p", grow])
            .await;
        if output.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "{}", common::stderr(&output));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(storage_used().await, "3Gi");
    let beyond = r#"{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}"#;
    let err = common::fails(
        &server,
        &["patch", "pvc", "elastic", "--type=merge", "-p", beyond],
        None,
    )
    .await;
    assert!(
        err.contains(
            "persistentvolumeclaims \"elastic\" is forbidden: exceeded quota: storage, \
             requested: requests.storage=1Gi, used: requests.storage=3Gi, \
             limited: requests.storage=3Gi"
        ),
        "{err}"
    );
}

/// ServiceAccount admission with the controllers that give each namespace its `default`
/// account and its `kube-root-ca.crt`: a new namespace's pods run as `default` with the
/// projected token volume in every container; an account's image pull secrets and
/// `automountServiceAccountToken: false` are honoured; an unknown account and secrets an
/// enforcing account does not list are refused with upstream's messages; a deleted `default`
/// account or CA ConfigMap comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_run_as_service_accounts_with_their_token() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server.kubectl_ok(&["create", "namespace", "sa"]).await;
    let pod = |name: &str, spec: serde_json::Value| {
        let mut spec = spec;
        spec["containers"] = json!([{"name": "c", "image": "busybox"}]);
        spec["initContainers"] = json!([{"name": "i", "image": "busybox"}]);
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "sa"}, "spec": spec})
        .to_string()
    };
    // Created right after its namespace: the pod waits for the `default` account.
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("first", json!({}))).await;
    let created = get_json(&server, &["pod", "first", "-n", "sa"]).await;
    let spec = &created["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    let volume = &spec["volumes"][0];
    let name = volume["name"].as_str().unwrap();
    assert!(name.starts_with("kube-api-access-"), "{volume}");
    assert_eq!(
        volume["projected"]["sources"],
        json!([
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ])
    );
    let mount = json!([{"name": name, "readOnly": true,
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    assert_eq!(spec["containers"][0]["volumeMounts"], mount);
    assert_eq!(spec["initContainers"][0]["volumeMounts"], mount);

    // The namespace's CA ConfigMap holds the server's CA.
    let ca = wait_for_json(&server, &["configmap", "kube-root-ca.crt", "-n", "sa"]).await;
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).unwrap();
    let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
    let authority = cluster.certificate_authority_data.as_ref().unwrap();
    use base64::Engine as _;
    let authority = base64::engine::general_purpose::STANDARD
        .decode(authority)
        .unwrap();
    assert_eq!(
        ca["data"]["ca.crt"].as_str(),
        Some(String::from_utf8(authority).unwrap().as_str())
    );

    // An account's pull secrets, and its choice not to mount the token.
    let robot = r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot","namespace":"sa"},
        "imagePullSecrets":[{"name":"registry"}],"automountServiceAccountToken":false}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], robot).await;
    let spec = json!({"serviceAccountName": "robot"});
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("robotic", spec)).await;
    let created = get_json(&server, &["pod", "robotic", "-n", "sa"]).await;
    assert_eq!(
        created["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
    assert!(created["spec"]["volumes"].is_null(), "{created}");

    // Unknown accounts, and secrets an enforcing account does not list.
    let spec = json!({"serviceAccountName": "ghost"});
    let err = common::fails(&server, &["create", "-f", "-"], Some(&pod("haunted", spec))).await;
    assert!(
        err.contains(r#"pods "haunted" is forbidden: error looking up service account sa/ghost: serviceaccount "ghost" not found"#),
        "{err}"
    );
    let strict = r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"strict","namespace":"sa",
        "annotations":{"kubernetes.io/enforce-mountable-secrets":"true"}},"secrets":[{"name":"allowed"}]}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], strict).await;
    let spec = json!({"serviceAccountName": "strict",
        "volumes": [{"name": "s", "secret": {"secretName": "other"}}]});
    let err = common::fails(&server, &["create", "-f", "-"], Some(&pod("nosy", spec))).await;
    assert!(
        err.contains(r#"volume with secret.secretName="other" is not allowed because service account strict does not reference that secret"#),
        "{err}"
    );

    // Deleted, they come back.
    server
        .kubectl_ok(&["delete", "serviceaccount", "default", "-n", "sa"])
        .await;
    server
        .kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "sa"])
        .await;
    wait_for_json(&server, &["serviceaccount", "default", "-n", "sa"]).await;
    wait_for_json(&server, &["configmap", "kube-root-ca.crt", "-n", "sa"]).await;
}

/// `kubectl get <args> -o json`, once it succeeds (within 10 s).
async fn wait_for_json(server: &TestServer, args: &[&str]) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut all = [&["get"], args].concat();
        all.extend(["-o", "json"]);
        let output = server.kubectl(&all).await;
        if output.status.success() {
            return serde_json::from_slice(&output.stdout).expect("JSON");
        }
        assert!(Instant::now() < deadline, "{}", common::stderr(&output));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// PodSecurity through kubectl: a namespace's enforce label refuses pods below its level with
/// upstream's message, warns about workloads' pod templates, warns about existing pods when
/// the level is raised, and invalid labels are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_security_standards_follow_the_namespace_labels() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server.kubectl_ok(&["create", "namespace", "secure"]).await;
    let plain = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"secure"}},
            "spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}}"#
        )
    };
    common::ok_stdin(&server, &["create", "-f", "-"], &plain("before")).await;
    let labelled = server
        .kubectl(&[
            "label",
            "namespace",
            "secure",
            "pod-security.kubernetes.io/enforce=restricted",
        ])
        .await;
    assert!(labelled.status.success(), "{}", common::stderr(&labelled));
    let warnings = common::stderr(&labelled);
    assert!(
        warnings.contains(r#"existing pods in namespace "secure" violate the new PodSecurity enforce level "restricted:latest""#)
            && warnings.contains("before: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"),
        "{warnings}"
    );
    let err = common::fails(&server, &["create", "-f", "-"], Some(&plain("after"))).await;
    assert!(
        err.contains(r#"pods "after" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)"#),
        "{err}"
    );
    let hardened = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hardened","namespace":"secure"},
        "spec":{"securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},
        "containers":[{"name":"c","image":"busybox","securityContext":{"allowPrivilegeEscalation":false,
        "capabilities":{"drop":["ALL"]}}}]}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], hardened).await;
    let created = server
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "-n",
            "secure",
        ])
        .await;
    assert!(created.status.success(), "{}", common::stderr(&created));
    assert!(
        common::stderr(&created).contains(r#"Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false"#),
        "{}",
        common::stderr(&created)
    );
    // A request that fails after admission still carries its warnings.
    let again = server
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "-n",
            "secure",
        ])
        .await;
    let stderr = common::stderr(&again);
    assert!(
        stderr.contains(r#"deployments.apps "web" already exists"#),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"Warning: would violate PodSecurity "restricted:latest""#),
        "{stderr}"
    );
    let err = common::fails(
        &server,
        &[
            "label",
            "namespace",
            "secure",
            "--overwrite",
            "pod-security.kubernetes.io/enforce=strict",
        ],
        None,
    )
    .await;
    assert!(
        err.contains(r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#),
        "{err}"
    );
}

/// PodSecurity's configuration from `--admission-control-config-file`: the default level of
/// unlabelled namespaces, and exempt namespaces, users and runtime classes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_security_defaults_and_exemptions_come_from_the_admission_configuration() {
    let (_dir, server) = with_admission_configuration(&[
        (
            "admission.yaml",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: pod-security.yaml\n",
        ),
        (
            "pod-security.yaml",
            r#"apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults: {enforce: baseline}
exemptions: {namespaces: [trusted], usernames: [ci-bot], runtimeClasses: [sandboxed]}
"#,
        ),
    ])
    .await;
    for namespace in ["plain", "trusted"] {
        server.kubectl_ok(&["create", "namespace", namespace]).await;
    }
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "ci-bot",
            "--clusterrole=cluster-admin",
            "--user=ci-bot",
        ])
        .await;
    let host = |name: &str, namespace: &str, runtime_class: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{namespace}"}},
            "spec":{{"hostNetwork":true,{runtime_class}"containers":[{{"name":"c","image":"busybox"}}]}}}}"#
        )
    };
    let err = common::fails(
        &server,
        &["create", "-f", "-"],
        Some(&host("a", "plain", "")),
    )
    .await;
    assert!(
        err.contains(
            r#"violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)"#
        ),
        "{err}"
    );
    common::ok_stdin(&server, &["create", "-f", "-"], &host("b", "trusted", "")).await;
    common::ok_stdin(
        &server,
        &["create", "--as=ci-bot", "-f", "-"],
        &host("c", "plain", ""),
    )
    .await;
    let class = r#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"sandboxed"},"handler":"runsc"}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], class).await;
    let sandboxed = host("d", "plain", r#""runtimeClassName":"sandboxed","#);
    common::ok_stdin(&server, &["create", "-f", "-"], &sandboxed).await;
}

/// StorageObjectInUseProtection with its controllers: a claim in use by a pod stays (with
/// its finalizer) until the pod goes; an unbound volume is released at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_in_use_outlive_their_deletion_until_their_pods_go() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let claim = r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},
        "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], claim).await;
    let created = get_json(&server, &["pvc", "data"]).await;
    assert_eq!(
        created["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let user = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"user"},
        "spec":{"containers":[{"name":"c","image":"busybox"}],
        "volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data"}}]}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], user).await;
    server
        .kubectl_ok(&["delete", "pvc", "data", "--wait=false"])
        .await;
    let deleting = get_json(&server, &["pvc", "data"]).await;
    assert!(
        deleting["metadata"]["deletionTimestamp"].is_string(),
        "{deleting}"
    );
    server.kubectl_ok(&["delete", "pod", "user"]).await;
    server
        .kubectl_ok(&["wait", "--for=delete", "pvc/data", "--timeout=10s"])
        .await;

    let volume = r#"{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"disk"},
        "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp"}}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], volume).await;
    let created = get_json(&server, &["pv", "disk"]).await;
    assert_eq!(
        created["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    server
        .kubectl_ok(&["delete", "pv", "disk", "--timeout=10s"])
        .await;
}

/// PodTopologyLabels: pods bound to a node (by a Binding, or created with `nodeName`) get
/// the node's `topology.k8s.io` zone and region labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_pods_get_their_nodes_topology_labels() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1",
        "labels":{"topology.k8s.io/zone":"z1","topology.k8s.io/region":"r1","other":"x"}}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], node).await;
    let pod = |name: &str, node: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","labels":{{"topology.k8s.io/zone":"own"}}}},
            "spec":{{"nodeName":"{node}","containers":[{{"name":"c","image":"busybox"}}]}}}}"#
        )
    };
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("placed", "n1")).await;
    let placed = get_json(&server, &["pod", "placed"]).await;
    assert_eq!(
        placed["metadata"]["labels"],
        json!({"topology.k8s.io/zone": "own", "topology.k8s.io/region": "r1"})
    );
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("unplaced", "")).await;
    let binding = r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"unplaced"},
        "target":{"kind":"Node","name":"n1"}}"#;
    common::ok_stdin(
        &server,
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/unplaced/binding",
            "-f",
            "-",
        ],
        binding,
    )
    .await;
    // The labels go onto the Binding, whose labels then overwrite the pod's, as upstream.
    let bound = get_json(&server, &["pod", "unplaced"]).await;
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(
        bound["metadata"]["labels"],
        json!({"topology.k8s.io/zone": "z1", "topology.k8s.io/region": "r1"})
    );
}

/// A quota's scopes choose the pods it tracks: a BestEffort quota of one pod refuses a
/// second BestEffort pod and lets other pods through, and counts only its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_scopes_choose_the_pods_they_count() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server
        .kubectl_ok(&[
            "create",
            "quota",
            "besteffort",
            "--hard=pods=1",
            "--scopes=BestEffort",
        ])
        .await;
    let pod = |name: &str, resources: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},
            "spec":{{"containers":[{{"name":"c","image":"busybox","resources":{resources}}}]}}}}"#
        )
    };
    let limited =
        r#"{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"100m","memory":"64Mi"}}"#;
    create_once_counted(&server, &pod("first", "{}")).await;
    let err = common::fails(&server, &["create", "-f", "-"], Some(&pod("second", "{}"))).await;
    assert!(
        err.contains(
            "exceeded quota: besteffort, requested: pods=1, used: pods=1, limited: pods=1"
        ),
        "{err}"
    );
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("guaranteed", limited)).await;
    // The recount after a deletion counts only the BestEffort pods: none are left.
    server.kubectl_ok(&["delete", "pod", "first"]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let quota = get_json(&server, &["resourcequota", "besteffort"]).await;
        if quota["status"]["used"]["pods"] == "0" {
            break;
        }
        assert!(Instant::now() < deadline, "{quota}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// ResourceQuota's configuration from `--admission-control-config-file`: resources limited by
/// default are used only where a quota covers them (pods of a priority class by a quota of
/// that scope, claims of a storage class by a quota naming that class), with upstream's
/// refusals; other pods and claims need no quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limited_resources_need_a_covering_quota() {
    let (_dir, server) = with_admission_configuration(&[(
        "admission.yaml",
        r#"apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - {scopeName: PriorityClass, operator: In, values: [cluster-services]}
    - resource: persistentvolumeclaims
      matchContains: [gold.storageclass.storage.k8s.io/]
"#,
    )])
    .await;
    let class = r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
        "metadata":{"name":"cluster-services"},"value":1000}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], class).await;
    let pod = |name: &str, class: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},
            "spec":{{{class}"containers":[{{"name":"c","image":"busybox"}}]}}}}"#
        )
    };
    let critical = r#""priorityClassName":"cluster-services","#;
    let claim = |name: &str, class: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"{name}"}},
            "spec":{{"storageClassName":"{class}","accessModes":["ReadWriteOnce"],
            "resources":{{"requests":{{"storage":"1Gi"}}}}}}}}"#
        )
    };
    let err = common::fails(&server, &["create", "-f", "-"], Some(&pod("a", critical))).await;
    assert!(
        err.contains(
            "insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]"
        ),
        "{err}"
    );
    let err = common::fails(&server, &["create", "-f", "-"], Some(&claim("a", "gold"))).await;
    assert!(
        err.contains(
            "persistentvolumeclaims \"a\" is forbidden: insufficient quota to consume: \
             gold.storageclass.storage.k8s.io/persistentvolumeclaims,\
             gold.storageclass.storage.k8s.io/requests.storage"
        ),
        "{err}"
    );
    common::ok_stdin(&server, &["create", "-f", "-"], &pod("plain", "")).await;
    common::ok_stdin(&server, &["create", "-f", "-"], &claim("plain", "silver")).await;

    let quota = r#"{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"critical"},
        "spec":{"hard":{"pods":"10"},"scopeSelector":{"matchExpressions":[
            {"scopeName":"PriorityClass","operator":"In","values":["cluster-services"]}]}}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], quota).await;
    create_once_counted(&server, &pod("a", critical)).await;
    // That quota does not cover the gold claims.
    let err = common::fails(&server, &["create", "-f", "-"], Some(&claim("a", "gold"))).await;
    assert!(err.contains("insufficient quota to consume"), "{err}");
    let storage = r#"{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"gold"},
        "spec":{"hard":{"gold.storageclass.storage.k8s.io/requests.storage":"5Gi",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims":"2"}}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], storage).await;
    create_once_counted(&server, &claim("a", "gold")).await;
    let gold = get_json(&server, &["resourcequota", "gold"]).await;
    assert_eq!(
        gold["status"]["used"],
        json!({"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
            "gold.storageclass.storage.k8s.io/requests.storage": "1Gi"})
    );
}

/// What an object gives back by a change is recounted: a LoadBalancer Service turned
/// ClusterIP frees its load balancer for another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_given_back_by_an_update_is_recounted() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server
        .kubectl_ok(&["create", "quota", "lb", "--hard=services.loadbalancers=1"])
        .await;
    let service = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{name}"}},
            "spec":{{"type":"LoadBalancer","ports":[{{"port":80}}]}}}}"#
        )
    };
    create_once_counted(&server, &service("first")).await;
    let err = common::fails(&server, &["create", "-f", "-"], Some(&service("second"))).await;
    assert!(err.contains("exceeded quota: lb"), "{err}");
    let cluster_ip = r#"{"spec":{"type":"ClusterIP"}}"#;
    server
        .kubectl_ok(&["patch", "service", "first", "-p", cluster_ip])
        .await;
    create_once_counted(&server, &service("second")).await;
}
