//! The conversion webhook client: a ConversionReview (apiextensions.k8s.io/v1) POSTed over
//! HTTPS to the CRD's `clientConfig` (a URL, or a Service resolved to an endpoint), verified
//! with its `caBundle` (the system roots without one), with upstream's 30 s timeout and its
//! checks of the response and their messages.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Full};
use kapi_apimachinery::status::ApiError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How long a conversion webhook may take, as upstream's.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Resolves a Service reference (`clientConfig.service`) to `https://host:port`.
#[async_trait::async_trait]
pub trait ServiceResolver: Send + Sync {
    async fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<String, String>;
}

/// Where the webhook is.
enum Target {
    Url(String),
    Service {
        namespace: String,
        name: String,
        path: String,
        port: i32,
    },
}

/// One CRD's conversion webhook.
pub(super) struct Webhook {
    target: Target,
    /// PEM certificates from `caBundle`; the system roots when empty.
    ca_bundle: Vec<u8>,
    kind: String,
    resolver: Arc<dyn ServiceResolver>,
}

impl Webhook {
    /// The webhook of `config` (a CRD's `spec.conversion.webhook`) for objects of `kind`.
    pub(super) fn new(config: &Value, kind: &str, resolver: Arc<dyn ServiceResolver>) -> Webhook {
        let client = &config["clientConfig"];
        let target = match client["url"].as_str() {
            Some(url) => Target::Url(url.to_string()),
            None => {
                let service = &client["service"];
                let text = |key: &str| service[key].as_str().unwrap_or_default().to_string();
                Target::Service {
                    namespace: text("namespace"),
                    name: text("name"),
                    path: text("path"),
                    port: service["port"].as_i64().unwrap_or(443) as i32,
                }
            }
        };
        let ca_bundle = client["caBundle"]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        Webhook {
            target,
            ca_bundle,
            kind: kind.to_string(),
            resolver,
        }
    }

    /// `object` in `desired` (an apiVersion), through the webhook unless it is there already.
    pub(super) fn convert_one(&self, object: Value, desired: &str) -> Result<Value, ApiError> {
        if object["apiVersion"].as_str() == Some(desired) {
            return Ok(object);
        }
        let from = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let gvk = format!("{from}, Kind={}", self.kind);
        let original = object.clone();
        let reviewed = block_on(self.review(vec![object], desired));
        let converted = reviewed.and_then(|result| result).map_err(|err| {
            ApiError::internal(format!("conversion webhook for {gvk} failed: {err}"))
        })?;
        let converted = check_converted(converted, &original, desired, &self.kind)
            .map_err(|err| ApiError::internal(format!("conversion webhook for {gvk} {err}")))?;
        Ok(converted)
    }

