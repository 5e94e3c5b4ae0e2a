//! The workload kinds through the real kubectl: Pods, Deployments, StatefulSets, DaemonSets,
//! Jobs and CronJobs created from YAML and read back with upstream's defaults, invalid ones
//! rejected with kubectl's rendering of upstream's 422 causes, the update rules (pod spec
//! and job template immutability), field selectors and the `kubectl get` columns.

use crate::common;

use common::{Backend, TestServer, stderr, stdout};
use serde_json::Value;

/// One of each workload kind, as a user would write them.
const MANIFEST: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx
    ports:
    - containerPort: 80
    readinessProbe:
      httpGet: {port: 80}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  selector:
    matchLabels: {app: frontend}
  template:
    metadata:
      labels: {app: frontend}
    spec:
      containers:
      - name: app
        image: nginx:1.27
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:17
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: busybox:1.36
---
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: work
            image: busybox:1.36
"#;

/// `kubectl get <what> -o json`.
async fn get_json(server: &TestServer, what: &[&str]) -> Value {
    let mut args = vec!["get"];
    args.extend(what);
    args.extend(["-o", "json"]);
    serde_json::from_str(&server.kubectl_ok(&args).await).expect("JSON")
}

/// Runs kubectl with `input`, expecting it to fail; returns its stderr.
async fn fails(server: &TestServer, args: &[&str], input: Option<&str>) -> String {
    let output = server.kubectl_stdin(args, input).await;
    assert!(
        !output.status.success(),
        "kubectl {args:?} succeeded: {}",
        stdout(&output)
    );
    stderr(&output)
}

/// The header line of `kubectl get <what>`, its columns separated by single spaces.
async fn header(server: &TestServer, what: &[&str]) -> String {
    let mut args = vec!["get"];
    args.extend(what);
    let out = server.kubectl_ok(&args).await;
    let first = out.lines().next().unwrap_or_default();
    first
        .split("   ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread")]
