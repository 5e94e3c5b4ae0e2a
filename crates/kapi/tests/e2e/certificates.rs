//! kube-controller-manager's certificate controllers in kapi: a user added as the
//! Kubernetes documentation shows (a CertificateSigningRequest, `kubectl certificate
//! approve`, the issued certificate used by kubectl), a request its signer refuses failed
//! with upstream's reason, and a node's client certificate request approved on its own
//! through a SubjectAccessReview and signed.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::common::process::{DEADLINE, Kapi};
use crate::common::{self, Backend, stderr, stdout};

/// A PKCS#10 request (PEM) for `common_name` in `organization`, signed by `key`.
fn request(common_name: &str, organization: &str, key: &rcgen::KeyPair) -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, organization);
    params.serialize_request(key).unwrap().pem().unwrap()
}

fn csr_manifest(name: &str, request: &str, signer: &str, usages: &[&str]) -> String {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": STANDARD.encode(request), "signerName": signer,
            "expirationSeconds": 86400, "usages": usages}})
    .to_string()
}

async fn kubectl(kubeconfig: &Path, args: &[&str], input: Option<&str>) -> String {
    let output = common::kubectl(kubeconfig, args, input).await;
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// Polls the request `name` until `done` accepts it.
async fn wait_csr(kubeconfig: &Path, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let csr: Value = serde_json::from_str(
            &kubectl(kubeconfig, &["get", "csr", name, "-o", "json"], None).await,
        )
        .unwrap();
        if done(&csr) {
            return csr;
        }
        assert!(Instant::now() < deadline, "csr {name} stays {csr}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_user_is_added_through_a_signing_request() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.data_dir.path().join("admin.kubeconfig");
    let key = rcgen::KeyPair::generate().unwrap();
    let manifest = csr_manifest(
        "myuser",
        &request("myuser", "developers", &key),
        "kubernetes.io/kube-apiserver-client",
        &["client auth"],
    );
    kubectl(&admin, &["apply", "-f", "-"], Some(&manifest)).await;
    let listed = kubectl(&admin, &["get", "csr", "myuser"], None).await;
    assert!(
        listed.lines().nth(1).unwrap().ends_with("Pending"),
        "{listed}"
    );
    let approved = kubectl(&admin, &["certificate", "approve", "myuser"], None).await;
    assert_eq!(
        approved.trim(),
        "certificatesigningrequest.certificates.k8s.io/myuser approved"
    );
    let csr = wait_csr(&admin, "myuser", |csr| {
        csr["status"]["certificate"].is_string()
    })
    .await;
    let listed = kubectl(&admin, &["get", "csr", "myuser"], None).await;
    assert!(listed.contains("Approved,Issued"), "{listed}");

    let pem = STANDARD
        .decode(csr["status"]["certificate"].as_str().unwrap())
        .unwrap();
    let (_, block) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let cert = block.parse_x509().unwrap();
    assert_eq!(cert.subject().to_string(), "CN=myuser, O=developers");
    let validity = cert.validity();
    assert_eq!(
        validity.not_after.timestamp() - validity.not_before.timestamp(),
        86400,
        "spec.expirationSeconds is honoured"
    );
    assert!(
        cert.extended_key_usage()
            .unwrap()
            .unwrap()
            .value
            .client_auth
    );

    // The certificate works with kubectl, as the documentation uses it.
    let dir = tempfile::tempdir().unwrap();
    let (key_file, cert_file) = (dir.path().join("myuser.key"), dir.path().join("myuser.crt"));
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    std::fs::write(&cert_file, &pem).unwrap();
    let config = dir.path().join("config");
    let raw = kubectl(&admin, &["config", "view", "--raw"], None).await;
    std::fs::write(&config, raw).unwrap();
    let cluster = kubectl(
        &config,
        &["config", "view", "-o", "jsonpath={.clusters[0].name}"],
        None,
    )
    .await;
    kubectl(
        &config,
        &[
            "config",
            "set-credentials",
            "myuser",
            &format!("--client-key={}", key_file.display()),
            &format!("--client-certificate={}", cert_file.display()),
            "--embed-certs=true",
        ],
        None,
    )
    .await;
    kubectl(
        &config,
        &[
            "config",
            "set-context",
            "myuser",
            "--cluster",
            &cluster,
            "--user=myuser",
        ],
        None,
    )
    .await;
    let who = kubectl(
        &config,
        &[
            "--context",
            "myuser",
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo}",
        ],
        None,
    )
    .await;
    let who: Value = serde_json::from_str(&who).unwrap();
    assert_eq!(who["username"], "myuser");
    assert_eq!(who["groups"], json!(["developers", "system:authenticated"]));
    kubectl(
        &admin,
        &[
            "create",
            "role",
            "developer",
            "--verb=get,list",
            "--resource=configmaps",
        ],
        None,
    )
    .await;
    kubectl(
        &admin,
        &[
            "create",
            "rolebinding",
            "developer-binding-myuser",
            "--role=developer",
            "--user=myuser",
        ],
        None,
    )
    .await;
    kubectl(&config, &["--context", "myuser", "get", "configmaps"], None).await;
    let refused = common::kubectl(&config, &["--context", "myuser", "get", "secrets"], None).await;
    assert!(
        stderr(&refused).contains(r#"User "myuser" cannot list resource "secrets""#),
        "{}",
        stderr(&refused)
    );

    // A client signer refuses to sign for a server.
    let server = csr_manifest(
        "server",
        &request("server", "developers", &key),
        "kubernetes.io/kube-apiserver-client",
        &["server auth"],
    );
    kubectl(&admin, &["apply", "-f", "-"], Some(&server)).await;
    kubectl(&admin, &["certificate", "approve", "server"], None).await;
    let failed = wait_csr(&admin, "server", |csr| {
        csr["status"]["conditions"]
            .as_array()
            .is_some_and(|conditions| conditions.iter().any(|c| c["type"] == "Failed"))
    })
    .await;
    let condition = &failed["status"]["conditions"][1];
    assert_eq!(condition["reason"], "SignerValidationFailure");
    assert_eq!(
        condition["message"],
        "invalid usage for client certificate: server auth"
    );
    assert!(failed["status"]["certificate"].is_null());
    kapi.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nodes_client_certificate_is_approved_and_signed_on_its_own() {
    let kapi = Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.data_dir.path().join("admin.kubeconfig");
    // What kubeadm grants nodes: requests, and automatic approval of their own.
    for (name, role) in [
        ("node-bootstrapper", "system:node-bootstrapper"),
        (
            "node-autoapprove",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        ),
    ] {
        let role = format!("--clusterrole={role}");
        kubectl(
            &admin,
            &[
                "create",
                "clusterrolebinding",
                name,
                &role,
                "--group=system:nodes",
            ],
            None,
        )
        .await;
    }
    let node = kapi.user("system:node:n1", "system:nodes");
    let key = rcgen::KeyPair::generate().unwrap();
    let manifest: Value = serde_json::from_str(&csr_manifest(
        "node-n1",
        &request("system:node:n1", "system:nodes", &key),
        "kubernetes.io/kube-apiserver-client-kubelet",
        &["digital signature", "client auth"],
    ))
    .unwrap();
    node.create(
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        manifest,
    )
    .await;
    let csr = wait_csr(&admin, "node-n1", |csr| {
        csr["status"]["certificate"].is_string()
    })
    .await;
    let approval = &csr["status"]["conditions"][0];
    assert_eq!(approval["type"], "Approved");
    assert_eq!(approval["reason"], "AutoApproved");
    assert_eq!(
        approval["message"],
        "Auto approving self kubelet client certificate after SubjectAccessReview."
    );
    assert_eq!(csr["spec"]["username"], "system:node:n1");
    kapi.stop().await;
}