    /// Sends one ConversionReview; the converted objects of a successful response.
    async fn review(&self, objects: Vec<Value>, desired: &str) -> Result<Vec<Value>, String> {
        let uid = kapi_apimachinery::meta::new_uid();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let url = self.url().await?;
        let call = post(
            &url,
            &self.ca_bundle,
            serde_json::to_vec(&review).unwrap_or_default(),
        );
        let body = tokio::time::timeout(TIMEOUT, call)
            .await
            .map_err(|_| format!("Post {url:?}: context deadline exceeded"))??;
        let response: Value = serde_json::from_slice(&body)
            .map_err(|err| format!("unable to decode the response: {err}"))?;
        read_response(&response, &uid)
    }

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

/// The converted objects of a ConversionReview response, as upstream's checks accept them.
fn read_response(review: &Value, uid: &str) -> Result<Vec<Value>, String> {
    let kind = (review["apiVersion"].as_str(), review["kind"].as_str());
    if kind != (Some("apiextensions.k8s.io/v1"), Some("ConversionReview")) {
        return Err(format!(
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}, Kind={}",
            kind.0.unwrap_or_default(),
            kind.1.unwrap_or_default()
        ));
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let result = &response["result"];
    if result["status"] != "Success" {
        if let Some(message) = result["message"].as_str().filter(|m| !m.is_empty()) {
            return Err(message.to_string());
        }
        let status = result["status"].as_str().unwrap_or_default();
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The one converted object, checked against the original: the desired apiVersion, the same
/// kind, the same name, namespace and uid; only labels and annotations may change in metadata.
fn check_converted(
    converted: Vec<Value>,
    original: &Value,
    desired: &str,
    kind: &str,
) -> Result<Value, String> {
    let [mut object] = <[Value; 1]>::try_from(converted)
        .map_err(|objects| format!("returned {} objects, expected 1", objects.len()))?;
    let invalid = |detail: String| format!("returned invalid object at index 0: {detail}");
    let got = object["apiVersion"].as_str().unwrap_or_default();
    if got != desired {
        return Err(invalid(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        )));
    }
    let got = object["kind"].as_str().unwrap_or_default();
    if got != kind {
        return Err(invalid(format!(
            "invalid kind (expected {kind}, received {got})"
        )));
    }
    let (before, after) = (&original["metadata"], &object["metadata"]);
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        if before[field] != after[field] && !(after[field].is_null() && before[field] == "") {
            let (e, a) = (
                before[field].as_str().unwrap_or_default(),
                after[field].as_str().unwrap_or_default(),
            );
            return Err(format!(
                "returned invalid metadata: must have the same {what}: {e} != {a}"
            ));
        }
    }
    let mut metadata = before.clone();
    for field in ["labels", "annotations"] {
        match after.get(field) {
            Some(value) if !value.is_null() => metadata[field] = value.clone(),
            _ => drop(metadata.as_object_mut().map(|m| m.remove(field))),
        }
    }
    object["metadata"] = metadata;
    Ok(object)
}

/// POSTs `body` as JSON to an `https://` URL, returning the response body.
async fn post(url: &str, ca_bundle: &[u8], body: Vec<u8>) -> Result<Vec<u8>, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("Post {url:?}: unsupported protocol scheme"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let (host, port) = split_host_port(authority)?;
    let failed = |err: &dyn std::fmt::Display| format!("Post {url:?}: {err}");
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
    let request = http::Request::post(path)
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

/// TLS trusting `ca_bundle`'s certificates, or the system's roots without one.
fn client_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.is_empty() {
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
    } else {
        for cert in CertificateDer::pem_slice_iter(ca_bundle) {
            let cert = cert.map_err(|err| format!("invalid caBundle: {err}"))?;
            roots
                .add(cert)
                .map_err(|err| format!("invalid caBundle: {err}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Runs `future` to completion from synchronous code inside or outside a runtime: converters
/// are synchronous (called in storage update closures and renderers), webhooks are not.
fn block_on<F>(future: F) -> Result<F::Output, String>
where
    F: Future + Send,
    F::Output: Send,
{
    use tokio::runtime::{Builder, Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            Ok(tokio::task::block_in_place(|| handle.block_on(future)))
        }
        _ => std::thread::scope(|scope| {
            let call = scope.spawn(|| {
                let runtime = Builder::new_current_thread().enable_all().build();
                runtime
                    .map(|rt| rt.block_on(future))
                    .map_err(|err| err.to_string())
            });
            call.join()
                .map_err(|_| "the conversion call panicked".to_string())?
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_checked_as_upstream_checks_them() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"},
                "convertedObjects": [{"a": 1}]}});
        assert_eq!(read_response(&ok, "u").unwrap(), [json!({"a": 1})]);
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "Status"}),
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
                "no response provided",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": "x", "result": {"status": "Success"}}}),
                "expected response.uid=\"u\", got \"x\"",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": "u", "result": {"status": "Failure", "message": "nope"}}}),
                "nope",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": "u", "result": {"status": "Failure"}}}),
                "response.result.status was 'Failure', not 'Success'",
            ),
        ];
        for (response, want) in cases {
            assert_eq!(read_response(&response, "u").unwrap_err(), want);
        }
    }

    #[test]
    fn converted_objects_keep_their_identity() {
        let original = json!({"apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"x": "1"}}});
        let converted = json!({"apiVersion": "g/v2", "kind": "K",
            "metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}}, "spec": {}});
        let object = check_converted(vec![converted.clone()], &original, "g/v2", "K").unwrap();
        assert_eq!(
            object["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"y": "2"}})
        );
        let err = check_converted(vec![], &original, "g/v2", "K").unwrap_err();
        assert_eq!(err, "returned 0 objects, expected 1");
        let err = check_converted(vec![converted.clone()], &original, "g/v3", "K").unwrap_err();
        assert_eq!(
            err,
            "returned invalid object at index 0: invalid groupVersion (expected g/v3, received g/v2)"
        );
        let mut renamed = converted;
        renamed["metadata"]["name"] = json!("b");
        let err = check_converted(vec![renamed], &original, "g/v2", "K").unwrap_err();
        assert_eq!(
            err,
            "returned invalid metadata: must have the same name: a != b"
        );
    }

    #[test]
    fn hosts_and_ports_split_like_urls() {
        assert_eq!(split_host_port("a.b:8443").unwrap(), ("a.b".into(), 8443));
        assert_eq!(split_host_port("a.b").unwrap(), ("a.b".into(), 443));
        assert_eq!(split_host_port("[::1]:9443").unwrap(), ("::1".into(), 9443));
        assert!(split_host_port("a:b").is_err());
    }
}
