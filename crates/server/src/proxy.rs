//! Forwarding requests to another server over HTTPS as a front proxy, as upstream's
//! UpgradeAwareHandler with client-go's auth-proxy round tripper do
//! (k8s.io/apimachinery/pkg/util/proxy, k8s.io/client-go/transport): the request goes on
//! with its method, path, query, headers and body, minus the client's credentials and the
//! hop-by-hop headers; the user it was authenticated as rides in `X-Remote-User`,
//! `X-Remote-Uid`, `X-Remote-Group` and `X-Remote-Extra-<key>`, vouched for by the proxy's
//! client certificate. Bodies stream both ways without buffering (watches included), and
//! upgrade requests (SPDY, WebSocket) are answered with the backend's `101` and then joined
//! byte for byte.

use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioIo;

use crate::authn::UserInfo;
use crate::body::Body;
use crate::webhook_client::{Connector, Dial, Tls, pooled_client};

/// The headers the proxied user is named in (client-go's auth-proxy headers).
const REMOTE_USER: &str = "X-Remote-User";
const REMOTE_UID: &str = "X-Remote-Uid";
const REMOTE_GROUP: &str = "X-Remote-Group";
const REMOTE_EXTRA: &str = "x-remote-extra-";

/// Headers that concern one connection only and are not forwarded (Go's ReverseProxy's
/// list), except `Connection` and `Upgrade` of an upgrade request.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The largest body [`ProxyTransport::get`] reads: a backend's OpenAPI document is a few
/// MiB; one that sends more is refused rather than held in memory.
const MAX_DOCUMENT: usize = 64 * 1024 * 1024;

/// How a [`ProxyTransport`] connects to its backend.
pub struct ProxyTls<'a> {
    /// PEM certificates the backend's certificate must chain to (the system roots when
    /// empty).
    pub ca_bundle: &'a [u8],
    /// Accept the backend's certificate unverified.
    pub insecure: bool,
    /// The name the backend's certificate must have (a Service's `<name>.<namespace>.svc`),
    /// whatever address is dialed.
    pub server_name: &'a str,
    /// The proxy's client certificate and key (PEM).
    pub client_cert: Option<&'a (Vec<u8>, Vec<u8>)>,
}

/// Pooled connections to one backend: HTTP/2 where it offers it, HTTP/1.1 for upgrades.
pub struct ProxyTransport {
    client: Client<Connector, Body>,
    upgrades: Client<Connector, Body>,
}

/// Why a request could not be forwarded.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The connection's or the exchange's error, as Go's transport words it
    /// (`dial tcp 10.0.0.1:443: connect: connection refused`).
    #[error("{0}")]
    Failed(String),
    /// [`ProxyTransport::get`] did not finish within its timeout.
    #[error("context deadline exceeded")]
    Timeout,
}

impl ProxyTransport {
    /// A transport with `tls`.
    pub fn new(tls: &ProxyTls<'_>) -> Result<ProxyTransport, String> {
        let settings = |http2| Tls {
            ca_bundle: tls.ca_bundle,
            insecure: tls.insecure,
            server_name: Some(tls.server_name),
            client_cert: tls.client_cert,
            http2,
        };
        Ok(ProxyTransport {
            client: pooled_client(&settings(true), Dial::Direct)?,
            upgrades: pooled_client(&settings(false), Dial::Direct)?,
        })
    }

    /// Forwards `request` to the backend at `endpoint` (`host:port`) on behalf of `user`;
    /// the backend's response, its body streamed.
    pub async fn forward(
        &self,
        request: Request<Body>,
        endpoint: &str,
        user: &UserInfo,
    ) -> Result<Response<Body>, ProxyError> {
        let upgrade = is_upgrade(request.headers());
        let (mut parts, body) = request.into_parts();
        let client_upgrade =
            upgrade.then(|| parts.extensions.remove::<hyper::upgrade::OnUpgrade>());
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let uri = format!("https://{endpoint}{path}")
            .parse::<http::Uri>()
            .map_err(|err| ProxyError::Failed(err.to_string()))?;
        let mut headers = std::mem::take(&mut parts.headers);
        prepare_headers(&mut headers, user, upgrade);
        let mut forwarded = Request::builder()
            .method(parts.method)
            .uri(uri)
            .body(body)
            .map_err(|err| ProxyError::Failed(err.to_string()))?;
        *forwarded.headers_mut() = headers;
        let client = if upgrade {
            &self.upgrades
        } else {
            &self.client
        };
        let mut response = client
            .request(forwarded)
            .await
            .map_err(|err| request_error(endpoint, &err))?;
        if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            let backend = hyper::upgrade::on(&mut response);
            if let Some(Some(client)) = client_upgrade {
                tokio::spawn(join_upgraded(client, backend));
            }
            return Ok(response.map(|_| crate::body::empty()));
        }
        remove_hop_by_hop(response.headers_mut());
        Ok(response.map(|body| body.map_err(Into::into).boxed_unsync()))
    }

    /// GETs `path` (with its query) from the backend at `endpoint` as `user`, accepting
    /// `accept`, within `timeout`: the status, headers and body (at most 64 MiB).
    pub async fn get(
        &self,
        endpoint: &str,
        path: &str,
        user: &UserInfo,
        accept: &str,
        timeout: Duration,
    ) -> Result<(StatusCode, HeaderMap, Bytes), ProxyError> {
        let request = Request::get(path)
            .header(header::ACCEPT, accept)
            .body(crate::body::empty())
            .map_err(|err| ProxyError::Failed(err.to_string()))?;
        let exchange = async {
            let response = self.forward(request, endpoint, user).await?;
            let (parts, body) = response.into_parts();
            let body = read_document(body).await?;
            Ok((parts.status, parts.headers, body))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ProxyError::Timeout)?
    }
}

