//! JWT authenticators from the structured authentication configuration
//! (`--authentication-config`, apiserver.config.k8s.io AuthenticationConfiguration): tokens
//! issued by an OpenID Connect provider, verified with the keys its discovery document
//! points to, checked for issuer, audience and validity, and mapped to a user by claims.
//!
//! Claim mappings and validation rules by claim are supported; CEL expressions in the
//! configuration are refused when the file is read (kapi-server has no CEL).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

use super::token::TokenAuthenticator;
use super::{AuthenticationError, UserInfo};
use crate::webhook_client;

/// How long fetching the discovery document or the keys may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading the authentication configuration {0:?}: {1}")]
    Read(String, String),
    #[error("authentication configuration {0:?}: {1}")]
    Invalid(String, String),
}

/// A claim mapped to a user field, with a prefix.
#[derive(Clone, Debug, Default)]
struct ClaimMapping {
    claim: String,
    prefix: String,
}

/// One `jwt` entry of the configuration.
pub struct JwtAuthenticator {
    issuer: String,
    discovery_url: String,
    /// PEM certificates to trust for the issuer (the system roots when empty).
    certificate_authority: Vec<u8>,
    audiences: Vec<String>,
    /// `claimValidationRules` with `claim` and `requiredValue`.
    required_claims: Vec<(String, String)>,
    username: ClaimMapping,
    groups: Option<ClaimMapping>,
    uid: Option<String>,
    /// The issuer's signing keys (JWKs), once fetched.
    keys: Mutex<Vec<Value>>,
}

/// Reads the `jwt` authenticators of an AuthenticationConfiguration file (YAML or JSON).
pub fn read_config(path: &Path) -> Result<Vec<JwtAuthenticator>, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|err| ConfigError::Read(name.clone(), err.to_string()))?;
    let config: Value = serde_yaml_ng::from_str(&text)
        .map_err(|err| ConfigError::Read(name.clone(), err.to_string()))?;
    let invalid = |message: String| ConfigError::Invalid(name.clone(), message);
    if config["kind"] != "AuthenticationConfiguration" {
        return Err(invalid("kind must be AuthenticationConfiguration".into()));
    }
    config["jwt"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, jwt)| {
            JwtAuthenticator::from_config(jwt).map_err(|err| invalid(format!("jwt[{i}]: {err}")))
        })
        .collect()
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

impl JwtAuthenticator {
    fn from_config(jwt: &Value) -> Result<JwtAuthenticator, String> {
        let issuer = &jwt["issuer"];
        let url = text(&issuer["url"]);
        if !url.starts_with("https://") {
            return Err("issuer.url must be an https URL".into());
        }
        let audiences: Vec<String> = issuer["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        if audiences.is_empty() {
            return Err("issuer.audiences is required".into());
        }
        let mut required_claims = Vec::new();
        for rule in jwt["claimValidationRules"].as_array().into_iter().flatten() {
            if rule.get("expression").is_some() {
                return Err(
                    "claimValidationRules expressions (CEL) are not supported by kapi".into(),
                );
            }
            required_claims.push((text(&rule["claim"]), text(&rule["requiredValue"])));
        }
        let mappings = &jwt["claimMappings"];
        let mapping = |field: &str| -> Result<Option<ClaimMapping>, String> {
            let value = &mappings[field];
            if value.get("expression").is_some() {
                return Err(format!(
                    "claimMappings.{field}.expression (CEL) is not supported by kapi"
                ));
            }
            Ok(value.get("claim").map(|claim| ClaimMapping {
                claim: text(claim),
                prefix: text(&value["prefix"]),
            }))
        };
        if jwt.get("userValidationRules").is_some() || mappings.get("extra").is_some() {
            return Err(
                "userValidationRules and claimMappings.extra (CEL) are not supported by kapi"
                    .into(),
            );
        }
        let username = mapping("username")?.ok_or("claimMappings.username.claim is required")?;
        let discovery_url = match issuer["discoveryURL"].as_str() {
            Some(url) => url.to_string(),
            None => format!(
                "{}/.well-known/openid-configuration",
                url.trim_end_matches('/')
            ),
        };
        Ok(JwtAuthenticator {
            issuer: url,
            discovery_url,
            certificate_authority: text(&issuer["certificateAuthority"]).into_bytes(),
            audiences,
            required_claims,
            username,
            groups: mapping("groups")?,
            uid: mappings["uid"].get("claim").map(text),
            keys: Mutex::new(Vec::new()),
        })
    }

