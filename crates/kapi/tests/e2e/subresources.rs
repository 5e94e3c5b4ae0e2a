//! Subresources, review resources and service-account tokens against the real kubectl:
//! `kubectl scale`, `create token`, `certificate approve`, `auth can-i`, `auth whoami`,
//! evictions honouring a PodDisruptionBudget, bindings, and the node-agent subresources
//! (`kubectl logs`) that kapi answers with upstream's errors.

use crate::common;

use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{Backend, TestServer, fails, ok_stdin, stderr, stdout};
use serde_json::{Value, json};

/// How long anything asynchronous may take before a test gives up.
const DEADLINE: Duration = Duration::from_secs(30);

async fn server() -> TestServer {
    TestServer::start(Backend::Embedded, &[]).await
}

/// `kubectl get -o json` of one object.
async fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get", "-o", "json"];
    all.extend(args);
    serde_json::from_str(&server.kubectl_ok(&all).await).expect("kubectl prints JSON")
}

/// `kubectl get --raw` of a path.
async fn raw(server: &TestServer, path: &str) -> Value {
    serde_json::from_str(&server.kubectl_ok(&["get", "--raw", path]).await).expect("JSON")
}

/// POSTs `body` to `path` with `kubectl create --raw`; its stdout, or its stderr as the error.
async fn post(server: &TestServer, path: &str, body: &Value) -> Result<String, String> {
    let output = server
        .kubectl_stdin(
            &["create", "--raw", path, "-f", "-"],
            Some(&body.to_string()),
        )
        .await;
    if output.status.success() {
        Ok(stdout(&output))
    } else {
        Err(stderr(&output))
    }
}

