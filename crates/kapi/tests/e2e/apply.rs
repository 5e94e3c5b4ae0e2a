//! Server-side apply and managedFields through the real kubectl (`apply --server-side`,
//! conflicts, `--force-conflicts`, `--show-managed-fields`) and kube-rs (`Patch::Apply`),
//! on the embedded store and on etcd; plus an ignored load loop measuring applies per second.

use crate::common;

use std::time::Instant;

use common::{Backend, TestServer, ok_stdin, stderr};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// `kubectl apply --server-side` of `manifest` with extra `flags`.
async fn apply(server: &TestServer, manifest: &str, flags: &[&str]) -> String {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend(flags);
    ok_stdin(server, &args, manifest).await
}

/// The object as JSON, with its managedFields.
async fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get", "-o", "json", "--show-managed-fields"];
    all.extend(args);
    let out = server.kubectl_ok(&all).await;
    serde_json::from_str(&out).expect("kubectl prints JSON")
}

/// The managers of an object's managedFields as (manager, operation, fieldsV1).
fn managers(object: &Value) -> Vec<(String, String, Value)> {
    let entries = object["metadata"]["managedFields"].as_array();
    entries
        .into_iter()
        .flatten()
        .map(|entry| {
            (
                entry["manager"].as_str().unwrap_or("").to_string(),
                entry["operation"].as_str().unwrap_or("").to_string(),
                entry["fieldsV1"].clone(),
            )
        })
        .collect()
}

fn configmap_manifest(data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: default\ndata:\n{data}"
    )
}

async fn apply_creates_updates_conflicts_and_forces(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let created = apply(&server, &configmap_manifest("  a: \"1\"\n"), &[]).await;
    assert_eq!(created.trim(), "configmap/cm serverside-applied");
    let object = get_json(&server, &["configmap", "cm"]).await;
    assert_eq!(object["data"], json!({"a": "1"}));
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    assert!(entry["time"].as_str().is_some_and(|t| t.ends_with('Z')));

    // Re-applying with a change updates the object and the applied set.
    apply(
        &server,
        &configmap_manifest("  a: \"2\"\n  b: \"3\"\n"),
        &[],
    )
    .await;
    let object = get_json(&server, &["configmap", "cm"]).await;
    assert_eq!(object["data"], json!({"a": "2", "b": "3"}));
    assert_eq!(
        managers(&object),
        [(
            "kubectl".to_string(),
            "Apply".to_string(),
            json!({"f:data": {"f:a": {}, "f:b": {}}})
        )]
    );

    // Another manager changing a field kubectl owns conflicts.
    let other = configmap_manifest("  a: \"x\"\n");
    let output = server
        .kubectl_stdin(
            &["apply", "--server-side", "--field-manager=other", "-f", "-"],
            Some(&other),
        )
        .await;
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .data.a"),
        "{message}"
    );

    // --force-conflicts takes the field over.
    let flags = ["--field-manager=other", "--force-conflicts"];
    apply(&server, &other, &flags).await;
    let object = get_json(&server, &["configmap", "cm"]).await;
    assert_eq!(object["data"], json!({"a": "x", "b": "3"}));
    assert_eq!(
        managers(&object),
        [
            (
                "kubectl".to_string(),
                "Apply".to_string(),
                json!({"f:data": {"f:b": {}}})
            ),
            (
                "other".to_string(),
                "Apply".to_string(),
                json!({"f:data": {"f:a": {}}})
            ),
        ]
    );

    // kubectl no longer applying b removes it; a stays, other owns it.
    apply(&server, &configmap_manifest("  c: \"4\"\n"), &[]).await;
    let object = get_json(&server, &["configmap", "cm"]).await;
    assert_eq!(object["data"], json!({"a": "x", "c": "4"}));
    server.stop().await;
}

