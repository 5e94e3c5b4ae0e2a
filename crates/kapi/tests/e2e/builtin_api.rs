//! The built-in API through the real kubectl, as a user of kube-apiserver 1.35 meets it: a
//! realistic application manifest (Deployment, Service, ConfigMap, Secret, Ingress,
//! NetworkPolicy, Role and RoleBinding, Job, CronJob, HorizontalPodAutoscaler,
//! PodDisruptionBudget, StatefulSet, DaemonSet, PersistentVolumeClaim, Pod) applied and read
//! back with upstream's defaults filled in, re-applied with changes, printed by `kubectl get`,
//! scaled, and the token and certificate commands.
//!
//! Every expected value is what kube-apiserver 1.35 answers for the same manifest
//! (kubernetes/pkg/apis/*/v1/defaults.go and the registries' strategies); none is relaxed to
//! what kapi happens to do.

use crate::common;

use common::{Backend, TestServer, stderr, stdout};
use serde_json::{Value, json};

/// The application, as a user writes it: only what matters to them, the rest left to the
/// server's defaults.
const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {LOG_LEVEL: info}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: shop}
stringData: {password: s3cret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        envFrom: [{configMapRef: {name: web-config}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - ports: [{port: 80}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: config-reader, namespace: shop}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: config-reader, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: config-reader}
subjects:
- {kind: ServiceAccount, name: default, namespace: shop}
- {kind: User, name: alice}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox:1.36, command: [sh, -c, "true"]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox:1.36}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:16"}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "fluent-bit:3.0"}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: uploads, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: shop}
spec:
  containers: [{name: probe, image: busybox}]
"#;

/// Runs kubectl and fails the test unless it succeeds; returns its stdout.
async fn ok(server: &TestServer, args: &[&str], input: Option<&str>) -> String {
    let output = server.kubectl_stdin(args, input).await;
    assert!(
        output.status.success(),
        "kubectl {args:?} failed: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// `kubectl get <resource> <name> -n shop -o json`.
async fn get(server: &TestServer, resource: &str, name: &str) -> Value {
    let out = ok(
        server,
        &["get", resource, name, "-n", "shop", "-o", "json"],
        None,
    )
    .await;
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("{resource}/{name}: {err}: {out}"))
}

/// Collects every mismatch of one object against upstream's values, so one run reports all.
struct Check<'a> {
    what: &'a str,
    object: &'a Value,
    failures: &'a mut Vec<String>,
}

impl Check<'_> {
    /// The value at the JSON `pointer` must be `want`.
    fn at(&mut self, pointer: &str, want: Value) -> &mut Self {
        let got = self.object.pointer(pointer).cloned().unwrap_or(Value::Null);
        if got != want {
            self.failures
                .push(format!("{} {pointer}: got {got}, want {want}", self.what));
        }
        self
    }

    /// The value at `pointer` must be absent.
    fn absent(&mut self, pointer: &str) -> &mut Self {
        if let Some(got) = self.object.pointer(pointer) {
            self.failures.push(format!(
                "{} {pointer}: got {got}, want it absent",
                self.what
            ));
        }
        self
    }

    /// The string at `pointer` must satisfy `test`, described by `want`.
    fn text(&mut self, pointer: &str, want: &str, test: impl Fn(&str) -> bool) -> &mut Self {
        let got = self.object.pointer(pointer).and_then(Value::as_str);
        if !got.is_some_and(&test) {
            self.failures
                .push(format!("{} {pointer}: got {got:?}, want {want}", self.what));
        }
        self
    }

    /// The pod template defaults of core/v1 (SetDefaults_PodSpec, SetDefaults_Container) at
    /// `spec` (a JSON pointer to a PodSpec) for a container pulled by a tagged image.
    fn pod_spec(&mut self, spec: &str, restart_policy: &str, pull: &str) -> &mut Self {
        self.at(&format!("{spec}/restartPolicy"), json!(restart_policy))
            .at(&format!("{spec}/dnsPolicy"), json!("ClusterFirst"))
            .at(&format!("{spec}/terminationGracePeriodSeconds"), json!(30))
            .at(&format!("{spec}/schedulerName"), json!("default-scheduler"))
            .at(&format!("{spec}/securityContext"), json!({}))
            .at(
                &format!("{spec}/containers/0/terminationMessagePath"),
                json!("/dev/termination-log"),
            )
            .at(
                &format!("{spec}/containers/0/terminationMessagePolicy"),
                json!("File"),
            )
            .at(&format!("{spec}/containers/0/imagePullPolicy"), json!(pull))
            .at(&format!("{spec}/containers/0/resources"), json!({}))
    }
}

