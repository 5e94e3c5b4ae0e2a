//! CRD version conversion through the real kubectl: a `None`-conversion CRD served in two
//! versions (apiVersion rewritten, a deprecated version's warning, an unserved version's 404),
//! and a `Webhook`-conversion CRD whose ConversionReviews go over HTTPS to a small webhook this
//! test serves (its own CA in the CRD's caBundle), including a webhook that fails.

use crate::common;

use std::sync::{Arc, Mutex};

use base64::Engine;
use common::{Backend, TestServer, get_json, ok_stdin, serve_webhook, stderr};
use serde_json::{Value, json};

fn crd(conversion: Value) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "backends.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "backends", "singular": "backend", "kind": "Backend"},
            "conversion": conversion,
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "host": {"type": "string"}, "port": {"type": "integer"}}}}}}},
                {"name": "v2", "served": true, "storage": false, "deprecated": true,
                 "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "endpoint": {"type": "string", "pattern": "^[a-z]+:[0-9]+$"},
                        "host": {"type": "string"},
                        "port": {"type": "integer"}}}}}}},
                {"name": "v3", "served": false, "storage": false, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            ],
        },
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_conversion_rewrites_the_api_version() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    common::install_crds(
        &server,
        &crd(json!({"strategy": "None"})),
        &["backends.example.com"],
    )
    .await;
    let backend = "apiVersion: example.com/v1\nkind: Backend\nmetadata: {name: b, namespace: default}\nspec: {host: db, port: 5432}\n";
    ok_stdin(&server, &["apply", "-f", "-"], backend).await;
    let v1 = get_json(&server, &["backends.v1.example.com", "b"]).await;
    assert_eq!(v1["apiVersion"], "example.com/v1");
    let read = server
        .kubectl(&["get", "backends.v2.example.com", "b", "-o", "json"])
        .await;
    assert!(read.status.success(), "{}", stderr(&read));
    assert!(
        stderr(&read).contains("Warning: example.com/v2 Backend is deprecated"),
        "{}",
        stderr(&read)
    );
    let v2: Value = serde_json::from_slice(&read.stdout).expect("json");
    assert_eq!(v2["apiVersion"], "example.com/v2");
    assert_eq!(v2["spec"], json!({"host": "db", "port": 5432}));
    assert_eq!(v2["metadata"]["uid"], v1["metadata"]["uid"]);
    let unserved = server
        .kubectl(&[
            "get",
            "--raw",
            "/apis/example.com/v3/namespaces/default/backends",
        ])
        .await;
    assert!(!unserved.status.success());
    assert!(
        stderr(&unserved).contains("NotFound"),
        "{}",
        stderr(&unserved)
    );
    // v2 becomes the storage version: the object stored in v1 is read in v2 there too.
    let patch = r#"[{"op": "replace", "path": "/spec/versions/0/storage", "value": false},
        {"op": "replace", "path": "/spec/versions/1/storage", "value": true}]"#;
    server
        .kubectl_ok(&[
            "patch",
            "crd",
            "backends.example.com",
            "--type=json",
            "-p",
            patch,
        ])
        .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let crd = get_json(&server, &["crd", "backends.example.com"]).await;
        if crd["status"]["storedVersions"] == json!(["v1", "v2"]) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{crd}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let v2 = get_json(&server, &["backends.v2.example.com", "b"]).await;
    assert_eq!(v2["apiVersion"], "example.com/v2");
    server.stop().await;
}

