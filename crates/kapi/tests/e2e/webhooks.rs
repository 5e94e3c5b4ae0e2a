//! Admission webhooks end to end, with real HTTPS webhooks served by the test: a mutating
//! webhook's JSONPatch applied (and skipped by its matchCondition), reinvocation of an
//! `IfNeeded` webhook after a later webhook's change, a validating webhook's denial with
//! upstream's message, and a slow webhook under `failurePolicy` Fail and Ignore.

use crate::common;

use std::time::{Duration, Instant};

use base64::Engine;
use common::{Backend, TestServer, fails, get_json, ok_stdin, serve_webhook};
use serde_json::{Value, json};

/// The webhooks, by path.
async fn answer(path: String, review: Value) -> Value {
    let (path, query) = path.split_once('?').unwrap_or((&path, ""));
    let request = &review["request"];
    let object = &request["object"];
    let labels = object["metadata"]["labels"].clone();
    let mut response = json!({"uid": request["uid"], "allowed": true});
    let patch = |ops: Value| base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    match path {
        "/mutate" => {
            let mut labels = labels.as_object().cloned().unwrap_or_default();
            labels.insert("mutated".into(), json!("yes"));
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch(
                json!([{"op": "add", "path": "/metadata/labels", "value": labels}])
            ));
            response["warnings"] = json!([format!("mutated by the test webhook ({query})")]);
        }
        "/add-b" => {
            let mut labels = labels.as_object().cloned().unwrap_or_default();
            labels.insert("b".into(), json!("added"));
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch(
                json!([{"op": "add", "path": "/metadata/labels", "value": labels}])
            ));
        }
        "/seen-b" => {
            let seen = labels.get("b").is_some().to_string();
            let mut annotations = object["metadata"]["annotations"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            annotations.insert("seen-b".into(), json!(seen));
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch(
                json!([{"op": "add", "path": "/metadata/annotations", "value": annotations}])
            ));
        }
        "/deny"
            if object["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("bad")) =>
        {
            response["allowed"] = json!(false);
            response["status"] =
                json!({"code": 403, "message": "names starting with bad are not allowed"});
        }
        "/slow" => tokio::time::sleep(Duration::from_secs(3)).await,
        _ => {}
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// One webhook entry for ConfigMap creates.
fn webhook(name: &str, url: &str, ca: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (key, value) in extra.as_object().into_iter().flatten() {
        hook[key] = value.clone();
    }
    hook
}

/// Adds a JSONPatch of `ops` to an AdmissionReview response.
fn add_patch(response: &mut Value, ops: &Value) {
    response["patchType"] = json!("JSONPatch");
    response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(ops.to_string()));
}

