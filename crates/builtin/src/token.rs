//! Service-account tokens, as kube-apiserver issues and verifies them: JWTs signed with the
//! `--service-account-signing-key-file` key (ES256 for ECDSA P-256 keys, RS256 for RSA keys),
//! verified with the `--service-account-key-file` public keys, carrying upstream's claims
//! (`iss`, `sub` = `system:serviceaccount:<namespace>:<name>`, `aud`, `exp`, `iat`, `nbf`,
//! `jti` and the private `kubernetes.io` claim naming the namespace, the service account and
//! the object the token is bound to). [`TokenRequestCreater`] answers
//! `serviceaccounts/token` (authentication.k8s.io/v1 TokenRequest).

mod authenticator;
mod der;
mod request;

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kapi_server::UserInfo;
use kapi_server::authn::jws::{Algorithm, Jws, VerifyingKey};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{Value, json};

pub use authenticator::ServiceAccountAuthenticator;
pub use request::TokenRequestCreater;
pub(crate) use request::unix_now;

/// The issuer kube-apiserver's `--service-account-issuer` usually names (and kapi's default).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The issuer of legacy, secret-based service-account tokens (kube-controller-manager's
/// token controller writes them into `kubernetes.io/service-account-token` Secrets).
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The prefix of service accounts' user names.
const USER_PREFIX: &str = "system:serviceaccount:";
/// The group of every service account, and the prefix of each namespace's group.
const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// Why a key could not be loaded or a token was not issued or accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("no supported key in the PEM data (ECDSA P-256 or RSA)")]
    NoKey,
    #[error("invalid key: {0}")]
    InvalidKey(String),
    #[error("signing failed")]
    Signing,
    #[error("token is malformed")]
    Malformed,
    #[error("token signature is invalid")]
    Signature,
    #[error("token issuer {0:?} is not {1:?}")]
    Issuer(String, String),
    #[error("token is expired")]
    Expired,
    #[error("token is not valid yet")]
    NotYetValid,
    #[error("token audiences {0:?} is invalid for the target audiences {1:?}")]
    Audience(Vec<String>, Vec<String>),
    #[error("token is not a service account token")]
    NotServiceAccount,
}

/// A key that signs tokens.
enum SigningKey {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A key tokens are verified with: its algorithm and the public key in ring's form.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PublicKey {
    algorithm: Algorithm,
    /// The uncompressed point (ECDSA) or the PKCS#1 RSAPublicKey DER (RSA).
    key: Vec<u8>,
}

impl PublicKey {
    /// The key ID upstream puts in the `kid` header: the unpadded base64url SHA-256 of the
    /// key's SubjectPublicKeyInfo DER.
    fn key_id(&self) -> String {
        let spki = der::subject_public_key_info(self.algorithm == Algorithm::Rs256, &self.key);
        URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki))
    }

    /// The key as a JSON Web Key (`/openid/v1/jwks`); `None` for a malformed RSA key.
    fn jwk(&self) -> Option<Value> {
        let encode = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        let kid = self.key_id();
        match self.algorithm {
            Algorithm::Rs256 => {
                let (n, e) = der::rsa_modulus_exponent(&self.key)?;
                Some(
                    json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": encode(&n), "e": encode(&e)}),
                )
            }
            Algorithm::Es256 => {
                let point = self.key.strip_prefix(&[4])?;
                let (x, y) = point.split_at(point.len() / 2);
                Some(
                    json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256", "x": encode(x), "y": encode(y)}),
                )
            }
        }
    }

    /// The key as the JWS verifier takes it.
    fn verifying_key(&self) -> VerifyingKey {
        match self.algorithm {
            Algorithm::Es256 => VerifyingKey::P256(self.key.clone()),
            Algorithm::Rs256 => VerifyingKey::Rsa(self.key.clone()),
        }
    }
}

/// Issues and verifies the service-account tokens of one server.
pub struct ServiceAccountTokens {
    issuer: String,
    /// The audiences tokens are issued for when a request names none (kube-apiserver's
    /// `--api-audiences`, defaulting to the issuer).
    api_audiences: Vec<String>,
    signing: SigningKey,
    key_id: String,
    verifying: Vec<PublicKey>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("issuer", &self.issuer)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// What a verified token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedToken {
    /// The service account's user: `system:serviceaccount:<ns>:<name>`, its uid, its groups
    /// and the extra of the bound pod and node and the token's `credential-id`.
    pub user: UserInfo,
    /// The token's audiences that were asked for.
    pub audiences: Vec<String>,
    /// The private `kubernetes.io` claim.
    pub kubernetes: Value,
}

