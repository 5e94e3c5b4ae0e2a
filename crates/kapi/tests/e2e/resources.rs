//! The real kubectl against kapi for the cluster, networking, RBAC, storage, policy,
//! autoscaling and scheduling kinds: upstream's defaults as read back, the printer columns
//! of `kubectl get`, the 422 errors of invalid objects and of immutable fields, and the
//! autoscaling/v1 view of HorizontalPodAutoscalers stored as autoscaling/v2.

use crate::common;

use common::{Backend, TestServer, fails, get_json, ok_stdin};

/// The header of `kubectl get` output, split into its column names.
fn header(table: &str) -> Vec<String> {
    let first = table.lines().next().unwrap_or_default();
    split_columns(first)
}

/// The row of `name` in `kubectl get` output, split at runs of two or more spaces.
fn row(table: &str, name: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"));
    split_columns(line)
}

/// Columns of a kubectl table line (separated by at least two spaces).
fn split_columns(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .map(str::to_string)
        .collect()
}

async fn server() -> TestServer {
    TestServer::start(Backend::Embedded, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_defaults_columns_and_validation() {
    let server = server().await;
    let manifest = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  ingressClassName: nginx
  tls: [{hosts: [a.example.com]}]
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], manifest).await;
    let ingress = get_json(&server, &["ingress", "web"]).await;
    assert_eq!(ingress["metadata"]["generation"], 1);
    let table = server.kubectl_ok(&["get", "ingress"]).await;
    assert_eq!(
        header(&table),
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    assert_eq!(row(&table, "web")[1..3], ["nginx", "a.example.com"]);
    assert_eq!(row(&table, "web")[3], "80, 443");
    let bad = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad, namespace: default}
spec:
  rules:
  - http:
      paths:
      - {path: /, backend: {service: {name: web, port: {number: 80}}}}
"#;
    let err = fails(&server, &["create", "-f", "-"], Some(bad)).await;
    assert!(
        err.contains(r#"The Ingress "bad" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"#),
        "{err}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_policy_types_are_derived() {
    let server = server().await;
    let manifest = r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: default}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{ports: [{port: 5432}]}]
  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8}}]}]
"#;
    ok_stdin(&server, &["apply", "-f", "-"], manifest).await;
    let policy = get_json(&server, &["networkpolicy", "db"]).await;
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    let table = server.kubectl_ok(&["get", "networkpolicies"]).await;
    assert_eq!(header(&table), ["NAME", "POD-SELECTOR", "AGE"]);
    assert_eq!(row(&table, "db")[1], "app=db");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_bindings() {
    let server = server().await;
    let manifest = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: default}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read-pods, namespace: default}
