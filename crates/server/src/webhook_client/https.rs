//! The HTTPS transport of webhook clients: a pooled hyper client whose TLS configuration is
//! built once per client, so calls reuse open connections (HTTP/1.1 keep-alive, or one
//! multiplexed HTTP/2 connection where ALPN agrees on `h2`) instead of connecting and
//! handshaking every time.

use std::error::Error as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::{ServiceResolver, trust, trusted_roots};

/// A pooled HTTPS client trusting one CA bundle and presenting one client certificate.
pub struct Https {
    /// The client, or why its TLS configuration could not be built (a broken CA bundle or
    /// client certificate), reported by every call as it was before pooling.
    client: Result<Client<Connector, Full<Bytes>>, String>,
}

/// The TLS settings of an [`Https`] client.
pub(crate) struct Tls<'a> {
    /// PEM certificates to trust; the system roots when empty.
    pub ca_bundle: &'a [u8],
    /// Whether the server's certificate is accepted unverified (an APIService's
    /// `insecureSkipTLSVerify`).
    pub insecure: bool,
    /// The name the server's certificate must have, when not the URL's host (the Service
    /// DNS name of an endpoint dialed by address).
    pub server_name: Option<&'a str>,
    /// A client certificate (PEM chain and key) to present.
    pub client_cert: Option<&'a (Vec<u8>, Vec<u8>)>,
    /// Whether HTTP/2 is offered (ALPN `h2`) besides HTTP/1.1.
    pub http2: bool,
}

/// How the connections of an [`Https`] client find their server.
pub(crate) enum Dial {
    /// At the URL's host and port.
    Direct,
    /// At the address of a Service's endpoint (the URL's host is the Service's DNS name,
    /// which the TLS handshake verifies), resolved for every new connection as upstream's
    /// dialer resolves it.
    Service {
        namespace: String,
        name: String,
        port: i32,
        resolver: Arc<dyn ServiceResolver>,
    },
}

impl Https {
    /// A client for URLs, trusting `ca_bundle` (the system roots when empty) and offering
    /// HTTP/2, as client-go's default transport does.
    pub fn new(ca_bundle: &[u8]) -> Https {
        let tls = Tls {
            ca_bundle,
            insecure: false,
            server_name: None,
            client_cert: None,
            http2: true,
        };
        Https::build(&tls, Dial::Direct)
    }

    /// A client with `tls`, connecting as `dial` says.
    pub(super) fn build(tls: &Tls<'_>, dial: Dial) -> Https {
        Https {
            client: pooled_client(tls, dial),
        }
    }

    /// GETs an `https://` URL (a JSON document such as an OpenID configuration or a key set)
    /// within `timeout`; the response body.
    pub async fn get(&self, url: &str, timeout: Duration) -> Result<Vec<u8>, String> {
        let sent = self.send(http::Method::GET, url, None, Vec::new());
        tokio::time::timeout(timeout, sent)
            .await
            .map_err(|_| format!("Get {url:?}: context deadline exceeded"))?
    }

    /// Sends one request with a JSON body (and `token` as a bearer token) to an `https://`
    /// URL; the response body, or an error in Go's client's words.
    pub(super) async fn send(
        &self,
        method: http::Method,
        url: &str,
        token: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let verb = if method == http::Method::GET {
            "Get"
        } else {
            "Post"
        };
        if !url.starts_with("https://") {
            return Err(format!("{verb} {url:?}: unsupported protocol scheme"));
        }
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let failed = |err: &dyn std::fmt::Display| format!("{verb} {url:?}: {err}");
        let mut request = http::Request::builder()
            .method(method)
            .uri(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json");
        if let Some(token) = token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| failed(&e))?;
        let response = client
            .request(request)
            .await
            .map_err(|err| request_error(verb, url, &err))?;
        let status = response.status();
        let text_response = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|content_type| content_type.starts_with("text/"));
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        if !status.is_success() {
            return Err(unsuccessful(status.as_u16(), &body, text_response));
        }
        Ok(body.to_vec())
    }
}

/// A pooled hyper client of request bodies `B` with `tls`, connecting as `dial` says.
pub(crate) fn pooled_client<B>(tls: &Tls<'_>, dial: Dial) -> Result<Client<Connector, B>, String>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    let config = client_config(tls)?;
    let connector = Connector {
        tls: TlsConnector::from(Arc::new(config)),
        dial: Arc::new(dial),
        server_name: tls.server_name.map(str::to_string),
    };
    Ok(Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .build(connector))
}