impl ServiceAccountTokens {
    /// Loads the signing key (PEM: a PKCS#8 ECDSA P-256 or RSA key, or a PKCS#1 RSA key) and
    /// the keys to verify with (PEM public or private keys; the signing key's public key is
    /// always one of them).
    pub fn new(
        issuer: impl Into<String>,
        api_audiences: Vec<String>,
        signing_key_pem: &str,
        verification_pems: &[String],
    ) -> Result<Self, TokenError> {
        let issuer = issuer.into();
        let (signing, public) = signing_key(signing_key_pem)?;
        let mut verifying = vec![public.clone()];
        for pem in verification_pems {
            for key in public_keys(pem)? {
                if !verifying.contains(&key) {
                    verifying.push(key);
                }
            }
        }
        let api_audiences = if api_audiences.is_empty() {
            vec![issuer.clone()]
        } else {
            api_audiences
        };
        Ok(ServiceAccountTokens {
            issuer,
            api_audiences,
            key_id: public.key_id(),
            signing,
            verifying,
        })
    }

    /// The issuer (`iss`) of the tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audiences of tokens whose request names none.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// Signs `claims` (with `iss` set to the issuer) as a compact JWT.
    pub fn issue(&self, claims: &Value) -> Result<String, TokenError> {
        let mut claims = claims.clone();
        claims["iss"] = Value::from(self.issuer.as_str());
        self.signed(&claims)
    }

    /// A legacy token for the Secret `secret` of the service account `account` (with `uid`)
    /// in `namespace`: no expiry and no audience, as upstream's token controller signs them.
    pub fn issue_legacy(
        &self,
        namespace: &str,
        account: &str,
        uid: &str,
        secret: &str,
    ) -> Result<String, TokenError> {
        let prefix = "kubernetes.io/serviceaccount/";
        let mut claims = serde_json::Map::new();
        claims.insert("iss".into(), json!(LEGACY_ISSUER));
        claims.insert(format!("{prefix}namespace"), json!(namespace));
        claims.insert(format!("{prefix}secret.name"), json!(secret));
        claims.insert(format!("{prefix}service-account.name"), json!(account));
        claims.insert(format!("{prefix}service-account.uid"), json!(uid));
        claims.insert(
            "sub".into(),
            json!(service_account_username(namespace, account)),
        );
        self.signed(&Value::Object(claims))
    }

    /// Verifies a legacy token's signature and claims; its account and secret are then
    /// checked against storage by the authenticator.
    pub fn verify_legacy(&self, token: &str) -> Result<VerifiedToken, TokenError> {
        let claims = self.verified_claims(token)?;
        let issuer = claims["iss"].as_str().unwrap_or_default();
        if issuer != LEGACY_ISSUER {
            return Err(TokenError::Issuer(issuer.into(), LEGACY_ISSUER.into()));
        }
        let claim = |name: &str| {
            claims[format!("kubernetes.io/serviceaccount/{name}")]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let (namespace, account) = (claim("namespace"), claim("service-account.name"));
        if namespace.is_empty()
            || account.is_empty()
            || claims["sub"] != service_account_username(&namespace, &account).as_str()
        {
            return Err(TokenError::NotServiceAccount);
        }
        let uid = claim("service-account.uid");
        Ok(VerifiedToken {
            user: UserInfo {
                name: service_account_username(&namespace, &account),
                uid: uid.clone(),
                groups: vec![
                    ALL_SERVICE_ACCOUNTS.to_string(),
                    format!("{ALL_SERVICE_ACCOUNTS}:{namespace}"),
                ],
                extra: BTreeMap::new(),
            },
            audiences: Vec::new(),
            kubernetes: json!({"namespace": namespace,
                "serviceaccount": {"name": account, "uid": uid},
                "secret": {"name": claim("secret.name")}}),
        })
    }

    /// `claims` signed as a compact JWT.
    fn signed(&self, claims: &Value) -> Result<String, TokenError> {
        let algorithm = match self.signing {
            SigningKey::Ecdsa(_) => Algorithm::Es256,
            SigningKey::Rsa(_) => Algorithm::Rs256,
        };
        let header = json!({ "alg": algorithm.name(), "kid": self.key_id });
        let encode = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
        let message = format!("{}.{}", encode(&header), encode(claims));
        let signature = self.sign(message.as_bytes())?;
        Ok(format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, TokenError> {
        let rng = SystemRandom::new();
        match &self.signing {
            SigningKey::Ecdsa(key) => key
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| TokenError::Signing),
            SigningKey::Rsa(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut signature)
                    .map_err(|_| TokenError::Signing)?;
                Ok(signature)
            }
        }
    }

    /// The JSON Web Key Set of the verification keys (`/openid/v1/jwks`).
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = self.verifying.iter().filter_map(PublicKey::jwk).collect();
        json!({ "keys": keys })
    }

