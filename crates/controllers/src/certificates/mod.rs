//! kube-controller-manager's certificate controllers, over CertificateSigningRequests:
//! `signer` issues certificates for approved requests to the `kubernetes.io` signers,
//! `approver` approves nodes' client certificate requests their requester may have
//! approved (through SubjectAccessReviews), `cleaner` deletes requests once they are done
//! with. All three work as kube-system's `certificate-controller` service account, as
//! upstream's.

mod approver;
mod cleaner;
mod request;
mod signer;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};

pub use approver::{CSR_APPROVING_CONTROLLER, start_csr_approving};
pub use cleaner::{CSR_CLEANER_CONTROLLER, start_csr_cleaner};
pub use signer::{CSR_SIGNING_CONTROLLER, CsrSigning, SigningCa, start_csr_signing};

use crate::keyed::Workers;

/// The service account the three controllers work as, in kube-system.
pub const CERTIFICATE_CONTROLLER_ACCOUNT: &str = "certificate-controller";

/// The signers kube-controller-manager serves.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
pub const KUBELET_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// Where the requests are.
const CSR_PATH: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

/// The signing and approving controllers' workers (`--concurrent-certificate-csr-syncs`)
/// and backoff (upstream's 200 ms to 1,000 s).
const WORKERS: Workers = Workers {
    count: 5,
    backoff: (Duration::from_millis(200), Duration::from_secs(1000)),
};

/// A CertificateSigningRequest as the controllers read it.
pub(crate) struct Csr(pub Value);

impl Csr {
    fn name(&self) -> &str {
        self.0["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn signer_name(&self) -> &str {
        self.0["spec"]["signerName"].as_str().unwrap_or_default()
    }

    fn conditions(&self) -> impl Iterator<Item = &Value> {
        self.0["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
    }

    fn has_condition(&self, type_: &str) -> bool {
        self.conditions().any(|c| c["type"] == type_)
    }

    fn has_true_condition(&self, type_: &str) -> bool {
        self.conditions()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    }

    /// Approved and not denied (upstream's `IsCertificateRequestApproved`).
    fn approved(&self) -> bool {
        self.has_condition("Approved") && !self.has_condition("Denied")
    }

    /// A certificate was issued.
    fn issued(&self) -> bool {
        self.0["status"]["certificate"]
            .as_str()
            .is_some_and(|certificate| !certificate.is_empty())
    }

    /// The PKCS#10 request of `spec.request`.
    fn request(&self) -> Result<request::Request, String> {
        let encoded = self.0["spec"]["request"].as_str().unwrap_or_default();
        let pem = STANDARD.decode(encoded).map_err(|err| err.to_string())?;
        request::parse(&pem)
    }
}

/// A request's `spec.usages`.
fn usages(csr: &Value) -> Vec<String> {
    csr["spec"]["usages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|usage| usage.as_str().map(str::to_string))
        .collect()
}

/// Appends `condition` to a request's `status.conditions`.
fn push_condition(csr: &mut Value, condition: Value) {
    if !csr["status"].is_object() {
        csr["status"] = json!({});
    }
    match csr["status"]["conditions"].as_array_mut() {
        Some(conditions) => conditions.push(condition),
        None => csr["status"]["conditions"] = json!([condition]),
    }
}

/// Writes `csr` through its `subresource` (`status` or `approval`); a request deleted
/// meanwhile is done with. `what` names the write in errors, as upstream's.
async fn put(
    client: &LoopbackClient,
    csr: &Value,
    subresource: &str,
    what: &str,
) -> Result<(), String> {
    let name = csr["metadata"]["name"].as_str().unwrap_or_default();
    let path = format!("{CSR_PATH}/{name}/{subresource}");
    match client.json(http::Method::PUT, &path, None, Some(csr)).await {
        Ok(_) => Ok(()),
        Err(err) if err.code() == 404 => Ok(()),
        Err(err) => Err(format!("error updating {what} for csr: {err}")),
    }
}
