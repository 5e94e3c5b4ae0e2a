//! Secure serving: TLS (rustls with ring) with ALPN `h2` and `http/1.1`, one hyper connection
//! per accepted socket, and graceful draining.
//!
//! Client certificates are requested (with the client CA's names as hints) but neither
//! required nor verified during the handshake, as kube-apiserver does: the chain is verified
//! by the x509 authenticator, so a bad certificate is a 401 and no certificate is anonymous.
//! Each request carries its connection's [`ConnectionInfo`] as an extension.
//!
//! Connections that stay idle, or whose response is not sent by its deadline, are closed
//! (see [`activity`]); a failing accept (out of file descriptors) backs off and is logged at
//! a bounded rate, as Go's server does.

mod activity;

pub use activity::ResponseDeadline;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use rustls::server::ServerConfig;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::authn::UserInfo;
use crate::authn::x509::{ClientCaError, client_verifier};
use crate::body::{Body, BoxError, with_guard};
use crate::server::{Route, call_route};
use activity::{Activity, Expiry};

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection closed for idleness may take to finish before it is dropped (a
/// client that never sent HTTP/2's preface never answers a GOAWAY).
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// The first and the longest wait after a failed accept (Go's server: 5 ms doubling to 1 s).
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(1));
/// At most one accept-error log line this often; the rest are counted in the next one.
const ACCEPT_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// Concurrent HTTP/2 streams per connection, as kube-apiserver sets it.
const MAX_CONCURRENT_STREAMS: u32 = 100;
/// HTTP/2 flow-control window per stream and frame size limit (upstream's 256 KiB).
const STREAM_WINDOW: u32 = 256 * 1024;
/// The request headers an HTTP/2 request may carry (upstream's `MaxHeaderBytes`, 1 MiB;
/// h2's default of 16 KiB refused kubectl with a few hundred `--as-group`).
const MAX_HEADER_LIST_SIZE: u32 = 1024 * 1024;
/// The header lines an HTTP/1.1 request may carry. Go counts only bytes (1 MiB); hyper counts
/// lines too (100 by default, which refused kubectl with a hundred `--as-group`), and parses
/// into uninitialized space for this many, so a larger count costs an allocation, not work.
/// Bytes stay bounded by hyper's read buffer (about 400 KiB).
const MAX_HTTP1_HEADERS: usize = 1024;

/// TLS material could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Pem {
        path: String,
        source: rustls_pki_types::pem::Error,
    },
    #[error("{path} holds no certificate")]
    NoCertificate { path: String },
    #[error("invalid serving certificate or key: {0}")]
    Config(#[from] rustls::Error),
    #[error(transparent)]
    ClientCa(#[from] ClientCaError),
}

/// The serving certificate chain and key, and the client CA (empty: no client certificates).
#[derive(Debug)]
pub struct TlsConfig {
    pub cert_chain: Vec<CertificateDer<'static>>,
    pub private_key: PrivateKeyDer<'static>,
    pub client_ca: Vec<CertificateDer<'static>>,
}

impl TlsConfig {
    /// Loads PEM files: the serving chain, its key, and optionally the client CA bundle.
    pub fn from_pem_files(
        cert_file: &Path,
        key_file: &Path,
        client_ca_file: Option<&Path>,
    ) -> Result<Self, TlsError> {
        let private_key =
            PrivateKeyDer::from_pem_slice(&read(key_file)?).map_err(|source| TlsError::Pem {
                path: key_file.display().to_string(),
                source,
            })?;
        let client_ca = match client_ca_file {
            Some(path) => certificates(path)?,
            None => Vec::new(),
        };
        Ok(TlsConfig {
            cert_chain: certificates(cert_file)?,
            private_key,
            client_ca,
        })
    }

    /// The rustls configuration: TLS 1.2 and 1.3, ALPN h2 then http/1.1, client
    /// certificates requested when a client CA is set. The handshake names the client CA
    /// and `proxy_ca` (the front proxies' CA) as the issuers it accepts, as upstream's union
    /// of both: clients pick their certificate by those names.
    pub(crate) fn server_config(
        &self,
        proxy_ca: &[CertificateDer<'static>],
    ) -> Result<Arc<ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::ALL_VERSIONS)?;
        let hinted: Vec<CertificateDer<'static>> =
            self.client_ca.iter().chain(proxy_ca).cloned().collect();
        let builder = if hinted.is_empty() {
            builder.with_no_client_auth()
        } else {
            let verifier = RequestClientCert(client_verifier(&hinted)?);
            builder.with_client_cert_verifier(Arc::new(verifier))
        };
        let mut config =
            builder.with_single_cert(self.cert_chain.clone(), self.private_key.clone_key())?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Reads a whole file.
fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Every certificate of a PEM file (a CA bundle, a chain); at least one.
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            path: path.display().to_string(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.display().to_string(),
        });
    }
    Ok(certs)
}

