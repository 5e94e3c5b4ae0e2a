//! Auditing end to end: an audit policy, the log backend and the webhook backend (a real
//! HTTPS receiver started by the test), checked against what kube-apiserver's events hold:
//! levels, omitted stages, object references filled from the request, request and response
//! objects without managed fields, error statuses, the authorization annotations,
//! impersonation and failed authentication.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{self, Backend, TestServer};
use serde_json::{Value, json};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/readyz*", "/healthz*", "/livez*", "/openapi*", "/api", "/apis*", "/version"]
  - level: RequestResponse
    namespaces: ["audited"]
    resources: [{group: "", resources: ["configmaps"]}]
    omitManagedFields: true
  - level: Metadata
    resources: [{group: "", resources: ["secrets"]}]
  - level: Metadata
"#;

/// Waits until `events()` holds an event `matches` accepts, and returns it.
async fn event(
    events: impl Fn() -> Vec<Value>,
    what: &str,
    matches: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = events().into_iter().find(|e| matches(e)) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "no audit event {what} in {:#?}",
            events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn is(event: &Value, verb: &str, resource: &str, name: &str) -> bool {
    event["verb"] == verb
        && event["objectRef"]["resource"] == resource
        && event["objectRef"]["name"] == name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_audited_as_the_policy_says() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = received.clone();
    let (address, ca) = common::serve_webhook(move |_, list: Value| {
        let sink = sink.clone();
        async move {
            assert_eq!(list["kind"], "EventList");
            sink.lock()
                .unwrap()
                .extend(list["items"].as_array().cloned().unwrap_or_default());
            json!({})
        }
    })
    .await;
    let webhook = common::webhook_kubeconfig(&format!("https://{address}/audit"), &ca);
    let webhook_flag = format!("--audit-webhook-config-file={}", webhook.path().display());
    let flags = [
        webhook_flag.as_str(),
        "--audit-webhook-batch-max-wait=100ms",
    ];
    let (server, _audit, log) = common::audited(POLICY, &flags).await;
    let events = || common::audit_events(&log);

    server.kubectl_ok(&["create", "namespace", "audited"]).await;
    server
        .kubectl_ok(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "audited",
            "--from-literal=a=b",
        ])
        .await;
    // The log's default mode (blocking) writes an event before its response is sent.
    let created = events()
        .into_iter()
        .find(|e| is(e, "create", "configmaps", "settings"))
        .expect("the create's event is in the log when kubectl returns");
    assert_eq!(created["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(created["kind"], "Event");
    assert_eq!(created["level"], "RequestResponse");
    assert_eq!(created["stage"], "ResponseComplete");
    assert_eq!(created["user"]["username"], "kapi-admin");
    assert_eq!(created["objectRef"]["namespace"], "audited");
    assert_eq!(created["objectRef"]["apiVersion"], "v1");
    assert_eq!(
        created["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );
    assert_eq!(created["requestObject"]["data"], json!({"a": "b"}));
    assert_eq!(created["responseObject"]["metadata"]["name"], "settings");
    assert!(
        created["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "{created}"
    );
    assert_eq!(
        created["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(
        created["requestReceivedTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert!(created["sourceIPs"][0] == "127.0.0.1", "{created}");
    assert!(
        created["userAgent"]
            .as_str()
            .unwrap()
            .starts_with("kubectl")
    );
    let stages: Vec<Value> = events()
        .into_iter()
        .filter(|e| e["auditID"] == created["auditID"])
        .map(|e| e["stage"].clone())
        .collect();
    assert_eq!(stages, ["ResponseComplete"], "RequestReceived is omitted");

    // Errors carry their Status; secrets are audited without their content.
    let missing = server
        .kubectl(&["get", "secret", "nothing", "-n", "audited"])
        .await;
    assert!(!missing.status.success());
    let not_found = event(events, "for the missing secret", |e| {
        is(e, "get", "secrets", "nothing")
    })
    .await;
    assert_eq!(not_found["level"], "Metadata");
    assert_eq!(not_found["responseStatus"]["code"], 404);
    assert_eq!(not_found["responseStatus"]["reason"], "NotFound");
    assert!(not_found.get("responseObject").is_none());
    server
        .kubectl_ok(&[
            "create",
            "secret",
            "generic",
            "key",
            "-n",
            "audited",
            "--from-literal=k=v",
        ])
        .await;
    let secret = event(events, "for the secret", |e| {
        is(e, "create", "secrets", "key")
    })
    .await;
    assert!(secret.get("requestObject").is_none() && secret.get("responseObject").is_none());
    // A delete's Success Status is recorded at Metadata too (and at RequestResponse, with
    // its code).
    server
        .kubectl_ok(&["delete", "secret", "key", "-n", "audited"])
        .await;
    let deleted = event(events, "for the secret's delete", |e| {
        is(e, "delete", "secrets", "key")
    })
    .await;
    let status = &deleted["responseStatus"];
    assert_eq!(status["status"], "Success", "{deleted}");
    assert_eq!(status["code"], 200, "{deleted}");
    assert_eq!(status["details"]["name"], "key", "{deleted}");
    server
        .kubectl_ok(&["delete", "configmap", "settings", "-n", "audited"])
        .await;
    let deleted = event(events, "for the configmap's delete", |e| {
        is(e, "delete", "configmaps", "settings")
    })
    .await;
    assert_eq!(deleted["level"], "RequestResponse");
    assert_eq!(deleted["responseStatus"]["code"], 200, "{deleted}");
    assert_eq!(deleted["responseStatus"]["status"], "Success", "{deleted}");

    // Impersonation: the event names both users; RBAC's refusal is annotated.
    let forbidden = server
        .kubectl(&["get", "pods", "-n", "audited", "--as=bob"])
        .await;
    assert!(!forbidden.status.success());
    let bob = event(events, "for bob's list", |e| {
        e["impersonatedUser"]["username"] == "bob"
    })
    .await;
    assert_eq!(bob["user"]["username"], "kapi-admin");
    assert_eq!(bob["responseStatus"]["code"], 403);
    assert_eq!(
        bob["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );

    // A bad token is audited with the methods it tried.
    let stranger = crate::authn::token_kubeconfig(&server, "stranger", "nope");
    let refused = common::kubectl(&stranger, &["get", "pods"], None).await;
    assert!(!refused.status.success());
    let failed = event(events, "for the bad token", |e| {
        e["responseStatus"]["code"] == 401
    })
    .await;
    assert_eq!(failed["stage"], "ResponseStarted");
    assert_eq!(failed["user"], json!({}));
    assert_eq!(
        failed["responseStatus"]["message"],
        "Authentication failed, attempted: bearer"
    );

    // Watches are audited when they start and when they end.
    let watch = server
        .kubectl(&[
            "get",
            "configmaps",
            "-n",
            "audited",
            "--watch",
            "--request-timeout=1s",
        ])
        .await;
    drop(watch);
    let started = event(events, "for the watch's start", |e| {
        e["verb"] == "watch"
            && e["stage"] == "ResponseStarted"
            && e["user"]["username"] == "kapi-admin"
    })
    .await;
    event(events, "for the watch's end", |e| {
        e["auditID"] == started["auditID"] && e["stage"] == "ResponseComplete"
    })
    .await;

    // The webhook receives the same events, in batches.
    let hooked = || received.lock().unwrap().clone();
    let sent = event(hooked, "sent to the webhook", |e| {
        e["auditID"] == created["auditID"]
    })
    .await;
    assert_eq!(sent, created);
    // The Audit-Id response header names the event.
    let output = server
        .kubectl(&["get", "configmap", "settings", "-n", "audited", "-v=8"])
        .await;
    let header = common::stderr(&output)
        .lines()
        .find_map(|l| l.split("Audit-Id: ").nth(1).map(|id| id.trim().to_string()))
        .expect("an Audit-Id header");
    event(events, "with the response's Audit-Id", |e| {
        e["auditID"] == header.as_str()
    })
    .await;
}

/// The value of the sample `name` (with its labels) in `/metrics`, or 0 when absent.
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

/// A log that cannot be written (`/dev/full`): in `blocking` mode requests go on; in
/// `blocking-strict` a request whose RequestReceived event is lost fails with upstream's 500.
/// The audit metrics count the lost events, the levels and the refused request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mode_fails_requests_whose_events_are_lost() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/readyz*", "/healthz*", "/livez*", "/api", "/apis*", "/metrics", "/version"]
  - level: None
    users: ["system:apiserver"]
  - level: Metadata
"#,
    )
    .unwrap();
    for (mode, fails) in [("blocking", false), ("blocking-strict", true)] {
        // Only kubectl's requests are counted: the garbage collector's, the leader
        // election's and the server's own (its identity lease's) would be too.
        let flags = [
            format!("--audit-policy-file={}", policy.display()),
            "--audit-log-path=/dev/full".to_string(),
            format!("--audit-log-mode={mode}"),
            "--controllers=*,-garbage-collector-controller".to_string(),
            "--leader-elect=false".to_string(),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let server = TestServer::start(Backend::Embedded, &flags).await;
        let output = server.kubectl(&["get", "namespace", "default"]).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(!output.status.success(), fails, "{mode}: {stderr}");
        if fails {
            assert!(
                stderr.contains("Internal error occurred: failed to store audit event"),
                "{stderr}"
            );
        }
        let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]).await;
        let lost = sample(&metrics, r#"apiserver_audit_error_total{plugin="log"}"#);
        let rejected = sample(&metrics, "apiserver_audit_requests_rejected_total");
        let events = sample(&metrics, "apiserver_audit_event_total");
        if fails {
            // RequestReceived was lost; the request never ran.
            assert_eq!((lost, rejected), (1.0, 1.0), "{metrics}");
        } else {
            // RequestReceived and ResponseComplete were both lost; the request ran.
            assert_eq!((lost, rejected), (2.0, 0.0), "{metrics}");
        }
        assert_eq!(events, lost, "{metrics}");
        let metadata = sample(&metrics, r#"apiserver_audit_level_total{level="Metadata"}"#);
        assert_eq!(metadata, 1.0, "{metrics}");
        assert!(
            sample(&metrics, r#"apiserver_audit_level_total{level="None"}"#) >= 1.0,
            "{metrics}"
        );
    }
}

/// The webhook's blocking modes: in `blocking` an event has reached the webhook when the
/// response arrives; in `blocking-strict` a request whose RequestReceived event cannot be
/// sent fails with upstream's 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_webhook_holds_requests_until_their_events_are_sent() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = received.clone();
    let (address, ca) = common::serve_webhook(move |_, list: Value| {
        let sink = sink.clone();
        async move {
            let items = list["items"].as_array().cloned().unwrap_or_default();
            sink.lock().unwrap().extend(items);
            json!({})
        }
    })
    .await;
    let policy = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/readyz*", "/healthz*", "/livez*", "/api", "/apis*", "/version"]
  - level: Metadata
"#;
    let webhook = common::webhook_kubeconfig(&format!("https://{address}/audit"), &ca);
    let flag = format!("--audit-webhook-config-file={}", webhook.path().display());
    let flags = [flag.as_str(), "--audit-webhook-mode=blocking"];
    let (server, _audit, _log) = common::audited(policy, &flags).await;
    server.kubectl_ok(&["get", "namespace", "default"]).await;
    let stages: Vec<Value> = received
        .lock()
        .unwrap()
        .iter()
        .filter(|e| is(e, "get", "namespaces", "default"))
        .map(|e| e["stage"].clone())
        .collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"]);

    // Nothing listens on the port of a stopped listener.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = common::webhook_kubeconfig(&format!("https://127.0.0.1:{port}/audit"), &ca);
    let flag = format!(
        "--audit-webhook-config-file={}",
        unreachable.path().display()
    );
    let flags = [
        flag.as_str(),
        "--audit-webhook-mode=blocking-strict",
        "--audit-webhook-initial-backoff=10ms",
    ];
    let (server, _audit, _log) = common::audited(policy, &flags).await;
    let output = server.kubectl(&["get", "namespace", "default"]).await;
    assert!(!output.status.success());
    assert!(
        common::stderr(&output).contains("Internal error occurred: failed to store audit event"),
        "{}",
        common::stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_audit_flags_stop_the_server() {
    use clap::Parser;
    use kapi::flags::{Cli, Command};
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let port = kapi_testing::free_port().to_string();
    let data = dir.path().join("data");
    let args = [
        "kapi".to_string(),
        "serve".into(),
        "--secure-port".into(),
        port,
        "--data-dir".into(),
        data.display().to_string(),
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", log.display()),
    ];
    let Command::Serve(options) = Cli::try_parse_from(&args).unwrap().command else {
        panic!("kapi serve flags")
    };
    let err = kapi::serve::start(options)
        .await
        .err()
        .expect("a bad policy is refused");
    assert!(
        format!("{err:#}").contains("rules[0].level: Unsupported value: \"Everything\""),
        "{err:#}"
    );
}

/// A mutating admission webhook for the test: labels every ConfigMap and
/// adds an audit annotation.
async fn label_configmaps(_: String, review: Value) -> Value {
    use base64::Engine;
    let request = &review["request"];
    let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"labelled": "yes"}}]);
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
        "uid": request["uid"], "allowed": true, "patchType": "JSONPatch",
        "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
        "auditAnnotations": {"seen": "yes"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_plugins_annotate_audit_events() {
    let (server, _audit, log) = common::audited(POLICY, &[]).await;
    let events = || common::audit_events(&log);
    let (address, ca) = common::serve_webhook(label_configmaps).await;
    let setup = format!(
        r#"
apiVersion: v1
kind: Namespace
metadata:
  name: audited
  labels: {{pod-security.kubernetes.io/audit: restricted}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: labeller}}
webhooks:
- name: labeller.example.com
  clientConfig: {{url: "https://{address}/label", caBundle: "{ca}"}}
  rules: [{{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}]
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: audited}}}}
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: small}}
spec:
  matchConstraints:
    resourceRules: [{{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}]
  validations:
  - expression: "true"
  - expression: "!has(object.data) || object.data.size() < 2"
    message: at most one key
  auditAnnotations:
  - key: keys
    valueExpression: "has(object.data) ? string(object.data.size()) : null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: small-audit}}
spec:
  policyName: small
  validationActions: [Audit, Warn]
  matchResources:
    namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: audited}}}}
"#,
        ca = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(&ca)
        }
    );
    common::ok_stdin(&server, &["apply", "-f", "-"], &setup).await;

    // The policy and webhook configuration reach admission through their watch caches.
    let deadline = Instant::now() + Duration::from_secs(10);
    let created = loop {
        let name = format!("big-{}", Instant::now().elapsed().as_nanos());
        server
            .kubectl_ok(&[
                "create",
                "configmap",
                &name,
                "-n",
                "audited",
                "--from-literal=a=1",
                "--from-literal=b=2",
            ])
            .await;
        let event = event(events, "for the configmap", |e| {
            is(e, "create", "configmaps", &name)
        })
        .await;
        let annotations = &event["annotations"];
        if annotations.get("small/keys").is_some()
            && annotations.get("labeller.example.com/seen").is_some()
        {
            break event;
        }
        assert!(
            Instant::now() < deadline,
            "no admission annotations in {event:#}"
        );
    };
    let annotations = &created["annotations"];
    assert_eq!(annotations["small/keys"], "2");
    let failure: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        failure,
        json!([{"message": "at most one key", "policy": "small", "binding": "small-audit",
            "expressionIndex": 1, "validationActions": ["Audit", "Warn"]}])
    );
    assert_eq!(annotations["labeller.example.com/seen"], "yes");
    let mutation: Value = serde_json::from_str(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        mutation,
        json!({"configuration": "labeller", "webhook": "labeller.example.com", "mutated": true})
    );
    // RequestResponse level: the patch too.
    let patch: Value = serde_json::from_str(
        annotations["patch.webhook.admission.k8s.io/round_0_index_0"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(patch["patchType"], "JSONPatch");
    assert_eq!(patch["patch"][0]["path"], "/metadata/labels");

    // PodSecurity: the enforced policy, and what the audit level would refuse.
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"plain","namespace":"audited"},
        "spec":{"containers":[{"name":"c","image":"busybox"}]}}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], pod).await;
    let created = event(events, "for the pod", |e| is(e, "create", "pods", "plain")).await;
    assert_eq!(
        created["annotations"]["pod-security.kubernetes.io/enforce-policy"],
        "privileged:latest"
    );
    let violations = created["annotations"]["pod-security.kubernetes.io/audit-violations"]
        .as_str()
        .unwrap();
    assert!(
        violations.starts_with(
            "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false"
        ),
        "{violations}"
    );
}
