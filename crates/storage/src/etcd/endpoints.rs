//! One etcd client per server, with failover between them.
//!
//! etcd-client 0.21 puts all endpoints of one client behind tonic's balanced channel, which
//! keeps routing requests to a dead member (its connection is lazy, so a failed connect is only
//! reported on the request that triggered it): with one member of three killed, about a third
//! of all calls fail. So the store keeps one client per server instead and pins calls to one
//! active server, moving on to the next when a call to it fails with an availability error.
//!
//! Reads are retried on the next server. Writes are retried only when the request provably
//! never left this process (the connection was refused); otherwise their outcome is unknown
//! and the caller gets [`StorageError::Unavailable`](crate::StorageError::Unavailable).

use std::error::Error as _;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};
use tokio::time::{Instant, timeout_at};

use super::EtcdConfig;
use crate::{Result, StorageError};

/// gRPC status codes (stable numbers of the gRPC protocol) that mean "try again elsewhere".
const CODE_DEADLINE_EXCEEDED: i32 = 4;
const CODE_UNAVAILABLE: i32 = 14;

/// Full rounds over all servers a read may make before it gives up.
const READ_ROUNDS: u32 = 3;
/// The pause between two rounds of a read, multiplied by the round number.
const READ_ROUND_PAUSE: Duration = Duration::from_millis(50);
/// HTTP/2 keep-alive pings find a member that vanished without closing its connections. etcd
/// rejects pings more often than every 5 s (`--grpc-keepalive-min-time`).
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// The longest a TCP (and TLS) connect may take before the server counts as unreachable.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Why one call to one server failed.
#[derive(Debug)]
pub(super) enum CallError {
    /// etcd answered with an error, or the transport failed.
    Etcd(etcd_client::Error),
    /// No answer before the deadline.
    TimedOut(Duration),
}

impl CallError {
    /// Whether another server (or a later attempt) may succeed: transport failures, timeouts
    /// and etcd's own "unavailable" answers (no leader, leader changed, request timed out).
    pub(super) fn is_unavailable(&self) -> bool {
        match self {
            CallError::TimedOut(_) => true,
            CallError::Etcd(etcd_client::Error::GRpcStatus(status)) => {
                let code = status.code() as i32;
                // A status with a source was made by the client from a transport error; one
                // that came from etcd has none.
                code == CODE_UNAVAILABLE
                    || code == CODE_DEADLINE_EXCEEDED
                    || status.source().is_some()
            }
            CallError::Etcd(etcd_client::Error::TransportError(_))
            | CallError::Etcd(etcd_client::Error::IoError(_))
            | CallError::Etcd(etcd_client::Error::WatchError(_)) => true,
            CallError::Etcd(_) => false,
        }
    }

    /// Whether the request certainly never reached etcd: the connection was refused. Only then
    /// may a write be sent again.
    fn never_sent(&self) -> bool {
        // etcd_client::Error reports no source; start from the error it wraps.
        let mut source: Option<&(dyn std::error::Error + 'static)> = match self {
            CallError::Etcd(etcd_client::Error::GRpcStatus(status)) => Some(status),
            CallError::Etcd(etcd_client::Error::TransportError(err)) => Some(err),
            CallError::Etcd(etcd_client::Error::IoError(err)) => Some(err),
            _ => None,
        };
        while let Some(err) = source {
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                return io.kind() == std::io::ErrorKind::ConnectionRefused;
            }
            source = err.source();
        }
        false
    }

    /// The message etcd sent with the error, if it sent one.
    pub(super) fn etcd_message(&self) -> Option<&str> {
        match self {
            CallError::Etcd(etcd_client::Error::GRpcStatus(status)) => Some(status.message()),
            _ => None,
        }
    }

    /// The generic mapping: availability problems are [`StorageError::Unavailable`], anything
    /// else is unexpected.
    pub(super) fn into_storage(self) -> StorageError {
        if self.is_unavailable() {
            StorageError::Unavailable(self.to_string())
        } else {
            StorageError::Internal(format!("etcd: {self}"))
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Etcd(err) => write!(f, "{err}"),
            CallError::TimedOut(after) => write!(f, "no answer from etcd within {after:?}"),
        }
    }
}

/// One client per etcd server and the index of the active one.
pub(super) struct Endpoints {
    servers: Vec<Server>,
    active: AtomicUsize,
    request_timeout: Duration,
}

struct Server {
    url: String,
    client: Client,
}

