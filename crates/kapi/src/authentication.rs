//! The bearer-token authenticators kapi adds after client certificates: the static token
//! file of `--token-auth-file`, then this server's service-account tokens.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use kapi_builtin::token::{ServiceAccountAuthenticator, ServiceAccountTokens};
use kapi_server::ApiHandler;
use kapi_server::authn::{BearerToken, TokenAuthenticator, TokenFile};

/// The bearer-token authenticator: the token file (if any), then service-account tokens,
/// whose bound objects are looked up in `api`'s core collections.
pub fn bearer_tokens(
    token_file: Option<&Path>,
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
    Ok(BearerToken::new(authenticators))
}