/// A response body of at most [`MAX_DOCUMENT`] bytes.
async fn read_document(mut body: Body) -> Result<Bytes, ProxyError> {
    let mut document = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| ProxyError::Failed(err.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if document.len() + data.len() > MAX_DOCUMENT {
            return Err(ProxyError::Failed(format!(
                "the response is larger than {MAX_DOCUMENT} bytes"
            )));
        }
        document.extend_from_slice(&data);
    }
    Ok(document.freeze())
}

/// Whether the request asks to switch protocols (httpstream.IsUpgradeRequest): its
/// `Connection` header has the `upgrade` token.
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// The headers the backend is sent: the client's, without its credentials, any identity
/// headers it sent itself and (unless it upgrades) the hop-by-hop ones, with the user's
/// identity headers.
fn prepare_headers(headers: &mut HeaderMap, user: &UserInfo, upgrade: bool) {
    headers.remove(header::AUTHORIZATION);
    headers.remove(header::HOST);
    let dropped: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            let name = name.as_str();
            name.starts_with("impersonate-")
                || name.starts_with(REMOTE_EXTRA)
                || name.eq_ignore_ascii_case(REMOTE_USER)
                || name.eq_ignore_ascii_case(REMOTE_UID)
                || name.eq_ignore_ascii_case(REMOTE_GROUP)
        })
        .cloned()
        .collect();
    for name in dropped {
        headers.remove(name);
    }
    if !upgrade {
        remove_hop_by_hop(headers);
    }
    let mut add = |name: &str, value: &str| {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    };
    add(REMOTE_USER, &user.name);
    if !user.uid.is_empty() {
        add(REMOTE_UID, &user.uid);
    }
    for group in &user.groups {
        add(REMOTE_GROUP, group);
    }
    for (key, values) in &user.extra {
        let name = format!("{REMOTE_EXTRA}{}", header_key_escape(key));
        for value in values {
            add(&name, value);
        }
    }
}

/// Removes the hop-by-hop headers, and those the `Connection` header names.
pub(crate) fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(name);
    }
}

/// An extra key as a header name's suffix: bytes that may not appear in a header name, and
/// `%`, percent-encoded (client-go's headerKeyEscape), so the backend's unescaping gives the
/// key back.
fn header_key_escape(key: &str) -> String {
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        let token = byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte);
        match token {
            true => escaped.push(byte as char),
            false => escaped.push_str(&format!("%{byte:02X}")),
        }
    }
    escaped
}

/// What a request that got no response reports, as Go's transport words it.
fn request_error(endpoint: &str, err: &hyper_util::client::legacy::Error) -> ProxyError {
    use std::error::Error as _;
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            let reason = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
                _ => io.to_string(),
            };
            return ProxyError::Failed(format!("dial tcp {endpoint}: {reason}"));
        }
        source = cause.source();
    }
    let cause = err
        .source()
        .map_or_else(|| err.to_string(), ToString::to_string);
    ProxyError::Failed(cause)
}

/// Copies bytes both ways between the client's upgraded connection and the backend's, once
/// both have switched protocols, until either side closes.
async fn join_upgraded(client: hyper::upgrade::OnUpgrade, backend: hyper::upgrade::OnUpgrade) {
    let (Ok(client), Ok(backend)) = tokio::join!(client, backend) else {
        return;
    };
    let mut client = TokioIo::new(client);
    let mut backend = TokioIo::new(backend);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_replaces_credentials_and_forged_identity_headers() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer secret"),
            ("impersonate-user", "root"),
            ("x-remote-user", "forged"),
            ("x-remote-extra-forged", "x"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "1"),
            ("accept", "application/json"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        let user = UserInfo {
            name: "alice".into(),
            uid: "42".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [("example.org/team name".to_string(), vec!["a".to_string()])].into(),
        };
        prepare_headers(&mut headers, &user, false);
        let values = |name: &str| -> Vec<&str> {
            let all = headers.get_all(name).iter();
            all.map(|v| v.to_str().unwrap()).collect()
        };
        assert_eq!(values("authorization"), Vec::<&str>::new());
        assert_eq!(values("impersonate-user"), Vec::<&str>::new());
        assert_eq!(values("x-private"), Vec::<&str>::new());
        assert_eq!(values("x-remote-extra-forged"), Vec::<&str>::new());
        assert_eq!(values("x-remote-user"), ["alice"]);
        assert_eq!(values("x-remote-uid"), ["42"]);
        assert_eq!(values("x-remote-group"), ["dev", "system:authenticated"]);
        assert_eq!(values("x-remote-extra-example.org%2Fteam%20name"), ["a"]);
        assert_eq!(values("accept"), ["application/json"]);
    }

    #[test]
    fn upgrades_keep_their_connection_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("connection", HeaderValue::from_static("Upgrade"));
        headers.insert("upgrade", HeaderValue::from_static("SPDY/3.1"));
        assert!(is_upgrade(&headers));
        prepare_headers(&mut headers, &UserInfo::default(), true);
        assert_eq!(headers["upgrade"], "SPDY/3.1");
        assert!(!is_upgrade(&HeaderMap::new()));
    }
}