impl Endpoints {
    /// Builds a client per server. Clients connect lazily, so this succeeds for unreachable
    /// servers; it fails only on bad configuration.
    pub(super) async fn new(config: &EtcdConfig) -> Result<Endpoints> {
        if config.servers.is_empty() {
            return Err(StorageError::InvalidRequest("no etcd servers given".into()));
        }
        let tls = tls_options(config)?;
        let mut servers = Vec::with_capacity(config.servers.len());
        for url in &config.servers {
            let mut options = ConnectOptions::new()
                .with_connect_timeout(config.request_timeout.min(MAX_CONNECT_TIMEOUT))
                .with_keep_alive(KEEP_ALIVE_INTERVAL, config.request_timeout)
                // A member cut off from the quorum fails calls at once instead of hanging,
                // and cancels its watches, so they move to another member.
                .with_require_leader(true);
            if url.starts_with("https://") {
                // Without a CA there is nothing to verify the server with (no system roots).
                let tls = tls.clone().ok_or_else(|| {
                    StorageError::InvalidRequest(format!("etcd server {url} needs a CA file"))
                })?;
                options = options.with_tls(tls);
            }
            let client = Client::connect([url.as_str()], Some(options))
                .await
                .map_err(|err| StorageError::InvalidRequest(format!("etcd server {url}: {err}")))?;
            servers.push(Server {
                url: url.clone(),
                client,
            });
        }
        Ok(Endpoints {
            servers,
            active: AtomicUsize::new(0),
            request_timeout: config.request_timeout,
        })
    }

    /// Runs an idempotent call on the active server, moving on to the next server after an
    /// availability error, for a few rounds over all servers within the request timeout.
    pub(super) async fn read<T, F, Fut>(&self, call: F) -> Result<T, CallError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = Instant::now() + self.request_timeout;
        let attempts = self.servers.len() * READ_ROUNDS as usize;
        let mut attempt = 0;
        loop {
            let (index, result) = self.attempt(&call, deadline).await;
            let err = match result {
                Ok(value) => return Ok(value),
                Err(err) if err.is_unavailable() => err,
                Err(err) => return Err(err),
            };
            self.fail_over(index, &err);
            attempt += 1;
            if attempt >= attempts || Instant::now() >= deadline {
                return Err(err);
            }
            if attempt % self.servers.len() == 0 {
                let rounds = (attempt / self.servers.len()) as u32;
                let pause = READ_ROUND_PAUSE * rounds;
                tokio::time::sleep_until(deadline.min(Instant::now() + pause)).await;
            }
        }
    }

    /// Runs a call that must not be repeated blindly on the active server. It is sent to the
    /// next server only when the previous one refused the connection, so it was never received.
    pub(super) async fn write<T, F, Fut>(&self, call: F) -> Result<T, CallError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = Instant::now() + self.request_timeout;
        let mut attempts = 0;
        loop {
            let (index, result) = self.attempt(&call, deadline).await;
            let err = match result {
                Ok(value) => return Ok(value),
                Err(err) if err.is_unavailable() => err,
                Err(err) => return Err(err),
            };
            self.fail_over(index, &err);
            attempts += 1;
            if !err.never_sent() || attempts >= self.servers.len() {
                return Err(err);
            }
        }
    }

    /// One call on the active server, bounded by `deadline`. Returns the server's index.
    pub(super) async fn attempt<T, F, Fut>(
        &self,
        call: &F,
        deadline: Instant,
    ) -> (usize, Result<T, CallError>)
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let (index, client) = self.active();
        let result = match timeout_at(deadline, call(client)).await {
            Ok(result) => result.map_err(CallError::Etcd),
            Err(_) => Err(CallError::TimedOut(self.request_timeout)),
        };
        (index, result)
    }

    /// The active server's index and a handle to its client.
    pub(super) fn active(&self) -> (usize, Client) {
        let index = self.active.load(Ordering::Acquire);
        (index, self.servers[index].client.clone())
    }

    /// Makes the server after `failed` the active one, unless another call already moved on
    /// from `failed` (so concurrent failures move the active server only once).
    pub(super) fn fail_over(&self, failed: usize, reason: &dyn std::fmt::Display) {
        let next = (failed + 1) % self.servers.len();
        if self
            .active
            .compare_exchange(failed, next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            && next != failed
        {
            tracing::warn!(
                from = %self.servers[failed].url,
                to = %self.servers[next].url,
                %reason,
                "etcd server failed; switching to the next one"
            );
        }
    }

    /// The request timeout every call is bounded by.
    pub(super) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }
}

/// The TLS settings from the configured PEM files, if any are configured.
fn tls_options(config: &EtcdConfig) -> Result<Option<TlsOptions>> {
    let read = |path: &std::path::Path| {
        std::fs::read(path)
            .map_err(|err| StorageError::InvalidRequest(format!("read {}: {err}", path.display())))
    };
    let mut tls = TlsOptions::new();
    if let Some(ca) = &config.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
    }
    match (&config.cert_file, &config.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        (None, None) => {
            if config.ca_file.is_none() {
                return Ok(None);
            }
        }
        _ => {
            return Err(StorageError::InvalidRequest(
                "an etcd client certificate needs both a certificate and a key file".into(),
            ));
        }
    }
    Ok(Some(tls))
}