/// An AdmissionReview v1 carrying `response`.
fn review_of(response: Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> String {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": webhooks,
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_webhooks_mutate_deny_and_fail_as_configured() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let (address, ca) = serve_webhook(answer).await;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let url = |path: &str| format!("https://{address}{path}");
    let skip = json!({"matchConditions": [{"name": "not-skipped",
        "expression": "!has(object.metadata.annotations) || !('skip' in object.metadata.annotations)"}]});
    let configurations = [
        configuration(
            "MutatingWebhookConfiguration",
            "a-mutate",
            vec![
                webhook("mutate.example.com", &url("/mutate"), &ca, skip),
                webhook(
                    "seen-b.example.com",
                    &url("/seen-b"),
                    &ca,
                    json!({"reinvocationPolicy": "IfNeeded"}),
                ),
            ],
        ),
        configuration(
            "MutatingWebhookConfiguration",
            "z-mutate",
            vec![webhook("add-b.example.com", &url("/add-b"), &ca, json!({}))],
        ),
        configuration(
            "ValidatingWebhookConfiguration",
            "deny",
            vec![
                webhook("deny.example.com", &url("/deny"), &ca, json!({})),
                webhook(
                    "slow-fail.example.com",
                    &url("/slow"),
                    &ca,
                    json!({"timeoutSeconds": 1,
                "objectSelector": {"matchLabels": {"slow": "fail"}}}),
                ),
                webhook(
                    "slow-ignore.example.com",
                    &url("/slow"),
                    &ca,
                    json!({"timeoutSeconds": 1,
                "failurePolicy": "Ignore", "objectSelector": {"matchLabels": {"slow": "ignore"}}}),
                ),
            ],
        ),
    ];
    for configuration in &configurations {
        ok_stdin(&server, &["create", "-f", "-"], configuration).await;
    }
    // The webhooks are read from their watch cache: wait until they are seen.
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let name = format!("probe-{i}");
        server.kubectl_ok(&["create", "configmap", &name]).await;
        let probe = get_json(&server, &["configmap", &name]).await;
        if probe["metadata"]["labels"]["b"] == "added"
            && probe["metadata"]["labels"]["mutated"] == "yes"
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the webhooks were never called: {probe}"
        );
    }

    let created = server.kubectl(&["create", "configmap", "good"]).await;
    assert!(created.status.success(), "{}", common::stderr(&created));
    assert!(
        // The webhook is told its deadline (10s by default), as client-go tells it.
        common::stderr(&created).contains("mutated by the test webhook (timeout=10s)"),
        "the webhook's warning: {}",
        common::stderr(&created)
    );
    let good = get_json(&server, &["configmap", "good"]).await;
    assert_eq!(
        good["metadata"]["labels"],
        json!({"mutated": "yes", "b": "added"})
    );
    // seen-b ran before add-b, then once more because add-b changed the object.
    assert_eq!(good["metadata"]["annotations"]["seen-b"], "true");

    let skipped = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"skipped","annotations":{"skip":"yes"}}}"#;
    ok_stdin(&server, &["create", "-f", "-"], skipped).await;
    let skipped = get_json(&server, &["configmap", "skipped"]).await;
    assert_eq!(
        skipped["metadata"]["labels"],
        json!({"b": "added"}),
        "the matchCondition excluded mutate.example.com"
    );

    let err = fails(&server, &["create", "configmap", "bad-one"], None).await;
    assert!(
        err.contains(r#"admission webhook "deny.example.com" denied the request: names starting with bad are not allowed"#),
        "{err}"
    );

    let slow = |value: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"slow-{value}","labels":{{"slow":"{value}"}}}}}}"#
        )
    };
    let err = fails(&server, &["create", "-f", "-"], Some(&slow("fail"))).await;
    assert!(
        err.contains(r#"Internal error occurred: failed calling webhook "slow-fail.example.com": failed to call webhook: Post"#)
            && err.contains("context deadline exceeded"),
        "{err}"
    );
    ok_stdin(&server, &["create", "-f", "-"], &slow("ignore")).await;
}

/// Deletes go through the mutating webhooks too, with the stored object as `oldObject` (its
/// labels chosen by the objectSelector): one that would patch is refused, as nothing can
/// change a deleted object; a dry run asked in the DeleteOptions body reaches the webhooks
/// as `dryRun`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_pass_the_mutating_webhooks() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let (address, ca) = serve_webhook(|path: String, review: Value| async move {
        let request = &review["request"];
        // The answer says what the webhook saw: its dryRun and the old object's name.
        let seen = format!(
            "dryRun={} old={} options={}",
            request["dryRun"],
            request["oldObject"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default(),
            request["options"]
        );
        let mut response = json!({"uid": request["uid"], "allowed": true, "warnings": [seen]});
        if path.starts_with("/patch") {
            let ops = json!([{"op": "add", "path": "/metadata/labels/x", "value": "y"}]);
            add_patch(&mut response, &ops);
        }
        review_of(response)
    })
    .await;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let hook = |name: &str, path: &str, label: &str| {
        let mut hook = webhook(
            name,
            &format!("https://{address}{path}"),
            &ca,
            json!({"objectSelector": {"matchLabels": {label: "yes"}},
                "sideEffects": "NoneOnDryRun"}),
        );
        hook["rules"][0]["operations"] = json!(["DELETE"]);
        hook
    };
    let mut conditioned = hook("condition.example.com", "/look", "conditioned");
    conditioned["matchConditions"] =
        json!([{"name": "c1", "expression": "oldObject.data.x == 'y'"}]);
    let hooks = vec![
        hook("patch.example.com", "/patch", "patched"),
        hook("look.example.com", "/look", "looked"),
        conditioned,
    ];
    let config = configuration("MutatingWebhookConfiguration", "deletes", hooks);
    ok_stdin(&server, &["create", "-f", "-"], &config).await;
    for (name, label) in [
        ("p", "patched=yes"),
        ("l", "looked=yes"),
        ("c", "conditioned=yes"),
    ] {
        server.kubectl_ok(&["create", "configmap", name]).await;
        server
            .kubectl_ok(&["label", "configmap", name, label])
            .await;
    }
    // The webhooks are read from their watch cache: wait until they are seen.
    let deadline = Instant::now() + Duration::from_secs(10);
    let err = loop {
        let output = server.kubectl(&["delete", "configmap", "p"]).await;
        if !output.status.success() {
            break common::stderr(&output);
        }
        assert!(Instant::now() < deadline, "the webhook never refused");
        server.kubectl_ok(&["create", "configmap", "p"]).await;
        server
            .kubectl_ok(&["label", "configmap", "p", "patched=yes"])
            .await;
    };
    assert!(
        err.contains(r#"admission webhook "patch.example.com" attempted to modify the object, which is not supported for this operation"#),
        "{err}"
    );
    let output = server
        .kubectl(&["delete", "configmap", "l", "--dry-run=server"])
        .await;
    assert!(output.status.success(), "{}", common::stderr(&output));
    let seen = common::stderr(&output);
    assert!(seen.contains("dryRun=true old=l"), "{seen}");
    // The DeleteOptions kubectl sent, as the webhook's options.
    for option in [
        r#""dryRun":["All"]"#,
        r#""kind":"DeleteOptions""#,
        r#""propagationPolicy":"Background""#,
    ] {
        assert!(seen.contains(option), "{option} in {seen}");
    }
    get_json(&server, &["configmap", "l"]).await;
    // A matchCondition that cannot be evaluated forbids the request under Fail.
    let err = common::fails(&server, &["delete", "configmap", "c"], None).await;
    assert!(
        err.contains(
            r#"configmaps "c" is forbidden: expression 'oldObject.data.x == 'y'' resulted in error: "#
        ),
        "{err}"
    );
}