async fn updates_record_update_managers(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let manifest = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  \
                    namespace: default\nspec:\n  holderIdentity: a\n";
    ok_stdin(&server, &["create", "-f", "-"], manifest).await;
    server.kubectl_ok(&["label", "lease", "l", "team=x"]).await;
    let object = get_json(&server, &["lease", "l"]).await;
    // As upstream: the creator is compared with the Lease's zero value, whose spec is
    // already there, so it owns spec's fields but not spec itself.
    assert_eq!(
        managers(&object),
        [
            (
                "kubectl-create".to_string(),
                "Update".to_string(),
                json!({"f:spec": {"f:holderIdentity": {}}})
            ),
            (
                "kubectl-label".to_string(),
                "Update".to_string(),
                json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
            ),
        ]
    );

    // Applying a different holder conflicts with the update manager.
    let applied = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  \
                   namespace: default\nspec:\n  holderIdentity: b\n";
    let output = server
        .kubectl_stdin(&["apply", "--server-side", "-f", "-"], Some(applied))
        .await;
    let message = stderr(&output);
    assert!(
        message.contains(
            "conflict with \"kubectl-create\" using coordination.k8s.io/v1: .spec.holderIdentity"
        ),
        "{message}"
    );

    // A server-side dry run changes nothing.
    apply(&server, applied, &["--force-conflicts", "--dry-run=server"]).await;
    let object = get_json(&server, &["lease", "l"]).await;
    assert_eq!(object["spec"]["holderIdentity"], "a");

    // An update that empties managedFields resets them: the object is then untracked.
    let reset = r#"[{"op":"replace","path":"/metadata/managedFields","value":[]}]"#;
    server
        .kubectl_ok(&["patch", "lease", "l", "--type=json", "-p", reset])
        .await;
    let object = get_json(&server, &["lease", "l"]).await;
    assert!(managers(&object).is_empty(), "{object}");
    server.stop().await;
}

/// kubectl moving an object from client-side to server-side apply takes over the fields its
/// last-applied annotation still describes, and keeps that annotation current.
async fn client_side_apply_moves_to_server_side(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    ok_stdin(
        &server,
        &["apply", "-f", "-"],
        &configmap_manifest("  a: \"1\"\n"),
    )
    .await;
    let changed = configmap_manifest("  a: \"2\"\n");
    apply(&server, &changed, &[]).await;
    let object = get_json(&server, &["configmap", "cm"]).await;
    assert_eq!(object["data"], json!({"a": "2"}));
    let last_applied =
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("the annotation is kept");
    let last_applied: Value = serde_json::from_str(last_applied).expect("JSON");
    assert_eq!(last_applied["data"], json!({"a": "2"}));
    let applier = managers(&object)
        .into_iter()
        .find(|(name, operation, _)| name == "kubectl" && operation == "Apply")
        .expect("kubectl applies now");
    assert_eq!(applier.2, json!({"f:data": {"f:a": {}}}));
    server.stop().await;
}

/// A Deployment applied by `manager` with the given containers (`name=image` pairs).
fn deployment(containers: &[(&str, &str)], replicas: Option<u32>) -> String {
    let mut manifest = String::from(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: default\nspec:\n",
    );
    if let Some(replicas) = replicas {
        manifest.push_str(&format!("  replicas: {replicas}\n"));
    }
    manifest.push_str(
        "  selector:\n    matchLabels:\n      app: d\n  template:\n    metadata:\n      labels:\n        \
         app: d\n    spec:\n      containers:\n",
    );
    for (name, image) in containers {
        manifest.push_str(&format!("      - name: {name}\n        image: {image}\n"));
    }
    manifest
}

async fn list_maps_merge_by_key(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    apply(
        &server,
        &deployment(&[("a", "img-a")], Some(2)),
        &["--field-manager=first"],
    )
    .await;
    apply(
        &server,
        &deployment(&[("b", "img-b")], None),
        &["--field-manager=second"],
    )
    .await;
    let object = get_json(&server, &["deployment", "d"]).await;
    let containers = &object["spec"]["template"]["spec"]["containers"];
    let names: Vec<&str> = containers
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(object["spec"]["replicas"], 2);
    let owned = |manager: &str| {
        managers(&object)
            .into_iter()
            .find(|(name, _, _)| name == manager)
            .map(|(_, _, fields)| fields)
            .expect("the manager has fields")
    };
    let second = owned("second");
    let spec = &second["f:spec"]["f:template"]["f:spec"]["f:containers"];
    assert!(spec.get("k:{\"name\":\"b\"}").is_some(), "{second}");
    assert!(spec.get("k:{\"name\":\"a\"}").is_none(), "{second}");
    assert_eq!(owned("first")["f:spec"]["f:replicas"], json!({}));

    // Changing the other manager's container image conflicts, naming the element by key.
    let output = server
        .kubectl_stdin(
            &[
                "apply",
                "--server-side",
                "--field-manager=second",
                "-f",
                "-",
            ],
            Some(&deployment(&[("a", "img-c"), ("b", "img-b")], None)),
        )
        .await;
    let message = stderr(&output);
    assert!(
        message
            .contains("conflict with \"first\": .spec.template.spec.containers[name=\"a\"].image"),
        "{message}"
    );
    server.stop().await;
}

