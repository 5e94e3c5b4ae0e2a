//! Reliability: what a hostile or clumsy client can do to the `kapi` binary, and what kapi
//! promises in return (docs/RELIABILITY.md lists the promises and where each is tested).
//! Idle and slow connections, abandoned responses, the open-file limit.

use crate::common;

use std::time::{Duration, Instant};

use common::Backend;
use common::process::Kapi;
use tokio::io::AsyncReadExt;

/// The soft open-file limit systemd gives services by default.
const SYSTEMD_SOFT_LIMIT: u64 = 1024;

/// How long kapi lets a connection go without starting a request (upstream's
/// ReadHeaderTimeout), and the slack the test allows on top for a loaded machine.
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
const SLACK: Duration = Duration::from_secs(15);

/// The soft and hard open-file limits of a process, from /proc.
fn open_file_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("an open-file limit");
    let mut numbers = line.split_whitespace().skip(3);
    (
        numbers.next().unwrap_or_default().to_string(),
        numbers.next().unwrap_or_default().to_string(),
    )
}

/// Started with systemd's soft open-file limit, kapi raises it to the hard limit; 1,100
/// unauthenticated clients that complete the TLS handshake and send nothing (and 50 that
/// never even start it) lock nobody out, and all of them are closed within the read-header
/// timeout.
#[tokio::test]
async fn idle_connections_lock_nobody_out_and_are_closed() {
    let mut kapi = Kapi::new(Backend::Embedded, &[]).await;
    kapi.soft_open_files = Some(SYSTEMD_SOFT_LIMIT);
    kapi.launch().await;
    let pid = kapi.child.as_ref().expect("running").id();
    let (soft, hard) = open_file_limits(pid);
    assert_eq!(
        soft, hard,
        "the soft open-file limit is raised to the hard one"
    );

    let anonymous = kapi.anonymous();
    let opened = Instant::now();
    let mut idle = Vec::new();
    for _ in 0..1100 {
        idle.push(anonymous.connect().await.expect("handshake"));
    }
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(
            tokio::net::TcpStream::connect(kapi.address)
                .await
                .expect("connect"),
        );
    }
    eprintln!(
        "1,100 TLS and 50 TCP connections idle after {:?}",
        opened.elapsed()
    );

    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let output = common::kubectl(&kubeconfig, &["get", "namespaces", "-o", "name"], None).await;
    assert!(
        output.status.success(),
        "kubectl is locked out: {}",
        common::stderr(&output)
    );
    assert!(common::stdout(&output).contains("namespace/default"));

    let closed = async {
        let mut buffer = [0u8; 64];
        for mut connection in idle {
            // Closed: end of stream, or an error for a connection reset.
            while matches!(connection.read(&mut buffer).await, Ok(n) if n > 0) {}
        }
        for mut connection in silent {
            while matches!(connection.read(&mut buffer).await, Ok(n) if n > 0) {}
        }
    };
    tokio::time::timeout(READ_HEADER_TIMEOUT + SLACK, closed)
        .await
        .expect("idle connections are closed within the read-header timeout");
    eprintln!(
        "every idle connection closed {:?} after they were opened",
        opened.elapsed()
    );
    assert!(
        !kapi.log().contains("Too many open files"),
        "{}",
        kapi.log()
    );
    kapi.stop().await;
}