/// Checks `object` (named `what` in failures) with `f`.
fn check(failures: &mut Vec<String>, what: &str, object: &Value, f: impl FnOnce(&mut Check)) {
    f(&mut Check {
        what,
        object,
        failures,
    });
}

/// Fails with every collected mismatch.
fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} value(s) differ from kube-apiserver 1.35's:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Applies the application to the `shop` namespace, checking kubectl's report of each object.
async fn apply_manifest(server: &TestServer) {
    ok(server, &["create", "namespace", "shop"], None).await;
    let out = ok(server, &["apply", "-f", "-"], Some(MANIFEST)).await;
    for created in [
        "configmap/web-config created",
        "secret/web-secret created",
        "deployment.apps/web created",
        "service/web created",
        "ingress.networking.k8s.io/web created",
        "networkpolicy.networking.k8s.io/web created",
        "role.rbac.authorization.k8s.io/config-reader created",
        "rolebinding.rbac.authorization.k8s.io/config-reader created",
        "job.batch/migrate created",
        "cronjob.batch/report created",
        "horizontalpodautoscaler.autoscaling/web created",
        "poddisruptionbudget.policy/web created",
        "statefulset.apps/db created",
        "daemonset.apps/agent created",
        "persistentvolumeclaim/uploads created",
        "pod/probe created",
    ] {
        assert!(
            out.lines().any(|l| l == created),
            "no {created:?} in:\n{out}"
        );
    }
}

