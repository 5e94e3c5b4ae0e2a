//! The `kapi serve` binary end to end: it starts on a fresh data directory, makes its PKI and
//! admin kubeconfig, becomes ready, answers the real kubectl through that kubeconfig, stops
//! cleanly on SIGTERM, and reuses its PKI on the next start; and it runs on a real etcd.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::common::KUBECTL;

/// A running `kapi serve`.
struct Kapi {
    child: Child,
    port: u16,
    data_dir: PathBuf,
}

impl Kapi {
    /// Starts the binary on a free port with `data_dir` and `flags`.
    fn start(data_dir: &Path, flags: &[&OsStr]) -> Kapi {
        Kapi::start_with_env(data_dir, flags, &[])
    }

    /// Starts the binary as [`Kapi::start`] does, with `env` added to its environment.
    fn start_with_env(data_dir: &Path, flags: &[&OsStr], env: &[(&str, &OsStr)]) -> Kapi {
        let port = kapi_testing::free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(["serve", "--secure-port", &port.to_string(), "--data-dir"])
            .arg(data_dir)
            .args(flags)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kapi");
        Kapi {
            child,
            port,
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// Polls `/readyz` anonymously until it answers `200 ok`; returns how long that took.
    async fn wait_ready(&self, since: Instant) -> Duration {
        let ca = self.data_dir.join("pki/ca.crt");
        while since.elapsed() < Duration::from_secs(20) {
            let answer = if ca.exists() {
                get(self.port, &ca, "/readyz").await.ok()
            } else {
                None
            };
            if answer.is_some_and(|r| r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\nok")) {
                return since.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("kapi did not become ready");
    }

    /// Sends SIGTERM and waits for the exit.
    fn terminate(mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        assert!(status.expect("run kill").success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait for kapi") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.child.kill().ok();
        panic!("kapi did not stop after SIGTERM");
    }

    /// Runs kubectl with the admin kubeconfig.
    fn kubectl(&self, args: &[&str]) -> String {
        let output = Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(self.data_dir.join("admin.kubeconfig"))
            .args(args)
            .output()
            .expect("run kubectl");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("kubectl prints UTF-8")
    }
}

impl Drop for Kapi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `path` over HTTPS/1.1 without credentials, trusting `ca`; the raw response.
async fn get(port: u16, ca: &Path, path: &str) -> Result<String, Box<dyn std::error::Error>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca)?)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    tls.read_to_string(&mut response).await?;
    Ok(response)
}

#[tokio::test]
async fn serves_kubectl_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");

    let started = Instant::now();
    let kapi = Kapi::start(&data_dir, &[]);
    let first_start = kapi.wait_ready(started).await;
    eprintln!("first start (PKI generated) ready in {first_start:?}");
    for file in [
        "ca.crt",
        "ca.key",
        "apiserver.crt",
        "apiserver.key",
        "admin.crt",
        "admin.key",
    ] {
        assert!(data_dir.join("pki").join(file).exists(), "{file}");
    }
    if Path::new(KUBECTL).exists() {
        let version: serde_json::Value =
            serde_json::from_str(&kapi.kubectl(&["version", "-o", "json"])).unwrap();
        assert_eq!(version["serverVersion"]["gitVersion"], "v1.35.0");
        assert_eq!(kapi.kubectl(&["get", "--raw", "/readyz"]), "ok");
    } else {
        eprintln!("{KUBECTL} is missing: skipping the kubectl checks");
    }
    assert!(kapi.terminate().success());

    let ca = std::fs::read(data_dir.join("pki/ca.crt")).unwrap();
    let serving = std::fs::read(data_dir.join("pki/apiserver.crt")).unwrap();
    let restarted = Instant::now();
    let kapi = Kapi::start(&data_dir, &[]);
    let second_start = kapi.wait_ready(restarted).await;
    eprintln!("second start (PKI reused) ready in {second_start:?}");
    assert_eq!(std::fs::read(data_dir.join("pki/ca.crt")).unwrap(), ca);
    assert_eq!(
        std::fs::read(data_dir.join("pki/apiserver.crt")).unwrap(),
        serving
    );
    assert!(kapi.terminate().success());
}

/// A second kapi started on a data directory a running kapi holds fails at once, naming the
/// holder, and leaves the running server's admin kubeconfig as it was.
#[tokio::test]
async fn a_second_kapi_on_a_data_dir_in_use_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let kapi = Kapi::start(&data_dir, &[]);
    kapi.wait_ready(Instant::now()).await;
    let kubeconfig = std::fs::read(data_dir.join("admin.kubeconfig")).unwrap();

    let second = Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args([
            "serve",
            "--secure-port",
            &kapi_testing::free_port().to_string(),
        ])
        .arg("--data-dir")
        .arg(&data_dir)
        .output()
        .expect("run a second kapi");
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("is in use by another kapi")
            && stderr.contains(&format!("pid {}", kapi.child.id())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(data_dir.join("admin.kubeconfig")).unwrap(),
        kubeconfig
    );
    if Path::new(KUBECTL).exists() {
        assert_eq!(kapi.kubectl(&["get", "--raw", "/readyz"]), "ok");
    }
    assert!(kapi.terminate().success());
}

#[tokio::test]
async fn serves_from_etcd_over_tls() {
    let etcd = kapi_testing::etcd::EtcdCluster::start_tls(1);
    let tls = etcd.tls().expect("a TLS cluster");
    let dir = tempfile::tempdir().unwrap();
    let servers = etcd.endpoints().join(",");
    let flags: [&OsStr; 8] = [
        "--etcd-servers".as_ref(),
        servers.as_ref(),
        "--etcd-cafile".as_ref(),
        tls.ca_file.as_ref(),
        "--etcd-certfile".as_ref(),
        tls.cert_file.as_ref(),
        "--etcd-keyfile".as_ref(),
        tls.key_file.as_ref(),
    ];
    let started = Instant::now();
    let kapi = Kapi::start(dir.path(), &flags);
    let ready = kapi.wait_ready(started).await;
    eprintln!("ready on etcd in {ready:?}");
    assert!(
        !dir.path().join("store").exists(),
        "the embedded store is not used"
    );
    assert!(kapi.terminate().success());
}

/// Under a service manager (`Type=notify`): `READY=1` arrives on `$NOTIFY_SOCKET`, a real
/// datagram socket, once `/readyz` passes, and `STOPPING=1` when SIGTERM starts the shutdown.
#[tokio::test]
async fn a_service_manager_is_told_ready_then_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let data_dir = dir.path().join("data");
    let env = [("NOTIFY_SOCKET", socket_path.as_os_str())];
    let kapi = Kapi::start_with_env(&data_dir, &[], &env);
    let mut message = [0u8; 64];
    let length = socket.recv(&mut message).expect("READY=1 within 20 s");
    assert_eq!(&message[..length], b"READY=1\n");
    // Ready means ready: /readyz passes at once.
    let ready = get(kapi.port, &data_dir.join("pki/ca.crt"), "/readyz").await;
    let ready = ready.expect("GET /readyz");
    assert!(
        ready.starts_with("HTTP/1.1 200") && ready.ends_with("\r\n\r\nok"),
        "{ready}"
    );
    assert!(kapi.terminate().success());
    let length = socket.recv(&mut message).expect("STOPPING=1");
    assert_eq!(&message[..length], b"STOPPING=1\n");
}
