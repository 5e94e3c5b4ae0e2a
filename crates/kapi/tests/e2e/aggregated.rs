//! An extension API server behind kapi's aggregator, through the real kubectl: the sample
//! server (kapi-sample-server, wardle.example.com) on real TLS on loopback, registered by a
//! Service, an EndpointSlice and an APIService with its caBundle; it authenticates kapi's
//! front-proxy certificate by the CA kapi publishes and authorizes by SubjectAccessReviews
//! to kapi.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use kapi_sample_server::delegated::{self, Delegation};
use kapi_server::authz::{Attributes, AuthorizationError, Decision, RulesInfo};
use kapi_server::{Authorizer, ServerConfig, TlsConfig, UserInfo};
use kapi_storage::{EmbeddedConfig, EmbeddedStore, Store};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::authn::token_kubeconfig;
use crate::common::{self, Backend, TestServer, cells, fails, ok_stdin};

const API_SERVICE: &str = "v1alpha1.wardle.example.com";

/// Remembers every user the sample server authorized a request for, then asks the
/// delegated authorizer.
struct Seen {
    users: Mutex<Vec<UserInfo>>,
    inner: Arc<dyn Authorizer>,
}

#[async_trait]
impl Authorizer for Seen {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
        self.users.lock().push(attributes.user.clone());
        self.inner.authorize(attributes).await
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo {
        self.inner.rules_for(user, namespace).await
    }
}

