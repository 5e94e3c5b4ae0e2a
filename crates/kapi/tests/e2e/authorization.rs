//! The authorization matrix: users with no role, view, edit, admin and cluster-admin, a
//! service account with a namespaced Role, and anonymous requests, each tried against a
//! table of requests. Every answer is what kube-apiserver's RBAC (with its bootstrap policy)
//! decides, checked by the HTTP status (and upstream's message where it matters) and by
//! `kubectl auth can-i` as the same user.

use crate::common;

use std::path::{Path, PathBuf};

use base64::Engine;
use common::{Backend, KUBECTL, TestServer, stderr};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{CertificateParams, DnType, Issuer, KeyPair};

/// Who sends a request.
#[derive(Clone, Copy, Debug)]
enum Who {
    Nobody,
    Anonymous,
    Viewer,
    Editor,
    TeamAdmin,
    Root,
    Robot,
    Kubelet,
}

impl Who {
    /// The client certificate's common name and organizations (none for anonymous).
    fn identity(self) -> Option<(&'static str, &'static [&'static str])> {
        Some(match self {
            Who::Nobody => ("nobody", &[]),
            Who::Anonymous => return None,
            Who::Viewer => ("viewer", &[]),
            Who::Editor => ("editor", &[]),
            Who::TeamAdmin => ("teamadmin", &[]),
            Who::Root => ("root", &[]),
            Who::Robot => (
                "system:serviceaccount:team:robot",
                &["system:serviceaccounts", "system:serviceaccounts:team"],
            ),
            Who::Kubelet => ("system:node:n1", &["system:nodes"]),
        })
    }
}

/// One row of the matrix.
struct Case {
    who: Who,
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    /// Whether RBAC lets the request through (whatever the handler then answers).
    allowed: bool,
    /// `kubectl auth can-i` arguments that ask the same question, when it can be asked.
    can_i: Option<&'static [&'static str]>,
    /// The exact message of the 403, where the row checks it.
    message: Option<&'static str>,
}

const CONFIGMAP: &str =
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"m-"}}"#;
const EDIT_BINDING: &str = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"x"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"someone"}]}"#;
const ADMIN_BINDING: &str = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"x"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","name":"someone"}]}"#;
const NODE_ROLE: &str = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"x"},"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}]}"#;
const POD_ROLE: &str = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"x"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}"#;
const ROOT_BINDING: &str = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"x"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"someone"}]}"#;
const ACCESS_REVIEW: &str = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list","resource":"pods"}}}"#;

fn case(who: Who, method: &'static str, path: &'static str, allowed: bool) -> Case {
    Case {
        who,
        method,
        path,
        body: None,
        allowed,
        can_i: None,
        message: None,
    }
}

impl Case {
    fn can_i(mut self, args: &'static [&'static str]) -> Case {
        self.can_i = Some(args);
        self
    }

    fn body(mut self, body: &'static str) -> Case {
        self.body = Some(body);
        self
    }

    fn message(mut self, message: &'static str) -> Case {
        self.message = Some(message);
        self
    }
}

