//! The in-process test harness of kapi's integration tests: a real kapi server (the same
//! `serve::start` the binary runs) on a free loopback port with a temporary data directory, on
//! the embedded store or on a real etcd started for the test, driven by the real kubectl.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use clap::Parser;
use kapi::flags::{Cli, Command};
use kapi::serve::{self, RunningServer};
use kapi_testing::etcd::EtcdCluster;

/// The kubectl the tests drive.
pub const KUBECTL: &str = "/usr/bin/kubectl";

/// Which store a test server runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Etcd,
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
        let etcd = match backend {
            Backend::Embedded => None,
            Backend::Etcd => Some(
                tokio::task::spawn_blocking(|| EtcdCluster::start(1))
                    .await
                    .expect("etcd"),
            ),
        };
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
        let Command::Serve(options) = Cli::try_parse_from(&args).expect("flags parse").command;
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

/// The cells of a kubectl table line (separated by at least two spaces).
pub fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .map(str::to_string)
        .collect()
}