/// Every object of the application reads back with upstream's defaults.
async fn read_back_defaults(server: &TestServer) {
    let mut failures = Vec::new();

    let deployment = get(server, "deployment", "web").await;
    check(&mut failures, "deployment", &deployment, |c| {
        c.at("/metadata/generation", json!(1))
            .at("/spec/replicas", json!(1))
            .at("/spec/strategy/type", json!("RollingUpdate"))
            .at("/spec/strategy/rollingUpdate/maxSurge", json!("25%"))
            .at("/spec/strategy/rollingUpdate/maxUnavailable", json!("25%"))
            .at("/spec/revisionHistoryLimit", json!(10))
            .at("/spec/progressDeadlineSeconds", json!(600))
            .at("/spec/template/metadata/creationTimestamp", Value::Null)
            .at(
                "/spec/template/spec/containers/0/ports/0/protocol",
                json!("TCP"),
            )
            .pod_spec("/spec/template/spec", "Always", "IfNotPresent")
            .at("/status", json!({}));
    });

    let service = get(server, "service", "web").await;
    check(&mut failures, "service", &service, |c| {
        c.at("/spec/type", json!("ClusterIP"))
            .at("/spec/sessionAffinity", json!("None"))
            .at("/spec/ports/0/protocol", json!("TCP"))
            .at("/spec/ports/0/targetPort", json!(80))
            .at("/spec/internalTrafficPolicy", json!("Cluster"))
            .at("/spec/ipFamilies", json!(["IPv4"]))
            .at("/spec/ipFamilyPolicy", json!("SingleStack"))
            .text("/spec/clusterIP", "an IP of 10.96.0.0/12", |ip| {
                ip.parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|ip| ip.octets()[0] == 10 && (ip.octets()[1] & 0xf0) == 96)
            })
            .at("/status", json!({"loadBalancer": {}}));
    });
    let cluster_ip = service["spec"]["clusterIP"].clone();
    check(&mut failures, "service", &service, |c| {
        c.at("/spec/clusterIPs", json!([cluster_ip]));
    });

    let secret = get(server, "secret", "web-secret").await;
    check(&mut failures, "secret", &secret, |c| {
        c.at("/type", json!("Opaque"))
            .at("/data/password", json!("czNjcmV0"))
            .absent("/stringData");
    });

    let ingress = get(server, "ingress", "web").await;
    check(&mut failures, "ingress", &ingress, |c| {
        c.at("/metadata/generation", json!(1))
            .at("/spec/rules/0/http/paths/0/pathType", json!("Prefix"))
            .at("/status", json!({"loadBalancer": {}}));
    });

    let policy = get(server, "networkpolicy", "web").await;
    check(&mut failures, "networkpolicy", &policy, |c| {
        c.at("/metadata/generation", json!(1))
            .at("/spec/policyTypes", json!(["Ingress"]))
            .at("/spec/ingress/0/ports/0/protocol", json!("TCP"));
    });

    let binding = get(server, "rolebinding", "config-reader").await;
    check(&mut failures, "rolebinding", &binding, |c| {
        c.at("/subjects/0/apiGroup", Value::Null)
            .at("/subjects/1/apiGroup", json!("rbac.authorization.k8s.io"))
            .at("/roleRef/kind", json!("Role"));
    });

    let job = get(server, "job", "migrate").await;
    let uid = job["metadata"]["uid"].clone();
    check(&mut failures, "job", &job, |c| {
        c.at("/metadata/generation", json!(1))
            .at("/spec/completions", json!(1))
            .at("/spec/parallelism", json!(1))
            .at("/spec/backoffLimit", json!(6))
            .at("/spec/completionMode", json!("NonIndexed"))
            .at("/spec/suspend", json!(false))
            .at("/spec/podReplacementPolicy", json!("TerminatingOrFailed"))
            .at("/spec/manualSelector", json!(false))
            .at(
                "/spec/selector/matchLabels",
                json!({"batch.kubernetes.io/controller-uid": uid}),
            )
            .at("/spec/template/metadata/labels/controller-uid", uid.clone())
            .at(
                "/spec/template/metadata/labels/batch.kubernetes.io~1controller-uid",
                uid.clone(),
            )
            .at("/spec/template/metadata/labels/job-name", json!("migrate"))
            .at(
                "/spec/template/metadata/labels/batch.kubernetes.io~1job-name",
                json!("migrate"),
            )
            .pod_spec("/spec/template/spec", "Never", "IfNotPresent")
            .at("/status", json!({}));
    });

    let cronjob = get(server, "cronjob", "report").await;
    check(&mut failures, "cronjob", &cronjob, |c| {
        c.at("/spec/concurrencyPolicy", json!("Allow"))
            .at("/spec/suspend", json!(false))
            .at("/spec/successfulJobsHistoryLimit", json!(3))
            .at("/spec/failedJobsHistoryLimit", json!(1))
            .pod_spec(
                "/spec/jobTemplate/spec/template/spec",
                "OnFailure",
                "IfNotPresent",
            )
            .at("/status", json!({}));
    });

    let hpa = get(server, "hpa", "web").await;
    check(&mut failures, "hpa", &hpa, |c| {
        c.at("/apiVersion", json!("autoscaling/v2"))
            .at("/spec/minReplicas", json!(1))
            .at(
                "/spec/metrics/0/resource/target/averageUtilization",
                json!(70),
            )
            .absent("/spec/behavior");
    });
    let hpa_v1 = get(server, "horizontalpodautoscalers.v1.autoscaling", "web").await;
    check(&mut failures, "hpa (autoscaling/v1)", &hpa_v1, |c| {
        c.at("/apiVersion", json!("autoscaling/v1"))
            .at("/spec/minReplicas", json!(1))
            .at("/spec/maxReplicas", json!(5))
            .at("/spec/targetCPUUtilizationPercentage", json!(70));
    });

    let pdb = get(server, "pdb", "web").await;
    check(&mut failures, "pdb", &pdb, |c| {
        c.at("/metadata/generation", json!(1))
            .at("/spec/minAvailable", json!(1))
            .at(
                "/status",
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                       "expectedPods": 0}),
            );
    });

    let statefulset = get(server, "statefulset", "db").await;
    check(&mut failures, "statefulset", &statefulset, |c| {
        c.at("/metadata/generation", json!(1))
            .at("/spec/replicas", json!(1))
            .at("/spec/podManagementPolicy", json!("OrderedReady"))
            .at(
                "/spec/updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            )
            .at("/spec/revisionHistoryLimit", json!(10))
            .at(
                "/spec/persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            )
            .at(
                "/spec/volumeClaimTemplates/0/spec/volumeMode",
                json!("Filesystem"),
            )
            .at(
                "/spec/volumeClaimTemplates/0/status/phase",
                json!("Pending"),
            )
            .at("/spec/volumeClaimTemplates/0/apiVersion", json!("v1"))
            .at(
                "/spec/volumeClaimTemplates/0/kind",
                json!("PersistentVolumeClaim"),
            )
            .pod_spec("/spec/template/spec", "Always", "IfNotPresent");
    });

    let daemonset = get(server, "daemonset", "agent").await;
    check(&mut failures, "daemonset", &daemonset, |c| {
        c.at("/metadata/generation", json!(1))
            .at(
                "/spec/updateStrategy",
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            )
            .at("/spec/revisionHistoryLimit", json!(10))
            .pod_spec("/spec/template/spec", "Always", "IfNotPresent");
    });

    let pvc = get(server, "pvc", "uploads").await;
    check(&mut failures, "pvc", &pvc, |c| {
        c.at("/spec/volumeMode", json!("Filesystem"))
            .at("/status/phase", json!("Pending"));
    });

    let pod = get(server, "pod", "probe").await;
    check(&mut failures, "pod", &pod, |c| {
        c.pod_spec("/spec", "Always", "Always")
            .at("/spec/enableServiceLinks", json!(true))
            .at("/spec/priority", json!(0))
            .at("/spec/preemptionPolicy", json!("PreemptLowerPriority"))
            .at("/status/phase", json!("Pending"))
            .at("/status/qosClass", json!("BestEffort"));
    });
    assert_no_failures(&failures);
}

/// Re-applying the manifest with changes made client-side updates what changed and keeps
/// the defaults (three-way merge against the last-applied annotation).
async fn reapply_with_changes(server: &TestServer) {
    let changed = MANIFEST
        .replace("image: nginx:1.27", "image: nginx:1.28")
        .replace("data: {LOG_LEVEL: info}", "data: {LOG_LEVEL: debug}")
        .replace("minAvailable: 1", "minAvailable: 2");
    let out = ok(server, &["apply", "-f", "-"], Some(&changed)).await;
    for line in [
        "configmap/web-config configured",
        "deployment.apps/web configured",
        "poddisruptionbudget.policy/web configured",
        "service/web unchanged",
        "job.batch/migrate unchanged",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?} in:\n{out}");
    }
    let mut failures = Vec::new();
    let deployment = get(server, "deployment", "web").await;
    check(&mut failures, "deployment", &deployment, |c| {
        c.at("/metadata/generation", json!(2))
            .at(
                "/spec/template/spec/containers/0/image",
                json!("nginx:1.28"),
            )
            .at("/spec/strategy/rollingUpdate/maxSurge", json!("25%"))
            .text(
                "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
                "the applied manifest",
                |text| text.contains("nginx:1.28"),
            );
    });
    let config = get(server, "configmap", "web-config").await;
    check(&mut failures, "configmap", &config, |c| {
        c.at("/data/LOG_LEVEL", json!("debug"));
    });
    let pdb = get(server, "pdb", "web").await;
    check(&mut failures, "pdb", &pdb, |c| {
        c.at("/metadata/generation", json!(2))
            .at("/spec/minAvailable", json!(2));
    });
    assert_no_failures(&failures);
}

