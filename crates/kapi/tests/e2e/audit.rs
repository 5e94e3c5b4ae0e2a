//! Auditing end to end: an audit policy, the log backend and the webhook backend (a real
//! HTTPS receiver started by the test), checked against what kube-apiserver's events hold:
//! levels, omitted stages, object references filled from the request, request and response
//! objects without managed fields, error statuses, the authorization annotations,
//! impersonation and failed authentication.

use std::path::Path;
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

/// The events of the log at `path` so far.
fn log_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event per line"))
        .collect()
}

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
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.path().join("logs/audit.log");
    let flags = [
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", log.display()),
        format!("--audit-webhook-config-file={}", webhook.path().display()),
        "--audit-webhook-batch-max-wait=100ms".to_string(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(Backend::Embedded, &flags).await;
    let events = || log_events(&log);

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
    let created = event(events, "for the configmap's create", |e| {
        is(e, "create", "configmaps", "settings")
    })
    .await;
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
        e["verb"] == "watch" && e["stage"] == "ResponseStarted"
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
    let Command::Serve(options) = Cli::try_parse_from(&args).unwrap().command;
    let err = kapi::serve::start(options)
        .await
        .err()
        .expect("a bad policy is refused");
    assert!(
        format!("{err:#}").contains("rules[0].level: Unsupported value: \"Everything\""),
        "{err:#}"
    );
}