async fn workloads_are_created_with_upstream_defaults() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let output = server
        .kubectl_stdin(&["create", "-f", "-"], Some(MANIFEST))
        .await;
    assert!(output.status.success(), "create: {}", stderr(&output));

    let pod = get_json(&server, &["pod", "web"]).await;
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["securityContext"], serde_json::json!({}));
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
    let container = &spec["containers"][0];
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(container["terminationMessagePolicy"], "File");
    assert_eq!(container["ports"][0]["protocol"], "TCP");
    assert_eq!(container["readinessProbe"]["periodSeconds"], 10);
    assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], "HTTP");
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["status"]["qosClass"], "BestEffort");

    let deployment = get_json(&server, &["deployment", "frontend"]).await;
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(
        spec["strategy"],
        serde_json::json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
    );
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert_eq!(deployment["metadata"]["generation"], 1);

    let statefulset = get_json(&server, &["statefulset", "db"]).await;
    let spec = &statefulset["spec"];
    assert_eq!(spec["podManagementPolicy"], "OrderedReady");
    assert_eq!(spec["updateStrategy"]["rollingUpdate"]["partition"], 0);
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"]["whenDeleted"],
        "Retain"
    );

    let daemonset = get_json(&server, &["daemonset", "agent"]).await;
    assert_eq!(
        daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
        1
    );
    assert_eq!(
        daemonset["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );

    let job = get_json(&server, &["job", "once"]).await;
    let spec = &job["spec"];
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    let uid = job["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        spec["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(spec["template"]["metadata"]["labels"]["job-name"], "once");

    let cronjob = get_json(&server, &["cronjob", "nightly"]).await;
    assert_eq!(cronjob["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cronjob["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(cronjob["spec"]["failedJobsHistoryLimit"], 1);

    let listed = server
        .kubectl_ok(&[
            "get",
            "pods",
            "--field-selector",
            "status.phase=Pending",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(listed.trim(), "pod/web");
    let none = server
        .kubectl_ok(&[
            "get",
            "pods",
            "--field-selector",
            "spec.nodeName=elsewhere",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(none.trim(), "");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_workloads_get_upstreams_causes() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let mismatch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bad\nspec:\n  selector:\n    matchLabels: {app: one}\n  template:\n    metadata:\n      labels: {app: other}\n    spec:\n      containers:\n      - name: app\n        image: nginx\n";
    let err = fails(&server, &["create", "-f", "-"], Some(mismatch)).await;
    assert!(
        err.contains(r#"The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`"#),
        "{err}"
    );

    let empty = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: empty\nspec:\n  restartPolicy: Sometimes\n  containers: []\n";
    let err = fails(&server, &["create", "-f", "-"], Some(empty)).await;
    assert!(
        err.contains(
            "The Pod \"empty\" is invalid: \n* spec.containers: Required value\n* spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"\n"
        ),
        "{err}"
    );

    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: forever\nspec:\n  template:\n    spec:\n      containers:\n      - name: work\n        image: busybox\n";
    let err = fails(&server, &["create", "-f", "-"], Some(job)).await;
    assert!(
        err.contains(r#"The Job "forever" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#),
        "{err}"
    );

    let cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: never\nspec:\n  schedule: \"61 * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n          - name: work\n            image: busybox\n";
    let err = fails(&server, &["create", "-f", "-"], Some(cron)).await;
    assert!(
        err.contains(r#"The CronJob "never" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#),
        "{err}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_follow_upstreams_rules() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let output = server
        .kubectl_stdin(&["create", "-f", "-"], Some(MANIFEST))
        .await;
    assert!(output.status.success(), "create: {}", stderr(&output));

    server
        .kubectl_ok(&["set", "image", "pod/web", "app=nginx:1.28"])
        .await;
    let pod = get_json(&server, &["pod", "web"]).await;
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.28");
    assert_eq!(pod["metadata"]["generation"], 2);

    let err = fails(
        &server,
        &[
            "patch",
            "pod",
            "web",
            "-p",
            r#"{"spec":{"restartPolicy":"Never"}}"#,
        ],
        None,
    )
    .await;
    assert!(
        err.contains("The Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"),
        "{err}"
    );

    let err = fails(
        &server,
        &["patch", "deployment", "frontend", "-p", r#"{"spec":{"selector":{"matchLabels":{"app":"frontend","tier":"web"}},"template":{"metadata":{"labels":{"tier":"web"}}}}}"#],
        None,
    )
    .await;
    assert!(
        err.contains(r#"spec.selector: Invalid value: {"matchLabels":{"app":"frontend","tier":"web"}}: field is immutable"#),
        "{err}"
    );

    let err = fails(
        &server,
        &["set", "image", "job/once", "work=busybox:1.37"],
        None,
    )
    .await;
    assert!(err.contains("spec.template: Invalid value:"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");

    server
        .kubectl_ok(&[
            "patch",
            "statefulset",
            "db",
            "-p",
            r#"{"spec":{"replicas":3}}"#,
        ])
        .await;
    let statefulset = get_json(&server, &["statefulset", "db"]).await;
    assert_eq!(statefulset["spec"]["replicas"], 3);
    assert_eq!(statefulset["metadata"]["generation"], 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_prints_upstreams_columns() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let output = server
        .kubectl_stdin(&["create", "-f", "-"], Some(MANIFEST))
        .await;
    assert!(output.status.success(), "create: {}", stderr(&output));
    let cases: [(&[&str], &str); 7] = [
        (&["pods"], "NAME READY STATUS RESTARTS AGE"),
        (
            &["pods", "-o", "wide"],
            "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES",
        ),
        (&["deployments"], "NAME READY UP-TO-DATE AVAILABLE AGE"),
        (&["statefulsets"], "NAME READY AGE"),
        (
            &["daemonsets"],
            "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
        ),
        (&["jobs"], "NAME STATUS COMPLETIONS DURATION AGE"),
        (
            &["cronjobs"],
            "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
        ),
    ];
    for (what, want) in cases {
        assert_eq!(header(&server, what).await, want, "{what:?}");
    }
    let pods = server.kubectl_ok(&["get", "pods", "-o", "wide"]).await;
    let row: Vec<&str> = pods
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], ["web", "0/1", "Pending", "0"], "{pods}");
    assert_eq!(row[5..], ["<none>", "<none>", "<none>", "<none>"], "{pods}");
    let deployments = server
        .kubectl_ok(&["get", "deployments", "-o", "wide"])
        .await;
    let row: Vec<&str> = deployments
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], ["frontend", "0/1", "0", "0"], "{deployments}");
    assert_eq!(
        row[5..],
        ["app", "nginx:1.27", "app=frontend"],
        "{deployments}"
    );
    let jobs = server.kubectl_ok(&["get", "jobs"]).await;
    let row: Vec<&str> = jobs
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..3], ["once", "Running", "0/1"], "{jobs}");
    server.stop().await;
}