    /// Fetches the issuer's keys through its discovery document.
    async fn fetch_keys(&self) -> Result<Vec<Value>, String> {
        let ca = &self.certificate_authority;
        let discovery = webhook_client::get(&self.discovery_url, ca, FETCH_TIMEOUT).await?;
        let discovery: Value = serde_json::from_slice(&discovery).map_err(|err| err.to_string())?;
        if discovery["issuer"] != self.issuer.as_str() {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {:?}",
                self.issuer,
                text(&discovery["issuer"])
            ));
        }
        let jwks_uri = text(&discovery["jwks_uri"]);
        let jwks = webhook_client::get(&jwks_uri, ca, FETCH_TIMEOUT).await?;
        let jwks: Value = serde_json::from_slice(&jwks).map_err(|err| err.to_string())?;
        Ok(jwks["keys"].as_array().cloned().unwrap_or_default())
    }

    /// The key with `kid` (any key when the token names none), fetching the keys when
    /// they are not known yet or the key is new.
    async fn key(&self, kid: &str) -> Result<Vec<Value>, String> {
        let matching = |keys: &[Value]| -> Vec<Value> {
            keys.iter()
                .filter(|k| kid.is_empty() || k["kid"] == kid)
                .cloned()
                .collect()
        };
        let known = matching(&self.keys.lock());
        if !known.is_empty() {
            return Ok(known);
        }
        let fetched = self.fetch_keys().await?;
        let found = matching(&fetched);
        *self.keys.lock() = fetched;
        Ok(found)
    }

    /// The user of verified claims.
    fn user(&self, claims: &Value) -> Result<UserInfo, String> {
        for (claim, required) in &self.required_claims {
            if claims[claim] != required.as_str() {
                return Err(format!(
                    "oidc: required claim {claim} value does not match. Got = {}, want = {required}",
                    claims[claim]
                ));
            }
        }
        let username = claims[&self.username.claim].as_str().ok_or_else(|| {
            format!(
                "oidc: parse username claims {:?}: claim not present",
                self.username.claim
            )
        })?;
        if self.username.claim == "email" && claims.get("email_verified").is_some_and(|v| v != true)
        {
            return Err("oidc: email not verified".into());
        }
        let groups = match &self.groups {
            None => Vec::new(),
            Some(mapping) => match &claims[&mapping.claim] {
                Value::String(group) => vec![format!("{}{group}", mapping.prefix)],
                Value::Array(list) => list
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|group| format!("{}{group}", mapping.prefix))
                    .collect(),
                _ => Vec::new(),
            },
        };
        Ok(UserInfo {
            name: format!("{}{username}", self.username.prefix),
            uid: self
                .uid
                .as_ref()
                .map(|claim| text(&claims[claim]))
                .unwrap_or_default(),
            groups,
            ..UserInfo::default()
        })
    }
}

/// Whether `signature` over `message` verifies with the JWK `key` for algorithm `alg`.
fn verifies(key: &Value, alg: &str, message: &[u8], signature: &[u8]) -> bool {
    let decode = |field: &str| {
        URL_SAFE_NO_PAD
            .decode(key[field].as_str().unwrap_or_default())
            .ok()
    };
    match (alg, key["kty"].as_str()) {
        ("RS256", Some("RSA")) => {
            let (Some(n), Some(e)) = (decode("n"), decode("e")) else {
                return false;
            };
            RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, signature)
                .is_ok()
        }
        ("ES256", Some("EC")) => {
            let (Some(x), Some(y)) = (decode("x"), decode("y")) else {
                return false;
            };
            let point = [&[4u8][..], &x, &y].concat();
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(message, signature)
                .is_ok()
        }
        _ => false,
    }
}

