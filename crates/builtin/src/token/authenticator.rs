//! Service-account tokens as credentials (upstream's service-account token authenticator):
//! a JWT this server's keys verify, issued by its issuer, for one of the API audiences,
//! whose service account (and the pod or secret it is bound to) still exists with the uid
//! the token names.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_apimachinery::schema::GroupResource;
use kapi_server::authn::{AuthenticationError, TokenAuthenticator};
use kapi_server::endpoints::Served;
use kapi_server::registry::ReadVersion;
use kapi_server::{UserInfo, object};

use super::{ServiceAccountTokens, TokenError, VerifiedToken, unix_now};
use crate::util::str_of;

/// Authenticates requests bearing this server's service-account tokens.
pub struct ServiceAccountAuthenticator {
    tokens: Arc<ServiceAccountTokens>,
    serviceaccounts: Served,
    pods: Served,
    secrets: Served,
}

impl ServiceAccountAuthenticator {
    /// Verifies with `tokens`; looks the bound objects up in the served collections.
    pub fn new(
        tokens: Arc<ServiceAccountTokens>,
        serviceaccounts: Served,
        pods: Served,
        secrets: Served,
    ) -> ServiceAccountAuthenticator {
        ServiceAccountAuthenticator {
            tokens,
            serviceaccounts,
            pods,
            secrets,
        }
    }

    fn served(&self, resource: &str) -> Option<Served> {
        match resource {
            "serviceaccounts" => Some(self.serviceaccounts.clone()),
            "pods" => Some(self.pods.clone()),
            "secrets" => Some(self.secrets.clone()),
            _ => None,
        }
    }
}

#[async_trait]
impl TokenAuthenticator for ServiceAccountAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let verified = match self.tokens.verify(token, &[], unix_now()) {
            Ok(verified) => verified,
            // Not a JWT, or another issuer's: not ours to judge.
            Err(TokenError::Malformed | TokenError::Issuer(..)) => return Ok(None),
            Err(err) => return Err(AuthenticationError(err.to_string())),
        };
        let lookup = |resource: &str| self.served(resource);
        let verified = still_valid(&lookup, verified)
            .await
            .map_err(AuthenticationError)?;
        Ok(Some(verified.user))
    }
}

/// Checks that the token's service account, and the pod or secret it is bound to, still
/// exist with the uids the token names (and are not being deleted), as upstream's
/// service-account token validator does. `lookup` finds a core collection by resource.
pub(crate) async fn still_valid(
    lookup: &(dyn Fn(&str) -> Option<Served> + Send + Sync),
    verified: VerifiedToken,
) -> Result<VerifiedToken, String> {
    let claims = &verified.kubernetes;
    let namespace = claims["namespace"].as_str().unwrap_or_default();
    for (resource, reference) in [
        ("serviceaccounts", &claims["serviceaccount"]),
        ("pods", &claims["pod"]),
        ("secrets", &claims["secret"]),
    ] {
        if !reference.is_object() {
            continue;
        }
        let Some(served) = lookup(resource) else {
            continue;
        };
        let name = str_of(reference, "name");
        let found = served
            .registry
            .get(
                &GroupResource::new("", resource),
                namespace,
                name,
                &ReadVersion::MostRecent,
            )
            .await
            .and_then(|item| item.decode());
        let valid = found.is_ok_and(|object| {
            object::uid(&object) == str_of(reference, "uid") && !object::is_deleting(&object)
        });
        if !valid {
            return Err("service account token has been invalidated".into());
        }
    }
    Ok(verified)
}
