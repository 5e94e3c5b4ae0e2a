//! The client side of webhooks (admission webhooks, conversion webhooks, ...): a JSON body
//! POSTed over HTTPS to a `clientConfig` (a URL, or a Service resolved to one of its
//! endpoints), verified with its `caBundle` (the system roots without one), within a timeout.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Full};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

mod trust;

/// Resolves a Service reference (`clientConfig.service`) to `https://host:port`.
#[async_trait::async_trait]
pub trait ServiceResolver: Send + Sync {
    async fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String>;
}

/// Where a webhook is.
enum Target {
    Url(String),
    Service {
        namespace: String,
        name: String,
        path: String,
        port: i32,
    },
}

/// A webhook's `clientConfig`, ready to call.
pub struct WebhookClient {
    target: Target,
    /// PEM certificates from `caBundle`; the system roots when empty.
    ca_bundle: Vec<u8>,
    /// How kapi proves itself to the webhook (a webhook kubeconfig's user).
    credentials: Credentials,
    resolver: Arc<dyn ServiceResolver>,
}

/// The credentials of a webhook kubeconfig's user: a client certificate (PEM chain and key)
/// and/or a bearer token.
#[derive(Default)]
struct Credentials {
    client_cert: Option<(Vec<u8>, Vec<u8>)>,
    token: Option<String>,
}

impl WebhookClient {
    /// The client of `client_config` (`url`, or `service` with namespace, name, path and
    /// port (443 by default), and `caBundle`); Services are resolved with `resolver`.
    pub fn new(client_config: &Value, resolver: Arc<dyn ServiceResolver>) -> WebhookClient {
        let target = match client_config["url"].as_str() {
            Some(url) => Target::Url(url.to_string()),
            None => {
                let service = &client_config["service"];
                let text = |key: &str| service[key].as_str().unwrap_or_default().to_string();
                Target::Service {
                    namespace: text("namespace"),
                    name: text("name"),
                    path: text("path"),
                    port: service["port"].as_i64().unwrap_or(443) as i32,
                }
            }
        };
        let ca_bundle = client_config["caBundle"]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        WebhookClient {
            target,
            ca_bundle,
            credentials: Credentials::default(),
            resolver,
        }
    }

    /// POSTs `body` (JSON) and returns the response body; an error in Go's client's words
    /// (`Post "url": ...`, `context deadline exceeded` after `timeout`).
    pub async fn post(&self, body: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, String> {
        let url = self.url().await?;
        self.post_to(url, body, timeout).await
    }

    /// POSTs `body` as [`post`](Self::post) does, telling the webhook its deadline in the
    /// `timeout` query parameter, as client-go's requests with a timeout do (whole seconds,
    /// rounded up: `?timeout=10s`).
    pub async fn post_with_deadline(
        &self,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, String> {
        let url = self.url().await?;
        let seconds =
            Duration::from_secs(timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0));
        let separator = if url.contains('?') { '&' } else { '?' };
        let url = format!(
            "{url}{separator}timeout={}",
            kapi_apimachinery::goduration::format(seconds)
        );
        self.post_to(url, body, timeout).await
    }

    async fn post_to(
        &self,
        url: String,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, String> {
        let tls = Tls {
            ca_bundle: &self.ca_bundle,
            credentials: &self.credentials,
        };
        let sent = send(http::Method::POST, &url, &tls, body);
        tokio::time::timeout(timeout, sent)
            .await
            .map_err(|_| format!("Post {url:?}: context deadline exceeded"))?
    }

    /// The URL to call, resolving a Service reference.
    async fn url(&self) -> Result<String, String> {
        match &self.target {
            Target::Url(url) => Ok(url.clone()),
            Target::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let base = self.resolver.resolve(namespace, name, *port).await?;
                Ok(format!("{base}{path}"))
            }
        }
    }
}

/// How a request is secured: the CA to trust and the credentials to present.
struct Tls<'a> {
    ca_bundle: &'a [u8],
    credentials: &'a Credentials,
}

/// GETs an `https://` URL (a JSON document such as an OpenID configuration or a key set),
/// trusting `ca_bundle` (the system roots when empty); the response body.
pub async fn get(url: &str, ca_bundle: &[u8], timeout: Duration) -> Result<Vec<u8>, String> {
    let credentials = Credentials::default();
    let tls = Tls {
        ca_bundle,
        credentials: &credentials,
    };
    tokio::time::timeout(timeout, send(http::Method::GET, url, &tls, Vec::new()))
        .await
        .map_err(|_| format!("Get {url:?}: context deadline exceeded"))?
}