/// Asks for a client certificate and accepts whatever is presented (Go's
/// `tls.RequestClientCert`); the handshake signature is still checked, so the client proves
/// it holds the certificate's key. Chains are verified per request by the authenticator.
#[derive(Debug)]
struct RequestClientCert(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// What a request knows about its connection: the peer's address and the certificate chain
/// it presented (unverified; see the module documentation). A request extension.
#[derive(Clone, Debug)]
pub struct ConnectionInfo(Arc<Connection>);

#[derive(Debug)]
struct Connection {
    remote_addr: SocketAddr,
    peer_certificates: Vec<CertificateDer<'static>>,
    close: CancellationToken,
    /// The user the peer certificate was verified as, and until when (Unix seconds).
    verified_user: OnceLock<(UserInfo, u64)>,
    /// Whether the peer certificate is a trusted front proxy's: until when, or why not.
    front_proxy: OnceLock<Result<u64, String>>,
    /// The user of an in-process loopback connection (see [`crate::loopback`]).
    loopback_user: Option<UserInfo>,
}

impl ConnectionInfo {
    /// A new connection's information.
    pub(crate) fn new(
        remote_addr: SocketAddr,
        peer_certificates: Vec<CertificateDer<'static>>,
        loopback_user: Option<UserInfo>,
    ) -> ConnectionInfo {
        ConnectionInfo(Arc::new(Connection {
            remote_addr,
            peer_certificates,
            close: CancellationToken::new(),
            verified_user: OnceLock::new(),
            front_proxy: OnceLock::new(),
            loopback_user,
        }))
    }

    /// The client's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.0.remote_addr
    }

    /// The certificate chain the client presented, end entity first; empty without one.
    pub fn peer_certificates(&self) -> &[CertificateDer<'static>] {
        &self.0.peer_certificates
    }

    /// The user the connection's client certificate was verified as, cached for the
    /// connection's lifetime (bounded by the certificate's expiry) so that the chain is
    /// verified once per connection, not once per request.
    pub fn verified_user(&self) -> &OnceLock<(UserInfo, u64)> {
        &self.0.verified_user
    }

    /// Whether the connection's client certificate was verified as a trusted front proxy's
    /// (until when, Unix seconds) or refused (why), cached as [`verified_user`](Self::verified_user)
    /// is: a front proxy's requests, and every other client's, verify the chain once per
    /// connection.
    pub fn front_proxy(&self) -> &OnceLock<Result<u64, String>> {
        &self.0.front_proxy
    }

    /// The user an in-process loopback connection was opened for; `None` for a connection
    /// from the network.
    pub(crate) fn loopback_user(&self) -> Option<&UserInfo> {
        self.0.loopback_user.as_ref()
    }

    /// Closes the connection gracefully once its requests in progress are answered (an
    /// HTTP/2 GOAWAY, or no keep-alive for HTTP/1.1).
    pub fn close_after_response(&self) {
        self.0.close.cancel();
    }
}

