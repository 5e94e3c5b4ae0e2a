//! kube-controller-manager's `csrsigning` controller: approved requests for the four
//! `kubernetes.io` signers it serves get a certificate from the signer's CA, as upstream's
//! local signer issues it (PermissiveSigningPolicy): the request's subject, names and public
//! key, the usages the request's spec asks for, no other extension, not a CA, valid from 5
//! minutes ago (backdating) for the signing duration, or `spec.expirationSeconds` when
//! shorter (10 minutes at least), never past the CA's own end. A request its signer refuses
//! (a client signer asked for server auth, a kubelet request not from a node's name) gets
//! the `Failed` condition with reason `SignerValidationFailure` instead.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kapi_apimachinery::meta::now_rfc3339;
use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use rcgen::string::Ia5String;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData, SanType, SerialNumber, SignatureAlgorithm,
};
use serde_json::{Value, json};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

use super::request::{self, Request};
use super::{Csr, WORKERS, push_condition, put, usages};

/// The controller's name (`--controllers`).
pub const CSR_SIGNING_CONTROLLER: &str = "certificatesigningrequest-signing-controller";

/// How far back certificates start, for clocks that lag (upstream's Backdate).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Certificates valid for less than this keep their full duration despite the backdating.
const SHORT: Duration = Duration::from_secs(8 * 3600);
/// The shortest duration `spec.expirationSeconds` can ask for.
const MIN_DURATION: Duration = Duration::from_secs(10 * 60);

/// A signer's CA, as PEM.
#[derive(Clone)]
pub struct SigningCa {
    pub cert_pem: String,
    pub key_pem: String,
}

/// What the signing controller signs with.
#[derive(Clone)]
pub struct CsrSigning {
    /// The CA of each signer name served.
    pub signers: Vec<(String, SigningCa)>,
    /// The longest validity of an issued certificate (`--cluster-signing-duration`).
    pub duration: Duration,
}

/// Starts the controller over the requests' watch cache, writing through `client` (the
/// `certificate-controller` service account) until `stopping`.
pub fn start_csr_signing(
    csrs: Served,
    client: LoopbackClient,
    signing: CsrSigning,
    stopping: CancellationToken,
) {
    let signing = std::sync::Arc::new(signing);
    crate::keyed::run(
        CSR_SIGNING_CONTROLLER,
        csrs.clone(),
        WORKERS,
        stopping,
        move |name| {
            let (csrs, client, signing) = (csrs.clone(), client.clone(), signing.clone());
            async move {
                let Some(csr) = csrs.cached("", &name) else {
                    return Ok(());
                };
                sync(&client, &signing, Csr(csr)).await
            }
        },
    );
}

/// Signs `csr` if it is approved, not failed, not yet issued, and for a signer served.
async fn sync(client: &LoopbackClient, signing: &CsrSigning, csr: Csr) -> Result<(), String> {
    if !csr.approved() || csr.has_true_condition("Failed") || csr.issued() {
        return Ok(());
    }
    let signer_name = csr.signer_name().to_string();
    let Some((_, ca)) = signing
        .signers
        .iter()
        .find(|(name, _)| *name == signer_name)
    else {
        return Ok(());
    };
    let request = csr
        .request()
        .map_err(|err| format!("unable to parse csr {:?}: {err}", csr.name()))?;
    let mut csr = csr.0;
    if let Err(message) = check(&signer_name, &request, &usages(&csr)) {
        let failed = json!({"type": "Failed", "status": "True",
            "reason": "SignerValidationFailure", "message": message,
            "lastUpdateTime": now_rfc3339()});
        push_condition(&mut csr, failed);
        return put(client, &csr, "status", "signature").await;
    }
    let expiration = csr["spec"]["expirationSeconds"].as_u64();
    let validity = signing_duration(signing.duration, expiration);
    let certificate = sign(ca, &request, &usages(&csr), validity)
        .map_err(|err| format!("error auto signing csr: {err}"))?;
    let encoded = STANDARD.encode(certificate.as_bytes());
    csr["status"]["certificate"] = Value::String(encoded);
    put(client, &csr, "status", "signature").await
}