/// Sends one request with a JSON body to an `https://` URL; errors in Go's client's words.
async fn send(
    method: http::Method,
    url: &str,
    tls: &Tls<'_>,
    body: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let verb = if method == http::Method::GET {
        "Get"
    } else {
        "Post"
    };
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("{verb} {url:?}: unsupported protocol scheme"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let (host, port) = split_host_port(authority)?;
    let failed = |err: &dyn std::fmt::Display| format!("{verb} {url:?}: {err}");
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| failed(&e))?;
    let server_name = ServerName::try_from(host.clone()).map_err(|e| failed(&e))?;
    let config = client_config(tls.ca_bundle, tls.credentials.client_cert.as_ref())?;
    let token = tls.credentials.token.as_ref();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| failed(&e))?;
    let io = hyper_util::rt::TokioIo::new(EofAsClose(tls));
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| failed(&e))?;
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json");
    if let Some(token) = token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|e| failed(&e))?;
    let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
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

/// A TLS stream whose peer may close the connection without TLS's close_notify, as many
/// simple webhook servers do after a response delimited by the close: like Go's TLS client,
/// such an end of the stream is read as the end of the data.
struct EofAsClose<S>(S);

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EofAsClose<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match std::pin::Pin::new(&mut self.0).poll_read(cx, buf) {
            std::task::Poll::Ready(Err(err)) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
                std::task::Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for EofAsClose<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
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

/// The certificates of a PEM `ca_bundle`, as client-go loads CA data: certificates that do
/// not parse are skipped, but at least one must; the error is client-go's message.
pub fn trusted_roots(ca_bundle: &[u8]) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let mut first_error = None;
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let added = cert
            .map_err(|_| "unable to parse bytes as PEM block".to_string())
            .and_then(|cert| {
                roots
                    .add(cert)
                    .map_err(|err| format!("failed to parse certificate: {err}"))
            });
        if let Err(err) = added {
            first_error.get_or_insert(err);
        }
    }
    if !roots.is_empty() {
        return Ok(roots);
    }
    let has_block = ca_bundle.windows(11).any(|w| w == b"-----BEGIN ");
    let reason = match first_error {
        Some(err) => err,
        None if has_block => "no valid certificate authority data seen".to_string(),
        None => "unable to parse bytes as PEM block".to_string(),
    };
    Err(format!("unable to load root certificates: {reason}"))
}

/// Refuses Service references: a kubeconfig names URLs only.
struct NoServices;

#[async_trait::async_trait]
impl ServiceResolver for NoServices {
    async fn resolve(&self, _: &str, _: &str, _: i32) -> Result<String, String> {
        Err("a webhook of a kubeconfig is addressed by URL".into())
    }
}

impl WebhookClient {
    /// The client of a webhook kubeconfig (`--authorization-webhook-config-file`,
    /// `--authentication-token-webhook-config-file`): its first cluster's server and CA (data
    /// or file), and its first user's client certificate and token.
    pub fn from_kubeconfig(path: &std::path::Path) -> Result<WebhookClient, String> {
        let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
        let config: Value = serde_yaml_ng::from_str(&text).map_err(|err| err.to_string())?;
        let cluster = &config["clusters"][0]["cluster"];
        let server = cluster["server"].as_str().ok_or("no cluster server")?;
        let credentials = credentials(&config["users"][0]["user"])?;
        let ca_bundle = match (
            cluster["certificate-authority-data"].as_str(),
            cluster["certificate-authority"].as_str(),
        ) {
            (Some(data), _) => data.to_string(),
            (None, Some(file)) => {
                use base64::Engine;
                let pem = std::fs::read(file).map_err(|err| format!("{file}: {err}"))?;
                base64::engine::general_purpose::STANDARD.encode(pem)
            }
            (None, None) => String::new(),
        };
        let client_config = serde_json::json!({"url": server, "caBundle": ca_bundle});
        let mut client = WebhookClient::new(&client_config, Arc::new(NoServices));
        client.credentials = credentials;
        Ok(client)
    }
}

/// The credentials of a kubeconfig user: a client certificate and key (data or files) and a
/// token (or token file). Other ways to authenticate (exec plugins, auth providers, basic
/// auth) are refused.
fn credentials(user: &Value) -> Result<Credentials, String> {
    const KNOWN: [&str; 6] = [
        "client-certificate",
        "client-certificate-data",
        "client-key",
        "client-key-data",
        "token",
        "tokenFile",
    ];
    if let Some(other) = user
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !KNOWN.contains(&k.as_str()))
    {
        return Err(format!(
            "the webhook kubeconfig's user field {other:?} is not supported by kapi"
        ));
    }
    let pem = |data: &str, file: &str| -> Result<Option<Vec<u8>>, String> {
        match (user[data].as_str(), user[file].as_str()) {
            (Some(data), _) => base64::engine::general_purpose::STANDARD
                .decode(data)
                .map(Some)
                .map_err(|err| format!("{data}: {err}")),
            (None, Some(path)) => std::fs::read(path)
                .map(Some)
                .map_err(|err| format!("{path}: {err}")),
            (None, None) => Ok(None),
        }
    };
    let client_cert = match (
        pem("client-certificate-data", "client-certificate")?,
        pem("client-key-data", "client-key")?,
    ) {
        (Some(chain), Some(key)) => Some((chain, key)),
        (None, None) => None,
        _ => return Err("a client certificate needs both its certificate and its key".into()),
    };
    let token = match (user["token"].as_str(), user["tokenFile"].as_str()) {
        (Some(token), _) => Some(token.to_string()),
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .map_err(|err| format!("{path}: {err}"))?
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    Ok(Credentials { client_cert, token })
}

