//! JWT authenticators from the structured authentication configuration
//! (`--authentication-config`, apiserver.config.k8s.io AuthenticationConfiguration): tokens
//! issued by an OpenID Connect provider, verified with the keys its discovery document
//! points to, checked for issuer, audience and validity, and mapped to a user by claims.
//!
//! Claim mappings and validation rules are given by claim or by CEL expression (over
//! `claims`, and `user` for userValidationRules), with `claimMappings.extra`; expressions are
//! compiled when the file is read, so a broken one is a configuration error.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use kapi_apimachinery::validation::field::{self, FieldError, FieldErrors};
use parking_lot::Mutex;
use serde_json::Value;

use super::jws::{Jws, VerifyingKey};
use super::token::TokenAuthenticator;
use super::{AuthenticationError, UserInfo};
use crate::webhook_client::Https;

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

/// A user field from a claim or from a CEL expression over `claims`.
enum Mapping {
    Claim(ClaimMapping),
    Expression(Expression),
}

/// A compiled CEL expression and its source (for messages).
struct Expression {
    source: String,
    program: cel::Program,
}

impl Expression {
    fn compile(source: &str, field: &str) -> Result<Expression, String> {
        let program = cel::Program::compile(source)
            .map_err(|err| format!("{field}: compiling {source:?}: {err}"))?;
        Ok(Expression {
            source: source.to_string(),
            program,
        })
    }

    /// The expression's value with `name` bound to `value`, as JSON.
    fn evaluate(&self, name: &str, value: &Value) -> Result<Value, String> {
        let mut context = cel::Context::default();
        context
            .add_variable(name, value.clone())
            .map_err(|err| err.to_string())?;
        let result = self
            .program
            .execute(&context)
            .map_err(|err| format!("evaluating {:?}: {err}", self.source))?;
        result.json().map_err(|err| err.to_string())
    }
}

/// A claim validation rule: a claim with a required value, or an expression that must hold.
enum ClaimRule {
    Required(String, String),
    Expression(Expression, String),
}

/// One `jwt` entry of the configuration.
pub struct JwtAuthenticator {
    issuer: String,
    discovery_url: String,
    /// The client of the issuer's discovery document and keys, trusting its
    /// `certificateAuthority` (the system roots without one).
    https: Https,
    audiences: Vec<String>,
    claim_rules: Vec<ClaimRule>,
    username: Mapping,
    groups: Option<Mapping>,
    uid: Option<Mapping>,
    /// `claimMappings.extra`: keys and their value expressions.
    extra: Vec<(String, Expression)>,
    /// `userValidationRules`: expressions over `user` and their messages.
    user_rules: Vec<(Expression, String)>,
    /// The issuer's signing keys (JWKs), once fetched.
    keys: Mutex<Vec<Value>>,
}