/// `matchPolicy`: a webhook registered for a CRD's v1 is called for a create made in v2
/// under `Equivalent` (the default), with the object converted to v1 and `kind`/`resource`
/// naming v1 while `requestKind`/`requestResource` name v2; its patch, made to the v1
/// object, lands in what v2 stores. An `Exact` webhook for v1 is not called for v2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equivalent_match_policy_converts_for_the_registered_version() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    common::install_gadgets(&server).await;
    let (address, ca) = serve_webhook(|path: String, review: Value| async move {
        let request = &review["request"];
        let mut response = json!({"uid": request["uid"], "allowed": true});
        if path.starts_with("/exact") {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "message": "v1 only"});
        } else {
            let version =
                |field: &str| request[field]["version"].as_str().unwrap_or("").to_string();
            let seen = format!(
                "kind={} resource={} requestKind={} requestResource={} object={}",
                version("kind"),
                version("resource"),
                version("requestKind"),
                version("requestResource"),
                request["object"]["apiVersion"].as_str().unwrap_or_default()
            );
            let ops =
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"seen": seen}}]);
            add_patch(&mut response, &ops);
        }
        review_of(response)
    })
    .await;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let hook = |name: &str, path: &str, policy: &str| {
        let mut hook = webhook(
            name,
            &format!("https://{address}{path}"),
            &ca,
            json!({"matchPolicy": policy}),
        );
        hook["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["example.com"],
            "apiVersions": ["v1"], "resources": ["gadgets"]}]);
        hook
    };
    let mutating = configuration(
        "MutatingWebhookConfiguration",
        "equivalent",
        vec![hook("equivalent.example.com", "/annotate", "Equivalent")],
    );
    let validating = configuration(
        "ValidatingWebhookConfiguration",
        "exact",
        vec![hook("exact.example.com", "/exact", "Exact")],
    );
    ok_stdin(&server, &["create", "-f", "-"], &mutating).await;
    ok_stdin(&server, &["create", "-f", "-"], &validating).await;
    // The webhooks are read from their watch caches: wait until each has been seen.
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let name = format!("g-{i}");
        ok_stdin(
            &server,
            &["create", "-f", "-"],
            &common::gadget("v2", &name),
        )
        .await;
        let stored = get_json(&server, &["gadgets.v2.example.com", &name]).await;
        assert_eq!(stored["apiVersion"], "example.com/v2");
        if let Some(seen) = stored["metadata"]["annotations"]["seen"].as_str() {
            assert_eq!(
                seen,
                "kind=v1 resource=v1 requestKind=v2 requestResource=v2 object=example.com/v1"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mutating webhook was never called"
        );
    }
    for i in 0.. {
        let manifest = common::gadget("v1", &format!("probe-{i}"));
        let output = server
            .kubectl_stdin(&["create", "-f", "-"], Some(&manifest))
            .await;
        if !output.status.success() {
            let err = common::stderr(&output);
            assert!(
                err.contains(
                    r#"admission webhook "exact.example.com" denied the request: v1 only"#
                ),
                "{err}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the validating webhook was never called"
        );
    }
}
