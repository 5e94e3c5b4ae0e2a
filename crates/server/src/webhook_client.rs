//! The client side of webhooks (admission webhooks, conversion webhooks, ...): a JSON body
//! POSTed over HTTPS to a `clientConfig` (a URL, or a Service reached at one of its
//! endpoints), verified with its `caBundle` (the system roots without one), within a timeout.
//! Each client keeps its connections open for its next calls (see [`Https`]).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;

mod https;
mod trust;

pub use https::Https;
pub(crate) use https::{Connector, Dial, Tls, pooled_client};

/// Resolves a Service reference (`clientConfig.service`) to `https://host:port`.
#[async_trait::async_trait]
pub trait ServiceResolver: Send + Sync {
    async fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String>;
}

/// A webhook's `clientConfig`, ready to call. Its TLS configuration is built once, here,
/// and its connections are reused from call to call.
pub struct WebhookClient {
    /// The URL called: the configured one, or for a Service upstream's
    /// `https://<name>.<namespace>.svc:<port><path>`, whose host the TLS handshake verifies.
    url: String,
    https: Https,
    /// A bearer token to send (a webhook kubeconfig's user's).
    token: Option<String>,
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
    ///
    /// As upstream's webhook clients, it offers HTTP/2 only to a URL on the local host:
    /// elsewhere HTTP/2's single connection would send every request to one backend of a
    /// load-balanced webhook (kubernetes issue 75791).
    pub fn new(client_config: &Value, resolver: Arc<dyn ServiceResolver>) -> WebhookClient {
        let ca_bundle = client_config["caBundle"]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        let (url, dial) = match client_config["url"].as_str() {
            Some(url) => (url.to_string(), Dial::Direct),
            None => {
                let service = &client_config["service"];
                let text = |key: &str| service[key].as_str().unwrap_or_default().to_string();
                let (namespace, name) = (text("namespace"), text("name"));
                let port = service["port"].as_i64().unwrap_or(443) as i32;
                let url = format!("https://{name}.{namespace}.svc:{port}{}", text("path"));
                let dial = Dial::Service {
                    namespace,
                    name,
                    port,
                    resolver,
                };
                (url, dial)
            }
        };
        let tls = Tls {
            ca_bundle: &ca_bundle,
            insecure: false,
            server_name: None,
            client_cert: None,
            http2: matches!(dial, Dial::Direct) && is_local_host(&url),
        };
        WebhookClient {
            https: Https::build(&tls, dial),
            url,
            token: None,
        }
    }

    /// The same client calling `path` on its server (the kubeconfig's server URL's path
    /// replaced), as a delegating server calls the API server's review endpoints.
    pub fn with_path(mut self, path: &str) -> WebhookClient {
        if let Ok(uri) = self.url.parse::<http::Uri>()
            && let Some(authority) = uri.authority()
        {
            self.url = format!(
                "{}://{authority}{path}",
                uri.scheme_str().unwrap_or("https")
            );
        }
        self
    }

    /// GETs the client's URL; the response body, or an error in Go's client's words.
    pub async fn get(&self, timeout: Duration) -> Result<Vec<u8>, String> {
        let token = self.token.as_deref();
        let sent = self
            .https
            .send(http::Method::GET, &self.url, token, Vec::new());
        tokio::time::timeout(timeout, sent)
            .await
            .map_err(|_| format!("Get {:?}: context deadline exceeded", self.url))?
    }