    /// The OpenID provider configuration (`/.well-known/openid-configuration`) of the
    /// issuer, whose keys are at `jwks_uri`.
    pub fn openid_configuration(&self, jwks_uri: &str) -> Value {
        let mut algorithms: Vec<&str> = self.verifying.iter().map(|k| k.algorithm.name()).collect();
        algorithms.sort_unstable();
        algorithms.dedup();
        json!({
            "issuer": self.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algorithms,
        })
    }

    /// Verifies a service-account token as kube-apiserver's authenticator does: signed by
    /// one of the keys, issued by this issuer, within its validity at `now` (Unix seconds),
    /// for one of `audiences` (the API audiences when empty), naming a service account.
    pub fn verify(
        &self,
        token: &str,
        audiences: &[String],
        now: i64,
    ) -> Result<VerifiedToken, TokenError> {
        let claims = self.verified_claims(token)?;
        let issuer = claims["iss"].as_str().unwrap_or_default();
        if issuer != self.issuer {
            return Err(TokenError::Issuer(issuer.into(), self.issuer.clone()));
        }
        check_times(&claims, now)?;
        let wanted = if audiences.is_empty() {
            &self.api_audiences
        } else {
            audiences
        };
        let granted = token_audiences(&claims);
        let matched: Vec<String> = wanted
            .iter()
            .filter(|aud| granted.contains(aud))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(TokenError::Audience(granted, wanted.to_vec()));
        }
        let user = service_account_user(&claims).ok_or(TokenError::NotServiceAccount)?;
        Ok(VerifiedToken {
            user,
            audiences: matched,
            kubernetes: claims["kubernetes.io"].clone(),
        })
    }

    /// The claims of a token whose signature one of the keys verifies.
    fn verified_claims(&self, token: &str) -> Result<Value, TokenError> {
        let jws = Jws::parse(token).ok_or(TokenError::Malformed)?;
        let verified = self
            .verifying
            .iter()
            .any(|key| jws.verified_by(&key.verifying_key()));
        if !verified {
            return Err(TokenError::Signature);
        }
        jws.claims().ok_or(TokenError::Malformed)
    }
}

/// Checks `nbf` and `exp` at `now`, with the minute of leeway upstream allows.
fn check_times(claims: &Value, now: i64) -> Result<(), TokenError> {
    const LEEWAY: i64 = 60;
    if claims["exp"].as_i64().is_some_and(|exp| now > exp + LEEWAY) {
        return Err(TokenError::Expired);
    }
    if claims["nbf"].as_i64().is_some_and(|nbf| now + LEEWAY < nbf) {
        return Err(TokenError::NotYetValid);
    }
    Ok(())
}

