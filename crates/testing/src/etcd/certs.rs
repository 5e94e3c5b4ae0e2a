//! Throwaway certificates for TLS clusters: a CA, a server certificate for 127.0.0.1 and
//! localhost, and a client certificate, all generated with rcgen into the cluster's directory.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::write_file;

/// The PEM files a client needs to talk to a TLS cluster: the CA that signed the server's
/// certificate, and a client certificate and key that the server accepts.
#[derive(Clone, Debug)]
pub struct EtcdTls {
    pub ca_file: PathBuf,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    server_cert_file: PathBuf,
    server_key_file: PathBuf,
}

impl EtcdTls {
    /// Generates the CA and both certificates into `dir/tls`.
    pub(super) fn generate(dir: &Path) -> EtcdTls {
        let dir = dir.join("tls");
        fs::create_dir_all(&dir).expect("create the TLS directory");
        let ca_key = KeyPair::generate().expect("generate the CA key");
        let ca_params = ca_params();
        let ca_cert = ca_params.self_signed(&ca_key).expect("sign the CA");
        let issuer = Issuer::new(ca_params, ca_key);

        let server = leaf(
            &["127.0.0.1", "localhost"],
            "kapi-test-etcd",
            // etcd also dials itself with the server certificate (its gRPC gateway).
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            &issuer,
        );
        let client = leaf(
            &[],
            "kapi-test-client",
            &[ExtendedKeyUsagePurpose::ClientAuth],
            &issuer,
        );
        EtcdTls {
            ca_file: write_file(&dir, "ca.pem", &ca_cert.pem()),
            cert_file: write_file(&dir, "client.pem", &client.0),
            key_file: write_file(&dir, "client-key.pem", &client.1),
            server_cert_file: write_file(&dir, "server.pem", &server.0),
            server_key_file: write_file(&dir, "server-key.pem", &server.1),
        }
    }

    /// The server flags for client TLS with client-certificate authentication.
    pub(super) fn server_args(&self) -> Vec<OsString> {
        vec![
            "--cert-file".into(),
            self.server_cert_file.clone().into(),
            "--key-file".into(),
            self.server_key_file.clone().into(),
            "--trusted-ca-file".into(),
            self.ca_file.clone().into(),
            "--client-cert-auth".into(),
        ]
    }
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
        .distinguished_name
        .push(DnType::CommonName, "kapi test CA");
    params
}

/// A certificate signed by `issuer`: (certificate PEM, private key PEM).
fn leaf(
    names: &[&str],
    common_name: &str,
    usages: &[ExtendedKeyUsagePurpose],
    issuer: &Issuer<'_, KeyPair>,
) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).expect("valid subject alternative names");
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = usages.to_vec();
    let key = KeyPair::generate().expect("generate a key");
    let cert = params.signed_by(&key, issuer).expect("sign a certificate");
    (cert.pem(), key.serialize_pem())
}
