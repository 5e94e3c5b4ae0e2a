//! The bearer-token authenticators kapi adds after client certificates: the static token
//! file of `--token-auth-file`, this server's service-account tokens, then the JWT issuers of
//! `--authentication-config`.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_builtin::token::{ServiceAccountAuthenticator, ServiceAccountTokens};
use kapi_server::ApiHandler;
use kapi_server::authn::{BearerToken, TokenAuthenticator, TokenFile, oidc};

/// The bearer-token authenticator: the token file (if any), service-account tokens (whose
/// bound objects are looked up in `api`'s core collections), then the configured JWT issuers.
pub fn bearer_tokens(
    token_file: Option<&Path>,
    authentication_config: Option<&Path>,
    tokens: Arc<ServiceAccountTokens>,
    api: &ApiHandler,
) -> Result<BearerToken> {
    let mut authenticators: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
    if let Some(path) = token_file {
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
    if let Some(path) = authentication_config {
        for jwt in oidc::read_config(path)? {
            authenticators.push(Arc::new(jwt));
        }
    }
    Ok(BearerToken::new(authenticators))
}
