//! Bootstrap tokens (`<id>.<secret>`, six and sixteen lowercase letters or digits), kept as
//! `bootstrap.kubernetes.io/token` Secrets named `bootstrap-token-<id>` in kube-system, as
//! kubeadm writes them: what a token Secret says (k8s.io/cluster-bootstrap's helpers), and
//! the authenticator of `--enable-bootstrap-token-auth` (upstream's bootstrap token
//! authenticator), which makes a valid token the user `system:bootstrap:<id>` in
//! `system:bootstrappers` and the token's `auth-extra-groups`.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kapi_apimachinery::gotime;
use kapi_server::UserInfo;
use kapi_server::authn::{AuthenticationError, TokenAuthenticator};
use kapi_server::endpoints::Served;
use serde_json::Value;

/// The type of bootstrap token Secrets.
pub const BOOTSTRAP_TOKEN_SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The name prefix of bootstrap token Secrets.
pub const BOOTSTRAP_TOKEN_SECRET_PREFIX: &str = "bootstrap-token-";
/// Where bootstrap token Secrets are.
pub const BOOTSTRAP_TOKEN_NAMESPACE: &str = "kube-system";
/// The group of every bootstrap token's user.
const DEFAULT_GROUP: &str = "system:bootstrappers";

/// A token's id and secret, if `token` has a bootstrap token's form.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid = |part: &str, len: usize| {
        part.len() == len
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

/// A bootstrap token Secret, read.
pub struct BootstrapTokenSecret<'a> {
    secret: &'a Value,
}