/// The cells of the row named `name` of `kubectl get` output, and its header.
fn row(out: &str, name: &str) -> (Vec<String>, Vec<String>) {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default().split_whitespace();
    let header = header.map(String::from).collect();
    let row = lines
        .find(|line| line.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"));
    (header, row.split_whitespace().map(String::from).collect())
}

/// `kubectl get` prints upstream's columns for deployments, services and pods.
async fn get_columns(server: &TestServer) {
    let out = ok(server, &["get", "deployments", "-n", "shop"], None).await;
    let (header, cells) = row(&out, "web");
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(cells[..4], ["web", "0/1", "0", "0"], "{out}");

    let out = ok(server, &["get", "services", "-n", "shop"], None).await;
    let (header, cells) = row(&out, "web");
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    let service = get(server, "service", "web").await;
    let ip = service["spec"]["clusterIP"].as_str().unwrap_or_default();
    assert_eq!(
        cells[..5],
        ["web", "ClusterIP", ip, "<none>", "80/TCP"],
        "{out}"
    );

    let out = ok(server, &["get", "pods", "-n", "shop"], None).await;
    let (header, cells) = row(&out, "probe");
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(cells[..4], ["probe", "0/1", "Pending", "0"], "{out}");

    let out = ok(
        server,
        &["get", "deployments", "-n", "shop", "-o", "wide"],
        None,
    )
    .await;
    let (header, cells) = row(&out, "web");
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(cells[5..], ["web", "nginx:1.27", "app=web"], "{out}");
}

/// `kubectl scale deployment` goes through the scale subresource.
async fn scale(server: &TestServer) {
    let out = ok(
        server,
        &["scale", "deployment", "web", "-n", "shop", "--replicas=3"],
        None,
    )
    .await;
    assert_eq!(out, "deployment.apps/web scaled\n");
    let deployment = get(server, "deployment", "web").await;
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment}");
    let scale = ok(
        server,
        &[
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/shop/deployments/web/scale",
        ],
        None,
    )
    .await;
    let scale: Value = serde_json::from_str(&scale).expect("a Scale");
    assert_eq!(
        (
            &scale["apiVersion"],
            &scale["kind"],
            &scale["spec"],
            &scale["status"]
        ),
        (
            &json!("autoscaling/v1"),
            &json!("Scale"),
            &json!({"replicas": 3}),
            &json!({"replicas": 0, "selector": "app=web"})
        )
    );
}

