//! Real etcd clusters for tests, so the etcd backend is tested against the server it talks to in
//! production rather than a mock.
//!
//! [`EtcdCluster::start`] runs one or more `etcd` processes on loopback ports, each with its own
//! data directory and log file inside one temporary directory, and returns once every member
//! reports itself healthy. Tests can kill and restart members to exercise failover. Dropping the
//! cluster kills its processes and removes the directory.
//!
//! The calls here block (they start processes and wait for them); from an async test, call them
//! before spawning work or through `tokio::task::block_in_place`.

mod certs;

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub use certs::EtcdTls;

use crate::free_port;

/// How long a member may take to become healthy.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Whole-cluster start attempts: ports from [`free_port`] can be taken by someone else before
/// etcd binds them, and then a member exits at once; a fresh set of ports fixes that.
const START_ATTEMPTS: usize = 3;
/// Pacing of readiness polls.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Lines of a member's log shown when it fails to start.
const LOG_TAIL_LINES: usize = 40;

/// Distinguishes the clusters of one test process in their `--initial-cluster-token`.
static CLUSTER_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The etcd binary the tests run: `$KAPI_ETCD_BIN`, else Debian's `/usr/bin/etcd`, else `etcd`
/// on `PATH`.
///
/// # Panics
/// When there is none, with a message that says how to install it.
pub fn etcd_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("KAPI_ETCD_BIN") {
        return PathBuf::from(path);
    }
    let debian = Path::new("/usr/bin/etcd");
    if debian.is_file() {
        return debian.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "etcd not found: install Debian's etcd-server \
                 (apt-get install -y etcd-server; .ci/run does this)"
            )
        })
}

/// A running etcd cluster of real processes on loopback ports. See the module documentation.
pub struct EtcdCluster {
    // Members are declared before the directory so they are killed before it is removed.
    members: Vec<Member>,
    tls: Option<EtcdTls>,
    /// Held only to remove the directory (data, logs, certificates) on drop.
    _dir: TempDir,
}

impl EtcdCluster {
    /// Starts a cluster of `members` members serving plain HTTP clients, and waits until every
    /// member is healthy.
    ///
    /// # Panics
    /// When the cluster does not come up; the message has the failing member's log tail.
    pub fn start(members: usize) -> EtcdCluster {
        Self::launch(members, false)
    }

    /// Like [`EtcdCluster::start`], but clients must use TLS and present a certificate signed by
    /// the cluster's own CA. [`EtcdCluster::tls`] has the files a client needs.
    pub fn start_tls(members: usize) -> EtcdCluster {
        Self::launch(members, true)
    }

    /// The client URLs of all members (also of killed ones), `http://` or `https://`.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The CA and client certificate for a TLS cluster; `None` for a plain one.
    pub fn tls(&self) -> Option<&EtcdTls> {
        self.tls.as_ref()
    }

    /// Kills member `member` (index into [`EtcdCluster::endpoints`]) with SIGKILL and waits
    /// for it to exit.
    ///
    /// # Panics
    /// When the member is not running.
    pub fn kill(&mut self, member: usize) {
        self.members[member].kill();
    }

    /// Restarts a killed member with its data directory and flags, and waits until it is
    /// healthy, which for etcd 3.4 means it has a leader and has caught up enough to serve a
    /// linearizable read.
    ///
    /// # Panics
    /// When the member is running, or does not become healthy in time.
    pub fn restart(&mut self, member: usize) {
        let member = &mut self.members[member];
        member.spawn();
        let deadline = Instant::now() + READY_TIMEOUT;
        if let Err(failure) = wait_ready(std::slice::from_mut(member), deadline) {
            panic!("etcd member did not restart: {}", failure.message);
        }
    }

    /// Starts a cluster, retrying with fresh ports when a member exits during startup.
    fn launch(size: usize, secure: bool) -> EtcdCluster {
        assert!(size > 0, "an etcd cluster needs at least one member");
        let dir = tempfile::Builder::new()
            .prefix("kapi-etcd-")
            .tempdir()
            .expect("create a temporary directory for etcd");
        let tls = secure.then(|| EtcdTls::generate(dir.path()));
        let token = format!(
            "kapi-test-{}-{}",
            std::process::id(),
            CLUSTER_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut failures = Vec::new();
        for attempt in 0..START_ATTEMPTS {
            let plan = ClusterPlan {
                dir: dir.path(),
                tls: tls.as_ref(),
                token: format!("{token}-{attempt}"),
                attempt,
            };
            let mut members = plan.members(size);
            members.iter_mut().for_each(Member::spawn);
            match wait_ready(&mut members, Instant::now() + READY_TIMEOUT) {
                Ok(()) => {
                    return EtcdCluster {
                        members,
                        tls,
                        _dir: dir,
                    };
                }
                Err(failure) if failure.retry => failures.push(failure.message),
                Err(failure) => panic!("etcd cluster did not start: {}", failure.message),
            }
        }
        panic!(
            "etcd cluster did not start in {START_ATTEMPTS} attempts:\n{}",
            failures.join("\n")
        );
    }
}

/// What one start attempt needs to lay out the members' flags and files.
struct ClusterPlan<'a> {
    dir: &'a Path,
    tls: Option<&'a EtcdTls>,
    token: String,
    attempt: usize,
}

