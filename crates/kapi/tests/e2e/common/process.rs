//! The `kapi` binary as a test server: a process on its own data directory (and etcd
//! member) that can be stopped, killed and started again on the same store, and a raw
//! HTTPS/1.1 client whose answers nothing interprets; with the expectations the error and
//! reliability tests compare answers by.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kapi_testing::etcd::EtcdCluster;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::Backend;

/// How long a test polls for a condition before it fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// A kapi server that can be restarted on the same store.

/// The `kapi serve` binary on its own data directory (and etcd member), which can be stopped
/// and started again on the same store. A process rather than an in-process server, so a
/// restart releases the embedded store's lock.
pub struct Kapi {
    pub child: Option<Child>,
    pub address: SocketAddr,
    /// The soft open-file limit the process starts with, when not the test's own.
    pub soft_open_files: Option<u64>,
    args: Vec<String>,
    pub data_dir: tempfile::TempDir,
    _etcd: Option<EtcdCluster>,
}

impl Kapi {
    /// Starts a server on `backend` with extra `flags`, and waits until it is ready.
    pub async fn start(backend: Backend, flags: &[&str]) -> Kapi {
        let mut kapi = Kapi::new(backend, flags).await;
        kapi.launch().await;
        kapi
    }

    /// A server on `backend` with extra `flags`, its data directory (and etcd) ready, not
    /// started yet: [`Kapi::launch`] starts it.
    pub async fn new(backend: Backend, flags: &[&str]) -> Kapi {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let etcd = super::etcd_for(backend).await;
        let dir = data_dir
            .path()
            .to_str()
            .expect("utf-8 temp dir")
            .to_string();
        let mut args: Vec<String> = vec!["--data-dir".into(), dir];
        if let Some(etcd) = &etcd {
            args.extend(["--etcd-servers".into(), etcd.endpoints().join(",")]);
        }
        args.extend(flags.iter().map(|flag| flag.to_string()));
        Kapi {
            child: None,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            soft_open_files: None,
            args,
            data_dir,
            _etcd: etcd,
        }
    }

    /// The etcd cluster the server stores in, on [`Backend::Etcd`].
    pub fn etcd(&self) -> Option<&EtcdCluster> {
        self._etcd.as_ref()
    }

