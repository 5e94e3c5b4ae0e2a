//! The CertificateSigningRequest admission plugins (kubernetes/plugin/pkg/admission/
//! certificates): CertificateApproval (approving or denying needs the `approve` verb on the
//! request's signer), CertificateSigning (issuing a certificate needs `sign`), and
//! CertificateSubjectRestriction (no `system:masters` organization in requests to the
//! `kubernetes.io/kube-apiserver-client` signer).

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::authn::SYSTEM_PRIVILEGED_GROUP;
use kapi_server::{Authorizer, Decision, UserInfo};
use serde_json::Value;
use x509_parser::prelude::FromDer;

/// The signer whose certificates authenticate to the API server.
const API_SERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// Whether the request is for CertificateSigningRequests' `subresource`.
fn is_csr(attributes: &Attributes<'_>, subresource: &str) -> bool {
    let definition = attributes.definition;
    definition.group_version.group == "certificates.k8s.io"
        && definition.plural == "certificatesigningrequests"
        && attributes.subresource == subresource
}

/// Whether `user` may `verb` the signer `signer_name`, or every signer of its domain
/// (`example.com/*`), as upstream's isAuthorizedForSignerName asks.
async fn authorized_for_signer(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    verb: &str,
    signer_name: &str,
) -> bool {
    let wildcard = signer_name
        .split_once('/')
        .map(|(domain, _)| format!("{domain}/*"));
    for name in std::iter::once(signer_name.to_string()).chain(wildcard) {
        let attributes = kapi_server::Attributes {
            user,
            verb,
            namespace: "",
            api_group: "certificates.k8s.io",
            api_version: "*",
            resource: "signers",
            subresource: "",
            name: &name,
            resource_request: true,
            path: "",
            field_selector: "",
            label_selector: "",
        };
        if matches!(
            authorizer.authorize(&attributes).await,
            Ok(Decision::Allow(_))
        ) {
            return true;
        }
    }
    false
}

/// The Approved/Denied conditions of a request, for telling whether they change.
fn decisions(csr: Option<&Value>) -> Vec<Value> {
    csr.and_then(|c| c["status"]["conditions"].as_array())
        .into_iter()
        .flatten()
        .filter(|c| matches!(c["type"].as_str(), Some("Approved" | "Denied")))
        .cloned()
        .collect()
}

/// CertificateApproval and CertificateSigning: one plugin per verb.
pub struct CertificateAuthority {
    name: &'static str,
    /// `approve` (the `approval` subresource) or `sign` (the `status` subresource).
    verb: &'static str,
    authorizer: Arc<dyn Authorizer>,
}

impl CertificateAuthority {
    /// CertificateApproval: approvals need `approve` on the signer.
    pub fn approval(authorizer: Arc<dyn Authorizer>) -> CertificateAuthority {
        CertificateAuthority {
            name: "CertificateApproval",
            verb: "approve",
            authorizer,
        }
    }

    /// CertificateSigning: issued certificates need `sign` on the signer.
    pub fn signing(authorizer: Arc<dyn Authorizer>) -> CertificateAuthority {
        CertificateAuthority {
            name: "CertificateSigning",
            verb: "sign",
            authorizer,
        }
    }
}

#[async_trait]
impl AdmissionPlugin for CertificateAuthority {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let subresource = if self.verb == "approve" {
            "approval"
        } else {
            "status"
        };
        let (true, Operation::Update, Some(csr)) = (
            is_csr(attributes, subresource),
            attributes.operation,
            object,
        ) else {
            return Ok(());
        };
        let changed = if self.verb == "approve" {
            decisions(Some(csr)) != decisions(old)
        } else {
            csr["status"]["certificate"]
                != old.map_or(Value::Null, |o| o["status"]["certificate"].clone())
        };
        if !changed {
            return Ok(());
        }
        let signer = csr["spec"]["signerName"].as_str().unwrap_or_default();
        if authorized_for_signer(self.authorizer.as_ref(), attributes.user, self.verb, signer).await
        {
            return Ok(());
        }
        Err(ApiError::forbidden(
            &attributes.definition.group_resource(),
            attributes.name,
            format!(
                "user not permitted to {} requests with signerName {signer:?}",
                self.verb
            ),
        ))
    }
}

/// CertificateSubjectRestriction.
pub struct CertificateSubjectRestriction;

/// The organizations of a PEM PKCS#10 request's subject; empty when it does not parse
/// (validation reports malformed requests).
fn organizations(request_pem: &[u8]) -> Vec<String> {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(request_pem) else {
        return Vec::new();
    };
    let Ok((_, request)) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
    else {
        return Vec::new();
    };
    request
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect()
}

#[async_trait]
impl AdmissionPlugin for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        "CertificateSubjectRestriction"
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (true, Operation::Create, Some(csr)) =
            (is_csr(attributes, ""), attributes.operation, object)
        else {
            return Ok(());
        };
        if csr["spec"]["signerName"] != API_SERVER_CLIENT_SIGNER {
            return Ok(());
        }
        let request = csr["spec"]["request"].as_str().unwrap_or_default();
        let pem = base64::engine::general_purpose::STANDARD
            .decode(request)
            .unwrap_or_default();
        if organizations(&pem)
            .iter()
            .any(|o| o == SYSTEM_PRIVILEGED_GROUP)
        {
            return Err(ApiError::forbidden(
                &attributes.definition.group_resource(),
                attributes.name,
                format!(
                    "use of {API_SERVER_CLIENT_SIGNER} signer with {SYSTEM_PRIVILEGED_GROUP} group is not allowed"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_organizations_are_read() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "mallory");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "system:masters");
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        assert_eq!(organizations(pem.as_bytes()), ["system:masters"]);
        assert!(organizations(b"not a request").is_empty());
    }
}