/// The loopback ports of one member.
struct Ports {
    client: u16,
    peer: u16,
    /// `/health` and `/metrics`, always plain HTTP so readiness needs no TLS client.
    metrics: u16,
}

impl ClusterPlan<'_> {
    fn members(&self, size: usize) -> Vec<Member> {
        let ports = distinct_ports(size);
        let initial_cluster = ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("m{i}=http://127.0.0.1:{}", p.peer))
            .collect::<Vec<_>>()
            .join(",");
        ports
            .iter()
            .enumerate()
            .map(|(i, p)| self.member(i, p, &initial_cluster))
            .collect()
    }

    fn member(&self, index: usize, ports: &Ports, initial_cluster: &str) -> Member {
        let name = format!("m{index}");
        let home = self.dir.join(format!("attempt{}-{name}", self.attempt));
        fs::create_dir_all(&home).expect("create an etcd member directory");
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let client_url = format!("{scheme}://127.0.0.1:{}", ports.client);
        let peer_url = format!("http://127.0.0.1:{}", ports.peer);
        let mut args: Vec<OsString> = [
            "--name",
            &name,
            "--listen-client-urls",
            &client_url,
            "--advertise-client-urls",
            &client_url,
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
            "--listen-metrics-urls",
            &format!("http://127.0.0.1:{}", ports.metrics),
            "--initial-cluster",
            initial_cluster,
            "--initial-cluster-state",
            "new",
            "--initial-cluster-token",
            &self.token,
            "--logger",
            "zap",
            "--log-outputs",
            "stderr",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        args.push("--data-dir".into());
        args.push(home.join("data").into());
        if let Some(tls) = self.tls {
            args.extend(tls.server_args());
        }
        Member {
            name,
            client_url,
            health: SocketAddr::from(([127, 0, 0, 1], ports.metrics)),
            args,
            log: home.join("etcd.log"),
            child: None,
        }
    }
}

/// Three distinct free ports for each of `size` members.
fn distinct_ports(size: usize) -> Vec<Ports> {
    let mut seen = HashSet::new();
    let mut next = || loop {
        let port = free_port();
        if seen.insert(port) {
            return port;
        }
    };
    (0..size)
        .map(|_| Ports {
            client: next(),
            peer: next(),
            metrics: next(),
        })
        .collect()
}

/// One etcd process and what it takes to start it again.
struct Member {
    name: String,
    client_url: String,
    health: SocketAddr,
    args: Vec<OsString>,
    log: PathBuf,
    child: Option<Child>,
}

impl Member {
    /// Starts the process with its output appended to its log file.
    fn spawn(&mut self) {
        assert!(self.child.is_none(), "etcd member {} is running", self.name);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open an etcd log file");
        let stderr = log.try_clone().expect("clone an etcd log file handle");
        let mut command = Command::new(etcd_binary());
        // Flags only: ETCD_* variables of the environment would override or contradict them.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ETCD_") {
                command.env_remove(name);
            }
        }
        let child = command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", etcd_binary().display()));
        self.child = Some(child);
    }

    fn kill(&mut self) {
        let mut child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("etcd member {} is not running", self.name));
        // Either may fail only because the process is already gone, which is the goal.
        let _ = child.kill();
        let _ = child.wait();
    }

    /// `Some(description)` if the process has exited.
    fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(format!("exited with {status}")),
            Ok(None) => None,
            Err(err) => Some(format!("cannot be waited for: {err}")),
        }
    }

    /// Whether `GET /health` on the metrics port says the member is healthy.
    fn healthy(&self) -> bool {
        http_get(self.health, "/health").is_ok_and(|body| body.contains(r#""health":"true""#))
    }

    fn log_tail(&self) -> String {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }

    fn failure(&self, what: &str) -> String {
        format!(
            "etcd member {} {what}; log {}:\n{}",
            self.name,
            self.log.display(),
            self.log_tail()
        )
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.kill();
        }
    }
}

/// Why members did not become ready; `retry` when one exited early (likely a port race).
struct StartFailure {
    message: String,
    retry: bool,
}

/// Waits until every member is healthy, failing as soon as one exits.
fn wait_ready(members: &mut [Member], deadline: Instant) -> Result<(), StartFailure> {
    loop {
        for member in members.iter_mut() {
            if let Some(exit) = member.exited() {
                return Err(StartFailure {
                    message: member.failure(&exit),
                    retry: true,
                });
            }
        }
        if members.iter().all(Member::healthy) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let message = members
                .iter()
                .filter(|m| !m.healthy())
                .map(|m| m.failure(&format!("not healthy after {READY_TIMEOUT:?}")))
                .collect::<Vec<_>>()
                .join("\n");
            return Err(StartFailure {
                message,
                retry: false,
            });
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// A minimal HTTP/1.0 GET returning the whole response, with short timeouts so a hung member
/// cannot stall the readiness loop.
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let timeout = Duration::from_secs(1);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// Writes `contents` to `dir/name` and returns the path.
fn write_file(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    File::create(&path)
        .and_then(|mut file| file.write_all(contents.as_bytes()))
        .unwrap_or_else(|err| panic!("write {}: {err}", path.display()));
    path
}
