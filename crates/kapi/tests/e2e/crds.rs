//! CustomResourceDefinitions through the real kubectl, as a user of kube-apiserver 1.35 meets
//! them: a CRD applied and Established, its custom resources created, printed, explained,
//! patched, scaled, validated (OpenAPI and CEL), pruned, selected by field and applied
//! server-side, the status subresource, `kubectl get all`, and the CRD's deletion taking its
//! resources with it; and an operator's CRD set (cert-manager-like, generated here) installed
//! at once and accepting its sample objects. Every expectation is upstream's behaviour.

use crate::common;

use common::{Backend, TestServer, cells, fails, get_json, ok_stdin, stderr, stdout};
use serde_json::{Value, json};

const CRONTAB_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    selectableFields:
    - {jsonPath: .spec.color}
    schema:
      openAPIV3Schema:
        type: object
        description: A CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: The desired schedule.
            x-kubernetes-validations:
            - {rule: "self.replicas <= 10", message: "replicas must be at most 10"}
            properties:
              cronSpec: {type: string, description: The schedule in cron format.}
              image: {type: string}
              color: {type: string, enum: [blue, red]}
              replicas: {type: integer, minimum: 1, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
"#;

const CRONTAB: &str = r#"
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: my-cron, namespace: default}
spec: {cronSpec: "*/5 * * * *", image: cron:1, color: blue, bogus: dropped}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_on_the_embedded_store() {
    custom_resources(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_on_etcd() {
    custom_resources(Backend::Etcd).await;
}

async fn custom_resources(backend: Backend) {
    let server = TestServer::start(backend, &[]).await;
    common::install_crds(&server, CRONTAB_CRD, &["crontabs.stable.example.com"]).await;
    let crd = get_json(&server, &["crd", "crontabs.stable.example.com"]).await;
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    // The controllers' status writes are kube-apiserver's Update of the status subresource.
    let shown = server
        .kubectl_ok(&[
            "get",
            "crd",
            "crontabs.stable.example.com",
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .await;
    let shown: Value = serde_json::from_str(&shown).expect("json");
    let managers = shown["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields");
    let status = managers
        .iter()
        .find(|m| m["manager"] == "kube-apiserver")
        .unwrap_or_else(|| panic!("no kube-apiserver entry in {managers:?}"));
    assert_eq!(
        (&status["operation"], &status["subresource"]),
        (&json!("Update"), &json!("status"))
    );
    let conditions = &status["fieldsV1"]["f:status"]["f:conditions"];
    for condition in ["Established", "NamesAccepted"] {
        let key = format!(r#"k:{{"type":"{condition}"}}"#);
        assert!(conditions.get(&key).is_some(), "{key} in {status}");
    }
    let resources = server
        .kubectl_ok(&["api-resources", "--api-group=stable.example.com"])
        .await;
    let line = resources.lines().nth(1).expect("one resource");
    assert_eq!(
        cells(line),
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );

    // Unknown fields are pruned, with kubectl's warning; defaults are filled in.
    let applied = server
        .kubectl_stdin(&["apply", "--validate=warn", "-f", "-"], Some(CRONTAB))
        .await;
    assert!(applied.status.success(), "{}", stderr(&applied));
    assert!(
        stderr(&applied).contains(r#"unknown field "spec.bogus""#),
        "{}",
        stderr(&applied)
    );
    let cron = get_json(&server, &["crontab", "my-cron"]).await;
    assert_eq!(
        cron["spec"],
        json!({"cronSpec": "*/5 * * * *", "image": "cron:1", "color": "blue", "replicas": 1})
    );
    assert_eq!(cron["metadata"]["generation"], 1);
    let strict = fails(&server, &["apply", "-f", "-"], Some(CRONTAB)).await;
    assert!(
        strict.contains(r#"strict decoding error: unknown field "spec.bogus""#),
        "{strict}"
    );

    // The printer columns, short name and the `all` category.
    let table = server.kubectl_ok(&["get", "ct"]).await;
    let mut lines = table.lines();
    assert_eq!(
        cells(lines.next().unwrap_or_default()),
        ["NAME", "SPEC", "REPLICAS"],
        "exactly the CRD's columns"
    );
    let row = cells(lines.next().unwrap_or_default());
    assert_eq!(row[..3], ["my-cron", "*/5 * * * *", "1"]);
    let wide = server.kubectl_ok(&["get", "ct", "-o", "wide"]).await;
    assert!(
        wide.lines().next().unwrap_or_default().contains("COLOR"),
        "{wide}"
    );
    let all = server.kubectl_ok(&["get", "all"]).await;
    assert!(all.contains("crontab.stable.example.com/my-cron"), "{all}");

    // kubectl explain reads the published schema.
    let explain = server.kubectl_ok(&["explain", "crontab.spec"]).await;
    assert!(explain.contains("The desired schedule."), "{explain}");
    assert!(explain.contains("cronSpec"), "{explain}");

    // OpenAPI validation and CEL, with upstream's causes.
    let merge = ["patch", "ct", "my-cron", "--type=merge", "-p"];
    let low = fails(
        &server,
        &[&merge[..], &[r#"{"spec":{"replicas":0}}"#]].concat(),
        None,
    )
    .await;
    assert!(
        low.contains("spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"),
        "{low}"
    );
    let high = fails(
        &server,
        &[&merge[..], &[r#"{"spec":{"replicas":11}}"#]].concat(),
        None,
    )
    .await;
    assert!(
        high.contains(r#"spec: Invalid value: "object": replicas must be at most 10"#),
        "{high}"
    );
    let color = fails(
        &server,
        &[&merge[..], &[r#"{"spec":{"color":"green"}}"#]].concat(),
        None,
    )
    .await;
    assert!(
        color
            .contains(r#"spec.color: Unsupported value: "green": supported values: "blue", "red""#),
        "{color}"
    );
    // A blocking schema error keeps the CEL rules from running, and says so.
    let both = fails(
        &server,
        &[&merge[..], &[r#"{"spec":{"replicas":11,"color":"green"}}"#]].concat(),
        None,
    )
    .await;
    assert!(
        both.contains("<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
            && !both.contains("replicas must be at most 10"),
        "{both}"
    );
    let strategic = fails(
        &server,
        &[
            "patch",
            "ct",
            "my-cron",
            "--type=strategic",
            "-p",
            r#"{"spec":{"replicas":2}}"#,
        ],
        None,
    )
    .await;
    assert!(
        strategic.contains("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{strategic}"
    );
    let json_patch = r#"[{"op":"replace","path":"/spec/image","value":"cron:2"}]"#;
    server
        .kubectl_ok(&["patch", "ct", "my-cron", "--type=json", "-p", json_patch])
        .await;

    // Scale and status: spec changes bump the generation, status writes do not.
    server
        .kubectl_ok(&["scale", "ct", "my-cron", "--replicas=3"])
        .await;
    let status = r#"{"status":{"replicas":3,"selector":"app=cron"}}"#;
    server
        .kubectl_ok(&[
            "patch",
            "ct",
            "my-cron",
            "--subresource=status",
            "--type=merge",
            "-p",
            status,
        ])
        .await;
    let cron = get_json(&server, &["ct", "my-cron"]).await;
    assert_eq!(cron["spec"]["replicas"], 3);
    assert_eq!(cron["spec"]["image"], "cron:2");
    assert_eq!(
        cron["status"],
        json!({"replicas": 3, "selector": "app=cron"})
    );
    assert_eq!(cron["metadata"]["generation"], 3);
    let ignored = r#"{"spec":{"replicas":4},"status":{"replicas":9}}"#;
    server.kubectl_ok(&[&merge[..], &[ignored]].concat()).await;
    let cron = get_json(&server, &["ct", "my-cron"]).await;
    assert_eq!(
        cron["status"]["replicas"], 3,
        "status is written only through /status"
    );
    assert_eq!(cron["metadata"]["generation"], 4);
    let scale = server
        .kubectl_ok(&[
            "get",
            "--raw",
            "/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron/scale",
        ])
        .await;
    let scale: Value = serde_json::from_str(&scale).expect("a Scale");
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(
        scale["status"],
        json!({"replicas": 3, "selector": "app=cron"})
    );

    // Field selectors on selectableFields.
    let red = CRONTAB
        .replace("my-cron", "red-cron")
        .replace("color: blue", "color: red")
        .replace(", bogus: dropped", "");
    ok_stdin(&server, &["apply", "-f", "-"], &red).await;
    let blue = server
        .kubectl_ok(&[
            "get",
            "ct",
            "--field-selector",
            "spec.color=blue",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(blue.trim(), "crontab.stable.example.com/my-cron");

    // Server-side apply: conflicts between managers, then forced.
    let applied = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: ssa, namespace: default}\nspec: {image: a}\n";
    let apply = |manager: &'static str| {
        [
            "apply",
            "--server-side",
            "--field-manager",
            manager,
            "-f",
            "-",
        ]
    };
    ok_stdin(&server, &apply("first"), applied).await;
    let conflict = fails(
        &server,
        &apply("second"),
        Some(&applied.replace("image: a", "image: b")),
    )
    .await;
    assert!(conflict.contains(r#"conflict with "first""#), "{conflict}");
    assert!(conflict.contains(".spec.image"), "{conflict}");
    let forced = [&apply("second")[..], &["--force-conflicts"]].concat();
    ok_stdin(&server, &forced, &applied.replace("image: a", "image: b")).await;

    // Deleting the CRD deletes its resources, ends their watches, and the path is gone.
    let watch = server.kubectl(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs?watch=true",
    ]);
    let delete = async {
        // Let the watch start before the CRD goes.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        server
            .kubectl_ok(&[
                "delete",
                "crd",
                "crontabs.stable.example.com",
                "--timeout=30s",
            ])
            .await
    };
    let watched = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        tokio::join!(watch, delete).0
    })
    .await
    .expect("the watch ends with its CRD");
    assert!(
        stdout(&watched).contains(r#""type":"DELETED""#),
        "{}",
        stdout(&watched)
    );
    let gone = server
        .kubectl(&[
            "get",
            "--raw",
            "/apis/stable.example.com/v1/namespaces/default/crontabs",
        ])
        .await;
    assert!(!gone.status.success(), "{}", stdout(&gone));
    common::install_crds(&server, CRONTAB_CRD, &["crontabs.stable.example.com"]).await;
    let empty = server.kubectl_ok(&["get", "ct", "-o", "name"]).await;
    assert_eq!(empty.trim(), "", "the old resources went with the CRD");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_resources_and_name_conflicts() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let crd = CRONTAB_CRD
        .replace("Namespaced", "Cluster")
        .replace("crontabs.stable", "clustertabs.stable")
        .replace("plural: crontabs", "plural: clustertabs")
        .replace("singular: crontab", "singular: clustertab")
        .replace("kind: CronTab", "kind: ClusterTab")
        .replace("shortNames: [ct]", "shortNames: [clt]");
    common::install_crds(&server, &crd, &["clustertabs.stable.example.com"]).await;
    let object = "apiVersion: stable.example.com/v1\nkind: ClusterTab\nmetadata: {name: global}\nspec: {image: x}\n";
    ok_stdin(&server, &["apply", "-f", "-"], object).await;
    let got = get_json(&server, &["clustertab", "global"]).await;
    assert!(got["metadata"].get("namespace").is_none());

    // A second CRD of the group asking for the same short name is not accepted (`ct`).
    common::install_crds(&server, CRONTAB_CRD, &["crontabs.stable.example.com"]).await;
    let conflicting = CRONTAB_CRD
        .replace("crontabs.stable", "othertabs.stable")
        .replace("plural: crontabs", "plural: othertabs")
        .replace("singular: crontab", "singular: othertab")
        .replace("kind: CronTab", "kind: OtherTab");
    ok_stdin(&server, &["apply", "-f", "-"], &conflicting).await;
    let wait = [
        "wait",
        "--for=condition=NamesAccepted=False",
        "crd/othertabs.stable.example.com",
        "--timeout=20s",
    ];
    server.kubectl_ok(&wait).await;
    let other = get_json(&server, &["crd", "othertabs.stable.example.com"]).await;
    let conditions = other["status"]["conditions"]
        .as_array()
        .expect("conditions");
    let names = conditions
        .iter()
        .find(|c| c["type"] == "NamesAccepted")
        .expect("NamesAccepted");
    assert_eq!(names["reason"], "ShortNamesConflict");
    assert_eq!(names["message"], "\"ct\" is already in use");
    let established = conditions
        .iter()
        .find(|c| c["type"] == "Established")
        .expect("Established");
    assert_eq!(established["status"], "False");
    assert_eq!(established["reason"], "NotAccepted");
    server.stop().await;
}

/// One CRD of an operator's set: group, kind, plural, scope, spec properties, printer
/// columns and CEL rules.
struct OperatorKind {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    spec: Value,
    rules: Value,
}

/// The status every cert-manager-like kind reports.
fn conditions_status() -> Value {
    json!({"type": "object", "properties": {
        "conditions": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {"type": "object", "required": ["type", "status"], "properties": {
                "type": {"type": "string"},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "reason": {"type": "string"},
                "message": {"type": "string"},
                "lastTransitionTime": {"type": "string", "format": "date-time"}}}},
        "notAfter": {"type": "string", "format": "date-time"}}})
}

fn issuer_spec() -> Value {
    json!({"type": "object", "properties": {
        "selfSigned": {"type": "object", "properties": {"crlDistributionPoints": {
            "type": "array", "items": {"type": "string"}}}},
        "ca": {"type": "object", "required": ["secretName"],
            "properties": {"secretName": {"type": "string"}}},
        "acme": {"type": "object", "required": ["server", "privateKeySecretRef"], "properties": {
            "server": {"type": "string"},
            "email": {"type": "string"},
            "privateKeySecretRef": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "key": {"type": "string"}}},
            "solvers": {"type": "array", "items": {"type": "object", "properties": {
                "http01": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "dns01": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}})
}

/// A cert-manager-like set of six CRDs (written for this test from the shape of the API, not
/// copied from that project).
fn operator_kinds() -> Vec<OperatorKind> {
    let one_issuer = json!([{"rule": "[has(self.selfSigned), has(self.ca), has(self.acme)].filter(x, x).size() == 1",
        "message": "exactly one of selfSigned, ca or acme must be set"}]);
    vec![
        OperatorKind {
            group: "cert-manager.io",
            kind: "Certificate",
            plural: "certificates",
            namespaced: true,
            short_names: &["cert", "certs"],
            spec: json!({"type": "object", "required": ["secretName", "issuerRef"], "properties": {
                "secretName": {"type": "string"},
                "commonName": {"type": "string", "maxLength": 64},
                "dnsNames": {"type": "array", "items": {"type": "string"}},
                "duration": {"type": "string", "format": "duration"},
                "renewBefore": {"type": "string", "format": "duration"},
                "privateKey": {"type": "object", "properties": {
                    "algorithm": {"type": "string", "enum": ["RSA", "ECDSA", "Ed25519"]},
                    "size": {"type": "integer"},
                    "rotationPolicy": {"type": "string", "enum": ["Never", "Always"], "default": "Always"}}},
                "usages": {"type": "array", "items": {"type": "string"}},
                "issuerRef": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "kind": {"type": "string"}, "group": {"type": "string"}}},
                "keystores": {"type": "object", "properties": {"pkcs12": {"type": "object",
                    "properties": {"create": {"type": "boolean"},
                        "password": {"x-kubernetes-int-or-string": true,
                            "anyOf": [{"type": "integer"}, {"type": "string"}]}}}}}}}),
            rules: json!([{"rule": "has(self.commonName) || (has(self.dnsNames) && size(self.dnsNames) > 0)",
                "message": "at least one of commonName or dnsNames must be set"}]),
        },
        OperatorKind {
            group: "cert-manager.io",
            kind: "CertificateRequest",
            plural: "certificaterequests",
            namespaced: true,
            short_names: &["cr", "crs"],
            spec: json!({"type": "object", "required": ["request", "issuerRef"], "properties": {
                "request": {"type": "string", "format": "byte"},
                "isCA": {"type": "boolean"},
                "issuerRef": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "kind": {"type": "string"}}}}}),
            rules: json!([{"rule": "self.request == oldSelf.request", "message": "request is immutable"}]),
        },
        OperatorKind {
            group: "cert-manager.io",
            kind: "Issuer",
            plural: "issuers",
            namespaced: true,
            short_names: &[],
            spec: issuer_spec(),
            rules: one_issuer.clone(),
        },
        OperatorKind {
            group: "cert-manager.io",
            kind: "ClusterIssuer",
            plural: "clusterissuers",
            namespaced: false,
            short_names: &[],
            spec: issuer_spec(),
            rules: one_issuer,
        },
        OperatorKind {
            group: "acme.cert-manager.io",
            kind: "Challenge",
            plural: "challenges",
            namespaced: true,
            short_names: &[],
            spec: json!({"type": "object", "required": ["url", "dnsName", "token", "type"], "properties": {
                "url": {"type": "string"}, "dnsName": {"type": "string"},
                "token": {"type": "string"}, "key": {"type": "string"},
                "type": {"type": "string", "enum": ["HTTP-01", "DNS-01"]},
                "wildcard": {"type": "boolean"},
                "solver": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
            rules: json!([]),
        },
        OperatorKind {
            group: "acme.cert-manager.io",
            kind: "Order",
            plural: "orders",
            namespaced: true,
            short_names: &[],
            spec: json!({"type": "object", "required": ["request", "issuerRef"], "properties": {
                "request": {"type": "string", "format": "byte"},
                "commonName": {"type": "string"},
                "dnsNames": {"type": "array", "items": {"type": "string"}},
                "duration": {"type": "string"},
                "issuerRef": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "kind": {"type": "string"}}}}}),
            rules: json!([]),
        },
    ]
}

impl OperatorKind {
    fn name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    fn crd(&self) -> Value {
        let mut spec = self.spec.clone();
        spec["x-kubernetes-validations"] = self.rules.clone();
        let singular = self.kind.to_lowercase();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name()},
            "spec": {
                "group": self.group,
                "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
                "names": {"plural": self.plural, "singular": singular, "kind": self.kind,
                    "listKind": format!("{}List", self.kind), "shortNames": self.short_names,
                    "categories": ["cert-manager"]},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Ready", "type": "string",
                         "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": spec, "status": conditions_status()}}},
                }],
            },
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_crd_set_installs_and_accepts_its_objects() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let kinds = operator_kinds();
    let list = json!({"apiVersion": "v1", "kind": "List",
        "items": kinds.iter().map(OperatorKind::crd).collect::<Vec<_>>()});
    let names: Vec<String> = kinds.iter().map(OperatorKind::name).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    common::install_crds(&server, &list.to_string(), &names).await;

    let samples = r#"
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: letsencrypt}
spec:
  acme:
    server: https://acme-v02.api.letsencrypt.org/directory
    email: ops@example.com
    privateKeySecretRef: {name: letsencrypt-key}
    solvers:
    - http01: {ingress: {ingressClassName: nginx}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: self-signed, namespace: default}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: letsencrypt, kind: ClusterIssuer}
  keystores: {pkcs12: {create: true, password: 1234}}
---
apiVersion: acme.cert-manager.io/v1
kind: Challenge
metadata: {name: web-1, namespace: default}
spec: {url: "https://acme/chall/1", dnsName: web.example.com, token: t, type: HTTP-01, solver: {http01: {ingress: {}}}}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], samples).await;
    let cert = get_json(&server, &["certificate", "web"]).await;
    assert_eq!(
        cert["spec"]["privateKey"]["rotationPolicy"], "Always",
        "defaulted"
    );
    let issuer = get_json(&server, &["clusterissuer", "letsencrypt"]).await;
    assert_eq!(
        issuer["spec"]["acme"]["solvers"][0]["http01"]["ingress"]["ingressClassName"], "nginx",
        "preserved unknown fields"
    );
    let table = server.kubectl_ok(&["get", "certs"]).await;
    assert_eq!(
        cells(table.lines().next().unwrap_or_default()),
        ["NAME", "READY", "AGE"]
    );

    let invalid = r#"
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: two-kinds, namespace: default}
spec: {selfSigned: {}, ca: {secretName: ca}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: nameless, namespace: default}
spec: {secretName: x, issuerRef: {name: y}, privateKey: {algorithm: DSA}}
"#;
    let errors = fails(&server, &["apply", "-f", "-"], Some(invalid)).await;
    assert!(
        errors.contains(
            r#"spec: Invalid value: "object": exactly one of selfSigned, ca or acme must be set"#
        ),
        "{errors}"
    );
    assert!(
        errors.contains(r#"spec.privateKey.algorithm: Unsupported value: "DSA": supported values: "RSA", "ECDSA", "Ed25519""#),
        "{errors}"
    );
    // The Certificate's schema errors block its CEL rules, as upstream.
    assert!(
        errors.contains("some validation rules were not checked because the object was invalid")
            && !errors.contains("at least one of commonName or dnsNames must be set"),
        "{errors}"
    );
    server.stop().await;
}

/// A deleted CRD whose instances do not go (a finalizer of their own holds one) holds up
/// nothing else: another CRD is established meanwhile; the first goes once the instance
/// does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_crd_deletion_holds_up_no_other_crd() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    common::install_crds(&server, CRONTAB_CRD, &["crontabs.stable.example.com"]).await;
    let held = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: held, namespace: default, finalizers: [example.com/hold]}\nspec: {cronSpec: x, image: nginx}\n";
    ok_stdin(&server, &["apply", "-f", "-"], held).await;
    server
        .kubectl_ok(&[
            "delete",
            "crd",
            "crontabs.stable.example.com",
            "--wait=false",
        ])
        .await;
    let other = CRONTAB_CRD
        .replace("crontabs", "othertabs")
        .replace("crontab", "othertab")
        .replace("CronTab", "OtherTab")
        .replace("[ct]", "[ot]");
    common::install_crds(&server, &other, &["othertabs.stable.example.com"]).await;
    let crd = get_json(&server, &["crd", "crontabs.stable.example.com"]).await;
    assert_eq!(
        crd["metadata"]["finalizers"][0],
        "customresourcecleanup.apiextensions.k8s.io"
    );
    let release = r#"{"metadata":{"finalizers":null}}"#;
    server
        .kubectl_ok(&["patch", "crontab", "held", "--type=merge", "-p", release])
        .await;
    server
        .kubectl_ok(&[
            "wait",
            "--for=delete",
            "crd/crontabs.stable.example.com",
            "--timeout=30s",
        ])
        .await;
}
