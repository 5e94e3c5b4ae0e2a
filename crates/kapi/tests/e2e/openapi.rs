//! The full OpenAPI schemas and schema-driven decoding, driven by the real kubectl:
//! `kubectl explain` (which reads the v3 documents), kubectl's field validation (it finds
//! the `fieldValidation` parameter in the v3 documents and lets the server validate, with
//! `--validate=strict` by default), unknown and duplicate fields with each directive, Go's
//! type errors, `kind: List` manifests (validated on the client with the protobuf v2
//! document) and strategic merge patches that merge lists by the schema's merge keys.

use crate::common;

use common::{Backend, TestServer, stderr, stdout};

async fn server() -> TestServer {
    TestServer::start(Backend::Embedded, &[]).await
}

#[tokio::test]
async fn explain_reads_the_full_schemas() {
    let server = server().await;
    let configmaps = server.kubectl_ok(&["explain", "configmaps"]).await;
    assert!(configmaps.contains("KIND:       ConfigMap"), "{configmaps}");
    assert!(configmaps.contains("VERSION:    v1"), "{configmaps}");
    assert!(
        configmaps.contains("binaryData\t<map[string]string>"),
        "{configmaps}"
    );
    assert!(configmaps.contains("immutable\t<boolean>"), "{configmaps}");

    let holder = server
        .kubectl_ok(&["explain", "leases.spec.holderIdentity"])
        .await;
    assert!(
        holder.contains("FIELD: holderIdentity <string>"),
        "{holder}"
    );

    let owner = server
        .kubectl_ok(&["explain", "secrets.metadata.ownerReferences"])
        .await;
    assert!(
        owner.contains("FIELD: ownerReferences <[]OwnerReference>"),
        "{owner}"
    );
    assert!(owner.contains("uid\t<string> -required-"), "{owner}");

    let recursive = server
        .kubectl_ok(&["explain", "serviceaccounts", "--recursive"])
        .await;
    assert!(
        recursive.contains("automountServiceAccountToken\t<boolean>"),
        "{recursive}"
    );
    assert!(
        recursive.contains("    managedFields\t<[]ManagedFieldsEntry>"),
        "{recursive}"
    );

    let strategy = server
        .kubectl_ok(&["explain", "deployment.spec.strategy"])
        .await;
    assert!(strategy.contains("GROUP:      apps"), "{strategy}");
    assert!(
        strategy.contains("FIELD: strategy <DeploymentStrategy>"),
        "{strategy}"
    );
    assert!(
        strategy.contains("rollingUpdate\t<RollingUpdateDeployment>"),
        "{strategy}"
    );

    let containers = server
        .kubectl_ok(&["explain", "pods.spec.containers"])
        .await;
    assert!(
        containers.contains("FIELD: containers <[]Container>"),
        "{containers}"
    );
    assert!(
        containers.contains("name\t<string> -required-"),
        "{containers}"
    );

    let missing = server.kubectl(&["explain", "configmaps.nothing"]).await;
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains(r#"field "nothing" does not exist"#),
        "{}",
        stderr(&missing)
    );
    server.stop().await;
}

const UNKNOWN_FIELD: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: strict
data:
  a: b
color: blue
";

/// `[]byte` fields must hold base64, as Go's decoder reads it: anything else is a 400 and
/// nothing is stored.
#[tokio::test]
async fn byte_fields_must_be_base64() {
    let server = server().await;
    for (manifest, want) in [
        (
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"not base64!"}}"#,
            r#"Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3"#,
        ),
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"binaryData":{"a":"YQ"}}"#,
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at input byte 0"#,
        ),
    ] {
        let output = server
            .kubectl_stdin(&["create", "-f", "-"], Some(manifest))
            .await;
        assert!(!output.status.success());
        assert!(stderr(&output).contains(want), "{}", stderr(&output));
    }
    let stored = server.kubectl(&["get", "secret", "s"]).await;
    assert!(!stored.status.success(), "nothing was stored");
}