/// Reads the `jwt` authenticators of an AuthenticationConfiguration file (YAML or JSON);
/// no issuer may be one of `disallowed_issuers` (the service-account issuers).
pub fn read_config(
    path: &Path,
    disallowed_issuers: &[String],
) -> Result<Vec<JwtAuthenticator>, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|err| ConfigError::Read(name.clone(), err.to_string()))?;
    let config: Value = serde_yaml_ng::from_str(&text)
        .map_err(|err| ConfigError::Read(name.clone(), err.to_string()))?;
    let invalid = |message: String| ConfigError::Invalid(name.clone(), message);
    if config["kind"] != "AuthenticationConfiguration" {
        return Err(invalid("kind must be AuthenticationConfiguration".into()));
    }
    let errors = validate_issuers(&config, disallowed_issuers);
    if let Some(message) = errors.aggregate_message() {
        return Err(invalid(message));
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

/// The errors of the JWT authenticators' issuers, as upstream's validation words them: a
/// URL, distinct across authenticators, not a disallowed issuer, https, without user
/// information, query or fragment; a discovery URL other than the issuer's, of the same
/// form; at least one audience.
fn validate_issuers(config: &Value, disallowed_issuers: &[String]) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let mut seen: Vec<&str> = Vec::new();
    let jwts = config["jwt"].as_array().into_iter().flatten();
    for (i, jwt) in jwts.enumerate() {
        let path = field::Path::root("jwt").index(i).child("issuer");
        let issuer = &jwt["issuer"];
        let url = issuer["url"].as_str().unwrap_or_default();
        let url_path = path.child("url");
        if url.is_empty() {
            errors.push(FieldError::required(&url_path, ""));
        } else {
            if seen.contains(&url) {
                errors.push(FieldError::duplicate(&url_path, url));
            }
            seen.push(url);
            if disallowed_issuers.iter().any(|d| d == url) {
                let mut disallowed = disallowed_issuers.to_vec();
                disallowed.sort();
                let detail = format!(
                    "URL must not overlap with disallowed issuers: [{}]",
                    disallowed.join(" ")
                );
                errors.push(FieldError::invalid(&url_path, url, detail));
            }
            errors.extend(url_errors(url, &url_path));
        }
        if let Some(discovery) = issuer["discoveryURL"].as_str().filter(|d| !d.is_empty()) {
            let discovery_path = path.child("discoveryURL");
            if !url.is_empty() && url.trim_end_matches('/') == discovery.trim_end_matches('/') {
                let detail = "discoveryURL must be different from URL";
                errors.push(FieldError::invalid(&discovery_path, discovery, detail));
            }
            errors.extend(url_errors(discovery, &discovery_path));
        }
        if issuer["audiences"].as_array().is_none_or(Vec::is_empty) {
            let audiences = path.child("audiences");
            let detail = format!("at least one {} is required", audiences.as_str());
            errors.push(FieldError::required(&audiences, detail));
        }
    }
    errors
}

