//! certificates.k8s.io/v1 CertificateSigningRequest (kubernetes/pkg/apis/certificates/v1/
//! defaults.go, pkg/apis/certificates/validation, pkg/registry/certificates/
//! certificates/strategy.go).

use std::sync::Arc;

use base64::Engine;
use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use kapi_server::UserInfo;
use kapi_server::resource::{Name, NameValidator, Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{age, col, items, object_at, text, text_at};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, human_duration, name_cell};
use crate::strategy::{any_name, reset_status, validate_core, validate_core_update};
use crate::util::{str_of, strings_of};

/// The key usages upstream knows, sorted.
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The signer name v1beta1 defaulted to, which v1 refuses.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// The strategy of CertificateSigningRequests.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    (kind == "CertificateSigningRequest").then(|| KindStrategies {
        strategy: Arc::new(CertificateSigningRequestStrategy),
        table: Some(csr_table()),
    })
}

/// csrStrategy (pkg/registry/certificates/certificates/strategy.go).
struct CertificateSigningRequestStrategy;

impl Strategy for CertificateSigningRequestStrategy {
    fn default(&self, csr: &mut Value) {
        csr_defaults(csr);
    }

    fn set_requester(&self, csr: &mut Value, user: &UserInfo) {
        set_requester(csr, user);
    }

    fn prepare_for_create(&self, csr: &mut Value) {
        reset_status(csr);
        csr_defaults(csr);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        keep_spec(new, old);
        csr_defaults(new);
    }

    fn name_validator(&self) -> NameValidator {
        any_name
    }

    fn validate(&self, csr: &Value) -> FieldErrors {
        validate_core(csr, validate_csr(csr))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    fn selectable_fields(&self, csr: &Value) -> Vec<(Name, String)> {
        let signer = text_at(csr, "/spec/signerName").to_string();
        vec![("spec.signerName".into(), signer)]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "spec.signerName"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("spec")])
    }
}

/// PrepareForUpdate: the spec of a request never changes.
fn keep_spec(new: &mut Value, old: &Value) {
    if let Some(fields) = new.as_object_mut() {
        fields.insert("spec".into(), old["spec"].clone());
    }
}

/// PrepareForCreate: the requester's identity is the server's to fill, whatever the request
/// says (empty parts are left out, as the Go fields' omitempty does).
fn set_requester(csr: &mut Value, user: &UserInfo) {
    let spec = object_at(csr, "/spec");
    for key in ["username", "uid", "groups", "extra"] {
        spec.remove(key);
    }
    if !user.name.is_empty() {
        spec.insert("username".into(), Value::from(user.name.clone()));
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), Value::from(user.uid.clone()));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

/// SetDefaults_CertificateSigningRequestSpec: digital signature and key encipherment.
fn csr_defaults(csr: &mut Value) {
    let spec = object_at(csr, "/spec");
    if spec
        .get("usages")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "usages".into(),
            json!(["digital signature", "key encipherment"]),
        );
    }
}

