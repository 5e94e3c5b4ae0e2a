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
    resolver: Arc<dyn ServiceResolver>,
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
            resolver,
        }
    }

    /// POSTs `body` (JSON) and returns the response body; an error in Go's client's words
    /// (`Post "url": ...`, `context deadline exceeded` after `timeout`).
    pub async fn post(&self, body: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, String> {
        let url = self.url().await?;
        tokio::time::timeout(timeout, post(&url, &self.ca_bundle, body))
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

/// POSTs `body` as JSON to an `https://` URL, returning the response body.
async fn post(url: &str, ca_bundle: &[u8], body: Vec<u8>) -> Result<Vec<u8>, String> {
    send(http::Method::POST, url, ca_bundle, body).await
}

/// GETs an `https://` URL (a JSON document such as an OpenID configuration or a key set),
/// trusting `ca_bundle` (the system roots when empty); the response body.
pub async fn get(url: &str, ca_bundle: &[u8], timeout: Duration) -> Result<Vec<u8>, String> {
    tokio::time::timeout(timeout, send(http::Method::GET, url, ca_bundle, Vec::new()))
        .await
        .map_err(|_| format!("Get {url:?}: context deadline exceeded"))?
}

/// Sends one request with a JSON body to an `https://` URL; errors in Go's client's words.
async fn send(
    method: http::Method,
    url: &str,
    ca_bundle: &[u8],
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
    let tls = TlsConnector::from(Arc::new(client_config(ca_bundle)?))
        .connect(server_name, tcp)
        .await
        .map_err(|e| failed(&e))?;
    let io = hyper_util::rt::TokioIo::new(tls);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| failed(&e))?;
    tokio::spawn(connection);
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|e| failed(&e))?;
    let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| failed(&e))?
        .to_bytes();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(format!("the server responded with status {status}: {text}"));
    }
    Ok(body.to_vec())
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
    /// or file). Client credentials in the kubeconfig are refused: kapi's webhook client
    /// authenticates the server only.
    pub fn from_kubeconfig(path: &std::path::Path) -> Result<WebhookClient, String> {
        let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
        let config: Value = serde_yaml_ng::from_str(&text).map_err(|err| err.to_string())?;
        let cluster = &config["clusters"][0]["cluster"];
        let server = cluster["server"].as_str().ok_or("no cluster server")?;
        let user = &config["users"][0]["user"];
        if user.as_object().is_some_and(|u| !u.is_empty()) {
            return Err("client credentials for the webhook are not supported by kapi yet".into());
        }
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
        Ok(WebhookClient::new(&client_config, Arc::new(NoServices)))
    }
}

/// TLS trusting `ca_bundle`'s certificates, or the system's roots without one.
fn client_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, String> {
    let roots = if ca_bundle.is_empty() {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        roots
    } else {
        trusted_roots(ca_bundle)?
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
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
}