/// v1 `spec.host` and `spec.port` are v2's `spec.endpoint: "host:port"`; a host `fail` makes
/// the webhook answer a failed review.
fn convert(review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let mut converted = Vec::new();
    for object in request["objects"].as_array().into_iter().flatten() {
        let mut object = object.clone();
        let spec = object["spec"].clone();
        if spec["host"] == "fail"
            || spec["endpoint"]
                .as_str()
                .is_some_and(|e| e.starts_with("fail:"))
        {
            return json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": request["uid"], "result": {"status": "Failure",
                    "message": "cannot convert fail"}}});
        }
        object["spec"] = match desired {
            "example.com/v2" => json!({"endpoint": format!("{}:{}",
                spec["host"].as_str().unwrap_or_default(), spec["port"])}),
            _ => {
                let endpoint = spec["endpoint"].as_str().unwrap_or_default();
                let (host, port) = endpoint.split_once(':').unwrap_or((endpoint, "0"));
                json!({"host": host, "port": port.parse::<i64>().unwrap_or(0)})
            }
        };
        object["apiVersion"] = Value::from(desired);
        converted.push(object);
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"},
            "convertedObjects": converted}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_conversion_over_https() {
    // The number of objects in each review the webhook gets.
    let reviews: Arc<Mutex<Vec<usize>>> = Arc::default();
    let seen = reviews.clone();
    let (address, ca) = serve_webhook(move |_, review| {
        let count = review["request"]["objects"].as_array().map_or(0, Vec::len);
        seen.lock().unwrap().push(count);
        async move { convert(&review) }
    })
    .await;
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let conversion = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": format!("https://{address}/convert"), "caBundle": ca_bundle}}});
    common::install_crds(&server, &crd(conversion), &["backends.example.com"]).await;

    // Created in v2, stored in v1, read back in both.
    let backend = "apiVersion: example.com/v2\nkind: Backend\nmetadata: {name: b, namespace: default, labels: {tier: db}}\nspec: {endpoint: \"db:5432\"}\n";
    ok_stdin(&server, &["create", "-f", "-"], backend).await;
    let v1 = get_json(&server, &["backends.v1.example.com", "b"]).await;
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"], json!({"host": "db", "port": 5432}));
    assert_eq!(v1["metadata"]["labels"], json!({"tier": "db"}));
    let v2 = get_json(&server, &["backends.v2.example.com", "b"]).await;
    assert_eq!(v2["spec"], json!({"endpoint": "db:5432"}));
    // A list is converted by one review, as upstream converts it.
    for name in ["b2", "b3"] {
        let backend = format!(
            "apiVersion: example.com/v1\nkind: Backend\nmetadata: {{name: {name}, namespace: default}}\nspec: {{host: {name}, port: 1}}\n"
        );
        ok_stdin(&server, &["create", "-f", "-"], &backend).await;
    }
    reviews.lock().unwrap().clear();
    let list = get_json(&server, &["backends.v2.example.com"]).await;
    assert_eq!(list["items"][0]["spec"], json!({"endpoint": "db:5432"}));
    assert_eq!(list["items"][2]["spec"], json!({"endpoint": "b3:1"}));
    // In-process controllers may convert a single object meanwhile (a review of one).
    let sizes = reviews.lock().unwrap().clone();
    assert!(sizes.contains(&3), "no review of the whole list: {sizes:?}");

    // A patch in v2 goes through the webhook both ways.
    let patch = r#"{"spec":{"endpoint":"db:6432"}}"#;
    server
        .kubectl_ok(&[
            "patch",
            "backends.v2.example.com",
            "b",
            "--type=merge",
            "-p",
            patch,
        ])
        .await;
    let v1 = get_json(&server, &["backends.v1.example.com", "b"]).await;
    assert_eq!(v1["spec"], json!({"host": "db", "port": 6432}));

    // Objects are validated in the version of the request, with its schema (stored in v1,
    // which has no pattern on the endpoint).
    let invalid = "apiVersion: example.com/v2\nkind: Backend\nmetadata: {name: c, namespace: default}\nspec: {endpoint: \"DB:5432\"}\n";
    let created = server
        .kubectl_stdin(&["create", "-f", "-"], Some(invalid))
        .await;
    assert!(!created.status.success());
    assert!(
        stderr(&created).contains(r#"spec.endpoint: Invalid value: "DB:5432": spec.endpoint in body should match '^[a-z]+:[0-9]+$'"#),
        "{}",
        stderr(&created)
    );

    // A webhook that refuses: upstream's 500 with the webhook's message.
    let failing = "apiVersion: example.com/v1\nkind: Backend\nmetadata: {name: f, namespace: default}\nspec: {host: fail, port: 1}\n";
    ok_stdin(&server, &["create", "-f", "-"], failing).await;
    let read = server
        .kubectl(&["get", "backends.v2.example.com", "f"])
        .await;
    assert!(!read.status.success());
    assert!(
        stderr(&read).contains(
            "conversion webhook for example.com/v1, Kind=Backend failed: cannot convert fail"
        ),
        "{}",
        stderr(&read)
    );
    server.stop().await;
}
