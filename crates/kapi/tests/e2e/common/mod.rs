//! The in-process test harness of kapi's integration tests: a real kapi server (the same
//! `serve::start` the binary runs) on a free loopback port with a temporary data directory, on
//! the embedded store or on a real etcd started for the test, driven by the real kubectl.

pub mod process;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use kapi::flags::{Cli, Command};
use kapi::serve::{self, RunningServer};
use kapi_testing::etcd::EtcdCluster;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The kubectl the tests drive.
pub const KUBECTL: &str = "/usr/bin/kubectl";

/// Which store a test server runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Etcd,
}

/// A real single-member etcd for `backend`'s tests (none for the embedded store), killed
/// when dropped.
pub async fn etcd_for(backend: Backend) -> Option<EtcdCluster> {
    match backend {
        Backend::Embedded => None,
        Backend::Etcd => Some(
            tokio::task::spawn_blocking(|| EtcdCluster::start(1))
                .await
                .expect("etcd"),
        ),
    }
}

/// A kapi server for one test; stopped (and its etcd killed) when dropped.
pub struct TestServer {
    pub server: Option<RunningServer>,
    pub data_dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    _etcd: Option<EtcdCluster>,
}

impl TestServer {
    /// Starts a server on `backend` with extra `flags`, and waits until it is ready.
    pub async fn start(backend: Backend, flags: &[&str]) -> TestServer {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let etcd = etcd_for(backend).await;
        let port = kapi_testing::free_port().to_string();
        let dir = data_dir
            .path()
            .to_str()
            .expect("utf-8 temp dir")
            .to_string();
        let mut args = vec!["kapi", "serve", "--secure-port", &port, "--data-dir", &dir];
        let servers = etcd.as_ref().map(|etcd| etcd.endpoints().join(","));
        if let Some(servers) = &servers {
            args.extend(["--etcd-servers", servers]);
        }
        args.extend(flags);
        let Command::Serve(options) = Cli::try_parse_from(&args).expect("flags parse").command
        else {
            panic!("kapi serve flags")
        };
        let server = serve::start(options).await.expect("kapi starts");
        let kubeconfig = server.kubeconfig.clone();
        let test = TestServer {
            server: Some(server),
            data_dir,
            kubeconfig,
            _etcd: etcd,
        };
        test.wait_ready().await;
        test
    }

    /// Waits until `/readyz` answers ok (the system namespaces exist then).
    pub async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let output = self.kubectl(&["get", "--raw", "/readyz"]).await;
            if output.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "kapi did not become ready: {}",
                stderr(&output)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Runs kubectl with the admin kubeconfig.
    pub async fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_stdin(args, None).await
    }

    /// Runs kubectl with the admin kubeconfig, feeding `stdin`.
    pub async fn kubectl_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        kubectl(&self.kubeconfig, args, stdin).await
    }

    /// Runs kubectl and fails the test unless it succeeds; returns its stdout.
    pub async fn kubectl_ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args).await;
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}",
            stderr(&output)
        );
        stdout(&output)
    }

    /// The server's address, `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        let address = self.server.as_ref().expect("running").address;
        format!("https://{address}")
    }

    /// Stops the server gracefully.
    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await.expect("clean shutdown");
        }
    }
}

/// A server auditing by the audit `policy` (YAML) to a log file, with extra `flags`: the
/// server, the directory holding the policy and log (removed when dropped), the log's path.
pub async fn audited(policy: &str, flags: &[&str]) -> (TestServer, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy_file = dir.path().join("policy.yaml");
    std::fs::write(&policy_file, policy).expect("write the policy");
    let log = dir.path().join("logs/audit.log");
    let audit_flags = [
        format!("--audit-policy-file={}", policy_file.display()),
        format!("--audit-log-path={}", log.display()),
    ];
    let mut all: Vec<&str> = audit_flags.iter().map(String::as_str).collect();
    all.extend(flags);
    let server = TestServer::start(Backend::Embedded, &all).await;
    (server, dir, log)
}

/// The events of the audit log at `path` so far.
pub fn audit_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event per line"))
        .collect()
}

/// Runs kubectl with `kubeconfig`, feeding `stdin` if given. kubectl caches discovery and
/// OpenAPI per host:port and test servers reuse ports, so each server's kubectl gets its own
/// cache directory, beside the kubeconfig.
pub async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use tokio::io::AsyncWriteExt;
    let cache = kubeconfig.with_file_name("kubectl-cache");
    let mut command = tokio::process::Command::new(KUBECTL);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("run kubectl");
    if let Some(mut input) = child.stdin.take()
        && let Some(text) = stdin
    {
        input
            .write_all(text.as_bytes())
            .await
            .expect("write kubectl stdin");
    }
    child.wait_with_output().await.expect("kubectl output")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Generates one `#[tokio::test]` per backend for each listed `async fn(Backend)`.
/// A kubeconfig naming a webhook served by [`serve_webhook`] at `url` (trusting `ca`), as
/// `--authorization-webhook-config-file` and `--authentication-token-webhook-config-file`
/// take one.
pub fn webhook_kubeconfig(url: &str, ca: &str) -> tempfile::NamedTempFile {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    let kubeconfig = serde_json::json!({"apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "hook", "cluster": {"server": url, "certificate-authority-data": ca}}],
        "users": [{"name": "kapi", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "hook", "user": "kapi"}}],
        "current-context": "c"});
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), kubeconfig.to_string()).expect("write the kubeconfig");
    file
}