impl<'a> BootstrapTokenSecret<'a> {
    /// `secret` if it is a bootstrap token Secret (by its type).
    pub fn of(secret: &'a Value) -> Option<BootstrapTokenSecret<'a>> {
        (secret["type"] == BOOTSTRAP_TOKEN_SECRET_TYPE).then_some(BootstrapTokenSecret { secret })
    }

    /// The value of `key` in its data, "" when absent or not base64.
    pub fn data(&self, key: &str) -> String {
        self.secret["data"][key]
            .as_str()
            .and_then(|encoded| STANDARD.decode(encoded).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default()
    }

    /// The token's id, as its name (`bootstrap-token-<id>`) says, if it is of that form.
    pub fn name_id(&self) -> Option<&str> {
        let name = self.secret["metadata"]["name"].as_str()?;
        let id = name.strip_prefix(BOOTSTRAP_TOKEN_SECRET_PREFIX)?;
        parse_token(&format!("{id}.0000000000000000")).map(|_| id)
    }

    /// Its `expiration` in seconds since the epoch, if it has one; an unreadable one counts
    /// as past (upstream's HasExpired).
    pub fn expiration(&self) -> Option<i64> {
        let expiration = self.data("expiration");
        if expiration.is_empty() {
            return None;
        }
        Some(gotime::parse_rfc3339(&expiration).map_or(i64::MIN, |t| t.seconds))
    }

    /// Whether it has expired at `now` (seconds since the epoch).
    pub fn expired(&self, now: i64) -> bool {
        self.expiration().is_some_and(|expiration| now > expiration)
    }

    /// Whether it is marked for `usage` (`usage-bootstrap-<usage>: "true"`).
    pub fn usable_for(&self, usage: &str) -> bool {
        self.data(&format!("usage-bootstrap-{usage}")) == "true"
    }

    /// Whether it is being deleted.
    pub fn deleting(&self) -> bool {
        !self.secret["metadata"]["deletionTimestamp"].is_null()
    }

    /// Its user's groups: `system:bootstrappers` and its `auth-extra-groups`, sorted; an
    /// extra group not of the form `system:bootstrappers:...` makes it invalid.
    pub fn groups(&self) -> Result<Vec<String>, String> {
        let mut groups = vec![DEFAULT_GROUP.to_string()];
        let extra = self.data("auth-extra-groups");
        if !extra.is_empty() {
            for group in extra.split(',') {
                if !valid_group(group) {
                    return Err(format!(
                        "bootstrap group {group:?} is invalid (must match \\A{DEFAULT_GROUP}:[a-z0-9:-]{{0,255}}[a-z0-9]\\z)"
                    ));
                }
                groups.push(group.to_string());
            }
        }
        groups.sort();
        groups.dedup();
        Ok(groups)
    }
}

/// Upstream's bootstrap group pattern: `system:bootstrappers:` then up to 256 of
/// `[a-z0-9:-]`, the last a letter or digit.
fn valid_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !rest.is_empty()
        && rest.len() <= 256
        && rest.bytes().all(|b| allowed(b) || b == b':' || b == b'-')
        && rest.bytes().last().is_some_and(allowed)
}

/// Whether `a` and `b` are equal, in a time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Authenticates bootstrap tokens against the Secrets of kube-system.
pub struct BootstrapTokenAuthenticator {
    secrets: Served,
}

impl BootstrapTokenAuthenticator {
    pub fn new(secrets: Served) -> BootstrapTokenAuthenticator {
        BootstrapTokenAuthenticator { secrets }
    }
}

#[async_trait]
impl TokenAuthenticator for BootstrapTokenAuthenticator {
    /// As upstream's: a token that is not valid is not this authenticator's (the next one
    /// may know it); why is logged.
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let Some((id, secret)) = parse_token(token) else {
            return Ok(None);
        };
        let name = format!("{BOOTSTRAP_TOKEN_SECRET_PREFIX}{id}");
        let Some(stored) = self.secrets.cached(BOOTSTRAP_TOKEN_NAMESPACE, &name) else {
            return Ok(None);
        };
        let refused = |why: &str| {
            tracing::debug!("bootstrap token secret kube-system/{name} {why}");
            Ok(None)
        };
        if !stored["metadata"]["deletionTimestamp"].is_null() {
            return refused("is deleted and awaiting removal");
        }
        let Some(token_secret) = BootstrapTokenSecret::of(&stored) else {
            return refused("has invalid type");
        };
        let expected = token_secret.data("token-secret");
        if !constant_time_eq(expected.as_bytes(), secret.as_bytes()) {
            return refused("has invalid value for key token-secret");
        }
        if token_secret.data("token-id") != id {
            return refused("has invalid value for key token-id");
        }
        if token_secret.expired(gotime::Timestamp::now().seconds) {
            return refused("has expired");
        }
        if !token_secret.usable_for("authentication") {
            return refused("not marked usage-bootstrap-authentication=true");
        }
        let groups = match token_secret.groups() {
            Ok(groups) => groups,
            Err(err) => {
                return refused(&format!(
                    "has invalid value for key auth-extra-groups: {err}"
                ));
            }
        };
        Ok(Some(UserInfo {
            name: format!("system:bootstrap:{id}"),
            groups,
            ..UserInfo::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn token_secret(data: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(STANDARD.encode(v))))
            .collect();
        json!({"metadata": {"name": "bootstrap-token-abcdef"},
            "type": BOOTSTRAP_TOKEN_SECRET_TYPE, "data": data})
    }

    #[test]
    fn tokens_and_their_secrets_are_read_as_upstream() {
        assert_eq!(
            parse_token("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        assert_eq!(parse_token("ABCDEF.0123456789abcdef"), None);
        assert_eq!(parse_token("abcdef.0123456789abcde"), None);
        assert_eq!(parse_token("abcdef0123456789abcdef"), None);
        let secret = token_secret(&[
            ("expiration", "2026-01-01T00:00:00Z"),
            (
                "auth-extra-groups",
                "system:bootstrappers:kubeadm:default-node-token",
            ),
            ("usage-bootstrap-authentication", "true"),
        ]);
        let token = BootstrapTokenSecret::of(&secret).unwrap();
        assert_eq!(token.name_id(), Some("abcdef"));
        assert!(token.expired(1_800_000_000));
        assert!(!token.expired(1_700_000_000));
        assert!(token.usable_for("authentication") && !token.usable_for("signing"));
        assert_eq!(
            token.groups().unwrap(),
            [
                "system:bootstrappers",
                "system:bootstrappers:kubeadm:default-node-token"
            ]
        );
        let bad = token_secret(&[("auth-extra-groups", "system:masters")]);
        assert!(BootstrapTokenSecret::of(&bad).unwrap().groups().is_err());
        let unreadable = token_secret(&[("expiration", "tomorrow")]);
        assert!(BootstrapTokenSecret::of(&unreadable).unwrap().expired(0));
    }
}
