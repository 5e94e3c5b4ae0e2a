//! Bearer tokens (`Authorization: Bearer <token>`) as kube-apiserver reads them: the token is
//! offered to each [`TokenAuthenticator`] in order; a request with a token nobody
//! recognizes is refused ("invalid bearer token"), never treated as anonymous. Also the
//! static token file of `--token-auth-file`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::{AuthenticationError, Authenticator, UserInfo};

/// One way of recognizing a bearer token (the token file, service-account tokens, ...).
#[async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// The user the token proves, `Ok(None)` when it is not a token of this kind, or an
    /// error when it is one but not valid.
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError>;
}

/// The bearer token authenticator over several token authenticators.
pub struct BearerToken {
    authenticators: Vec<Arc<dyn TokenAuthenticator>>,
}

impl BearerToken {
    pub fn new(authenticators: Vec<Arc<dyn TokenAuthenticator>>) -> BearerToken {
        BearerToken { authenticators }
    }
}

/// The token of an `Authorization: Bearer <token>` header, if the request has one.
fn bearer_token(request: &http::request::Parts) -> Option<&str> {
    let header = request
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[async_trait]
impl Authenticator for BearerToken {
    async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let Some(token) = bearer_token(request) else {
            return Ok(None);
        };
        let mut errors = Vec::new();
        for authenticator in &self.authenticators {
            match authenticator.authenticate_token(token).await {
                Ok(Some(user)) => return Ok(Some(user)),
                Ok(None) => {}
                Err(err) => errors.push(err.0),
            }
        }
        if errors.is_empty() {
            errors.push("invalid bearer token".into());
        }
        Err(AuthenticationError(super::aggregate(&errors)))
    }
}

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading the token file {0:?}: {1}")]
    Read(String, std::io::Error),
    #[error(
        "token file {0:?} must have at least 3 columns (token, user name, user uid), found {1}"
    )]
    Columns(String, usize),
    #[error("token file {0:?}: {1}")]
    Csv(String, String),
}

/// The users of `--token-auth-file`: a CSV of `token,user,uid[,"group1,group2"]`.
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads and parses the file.
    pub fn read(path: &Path) -> Result<TokenFile, TokenFileError> {
        let name = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|err| TokenFileError::Read(name.clone(), err))?;
        TokenFile::parse(&name, &text)
    }

    /// Parses the CSV text of the file `name`, as upstream's tokenfile package: blank
    /// tokens are skipped and a repeated token replaces the earlier one (each with a
    /// warning); fewer than 3 columns is an error.
    pub fn parse(name: &str, text: &str) -> Result<TokenFile, TokenFileError> {
        let mut users = HashMap::new();
        let text = text.trim_start_matches('\u{feff}');
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        for (number, record) in reader.records().enumerate() {
            let record = record.map_err(|err| TokenFileError::Csv(name.into(), err.to_string()))?;
            if record.len() < 3 {
                return Err(TokenFileError::Columns(name.into(), record.len()));
            }
            let token = record[0].trim().to_string();
            if token.is_empty() {
                tracing::warn!(
                    "skipped line {} of the token file {name:?}: empty token",
                    number + 1
                );
                continue;
            }
            let groups = match record.get(3) {
                Some(groups) if !groups.is_empty() => {
                    groups.split(',').map(|g| g.trim().to_string()).collect()
                }
                _ => Vec::new(),
            };
            let user = UserInfo {
                name: record[1].to_string(),
                uid: record[2].to_string(),
                groups,
                ..UserInfo::default()
            };
            if users.insert(token, user).is_some() {
                tracing::warn!(
                    "duplicate token has been found in token file {name:?}, record number {}",
                    number + 1
                );
            }
        }
        Ok(TokenFile { users })
    }
}

#[async_trait]
impl TokenAuthenticator for TokenFile {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        Ok(self.users.get(token).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authorization: Option<&str>) -> http::request::Parts {
        let mut builder = http::Request::builder();
        if let Some(value) = authorization {
            builder = builder.header("Authorization", value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn token_files_parse_as_upstreams() {
        let file = TokenFile::parse(
            "tokens.csv",
            "\u{feff}t1,alice,1\nt2,bob,2,\"dev,ops\"\n ,nobody,3\nt1,again,4\n",
        )
        .unwrap();
        let alice = &file.users["t1"];
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("again", "4"));
        assert_eq!(file.users["t2"].groups, ["dev", "ops"]);
        assert_eq!(file.users.len(), 2);
        let err = TokenFile::parse("tokens.csv", "t1,alice\n").err().unwrap();
        assert_eq!(
            err.to_string(),
            r#"token file "tokens.csv" must have at least 3 columns (token, user name, user uid), found 2"#
        );
        assert!(TokenFile::parse("tokens.csv", "t1,\"alice,1\n").is_err());
    }

    #[tokio::test]
    async fn bearer_tokens_are_recognized_or_refused() {
        let file: Arc<dyn TokenAuthenticator> =
            Arc::new(TokenFile::parse("f", "secret,alice,1,admins\n").unwrap());
        let bearer = BearerToken::new(vec![file]);
        let alice = bearer
            .authenticate(&request(Some("Bearer secret")))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, ["admins"]);
        let lower = bearer
            .authenticate(&request(Some("bearer secret")))
            .await
            .unwrap();
        assert!(lower.is_some());
        assert_eq!(
            bearer
                .authenticate(&request(Some("Bearer wrong")))
                .await
                .unwrap_err()
                .0,
            "invalid bearer token"
        );
        for absent in [None, Some("Basic abc"), Some("Bearer "), Some("Bearer")] {
            assert_eq!(
                bearer.authenticate(&request(absent)).await.unwrap(),
                None,
                "{absent:?}"
            );
        }
    }
}