/// Flags for tests of list and watch semantics over ConfigMaps in their own namespaces: no
/// `kube-root-ca.crt` in every namespace (created at a moment the test cannot predict).
pub const NO_ROOT_CA: &[&str] = &["--controllers=*,-root-ca-certificate-publisher-controller"];

macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case($crate::common::Backend::Embedded).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case($crate::common::Backend::Etcd).await;
                }
            )*
        }
    };
}

/// Runs kubectl feeding `input`; fails the test unless it succeeds; returns its stdout.
pub async fn ok_stdin(server: &TestServer, args: &[&str], input: &str) -> String {
    let output = server.kubectl_stdin(args, Some(input)).await;
    assert!(
        output.status.success(),
        "kubectl {args:?} failed: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// Runs kubectl, which must fail; returns its stderr.
pub async fn fails(server: &TestServer, args: &[&str], input: Option<&str>) -> String {
    let output = server.kubectl_stdin(args, input).await;
    assert!(
        !output.status.success(),
        "kubectl {args:?} should fail; stdout: {}",
        stdout(&output)
    );
    stderr(&output)
}

/// `kubectl get <args> -o json`, parsed.
pub async fn get_json(server: &TestServer, args: &[&str]) -> serde_json::Value {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    let out = server.kubectl_ok(&args).await;
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("kubectl {args:?}: {err}: {out}"))
}

/// Waits (up to 60 s) until the namespace `name` has its condition `type_` `True`.
pub async fn wait_namespace_condition(
    server: &TestServer,
    name: &str,
    type_: &str,
) -> serde_json::Value {
    for _ in 0..600 {
        let namespace = get_json(server, &["namespace", name]).await;
        let found = namespace["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == type_ && c["status"] == "True");
        if let Some(condition) = found {
            return condition.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("namespace {name} never had {type_}=True");
}

/// The cells of a kubectl table line (separated by at least two spaces).
pub fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .map(str::to_string)
        .collect()
}

/// The webhook's TLS: a CA (its PEM goes in the CRD's caBundle) and a serving certificate for
/// 127.0.0.1.
fn webhook_tls() -> (String, rustls::ServerConfig) {
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("key");
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let cert = leaf.signed_by(&key, &issuer).expect("leaf");
    let chain = vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).expect("der")];
    let private = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .expect("server config");
    (ca_pem, config)
}

/// Applies `manifest` (CRDs) and waits until the CRDs `names` are Established.
pub async fn install_crds(server: &TestServer, manifest: &str, names: &[&str]) {
    ok_stdin(server, &["apply", "-f", "-"], manifest).await;
    for name in names {
        let crd = format!("crd/{name}");
        let wait = [
            "wait",
            "--for",
            "condition=established",
            &crd,
            "--timeout=20s",
        ];
        server.kubectl_ok(&wait).await;
    }
}

/// Installs `gadgets.example.com`: a namespaced CRD served in v1 (stored) and v2, with
/// `None` conversion and schemas that keep every field, for tests of equivalent versions.
pub async fn install_gadgets(server: &TestServer) {
    let versions = ["v1", "v2"].map(|v| {
        json!({"name": v, "served": true, "storage": v == "v1", "schema": {"openAPIV3Schema":
            {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    });
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": versions,
        },
    });
    install_crds(server, &crd.to_string(), &["gadgets.example.com"]).await;
}

/// A Gadget named `name` in the default namespace, as `example.com/<version>`.
pub fn gadget(version: &str, name: &str) -> String {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"}})
    .to_string()
}

/// Serves a webhook over HTTPS on a free loopback port: every POST's JSON body goes to
/// `handler` with the request path (and query), and its answer is the response. Returns the address and
/// the PEM of the CA to put in a `caBundle`.
pub async fn serve_webhook<F, Fut>(handler: F) -> (SocketAddr, String)
where
    F: Fn(String, Value) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Value> + Send + 'static,
{
    let (ca, config) = webhook_tls();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, handler) = (acceptor.clone(), handler.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let handler = handler.clone();
                    async move {
                        let path = request.uri().path_and_query().map(ToString::to_string);
                        let path = path.unwrap_or_default();
                        let body = request.into_body().collect().await?.to_bytes();
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let answer =
                            serde_json::to_vec(&handler(path, review).await).unwrap_or_default();
                        Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::from(answer))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (address, ca)
}

/// Installs `widgets.example.com` (namespaced, v1, any fields) through `admin` and waits
/// until it is served; returns the `default` namespace's collection path.
pub async fn install_widgets(admin: &process::Client) -> &'static str {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    admin.create(crds, crd).await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let deadline = Instant::now() + Duration::from_secs(10);
    while admin.get(widgets).await.status != 200 {
        assert!(Instant::now() < deadline, "the CRD was never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    widgets
}

/// A value as kube-apiserver stores it in protobuf: the `k8s\0` magic and a
/// `runtime.Unknown` naming `api_version`/`kind` around `object`'s message, encoded by k8s-pb
/// (upstream's `.proto` files).
pub fn protobuf_value(api_version: &str, kind: &str, object: &impl prost::Message) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    let envelope = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [&b"k8s\0"[..], &prost::Message::encode_to_vec(&envelope)].concat()
}

/// A kube-rs client of the admin kubeconfig at `path`.
pub async fn kube_client_at(path: &Path) -> kube::Client {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let kubeconfig = Kubeconfig::read_from(path).expect("read the admin kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a kube config from the admin kubeconfig");
    kube::Client::try_from(config).expect("a kube client")
}
