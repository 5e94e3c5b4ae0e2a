//! Which webhook servers are trusted: those whose certificate chains to the caBundle, as
//! rustls verifies it, and, as Go's verifier also accepts, a server whose certificate is
//! itself one of the caBundle's certificates (a self-signed CA certificate, which operator
//! frameworks generate for local webhooks; rustls refuses it as `CaUsedAsEndEntity`), once
//! its name matches and it is within its validity period.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// See the module documentation.
#[derive(Debug)]
pub(super) struct TrustedRoots {
    verifier: Arc<WebPkiServerVerifier>,
    roots: Vec<CertificateDer<'static>>,
}

impl TrustedRoots {
    /// Trusts `store`, made of `roots` (the caBundle's certificates).
    pub(super) fn new(
        store: RootCertStore,
        roots: Vec<CertificateDer<'static>>,
    ) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
            .map_err(|err| err.to_string())?;
        Ok(TrustedRoots { verifier, roots })
    }

    /// Whether `end_entity` is one of the trusted certificates, valid for `server_name` at
    /// `now`.
    fn is_trusted_root(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> bool {
        if !self
            .roots
            .iter()
            .any(|root| root.as_ref() == end_entity.as_ref())
        {
            return false;
        }
        let named = ParsedCertificate::try_from(end_entity)
            .and_then(|parsed| rustls::client::verify_server_name(&parsed, server_name));
        let current = x509_parser::parse_x509_certificate(end_entity).is_ok_and(|(_, cert)| {
            let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
            let validity = cert.validity();
            validity.not_before.timestamp() <= now && now <= validity.not_after.timestamp()
        });
        named.is_ok() && current
    }
}

impl ServerCertVerifier for TrustedRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.verifier.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            Err(_) if self.is_trusted_root(end_entity, server_name, now) => {
                Ok(ServerCertVerified::assertion())
            }
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier.supported_verify_schemes()
    }
}

/// Accepts any server certificate (an APIService's `insecureSkipTLSVerify`, as Go's
/// `InsecureSkipVerify`); the handshake's signatures are still checked, so the server holds
/// the key of the certificate it shows.
#[derive(Debug)]
pub(super) struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl Unverified {
    pub(super) fn new() -> Self {
        Unverified(Arc::new(rustls::crypto::ring::default_provider()))
    }
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed CA certificate for `name`.
    fn ca_for(name: &str) -> CertificateDer<'static> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().der().clone()
    }

    fn trusting(cert: &CertificateDer<'static>) -> TrustedRoots {
        let mut store = RootCertStore::empty();
        store.add(cert.clone()).unwrap();
        TrustedRoots::new(store, vec![cert.clone()]).unwrap()
    }

    #[test]
    fn a_server_certificate_that_is_a_trusted_ca_is_accepted_for_its_names() {
        let cert = ca_for("webhook.local");
        let trust = trusting(&cert);
        let verify = |name: &'static str| {
            trust.verify_server_cert(
                &cert,
                &[],
                &ServerName::try_from(name).unwrap(),
                &[],
                UnixTime::now(),
            )
        };
        assert!(verify("webhook.local").is_ok());
        assert!(verify("other.local").is_err());
        let stranger = trusting(&ca_for("webhook.local"));
        let refused = stranger.verify_server_cert(
            &cert,
            &[],
            &ServerName::try_from("webhook.local").unwrap(),
            &[],
            UnixTime::now(),
        );
        assert!(
            refused.is_err(),
            "a CA certificate the bundle does not hold"
        );
    }
}