roleRef: {kind: Role, name: pod-reader}
subjects:
- {kind: User, name: alice}
- {kind: ServiceAccount, name: robot, namespace: default}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], manifest).await;
    let binding = get_json(&server, &["rolebinding", "read-pods"]).await;
    assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(
        binding["subjects"][0]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    let table = server
        .kubectl_ok(&["get", "rolebinding", "-o", "wide"])
        .await;
    assert_eq!(
        header(&table),
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    let binding = row(&table, "read-pods");
    assert_eq!(binding[1], "Role/pod-reader");
    assert_eq!(binding[3], "alice");
    assert_eq!(binding[4], "default/robot");
    let roles = server.kubectl_ok(&["get", "roles"]).await;
    assert_eq!(header(&roles), ["NAME", "CREATED AT"]);
    let err = fails(
        &server,
        &[
            "patch",
            "rolebinding",
            "read-pods",
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"other"}}"#,
        ],
        None,
    )
    .await;
    assert!(err.contains(r#"roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: cannot change roleRef"#), "{err}");
    let bad = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"bad","namespace":"default"},"rules":[{"resources":["pods"],"apiGroups":[""]}]}"#;
    let err = fails(&server, &["create", "-f", "-"], Some(bad)).await;
    assert!(
        err.contains("rules[0].verbs: Required value: verbs must contain at least one value"),
        "{err}"
    );
    // kubectl's generators send protobuf bodies.
    server
        .kubectl_ok(&[
            "create",
            "clusterrole",
            "node-reader",
            "--verb=get",
            "--resource=nodes",
        ])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "read-nodes",
            "--clusterrole=node-reader",
            "--group=ops",
        ])
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_volume_claims() {
    let server = server().await;
    let manifest = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], manifest).await;
    let claim = get_json(&server, &["pvc", "data"]).await;
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim["status"]["phase"], "Pending");
    let table = server.kubectl_ok(&["get", "pvc"]).await;
    assert_eq!(
        header(&table),
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE"
        ]
    );
    assert_eq!(row(&table, "data")[1], "Pending");
    let err = fails(
        &server,
        &[
            "patch",
            "pvc",
            "data",
            "--type=merge",
            "-p",
            r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
        ],
        None,
    )
    .await;
    assert!(
        err.contains("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"),
        "{err}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn horizontal_pod_autoscalers_in_v1_and_v2() {
    let server = server().await;
    let manifest = r#"
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: 60
"#;
    ok_stdin(&server, &["create", "-f", "-"], manifest).await;
    let v2 = get_json(&server, &["horizontalpodautoscalers.v2.autoscaling", "web"]).await;
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(v2["spec"]["minReplicas"], 1);
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        60
    );
    let v1 = get_json(&server, &["horizontalpodautoscalers.v1.autoscaling", "web"]).await;
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    let patch = r#"{"spec":{"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"1k"}}}]}}"#;
    server
        .kubectl_ok(&[
            "patch",
            "horizontalpodautoscalers.v2.autoscaling",
            "web",
            "--type=merge",
            "-p",
            patch,
        ])
        .await;
    let v1 = get_json(&server, &["horizontalpodautoscalers.v1.autoscaling", "web"]).await;
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(
        v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k"}}]"#
    );
    let table = server.kubectl_ok(&["get", "hpa"]).await;
    assert_eq!(
        header(&table),
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    let hpa = row(&table, "web");
    assert_eq!(hpa[1], "Deployment/web");
    assert_eq!(hpa[2], "cpu: <unknown>/70%, <unknown>/1k");
    assert_eq!(hpa[3..6], ["1", "5", "0"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_disruption_budgets() {
    let server = server().await;
    let manifest = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {selector: {matchLabels: {app: web}}, minAvailable: 1}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], manifest).await;
    let pdb = get_json(&server, &["pdb", "web"]).await;
    assert_eq!(pdb["metadata"]["generation"], 1);
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    let table = server.kubectl_ok(&["get", "pdb"]).await;
    assert_eq!(
        header(&table),
        [
            "NAME",
            "MIN AVAILABLE",
            "MAX UNAVAILABLE",
            "ALLOWED DISRUPTIONS",
            "AGE"
        ]
    );
    assert_eq!(row(&table, "web")[1..4], ["1", "N/A", "0"]);
    let bad = manifest
        .replace("name: web", "name: pct")
        .replace("minAvailable: 1", "maxUnavailable: 150%");
    let err = fails(&server, &["create", "-f", "-"], Some(&bad)).await;
    assert!(
        err.contains(
            r#"spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%"#
        ),
        "{err}"
    );
    // kubectl's generator sends a protobuf body.
    server
        .kubectl_ok(&[
            "create",
            "pdb",
            "api",
            "--selector=app=api",
            "--max-unavailable=1",
        ])
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_classes() {
    let server = server().await;
    let manifest = r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000}"#;
    ok_stdin(&server, &["create", "-f", "-"], manifest).await;
    let class = get_json(&server, &["priorityclass", "high"]).await;
    assert_eq!(class["preemptionPolicy"], "PreemptLowerPriority");
    let err = fails(
        &server,
        &[
            "patch",
            "priorityclass",
            "high",
            "--type=merge",
            "-p",
            r#"{"value":5}"#,
        ],
        None,
    )
    .await;
    assert!(
        err.contains("value: Forbidden: may not be changed in an update."),
        "{err}"
    );
    let reserved = manifest.replace("\"high\"", "\"system-mine\"");
    let err = fails(&server, &["create", "-f", "-"], Some(&reserved)).await;
    assert!(
        err.contains("metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"),
        "{err}"
    );
    // The system priority classes are bootstrapped after start.
    let table = server.kubectl_ok(&["get", "priorityclasses"]).await;
    assert_eq!(
        header(&table),
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    );
    assert_eq!(row(&table, "high")[1..3], ["1000", "false"]);
    assert_eq!(row(&table, "system-node-critical")[1], "2000001000");
    assert_eq!(row(&table, "system-cluster-critical")[1], "2000000000");
    // kubectl's generator sends a protobuf body.
    server
        .kubectl_ok(&["create", "priorityclass", "low", "--value=10"])
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_classes() {
    let server = server().await;
    let manifest = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/fast
parameters: {type: ssd}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], manifest).await;
    let class = get_json(&server, &["storageclass", "fast"]).await;
    assert_eq!(class["reclaimPolicy"], "Delete");
    assert_eq!(class["volumeBindingMode"], "Immediate");
    let table = server.kubectl_ok(&["get", "storageclass"]).await;
    assert_eq!(
        header(&table),
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE"
        ]
    );
    assert_eq!(
        row(&table, "fast")[..5],
        [
            "fast (default)",
            "example.com/fast",
            "Delete",
            "Immediate",
            "false"
        ]
    );
    let err = fails(
        &server,
        &[
            "patch",
            "storageclass",
            "fast",
            "--type=merge",
            "-p",
            r#"{"parameters":{"type":"hdd"}}"#,
        ],
        None,
    )
    .await;
    assert!(
        err.contains("parameters: Forbidden: updates to parameters are forbidden."),
        "{err}"
    );
    server.stop().await;
}