#[tokio::test]
async fn strict_validation_rejects_unknown_fields() {
    let server = server().await;
    let output = server
        .kubectl_stdin(&["create", "-f", "-"], Some(UNKNOWN_FIELD))
        .await;
    assert!(!output.status.success());
    assert_eq!(
        stderr(&output).trim(),
        r#"Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "color""#
    );

    let warned = server
        .kubectl_stdin(
            &["create", "--validate=warn", "-f", "-"],
            Some(UNKNOWN_FIELD),
        )
        .await;
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert!(
        stderr(&warned).contains(r#"Warning: unknown field "color""#),
        "{}",
        stderr(&warned)
    );
    let stored = server
        .kubectl_ok(&["get", "configmap", "strict", "-o", "json"])
        .await;
    assert!(!stored.contains("color"), "{stored}");
    assert!(stored.contains(r#""a": "b""#), "{stored}");

    let ignored = server
        .kubectl_stdin(
            &["replace", "--validate=false", "-f", "-"],
            Some(UNKNOWN_FIELD),
        )
        .await;
    assert!(ignored.status.success(), "{}", stderr(&ignored));
    assert!(
        !stderr(&ignored).contains("Warning"),
        "{}",
        stderr(&ignored)
    );
    server.stop().await;
}

#[tokio::test]
async fn raw_requests_report_duplicates_and_type_errors() {
    let server = server().await;
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"},"data":{"a":"1"}}"#;
    let path = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict";
    let dir = server.data_dir.path();
    let file = dir.join("dup.json");
    std::fs::write(&file, body).unwrap();
    let output = server
        .kubectl(&["create", "--raw", path, "-f", file.to_str().unwrap()])
        .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(
            r#"Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name""#
        ),
        "{}",
        stderr(&output)
    );

    let wrong = dir.join("wrong.json");
    std::fs::write(
        &wrong,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wrong"},"immutable":"yes"}"#,
    )
    .unwrap();
    let output = server
        .kubectl(&[
            "create",
            "--raw",
            "/api/v1/namespaces/default/configmaps",
            "-f",
            wrong.to_str().unwrap(),
        ])
        .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(
            "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool"
        ),
        "{}",
        stderr(&output)
    );
    server.stop().await;
}

const LIST: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: first
  data:
    a: b
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: second
";

#[tokio::test]
async fn list_manifests_validate_and_patches_merge_by_schema() {
    let server = server().await;
    let created = server
        .kubectl_stdin(&["create", "-f", "-"], Some(LIST))
        .await;
    assert!(created.status.success(), "{}", stderr(&created));
    assert!(
        stdout(&created).contains("configmap/first created"),
        "{}",
        stdout(&created)
    );

    // kubectl validates the items of a List on the client, with the v2 protobuf document.
    let bad_item = LIST.replace("    a: b\n", "    a: b\n  color: blue\n");
    let rejected = server
        .kubectl_stdin(&["create", "-f", "-"], Some(&bad_item))
        .await;
    assert!(!rejected.status.success());
    assert!(
        stderr(&rejected).contains(
            r#"error validating data: ValidationError(ConfigMap): unknown field "color" in io.k8s.api.core.v1.ConfigMap"#
        ),
        "{}",
        stderr(&rejected)
    );

    // ServiceAccount.secrets merges by name (a strategic merge patch from the schema).
    for name in ["one", "two"] {
        let patch = format!(r#"{{"secrets":[{{"name":"{name}"}}]}}"#);
        server
            .kubectl_ok(&["patch", "serviceaccount", "second", "-p", &patch])
            .await;
    }
    let secrets = server
        .kubectl_ok(&[
            "get",
            "serviceaccount",
            "second",
            "-o",
            "jsonpath={.secrets[*].name}",
        ])
        .await;
    assert_eq!(secrets, "two one");

    // kubectl patch sends no fieldValidation: unknown fields of the result are warned about
    // (upstream's default) and dropped.
    let output = server
        .kubectl(&["patch", "configmap", "first", "-p", r#"{"colour":"red"}"#])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(r#"Warning: unknown field "colour""#),
        "{}",
        stderr(&output)
    );
    let stored = server
        .kubectl_ok(&["get", "configmap", "first", "-o", "json"])
        .await;
    assert!(!stored.contains("colour"), "{stored}");
    server.stop().await;
}

/// Custom resources are published as upstream's CRD OpenAPI builder publishes them: their
/// own document's info, int-or-string unfolded to `anyOf`, embedded resources with
/// apiVersion, kind and metadata (which `kubectl explain` then shows), the selectable fields
/// named, and the list kind's description.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_are_published_as_the_crd_builder_publishes_them() {
    let server = server().await;
    let crd = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "color": {"type": "string"},
                        "size": {"x-kubernetes-int-or-string": true},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}}"#;
    common::install_crds(&server, crd, &["widgets.example.com"]).await;
    let document: serde_json::Value = serde_json::from_str(
        &server
            .kubectl_ok(&["get", "--raw", "/openapi/v3/apis/example.com/v1"])
            .await,
    )
    .unwrap();
    assert_eq!(
        document["info"],
        serde_json::json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
    );
    assert!(
        document["paths"].get("/apis/example.com/v1/").is_none(),
        "the CRD builder publishes no discovery route"
    );
    let schemas = &document["components"]["schemas"];
    let widget = &schemas["com.example.v1.Widget"];
    let spec = &widget["properties"]["spec"]["properties"];
    assert_eq!(
        spec["size"]["anyOf"],
        serde_json::json!([{"type": "integer"}, {"type": "string"}])
    );
    let template = &spec["template"];
    assert_eq!(
        template["required"],
        serde_json::json!(["kind", "apiVersion"])
    );
    assert_eq!(
        template["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(
        widget["x-kubernetes-selectable-fields"],
        serde_json::json!([{"fieldPath": "spec.color"}])
    );
    let list = &schemas["com.example.v1.WidgetList"];
    assert_eq!(list["description"], "WidgetList is a list of Widget");
    assert_eq!(
        list["properties"]["items"]["items"],
        serde_json::json!({"$ref": "#/components/schemas/com.example.v1.Widget"})
    );
    let explain = server
        .kubectl_ok(&["explain", "widgets.spec.template"])
        .await;
    assert!(
        explain.contains("apiVersion") && explain.contains("metadata"),
        "{explain}"
    );
}