/// Whether `signer_name` may sign `request` with `usages`, as upstream's per-signer checks.
fn check(signer_name: &str, request: &Request, usages: &[String]) -> Result<(), String> {
    match signer_name {
        super::KUBE_APISERVER_CLIENT => request::validate_api_server_client_usages(usages),
        super::KUBELET_CLIENT => {
            request::validate_kubelet_client(request, &request::usage_set(usages))
        }
        super::KUBELET_SERVING => {
            request::validate_kubelet_serving(request, &request::usage_set(usages))
        }
        // No restrictions, for compatibility with what v1beta1 signed.
        _ => Ok(()),
    }
}

/// The validity of a certificate: `expiration_seconds` when asked for, between 10 minutes
/// and the signing duration.
fn signing_duration(duration: Duration, expiration_seconds: Option<u64>) -> Duration {
    match expiration_seconds.map(Duration::from_secs) {
        None => duration,
        Some(requested) if requested > duration => duration,
        Some(requested) if requested < MIN_DURATION => MIN_DURATION,
        Some(requested) => requested,
    }
}

/// Issues the certificate `request` asks for from `ca`, valid for `validity`: PEM.
fn sign(
    ca: &SigningCa,
    request: &Request,
    usages: &[String],
    validity: Duration,
) -> Result<String, String> {
    let key = KeyPair::from_pem(&ca.key_pem).map_err(|err| err.to_string())?;
    let ca_end = ca_not_after(&ca.cert_pem)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, key).map_err(|err| err.to_string())?;
    let (mut params, public_key) = requested(&request.der)?;
    let (key_usages, extended) = key_usages(usages)?;
    params.key_usages = key_usages;
    params.extended_key_usages = extended;
    params.is_ca = IsCa::ExplicitNoCa;
    params.custom_extensions.clear();
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(serial_number());
    let now = OffsetDateTime::now_utc();
    params.not_before = now - BACKDATE;
    let lifetime = match validity < SHORT {
        true => validity,
        false => validity - BACKDATE,
    };
    params.not_after = (now + lifetime).min(ca_end);
    if params.not_before >= ca_end {
        return Err(format!("the signer has expired: NotAfter={ca_end}"));
    }
    if now >= ca_end {
        return Err(format!(
            "refusing to sign a certificate that expired in the past: NotAfter={ca_end}"
        ));
    }
    let certificate = params
        .signed_by(&public_key, &issuer)
        .map_err(|err| err.to_string())?;
    Ok(certificate.pem())
}

/// The public key of a request, for signing.
struct RequestKey {
    der: Vec<u8>,
    algorithm: &'static SignatureAlgorithm,
}

impl PublicKeyData for RequestKey {
    fn der_bytes(&self) -> &[u8] {
        &self.der
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        self.algorithm
    }
}

/// What a certificate for the request `der` carries from it, as upstream's signer takes it:
/// its subject, names and public key (its signature checked), and none of the extensions
/// it asks for (the usages come from the spec).
fn requested(der: &[u8]) -> Result<(CertificateParams, RequestKey), String> {
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    use x509_parser::prelude::FromDer;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(der)
        .map_err(|err| err.to_string())?;
    csr.verify_signature()
        .map_err(|_| "the request's signature does not verify".to_string())?;
    let info = &csr.certification_request_info;
    let key_algorithm: Vec<u64> = csr
        .signature_algorithm
        .algorithm
        .iter()
        .ok_or("the request's signature algorithm is unreadable")?
        .collect();
    let algorithm = SignatureAlgorithm::from_oid(&key_algorithm).map_err(|err| err.to_string())?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    for attribute in info.subject.iter_attributes() {
        let oid: Vec<u64> = attribute.attr_type().iter().into_iter().flatten().collect();
        let value = attribute
            .as_str()
            .map_err(|_| "a subject attribute is not a string".to_string())?;
        params
            .distinguished_name
            .push(DnType::from_oid(&oid), value);
    }
    for extension in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(names) = extension else {
            continue;
        };
        for name in &names.general_names {
            let ia5 = |text: &str| Ia5String::try_from(text).map_err(|err| err.to_string());
            let san = match name {
                GeneralName::DNSName(dns) => SanType::DnsName(ia5(dns)?),
                GeneralName::RFC822Name(email) => SanType::Rfc822Name(ia5(email)?),
                GeneralName::URI(uri) => SanType::URI(ia5(uri)?),
                GeneralName::IPAddress(bytes) => SanType::IpAddress(ip_of(bytes)?),
                _ => continue,
            };
            params.subject_alt_names.push(san);
        }
    }
    let key = RequestKey {
        der: info.subject_pki.subject_public_key.data.to_vec(),
        algorithm,
    };
    Ok((params, key))
}