    /// POSTs `body` (JSON) and returns the response body; an error in Go's client's words
    /// (`Post "url": ...`, `context deadline exceeded` after `timeout`).
    pub async fn post(&self, body: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, String> {
        self.post_to(&self.url, body, timeout).await
    }

    /// POSTs `body` as [`post`](Self::post) does, telling the webhook its deadline in the
    /// `timeout` query parameter, as client-go's requests with a timeout do (whole seconds,
    /// rounded up: `?timeout=10s`).
    pub async fn post_with_deadline(
        &self,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, String> {
        let seconds =
            Duration::from_secs(timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0));
        let separator = if self.url.contains('?') { '&' } else { '?' };
        let url = format!(
            "{}{separator}timeout={}",
            self.url,
            kapi_apimachinery::goduration::format(seconds)
        );
        self.post_to(&url, body, timeout).await
    }

    async fn post_to(
        &self,
        url: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, String> {
        let token = self.token.as_deref();
        let sent = self.https.send(http::Method::POST, url, token, body);
        tokio::time::timeout(timeout, sent)
            .await
            .map_err(|_| format!("Post {url:?}: context deadline exceeded"))?
    }
}

/// Whether `url`'s host is `localhost` or a loopback address (upstream's `isLocalHost`).
fn is_local_host(url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    let host = uri.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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

impl WebhookClient {
    /// The client of a webhook kubeconfig (`--authorization-webhook-config-file`,
    /// `--authentication-token-webhook-config-file`, `--audit-webhook-config-file`): its
    /// first cluster's server and CA (data or file), and its first user's client certificate
    /// and token. HTTP/2 is offered, as client-go offers it.
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
            (Some(data), _) => base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap_or_default(),
            (None, Some(file)) => std::fs::read(file).map_err(|err| format!("{file}: {err}"))?,
            (None, None) => Vec::new(),
        };
        let tls = Tls {
            ca_bundle: &ca_bundle,
            insecure: false,
            server_name: None,
            client_cert: credentials.client_cert.as_ref(),
            http2: true,
        };
        Ok(WebhookClient {
            url: server.to_string(),
            https: Https::build(&tls, Dial::Direct),
            token: credentials.token,
        })
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use http_body_util::Full;
    use hyper_util::rt::{TokioExecutor, TokioIo};

    use super::*;

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
        assert!(found.client_cert.is_some());
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
    fn services_are_called_at_their_dns_names() {
        let config = serde_json::json!({"service": {"namespace": "ns", "name": "hook",
            "path": "/mutate"}});
        let client = WebhookClient::new(&config, Arc::new(Nowhere));
        assert_eq!(client.url, "https://hook.ns.svc:443/mutate");
    }

    #[test]
    fn local_hosts_are_told_apart() {
        assert!(is_local_host("https://localhost:8443/x"));
        assert!(is_local_host("https://127.0.0.1/x"));
        assert!(is_local_host("https://[::1]:9443/x"));
        assert!(!is_local_host("https://10.0.0.1/x"));
        assert!(!is_local_host("https://webhook.example.com/x"));
    }

    /// A self-signed certificate for `localhost`, 127.0.0.1 and the Service `hook` in `ns`:
    /// its PEM, and a TLS server offering `alpn` with it.
    fn server_tls(alpn: &[&[u8]]) -> (String, rustls::ServerConfig) {
        let names = ["localhost", "127.0.0.1", "hook.ns.svc"].map(String::from);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(names.to_vec())
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let der_key =
            rustls::pki_types::PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
                .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], der_key)
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        (cert.pem(), config)
    }