/// What upstream refuses in an issuer or discovery URL.
fn url_errors(url: &str, path: &field::Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest.split('/').next().unwrap_or_default();
    let mut refuse = |detail: &str| errors.push(FieldError::invalid(path, url, detail));
    if scheme != "https" {
        refuse("URL scheme must be https");
    }
    if authority.contains('@') {
        refuse("URL must not contain a username or password");
    }
    if !query.is_empty() {
        refuse("URL must not contain a query");
    }
    if !fragment.is_empty() {
        refuse("URL must not contain a fragment");
    }
    errors
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

impl JwtAuthenticator {
    fn from_config(jwt: &Value) -> Result<JwtAuthenticator, String> {
        let issuer = &jwt["issuer"];
        let url = text(&issuer["url"]);
        let audiences: Vec<String> = issuer["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        let mut claim_rules = Vec::new();
        for (i, rule) in jwt["claimValidationRules"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let field = format!("claimValidationRules[{i}].expression");
            claim_rules.push(match rule["expression"].as_str() {
                Some(source) => ClaimRule::Expression(
                    Expression::compile(source, &field)?,
                    text(&rule["message"]),
                ),
                None => ClaimRule::Required(text(&rule["claim"]), text(&rule["requiredValue"])),
            });
        }
        let mappings = &jwt["claimMappings"];
        let mapping = |field: &str| -> Result<Option<Mapping>, String> {
            let value = &mappings[field];
            if let Some(source) = value["expression"].as_str() {
                let at = format!("claimMappings.{field}.expression");
                return Ok(Some(Mapping::Expression(Expression::compile(source, &at)?)));
            }
            Ok(value.get("claim").map(|claim| {
                Mapping::Claim(ClaimMapping {
                    claim: text(claim),
                    prefix: text(&value["prefix"]),
                })
            }))
        };
        let mut extra = Vec::new();
        for (i, entry) in mappings["extra"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let field = format!("claimMappings.extra[{i}].valueExpression");
            let source = entry["valueExpression"].as_str().unwrap_or_default();
            extra.push((text(&entry["key"]), Expression::compile(source, &field)?));
        }
        let mut user_rules = Vec::new();
        for (i, rule) in jwt["userValidationRules"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let field = format!("userValidationRules[{i}].expression");
            let source = rule["expression"].as_str().unwrap_or_default();
            user_rules.push((Expression::compile(source, &field)?, text(&rule["message"])));
        }
        let username =
            mapping("username")?.ok_or("claimMappings.username.claim or expression is required")?;
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
            https: Https::new(text(&issuer["certificateAuthority"]).as_bytes()),
            audiences,
            claim_rules,
            username,
            groups: mapping("groups")?,
            uid: mapping("uid")?,
            extra,
            user_rules,
            keys: Mutex::new(Vec::new()),
        })
    }

    /// Fetches the issuer's keys through its discovery document.
    async fn fetch_keys(&self) -> Result<Vec<Value>, String> {
        let discovery = self.https.get(&self.discovery_url, FETCH_TIMEOUT).await?;
        let discovery: Value = serde_json::from_slice(&discovery).map_err(|err| err.to_string())?;
        if discovery["issuer"] != self.issuer.as_str() {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {:?}",
                self.issuer,
                text(&discovery["issuer"])
            ));
        }
        let jwks_uri = text(&discovery["jwks_uri"]);
        let jwks = self.https.get(&jwks_uri, FETCH_TIMEOUT).await?;
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

    /// The user of verified claims, checked by the claim and user validation rules.
    fn user(&self, claims: &Value) -> Result<UserInfo, String> {
        for rule in &self.claim_rules {
            match rule {
                ClaimRule::Required(claim, required) if claims[claim] != required.as_str() => {
                    return Err(format!(
                        "oidc: required claim {claim} value does not match. Got = {}, want = {required}",
                        claims[claim]
                    ));
                }
                ClaimRule::Expression(expression, message) => {
                    if expression.evaluate("claims", claims)? != true {
                        return Err(format!(
                            "oidc: error evaluating claim validation expression: {message}"
                        ));
                    }
                }
                ClaimRule::Required(..) => {}
            }
        }
        let username = match &self.username {
            Mapping::Claim(mapping) => {
                let value = claims[&mapping.claim].as_str().ok_or_else(|| {
                    format!(
                        "oidc: parse username claims {:?}: claim not present",
                        mapping.claim
                    )
                })?;
                if mapping.claim == "email"
                    && claims.get("email_verified").is_some_and(|v| v != true)
                {
                    return Err("oidc: email not verified".into());
                }
                format!("{}{value}", mapping.prefix)
            }
            Mapping::Expression(expression) => {
                let value = expression.evaluate("claims", claims)?;
                value
                    .as_str()
                    .filter(|v| !v.is_empty())
                    .ok_or("oidc: username expression did not give a non-empty string")?
                    .to_string()
            }
        };
        let groups = match &self.groups {
            None => Vec::new(),
            Some(Mapping::Claim(mapping)) => strings(&claims[&mapping.claim])
                .into_iter()
                .map(|group| format!("{}{group}", mapping.prefix))
                .collect(),
            Some(Mapping::Expression(expression)) => {
                strings(&expression.evaluate("claims", claims)?)
            }
        };
        let uid = match &self.uid {
            None => String::new(),
            Some(Mapping::Claim(mapping)) => text(&claims[&mapping.claim]),
            Some(Mapping::Expression(expression)) => text(&expression.evaluate("claims", claims)?),
        };
        let mut extra = std::collections::BTreeMap::new();
        for (key, expression) in &self.extra {
            let values = strings(&expression.evaluate("claims", claims)?);
            if !values.is_empty() {
                extra.insert(key.clone(), values);
            }
        }
        let user = UserInfo {
            name: username,
            uid,
            groups,
            extra,
        };
        let as_json = serde_json::json!({"username": user.name, "uid": user.uid,
            "groups": user.groups, "extra": user.extra});
        for (expression, message) in &self.user_rules {
            if expression.evaluate("user", &as_json)? != true {
                return Err(format!(
                    "oidc: error evaluating user info validation rule: {message}"
                ));
            }
        }
        Ok(user)
    }
}

/// A string or a list of strings, as a list.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(one) => vec![one.clone()],
        Value::Array(list) => list
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}

