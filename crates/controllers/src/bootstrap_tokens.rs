//! kube-controller-manager's bootstrap token controllers:
//! - `bootstrap-signer-controller` signs kube-public's `cluster-info` ConfigMap (its
//!   `kubeconfig`) with every bootstrap token marked `usage-bootstrap-signing` and not
//!   expired: a detached JWS (HS256, keyed by the token's secret, `kid` its id) under
//!   `jws-kubeconfig-<id>`, which a joining node checks the ConfigMap by; signatures of
//!   tokens gone or expired are removed.
//! - `token-cleaner-controller` deletes bootstrap token Secrets once their `expiration`
//!   has passed.
//!
//! Both look again whenever a Secret (or the ConfigMap) changes and when the next token
//! expires.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kapi_apimachinery::gotime::Timestamp;
use kapi_builtin::bootstrap_token::{BOOTSTRAP_TOKEN_NAMESPACE, BootstrapTokenSecret};
use kapi_server::endpoints::Served;
use kapi_server::informer;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The signer's name (`--controllers`).
pub const BOOTSTRAP_SIGNER_CONTROLLER: &str = "bootstrap-signer-controller";
/// The cleaner's name (`--controllers`).
pub const TOKEN_CLEANER_CONTROLLER: &str = "token-cleaner-controller";
const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
const CLUSTER_INFO: &str = "cluster-info";
const SIGNATURE_PREFIX: &str = "jws-kubeconfig-";
/// The longest wait between two looks, so that a missed wake-up is not forever.
const RESYNC: Duration = Duration::from_secs(300);

/// Starts the signer, writing through `client` (kube-system's `bootstrap-signer`) until
/// `stopping`.
pub fn start_bootstrap_signer(
    secrets: Served,
    config_maps: Served,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    let changed = Arc::new(Notify::new());
    informer::notify_on_changes([secrets.clone(), config_maps.clone()], &changed, &stopping);
    tokio::spawn(async move {
        loop {
            if let Err(err) = sign(&secrets, &config_maps, &client).await {
                tracing::warn!("{BOOTSTRAP_SIGNER_CONTROLLER}: {err}");
            }
            let next = next_expiration(&secrets);
            if !wait(&changed, &stopping, next).await {
                return;
            }
        }
    });
}

/// Starts the cleaner, deleting through `client` (kube-system's `token-cleaner`) until
/// `stopping`.
pub fn start_token_cleaner(secrets: Served, client: LoopbackClient, stopping: CancellationToken) {
    let changed = Arc::new(Notify::new());
    informer::notify_on_changes([secrets.clone()], &changed, &stopping);
    tokio::spawn(async move {
        loop {
            let now = Timestamp::now().seconds;
            for secret in secrets.cached_list(Some(BOOTSTRAP_TOKEN_NAMESPACE)) {
                let Some(token) = BootstrapTokenSecret::of(&secret) else {
                    continue;
                };
                if token.expired(now)
                    && !token.deleting()
                    && let Err(err) = delete(&client, &secret).await
                {
                    tracing::warn!("{TOKEN_CLEANER_CONTROLLER}: {err}");
                }
            }
            let next = next_expiration(&secrets);
            if !wait(&changed, &stopping, next).await {
                return;
            }
        }
    });
}

/// Waits for a change, for `until` (seconds since the epoch) to pass, or [`RESYNC`];
/// false once stopping.
async fn wait(changed: &Notify, stopping: &CancellationToken, until: Option<i64>) -> bool {
    let now = Timestamp::now().seconds;
    let pause = until.map_or(RESYNC, |until| {
        Duration::from_secs(until.saturating_sub(now).saturating_add(1).clamp(0, 300) as u64)
    });
    tokio::select! {
        () = stopping.cancelled() => false,
        () = changed.notified() => true,
        () = tokio::time::sleep(pause) => true,
    }
}

/// The earliest expiration still to come among the bootstrap token Secrets.
fn next_expiration(secrets: &Served) -> Option<i64> {
    let now = Timestamp::now().seconds;
    secrets
        .cached_list(Some(BOOTSTRAP_TOKEN_NAMESPACE))
        .iter()
        .filter_map(|secret| BootstrapTokenSecret::of(secret)?.expiration())
        .filter(|expiration| *expiration >= now)
        .min()
}

