//! Every built-in kind round-trips: an object created as a user writes it, read with GET and
//! written back unchanged with PUT, is accepted, and the PUT changes nothing (upstream's update
//! of an unchanged object writes nothing and answers the object as it was, resourceVersion
//! included). A field stored as `null` by a defaulting step, a default that validation then
//! refuses, or a field an update strategy resets would each fail here, as LimitRanger's
//! `initContainers: null` made `kubectl replace` fail before.
//!
//! The kinds come from discovery (every resource with create, get and update, preferred
//! version of each group), so a kind added to the API without an object in
//! fixtures/every-kind.yaml fails the test rather than going untested.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine;
use common::Backend;
use common::process::{Client, Kapi};
use http::Method;
use serde_json::{Value, json};

/// One object of every kind, as a user writes it.
pub(crate) const EVERY_KIND: &str = include_str!("fixtures/every-kind.yaml");

/// How often a PUT that lost a race with a controller's write (409) is tried again.
const CONFLICT_RETRIES: usize = 10;

/// Kinds whose first update of an unchanged object changes it in kube-apiserver too, with
/// the one metadata field it changes. The second round trip must then change nothing.
const CHANGED_BY_FIRST_UPDATE: &[(&str, &str, &str)] = &[(
    "batch/v1", "Job",
    // SetDefaults_Job copies the pod template's labels to a Job without labels on every
    // decode; on create the template has none yet (the strategy adds them after defaulting).
    "labels",
)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_kind_survives_get_and_put_unchanged() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let created = common::kubectl(&kubeconfig, &["create", "-f", "-"], Some(EVERY_KIND)).await;
    assert!(created.status.success(), "{}", common::stderr(&created));
    admin
        .create(
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            certificate_signing_request(),
        )
        .await;

    let kinds = creatable_kinds(&admin).await;
    let mut samples: Vec<Value> = EVERY_KIND
        .split("\n---\n")
        .map(|document| serde_yaml_ng::from_str(document).expect("a YAML object"))
        .collect();
    samples.push(certificate_signing_request());
    let covered: BTreeSet<(String, String)> = samples.iter().map(api_version_kind).collect();
    let missing: Vec<_> = kinds.iter().filter(|k| !covered.contains(&k.0)).collect();
    assert!(
        missing.is_empty(),
        "kinds with no object in every-kind.yaml: {missing:?}"
    );

    let mut failures = Vec::new();
    for (kind, path) in &kinds {
        let sample = samples
            .iter()
            .find(|s| api_version_kind(s) == *kind)
            .expect("covered");
        let object = object_path(path, sample);
        let changed = CHANGED_BY_FIRST_UPDATE
            .iter()
            .find(|(api_version, k, _)| (*api_version, *k) == (kind.0.as_str(), kind.1.as_str()))
            .map(|(_, _, field)| *field);
        let mut result = round_trip(&admin, &object, changed).await;
        if result.is_ok() && changed.is_some() {
            result = round_trip(&admin, &object, None).await;
        }
        if let Err(failure) = result {
            failures.push(format!("{} {}: {failure}", kind.0, kind.1));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{} kinds round-tripped through GET and PUT", kinds.len());
    kapi.stop().await;
}

/// GETs `path` and PUTs the body back as it came; the PUT must answer 200 with the object
/// unchanged, or changed only in the metadata field `changed` (and so in its managedFields
/// and resourceVersion).
async fn round_trip(admin: &Client, path: &str, changed: Option<&str>) -> Result<(), String> {
    for _ in 0..CONFLICT_RETRIES {
        let got = admin.get(path).await;
        if got.status != 200 {
            return Err(format!("GET {}: {}", got.status, got.body));
        }
        let before = got.json();
        let put = admin.write(Method::PUT, path, &before).await;
        match put.status {
            200 => {}
            // A controller wrote the object between the GET and the PUT: read it again.
            409 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            status => return Err(format!("PUT {status}: {}", put.body)),
        }
        let after = put.json();
        let comparable = |object: &Value| {
            let mut object = object.clone();
            if let (Some(field), Some(meta)) = (changed, object["metadata"].as_object_mut()) {
                for field in [field, "managedFields", "resourceVersion"] {
                    meta.remove(field);
                }
            }
            object
        };
        if comparable(&after) != comparable(&before) {
            return Err(format!(
                "PUT changed the object:\n  before {before}\n  after  {after}"
            ));
        }
        return Ok(());
    }
    Err(format!("{CONFLICT_RETRIES} PUTs in a row conflicted"))
}

/// `(apiVersion, kind)` of every resource discovery lists with create, get and update, in
/// the preferred version of its group, with its collection path.
pub(crate) async fn creatable_kinds(admin: &Client) -> Vec<((String, String), String)> {
    let mut group_versions = vec!["v1".to_string()];
    let groups = admin.get("/apis").await.json();
    for group in groups["groups"].as_array().expect("groups") {
        let preferred = group["preferredVersion"]["groupVersion"].as_str();
        group_versions.push(preferred.expect("a preferred version").to_string());
    }
    let mut kinds = Vec::new();
    for group_version in group_versions {
        let base = match group_version.as_str() {
            "v1" => "/api/v1".to_string(),
            other => format!("/apis/{other}"),
        };
        let reply = admin.get(&base).await;
        if reply.status == 503 {
            // An APIService naming a Service that is not there (the fixture's own
            // rt.example.com): listed in /apis, its discovery unavailable, as upstream.
            continue;
        }
        let list = reply.json();
        for resource in list["resources"].as_array().expect("resources") {
            let name = resource["name"].as_str().unwrap_or_default();
            let verbs: Vec<&str> = resource["verbs"]
                .as_array()
                .map(|verbs| verbs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let creatable = ["create", "get", "update"]
                .iter()
                .all(|v| verbs.contains(v));
            // Custom resources are not built-in kinds.
            if name.contains('/') || !creatable || group_version == "example.com/v1" {
                continue;
            }
            let kind = resource["kind"].as_str().unwrap_or_default().to_string();
            let namespaced = resource["namespaced"].as_bool().unwrap_or(false);
            let path = match namespaced {
                true => format!("{base}/namespaces/{{namespace}}/{name}"),
                false => format!("{base}/{name}"),
            };
            kinds.push(((group_version.clone(), kind), path));
        }
    }
    kinds
}

pub(crate) fn api_version_kind(object: &Value) -> (String, String) {
    let field = |name: &str| object[name].as_str().unwrap_or_default().to_string();
    (field("apiVersion"), field("kind"))
}

/// The path of `sample` in the collection at `collection`.
pub(crate) fn object_path(collection: &str, sample: &Value) -> String {
    let meta = &sample["metadata"];
    let namespace = meta["namespace"].as_str().unwrap_or_default();
    let name = meta["name"].as_str().expect("a name");
    format!("{}/{name}", collection.replace("{namespace}", namespace))
}

/// A CertificateSigningRequest with a real PKCS#10 request, which the YAML cannot hold.
pub(crate) fn certificate_signing_request() -> Value {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "round-trip");
    let request = params.serialize_request(&key).expect("a CSR");
    let pem = request.pem().expect("PEM");
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "rt"},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "example.com/rt",
            "usages": ["digital signature"],
        },
    })
}