#[async_trait]
impl TokenAuthenticator for JwtAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let Some((jws, claims)) = Jws::parse(token).and_then(|jws| {
            let claims = jws.claims()?;
            Some((jws, claims))
        }) else {
            return Ok(None);
        };
        if claims["iss"] != self.issuer.as_str() {
            return Ok(None);
        }
        let fail = |message: String| AuthenticationError(message);
        let keys = self
            .key(jws.header["kid"].as_str().unwrap_or_default())
            .await
            .map_err(fail)?;
        if !keys
            .iter()
            .filter_map(VerifyingKey::from_jwk)
            .any(|key| jws.verified_by(&key))
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

    #[test]
    fn issuers_are_validated_as_upstream() {
        let sa = "https://kubernetes.default.svc.cluster.local".to_string();
        let config = json!({"jwt": [
            {"issuer": {"url": sa, "audiences": ["a"]}},
            {"issuer": {"url": "http://u:p@example.com?x=1#f", "discoveryURL": "http://example.com/"}},
            {"issuer": {"url": "https://ok.example.com", "audiences": ["a"]}},
            {"issuer": {"url": "https://ok.example.com", "audiences": ["b"]}},
        ]});
        let errors = validate_issuers(&config, std::slice::from_ref(&sa));
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                format!(
                    "jwt[0].issuer.url: Invalid value: \"{sa}\": URL must not overlap with disallowed issuers: [{sa}]"
                ),
                r#"jwt[1].issuer.url: Invalid value: "http://u:p@example.com?x=1#f": URL scheme must be https"#.to_string(),
                r#"jwt[1].issuer.url: Invalid value: "http://u:p@example.com?x=1#f": URL must not contain a username or password"#.to_string(),
                r#"jwt[1].issuer.url: Invalid value: "http://u:p@example.com?x=1#f": URL must not contain a query"#.to_string(),
                r#"jwt[1].issuer.url: Invalid value: "http://u:p@example.com?x=1#f": URL must not contain a fragment"#.to_string(),
                r#"jwt[1].issuer.discoveryURL: Invalid value: "http://example.com/": URL scheme must be https"#.to_string(),
                "jwt[1].issuer.audiences: Required value: at least one jwt[1].issuer.audiences is required".to_string(),
                r#"jwt[3].issuer.url: Duplicate value: "https://ok.example.com""#.to_string(),
            ]
        );
    }

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
    fn expressions_map_and_validate_claims() {
        let config = json!({"issuer": {"url": "https://i", "audiences": ["a"]},
            "claimValidationRules": [{"expression": "claims.hd == 'example.com'", "message": "wrong domain"}],
            "claimMappings": {"username": {"expression": "'oidc:' + claims.sub"},
                "groups": {"expression": "claims.roles.map(r, 'role:' + r)"},
                "uid": {"expression": "claims.sub"},
                "extra": [{"key": "example.com/tenant", "valueExpression": "claims.tenant"}]},
            "userValidationRules": [{"expression": "!user.username.startsWith('oidc:system:')",
                "message": "no system users"}]});
        let authenticator = JwtAuthenticator::from_config(&config).unwrap();
        let claims =
            json!({"sub": "jane", "hd": "example.com", "roles": ["dev", "ops"], "tenant": "t1"});
        let user = authenticator.user(&claims).unwrap();
        assert_eq!(user.name, "oidc:jane");
        assert_eq!(user.uid, "jane");
        assert_eq!(user.groups, ["role:dev", "role:ops"]);
        assert_eq!(user.extra["example.com/tenant"], ["t1"]);
        let mut other = claims.clone();
        other["hd"] = json!("other.com");
        assert!(
            authenticator
                .user(&other)
                .unwrap_err()
                .contains("wrong domain")
        );
        let mut system = claims.clone();
        system["sub"] = json!("system:admin");
        assert!(
            authenticator
                .user(&system)
                .unwrap_err()
                .contains("no system users")
        );
        let broken = json!({"issuer": {"url": "https://i", "audiences": ["a"]},
            "claimMappings": {"username": {"expression": "claims.sub +"}}});
        assert!(JwtAuthenticator::from_config(&broken).is_err());
    }
}
