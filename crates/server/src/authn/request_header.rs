//! Front-proxy authentication (upstream's request-header authenticator, configured by
//! `--requestheader-*`): a proxy that has already authenticated the user (kube-aggregator,
//! an authenticating proxy) connects with a client certificate from the request-header CA
//! and names the user in headers (`X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`,
//! `X-Remote-Extra-<key>`). Only a certificate that verifies against that CA, and whose
//! common name is allowed, makes the headers count; the headers are then removed from the
//! request.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use http::HeaderMap;
use kapi_apimachinery::request_info::path_unescape;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::{CertificateDer, UnixTime};

use super::x509::{ClientCaError, client_verifier, peer_chain, verified_certificate};
use super::{AuthenticationError, Authenticator, UserInfo};

/// The front-proxy settings (`--requestheader-*`); header names compare case-insensitively.
#[derive(Clone, Debug, Default)]
pub struct RequestHeaderConfig {
    /// The CA of the proxies' client certificates (`--requestheader-client-ca-file`).
    pub client_ca: Vec<CertificateDer<'static>>,
    /// Common names a proxy's certificate may have; any when empty.
    pub allowed_names: Vec<String>,
    /// Headers holding the user's name; the first one present wins.
    pub username_headers: Vec<String>,
    /// Headers holding the user's uid; the first one present wins.
    pub uid_headers: Vec<String>,
    /// Headers holding the user's groups; every value of each counts.
    pub group_headers: Vec<String>,
    /// Prefixes of the headers holding the user's extra (`<prefix><key>: <value>`).
    pub extra_header_prefixes: Vec<String>,
}

impl RequestHeaderConfig {
    /// No CA, and the headers of the front-proxy protocol (`X-Remote-User`, `X-Remote-Uid`,
    /// `X-Remote-Group`, `X-Remote-Extra-`): what is cleared from requests when no front
    /// proxy is configured.
    pub fn standard_headers() -> RequestHeaderConfig {
        RequestHeaderConfig {
            client_ca: Vec::new(),
            allowed_names: Vec::new(),
            username_headers: vec!["X-Remote-User".into()],
            uid_headers: vec!["X-Remote-Uid".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_header_prefixes: vec!["X-Remote-Extra-".into()],
        }
    }

    /// Removes the identity headers from an authenticated request, so that nothing after
    /// authentication takes them for the user's.
    pub(crate) fn clear(&self, headers: &mut HeaderMap) {
        for name in self.username_headers.iter().chain(&self.uid_headers) {
            headers.remove(name.as_str());
        }
        for name in &self.group_headers {
            headers.remove(name.as_str());
        }
        let extras: Vec<_> = headers
            .keys()
            .filter(|name| self.extra_prefix_of(name.as_str()).is_some())
            .cloned()
            .collect();
        for name in extras {
            headers.remove(name);
        }
    }

    /// The extra key a header name carries, if it has one of the extra prefixes.
    fn extra_prefix_of(&self, name: &str) -> Option<String> {
        let name = name.to_ascii_lowercase();
        self.extra_header_prefixes.iter().find_map(|prefix| {
            let key = name.strip_prefix(&prefix.to_ascii_lowercase())?;
            Some(path_unescape(key).unwrap_or_else(|_| key.to_string()))
        })
    }
}

/// Authenticates requests that a trusted front proxy forwards.
pub struct RequestHeaderAuthenticator {
    verifier: Arc<dyn ClientCertVerifier>,
    config: RequestHeaderConfig,
}

impl RequestHeaderAuthenticator {
    pub fn new(config: RequestHeaderConfig) -> Result<Self, ClientCaError> {
        Ok(RequestHeaderAuthenticator {
            verifier: client_verifier(&config.client_ca)?,
            config,
        })
    }

    /// The user the headers name; `None` without a user name.
    fn user_of(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let first = |names: &[String]| {
            names
                .iter()
                .filter_map(|name| headers.get(name.as_str())?.to_str().ok())
                .find(|value| !value.is_empty())
                .map(String::from)
        };
        let name = first(&self.config.username_headers)?;
        let groups = self.config.group_headers.iter().flat_map(|name| {
            let values = headers.get_all(name.as_str()).iter();
            values
                .filter_map(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
        });
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let (Some(key), Ok(value)) =
                (self.config.extra_prefix_of(header.as_str()), value.to_str())
            else {
                continue;
            };
            extra.entry(key).or_default().push(value.to_string());
        }
        Some(UserInfo {
            name,
            uid: first(&self.config.uid_headers).unwrap_or_default(),
            groups: groups.map(String::from).collect(),
            extra,
        })
    }
}

impl RequestHeaderAuthenticator {
    /// Whether a client certificate chain is a trusted front proxy's: verified by the
    /// request-header CA and with an allowed common name; until when it is (Unix seconds),
    /// or why not.
    fn verdict(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<u64, String> {
        let cert = verified_certificate(&*self.verifier, end_entity, intermediates, now)
            .map_err(|err| err.0)?;
        let allowed = &self.config.allowed_names;
        if !allowed.is_empty() {
            let common_name = cert
                .subject()
                .iter_common_name()
                .filter_map(|a| a.as_str().ok())
                .last()
                .unwrap_or_default();
            if !allowed.iter().any(|name| name == common_name) {
                return Err(format!(
                    "x509: subject with cn={common_name} is not in the allowed list"
                ));
            }
        }
        Ok(cert.validity().not_after.timestamp().max(0) as u64)
    }
}

#[async_trait]
impl Authenticator for RequestHeaderAuthenticator {
    async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let Some((connection, end_entity, intermediates)) = peer_chain(request) else {
            return Ok(None);
        };
        let now = UnixTime::now();
        let verdict = match connection.front_proxy().get() {
            Some(Ok(not_after)) if now.as_secs() >= *not_after => {
                self.verdict(end_entity, intermediates, now)
            }
            Some(cached) => cached.clone(),
            None => {
                let verdict = self.verdict(end_entity, intermediates, now);
                let _ = connection.front_proxy().set(verdict.clone());
                verdict
            }
        };
        verdict.map_err(AuthenticationError)?;
        Ok(self.user_of(&request.headers))
    }
}