#[tokio::test]
async fn kubectl_scale_changes_only_the_replicas() {
    let server = server().await;
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    });
    ok_stdin(&server, &["create", "-f", "-"], &deployment.to_string()).await;
    let scaled = server
        .kubectl_ok(&["scale", "deployment", "web", "--replicas=3"])
        .await;
    assert_eq!(scaled.trim(), "deployment.apps/web scaled");
    let deployment = get_json(&server, &["deployment", "web"]).await;
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );

    let scale = raw(
        &server,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    )
    .await;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=web");
    assert_eq!(scale["metadata"]["uid"], deployment["metadata"]["uid"]);
    let printed = server
        .kubectl_ok(&["get", "deployment", "web", "--subresource=scale"])
        .await;
    let lines: Vec<Vec<&str>> = printed
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "DESIRED", "AVAILABLE", "AGE"]);
    assert_eq!(lines[1][..3], ["web", "3", "0"]);

    // A stale resourceVersion precondition is a conflict, as upstream's.
    let mut stale = scale.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["spec"]["replicas"] = json!(1);
    let path = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    let args = ["replace", "--raw", path, "-f", "-"];
    let err = fails(&server, &args, Some(&stale.to_string())).await;
    assert!(
        err.contains("the object has been modified"),
        "unexpected error: {err}"
    );
    let mut negative = scale.clone();
    negative["spec"]["replicas"] = json!(-1);
    let err = fails(&server, &args, Some(&negative.to_string())).await;
    assert!(
        err.contains("spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        "unexpected error: {err}"
    );
    let err = fails(
        &server,
        &["scale", "deployment", "missing", "--replicas=1"],
        None,
    )
    .await;
    assert!(
        err.contains(r#"deployments.apps "missing" not found"#),
        "unexpected error: {err}"
    );
    server.stop().await;
}

/// The claims of a JWT, unverified.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[tokio::test]
async fn kubectl_create_token_issues_tokens_token_reviews_accept() {
    let server = server().await;
    let robot =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
    ok_stdin(&server, &["create", "-f", "-"], &robot.to_string()).await;
    let account = get_json(&server, &["serviceaccount", "robot"]).await;
    let path = "/api/v1/namespaces/default/serviceaccounts/robot/token";
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}});
    let answer: Value =
        serde_json::from_str(&post(&server, path, &request).await.unwrap()).unwrap();
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["metadata"]["name"], "robot");
    assert!(answer["status"]["expirationTimestamp"].is_string());
    let token = answer["status"]["token"].as_str().unwrap().to_string();
    let token = token.as_str();
    let claims = claims(token);
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(
        claims["aud"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(
        claims["kubernetes.io"]["serviceaccount"],
        json!({"name": "robot", "uid": account["metadata"]["uid"]})
    );
    assert!(server.data_dir.path().join("pki/sa.key").exists());

    let review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    });
    let answer = ok_stdin(
        &server,
        &["create", "--validate=false", "-f", "-", "-o", "json"],
        &review.to_string(),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"]["authenticated"], true);
    assert_eq!(
        answer["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );

    // kubectl's own command (a typed client, protobuf bodies).
    let token = server.kubectl_ok(&["create", "token", "robot"]).await;
    assert_eq!(
        self::claims(token.trim())["sub"],
        "system:serviceaccount:default:robot"
    );
    let err = fails(
        &server,
        &["create", "token", "robot", "--duration=1m"],
        None,
    )
    .await;
    assert!(
        err.contains("may not specify a duration less than 10 minutes"),
        "unexpected error: {err}"
    );
    let err = fails(&server, &["create", "token", "missing"], None).await;
    assert!(
        err.contains(r#"serviceaccounts "missing" not found"#),
        "unexpected error: {err}"
    );
    server.stop().await;
}

#[tokio::test]
async fn kubectl_certificate_approve_adds_the_approved_condition() {
    let server = server().await;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
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
    ok_stdin(&server, &["create", "-f", "-"], &csr.to_string()).await;
    let mut denied = get_json(&server, &["csr", "alice"]).await;
    denied["status"]["conditions"] = json!([
        {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]);
    let output = server
        .kubectl_stdin(
            &[
                "replace",
                "--raw",
                "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval",
                "-f",
                "-",
            ],
            Some(&denied.to_string()),
        )
        .await;
    assert!(
        stderr(&output).contains("Approved and Denied conditions are mutually exclusive"),
        "unexpected answer: {}",
        stderr(&output)
    );
    // kubectl's own command (a typed client, protobuf bodies).
    let approved = server
        .kubectl_ok(&["certificate", "approve", "alice"])
        .await;
    assert_eq!(
        approved.trim(),
        "certificatesigningrequest.certificates.k8s.io/alice approved"
    );
    let csr = get_json(&server, &["csr", "alice"]).await;
    let condition = &csr["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "KubectlApprove");
    assert!(condition["lastUpdateTime"].is_string());
    server.stop().await;
}

#[tokio::test]
async fn kubectl_auth_can_i_and_whoami_ask_the_server() {
    let server = server().await;
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let answer = ok_stdin(
        &server,
        &["create", "--validate=false", "-f", "-", "-o", "json"],
        &review.to_string(),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"]["userInfo"]["username"], "kapi-admin");
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods"}}});
    let answer = ok_stdin(
        &server,
        &["create", "--validate=false", "-f", "-", "-o", "json"],
        &review.to_string(),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"]["allowed"], true);

    // kubectl's own commands (typed clients, protobuf bodies).
    assert_eq!(
        server
            .kubectl_ok(&["auth", "can-i", "list", "pods"])
            .await
            .trim(),
        "yes"
    );
    let whoami = server.kubectl_ok(&["auth", "whoami", "-o", "json"]).await;
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "kapi-admin");
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    let rules = server.kubectl_ok(&["auth", "can-i", "--list"]).await;
    assert!(rules.contains("*.*"), "unexpected rules: {rules}");

    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "system:anonymous", "groups": ["system:unauthenticated"],
                 "resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "default"}},
    });
    let answer = ok_stdin(
        &server,
        &["create", "--validate=false", "-f", "-", "-o", "json"],
        &review.to_string(),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"]["allowed"], false);
    server.stop().await;
}

/// A pod in `default`, labelled app=web.
fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    })
}

/// Marks a pod Running and Ready through its status subresource.
async fn run(server: &TestServer, name: &str) {
    let status = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    server
        .kubectl_ok(&[
            "patch",
            "pod",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ])
        .await;
}

/// Sets the PodDisruptionBudget's status as its controller would.
async fn budget_status(server: &TestServer, allowed: i64) {
    let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
        "desiredHealthy": 1, "currentHealthy": 1, "expectedPods": 1}});
    server
        .kubectl_ok(&[
            "patch",
            "pdb",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ])
        .await;
}