    /// Starts the server process on a free port, its standard error appended to `kapi.log`.
    fn spawn(&mut self) {
        let port = kapi_testing::free_port();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir.path().join("kapi.log"))
            .expect("open the server log");
        let mut command = match self.soft_open_files {
            None => std::process::Command::new(env!("CARGO_BIN_EXE_kapi")),
            Some(limit) => {
                // Through a shell that lowers the soft limit, as systemd's default would.
                let mut shell = std::process::Command::new("sh");
                shell
                    .arg("-c")
                    .arg(format!("ulimit -Sn {limit} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_kapi"));
                shell
            }
        };
        let child = command
            .args(["serve", "--secure-port", &port.to_string()])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kapi");
        self.child = Some(child);
        self.address = SocketAddr::from(([127, 0, 0, 1], port));
    }

    /// Starts the server process expecting it to refuse to start: waits for it to exit
    /// (failing the test if it serves instead) and returns its log.
    pub async fn launch_refused(&mut self) -> String {
        self.spawn();
        let mut child = self.child.take().expect("spawned");
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = child.try_wait().expect("wait for kapi") {
                assert!(!status.success(), "kapi exited cleanly: {}", self.log());
                return self.log();
            }
            assert!(
                Instant::now() < deadline,
                "kapi did not refuse to start: {}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts the server process on a free port and waits for `/readyz`.
    pub async fn launch(&mut self) {
        self.spawn();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let exists = |file| self.pki(file).exists();
            let ready = if exists("ca.crt") && exists("admin.crt") && exists("admin.key") {
                self.admin().try_get("/readyz").await.ok()
            } else {
                None
            };
            if ready
                .as_ref()
                .is_some_and(|r| r.status == 200 && r.body == "ok")
            {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("kapi exited with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "kapi did not become ready: {}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.path().join("kapi.log")).unwrap_or_default()
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    pub async fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success());
        let deadline = Instant::now() + DEADLINE;
        while child.try_wait().expect("wait for kapi").is_none() {
            assert!(Instant::now() < deadline, "kapi did not stop on SIGTERM");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills the server with SIGKILL (no shutdown of any kind) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill -9 kapi");
            child.wait().expect("reap kapi");
        }
    }

    /// Stops the server and starts it again on the same data directory and store.
    pub async fn restart(&mut self) {
        self.terminate().await;
        self.launch().await;
    }

    pub async fn stop(mut self) {
        self.terminate().await;
    }

    pub fn pki(&self, file: &str) -> PathBuf {
        self.data_dir.path().join("pki").join(file)
    }

    pub fn read_pki(&self, file: &str) -> String {
        std::fs::read_to_string(self.pki(file)).expect("read a PKI file")
    }

    /// A client with the admin certificate (system:masters).
    pub fn admin(&self) -> Client {
        self.client(Some((
            self.read_pki("admin.crt"),
            self.read_pki("admin.key"),
        )))
    }

    /// A client without credentials.
    pub fn anonymous(&self) -> Client {
        self.client(None)
    }

    /// A client with a certificate kapi's CA issued for `user` in `group` (not a master).
    pub fn user(&self, user: &str, group: &str) -> Client {
        let ca_key = rcgen::KeyPair::from_pem(&self.read_pki("ca.key")).expect("CA key");
        let issuer = rcgen::Issuer::from_ca_cert_pem(&self.read_pki("ca.crt"), ca_key).expect("CA");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = client_params(user, group)
            .signed_by(&key, &issuer)
            .expect("sign");
        self.client(Some((cert.pem(), key.serialize_pem())))
    }

    /// A client with a certificate from a CA kapi does not know.
    pub fn stranger(&self) -> Client {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca = rcgen::CertificateParams::default();
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "stranger-ca");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = client_params("mallory", "system:masters")
            .signed_by(&key, &issuer)
            .expect("sign");
        self.client(Some((cert.pem(), key.serialize_pem())))
    }

    pub fn client(&self, identity: Option<(String, String)>) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(self.pki("ca.crt")).expect("CA certificate"))
            .expect("trust the CA");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .expect("client certificate");
                let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("client key");
                builder
                    .with_client_auth_cert(chain, key)
                    .expect("client identity")
            }
        };
        Client {
            address: self.address,
            tls: Arc::new(config),
        }
    }
}

impl Drop for Kapi {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A client certificate's parameters: `CN=user, O=group`, client auth.
pub fn client_params(user: &str, group: &str) -> rcgen::CertificateParams {
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, group);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, user);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    params
}

// ---------------------------------------------------------------------------------------------
// A raw HTTPS/1.1 client.

#[derive(Clone)]
pub struct Client {
    pub address: SocketAddr,
    pub tls: Arc<rustls::ClientConfig>,
}

/// One response, read to its end.
#[derive(Debug)]
pub struct Reply {
    /// `METHOD path`, and the headers sent, for messages.
    pub request: String,
    pub status: u16,
    pub headers: HeaderMap,
    /// The body as text (invalid UTF-8 replaced: see `bytes` for binary bodies).
    pub body: String,
    pub bytes: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("the body is not JSON ({err}): {:?}", self.body))
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|value| value.to_str().expect("an ASCII header"))
            .unwrap_or_default()
    }
}

/// A POST whose body has not all arrived: it holds what flow control or the in-flight
/// limit gave it when it was admitted (its seat or slot is taken before the handler reads
/// the body), or its place in a queue, until [`Held::release`] sends the rest.
pub struct Held {
    stream: TlsStream<TcpStream>,
    body: String,
}

impl Held {
    /// Sends the rest of the body and returns the status line of the answer.
    pub async fn release(mut self) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.stream
            .write_all(&self.body.as_bytes()[1..])
            .await
            .expect("send");
        self.stream.flush().await.expect("flush");
        let mut answer = vec![0u8; 64];
        let read = tokio::time::timeout(DEADLINE, self.stream.read(&mut answer))
            .await
            .expect("the held request is answered")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer[..read]).to_string();
        answer.lines().next().unwrap_or_default().to_string()
    }
}