/// Re-applying a container port without `protocol` matches the live port, whose protocol was
/// defaulted to TCP (the key's schema default), instead of adding a duplicate port.
async fn defaulted_keys_match_on_reapply(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let manifest = deployment(&[("a", "img-a")], None)
        + "        ports:\n        - containerPort: 80\n          name: http\n";
    apply(&server, &manifest, &["--field-manager=first"]).await;
    apply(
        &server,
        &manifest.replace("img-a", "img-b"),
        &["--field-manager=first"],
    )
    .await;
    let object = get_json(&server, &["deployment", "d"]).await;
    let container = &object["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "img-b");
    assert_eq!(
        container["ports"],
        json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}])
    );
    server.stop().await;
}

/// A create owns what defaulting filled in, as upstream's decoder defaults before the field
/// manager records the write: `kubectl create` owns the Deployment's strategy and
/// revisionHistoryLimit and the template's terminationMessagePath, which it never sent, a
/// Namespace's name label and a Secret's type.
async fn creates_own_defaulted_fields(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let manifest = deployment(&[("a", "img-a")], None);
    ok_stdin(&server, &["create", "-f", "-"], &manifest).await;
    let object = get_json(&server, &["deployment", "d", "--show-managed-fields"]).await;
    let entries = managers(&object);
    let (manager, operation, fields) = &entries[0];
    assert_eq!(
        (manager.as_str(), operation.as_str()),
        ("kubectl-create", "Update")
    );
    let spec = &fields["f:spec"];
    assert!(spec.get("f:strategy").is_some(), "{fields}");
    assert!(spec.get("f:revisionHistoryLimit").is_some(), "{fields}");
    assert!(spec.get("f:progressDeadlineSeconds").is_some(), "{fields}");
    let container = &spec["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"a\"}"];
    assert!(
        container.get("f:terminationMessagePath").is_some(),
        "{fields}"
    );
    // The server's own objects are kube-apiserver's, defaulted fields included, as upstream.
    let default = get_json(&server, &["namespace", "default", "--show-managed-fields"]).await;
    let (manager, operation, fields) = &managers(&default)[0];
    assert_eq!(
        (manager.as_str(), operation.as_str()),
        ("kube-apiserver", "Update")
    );
    assert_eq!(
        fields,
        &json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}})
    );
    // So do creates of the other kinds: a Namespace's name label, a Secret's type.
    server.kubectl_ok(&["create", "namespace", "owned"]).await;
    server
        .kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=a=b"])
        .await;
    for (args, field) in [
        (
            ["namespace", "owned"],
            "/f:metadata/f:labels/f:kubernetes.io~1metadata.name",
        ),
        (["secret", "s"], "/f:type"),
    ] {
        let object = get_json(&server, &[args[0], args[1], "--show-managed-fields"]).await;
        let (_, _, fields) = &managers(&object)[0];
        assert!(fields.pointer(field).is_some(), "{field} in {fields}");
    }
    server.stop().await;
}

/// A kube-rs client built from the server's admin kubeconfig.
async fn kube_client(server: &TestServer) -> Client {
    common::kube_client_at(&server.kubeconfig).await
}

async fn kube_rs_patch_apply(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "rs"}, "data": {"k": "v"}
    });
    let params = PatchParams::apply("rs-controller");
    let applied = api
        .patch("rs", &params, &Patch::Apply(&config))
        .await
        .expect("apply creates");
    assert_eq!(
        applied.managed_fields()[0].manager.as_deref(),
        Some("rs-controller")
    );
    let conflicting = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "rs"}, "data": {"k": "w"}
    });
    let err = api
        .patch(
            "rs",
            &PatchParams::apply("intruder"),
            &Patch::Apply(&conflicting),
        )
        .await
        .expect_err("a conflict");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "Conflict");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    let forced = api
        .patch(
            "rs",
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(&conflicting),
        )
        .await
        .expect("forced apply");
    assert_eq!(forced.data.expect("data")["k"], "w");

    // A body that is not an object is upstream's decoding error.
    let err = api
        .patch(
            "rs",
            &PatchParams::apply("rs-controller"),
            &Patch::Apply(&json!([1])),
        )
        .await
        .expect_err("not an object");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 400);
            assert_eq!(
                status.message,
                "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: \
                 cannot unmarshal array into Go value of type map[string]interface {}"
            );
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    server.stop().await;
}

