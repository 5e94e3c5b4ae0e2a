//! Service-account tokens as credentials (upstream's service-account token authenticator):
//! a JWT this server's keys verify, issued by its issuer, for one of the API audiences,
//! whose service account (and the pod or secret it is bound to) still exists with the uid
//! the token names.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use kapi_apimachinery::ApiError;
use kapi_apimachinery::schema::GroupResource;
use kapi_server::authn::{AuthenticationError, TokenAuthenticator};
use kapi_server::authn::{add_audit_annotation, add_warning};
use kapi_server::endpoints::Served;
use kapi_server::registry::{ReadVersion, Write};
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

impl ServiceAccountAuthenticator {
    /// A legacy, secret-based token (upstream's legacy validator): valid while its Secret
    /// exists, is not being deleted, holds this very token and is not labelled invalid, and
    /// its service account exists with the uid the token names. Its use is recorded in the
    /// Secret's `kubernetes.io/legacy-token-last-used` label.
    async fn authenticate_legacy(&self, token: &str) -> Result<UserInfo, AuthenticationError> {
        let invalid = |why: &str| AuthenticationError(why.to_string());
        let verified = self
            .tokens
            .verify_legacy(token)
            .map_err(|err| AuthenticationError(err.to_string()))?;
        // Legacy tokens carry no audience (upstream's JWT authenticator notes them first).
        add_audit_annotation(
            "authentication.k8s.io/legacy-token",
            verified.user.name.clone(),
        );
        let claims = &verified.kubernetes;
        let namespace = claims["namespace"].as_str().unwrap_or_default();
        let read = |served: &Served, resource: &str, name: &str| {
            let served = served.clone();
            let (resource, name) = (resource.to_string(), name.to_string());
            let namespace = namespace.to_string();
            async move {
                served
                    .registry
                    .get(
                        &GroupResource::new("", &resource),
                        &namespace,
                        &name,
                        &ReadVersion::MostRecent,
                    )
                    .await
                    .and_then(|item| item.decode())
                    .ok()
            }
        };
        let secret_name = claims["secret"]["name"].as_str().unwrap_or_default();
        let secret = read(&self.secrets, "secrets", secret_name)
            .await
            .filter(|secret| !object::is_deleting(secret))
            .ok_or_else(|| invalid("service account token has been invalidated"))?;
        let stored = secret["data"]["token"].as_str().unwrap_or_default();
        let presented = base64::engine::general_purpose::STANDARD.encode(token);
        if stored != presented {
            return Err(invalid(
                "service account token does not match server's copy",
            ));
        }
        let account_name = claims["serviceaccount"]["name"]
            .as_str()
            .unwrap_or_default();
        let uid = claims["serviceaccount"]["uid"].as_str().unwrap_or_default();
        let account = read(&self.serviceaccounts, "serviceaccounts", account_name)
            .await
            .filter(|account| object::uid(account) == uid && !object::is_deleting(account))
            .ok_or_else(|| invalid("service account token has been invalidated"))?;
        let labels = &secret["metadata"]["labels"];
        let last_used = labels[LAST_USED_LABEL].as_str();
        if labels[INVALID_SINCE_LABEL]
            .as_str()
            .is_some_and(|s| !s.is_empty())
        {
            add_audit_annotation(
                "authentication.k8s.io/legacy-token-invalidated",
                format!("{secret_name}/{namespace}"),
            );
            self.mark_used(namespace, secret_name, last_used);
            return Err(invalid(&format!(
                "the token in secret {namespace}/{secret_name} for service account \
                 {namespace}/{account_name} has been marked invalid. Use tokens from the \
                 TokenRequest API or manually created secret-based tokens, or remove the \
                 '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this \
                 token"
            )));
        }
        record_secret_kind(&account, secret_name);
        self.mark_used(namespace, secret_name, last_used);
        Ok(verified.user)
    }

    /// Labels the token's Secret with the day it was last used, at most once a day (in the
    /// background: authentication does not wait for the write).
    fn mark_used(&self, namespace: &str, secret: &str, last_used: Option<&str>) {
        let now = unix_now();
        let day =
            |seconds: i64| kapi_apimachinery::gotime::format_rfc3339(seconds)[..10].to_string();
        let (today, tomorrow) = (day(now), day(now + 86_400));
        if last_used.is_some_and(|used| used == today || used == tomorrow) {
            return;
        }
        let secrets = self.secrets.clone();
        let (namespace, secret) = (namespace.to_string(), secret.to_string());
        tokio::spawn(async move {
            let written = secrets
                .registry
                .update(
                    &secrets.definition,
                    &namespace,
                    &secret,
                    Write::own(kapi_server::registry::KUBE_APISERVER),
                    |current| {
                        let mut current = current.cloned().ok_or_else(|| {
                            ApiError::not_found(&secrets.definition.group_resource(), &secret)
                        })?;
                        current["metadata"]["labels"][LAST_USED_LABEL] = today.clone().into();
                        Ok(current)
                    },
                )
                .await;
            if let Err(err) = written {
                tracing::warn!(%err, namespace, secret, "Unable to record a legacy token's use");
            }
        });
    }
}

/// Notes in the audit event whether the token's Secret is one the token controller made
/// for `account` (listed in its `secrets`, with a warning to move on) or a manual one.
fn record_secret_kind(account: &serde_json::Value, secret: &str) {
    let listed = account["secrets"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["name"] == secret));
    if listed {
        add_warning(
            "Use tokens from the TokenRequest API or manually created secret-based tokens \
             instead of auto-generated secret-based tokens.",
        );
        add_audit_annotation(
            "authentication.k8s.io/legacy-token-autogenerated-secret",
            secret.into(),
        );
    } else {
        add_audit_annotation(
            "authentication.k8s.io/legacy-token-manual-secret",
            secret.into(),
        );
    }
}

/// The day a legacy token was last used (upstream's label).
const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The day a legacy token was invalidated (by kube-controller-manager's cleaner).
const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

#[async_trait]
impl TokenAuthenticator for ServiceAccountAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        // A TokenReview names its audiences; a request's own token is for the API's.
        let audiences = kapi_server::authn::reviewed_audiences().unwrap_or_default();
        let verified = match self.tokens.verify(token, &audiences, unix_now()) {
            Ok(verified) => verified,
            Err(TokenError::Issuer(issuer, _)) if issuer == super::LEGACY_ISSUER => {
                return self.authenticate_legacy(token).await.map(Some);
            }
            // Not a JWT, or another issuer's: not ours to judge.
            Err(TokenError::Malformed | TokenError::Issuer(..)) => return Ok(None),
            Err(err) => return Err(AuthenticationError(err.to_string())),
        };
        let lookup = |resource: &str| self.served(resource);
        let verified = still_valid(&lookup, verified)
            .await
            .map_err(AuthenticationError)?;
        kapi_server::authn::grant_audiences(verified.audiences);
        Ok(Some(verified.user))
    }
}

/// Checks that the token's service account, and the pod or secret it is bound to, still
/// exist with the uids the token names (and are not being deleted), as upstream's
/// service-account token validator does. `lookup` finds a core collection by resource.
async fn still_valid(
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