/// `kubectl create token` asks the serviceaccounts/token subresource for a signed JWT.
async fn create_token(server: &TestServer) {
    // The namespace's default service account is kapi's (as kube-controller-manager's) to
    // create; the pods created earlier in `shop` waited for it.
    let token = ok(server, &["create", "token", "default", "-n", "shop"], None).await;
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT: {token}");
    use base64::Engine as _;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[1])
        .expect("base64url claims");
    let claims: Value = serde_json::from_slice(&claims).expect("JSON claims");
    assert_eq!(
        claims["sub"], "system:serviceaccount:shop:default",
        "{claims}"
    );
    assert_eq!(claims["kubernetes.io"]["namespace"], "shop", "{claims}");
    let lifetime = claims["exp"].as_i64().unwrap_or(0) - claims["iat"].as_i64().unwrap_or(0);
    assert_eq!(lifetime, 3600, "{claims}");
}

/// A CertificateSigningRequest for a client certificate, approved with kubectl.
async fn approve_certificate(server: &TestServer) {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    let request = params
        .serialize_request(&key)
        .expect("a CSR")
        .pem()
        .expect("PEM");
    use base64::Engine as _;
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(request),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
        },
    });
    ok(server, &["create", "-f", "-"], Some(&csr.to_string())).await;
    let mut failures = Vec::new();
    let created = get(server, "csr", "alice").await;
    check(&mut failures, "csr", &created, |c| {
        c.at("/spec/username", json!("kapi-admin"))
            .at(
                "/spec/groups",
                json!(["system:masters", "system:authenticated"]),
            )
            .at("/status", json!({}));
    });
    let out = ok(server, &["get", "csr", "alice"], None).await;
    let (header, cells) = row(&out, "alice");
    let columns = [
        "NAME",
        "AGE",
        "SIGNERNAME",
        "REQUESTOR",
        "REQUESTEDDURATION",
        "CONDITION",
    ];
    if header != columns || cells.last().map(String::as_str) != Some("Pending") {
        failures.push(format!("kubectl get csr before approval:\n{out}"));
    }
    let out = ok(server, &["certificate", "approve", "alice"], None).await;
    if out != "certificatesigningrequest.certificates.k8s.io/alice approved\n" {
        failures.push(format!("kubectl certificate approve: {out}"));
    }
    let approved = get(server, "csr", "alice").await;
    check(&mut failures, "approved csr", &approved, |c| {
        c.at("/status/conditions/0/type", json!("Approved"))
            .at("/status/conditions/0/status", json!("True"))
            .at("/status/conditions/0/reason", json!("KubectlApprove"))
            .at(
                "/status/conditions/0/message",
                json!("This CSR was approved by kubectl certificate approve."),
            );
    });
    // The signing controller issues the certificate.
    let mut out = String::new();
    for _ in 0..300 {
        out = ok(server, &["get", "csr", "alice"], None).await;
        if row(&out, "alice").1.last().map(String::as_str) == Some("Approved,Issued") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    if row(&out, "alice").1.last().map(String::as_str) != Some("Approved,Issued") {
        failures.push(format!("kubectl get csr after approval:\n{out}"));
    }
    assert_no_failures(&failures);
}

/// Runs `step` on a new server with the application applied.
async fn on_shop<F>(backend: Backend, step: F)
where
    F: AsyncFnOnce(&TestServer),
{
    let server = TestServer::start(backend, &[]).await;
    apply_manifest(&server).await;
    step(&server).await;
    server.stop().await;
}

async fn defaults(backend: Backend) {
    on_shop(backend, read_back_defaults).await;
}

async fn reapply(backend: Backend) {
    on_shop(backend, reapply_with_changes).await;
}

async fn columns(backend: Backend) {
    on_shop(backend, get_columns).await;
}

async fn scale_deployment(backend: Backend) {
    on_shop(backend, scale).await;
}

async fn token(backend: Backend) {
    on_shop(backend, create_token).await;
}

async fn certificate(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    approve_certificate(&server).await;
    server.stop().await;
}

on_both_backends!(
    defaults,
    reapply,
    columns,
    scale_deployment,
    token,
    certificate
);
