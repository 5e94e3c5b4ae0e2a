//! Delegated authentication and authorization, as an extension API server behind kapi's (or
//! kube-apiserver's) aggregator does them (upstream's DelegatingAuthenticationOptions and
//! DelegatingAuthorizationOptions): the API server's `extension-apiserver-authentication`
//! ConfigMap says which client CA and which front proxies (the aggregator's client
//! certificate, its CA, allowed names and headers) to trust; bearer tokens are checked by
//! TokenReviews and requests authorized by SubjectAccessReviews on the API server, as the
//! user the kubeconfig names. `system:masters` and the health checks are always allowed.
//!
//! The ConfigMap is read once, at start; upstream's servers follow its changes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kapi_server::authn::webhook::WebhookTokenAuthenticator;
use kapi_server::authn::{BearerToken, RequestHeaderConfig};
use kapi_server::authz::{AlwaysAllowPaths, PrivilegedGroups, UnionAuthorizer, WebhookAuthorizer};
use kapi_server::webhook_client::WebhookClient;
use kapi_server::{Authenticator, Authorizer, ServerConfig};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value;

/// Where the API server publishes how it authenticates clients.
const CONFIG_MAP: &str =
    "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
/// How long reading it may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long users and decisions are cached (upstream's delegating defaults).
const CACHE_TTL: Duration = Duration::from_secs(10);
/// The paths anyone may read (upstream's default always-allow paths).
const ALWAYS_ALLOW_PATHS: [&str; 3] = ["/healthz", "/readyz", "/livez"];

/// How clients are authenticated, as the API server publishes it.
#[derive(Debug)]
pub struct Delegation {
    /// The CA of client certificates the API server trusts.
    pub client_ca: Vec<CertificateDer<'static>>,
    /// The front proxies trusted, if the API server names any.
    pub request_header: Option<RequestHeaderConfig>,
}

impl Delegation {
    /// Reads the ConfigMap from the API server of the kubeconfig at `kubeconfig`.
    pub async fn fetch(kubeconfig: &Path) -> Result<Delegation, String> {
        let client = WebhookClient::from_kubeconfig(kubeconfig)?.with_path(CONFIG_MAP);
        let body = client.get(TIMEOUT).await?;
        let config_map: Value = serde_json::from_slice(&body)
            .map_err(|err| format!("reading extension-apiserver-authentication: {err}"))?;
        Ok(Delegation::of(&config_map["data"]))
    }

    /// The delegation the ConfigMap's `data` describes.
    fn of(data: &Value) -> Delegation {
        let text = |key: &str| data[key].as_str().unwrap_or_default();
        let certificates = |key: &str| -> Vec<CertificateDer<'static>> {
            CertificateDer::pem_slice_iter(text(key).as_bytes())
                .filter_map(Result::ok)
                .collect()
        };
        let list = |key: &str| -> Vec<String> {
            serde_json::from_str::<Option<Vec<String>>>(text(key))
                .ok()
                .flatten()
                .unwrap_or_default()
        };
        let proxy_ca = certificates("requestheader-client-ca-file");
        let request_header = (!proxy_ca.is_empty()).then(|| RequestHeaderConfig {
            client_ca: proxy_ca,
            allowed_names: list("requestheader-allowed-names"),
            username_headers: list("requestheader-username-headers"),
            uid_headers: list("requestheader-uid-headers"),
            group_headers: list("requestheader-group-headers"),
            extra_header_prefixes: list("requestheader-extra-headers-prefix"),
        });
        Delegation {
            client_ca: certificates("client-ca-file"),
            request_header,
        }
    }

    /// Sets `config` to trust what the API server trusts.
    pub fn configure(&self, config: &mut ServerConfig) {
        config.tls.client_ca = self.client_ca.clone();
        config.request_header = self.request_header.clone();
    }
}

/// Bearer tokens authenticated by TokenReviews on the API server of the kubeconfig at
/// `kubeconfig`.
pub fn authenticator(kubeconfig: &Path) -> Result<Arc<dyn Authenticator>, String> {
    let tokens = WebhookTokenAuthenticator::delegated(kubeconfig, CACHE_TTL)?;
    Ok(Arc::new(BearerToken::new(vec![Arc::new(tokens)])))
}

/// Requests authorized by SubjectAccessReviews on the API server of the kubeconfig at
/// `kubeconfig`, after `system:masters` and the always-allowed health paths.
pub fn authorizer(kubeconfig: &Path) -> Result<Arc<dyn Authorizer>, String> {
    let reviews = WebhookAuthorizer::delegated(kubeconfig, CACHE_TTL, CACHE_TTL)
        .map_err(|err| err.to_string())?;
    let paths = ALWAYS_ALLOW_PATHS.iter().map(|p| p.to_string()).collect();
    let authorizers: Vec<Arc<dyn Authorizer>> = vec![
        Arc::new(PrivilegedGroups::new(&["system:masters"])),
        Arc::new(AlwaysAllowPaths(paths)),
        Arc::new(reviews),
    ];
    Ok(Arc::new(UnionAuthorizer::new(authorizers)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_config_map_says_whom_to_trust() {
        let key = rcgen::KeyPair::generate().unwrap();
        let ca = rcgen::CertificateParams::new(vec!["ca".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap()
            .pem();
        let data = json!({"client-ca-file": ca, "requestheader-client-ca-file": ca,
            "requestheader-allowed-names": "[\"front-proxy-client\"]",
            "requestheader-username-headers": "[\"X-Remote-User\"]",
            "requestheader-uid-headers": "null",
            "requestheader-group-headers": "[\"X-Remote-Group\"]",
            "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]"});
        let delegation = Delegation::of(&data);
        assert_eq!(delegation.client_ca.len(), 1);
        let proxy = delegation.request_header.unwrap();
        assert_eq!(proxy.allowed_names, ["front-proxy-client"]);
        assert_eq!(proxy.username_headers, ["X-Remote-User"]);
        assert!(proxy.uid_headers.is_empty());
        assert_eq!(proxy.extra_header_prefixes, ["X-Remote-Extra-"]);
        assert!(Delegation::of(&json!({})).request_header.is_none());
    }
}
