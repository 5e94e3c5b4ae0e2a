//! The authenticators of the flags: front proxies (`--requestheader-*`, tried first), then
//! (after client certificates) the bearer tokens: the static token file of
//! `--token-auth-file`, this server's service-account tokens, the JWT issuers of
//! `--authentication-config`, then the token webhook of
//! `--authentication-token-webhook-config-file`.

use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_builtin::bootstrap_token::BootstrapTokenAuthenticator;
use kapi_builtin::token::{ServiceAccountAuthenticator, ServiceAccountTokens};
use kapi_server::authn::webhook::WebhookTokenAuthenticator;
use kapi_server::authn::{BearerToken, RequestHeaderConfig, TokenAuthenticator, TokenFile, oidc};

use crate::builtin_resources::BuiltinResources;
use crate::options::ServeOptions;

/// The bearer-token authenticator: the token file (if any), service-account tokens (whose
/// bound objects are looked up in the built-in collections), the configured JWT issuers,
/// then the token webhook (if any).
pub fn bearer_tokens(
    options: &ServeOptions,
    tokens: Arc<ServiceAccountTokens>,
    resources: &BuiltinResources,
) -> Result<BearerToken> {
    let mut authenticators: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
    let audiences = tokens.api_audiences().to_vec();
    if let Some(path) = options.token_auth_file.as_deref() {
        authenticators.push(Arc::new(TokenFile::read(path)?));
    }
    let tokens_issuer = tokens.issuer().to_string();
    authenticators.push(Arc::new(ServiceAccountAuthenticator::new(
        tokens,
        resources.service_accounts.clone(),
        resources.pods.clone(),
        resources.secrets.clone(),
    )));
    if options.enable_bootstrap_token_auth {
        authenticators.push(Arc::new(BootstrapTokenAuthenticator::new(
            resources.secrets.clone(),
        )));
    }
    if let Some(path) = options.authentication_config.as_deref() {
        // A JWT issuer may not be the service-account issuer, whose tokens are checked above.
        let service_account_issuers = [tokens_issuer];
        for jwt in oidc::read_config(path, &service_account_issuers)? {
            authenticators.push(Arc::new(jwt));
        }
    }
    if let Some(path) = options.authentication_token_webhook_config_file.as_deref() {
        let webhook = WebhookTokenAuthenticator::from_kubeconfig(
            path,
            &options.authentication_token_webhook_version,
            audiences,
            options.authentication_token_webhook_cache_ttl,
        )
        .map_err(anyhow::Error::msg)?;
        authenticators.push(Arc::new(webhook));
    }
    Ok(BearerToken::new(authenticators))
}

/// The front-proxy settings of `--requestheader-*`; none without
/// `--requestheader-client-ca-file`. Checked and warned about as upstream does.
pub fn request_header(options: &ServeOptions) -> Result<Option<RequestHeaderConfig>> {
    let lists = [
        (
            "requestheader-allowed-names",
            &options.requestheader_allowed_names,
        ),
        (
            "requestheader-username-headers",
            &options.requestheader_username_headers,
        ),
        (
            "requestheader-uid-headers",
            &options.requestheader_uid_headers,
        ),
        (
            "requestheader-group-headers",
            &options.requestheader_group_headers,
        ),
        (
            "requestheader-extra-headers-prefix",
            &options.requestheader_extra_headers_prefix,
        ),
    ];
    for (flag, values) in lists {
        if values.iter().any(|v| v.trim().is_empty()) {
            anyhow::bail!("empty value in {flag:?}");
        }
    }
    for (flag, values, standard) in [
        (
            "username-headers",
            &options.requestheader_username_headers,
            "X-Remote-User",
        ),
        (
            "uid-headers",
            &options.requestheader_uid_headers,
            "X-Remote-Uid",
        ),
        (
            "group-headers",
            &options.requestheader_group_headers,
            "X-Remote-Group",
        ),
        (
            "extra-headers-prefix",
            &options.requestheader_extra_headers_prefix,
            "X-Remote-Extra-",
        ),
    ] {
        if !values.is_empty() && !values.iter().any(|v| v.eq_ignore_ascii_case(standard)) {
            tracing::warn!(
                "--requestheader-{flag} is set without specifying the standard {standard} header - API aggregation will not work"
            );
        }
    }
    let Some(path) = &options.requestheader_client_ca_file else {
        return Ok(None);
    };
    let client_ca = kapi_server::serving::certificates(path)
        .with_context(|| format!("--requestheader-client-ca-file {}", path.display()))?;
    Ok(Some(RequestHeaderConfig {
        client_ca,
        allowed_names: options.requestheader_allowed_names.clone(),
        username_headers: options.requestheader_username_headers.clone(),
        uid_headers: options.requestheader_uid_headers.clone(),
        group_headers: options.requestheader_group_headers.clone(),
        extra_header_prefixes: options.requestheader_extra_headers_prefix.clone(),
    }))
}