impl Client {
    /// POSTs `body` (JSON) to `path`, sending its first byte only (see [`Held`]).
    pub async fn hold(&self, path: &str, body: &str) -> Held {
        use tokio::io::AsyncWriteExt;
        let mut stream = self.connect().await.expect("connect");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.expect("send head");
        stream.write_all(&body.as_bytes()[..1]).await.expect("send");
        stream.flush().await.expect("flush");
        Held {
            stream,
            body: body.to_string(),
        }
    }

    /// Opens a TLS connection to the server.
    pub async fn connect(&self) -> Result<TlsStream<TcpStream>, Box<dyn std::error::Error>> {
        let tcp = TcpStream::connect(self.address).await?;
        let connector = TlsConnector::from(self.tls.clone());
        Ok(connector
            .connect(ServerName::try_from("localhost")?, tcp)
            .await?)
    }

    pub async fn try_send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, Box<dyn std::error::Error>> {
        let mut description = format!("{method} {path}");
        for (name, value) in headers {
            description.push_str(&format!(" [{name}: {value}]"));
        }
        let tls = self.connect().await?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "localhost");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = sender.send_request(request.body(Full::new(body))?).await?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok(Reply {
            request: description,
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
            bytes: body,
        })
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        let reply = self
            .try_send(method.clone(), path, headers, body.into())
            .await;
        reply.unwrap_or_else(|err| panic!("{method} {path}: {err}"))
    }

    pub async fn try_get(&self, path: &str) -> Result<Reply, Box<dyn std::error::Error>> {
        self.try_send(Method::GET, path, &[], Bytes::new()).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, &[], Bytes::new()).await
    }

    /// POST/PUT/PATCH/DELETE of a JSON body.
    pub async fn write(&self, method: Method, path: &str, body: &Value) -> Reply {
        let content_type = if method == Method::PATCH {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        self.send(
            method,
            path,
            &[("content-type", content_type)],
            body.to_string(),
        )
        .await
    }

    /// Creates an object and returns it; fails unless the server answers 201.
    pub async fn create(&self, path: &str, body: Value) -> Value {
        let reply = self.write(Method::POST, path, &body).await;
        assert_eq!(reply.status, 201, "create {path}: {}", reply.body);
        reply.json()
    }
}

// ---------------------------------------------------------------------------------------------
// Expectations.

/// A failure Status as kube-apiserver writes it: `kind`, `apiVersion`, the always-present
/// empty `metadata`, `status: Failure`, and `reason` and `details` when set (both omitempty in
/// k8s.io/apimachinery pkg/apis/meta/v1/types.go; an empty but non-nil details is `{}`).
pub fn failure(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    });
    if !reason.is_empty() {
        status["reason"] = Value::from(reason);
    }
    if let Some(details) = details {
        status["details"] = details;
    }
    status
}

/// The checks of one test: every mismatch is recorded, and the test fails at its end with
/// all of them, so one run shows every difference from kube-apiserver.
#[derive(Default)]
pub struct Checks {
    failures: Vec<String>,
}

impl Checks {
    /// Checks a JSON Status answer: the HTTP code is the Status's, the body is JSON and equals
    /// `expected` exactly.
    pub fn status(&mut self, reply: &Reply, expected: &Value) {
        let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default();
        let code = expected["code"].as_u64().expect("expected code");
        let actual = serde_json::from_str::<Value>(&reply.body).ok();
        let matches = u64::from(reply.status) == code
            && reply.header("content-type") == "application/json"
            && actual.as_ref() == Some(expected);
        if !matches {
            self.failures.push(format!(
                "{}\n--- actual: HTTP {} ({}):\n{}\n--- expected (kube-apiserver 1.35): HTTP {code} (application/json):\n{}",
                reply.request,
                reply.status,
                reply.header("content-type"),
                actual.as_ref().map_or_else(|| reply.body.clone(), pretty),
                pretty(expected)
            ));
        }
    }

    /// Records a failure unless `ok`.
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    /// Fails the test with every recorded mismatch.
    #[track_caller]
    pub fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "{} check(s) failed:\n\n{}",
            self.failures.len(),
            self.failures.join("\n\n")
        );
    }
}