/// The `aud` claim, a string or a list.
fn token_audiences(claims: &Value) -> Vec<String> {
    match &claims["aud"] {
        Value::String(aud) => vec![aud.clone()],
        Value::Array(auds) => auds
            .iter()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// The user of a service-account token's claims, as upstream's authenticator builds it.
fn service_account_user(claims: &Value) -> Option<UserInfo> {
    let subject = claims["sub"].as_str()?;
    let (namespace, name) = subject.strip_prefix(USER_PREFIX)?.split_once(':')?;
    let private = &claims["kubernetes.io"];
    if private["namespace"] != namespace || private["serviceaccount"]["name"] != name {
        return None;
    }
    let mut extra = BTreeMap::new();
    let mut add = |key: &str, value: &Value| {
        if let Some(value) = value.as_str().filter(|v| !v.is_empty()) {
            extra.insert(
                format!("authentication.kubernetes.io/{key}"),
                vec![value.to_string()],
            );
        }
    };
    add("pod-name", &private["pod"]["name"]);
    add("pod-uid", &private["pod"]["uid"]);
    add("node-name", &private["node"]["name"]);
    add("node-uid", &private["node"]["uid"]);
    if let Some(jti) = claims["jti"].as_str() {
        extra.insert(
            kapi_server::authn::CREDENTIAL_ID_KEY.to_string(),
            vec![format!("JTI={jti}")],
        );
    }
    let mut user = service_account_user_info(namespace, name);
    user.uid = private["serviceaccount"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    user.extra = extra;
    Some(user)
}

/// The user a service account authenticates as: its user name and the service-account
/// groups (upstream's `UserInfo` of a service account, without uid and extra).
pub fn service_account_user_info(namespace: &str, name: &str) -> UserInfo {
    UserInfo {
        name: service_account_username(namespace, name),
        groups: vec![
            ALL_SERVICE_ACCOUNTS.to_string(),
            format!("{ALL_SERVICE_ACCOUNTS}:{namespace}"),
        ],
        ..UserInfo::default()
    }
}

/// The service account's user name (upstream's MakeUsername).
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

/// The first private key of a PEM document and its public key.
fn signing_key(pem: &str) -> Result<(SigningKey, PublicKey), TokenError> {
    der::pem_blocks(pem)
        .iter()
        .find_map(|(label, der)| private_key(label, der))
        .unwrap_or(Err(TokenError::NoKey))
}

/// The private key of a PEM block and its public key: a PKCS#8 ECDSA P-256 or RSA key, or a
/// PKCS#1 RSA key; `None` for blocks of other labels.
fn private_key(label: &str, der: &[u8]) -> Option<Result<(SigningKey, PublicKey), TokenError>> {
    let invalid = |err: ring::error::KeyRejected| TokenError::InvalidKey(err.to_string());
    match label {
        "PRIVATE KEY" => {
            let rng = SystemRandom::new();
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            if let Ok(key) = EcdsaKeyPair::from_pkcs8(alg, der, &rng) {
                return Some(Ok(ecdsa(key)));
            }
            Some(RsaKeyPair::from_pkcs8(der).map(rsa).map_err(invalid))
        }
        "RSA PRIVATE KEY" => Some(RsaKeyPair::from_der(der).map(rsa).map_err(invalid)),
        _ => None,
    }
}

fn ecdsa(key: EcdsaKeyPair) -> (SigningKey, PublicKey) {
    let public = PublicKey {
        algorithm: Algorithm::Es256,
        key: key.public_key().as_ref().to_vec(),
    };
    (SigningKey::Ecdsa(key), public)
}

fn rsa(key: RsaKeyPair) -> (SigningKey, PublicKey) {
    let public = PublicKey {
        algorithm: Algorithm::Rs256,
        key: key.public_key().as_ref().to_vec(),
    };
    (SigningKey::Rsa(key), public)
}

/// The public keys of a PEM document: its public keys (SubjectPublicKeyInfo, PKCS#1 RSA)
/// and the public halves of its private keys.
fn public_keys(pem: &str) -> Result<Vec<PublicKey>, TokenError> {
    let mut keys = Vec::new();
    for (label, der) in der::pem_blocks(pem) {
        match label.as_str() {
            "PUBLIC KEY" => {
                let (rsa, key) = der::parse_subject_public_key_info(&der)
                    .ok_or_else(|| TokenError::InvalidKey("unsupported public key".into()))?;
                let algorithm = if rsa {
                    Algorithm::Rs256
                } else {
                    Algorithm::Es256
                };
                keys.push(PublicKey { algorithm, key });
            }
            "RSA PUBLIC KEY" => keys.push(PublicKey {
                algorithm: Algorithm::Rs256,
                key: der,
            }),
            "PRIVATE KEY" | "RSA PRIVATE KEY" => {
                if let Some(key) = private_key(&label, &der) {
                    keys.push(key?.1);
                }
            }
            _ => {}
        }
    }
    if keys.is_empty() {
        return Err(TokenError::NoKey);
    }
    Ok(keys)
}

#[cfg(test)]
pub(crate) mod tests;
