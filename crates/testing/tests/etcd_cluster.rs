//! The etcd harness itself: clusters start, report endpoints, and survive a member restart.

use std::io::{Read, Write};
use std::net::TcpStream;

use kapi_testing::etcd::EtcdCluster;

/// Whether something accepts TCP connections at a client URL.
fn accepts(url: &str) -> bool {
    let addr = url.rsplit("//").next().unwrap();
    TcpStream::connect(addr).is_ok()
}

#[test]
fn cluster_starts_kills_and_restarts_members() {
    let mut cluster = EtcdCluster::start(3);
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    assert!(endpoints.iter().all(|e| e.starts_with("http://127.0.0.1:")));
    assert!(cluster.tls().is_none());

    cluster.kill(1);
    assert!(!accepts(&endpoints[1]));
    cluster.restart(1);
    assert!(accepts(&endpoints[1]));

    // The v3 JSON gateway answers on the client port.
    let addr = endpoints[0].trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET /version HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.contains("etcdserver"), "{response}");
}

#[test]
fn tls_cluster_has_https_endpoints_and_pem_files() {
    let cluster = EtcdCluster::start_tls(1);
    let endpoints = cluster.endpoints();
    assert!(endpoints[0].starts_with("https://127.0.0.1:"));
    let tls = cluster.tls().expect("TLS files");
    for file in [&tls.ca_file, &tls.cert_file, &tls.key_file] {
        let pem = std::fs::read_to_string(file).unwrap();
        assert!(pem.starts_with("-----BEGIN"), "{}", file.display());
    }
    assert!(accepts(&endpoints[0]));
}

#[test]
fn drop_removes_processes() {
    let endpoints = EtcdCluster::start(1).endpoints();
    assert!(!accepts(&endpoints[0]));
}