/// A CA and a serving certificate for the Service `api` in `wardle` (as the aggregator
/// verifies it), as files in `dir`; the CA's PEM.
fn serving_pki(dir: &Path) -> String {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "wardle-ca");
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["api.wardle.svc".into()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("serving.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("serving.key"), key.serialize_pem()).unwrap();
    ca_pem
}

/// Starts the sample server on `port` with `store` and its certificate in `dir`, delegating
/// to kapi through `kubeconfig`; stops when the sender is dropped or sent to.
async fn start_wardle(
    dir: &Path,
    store: &Arc<dyn Store>,
    port: u16,
    kubeconfig: &Path,
    seen: &Arc<Seen>,
) -> oneshot::Sender<()> {
    let delegation = Delegation::fetch(kubeconfig)
        .await
        .expect("read the ConfigMap");
    let tls = TlsConfig::from_pem_files(&dir.join("serving.crt"), &dir.join("serving.key"), None)
        .unwrap();
    let mut config = ServerConfig::new(tls);
    config.secure_port = port;
    delegation.configure(&mut config);
    let mut server = kapi_sample_server::server(config, store.clone(), "/registry").unwrap();
    server.add_authenticator(delegated::authenticator(kubeconfig).unwrap());
    server.set_authorizer(seen.clone());
    let listening = server.bind().await.expect("the sample server listens");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(listening.serve(async move {
        let _ = stopped.await;
    }));
    stop
}

/// The registration: namespace, Service, EndpointSlice at the sample server's port, and the
/// APIService trusting `ca`.
fn registration(port: u16, ca: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    format!(
        r#"
apiVersion: v1
kind: Namespace
metadata: {{name: wardle}}
---
apiVersion: v1
kind: Service
metadata: {{name: api, namespace: wardle}}
spec:
  ports: [{{port: 443, targetPort: {port}}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  namespace: wardle
  labels: {{kubernetes.io/service-name: api}}
addressType: IPv4
ports: [{{name: "", port: {port}}}]
endpoints: [{{addresses: ["127.0.0.1"], conditions: {{ready: true}}}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {API_SERVICE}}}
spec:
  group: wardle.example.com
  version: v1alpha1
  service: {{namespace: wardle, name: api, port: 443}}
  caBundle: {ca}
  groupPriorityMinimum: 1000
  versionPriority: 15
"#
    )
}

const FLUNDER: &str = r#"
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata: {name: my-flunder, namespace: default, labels: {sample: "yes"}}
spec: {}
"#;

/// Waits until the APIService's Available condition is `status`; its reason.
async fn wait_condition(server: &TestServer, status: &str) -> String {
    let condition = format!("--for=jsonpath={{.status.conditions[0].status}}={status}");
    let service = format!("apiservice/{API_SERVICE}");
    server
        .kubectl_ok(&["wait", &condition, &service, "--timeout=60s"])
        .await;
    server
        .kubectl_ok(&[
            "get",
            &service,
            "-o",
            "jsonpath={.status.conditions[0].reason}",
        ])
        .await
}

/// Waits until `kubectl api-resources` lists flunders (the backend's discovery fetched).
async fn wait_discovered(server: &TestServer) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = server
            .kubectl_ok(&["api-resources", "--api-group=wardle.example.com"])
            .await;
        if listed.contains("flunders") {
            return listed;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "flunders never discovered: {listed}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A watch through the proxy delivers an event while it is open (kube-rs as the client):
/// the backend's stream is passed on as it comes, not when it ends.
async fn watch_streams(server: &TestServer) {
    use futures::StreamExt;
    use kube::api::{Api, DynamicObject, PostParams, WatchEvent, WatchParams};
    use kube::core::{ApiResource, GroupVersionKind};
    let kubeconfig = kube::config::Kubeconfig::read_from(&server.kubeconfig).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let gvk = GroupVersionKind::gvk("wardle.example.com", "v1alpha1", "Flunder");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "flunders");
    let flunders: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let params = WatchParams::default().timeout(60);
    let mut events = flunders.watch(&params, "0").await.unwrap().boxed();
    let created: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "streamed"}, "spec": {}}))
    .unwrap();
    flunders
        .create(&PostParams::default(), &created)
        .await
        .unwrap();
    let deadline = std::time::Duration::from_secs(20);
    let seen = tokio::time::timeout(deadline, async {
        while let Some(event) = events.next().await {
            if let Ok(WatchEvent::Added(object)) = event
                && object.metadata.name.as_deref() == Some("streamed")
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        seen,
        Ok(true),
        "the ADDED event did not come through the open watch"
    );
    flunders
        .delete("streamed", &Default::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn an_extension_api_server_is_served_through_the_aggregator() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "alice-token,alice,1001,\"dev,qa\"\n").unwrap();
    let flag = format!("--token-auth-file={}", tokens.path().display());
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = serving_pki(dir.path());
    let port = kapi_testing::free_port();
    let seen = Arc::new(Seen {
        users: Mutex::new(Vec::new()),
        inner: delegated::authorizer(&server.kubeconfig).unwrap(),
    });
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path().join("wardle.redb"))).unwrap());
    let stop = start_wardle(dir.path(), &store, port, &server.kubeconfig, &seen).await;
    ok_stdin(&server, &["apply", "-f", "-"], &registration(port, &ca)).await;

    // Registered and checked: Available, as upstream's remote check passes it.
    assert_eq!(wait_condition(&server, "True").await, "Passed");
    let listed = server
        .kubectl_ok(&["get", "apiservice", API_SERVICE, "--no-headers"])
        .await;
    assert_eq!(&cells(&listed)[..3], [API_SERVICE, "wardle/api", "True"]);

    // Discovery and OpenAPI include the backend's kinds.
    let resources = wait_discovered(&server).await;
    assert!(
        resources.contains("wardle.example.com/v1alpha1"),
        "{resources}"
    );
    let explained = server.kubectl_ok(&["explain", "flunders"]).await;
    assert!(explained.contains("KIND:       Flunder"), "{explained}");
    let group = server
        .kubectl_ok(&["get", "--raw", "/apis/wardle.example.com"])
        .await;
    assert!(
        group.contains(r#""preferredVersion":{"groupVersion":"wardle.example.com/v1alpha1""#),
        "{group}"
    );

    // The resource through the proxy: create, get, list, patch, watch, delete.
    ok_stdin(&server, &["apply", "-f", "-"], FLUNDER).await;
    let got = common::get_json(&server, &["flunder", "my-flunder"]).await;
    assert_eq!(got["metadata"]["labels"]["sample"], "yes");
    let listed = server
        .kubectl_ok(&["get", "flunders", "--no-headers"])
        .await;
    assert!(listed.starts_with("my-flunder"), "{listed}");
    server
        .kubectl_ok(&[
            "patch",
            "flunder",
            "my-flunder",
            "--type=merge",
            "-p",
            r#"{"spec":{"reference":"other","referenceType":"Flunder"}}"#,
        ])
        .await;
    let got = common::get_json(&server, &["flunder", "my-flunder"]).await;
    assert_eq!(got["spec"]["reference"], "other");
    let watched = server
        .kubectl_ok(&["get", "--raw",
            "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=1&timeoutSeconds=1"])
        .await;
    assert!(
        watched.contains(r#""type":"ADDED""#) && watched.contains("my-flunder"),
        "{watched}"
    );
    watch_streams(&server).await;
    let invalid = fails(
        &server,
        &[
            "patch",
            "flunder",
            "my-flunder",
            "--type=merge",
            "-p",
            r#"{"spec":{"referenceType":"Pod"}}"#,
        ],
        None,
    )
    .await;
    assert!(invalid.contains(r#"Unsupported value: "Pod""#), "{invalid}");

    // RBAC: kapi refuses a user without a role; with one, the backend asks kapi by a
    // SubjectAccessReview for the user kapi named in X-Remote-*, and the token stays behind.
    let alice = token_kubeconfig(&server, "alice", "alice-token");
    let refused = crate::common::kubectl(&alice, &["get", "flunders"], None).await;
    let refused = common::stderr(&refused);
    assert!(refused.contains(r#"User "alice" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default""#), "{refused}");
    let role = "kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: flunder-reader, namespace: default}\nrules: [{apiGroups: [wardle.example.com], resources: [flunders], verbs: [get, list]}]\n---\nkind: RoleBinding\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: alice-reads, namespace: default}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: flunder-reader}\nsubjects: [{kind: User, name: alice}]\n";
    ok_stdin(&server, &["apply", "-f", "-"], role).await;
    seen.users.lock().clear();
    let output = crate::common::kubectl(&alice, &["get", "flunders", "--no-headers"], None).await;
    assert!(
        common::stdout(&output).starts_with("my-flunder"),
        "{}",
        common::stderr(&output)
    );
    let users = seen.users.lock().clone();
    let alice_seen = users
        .iter()
        .find(|u| u.name == "alice")
        .expect("the backend saw alice");
    assert_eq!(alice_seen.uid, "1001");
    assert_eq!(alice_seen.groups, ["dev", "qa", "system:authenticated"]);

    // A namespace holding a flunder, deleted while the backend is away below.
    server.kubectl_ok(&["create", "namespace", "stuck"]).await;
    let stuck_flunder = FLUNDER.replace("namespace: default", "namespace: stuck");
    assert_ne!(stuck_flunder, FLUNDER);
    ok_stdin(&server, &["apply", "-f", "-"], &stuck_flunder).await;

    // The backend goes away: 503, then Available=False by the discovery check.
    stop.send(()).unwrap();
    let down = fails(&server, &["get", "flunders"], None).await;
    assert!(
        down.contains("ServiceUnavailable") || down.contains("unable to handle the request"),
        "{down}"
    );
    assert_eq!(
        wait_condition(&server, "False").await,
        "FailedDiscoveryCheck"
    );
    let message = server
        .kubectl_ok(&[
            "get",
            "apiservice",
            API_SERVICE,
            "-o",
            "jsonpath={.status.conditions[0].message}",
        ])
        .await;
    assert!(
        message.starts_with("failing or missing response from https://127.0.0.1:"),
        "{message}"
    );

    // The namespace controller cannot see the group while it is stale, and says so.
    server
        .kubectl_ok(&["delete", "namespace", "stuck", "--wait=false"])
        .await;
    let failure =
        common::wait_namespace_condition(&server, "stuck", "NamespaceDeletionDiscoveryFailure")
            .await;
    assert_eq!(failure["reason"], "DiscoveryFailed");
    assert_eq!(
        failure["message"],
        "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: wardle.example.com/v1alpha1: stale GroupVersion discovery: wardle.example.com/v1alpha1"
    );

    // And comes back; the namespace's flunder is deleted through it, and the namespace goes.
    let _stop = start_wardle(dir.path(), &store, port, &server.kubeconfig, &seen).await;
    assert_eq!(wait_condition(&server, "True").await, "Passed");
    server
        .kubectl_ok(&["wait", "--for=delete", "namespace/stuck", "--timeout=90s"])
        .await;
    let left = server
        .kubectl_ok(&["get", "flunders", "-n", "stuck", "-o", "name"])
        .await;
    assert_eq!(left.trim(), "", "the backend still has the flunder");
    let listed = server
        .kubectl_ok(&["get", "flunders", "--no-headers"])
        .await;
    assert!(listed.starts_with("my-flunder"), "{listed}");
    server
        .kubectl_ok(&["delete", "flunder", "my-flunder"])
        .await;
    server.stop().await;
}

/// A backend on loopback serving `upgrade.example.com/v1`: its discovery (for the
/// availability check), and an upgrade endpoint that switches protocols and echoes; the
/// headers of every upgrade request it got. Its certificate is the Service's from `dir`.
async fn echo_backend(dir: &Path) -> (u16, Arc<Mutex<Vec<http::HeaderMap>>>) {
    use http_body_util::Full;
    use hyper_util::rt::TokioIo;
    use rustls::pki_types::pem::PemObject;
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(dir.join("serving.crt"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(dir.join("serving.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, recorded) = (acceptor.clone(), recorded.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let answer = hyper::service::service_fn(
                    move |mut request: http::Request<hyper::body::Incoming>| {
                        let recorded = recorded.clone();
                        async move {
                            let mut response = http::Response::new(Full::new(bytes::Bytes::new()));
                            if request.headers().contains_key(http::header::UPGRADE) {
                                recorded.lock().push(request.headers().clone());
                                let upgrade = hyper::upgrade::on(&mut request);
                                tokio::spawn(async move {
                                    let Ok(upgraded) = upgrade.await else { return };
                                    let (mut reader, mut writer) =
                                        tokio::io::split(TokioIo::new(upgraded));
                                    let _ = tokio::io::copy(&mut reader, &mut writer).await;
                                });
                                *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
                                let headers = response.headers_mut();
                                headers
                                    .insert(http::header::CONNECTION, "Upgrade".parse().unwrap());
                                headers.insert(http::header::UPGRADE, "echo".parse().unwrap());
                            } else {
                                let list = r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"upgrade.example.com/v1","resources":[]}"#;
                                *response.body_mut() = Full::new(bytes::Bytes::from(list));
                            }
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection_with_upgrades(TokioIo::new(tls), answer)
                .await;
            });
        }
    });
    (port, seen)
}

#[tokio::test]
async fn upgrade_requests_pass_through_the_proxy() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let kapi = crate::common::process::Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let dir = tempfile::tempdir().unwrap();
    let ca = serving_pki(dir.path());
    let (port, seen) = echo_backend(dir.path()).await;
    let registration = registration(port, &ca)
        .replace("wardle.example.com", "upgrade.example.com")
        .replace("v1alpha1", "v1");
    for document in registration.split("---") {
        let object: serde_json::Value = serde_yaml_ng::from_str(document).unwrap();
        let kind = object["kind"].as_str().unwrap();
        let path = match kind {
            "Namespace" => "/api/v1/namespaces".to_string(),
            "Service" => "/api/v1/namespaces/wardle/services".to_string(),
            "EndpointSlice" => {
                "/apis/discovery.k8s.io/v1/namespaces/wardle/endpointslices".to_string()
            }
            _ => "/apis/apiregistration.k8s.io/v1/apiservices".to_string(),
        };
        admin.create(&path, object).await;
    }
    let service = "/apis/apiregistration.k8s.io/v1/apiservices/v1.upgrade.example.com";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while admin.get(service).await.json()["status"]["conditions"][0]["status"] != "True" {
        assert!(
            std::time::Instant::now() < deadline,
            "the APIService never became available"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let tls = admin.connect().await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection.with_upgrades());
    let request =
        http::Request::get("/apis/upgrade.example.com/v1/namespaces/default/things/x/exec")
            .header(http::header::HOST, "localhost")
            .header(http::header::CONNECTION, "Upgrade")
            .header(http::header::UPGRADE, "echo")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::SWITCHING_PROTOCOLS);
    let upgraded = hyper::upgrade::on(response).await.unwrap();
    let mut stream = hyper_util::rt::TokioIo::new(upgraded);
    stream
        .write_all(b"ping through the aggregator")
        .await
        .unwrap();
    let mut echoed = [0u8; 27];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping through the aggregator");

    let headers = seen.lock()[0].clone();
    assert_eq!(headers["x-remote-user"], "kapi-admin");
    assert_eq!(headers["x-remote-group"], "system:masters");
    assert!(!headers.contains_key(http::header::AUTHORIZATION));
    assert_eq!(headers[http::header::UPGRADE], "echo");
}

/// An APIService whose Service selects pods reaches them through the EndpointSlices the
/// endpointslice controller keeps: the pod's status, set as a kubelet would, gives the
/// address.
#[tokio::test]
async fn an_apiservice_reaches_the_pods_its_service_selects() {
    let kapi = crate::common::process::Kapi::start(Backend::Embedded, &[]).await;
    let admin = kapi.admin();
    let dir = tempfile::tempdir().unwrap();
    let ca = serving_pki(dir.path());
    let (port, _) = echo_backend(dir.path()).await;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let objects = [
        (
            "/api/v1/nodes",
            serde_json::json!({"metadata": {"name": "n1"}}),
        ),
        (
            "/api/v1/namespaces",
            serde_json::json!({"metadata": {"name": "wardle"}}),
        ),
        (
            "/api/v1/namespaces/wardle/services",
            serde_json::json!({"metadata": {"name": "api"}, "spec": {"selector": {"app": "echo"},
                "ports": [{"port": 443, "targetPort": "https"}]}}),
        ),
        (
            "/api/v1/namespaces/wardle/pods",
            serde_json::json!({"metadata": {"name": "echo-0", "labels": {"app": "echo"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "echo",
                    "ports": [{"name": "https", "containerPort": port}]}]}}),
        ),
        (
            "/apis/apiregistration.k8s.io/v1/apiservices",
            serde_json::json!({"metadata": {"name": "v1.upgrade.example.com"},
                "spec": {"group": "upgrade.example.com", "version": "v1",
                    "service": {"namespace": "wardle", "name": "api", "port": 443},
                    "caBundle": ca, "groupPriorityMinimum": 1000, "versionPriority": 15}}),
        ),
    ];
    for (path, object) in objects {
        admin.create(path, object).await;
    }
    let status = serde_json::json!({"status": {"phase": "Running", "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}], "conditions": [{"type": "Ready", "status": "True"}]}});
    let reply = admin
        .write(
            http::Method::PATCH,
            "/api/v1/namespaces/wardle/pods/echo-0/status",
            &status,
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let service = "/apis/apiregistration.k8s.io/v1/apiservices/v1.upgrade.example.com";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while admin.get(service).await.json()["status"]["conditions"][0]["status"] != "True" {
        assert!(
            std::time::Instant::now() < deadline,
            "the APIService never became available: {}; slices: {}",
            admin.get(service).await.body,
            admin
                .get("/apis/discovery.k8s.io/v1/namespaces/wardle/endpointslices")
                .await
                .body
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let listed = admin.get("/apis/upgrade.example.com/v1").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("APIResourceList"), "{}", listed.body);
    kapi.stop().await;
}