/// What a request that got no response reports: a Service that could not be resolved in
/// the resolver's words (as when it was resolved before the call), anything else as Go's
/// client words it, `Post "url": <cause>`, the cause being the connection's or hyper's
/// error rather than the pool's wrapper ("client error (Connect)").
fn request_error(verb: &str, url: &str, err: &hyper_util::client::legacy::Error) -> String {
    let source = err.source();
    if let Some(ConnectError::Unresolved(message)) = source.and_then(|s| s.downcast_ref()) {
        return message.clone();
    }
    let cause = source.map_or_else(|| err.to_string(), ToString::to_string);
    format!("{verb} {url:?}: {cause}")
}

/// What client-go makes of a response that is not a success: the message of a Status
/// body, or its generic message for the code (naming the body of a text response, else
/// "unknown").
fn unsuccessful(code: u16, body: &[u8], text_response: bool) -> String {
    let status: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(status) = status.filter(|s| s["kind"] == "Status")
        && let Some(message) = status["message"].as_str().filter(|m| !m.is_empty())
    {
        return message.to_string();
    }
    const MAX: usize = 1024;
    let server_message = match text_response {
        true => String::from_utf8_lossy(&body[..body.len().min(MAX)])
            .trim()
            .to_string(),
        false => "unknown".to_string(),
    };
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => "the server does not allow access to the requested resource".into(),
        404 => "the server could not find the requested resource".into(),
        409 => "the server reported a conflict".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        429 => "the server has received too many requests and has asked us to try again later"
            .into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        code if code >= 500 => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            kapi_apimachinery::quote(&server_message)
        ),
        code => format!("the server responded with the status code {code} but did not return more information"),
    }
}

/// Opens the pool's connections: TCP to the URL's host (or to a Service's endpoint), then
/// TLS verifying the URL's host.
#[derive(Clone)]
pub(crate) struct Connector {
    tls: TlsConnector,
    dial: Arc<Dial>,
    /// The name verified instead of the URL's host, if any.
    server_name: Option<String>,
}

/// Why a connection could not be opened; each shows the underlying error alone, as the
/// client's messages did before pooling.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The Service could not be resolved to an endpoint (the resolver's message).
    #[error("{0}")]
    Unresolved(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    ServerName(#[from] rustls::pki_types::InvalidDnsNameError),
}

/// A pooled connection.
pub(crate) type Stream = TokioIo<EofAsClose<TlsStream<TcpStream>>>;

impl tower::Service<Uri> for Connector {
    type Response = Stream;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

impl Connector {
    /// A new connection to the server of `uri`.
    async fn connect(self, uri: Uri) -> Result<Stream, ConnectError> {
        let host = uri.host().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(443);
        let tcp = match &*self.dial {
            Dial::Direct => TcpStream::connect((host, port)).await?,
            Dial::Service {
                namespace,
                name,
                port,
                resolver,
            } => {
                let endpoint = resolver.resolve(namespace, name, *port).await;
                let (ip, port) = endpoint
                    .and_then(|url| endpoint_address(&url))
                    .map_err(ConnectError::Unresolved)?;
                TcpStream::connect((ip, port)).await?
            }
        };
        // Requests are small and answered at once: send them without Nagle's delay.
        let _ = tcp.set_nodelay(true);
        let name = self.server_name.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_string())?;
        let tls = self.tls.connect(server_name, tcp).await?;
        Ok(TokioIo::new(EofAsClose(tls)))
    }
}

/// The host and port of a resolved endpoint's `https://host:port`.
fn endpoint_address(url: &str) -> Result<(String, u16), String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("the endpoint {url:?} is not an https:// URL"))?;
    split_host_port(&rest[..rest.find('/').unwrap_or(rest.len())])
}

fn split_host_port(authority: &str) -> Result<(String, u16), String> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']').ok_or("invalid IPv6 host")?;
            (host, rest.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().map_err(|_| format!("invalid port {port:?}"))?,
        None => 443,
    };
    Ok((host.to_string(), port))
}

