//! Client-certificate authentication (upstream's x509 authenticator with
//! `CommonNameUserConversion`).
//!
//! The TLS layer asks for a client certificate but accepts any, as kube-apiserver does
//! (`tls.RequestClientCert`); this authenticator then verifies the chain against the client CA
//! for each request. So a certificate from an unknown CA is a 401, not a failed handshake. The
//! user is the subject's common name, the groups its organizations, the uid its `UID`
//! attribute, and `extra` records the certificate's SHA-256 as the credential id.

use std::sync::Arc;

use async_trait::async_trait;
use ring::digest;
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::{CertificateDer, UnixTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ParsedExtension;
use x509_parser::oid_registry::OID_USERID;
use x509_parser::x509::X509Name;

use super::{AuthenticationError, Authenticator, CREDENTIAL_ID_KEY, UserInfo};
use crate::serving::ConnectionInfo;

/// The client CA could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClientCaError {
    #[error("invalid client CA certificate: {0}")]
    Certificate(#[from] rustls::Error),
    #[error("unusable client CA: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// Builds a verifier of client certificate chains against `client_ca`. It is also what the
/// TLS layer uses for the CA names it hints and for handshake signatures.
pub(crate) fn client_verifier(
    client_ca: &[CertificateDer<'static>],
) -> Result<Arc<dyn ClientCertVerifier>, ClientCaError> {
    let mut roots = RootCertStore::empty();
    for cert in client_ca {
        roots.add(cert.clone())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()?;
    Ok(verifier)
}

/// Authenticates requests by the client certificate of their connection.
#[derive(Clone)]
pub struct X509Authenticator {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl X509Authenticator {
    /// Trusts client certificates issued by one of `client_ca`.
    pub fn new(client_ca: &[CertificateDer<'static>]) -> Result<Self, ClientCaError> {
        Ok(X509Authenticator {
            verifier: client_verifier(client_ca)?,
        })
    }
}

#[async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<Option<UserInfo>, AuthenticationError> {
        let Some((connection, end_entity, intermediates)) = peer_chain(request) else {
            return Ok(None);
        };
        let now = UnixTime::now();
        if let Some((user, not_after)) = connection.verified_user().get()
            && now.as_secs() < *not_after
        {
            return Ok(Some(user.clone()));
        }
        let cert = verified_certificate(&*self.verifier, end_entity, intermediates, now)?;
        let user = user_of(&cert, end_entity)?;
        if let Some(user) = &user {
            let not_after = cert.validity().not_after.timestamp().max(0) as u64;
            let _ = connection.verified_user().set((user.clone(), not_after));
        }
        Ok(user)
    }
}

/// The connection of a request whose client presented a certificate, with its end-entity
/// certificate and intermediates.
pub(crate) fn peer_chain(
    request: &http::request::Parts,
) -> Option<(
    &ConnectionInfo,
    &CertificateDer<'static>,
    &[CertificateDer<'static>],
)> {
    let connection = request.extensions.get::<ConnectionInfo>()?;
    let [end_entity, intermediates @ ..] = connection.peer_certificates() else {
        return None;
    };
    Some((connection, end_entity, intermediates))
}

/// The end-entity certificate of a chain `verifier` accepts, parsed.
pub(crate) fn verified_certificate<'a>(
    verifier: &dyn ClientCertVerifier,
    end_entity: &'a CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    now: UnixTime,
) -> Result<X509Certificate<'a>, AuthenticationError> {
    let cert = parse(end_entity)?;
    verifier
        .verify_client_cert(end_entity, intermediates, now)
        .map_err(|err| {
            AuthenticationError(format!(
                "verifying certificate {} failed: {err}",
                identifier(&cert)
            ))
        })?;
    Ok(cert)
}

/// Parses a DER certificate.
fn parse<'a>(der: &'a CertificateDer<'_>) -> Result<X509Certificate<'a>, AuthenticationError> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert)
        .map_err(|err| AuthenticationError(format!("parsing the client certificate: {err}")))
}

/// The user a verified certificate names; `None` without a common name.
fn user_of(
    cert: &X509Certificate<'_>,
    der: &CertificateDer<'_>,
) -> Result<Option<UserInfo>, AuthenticationError> {
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last();
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    let groups = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(String::from);
    let fingerprint = hex(digest::digest(&digest::SHA256, der).as_ref(), "");
    Ok(Some(UserInfo {
        name: name.to_string(),
        uid: uid_of(subject)?,
        groups: groups.collect(),
        extra: [(
            CREDENTIAL_ID_KEY.to_string(),
            vec![format!("X509SHA256={fingerprint}")],
        )]
        .into(),
    }))
}

/// The subject's single `UID` attribute, or empty when it has none.
fn uid_of(subject: &X509Name<'_>) -> Result<String, AuthenticationError> {
    let mut uids = Vec::new();
    for attribute in subject.iter_by_oid(&OID_USERID) {
        let uid = attribute
            .as_str()
            .map_err(|_| AuthenticationError("unable to parse UID into a string".into()))?;
        uids.push(uid.to_string());
    }
    match uids.as_slice() {
        [] => Ok(String::new()),
        [uid] if uid.is_empty() => Err(AuthenticationError("UID cannot be an empty string".into())),
        [uid] => Ok(uid.clone()),
        many => Err(AuthenticationError(format!(
            "expected 1 UID, but found multiple: [{}]",
            many.join(" ")
        ))),
    }
}

/// `SN=<serial>, SKID=<hex>, AKID=<hex>`, how upstream names a certificate in its logs.
fn identifier(cert: &X509Certificate<'_>) -> String {
    let mut skid = String::new();
    let mut akid = String::new();
    for extension in cert.extensions() {
        match extension.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) => skid = hex(id.0, ":"),
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                akid = aki
                    .key_identifier
                    .as_ref()
                    .map(|id| hex(id.0, ":"))
                    .unwrap_or_default()
            }
            _ => {}
        }
    }
    format!("SN={}, SKID={skid}, AKID={akid}", cert.serial)
}

/// Hex digits of `bytes`, uppercase with `separator` between bytes when one is given (as
/// upstream prints key ids), lowercase without (as it prints fingerprints).
fn hex(bytes: &[u8], separator: &str) -> String {
    let digits = bytes.iter().map(|b| {
        if separator.is_empty() {
            format!("{b:02x}")
        } else {
            format!("{b:02X}")
        }
    });
    digits.collect::<Vec<_>>().join(separator)
}