/// The matrix: what kube-apiserver 1.35's RBAC and bootstrap roles decide.
fn matrix() -> Vec<Case> {
    use Who::*;
    vec![
        // No bindings: only what every authenticated user gets.
        case(Nobody, "GET", "/api/v1/namespaces/team/pods", false)
            .can_i(&["list", "pods", "-n", "team"])
            .message(r#"pods is forbidden: User "nobody" cannot list resource "pods" in API group "" in the namespace "team""#),
        case(Nobody, "GET", "/api/v1/nodes", false).can_i(&["list", "nodes"]),
        case(Nobody, "GET", "/api", true).can_i(&["get", "/api"]),
        case(Nobody, "GET", "/apis/apps", true).can_i(&["get", "/apis/apps"]),
        case(Nobody, "GET", "/healthz", true).can_i(&["get", "/healthz"]),
        case(Nobody, "GET", "/metrics", false).can_i(&["get", "/metrics"]),
        case(Nobody, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true)
            .body(ACCESS_REVIEW)
            .can_i(&["create", "selfsubjectaccessreviews.authorization.k8s.io"]),
        // Anonymous: only the public information.
        case(Anonymous, "GET", "/api/v1/namespaces/team/pods", false)
            .message(r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "team""#),
        case(Anonymous, "GET", "/healthz", true),
        case(Anonymous, "GET", "/version", true),
        case(Anonymous, "GET", "/readyz", true),
        case(Anonymous, "GET", "/api", false)
            .message(r#"forbidden: User "system:anonymous" cannot get path "/api""#),
        // view in team.
        case(Viewer, "GET", "/api/v1/namespaces/team/pods", true).can_i(&["list", "pods", "-n", "team"]),
        case(Viewer, "GET", "/api/v1/namespaces/other/pods", false).can_i(&["list", "pods", "-n", "other"]),
        case(Viewer, "GET", "/api/v1/namespaces/team/secrets", false).can_i(&["list", "secrets", "-n", "team"]),
        case(Viewer, "GET", "/api/v1/namespaces/team/pods/p/log", true)
            .can_i(&["get", "pods", "--subresource=log", "-n", "team"]),
        case(Viewer, "GET", "/apis/apps/v1/namespaces/team/deployments", true)
            .can_i(&["list", "deployments.apps", "-n", "team"]),
        case(Viewer, "POST", "/api/v1/namespaces/team/configmaps?dryRun=All", false)
            .body(CONFIGMAP)
            .can_i(&["create", "configmaps", "-n", "team"]),
        case(Viewer, "GET", "/api/v1/nodes", false).can_i(&["list", "nodes"]),
        // edit in team.
        case(Editor, "POST", "/api/v1/namespaces/team/configmaps?dryRun=All", true)
            .body(CONFIGMAP)
            .can_i(&["create", "configmaps", "-n", "team"]),
        case(Editor, "GET", "/api/v1/namespaces/team/secrets", true).can_i(&["list", "secrets", "-n", "team"]),
        case(Editor, "DELETE", "/apis/apps/v1/namespaces/team/deployments/d", true)
            .can_i(&["delete", "deployments.apps", "-n", "team"]),
        case(Editor, "DELETE", "/apis/apps/v1/namespaces/other/deployments/d", false)
            .can_i(&["delete", "deployments.apps", "-n", "other"]),
        case(Editor, "GET", "/apis/apps/v1/namespaces/team/deployments/d/scale", true)
            .can_i(&["get", "deployments.apps", "--subresource=scale", "-n", "team"]),
        case(Editor, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles?dryRun=All", false)
            .body(POD_ROLE)
            .can_i(&["create", "roles.rbac.authorization.k8s.io", "-n", "team"]),
        // admin in team: RBAC within the namespace, but no escalation.
        case(TeamAdmin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings?dryRun=All", true)
            .body(EDIT_BINDING)
            .can_i(&["create", "rolebindings.rbac.authorization.k8s.io", "-n", "team"]),
        case(TeamAdmin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles?dryRun=All", true)
            .body(POD_ROLE),
        case(TeamAdmin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings?dryRun=All", false)
            .body(ADMIN_BINDING)
            .message("rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"teamadmin\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"),
        case(TeamAdmin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles?dryRun=All", false)
            .body(NODE_ROLE)
            .message("roles.rbac.authorization.k8s.io \"x\" is forbidden: user \"teamadmin\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\"]}"),
        case(TeamAdmin, "DELETE", "/api/v1/namespaces/team", false).can_i(&["delete", "namespaces/team"]),
        case(TeamAdmin, "GET", "/api/v1/namespaces/team/resourcequotas", true)
            .can_i(&["list", "resourcequotas", "-n", "team"]),
        case(TeamAdmin, "POST", "/api/v1/namespaces/team/resourcequotas?dryRun=All", false)
            .can_i(&["create", "resourcequotas", "-n", "team"]),
        case(TeamAdmin, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", false)
            .can_i(&["list", "clusterroles.rbac.authorization.k8s.io"]),
        // cluster-admin.
        case(Root, "GET", "/api/v1/nodes", true).can_i(&["list", "nodes"]),
        case(Root, "GET", "/metrics", true).can_i(&["get", "/metrics"]),
        case(Root, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?dryRun=All", true)
            .body(ROOT_BINDING)
            .can_i(&["create", "clusterrolebindings.rbac.authorization.k8s.io"]),
        // A service account with a namespaced Role.
        case(Robot, "GET", "/api/v1/namespaces/team/pods", true).can_i(&["list", "pods", "-n", "team"]),
        case(Robot, "GET", "/api/v1/namespaces/team/configmaps/c", true)
            .can_i(&["get", "configmaps/c", "-n", "team"]),
        case(Robot, "DELETE", "/api/v1/namespaces/team/pods/p", false).can_i(&["delete", "pods", "-n", "team"]),
        case(Robot, "GET", "/api/v1/namespaces/team/secrets", false).can_i(&["list", "secrets", "-n", "team"]),
        case(Robot, "GET", "/api/v1/namespaces/other/pods", false).can_i(&["list", "pods", "-n", "other"]),
    ]
}

/// The RBAC objects the matrix's users hold.
const SETUP: &[&[&str]] = &[
    &["create", "namespace", "team"],
    &["create", "namespace", "other"],
    &[
        "create",
        "rolebinding",
        "v",
        "--clusterrole=view",
        "--user=viewer",
        "-n",
        "team",
    ],
    &[
        "create",
        "rolebinding",
        "e",
        "--clusterrole=edit",
        "--user=editor",
        "-n",
        "team",
    ],
    &[
        "create",
        "rolebinding",
        "a",
        "--clusterrole=admin",
        "--user=teamadmin",
        "-n",
        "team",
    ],
    &[
        "create",
        "clusterrolebinding",
        "root",
        "--clusterrole=cluster-admin",
        "--user=root",
    ],
    &[
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=pods,configmaps",
        "-n",
        "team",
    ],
    &[
        "create",
        "rolebinding",
        "robot",
        "--role=reader",
        "--serviceaccount=team:robot",
        "-n",
        "team",
    ],
];

/// The server URL and CA of the admin kubeconfig.
fn server_and_ca(server: &TestServer) -> (String, String) {
    let admin = Kubeconfig::read_from(&server.kubeconfig).expect("read the admin kubeconfig");
    let cluster = admin.clusters[0].cluster.clone().expect("a cluster");
    let ca = cluster.certificate_authority_data.expect("CA data");
    (cluster.server.expect("a server"), ca)
}

/// Writes a kubeconfig for `who` (a client certificate signed by kapi's CA; none for
/// anonymous) beside the admin one.
fn kubeconfig_for(server: &TestServer, who: Who) -> PathBuf {
    let (url, ca) = server_and_ca(server);
    let encode = |pem: String| base64::engine::general_purpose::STANDARD.encode(pem);
    let user = match who.identity() {
        None => "{}".to_string(),
        Some((name, groups)) => {
            let (cert, key) = client_certificate(server.data_dir.path(), name, groups);
            format!(
                "{{client-certificate-data: {}, client-key-data: {}}}",
                encode(cert),
                encode(key)
            )
        }
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster: {{server: {url}, certificate-authority-data: {ca}}}\nusers:\n- name: u\n  user: {user}\ncontexts:\n- name: c\n  context: {{cluster: kapi, user: u}}\ncurrent-context: c\n"
    );
    let path = server.data_dir.path().join(format!("{who:?}.kubeconfig"));
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

/// A client certificate (PEM certificate and key) for `name` in `groups`.
fn client_certificate(data_dir: &Path, name: &str, groups: &[&str]) -> (String, String) {
    let read = |file: &str| std::fs::read_to_string(data_dir.join("pki").join(file)).unwrap();
    let ca_key = KeyPair::from_pem(&read("ca.key")).expect("the CA key");
    let issuer = Issuer::from_ca_cert_pem(&read("ca.crt"), ca_key).expect("the CA");
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    for group in groups {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *group);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A client as `kubeconfig`'s user.
async fn client(kubeconfig: &Path) -> Client {
    let config = Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// The status and body of one request as `kubeconfig`'s user.
async fn send(kubeconfig: &Path, case: &Case) -> (u16, String) {
    let client = client(kubeconfig).await;
    request(&client, case.method, case.path, case.body.unwrap_or("")).await
}

/// The status and body of one request.
async fn request(client: &Client, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut request = http::Request::builder().method(method).uri(path);
    if !body.is_empty() {
        let content_type = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        request = request.header("Content-Type", content_type);
    }
    let body = body.as_bytes().to_vec();
    let response = client
        .send(request.body(body.into()).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// `kubectl auth can-i` as `kubeconfig`'s user: whether it answered yes.
async fn can_i(kubeconfig: &Path, args: &[&str]) -> bool {
    let output = tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["auth", "can-i"])
        .args(args)
        .output()
        .await
        .expect("run kubectl");
    let answer = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert!(
        answer == "yes" || answer == "no",
        "kubectl auth can-i {args:?}: {answer} {}",
        stderr(&output)
    );
    answer == "yes"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_decides_as_upstream() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    for args in SETUP {
        server.kubectl_ok(args).await;
    }
    let mut failures = Vec::new();
    for case in matrix() {
        let kubeconfig = kubeconfig_for(&server, case.who);
        let (status, body) = send(&kubeconfig, &case).await;
        let denied = status == 403;
        let row = format!("{:?} {} {}", case.who, case.method, case.path);
        if denied == case.allowed {
            failures.push(format!("{row}: {status} {body}"));
        }
        if let Some(message) = case.message {
            let got: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if got["message"] != message {
                failures.push(format!(
                    "{row}: message {:?}, want {message:?}",
                    got["message"]
                ));
            }
        }
        if let Some(args) = case.can_i
            && can_i(&kubeconfig, args).await != case.allowed
        {
            failures.push(format!("{row}: kubectl auth can-i {args:?} disagrees"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every request the server routes, as (method, path): each verb of each served resource
/// and subresource (read from discovery), in a namespace for namespaced ones.
async fn routes(admin: &Client) -> Vec<(&'static str, String)> {
    let mut group_versions = vec!["/api/v1".to_string()];
    let (_, apis) = request(admin, "GET", "/apis", "").await;
    let apis: serde_json::Value = serde_json::from_str(&apis).unwrap();
    for group in apis["groups"].as_array().unwrap() {
        for version in group["versions"].as_array().unwrap() {
            group_versions.push(format!(
                "/apis/{}",
                version["groupVersion"].as_str().unwrap()
            ));
        }
    }
    let mut routes = Vec::new();
    for base in group_versions {
        let (_, list) = request(admin, "GET", &base, "").await;
        let list: serde_json::Value = serde_json::from_str(&list).unwrap();
        for resource in list["resources"].as_array().unwrap() {
            let name = resource["name"].as_str().unwrap();
            let (plural, sub) = name.split_once('/').unwrap_or((name, ""));
            let collection = if resource["namespaced"] == true {
                format!("{base}/namespaces/team/{plural}")
            } else {
                format!("{base}/{plural}")
            };
            let verbs: Vec<&str> = resource["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| v.as_str())
                .collect();
            let item = format!("{collection}/x");
            let target = if sub.is_empty() {
                item.clone()
            } else {
                format!("{item}/{sub}")
            };
            for verb in verbs {
                let route = match verb {
                    "get" => ("GET", target.clone()),
                    "list" => ("GET", collection.clone()),
                    "watch" => ("GET", format!("{collection}?watch=true&timeoutSeconds=1")),
                    "create" if sub.is_empty() => ("POST", collection.clone()),
                    "create" => ("POST", target.clone()),
                    "update" => ("PUT", target.clone()),
                    "patch" => ("PATCH", target.clone()),
                    "delete" => ("DELETE", target.clone()),
                    "deletecollection" => ("DELETE", collection.clone()),
                    _ => continue,
                };
                routes.push(route);
            }
            if ["log", "exec", "attach", "portforward", "proxy"].contains(&sub) {
                routes.push(("GET", target.clone()));
                routes.push(("POST", target));
            }
        }
    }
    routes
}

/// The resources every authenticated user may create (upstream's `system:basic-user`):
/// reviews of one's own access and identity, which store nothing.
const SELF_REVIEWS: [&str; 3] = [
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
];

/// The global revision, read from storage (a quorum list).
async fn revision(admin: &Client) -> String {
    let (_, list) = request(admin, "GET", "/api/v1/namespaces/team/configmaps", "").await;
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Walks every route as anonymous (403, or 401 with anonymous requests off) and as a user
/// without bindings (403 but for the self reviews), and checks that nothing was stored.
async fn walk_every_route(anonymous_auth: bool) {
    let flag = format!("--anonymous-auth={anonymous_auth}");
    // No controller writes into the new namespace while the revision is compared, nor
    // renews the controllers' Lease.
    let quiet =
        "--controllers=-serviceaccount-controller,-root-ca-certificate-publisher-controller";
    let server =
        TestServer::start(Backend::Embedded, &[&flag, quiet, "--leader-elect=false"]).await;
    server.kubectl_ok(&["create", "namespace", "team"]).await;
    let admin = client(&server.kubeconfig).await;
    let routes = routes(&admin).await;
    assert!(routes.len() > 500, "only {} routes", routes.len());
    let before = revision(&admin).await;
    let anonymous = client(&kubeconfig_for(&server, Who::Anonymous)).await;
    let nobody = client(&kubeconfig_for(&server, Who::Nobody)).await;
    let anonymous_status = if anonymous_auth { 403 } else { 401 };
    let mut failures = Vec::new();
    for (method, path) in &routes {
        let body = if *method == "GET" || *method == "DELETE" {
            ""
        } else {
            "{}"
        };
        let (status, text) = request(&anonymous, method, path, body).await;
        if status != anonymous_status {
            failures.push(format!("anonymous {method} {path}: {status} {text}"));
        }
        let self_review = *method == "POST" && SELF_REVIEWS.contains(&path.as_str());
        let (status, text) = request(&nobody, method, path, body).await;
        if (status == 403) == self_review {
            failures.push(format!("nobody {method} {path}: {status} {text}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(revision(&admin).await, before, "something was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_lets_anonymous_or_unbound_users_in() {
    walk_every_route(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_anonymous_auth_every_route_is_unauthorized() {
    walk_every_route(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_and_always_deny_modes() {
    let pods = case(Who::Nobody, "GET", "/api/v1/namespaces/default/pods", true);
    let server = TestServer::start(Backend::Embedded, &["--authorization-mode=AlwaysAllow"]).await;
    let (status, body) = send(&kubeconfig_for(&server, Who::Nobody), &pods).await;
    assert_eq!(status, 200, "{body}");
    let server = TestServer::start(Backend::Embedded, &["--authorization-mode=AlwaysDeny"]).await;
    let (status, body) = send(&kubeconfig_for(&server, Who::Nobody), &pods).await;
    assert_eq!(status, 403, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"pods is forbidden: User "nobody" cannot list resource "pods" in API group "" in the namespace "default": Everything is forbidden."#
    );
    server.kubectl_ok(&["get", "pods"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_mode_asks_a_subject_access_review_service() {
    let (address, ca) = common::serve_webhook(|_, review: serde_json::Value| async move {
        let spec = &review["spec"];
        let status = match spec["user"].as_str() {
            Some("viewer") => serde_json::json!({"allowed": false, "denied": true, "reason": "the webhook says no"}),
            Some("nobody") if spec["resourceAttributes"]["resource"] == "configmaps" => {
                serde_json::json!({"allowed": true})
            }
            _ => serde_json::json!({"allowed": false}),
        };
        serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "status": status})
    })
    .await;
    let file = common::webhook_kubeconfig(&format!("https://{address}/authorize"), &ca);
    let flag = format!(
        "--authorization-webhook-config-file={}",
        file.path().display()
    );
    let server = TestServer::start(
        Backend::Embedded,
        &["--authorization-mode=Webhook,RBAC", &flag],
    )
    .await;
    server.kubectl_ok(&["create", "namespace", "team"]).await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "v",
            "--clusterrole=view",
            "--user=viewer",
            "-n",
            "team",
        ])
        .await;
    let configmaps = case(
        Who::Nobody,
        "GET",
        "/api/v1/namespaces/team/configmaps",
        true,
    );
    let (status, body) = send(&kubeconfig_for(&server, Who::Nobody), &configmaps).await;
    assert_eq!(status, 200, "the webhook allows: {body}");
    let pods = case(Who::Nobody, "GET", "/api/v1/namespaces/team/pods", false);
    let (status, _) = send(&kubeconfig_for(&server, Who::Nobody), &pods).await;
    assert_eq!(status, 403, "no opinion, then RBAC refuses");
    let (status, body) = send(&kubeconfig_for(&server, Who::Viewer), &pods).await;
    assert_eq!(
        status, 403,
        "the webhook's denial comes before RBAC's allow"
    );
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"pods is forbidden: User "viewer" cannot list resource "pods" in API group "" in the namespace "team": the webhook says no"#
    );
}

/// `--authorization-config`: a webhook asked only for what its match conditions select,
/// then RBAC; a webhook that cannot be reached decides by its failure policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorization_config_orders_webhooks_and_rbac() {
    let asked: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let seen = asked.clone();
    let (address, ca) = common::serve_webhook(move |_, review: serde_json::Value| {
        // The in-process controllers' requests are authorized too; only nobody's count.
        let resource = review["spec"]["resourceAttributes"]["resource"].clone();
        if review["spec"]["user"] == "nobody" {
            seen.lock().unwrap().push(resource.as_str().unwrap_or_default().to_string());
        }
        async move {
            serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "status": {"allowed": true}})
        }
    })
    .await;
    let reachable = common::webhook_kubeconfig(&format!("https://{address}/authorize"), &ca);
    let unreachable = common::webhook_kubeconfig("https://127.0.0.1:1/authorize", &ca);
    let config = |failure_policy: &str| {
        let text = serde_json::json!({"apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AuthorizationConfiguration", "authorizers": [
                {"type": "Webhook", "name": "configmaps", "webhook": {
                    "timeout": "3s", "subjectAccessReviewVersion": "v1",
                    "matchConditionSubjectAccessReviewVersion": "v1",
                    "failurePolicy": "NoOpinion", "authorizedTTL": "1s", "unauthorizedTTL": "1s",
                    "connectionInfo": {"type": "KubeConfigFile",
                        "kubeConfigFile": reachable.path().to_str().unwrap()},
                    "matchConditions": [{"expression":
                        "has(request.resourceAttributes) && request.resourceAttributes.resource == 'configmaps'"}]}},
                {"type": "Webhook", "name": "down", "webhook": {
                    "timeout": "3s", "subjectAccessReviewVersion": "v1",
                    "matchConditionSubjectAccessReviewVersion": "v1",
                    "failurePolicy": failure_policy, "authorizedTTL": "1s", "unauthorizedTTL": "1s",
                    "connectionInfo": {"type": "KubeConfigFile",
                        "kubeConfigFile": unreachable.path().to_str().unwrap()}}},
                {"type": "RBAC", "name": "rbac"}]});
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text.to_string()).unwrap();
        file
    };
    let no_opinion = config("NoOpinion");
    let flag = format!("--authorization-config={}", no_opinion.path().display());
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    server.kubectl_ok(&["create", "namespace", "team"]).await;
    let nobody = kubeconfig_for(&server, Who::Nobody);
    let configmaps = case(
        Who::Nobody,
        "GET",
        "/api/v1/namespaces/team/configmaps",
        true,
    );
    let (status, body) = send(&nobody, &configmaps).await;
    assert_eq!(status, 200, "the first webhook allows: {body}");
    let pods = case(Who::Nobody, "GET", "/api/v1/namespaces/team/pods", false);
    let (status, _) = send(&nobody, &pods).await;
    assert_eq!(status, 403, "no webhook opinion, then RBAC refuses");
    assert_eq!(
        *asked.lock().unwrap(),
        ["configmaps"],
        "only what matches is asked"
    );
    server.stop().await;

    let deny = config("Deny");
    let flag = format!("--authorization-config={}", deny.path().display());
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    let viewer = kubeconfig_for(&server, Who::Viewer);
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "v",
            "--clusterrole=view",
            "--user=viewer",
        ])
        .await;
    let pods = case(Who::Viewer, "GET", "/api/v1/namespaces/default/pods", false);
    let (status, _) = send(&viewer, &pods).await;
    assert_eq!(
        status, 403,
        "the unreachable webhook denies before RBAC allows"
    );
}

/// The Node authorizer: a kubelet reads the secrets and config maps of the pods bound to its
/// node (and nothing else of their kind), creates tokens only for their service accounts,
/// and keeps its own Lease; the `system:node` rules decide the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelets_reach_only_what_their_pods_use() {
    let flags = [
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
    ];
    let server = TestServer::start(Backend::Embedded, &flags).await;
    for object in [
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"used"},"data":{}}"#,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"unused"},"data":{}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}"#,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n1",
            "containers":[{"name":"c","image":"busybox","envFrom":[{"configMapRef":{"name":"settings"}}]}],
            "volumes":[{"name":"s","secret":{"secretName":"used"}}]}}"#,
    ] {
        common::ok_stdin(&server, &["create", "-f", "-"], object).await;
    }
    let kubelet = kubeconfig_for(&server, Who::Kubelet);
    let expect = |path: &'static str, method: &'static str, allowed: bool| {
        case(Who::Kubelet, method, path, allowed)
    };
    let cases = [
        expect("/api/v1/namespaces/default/secrets/used", "GET", true),
        expect("/api/v1/namespaces/default/secrets/unused", "GET", false),
        expect("/api/v1/namespaces/default/secrets", "GET", false),
        expect(
            "/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dused",
            "GET",
            true,
        ),
        expect(
            "/api/v1/namespaces/default/configmaps/settings",
            "GET",
            true,
        ),
        expect("/api/v1/namespaces/default/pods", "GET", true),
        expect("/api/v1/nodes", "GET", true),
        expect(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
            "GET",
            true,
        ),
        expect(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2",
            "GET",
            false,
        ),
    ];
    for case in &cases {
        let (status, body) = send(&kubelet, case).await;
        let allowed = status != 403;
        assert_eq!(
            allowed, case.allowed,
            "{} {}: {status} {body}",
            case.method, case.path
        );
    }
    let (_, body) = send(&kubelet, &cases[1]).await;
    assert!(
        body.contains("no relationship found between node 'n1' and this object"),
        "{body}"
    );

    // NodeRestriction: its own Node only, without restricted labels; mirror pods only.
    let client = client(&kubelet).await;
    let node = |name: &str, labels: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}","labels":{labels}}}}}"#
        )
    };
    let (status, body) = request(&client, "POST", "/api/v1/nodes", &node("n2", "{}")).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(r#"node \"n1\" is not allowed to modify node \"n2\""#),
        "{body}"
    );
    let labelled = node("n1", r#"{"node-restriction.kubernetes.io/trusted":"yes"}"#);
    let (status, body) = request(&client, "POST", "/api/v1/nodes", &labelled).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(
            "is not allowed to set the following labels: node-restriction.kubernetes.io/trusted"
        ),
        "{body}"
    );
    let (status, body) = request(
        &client,
        "POST",
        "/api/v1/nodes",
        &node("n1", r#"{"kubernetes.io/hostname":"n1"}"#),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"static"},
        "spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}"#;
    let (status, body) = request(&client, "POST", "/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("can only create mirror pods"), "{body}");

    // What a kubelet may do cannot be listed: the Node authorizer says so, as upstream,
    // and the list shows what RBAC grants the system:nodes group.
    let output = tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&kubelet)
        .args(["auth", "can-i", "--list"])
        .output()
        .await
        .expect("run kubectl");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("node authorizer does not support user rule resolution"),
        "{}",
        stderr(&output)
    );
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(listed.contains("selfsubjectaccessreviews"), "{listed}");
}

/// A CSR object for the kube-apiserver-client signer, with subject organization `org`.
fn csr(name: &str, org: Option<&str>) -> String {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]},
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_requests_need_the_signer_verbs() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let err = common::fails(
        &server,
        &["create", "-f", "-"],
        Some(&csr("mallory", Some("system:masters"))),
    )
    .await;
    assert!(
        err.contains("use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"),
        "{err}"
    );
    common::ok_stdin(&server, &["create", "-f", "-"], &csr("alice", None)).await;
    server
        .kubectl_ok(&[
            "create",
            "clusterrole",
            "approver",
            "--verb=get,list",
            "--resource=certificatesigningrequests",
        ])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "clusterrole",
            "approver-status",
            "--verb=update",
            "--resource=certificatesigningrequests/approval",
        ])
        .await;
    for role in ["approver", "approver-status"] {
        server
            .kubectl_ok(&[
                "create",
                "clusterrolebinding",
                role,
                &format!("--clusterrole={role}"),
                "--user=viewer",
            ])
            .await;
    }
    let approver = kubeconfig_for(&server, Who::Viewer);
    let approve = || async {
        tokio::process::Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&approver)
            .args(["certificate", "approve", "alice"])
            .output()
            .await
            .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let output = approve().await;
        let text = stderr(&output);
        if text.contains(r#"user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client""#) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let signer = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"signer"},
        "rules":[{"apiGroups":["certificates.k8s.io"],"resources":["signers"],"verbs":["approve"],
        "resourceNames":["kubernetes.io/kube-apiserver-client"]}]}"#;
    common::ok_stdin(&server, &["create", "-f", "-"], signer).await;
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "signer",
            "--clusterrole=signer",
            "--user=viewer",
        ])
        .await;
    loop {
        let output = approve().await;
        if output.status.success() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", stderr(&output));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