/// TLS trusting `ca_bundle`'s certificates, or the system's roots without one, presenting
/// `client_cert` (PEM chain and key) if given.
fn client_config(
    ca_bundle: &[u8],
    client_cert: Option<&(Vec<u8>, Vec<u8>)>,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?;
    let builder = if ca_bundle.is_empty() {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        builder.with_root_certificates(roots)
    } else {
        let store = trusted_roots(ca_bundle)?;
        let certs = CertificateDer::pem_slice_iter(ca_bundle).filter_map(Result::ok);
        let verifier = trust::TrustedRoots::new(store, certs.collect())?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
    };
    let Some((chain, key)) = client_cert else {
        return Ok(builder.with_no_client_auth());
    };
    let chain = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("client certificate: {err}"))?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key)
        .map_err(|err| format!("client key: {err}"))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|err| format!("client certificate: {err}"))
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
    }

    #[test]
    fn kubeconfig_users_give_client_certificates_and_tokens() {
        use base64::Engine as _;
        let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["kapi".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let user = serde_json::json!({"client-certificate-data": encode(&cert.pem()),
            "client-key-data": encode(&key.serialize_pem()), "token": "secret"});
        let found = credentials(&user).unwrap();
        assert_eq!(found.token.as_deref(), Some("secret"));
        let (chain, key) = found.client_cert.as_ref().unwrap();
        assert!(client_config(&[], Some(&(chain.clone(), key.clone()))).is_ok());
        let half = serde_json::json!({"client-certificate-data": encode(&cert.pem())});
        assert!(credentials(&half).is_err());
        let exec = serde_json::json!({"exec": {"command": "get-token"}});
        assert_eq!(
            credentials(&exec).err().unwrap(),
            "the webhook kubeconfig's user field \"exec\" is not supported by kapi"
        );
    }

    #[test]
    fn ca_bundles_load_as_client_go_loads_them() {
        let ca = rcgen::generate_simple_self_signed(vec!["ca".into()]).unwrap();
        let pem = ca.cert.pem();
        assert_eq!(trusted_roots(pem.as_bytes()).unwrap().len(), 1);
        let broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        // A bad certificate beside a good one is skipped.
        assert_eq!(
            trusted_roots(format!("{broken}{pem}").as_bytes())
                .unwrap()
                .len(),
            1
        );
        let err = trusted_roots(b"not a certificate").unwrap_err();
        assert_eq!(
            err,
            "unable to load root certificates: unable to parse bytes as PEM block"
        );
        let err = trusted_roots(broken.as_bytes()).unwrap_err();
        assert!(
            err.starts_with("unable to load root certificates: failed to parse certificate: "),
            "{err}"
        );
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let err = trusted_roots(key.as_bytes()).unwrap_err();
        assert_eq!(
            err,
            "unable to load root certificates: no valid certificate authority data seen"
        );
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

    /// A webhook that answers HTTP/1.0 with a body delimited by closing the connection,
    /// without TLS's close_notify (as Python's http.server does): its body is read whole.
    #[tokio::test]
    async fn bodies_ended_by_a_bare_close_are_read() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let der_key =
            rustls::pki_types::PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
                .unwrap();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], der_key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut tls = acceptor.accept(tcp).await.unwrap();
            let mut request = [0u8; 4096];
            let _ = tls.read(&mut request).await.unwrap();
            let response =
                b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"ok\":true}";
            tls.write_all(response).await.unwrap();
            tls.flush().await.unwrap();
            // Close the TCP connection without a close_notify.
            let (tcp, _) = tls.into_inner();
            drop(tcp);
        });
        let ca = cert.pem();
        let credentials = Credentials::default();
        let tls = Tls {
            ca_bundle: ca.as_bytes(),
            credentials: &credentials,
        };
        let url = format!("https://localhost:{port}/hook");
        let body = send(http::Method::POST, &url, &tls, b"{}".to_vec()).await;
        assert_eq!(body.unwrap(), br#"{"ok":true}"#);
    }
}