    /// A webhook on a loopback port answering every request with the HTTP version it was
    /// made in (`{"version": "HTTP/1.1"}`): its port, its CA, and how many TCP connections
    /// it accepted.
    async fn serve(alpn: &[&[u8]]) -> (u16, String, Arc<AtomicUsize>) {
        let (ca, config) = server_tls(alpn);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let tls = acceptor.accept(tcp).await.unwrap();
                    let answer = hyper::service::service_fn(|request: http::Request<_>| {
                        let version = format!("{:?}", request.version());
                        let body = serde_json::json!({ "version": version }).to_string();
                        let response = http::Response::new(Full::new(Bytes::from(body)));
                        async move { Ok::<_, std::convert::Infallible>(response) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), answer)
                        .await;
                });
            }
        });
        (port, ca, accepted)
    }

    /// The client of the URL `https://<host>:<port>/hook` trusting `ca`.
    fn client_of(host: &str, port: u16, ca: &str) -> WebhookClient {
        let config = serde_json::json!({"url": format!("https://{host}:{port}/hook"),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)});
        WebhookClient::new(&config, Arc::new(Nowhere))
    }

    /// Resolves every Service to one endpoint.
    struct Endpoint(String);

    #[async_trait::async_trait]
    impl ServiceResolver for Endpoint {
        async fn resolve(&self, _: &str, _: &str, _: i32) -> Result<String, String> {
            Ok(self.0.clone())
        }
    }

    /// Resolves no Service.
    struct Nowhere;

    #[async_trait::async_trait]
    impl ServiceResolver for Nowhere {
        async fn resolve(&self, _: &str, _: &str, _: i32) -> Result<String, String> {
            Err("no endpoints".into())
        }
    }

    /// The HTTP version a call was answered in.
    async fn version(client: &WebhookClient) -> String {
        let body = client.post(b"{}".to_vec(), Duration::from_secs(10)).await;
        let body: Value = serde_json::from_slice(&body.unwrap()).unwrap();
        body["version"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn calls_reuse_one_connection() {
        let (port, ca, accepted) = serve(&[b"http/1.1"]).await;
        let client = client_of("127.0.0.1", port, &ca);
        assert_eq!(version(&client).await, "HTTP/1.1");
        assert_eq!(version(&client).await, "HTTP/1.1");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn http2_is_spoken_to_a_local_webhook_that_offers_it() {
        let (port, ca, accepted) = serve(&[b"h2", b"http/1.1"]).await;
        let client = client_of("localhost", port, &ca);
        assert_eq!(version(&client).await, "HTTP/2.0");
        // Concurrent calls share the connection.
        let (first, second) = tokio::join!(version(&client), version(&client));
        assert_eq!((first.as_str(), second.as_str()), ("HTTP/2.0", "HTTP/2.0"));
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    /// A Service is dialled at its resolved endpoint, verified as `<name>.<namespace>.svc`,
    /// and spoken to in HTTP/1.1 even when it offers HTTP/2, as upstream does.
    #[tokio::test]
    async fn services_are_reached_at_their_endpoints_and_verified_by_service_name() {
        let (port, ca, accepted) = serve(&[b"h2", b"http/1.1"]).await;
        let ca = base64::engine::general_purpose::STANDARD.encode(&ca);
        let service = |namespace: &str, resolver: Arc<dyn ServiceResolver>| {
            let config = serde_json::json!({"caBundle": ca, "service":
                {"namespace": namespace, "name": "hook", "port": 443, "path": "/hook"}});
            WebhookClient::new(&config, resolver)
        };
        let endpoint = || Arc::new(Endpoint(format!("https://127.0.0.1:{port}")));
        let client = service("ns", endpoint());
        assert_eq!(version(&client).await, "HTTP/1.1");
        assert_eq!(version(&client).await, "HTTP/1.1");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        let stranger = service("other", endpoint());
        let err = stranger.post(b"{}".to_vec(), Duration::from_secs(10)).await;
        let err = err.unwrap_err();
        let refused = r#"Post "https://hook.other.svc:443/hook": invalid peer certificate"#;
        assert!(err.starts_with(refused), "{err}");
        let unresolved = service("ns", Arc::new(Nowhere));
        let err = unresolved
            .post(b"{}".to_vec(), Duration::from_secs(10))
            .await;
        assert_eq!(err.unwrap_err(), "no endpoints");
    }

    /// A webhook that answers HTTP/1.0 with a body delimited by closing the connection,
    /// without TLS's close_notify (as Python's http.server does): its body is read whole.
    #[tokio::test]
    async fn bodies_ended_by_a_bare_close_are_read() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (ca, config) = server_tls(&[]);
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
        let client = client_of("localhost", port, &ca);
        let body = client.post(b"{}".to_vec(), Duration::from_secs(10)).await;
        assert_eq!(body.unwrap(), br#"{"ok":true}"#);
    }
}