/// Waits until the pod is gone (or being deleted).
async fn wait_evicted(server: &TestServer, name: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let output = server.kubectl(&["get", "pod", name, "-o", "json"]).await;
        let deleting = output.status.success()
            && serde_json::from_slice::<Value>(&output.stdout)
                .is_ok_and(|pod| pod["metadata"]["deletionTimestamp"].is_string());
        if !output.status.success() || deleting {
            return;
        }
        assert!(Instant::now() < deadline, "pod {name} was not evicted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn evictions_honour_the_pod_disruption_budget() {
    let server = server().await;
    ok_stdin(&server, &["create", "-f", "-"], &pod("web").to_string()).await;
    run(&server, "web").await;
    let budget = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    ok_stdin(&server, &["create", "-f", "-"], &budget.to_string()).await;
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "web", "namespace": "default"}});
    let path = "/api/v1/namespaces/default/pods/web/eviction";

    // No controller has looked at the budget yet: retry later.
    let err = post(&server, path, &eviction).await.unwrap_err();
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "unexpected error: {err}"
    );
    budget_status(&server, 0).await;
    let err = post(&server, path, &eviction).await.unwrap_err();
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "unexpected error: {err}"
    );
    server.kubectl_ok(&["get", "pod", "web"]).await;

    budget_status(&server, 1).await;
    let done: Value = serde_json::from_str(&post(&server, path, &eviction).await.unwrap()).unwrap();
    assert_eq!(done["status"], "Success");
    wait_evicted(&server, "web").await;
    let budget = get_json(&server, &["pdb", "web"]).await;
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(budget["status"]["disruptedPods"]["web"].is_string());

    // A pod that is not running yet is evicted whatever its budget says.
    ok_stdin(&server, &["create", "-f", "-"], &pod("pending").to_string()).await;
    let pending = "/api/v1/namespaces/default/pods/pending/eviction";
    let mut eviction = eviction.clone();
    eviction["metadata"]["name"] = json!("pending");
    post(&server, pending, &eviction).await.unwrap();
    wait_evicted(&server, "pending").await;
    server.stop().await;
}

#[tokio::test]
async fn bindings_assign_pods_once_and_connect_needs_a_node_agent() {
    let server = server().await;
    ok_stdin(&server, &["create", "-f", "-"], &pod("web").to_string()).await;
    // An unscheduled pod has no log yet, and nothing to exec in.
    assert_eq!(server.kubectl_ok(&["logs", "web"]).await, "");
    let err = fails(&server, &["logs", "web", "-c", "other"], None).await;
    assert!(
        err.contains("container other is not valid for pod web"),
        "unexpected error: {err}"
    );
    let exec = "/api/v1/namespaces/default/pods/web/exec?command=true";
    let err = post(&server, exec, &json!({})).await.unwrap_err();
    assert!(
        err.contains("pod web does not have a host assigned"),
        "unexpected error: {err}"
    );

    let binding = json!({"apiVersion": "v1", "kind": "Binding",
                         "metadata": {"name": "web"}, "target": {"kind": "Node", "name": "n1"}});
    let path = "/api/v1/namespaces/default/pods/web/binding";
    post(&server, path, &binding).await.unwrap();
    let pod = get_json(&server, &["pod", "web"]).await;
    assert_eq!(pod["spec"]["nodeName"], "n1");
    let err = post(&server, path, &binding).await.unwrap_err();
    assert!(
        err.contains(r#"pod web is already assigned to node "n1""#),
        "unexpected error: {err}"
    );

    // The core `bindings` resource names the pod in the body.
    ok_stdin(
        &server,
        &["create", "-f", "-"],
        &self::pod("other").to_string(),
    )
    .await;
    let mut other = binding.clone();
    other["metadata"]["name"] = json!("other");
    post(&server, "/api/v1/namespaces/default/bindings", &other)
        .await
        .unwrap();
    assert_eq!(
        get_json(&server, &["pod", "other"]).await["spec"]["nodeName"],
        "n1"
    );

    let err = fails(&server, &["logs", "web"], None).await;
    assert!(
        err.contains("no node agent is reachable for node"),
        "unexpected error: {err}"
    );
    let err = fails(
        &server,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/pods/missing/log",
        ],
        None,
    )
    .await;
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "unexpected error: {err}"
    );
    server.stop().await;
}

#[tokio::test]
async fn ephemeral_containers_and_resizes_change_only_their_part() {
    let server = server().await;
    ok_stdin(&server, &["create", "-f", "-"], &pod("web").to_string()).await;
    server
        .kubectl_ok(&["debug", "web", "--image=busybox", "--container=debugger"])
        .await;
    let debugged = get_json(&server, &["pod", "web"]).await;
    assert_eq!(
        debugged["spec"]["ephemeralContainers"][0]["name"],
        "debugger"
    );
    assert_eq!(
        debugged["spec"]["ephemeralContainers"][0]["image"],
        "busybox"
    );

    let resize = json!({"spec": {"containers": [{"name": "app", "image": "other",
        "resources": {"requests": {"cpu": "200m"}}}]}});
    server
        .kubectl_ok(&[
            "patch",
            "pod",
            "web",
            "--subresource=resize",
            "--type=strategic",
            "-p",
            &resize.to_string(),
        ])
        .await;
    let resized = get_json(&server, &["pod", "web"]).await;
    let container = &resized["spec"]["containers"][0];
    assert_eq!(container["resources"]["requests"]["cpu"], "200m");
    assert_eq!(container["image"], "nginx", "resize changes resources only");
    server.stop().await;
}
