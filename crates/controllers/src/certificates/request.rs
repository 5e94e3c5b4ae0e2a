//! What the certificate controllers read in a CertificateSigningRequest's PKCS#10 request,
//! and upstream's checks of kubelet requests (k8s.io/api's certificates helpers) that both
//! the signer and the approver apply.

use std::collections::BTreeSet;

use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

/// The parts of a request the checks look at.
#[derive(Debug, Default)]
pub(crate) struct Request {
    /// The DER of the request.
    pub der: Vec<u8>,
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns_names: usize,
    pub ip_addresses: usize,
    pub email_addresses: usize,
    pub uris: usize,
}

/// Parses `spec.request` (PEM, as the API stores it after base64), as upstream's
/// `ParseCSR`: the first PEM block must be a CERTIFICATE REQUEST.
pub(crate) fn parse(pem: &[u8]) -> Result<Request, String> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem)
        .map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    if block.label != "CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    }
    let (_, csr) =
        X509CertificationRequest::from_der(&block.contents).map_err(|err| err.to_string())?;
    let subject = &csr.certification_request_info.subject;
    let text = |attribute: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        attribute.as_str().unwrap_or_default().to_string()
    };
    let mut request = Request {
        common_name: subject
            .iter_common_name()
            .last()
            .map(text)
            .unwrap_or_default(),
        organizations: subject.iter_organization().map(text).collect(),
        ..Request::default()
    };
    for extension in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(names) = extension else {
            continue;
        };
        for name in &names.general_names {
            match name {
                GeneralName::DNSName(_) => request.dns_names += 1,
                GeneralName::IPAddress(_) => request.ip_addresses += 1,
                GeneralName::RFC822Name(_) => request.email_addresses += 1,
                GeneralName::URI(_) => request.uris += 1,
                _ => {}
            }
        }
    }
    request.der = block.contents;
    Ok(request)
}

/// The usages of a request, as a set.
pub(crate) fn usage_set(usages: &[String]) -> BTreeSet<&str> {
    usages.iter().map(String::as_str).collect()
}

const CLIENT_USAGES: [&str; 3] = ["client auth", "digital signature", "key encipherment"];
const CLIENT_USAGES_NO_RSA: [&str; 2] = ["client auth", "digital signature"];
const SERVING_USAGES: [&str; 3] = ["digital signature", "key encipherment", "server auth"];
const SERVING_USAGES_NO_RSA: [&str; 2] = ["digital signature", "server auth"];

/// Upstream's `ValidateKubeletClientCSR`: a node's client certificate request.
pub(crate) fn validate_kubelet_client(
    request: &Request,
    usages: &BTreeSet<&str>,
) -> Result<(), String> {
    check_nodes_organization(request)?;
    let forbidden = [
        (request.dns_names, "DNS"),
        (request.email_addresses, "Email"),
        (request.ip_addresses, "IP"),
        (request.uris, "URI"),
    ];
    if let Some((_, kind)) = forbidden.iter().find(|(count, _)| *count > 0) {
        return Err(format!("{kind} subjectAltNames are not allowed"));
    }
    check_node_common_name(request)?;
    check_usages(usages, &CLIENT_USAGES, &CLIENT_USAGES_NO_RSA)
}

/// Upstream's `ValidateKubeletServingCSR`: a node's serving certificate request.
pub(crate) fn validate_kubelet_serving(
    request: &Request,
    usages: &BTreeSet<&str>,
) -> Result<(), String> {
    check_nodes_organization(request)?;
    if request.dns_names == 0 && request.ip_addresses == 0 {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if request.email_addresses > 0 {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if request.uris > 0 {
        return Err("URI subjectAltNames are not allowed".into());
    }
    check_usages(usages, &SERVING_USAGES, &SERVING_USAGES_NO_RSA)?;
    check_node_common_name(request)
}

/// Upstream's check of `kubernetes.io/kube-apiserver-client` requests' usages.
pub(crate) fn validate_api_server_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for usage in usages {
        match usage.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

fn check_nodes_organization(request: &Request) -> Result<(), String> {
    if request.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    Ok(())
}

fn check_node_common_name(request: &Request) -> Result<(), String> {
    if !request.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".into());
    }
    Ok(())
}

/// The usages must be one of the two sets exactly; the message lists the first (sorted, as
/// Go's `sets.List` prints it).
fn check_usages(
    usages: &BTreeSet<&str>,
    with_rsa: &[&str],
    without: &[&str],
) -> Result<(), String> {
    let is = |set: &[&str]| usages.len() == set.len() && set.iter().all(|u| usages.contains(u));
    if !is(with_rsa) && !is(without) {
        return Err(format!("usages did not match [{}]", with_rsa.join(" ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_request(common_name: &str, organization: &str, sans: Vec<String>) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(sans).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, organization);
        let key = rcgen::KeyPair::generate().unwrap();
        params
            .serialize_request(&key)
            .unwrap()
            .pem()
            .unwrap()
            .into_bytes()
    }

    #[test]
    fn kubelet_requests_are_checked_as_upstream() {
        let client = parse(&node_request("system:node:n1", "system:nodes", vec![])).unwrap();
        assert_eq!(client.common_name, "system:node:n1");
        let usages = vec!["digital signature".to_string(), "client auth".to_string()];
        assert_eq!(
            validate_kubelet_client(&client, &usage_set(&usages)),
            Ok(())
        );
        let server_auth = vec!["server auth".to_string()];
        assert_eq!(
            validate_kubelet_client(&client, &usage_set(&server_auth)),
            Err("usages did not match [client auth digital signature key encipherment]".into())
        );
        let stranger = parse(&node_request("jane", "system:nodes", vec![])).unwrap();
        assert_eq!(
            validate_kubelet_client(&stranger, &usage_set(&usages)),
            Err("subject common name does not begin with system:node:".into())
        );
        let with_name = parse(&node_request(
            "system:node:n1",
            "system:nodes",
            vec!["n1".into()],
        ));
        assert_eq!(
            validate_kubelet_client(&with_name.unwrap(), &usage_set(&usages)),
            Err("DNS subjectAltNames are not allowed".into())
        );
        let serving = vec!["digital signature".to_string(), "server auth".to_string()];
        assert_eq!(
            validate_kubelet_serving(&client, &usage_set(&serving)),
            Err("DNS or IP subjectAltName is required".into())
        );
        let named = parse(&node_request(
            "system:node:n1",
            "system:nodes",
            vec!["10.0.0.1".into()],
        ));
        assert_eq!(
            validate_kubelet_serving(&named.unwrap(), &usage_set(&serving)),
            Ok(())
        );
        let other = parse(&node_request("system:node:n1", "developers", vec![])).unwrap();
        assert_eq!(
            validate_kubelet_client(&other, &usage_set(&usages)),
            Err("subject organization is not system:nodes".into())
        );
    }

    #[test]
    fn api_server_client_usages() {
        let usages = |u: &[&str]| u.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            validate_api_server_client_usages(&usages(&["client auth"])),
            Ok(())
        );
        assert_eq!(
            validate_api_server_client_usages(&usages(&["client auth", "server auth"])),
            Err("invalid usage for client certificate: server auth".into())
        );
        assert_eq!(
            validate_api_server_client_usages(&usages(&["digital signature"])),
            Err("missing required usage for client certificate: client auth".into())
        );
        assert!(parse(b"not a request").is_err());
    }
}