/// validateCertificateSigningRequest: a PEM request, known unique usages, a signer name and
/// an expiration of at least ten minutes.
fn validate_csr(csr: &Value) -> FieldErrors {
    let spec = &csr["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let request = base64::engine::general_purpose::STANDARD
        .decode(str_of(spec, "request"))
        .unwrap_or_default();
    if let Err(detail) = check_pem_request(&request) {
        errs.push(FieldError {
            error_type: ErrorType::Invalid,
            field: path.child("request").to_string(),
            bad_value: Some(go_bytes(&request)),
            detail,
        });
    }
    let usages = strings_of(spec, "usages");
    if usages.is_empty() {
        errs.push(FieldError::required(
            &path.child("usages"),
            "usages must be provided",
        ));
    }
    for (i, usage) in usages.iter().enumerate() {
        if !USAGES.contains(usage) {
            errs.push(FieldError::not_supported(
                &path.child("usages").index(i),
                *usage,
                USAGES,
            ));
        }
    }
    for (i, usage) in usages.iter().enumerate() {
        if usages[..i].contains(usage) {
            errs.push(FieldError::duplicate(
                &path.child("usages").index(i),
                *usage,
            ));
        }
    }
    let signer = str_of(spec, "signerName");
    if signer == LEGACY_UNKNOWN_SIGNER {
        errs.push(FieldError::invalid(
            &path.child("signerName"),
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name(signer, &path.child("signerName")));
    }
    if let Some(seconds) = spec["expirationSeconds"].as_i64()
        && seconds < 600
    {
        errs.push(FieldError::invalid(
            &path.child("expirationSeconds"),
            seconds,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs
}

/// A Go `[]byte` as `%#v` prints it.
fn go_bytes(bytes: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    Value::from(encoded).to_string()
}

/// The first PEM block of the request must be a CERTIFICATE REQUEST holding DER, as
/// upstream's ParseCSR reads it: blocks that do not decode are skipped, as Go's pem.Decode
/// skips them. (Only the DER's outer SEQUENCE is checked, not the request's contents.)
fn check_pem_request(request: &[u8]) -> Result<(), String> {
    let block = x509_parser::pem::Pem::iter_from_buffer(request).find_map(Result::ok);
    match block {
        Some(block) if block.label == "CERTIFICATE REQUEST" => match block.contents.first() {
            Some(0x30) => Ok(()),
            _ => Err("asn1: structure error: tags don't match".to_string()),
        },
        _ => Err("PEM block type must be CERTIFICATE REQUEST".to_string()),
    }
}

/// ValidateSignerName: `domain/path` with a dotted DNS domain and DNS subdomain path parts.
fn validate_signer_name(signer: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if signer.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, rest] = segments.as_slice() else {
        errs.push(FieldError::invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errs;
    };
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        let problems = is_dns1123_label(label);
        if !problems.is_empty() {
            for problem in problems {
                let msg = format!(
                    "validating label {}: {problem}",
                    kapi_apimachinery::quote(label)
                );
                errs.push(FieldError::invalid(path, *domain, msg));
            }
            break;
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            *domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for part in rest.split('.') {
        for problem in is_dns1123_subdomain(part) {
            let msg = format!(
                "validating component {}: {problem}",
                kapi_apimachinery::quote(part)
            );
            errs.push(FieldError::invalid(path, *rest, msg));
        }
    }
    errs
}

fn csr_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            crate::printers::name_column(0),
            age(),
            col(
                "SignerName",
                "Name of the signer that should sign the certificate",
            ),
            col(
                "Requestor",
                "Name of the user that requested the certificate",
            ),
            col("RequestedDuration", "Requested duration of the certificate"),
            col(
                "Condition",
                "Condition of the certificate, like Approved, Denied, Issued or Failed",
            ),
        ],
        cells: std::sync::Arc::new(csr_cells),
    }
}

/// NAME, AGE, SIGNERNAME, REQUESTOR, REQUESTEDDURATION, CONDITION.
fn csr_cells(csr: &Value) -> Vec<Value> {
    let signer = match text_at(csr, "/spec/signerName") {
        "" => "<none>",
        signer => signer,
    };
    let duration = match csr["spec"]["expirationSeconds"].as_i64() {
        Some(seconds) => human_duration(i128::from(seconds) * 1_000_000_000),
        None => "<none>".to_string(),
    };
    vec![
        name_cell(csr),
        age_cell(csr),
        text(signer),
        text(text_at(csr, "/spec/username")),
        text(duration),
        text(condition(csr)),
    ]
}

/// Denied, Approved or Pending, then Failed and Issued.
fn condition(csr: &Value) -> String {
    let has = |kind: &str| {
        items(csr, "/status/conditions")
            .iter()
            .any(|c| str_of(c, "type") == kind)
    };
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text_at(csr, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};

    /// A syntactically valid request: a PEM CERTIFICATE REQUEST holding a DER sequence.
    fn request() -> String {
        let pem = "-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n";
        base64::engine::general_purpose::STANDARD.encode(pem)
    }

    #[test]
    fn csr_defaults_and_create() {
        let strategy = strategies("CertificateSigningRequest").unwrap().strategy;
        let mut csr = json!({"metadata": {"name": "c"}, "spec": {"request": request(), "signerName": "example.com/signer",
            "username": "mallory", "groups": ["system:masters"]}, "status": {"conditions": [{"type": "Approved"}]}});
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        strategy.set_requester(&mut csr, &alice);
        strategy.prepare_for_create(&mut csr);
        assert_eq!(
            csr["spec"]["usages"],
            json!(["digital signature", "key encipherment"])
        );
        assert_eq!(csr["spec"]["username"], json!("alice"));
        assert!(csr["spec"].get("groups").is_none());
        assert_eq!(csr["status"], json!({}));
        assert!(strategy.validate(&csr).is_empty());
        let mut update = csr.clone();
        update["spec"]["signerName"] = json!("example.com/other");
        strategy.prepare_for_update(&mut update, &csr);
        assert_eq!(update["spec"]["signerName"], "example.com/signer");
        assert_eq!(
            crate::tests::pairs(&strategy.selectable_fields(&csr)),
            vec![("spec.signerName", "example.com/signer".to_string())]
        );
    }

    #[test]
    fn csr_validation() {
        let strategy = strategies("CertificateSigningRequest").unwrap().strategy;
        let bad = json!({"spec": {"request": base64::engine::general_purpose::STANDARD.encode("hi"),
            "usages": ["server auth", "flying", "server auth"], "signerName": "signer", "expirationSeconds": 60}});
        assert_eq!(
            causes(&strategy.validate(&bad)),
            expect(&[
                (
                    "spec.request",
                    "FieldValueInvalid",
                    "Invalid value: \"aGk=\": PEM block type must be CERTIFICATE REQUEST"
                ),
                (
                    "spec.usages[1]",
                    "FieldValueNotSupported",
                    &format!(
                        "Unsupported value: \"flying\": supported values: {}",
                        USAGES.map(kapi_apimachinery::quote).join(", ")
                    )
                ),
                (
                    "spec.usages[2]",
                    "FieldValueDuplicate",
                    r#"Duplicate value: "server auth""#
                ),
                (
                    "spec.signerName",
                    "FieldValueInvalid",
                    r#"Invalid value: "signer": must be a fully qualified domain and path of the form 'example.com/signer-name'"#
                ),
                (
                    "spec.expirationSeconds",
                    "FieldValueInvalid",
                    "Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"
                ),
            ])
        );
        assert_eq!(
            causes(&validate_signer_name("example/Signer", &Path::root("s"))),
            expect(&[
                (
                    "s",
                    "FieldValueInvalid",
                    r#"Invalid value: "example": should be a domain with at least two segments separated by dots"#
                ),
                (
                    "s",
                    "FieldValueInvalid",
                    r#"Invalid value: "Signer": validating component "Signer": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
                ),
            ])
        );
    }

    #[test]
    fn csr_printer() {
        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved"}], "certificate": "Y2VydA=="}});
        assert_eq!(
            csr_cells(&csr)[2..],
            [
                json!("kubernetes.io/kube-apiserver-client"),
                json!("alice"),
                json!("24h"),
                json!("Approved,Issued")
            ]
        );
        assert_eq!(condition(&json!({})), "Pending");
    }
}
