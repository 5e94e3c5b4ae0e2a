//! kube-controller-manager's `csrapproving` controller: a node's request for a client
//! certificate (signer `kubernetes.io/kube-apiserver-client-kubelet`, as upstream checks
//! it) is approved when a SubjectAccessReview says its requester may create the
//! `certificatesigningrequests/selfnodeclient` subresource (a request for the requester's
//! own node name) or `certificatesigningrequests/nodeclient` (for any node), as upstream's.
//! Other requests are left to people (`kubectl certificate approve`).

use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::request::{self, Request};
use super::{Csr, KUBELET_CLIENT, WORKERS, push_condition, put};

/// The controller's name (`--controllers`).
pub const CSR_APPROVING_CONTROLLER: &str = "certificatesigningrequest-approving-controller";

/// A kind of request the controller recognizes: the subresource its requester must be
/// allowed to create, and the approval's message.
struct Recognizer {
    recognize: fn(&Csr, &Request) -> bool,
    subresource: &'static str,
    message: &'static str,
}

const RECOGNIZERS: [Recognizer; 2] = [
    Recognizer {
        recognize: is_self_node_client,
        subresource: "selfnodeclient",
        message: "Auto approving self kubelet client certificate after SubjectAccessReview.",
    },
    Recognizer {
        recognize: is_node_client,
        subresource: "nodeclient",
        message: "Auto approving kubelet client certificate after SubjectAccessReview.",
    },
];

/// Starts the controller over the requests' watch cache, writing through `client` until
/// `stopping`.
pub fn start_csr_approving(csrs: Served, client: LoopbackClient, stopping: CancellationToken) {
    crate::keyed::run(
        CSR_APPROVING_CONTROLLER,
        csrs.clone(),
        WORKERS,
        stopping,
        move |name| {
            let (csrs, client) = (csrs.clone(), client.clone());
            async move {
                let Some(csr) = csrs.cached("", &name) else {
                    return Ok(());
                };
                sync(&client, Csr(csr)).await
            }
        },
    );
}

/// Approves `csr` if it is undecided and recognized, and its requester is allowed.
async fn sync(client: &LoopbackClient, csr: Csr) -> Result<(), String> {
    if csr.issued() || csr.has_condition("Approved") || csr.has_condition("Denied") {
        return Ok(());
    }
    let request = csr
        .request()
        .map_err(|err| format!("unable to parse csr {:?}: {err}", csr.name()))?;
    let mut tried = Vec::new();
    for recognizer in &RECOGNIZERS {
        if !(recognizer.recognize)(&csr, &request) {
            continue;
        }
        tried.push(recognizer.subresource);
        if authorized(client, &csr.0, recognizer.subresource).await? {
            return approve(client, csr.0, recognizer.message).await;
        }
    }
    match tried.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "recognized csr {:?} as [{}] but subject access review was not approved",
            csr.name(),
            tried.join(" ")
        )),
    }
}

fn is_node_client(csr: &Csr, request: &Request) -> bool {
    let usages = super::usages(&csr.0);
    csr.signer_name() == KUBELET_CLIENT
        && request::validate_kubelet_client(request, &request::usage_set(&usages)).is_ok()
}

fn is_self_node_client(csr: &Csr, request: &Request) -> bool {
    csr.0["spec"]["username"].as_str() == Some(request.common_name.as_str())
        && is_node_client(csr, request)
}

/// Whether the requester of `csr` may create `subresource` of requests.
async fn authorized(
    client: &LoopbackClient,
    csr: &Value,
    subresource: &str,
) -> Result<bool, String> {
    let spec = &csr["spec"];
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": spec["username"], "uid": spec["uid"], "groups": spec["groups"],
            "extra": spec["extra"],
            "resourceAttributes": {"group": "certificates.k8s.io",
                "resource": "certificatesigningrequests", "verb": "create",
                "subresource": subresource, "version": "*"},
        },
    });
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let answer = client
        .json(http::Method::POST, path, None, Some(&review))
        .await
        .map_err(|err| err.to_string())?;
    Ok(answer["status"]["allowed"] == true)
}

/// Adds the Approved condition through the approval subresource.
async fn approve(client: &LoopbackClient, mut csr: Value, message: &str) -> Result<(), String> {
    let approved = json!({"type": "Approved", "status": "True", "reason": "AutoApproved",
        "message": message});
    push_condition(&mut csr, approved);
    put(client, &csr, "approval", "approval").await
}