/// A scale write is recorded as upstream's scale handler records it: an Update of the
/// `scale` subresource owning `spec.replicas`, so a later apply of other replicas conflicts.
async fn scale_writes_own_the_replicas(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ssa\n  namespace: default\n\
        spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: ssa}\n  template:\n    \
        metadata:\n      labels: {app: ssa}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n";
    apply(&server, manifest, &[]).await;
    server
        .kubectl_ok(&["scale", "deployment", "ssa", "--replicas=3"])
        .await;
    let object = get_json(&server, &["deployment", "ssa"]).await;
    let entries = object["metadata"]["managedFields"].as_array().unwrap();
    let scale = entries
        .iter()
        .find(|e| e["subresource"] == "scale")
        .unwrap_or_else(|| panic!("no scale entry in {entries:?}"));
    assert_eq!(scale["manager"], "kubectl", "{scale}");
    assert_eq!(scale["operation"], "Update", "{scale}");
    assert_eq!(scale["apiVersion"], "apps/v1", "{scale}");
    assert_eq!(scale["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let output = server
        .kubectl_stdin(&["apply", "--server-side", "-f", "-"], Some(manifest))
        .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(
            r#"conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas"#
        ),
        "{}",
        stderr(&output)
    );
}

/// An apply to the status subresource records its applier, with the subresource, and a
/// forced apply takes the fields over.
async fn status_applies_record_their_managers(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    let manifest = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: st\n  namespace: default\n\
            status:\n  observedGeneration: {replicas}\n"
        )
    };
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: st\n  namespace: default\n\
        spec:\n  selector:\n    matchLabels: {app: st}\n  template:\n    \
        metadata:\n      labels: {app: st}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n";
    apply(&server, deployment, &[]).await;
    let status = ["--subresource=status", "--field-manager=ctl"];
    apply(&server, &manifest(1), &status).await;
    let object = get_json(&server, &["deployment", "st"]).await;
    let entries = object["metadata"]["managedFields"].as_array().unwrap();
    let ctl = entries
        .iter()
        .find(|e| e["manager"] == "ctl")
        .unwrap_or_else(|| panic!("no ctl entry in {entries:?}"));
    assert_eq!(ctl["operation"], "Apply", "{ctl}");
    assert_eq!(ctl["subresource"], "status", "{ctl}");
    assert_eq!(
        ctl["fieldsV1"],
        json!({"f:status": {"f:observedGeneration": {}}})
    );
    let other = ["--subresource=status", "--field-manager=ctl2"];
    let output = server
        .kubectl_stdin(
            &["apply", "--server-side", "-f", "-", other[0], other[1]],
            Some(&manifest(2)),
        )
        .await;
    assert!(!output.status.success(), "a conflict");
    let forced = [other[0], other[1], "--force-conflicts"];
    apply(&server, &manifest(2), &forced).await;
    let object = get_json(&server, &["deployment", "st"]).await;
    let owners: Vec<String> = managers(&object)
        .into_iter()
        .filter(|(_, _, fields)| fields["f:status"].get("f:observedGeneration").is_some())
        .map(|(manager, _, _)| manager)
        .collect();
    assert_eq!(owners, ["ctl2"]);
}

on_both_backends!(
    status_applies_record_their_managers,
    apply_creates_updates_conflicts_and_forces,
    updates_record_update_managers,
    kube_rs_patch_apply,
    list_maps_merge_by_key,
    client_side_apply_moves_to_server_side,
    defaulted_keys_match_on_reapply,
    creates_own_defaulted_fields,
    scale_writes_own_the_replicas,
);

/// Applies per second: one kube-rs client applying a changing ConfigMap in a loop, 8 at a
/// time. Run with `cargo test -p kapi --release --test e2e apply:: -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn apply_updates_per_second() {
    const APPLIES: usize = 2_000;
    const CONCURRENCY: usize = 8;
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let client = kube_client(&server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace =
        serde_json::from_value(json!({"metadata": {"name": "load"}})).expect("a namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the namespace");
    let api: Api<ConfigMap> = Api::namespaced(client, "load");
    let started = Instant::now();
    let workers = (0..CONCURRENCY).map(|worker| {
        let api = api.clone();
        async move {
            let name = format!("cm-{worker}");
            for round in 0..APPLIES / CONCURRENCY {
                let config = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"worker": worker.to_string()}},
                    "data": {"round": round.to_string(), "fixed": "x"}
                });
                api.patch(&name, &PatchParams::apply("load"), &Patch::Apply(&config))
                    .await
                    .expect("apply");
            }
        }
    });
    futures::future::join_all(workers).await;
    let elapsed = started.elapsed();
    let rate = APPLIES as f64 / elapsed.as_secs_f64().max(f64::EPSILON);
    println!("{APPLIES} applies in {elapsed:?}: {rate:.0} applies/s");
    server.stop().await;
}