/// A TLS stream whose peer may close the connection without TLS's close_notify, as many
/// simple webhook servers do after a response delimited by the close: like Go's TLS client,
/// such an end of the stream is read as the end of the data.
pub(crate) struct EofAsClose<S>(S);

impl Connection for EofAsClose<TlsStream<TcpStream>> {
    /// The TCP connection's addresses, and whether ALPN chose HTTP/2 (the pool then
    /// multiplexes requests over this one connection).
    fn connected(&self) -> Connected {
        let (tcp, session) = self.0.get_ref();
        let connected = tcp.connected();
        match session.alpn_protocol() {
            Some(b"h2") => connected.negotiated_h2(),
            _ => connected,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EofAsClose<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.0).poll_read(cx, buf) {
            Poll::Ready(Err(err)) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for EofAsClose<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// TLS trusting the CA bundle's certificates, or the system's roots without one,
/// presenting the client certificate if any, offering HTTP/2 if asked.
fn client_config(tls: &Tls<'_>) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?;
    let builder = if tls.insecure {
        let verifier = trust::Unverified::new();
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
    } else if tls.ca_bundle.is_empty() {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        builder.with_root_certificates(roots)
    } else {
        let store = trusted_roots(tls.ca_bundle)?;
        let certs = CertificateDer::pem_slice_iter(tls.ca_bundle).filter_map(Result::ok);
        let verifier = trust::TrustedRoots::new(store, certs.collect())?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
    };
    let mut config = match tls.client_cert {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => {
            let chain = CertificateDer::pem_slice_iter(chain)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| format!("client certificate: {err}"))?;
            let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key)
                .map_err(|err| format!("client key: {err}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|err| format!("client certificate: {err}"))?
        }
    };
    config.alpn_protocols = match tls.http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    };
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports_split_like_urls() {
        assert_eq!(split_host_port("a.b:8443").unwrap(), ("a.b".into(), 8443));
        assert_eq!(split_host_port("a.b").unwrap(), ("a.b".into(), 443));
        assert_eq!(split_host_port("[::1]:9443").unwrap(), ("::1".into(), 9443));
        assert!(split_host_port("a:b").is_err());
        assert_eq!(
            endpoint_address("https://10.0.0.5:8443").unwrap(),
            ("10.0.0.5".into(), 8443)
        );
    }

    #[test]
    fn client_certificates_are_presented() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["kapi".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let client_cert = (cert.pem().into_bytes(), key.serialize_pem().into_bytes());
        let tls = Tls {
            ca_bundle: &client_cert.0,
            insecure: false,
            server_name: None,
            client_cert: Some(&client_cert),
            http2: false,
        };
        let config = client_config(&tls).unwrap();
        assert!(config.client_auth_cert_resolver.has_certs());
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        let broken = (client_cert.0.clone(), b"not a key".to_vec());
        let tls = Tls {
            client_cert: Some(&broken),
            ..tls
        };
        assert!(client_config(&tls).unwrap_err().starts_with("client key: "));
    }

    #[test]
    fn unsuccessful_responses_read_as_client_go_reads_them() {
        assert_eq!(
            unsuccessful(500, br#"{"x": "err"}"#, false),
            r#"an error on the server ("unknown") has prevented the request from succeeding"#
        );
        assert_eq!(
            unsuccessful(500, b"boom\n", true),
            r#"an error on the server ("boom") has prevented the request from succeeding"#
        );
        let status = br#"{"kind": "Status", "apiVersion": "v1", "message": "my status msg"}"#;
        assert_eq!(unsuccessful(500, status, false), "my status msg");
        assert_eq!(
            unsuccessful(418, b"", false),
            "the server responded with the status code 418 but did not return more information"
        );
    }

    /// A client whose CA bundle is broken reports it on every call.
    #[tokio::test]
    async fn a_broken_ca_bundle_fails_each_call() {
        let https = Https::new(b"not a certificate");
        let err = https
            .get("https://127.0.0.1:1/", Duration::from_secs(1))
            .await;
        assert_eq!(
            err.unwrap_err(),
            "unable to load root certificates: unable to parse bytes as PEM block"
        );
        let err = https
            .get("http://127.0.0.1:1/", Duration::from_secs(1))
            .await;
        assert_eq!(
            err.unwrap_err(),
            r#"Get "http://127.0.0.1:1/": unsupported protocol scheme"#
        );
    }
}
