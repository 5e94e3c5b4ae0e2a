//! Test support: a throwaway PKI, a server started in-process on a free port with a route
//! the test defines, and a small HTTPS client speaking HTTP/1.1 or HTTP/2.

#![allow(dead_code)] // each test binary uses a different part

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kapi_server::body::Body;
use kapi_server::{GenericApiServer, Route, ServerConfig, ServerError, TlsConfig};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

/// A certificate and its key, PEM.
#[derive(Clone)]
pub struct Identity {
    pub cert: String,
    pub key: String,
}

/// A CA with a serving certificate for localhost and client certificates: the admin
/// (`system:masters`), an ordinary user, and one from an unknown CA.
pub struct TestPki {
    pub ca: String,
    pub serving: Identity,
    pub admin: Identity,
    pub user: Identity,
    pub stranger: Identity,
}

impl TestPki {
    /// Generates everything.
    pub fn generate() -> TestPki {
        let (_, other_issuer) = ca("some other CA");
        let (ca_pem, issuer) = ca("kapi test CA");
        TestPki {
            ca: ca_pem,
            serving: leaf(
                &issuer,
                &["localhost", "127.0.0.1"],
                "kapi-apiserver",
                &[],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            admin: leaf(
                &issuer,
                &[],
                "kapi-admin",
                &["system:masters"],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
            user: leaf(
                &issuer,
                &[],
                "alice",
                &["dev"],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
            stranger: leaf(
                &other_issuer,
                &[],
                "mallory",
                &[],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
        }
    }

    /// The server's TLS material: the serving pair, with the CA as client CA.
    pub fn tls_config(&self) -> TlsConfig {
        TlsConfig {
            cert_chain: vec![der(&self.serving.cert)],
            private_key: PrivateKeyDer::from_pem_slice(self.serving.key.as_bytes()).unwrap(),
            client_ca: vec![der(&self.ca)],
        }
    }
}

/// The DER of a PEM certificate.
fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}

/// A self-signed CA.
fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A certificate issued by `issuer`.
fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    names: &[&str],
    common_name: &str,
    organizations: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> Identity {
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    for organization in organizations {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *organization);
    }
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    Identity {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

/// A server running in the background.
pub struct TestServer {
    pub addr: SocketAddr,
    pub pki: Arc<TestPki>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ServerError>>,
    started: Shared<BoxFuture<'static, ()>>,
}

/// Starts a server with `route` on a free port; `configure` adjusts the config and the server
/// before it runs. Returns once it answers requests.
pub async fn start(
    route: Route,
    configure: impl FnOnce(&mut ServerConfig),
    prepare: impl FnOnce(&mut GenericApiServer),
) -> TestServer {
    let pki = Arc::new(TestPki::generate());
    let mut config = ServerConfig::new(pki.tls_config());
    config.secure_port = kapi_testing::free_port();
    configure(&mut config);
    let addr = config.listen_address();
    let mut server = GenericApiServer::new(config, route).unwrap();
    prepare(&mut server);
    let (stop, stopped) = oneshot::channel::<()>();
    let listening = server.bind().await.unwrap();
    let started = listening.started().boxed().shared();
    let task = tokio::spawn(listening.serve(async {
        let _ = stopped.await;
    }));
    let server = TestServer {
        addr,
        pki,
        stop: Some(stop),
        task,
        started,
    };
    server.wait_serving().await;
    server
}

impl TestServer {
    /// A client presenting `identity` (anonymous with `None`) over `protocol`.
    pub fn client(&self, identity: Option<&Identity>, protocol: Protocol) -> Client {
        Client::new(self.addr, &self.pki.ca, identity, protocol)
    }

    /// A client with the admin certificate.
    pub fn admin(&self, protocol: Protocol) -> Client {
        self.client(Some(&self.pki.admin), protocol)
    }

    /// Polls until the server answers HTTP requests at all (for up to 30 s: the other tests
    /// of the binary share the machine's cores, and a loaded CI machine starts a server in
    /// more than the 2 s this once allowed).
    async fn wait_serving(&self) {
        let client = self.client(None, Protocol::Http1);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if client
                .try_send(Method::GET, "/healthz/ping", &[])
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the server did not start serving");
    }

    /// Resolves once the post-start hooks have finished
    /// ([`kapi_server::ListeningServer::started`]).
    pub fn started(&self) -> impl Future<Output = ()> + use<> {
        self.started.clone()
    }

    /// Starts the shutdown.
    pub fn begin_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Shuts down and returns how `serve` ended.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        self.begin_shutdown();
        self.task.await.unwrap()
    }

    /// Waits for `serve` to end without asking it to.
    pub async fn join(self) -> Result<(), ServerError> {
        self.task.await.unwrap()
    }
}

/// Which HTTP version a client speaks (chosen by ALPN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http1,
    Http2,
}

/// Both protocols, for tests that check each.
pub const PROTOCOLS: [Protocol; 2] = [Protocol::Http1, Protocol::Http2];

/// A response read completely.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub version: http::Version,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    /// The value of a header, or "" when absent.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// An HTTPS client opening one connection per request.
#[derive(Clone)]
pub struct Client {
    addr: SocketAddr,
    connector: TlsConnector,
    protocol: Protocol,
}

impl Client {
    /// A client trusting `ca_pem` and presenting `identity`.
    pub fn new(
        addr: SocketAddr,
        ca_pem: &str,
        identity: Option<&Identity>,
        protocol: Protocol,
    ) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der(ca_pem)).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let mut config = match identity {
            Some(identity) => builder
                .with_client_auth_cert(
                    vec![der(&identity.cert)],
                    PrivateKeyDer::from_pem_slice(identity.key.as_bytes()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![match protocol {
            Protocol::Http1 => b"http/1.1".to_vec(),
            Protocol::Http2 => b"h2".to_vec(),
        }];
        Client {
            addr,
            connector: TlsConnector::from(Arc::new(config)),
            protocol,
        }
    }

    /// Sends a request without a body and reads the whole answer.
    pub async fn send(&self, method: Method, path: &str) -> Answer {
        self.try_send(method, path, &[]).await.unwrap()
    }

    /// GET `path`.
    pub async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path).await
    }

    /// Sends a request with `headers` and reads the whole answer, or the error.
    pub async fn try_send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>> {
        let response = self.open(method, path, headers).await?;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await?.to_bytes();
        Ok(Answer {
            status: parts.status,
            version: parts.version,
            headers: parts.headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// Sends a request and returns the response with its body still streaming.
    pub async fn open(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Response<Incoming>, Box<dyn std::error::Error + Send + Sync>> {
        let tcp = TcpStream::connect(self.addr).await?;
        let tls = self
            .connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await?;
        let io = TokioIo::new(tls);
        let uri = format!("https://localhost:{}{path}", self.addr.port());
        let mut request = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Empty::<Bytes>::new())?;
        match self.protocol {
            Protocol::Http1 => {
                let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
                tokio::spawn(connection);
                Ok(sender.send_request(request).await?)
            }
            Protocol::Http2 => {
                let (mut sender, connection) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
                tokio::spawn(connection);
                Ok(sender.send_request(request).await?)
            }
        }
    }
}

/// A route from an async function of the request.
pub fn route<F, Fut>(handler: F) -> Route
where
    F: Fn(Request<Body>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    Route::new(tower::service_fn(move |request| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler(request).await) }
    }))
}

/// A 200 response with `text`.
pub fn ok(text: &'static str) -> Response<Body> {
    Response::new(kapi_server::body::full(text))
}