/// Accepts connections on `listener` until `drain` is cancelled, then returns the tasks of
/// the connections still open (they are draining by then).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    service: Route,
    drain: CancellationToken,
) -> JoinSet<()> {
    let acceptor = TlsAcceptor::from(tls);
    let mut connections = JoinSet::new();
    let mut failures = AcceptFailures::default();
    loop {
        tokio::select! {
            _ = drain.cancelled() => return connections,
            accepted = listener.accept() => match accepted {
                Ok((tcp, remote_addr)) => {
                    failures.reset();
                    let conn = serve_connection(tcp, remote_addr, acceptor.clone(), service.clone(), drain.clone());
                    connections.spawn(conn);
                }
                Err(err) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    let delay = failures.record(&err);
                    tokio::time::sleep(delay).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Failed accepts in a row: the backoff before the next, and a log bounded in rate.
#[derive(Default)]
struct AcceptFailures {
    delay: Duration,
    last_logged: Option<tokio::time::Instant>,
    unlogged: u64,
}

impl AcceptFailures {
    /// An accept succeeded: the next failure starts the backoff again.
    fn reset(&mut self) {
        self.delay = Duration::ZERO;
    }

    /// Records a failure (logging it unless one was logged lately); the wait before the
    /// next accept.
    fn record(&mut self, err: &std::io::Error) -> Duration {
        self.delay = (self.delay * 2).clamp(ACCEPT_BACKOFF.0, ACCEPT_BACKOFF.1);
        let now = tokio::time::Instant::now();
        if self
            .last_logged
            .is_some_and(|logged| now.duration_since(logged) < ACCEPT_LOG_INTERVAL)
        {
            self.unlogged += 1;
        } else {
            let suppressed = std::mem::take(&mut self.unlogged);
            tracing::warn!(%err, retry_in = ?self.delay, suppressed, "accepting a connection failed");
            self.last_logged = Some(now);
        }
        self.delay
    }
}

/// Waits for the draining connections to finish, at most `timeout`, then drops the rest.
pub(crate) async fn wait_for_connections(mut connections: JoinSet<()>, timeout: Duration) {
    let all_done = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(timeout, all_done).await.is_err() {
        tracing::warn!(
            remaining = connections.len(),
            "closing connections still open after the shutdown timeout"
        );
        connections.shutdown().await;
    }
}

/// Serves one connection: the TLS handshake, then HTTP until the client leaves, the server
/// drains, or a handler asked to close the connection.
async fn serve_connection(
    tcp: TcpStream,
    remote_addr: SocketAddr,
    acceptor: TlsAcceptor,
    service: Route,
    drain: CancellationToken,
) {
    let _ = tcp.set_nodelay(true);
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%remote_addr, %err, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%remote_addr, "TLS handshake timed out");
            return;
        }
    };
    let (_, session) = tls.get_ref();
    let h2 = session.alpn_protocol().map(|alpn| alpn == b"h2");
    let peer_certificates = session
        .peer_certificates()
        .map(<[_]>::to_vec)
        .unwrap_or_default();
    let info = ConnectionInfo::new(remote_addr, peer_certificates, None);
    serve_http(TokioIo::new(tls), h2, info, service, drain).await;
}

/// Serves HTTP on one established connection (`h2`: HTTP/2 or HTTP/1.1 as negotiated, `None`
/// for whichever the client speaks) until the client leaves, the server drains, or a handler
/// asked to close it. Each request carries `info`.
async fn serve_http<I>(
    io: I,
    h2: Option<bool>,
    info: ConnectionInfo,
    service: Route,
    drain: CancellationToken,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let builder = http_builder(h2);
    let (remote_addr, close) = (info.remote_addr(), info.0.close.clone());
    let activity = Arc::new(Activity::default());
    let requests = activity.clone();
    let handler = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let mut request = request.map(boxed_body);
        let (in_progress, deadline) = requests.begin();
        request.extensions_mut().insert(info.clone());
        request.extensions_mut().insert(deadline);
        let response = call_route(service.clone(), request);
        async move {
            let response = response.await?;
            Ok::<_, Infallible>(response.map(|body| with_guard(body, in_progress)))
        }
    });
    let connection = builder.serve_connection_with_upgrades(io, handler);
    tokio::pin!(connection);
    let handshaken = tokio::time::Instant::now();
    let expiry = tokio::select! {
        result = connection.as_mut() => return log_connection_end(remote_addr, result),
        _ = drain.cancelled() => None,
        _ = close.cancelled() => None,
        expiry = activity.expired(handshaken) => Some(expiry),
    };
    match expiry {
        None => {
            // Requests in progress finish (the server bounds its drain as a whole).
            connection.as_mut().graceful_shutdown();
            log_connection_end(remote_addr, connection.await);
        }
        Some(Expiry::Idle) => {
            tracing::debug!(%remote_addr, "closing an idle connection");
            connection.as_mut().graceful_shutdown();
            if tokio::time::timeout(CLOSE_GRACE, connection).await.is_err() {
                tracing::debug!(%remote_addr, "dropped an idle connection that did not close");
            }
        }
        Some(Expiry::Overdue) => {
            // Dropping the connection ends its responses (and frees what they hold).
            tracing::info!(%remote_addr, "closing a connection whose response was not sent by its deadline");
        }
    }
}

/// A request body from hyper as the chain's one body type.
fn boxed_body(body: Incoming) -> Body {
    body.map_err(BoxError::from).boxed_unsync()
}

/// The HTTP settings of a connection: HTTP/2 or HTTP/1.1 as ALPN chose (`h2`), or whichever
/// the client speaks when it used no ALPN.
fn http_builder(h2: Option<bool>) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(activity::READ_HEADER_TIMEOUT)
        .max_headers(MAX_HTTP1_HEADERS);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(STREAM_WINDOW * MAX_CONCURRENT_STREAMS)
        .max_frame_size(STREAM_WINDOW)
        .max_header_list_size(MAX_HEADER_LIST_SIZE);
    match h2 {
        Some(true) => builder.http2_only(),
        Some(false) => builder.http1_only(),
        None => builder,
    }
}

/// Logs why a connection ended, when it was an error.
fn log_connection_end(
    remote_addr: SocketAddr,
    result: Result<(), Box<dyn std::error::Error + Send + Sync>>,
) {
    if let Err(err) = result {
        tracing::debug!(%remote_addr, %err, "connection ended with an error");
    }
}
