//! Webhook token authentication (k8s.io/apiserver's plugin/pkg/authenticator/token/webhook):
//! a bearer token no other authenticator knows is asked of a remote service as a TokenReview
//! (authentication.k8s.io/v1, or v1beta1 with `--authentication-token-webhook-version`)
//! POSTed to the server of `--authentication-token-webhook-config-file` (a kubeconfig). The
//! users it vouches for are cached for `--authentication-token-webhook-cache-ttl` (2m), keyed
//! by a hash of the token (the token itself is never kept).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::{AuthenticationError, TokenAuthenticator};
use crate::UserInfo;
use crate::webhook_client::WebhookClient;

/// How long a review may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Cached users kept at most.
const CACHE_ENTRIES: usize = 10_000;

/// The webhook token authenticator.
pub struct WebhookTokenAuthenticator {
    client: WebhookClient,
    api_version: &'static str,
    audiences: Vec<String>,
    ttl: Duration,
    cache: Mutex<HashMap<Vec<u8>, (Instant, UserInfo)>>,
}

impl WebhookTokenAuthenticator {
    /// The authenticator of the kubeconfig at `path`, speaking TokenReview `version` (`v1` or
    /// `v1beta1`), asking for `audiences` (the API audiences), caching users for `ttl`.
    pub fn from_kubeconfig(
        path: &Path,
        version: &str,
        audiences: Vec<String>,
        ttl: Duration,
    ) -> Result<WebhookTokenAuthenticator, String> {
        let api_version = match version {
            "v1" => "authentication.k8s.io/v1",
            "v1beta1" => "authentication.k8s.io/v1beta1",
            other => {
                return Err(format!(
                    "unsupported authentication webhook version {other:?}"
                ));
            }
        };
        let client = WebhookClient::from_kubeconfig(path)
            .map_err(|err| format!("authentication webhook config {:?}: {err}", path.display()))?;
        Ok(WebhookTokenAuthenticator::new(
            client,
            api_version,
            audiences,
            ttl,
        ))
    }

    /// Delegated authentication, as an extension API server authenticates bearer tokens
    /// (upstream's DelegatingAuthenticatorConfig): TokenReviews (v1) created on the API
    /// server of the kubeconfig at `path`, users cached for `ttl`.
    pub fn delegated(path: &Path, ttl: Duration) -> Result<WebhookTokenAuthenticator, String> {
        let client = WebhookClient::from_kubeconfig(path)
            .map_err(|err| format!("authentication kubeconfig {:?}: {err}", path.display()))?
            .with_path("/apis/authentication.k8s.io/v1/tokenreviews");
        let version = "authentication.k8s.io/v1";
        Ok(WebhookTokenAuthenticator::new(
            client,
            version,
            Vec::new(),
            ttl,
        ))
    }

    fn new(
        client: WebhookClient,
        api_version: &'static str,
        audiences: Vec<String>,
        ttl: Duration,
    ) -> WebhookTokenAuthenticator {
        WebhookTokenAuthenticator {
            client,
            api_version,
            audiences,
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, key: &[u8]) -> Option<UserInfo> {
        let cache = self.cache.lock();
        let (expires, user) = cache.get(key)?;
        (*expires > Instant::now()).then(|| user.clone())
    }

    fn remember(&self, key: Vec<u8>, user: &UserInfo) {
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_ENTRIES {
            let now = Instant::now();
            cache.retain(|_, (expires, _)| *expires > now);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now() + self.ttl, user.clone()));
    }
}

/// The user of an authenticated TokenReview status.
fn user_of(status: &Value) -> UserInfo {
    let user = &status["user"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    let extra: BTreeMap<String, Vec<String>> = user["extra"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), strings(v)))
        .collect();
    UserInfo {
        name: user["username"].as_str().unwrap_or_default().to_string(),
        uid: user["uid"].as_str().unwrap_or_default().to_string(),
        groups: strings(&user["groups"]),
        extra,
    }
}

#[async_trait]
impl TokenAuthenticator for WebhookTokenAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let key = ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
            .as_ref()
            .to_vec();
        if let Some(user) = self.cached(&key) {
            return Ok(Some(user));
        }
        let mut spec = json!({"token": token});
        if !self.audiences.is_empty() {
            spec["audiences"] = json!(self.audiences);
        }
        let review = json!({"apiVersion": self.api_version, "kind": "TokenReview", "spec": spec});
        let body = self
            .client
            .post(serde_json::to_vec(&review).unwrap_or_default(), TIMEOUT)
            .await
            .map_err(AuthenticationError)?;
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|err| AuthenticationError(format!("decoding the TokenReview: {err}")))?;
        let status = &answer["status"];
        if status["authenticated"] != true {
            let error = status["error"]
                .as_str()
                .unwrap_or("token not authenticated");
            return Err(AuthenticationError(error.to_string()));
        }
        let user = user_of(status);
        self.remember(key, &user);
        Ok(Some(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_name_their_users() {
        let status = json!({"authenticated": true, "user": {"username": "jane", "uid": "42",
            "groups": ["dev"], "extra": {"scopes": ["a", "b"]}}});
        let user = user_of(&status);
        assert_eq!((user.name.as_str(), user.uid.as_str()), ("jane", "42"));
        assert_eq!(user.groups, ["dev"]);
        assert_eq!(user.extra["scopes"], ["a", "b"]);
    }
}
