//! Test support shared by kapi's crates: free loopback ports, real etcd processes started
//! by the tests themselves, a KMS v2 plugin, and Kubernetes' generated protobuf messages.

pub mod etcd;
pub mod k8s_pb;
pub mod kms;

use std::net::TcpListener;

/// A loopback TCP port that was free a moment ago (the OS picked it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("bind a loopback port")
}