/// The header and claims of a JWT, not verified yet, and the signed part and signature.
fn split(token: &str) -> Option<(Value, Value, &str, Vec<u8>)> {
    let mut parts = token.split('.');
    let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let json =
        |part: &str| serde_json::from_slice::<Value>(&URL_SAFE_NO_PAD.decode(part).ok()?).ok();
    let signed = &token[..header.len() + 1 + claims.len()];
    Some((
        json(header)?,
        json(claims)?,
        signed,
        URL_SAFE_NO_PAD.decode(signature).ok()?,
    ))
}

#[async_trait]
impl TokenAuthenticator for JwtAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let Some((header, claims, signed, signature)) = split(token) else {
            return Ok(None);
        };
        if claims["iss"] != self.issuer.as_str() {
            return Ok(None);
        }
        let fail = |message: String| AuthenticationError(message);
        let alg = header["alg"].as_str().unwrap_or_default();
        let keys = self
            .key(header["kid"].as_str().unwrap_or_default())
            .await
            .map_err(fail)?;
        if !keys
            .iter()
            .any(|key| verifies(key, alg, signed.as_bytes(), &signature))
        {
            return Err(fail(
                "oidc: verify token: failed to verify signature".into(),
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        if claims["exp"].as_i64().is_none_or(|exp| exp <= now) {
            return Err(fail("oidc: verify token: oidc: token is expired".into()));
        }
        if claims["nbf"].as_i64().is_some_and(|nbf| nbf > now) {
            return Err(fail(
                "oidc: verify token: oidc: current time before the nbf (not before) time".into(),
            ));
        }
        let audiences: Vec<&str> = match &claims["aud"] {
            Value::String(aud) => vec![aud.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences
            .iter()
            .any(|aud| self.audiences.iter().any(|a| a == aud))
        {
            return Err(fail(format!(
                "oidc: verify token: oidc: expected audience in {:?} got {audiences:?}",
                self.audiences
            )));
        }
        self.user(&claims).map(Some).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn authenticator() -> JwtAuthenticator {
        JwtAuthenticator::from_config(&json!({
            "issuer": {"url": "https://issuer.example", "audiences": ["kapi"]},
            "claimValidationRules": [{"claim": "hd", "requiredValue": "example.com"}],
            "claimMappings": {"username": {"claim": "email", "prefix": "oidc:"},
                "groups": {"claim": "groups", "prefix": "oidc:"}, "uid": {"claim": "sub"}},
        }))
        .unwrap()
    }

    #[test]
    fn claims_map_to_users() {
        let user = authenticator()
            .user(&json!({"email": "a@example.com", "hd": "example.com", "groups": ["devs"], "sub": "42"}))
            .unwrap();
        assert_eq!(user.name, "oidc:a@example.com");
        assert_eq!(user.groups, ["oidc:devs"]);
        assert_eq!(user.uid, "42");
        assert!(
            authenticator()
                .user(&json!({"email": "a@example.com", "hd": "other.com"}))
                .is_err()
        );
        assert!(
            authenticator()
                .user(
                    &json!({"email": "a@example.com", "hd": "example.com", "email_verified": false})
                )
                .is_err()
        );
    }

    #[test]
    fn configurations_with_cel_are_refused() {
        let with_expression = json!({"issuer": {"url": "https://i", "audiences": ["a"]},
            "claimMappings": {"username": {"expression": "claims.sub"}}});
        assert!(JwtAuthenticator::from_config(&with_expression).is_err());
        let plain_http = json!({"issuer": {"url": "http://i", "audiences": ["a"]},
            "claimMappings": {"username": {"claim": "sub", "prefix": ""}}});
        assert!(JwtAuthenticator::from_config(&plain_http).is_err());
    }
}
