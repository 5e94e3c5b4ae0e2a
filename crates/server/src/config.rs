//! The settings of a [`GenericApiServer`](crate::GenericApiServer), with kube-apiserver's
//! defaults.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::authn::RequestHeaderConfig;
use crate::serving::TlsConfig;

/// How a server listens, limits and times out requests, and shuts down.
#[derive(Debug)]
pub struct ServerConfig {
    /// The address to listen on (`--bind-address`).
    pub bind_address: IpAddr,
    /// The port to listen on (`--secure-port`).
    pub secure_port: u16,
    /// The serving certificate, its key, and the client CA.
    pub tls: TlsConfig,
    /// Concurrent read-only requests at most; 0 for no limit (`--max-requests-inflight`).
    pub max_requests_inflight: usize,
    /// Concurrent mutating requests at most; 0 for no limit
    /// (`--max-mutating-requests-inflight`).
    pub max_mutating_requests_inflight: usize,
    /// The longest a non-long-running request may take (`--request-timeout`).
    pub request_timeout: Duration,
    /// Whether requests without credentials are served as `system:anonymous`
    /// (`--anonymous-auth`).
    pub anonymous_auth: bool,
    /// How long the server keeps serving after shutdown began, with `/readyz` failing, so
    /// load balancers can take it out first (`--shutdown-delay-duration`).
    pub shutdown_delay: Duration,
    /// How long draining connections may take before they are closed.
    pub shutdown_timeout: Duration,
    /// Front-proxy authentication (`--requestheader-*`), when configured.
    pub request_header: Option<RequestHeaderConfig>,
}

impl ServerConfig {
    /// kube-apiserver's defaults: 127.0.0.1:6443 (kapi binds to loopback unless told), 400
    /// read-only and 200 mutating requests in flight, a 60 s request timeout, anonymous
    /// requests allowed, no shutdown delay, 60 s to drain.
    pub fn new(tls: TlsConfig) -> Self {
        ServerConfig {
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            secure_port: 6443,
            tls,
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: Duration::from_secs(60),
            anonymous_auth: true,
            shutdown_delay: Duration::ZERO,
            shutdown_timeout: Duration::from_secs(60),
            request_header: None,
        }
    }

    /// The socket address to listen on.
    pub fn listen_address(&self) -> SocketAddr {
        SocketAddr::new(self.bind_address, self.secure_port)
    }
}
