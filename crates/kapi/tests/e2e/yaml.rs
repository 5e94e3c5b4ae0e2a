//! YAML responses (`Accept: application/yaml`) read by a YAML 1.1 reader, as kube-apiserver's
//! are: PyYAML (the Python client's YAML library) reads a string such as `yes`, `0755` or a
//! timestamp written plain as a boolean, a number or a date, so every such string must come
//! quoted, as go-yaml quotes it.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::Backend;
use common::process::Kapi;
use http::Method;
use serde_json::{Value, json};

/// `yaml` read by PyYAML's `safe_load` (YAML 1.1), as JSON; fails if it holds anything JSON
/// cannot (a date read from a plain timestamp).
fn read_as_yaml_1_1(yaml: &str) -> Value {
    let mut python = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = python.stdin.take().expect("stdin");
    stdin.write_all(yaml.as_bytes()).expect("write");
    drop(stdin);
    let output = python.wait_with_output().expect("python3 ran");
    assert!(
        output.status.success(),
        "PyYAML did not read it as JSON: {}\n{yaml}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_responses_read_back_in_yaml_1_1() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let data = json!({
        "enabled": "yes", "off": "off", "y": "y", "octal": "0755", "count": "1_000",
        "ratio": "1e3", "sexagesimal": "1:20", "date": "2026-11-29", "empty": "", "tilde": "~",
        "colon": "a: b", "script": "line one\nline two\n", "tab": "a\tb", "quote": "it's",
    });
    admin
        .create(
            configmaps,
            json!({"metadata": {"name": "tricky", "labels": {"yes": "no"}}, "data": data}),
        )
        .await;
    let get_yaml = |path: String| {
        let admin = &admin;
        async move {
            let accept = [("accept", "application/yaml")];
            let reply = admin.send(Method::GET, &path, &accept, bytes::Bytes::new());
            reply.await
        }
    };
    let yaml = get_yaml(format!("{configmaps}/tricky")).await;
    assert_eq!(yaml.status, 200, "{}", yaml.body);
    assert!(
        yaml.body.contains("\n  creationTimestamp: \""),
        "{}",
        yaml.body
    );
    let json = admin.get(&format!("{configmaps}/tricky")).await.json();
    assert_eq!(read_as_yaml_1_1(&yaml.body), json);

    let list = get_yaml(format!("{configmaps}?labelSelector=yes%3Dno")).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let list = read_as_yaml_1_1(&list.body);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"], json!([json]));
    kapi.stop().await;
}