/// Deletes an expired token Secret, if it is still the one seen.
async fn delete(client: &LoopbackClient, secret: &Value) -> Result<(), String> {
    let name = secret["metadata"]["name"].as_str().unwrap_or_default();
    let path = format!("/api/v1/namespaces/{BOOTSTRAP_TOKEN_NAMESPACE}/secrets/{name}");
    let options = json!({"apiVersion": "v1", "kind": "DeleteOptions",
        "preconditions": {"uid": secret["metadata"]["uid"]}});
    match client
        .json(http::Method::DELETE, &path, None, Some(&options))
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if matches!(err.code(), 404 | 409) => Ok(()),
        Err(err) => Err(format!("deleting the expired token {name}: {err}")),
    }
}

/// Brings `cluster-info`'s signatures in line with the tokens that may sign.
async fn sign(
    secrets: &Served,
    config_maps: &Served,
    client: &LoopbackClient,
) -> Result<(), String> {
    let Some(mut config_map) = config_maps.cached(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO) else {
        return Ok(());
    };
    let Some(content) = config_map["data"]["kubeconfig"]
        .as_str()
        .map(str::to_string)
    else {
        return Ok(());
    };
    let now = Timestamp::now().seconds;
    let mut signatures = Map::new();
    for secret in secrets.cached_list(Some(BOOTSTRAP_TOKEN_NAMESPACE)) {
        let Some(token) = BootstrapTokenSecret::of(&secret) else {
            continue;
        };
        // Upstream's validateSecretForSigning.
        let (id, token_secret) = (token.data("token-id"), token.data("token-secret"));
        let named = token.name_id() == Some(id.as_str());
        if !named || token_secret.is_empty() || token.expired(now) || !token.usable_for("signing") {
            continue;
        }
        let signature = detached_signature(&content, &id, &token_secret);
        signatures.insert(format!("{SIGNATURE_PREFIX}{id}"), signature.into());
    }
    let data = config_map["data"]
        .as_object_mut()
        .expect("data is an object");
    let current: Map<String, Value> = data
        .iter()
        .filter(|(key, _)| key.starts_with(SIGNATURE_PREFIX))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if current == signatures {
        return Ok(());
    }
    data.retain(|key, _| !key.starts_with(SIGNATURE_PREFIX));
    data.extend(signatures);
    let path = format!("/api/v1/namespaces/{CLUSTER_INFO_NAMESPACE}/configmaps/{CLUSTER_INFO}");
    client
        .json(http::Method::PUT, &path, None, Some(&config_map))
        .await
        .map(drop)
        .map_err(|err| format!("updating {CLUSTER_INFO_NAMESPACE}/{CLUSTER_INFO}: {err}"))
}

/// The detached JWS of `content` signed with the token (k8s.io/cluster-bootstrap's
/// ComputeDetachedSignature): its protected header and signature, the payload left out.
fn detached_signature(content: &str, id: &str, secret: &str) -> String {
    let header = json!({"alg": "HS256", "kid": id}).to_string();
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(content)
    );
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, signing_input.as_bytes());
    let (header, _) = signing_input.split_once('.').expect("header.payload");
    format!("{header}..{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_upstreams_known_answers() {
        let content = "Hello from the other side. I must have called a thousand times.";
        let secret = "my voice is my passcode. my voice is my passcode";
        assert_eq!(
            detached_signature(content, "joshua", secret),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..SFoKn0-YxqnvpSExt4LuCZ_7pvIBdX3SoUO_NsTpkdg"
        );
        assert_eq!(
            detached_signature("", "joshua", secret),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..kzZha466Sbz_vFhUBjjYp2rl3F7yHgdDdUIBGxQg4js"
        );
    }

    #[test]
    fn signatures_are_detached_hs256_jws() {
        let signature = detached_signature("content", "abcdef", "0123456789abcdef");
        let (header, rest) = signature.split_once("..").unwrap();
        let header = URL_SAFE_NO_PAD.decode(header).unwrap();
        assert_eq!(header, br#"{"alg":"HS256","kid":"abcdef"}"#);
        // The signature verifies over header.payload with the token's secret.
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&header),
            URL_SAFE_NO_PAD.encode("content")
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"0123456789abcdef");
        let tag = URL_SAFE_NO_PAD.decode(rest).unwrap();
        assert!(ring::hmac::verify(&key, input.as_bytes(), &tag).is_ok());
    }
}