/// An IP address SAN's bytes as an address.
fn ip_of(bytes: &[u8]) -> Result<std::net::IpAddr, String> {
    match bytes.len() {
        4 => Ok(<[u8; 4]>::try_from(bytes).expect("4 bytes").into()),
        16 => Ok(<[u8; 16]>::try_from(bytes).expect("16 bytes").into()),
        n => Err(format!("an IP address SAN of {n} bytes")),
    }
}

/// When the CA's certificate ends.
fn ca_not_after(cert_pem: &str) -> Result<OffsetDateTime, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes())
        .map_err(|err| format!("reading the signer's certificate: {err}"))?;
    let cert = pem
        .parse_x509()
        .map_err(|err| format!("reading the signer's certificate: {err}"))?;
    Ok(cert.validity().not_after.to_datetime())
}

/// A random positive 128-bit serial number, as upstream's.
fn serial_number() -> SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    bytes[0] &= 0x7f;
    SerialNumber::from_slice(&bytes)
}

/// The key usages and extended key usages `usages` name, as upstream's
/// `keyUsagesFromStrings` (extended ones in Go's order, each once).
fn key_usages(
    usages: &[String],
) -> Result<(Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>), String> {
    let mut key = Vec::new();
    let mut extended: Vec<(usize, ExtendedKeyUsagePurpose)> = Vec::new();
    let mut unrecognized = Vec::new();
    for usage in usages {
        if let Some(purpose) = key_usage(usage) {
            if !key.contains(&purpose) {
                key.push(purpose);
            }
        } else if let Some((order, purpose)) = extended_key_usage(usage) {
            if !extended.iter().any(|(o, _)| *o == order) {
                extended.push((order, purpose));
            }
        } else {
            unrecognized.push(format!("{usage:?}"));
        }
    }
    if !unrecognized.is_empty() {
        return Err(format!(
            "unrecognized usage values: [{}]",
            unrecognized.join(" ")
        ));
    }
    extended.sort_by_key(|(order, _)| *order);
    Ok((
        key,
        extended.into_iter().map(|(_, purpose)| purpose).collect(),
    ))
}

fn key_usage(usage: &str) -> Option<KeyUsagePurpose> {
    Some(match usage {
        "signing" | "digital signature" => KeyUsagePurpose::DigitalSignature,
        "content commitment" => KeyUsagePurpose::ContentCommitment,
        "key encipherment" => KeyUsagePurpose::KeyEncipherment,
        "key agreement" => KeyUsagePurpose::KeyAgreement,
        "data encipherment" => KeyUsagePurpose::DataEncipherment,
        "cert sign" => KeyUsagePurpose::KeyCertSign,
        "crl sign" => KeyUsagePurpose::CrlSign,
        "encipher only" => KeyUsagePurpose::EncipherOnly,
        "decipher only" => KeyUsagePurpose::DecipherOnly,
        _ => return None,
    })
}

