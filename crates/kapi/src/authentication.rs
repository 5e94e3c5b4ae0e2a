//! The bearer-token authenticators kapi adds after client certificates: the static token
//! file of `--token-auth-file`, this server's service-account tokens, the JWT issuers of
//! `--authentication-config`, then the token webhook of
//! `--authentication-token-webhook-config-file`.

use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_builtin::token::{ServiceAccountAuthenticator, ServiceAccountTokens};
use kapi_server::ApiHandler;
use kapi_server::authn::webhook::WebhookTokenAuthenticator;
use kapi_server::authn::{BearerToken, TokenAuthenticator, TokenFile, oidc};

use crate::flags::ServeOptions;

/// The bearer-token authenticator: the token file (if any), service-account tokens (whose
/// bound objects are looked up in `api`'s core collections), the configured JWT issuers,
/// then the token webhook (if any).
pub fn bearer_tokens(
    options: &ServeOptions,
    tokens: Arc<ServiceAccountTokens>,
    api: &ApiHandler,
) -> Result<BearerToken> {
    let mut authenticators: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
    let audiences = tokens.api_audiences().to_vec();
    if let Some(path) = options.token_auth_file.as_deref() {
        authenticators.push(Arc::new(TokenFile::read(path)?));
    }
    let served = |plural: &str| {
        api.served("", "v1", plural)
            .with_context(|| format!("the built-in resources have no {plural}"))
    };
    authenticators.push(Arc::new(ServiceAccountAuthenticator::new(
        tokens,
        served("serviceaccounts")?,
        served("pods")?,
        served("secrets")?,
    )));
    if let Some(path) = options.authentication_config.as_deref() {
        for jwt in oidc::read_config(path)? {
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