/// An extended key usage and its place in Go's `x509.ExtKeyUsage` order.
fn extended_key_usage(usage: &str) -> Option<(usize, ExtendedKeyUsagePurpose)> {
    use ExtendedKeyUsagePurpose::*;
    Some(match usage {
        "any" => (0, Any),
        "server auth" => (1, ServerAuth),
        "client auth" => (2, ClientAuth),
        "code signing" => (3, CodeSigning),
        "email protection" | "s/mime" => (4, EmailProtection),
        "ipsec end system" => (5, Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 5])),
        "ipsec tunnel" => (6, Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 6])),
        "ipsec user" => (7, Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 7])),
        "timestamping" => (8, TimeStamping),
        "ocsp signing" => (9, OcspSigning),
        "microsoft sgc" => (10, Other(vec![1, 3, 6, 1, 4, 1, 311, 10, 3, 3])),
        "netscape sgc" => (11, Other(vec![2, 16, 840, 1, 113_730, 4, 1])),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_expiration_seconds_within_bounds() {
        let year = Duration::from_secs(365 * 86400);
        assert_eq!(signing_duration(year, None), year);
        assert_eq!(
            signing_duration(year, Some(86400)),
            Duration::from_secs(86400)
        );
        assert_eq!(signing_duration(year, Some(60)), MIN_DURATION);
        assert_eq!(signing_duration(year, Some(u64::from(u32::MAX))), year);
    }

    #[test]
    fn usages_map_to_extensions_in_go_order() {
        let usages = [
            "client auth",
            "server auth",
            "digital signature",
            "client auth",
        ];
        let usages: Vec<String> = usages.iter().map(|u| u.to_string()).collect();
        let (key, extended) = key_usages(&usages).unwrap();
        assert_eq!(key, [KeyUsagePurpose::DigitalSignature]);
        assert_eq!(
            extended,
            [
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth
            ]
        );
        let odd = vec!["flying".to_string()];
        assert_eq!(
            key_usages(&odd).unwrap_err(),
            r#"unrecognized usage values: ["flying"]"#
        );
    }

    /// A self-signed CA.
    fn test_ca() -> SigningCa {
        let key = KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        SigningCa {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    #[test]
    fn requests_with_extensions_of_their_own_are_signed_without_them() {
        let ca = test_ca();
        let mut params =
            rcgen::CertificateParams::new(vec!["node.example".to_string(), "10.0.0.7".to_string()])
                .unwrap();
        let odd = rcgen::CustomExtension::from_oid_content(&[1, 2, 3, 4, 5], vec![5, 0]);
        params.custom_extensions.push(odd);
        let key = KeyPair::generate().unwrap();
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        let request = request::parse(pem.as_bytes()).unwrap();
        let usages = vec!["server auth".to_string()];
        let issued = sign(&ca, &request, &usages, Duration::from_secs(3600)).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(issued.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        let sans = cert.subject_alternative_name().unwrap().unwrap();
        assert_eq!(sans.value.general_names.len(), 2);
        assert!(
            cert.extensions()
                .iter()
                .all(|e| e.oid.to_id_string() != "1.2.3.4.5")
        );
        assert_eq!(
            cert.public_key().raw,
            key.subject_public_key_info().as_slice()
        );
    }

    #[test]
    fn a_client_request_is_signed_by_the_ca() {
        let ca = test_ca();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "jane");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "developers");
        let key = KeyPair::generate().unwrap();
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        let request = request::parse(pem.as_bytes()).unwrap();
        let usages = vec!["client auth".to_string()];
        let day = Duration::from_secs(86400);
        let issued = sign(&ca, &request, &usages, day).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(issued.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        assert_eq!(
            cert.subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "jane"
        );
        let (_, ca_pem) = x509_parser::pem::parse_x509_pem(ca.cert_pem.as_bytes()).unwrap();
        assert_eq!(
            cert.issuer().to_string(),
            ca_pem.parse_x509().unwrap().subject().to_string()
        );
        let lifetime =
            cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
        assert_eq!(lifetime, 86400, "a day, starting 5 minutes ago (backdated)");
        assert!(
            cert.extended_key_usage()
                .unwrap()
                .unwrap()
                .value
                .client_auth
        );
        assert!(!cert.basic_constraints().unwrap().unwrap().value.ca);
    }
}
