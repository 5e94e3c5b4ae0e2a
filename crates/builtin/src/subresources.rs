//! Which subresources of the built-in resources the generic handlers serve, and how: the
//! catalog names each resource's subresources (as upstream's discovery lists them); this
//! module says what each one does.

mod connect;
mod csr;
mod pod;

use std::borrow::Cow;
use std::sync::Arc;

use kapi_apimachinery::schema::GroupVersionKind;
use kapi_server::resource::{
    CreateHandler, ScalePaths, ScaleSelector, Subresource, SubresourceKind, Verbs,
};

pub(crate) use pod::BindingCreater;

/// The scale of the apps/v1 workloads: `spec.replicas`, `status.replicas`, and the
/// `spec.selector` label selector.
const WORKLOAD_SCALE: ScalePaths = ScalePaths {
    spec_replicas: Cow::Borrowed("/spec/replicas"),
    status_replicas: Cow::Borrowed("/status/replicas"),
    selector: ScaleSelector::LabelSelector(Cow::Borrowed("/spec/selector")),
};

/// The scale of ReplicationControllers, whose selector is a map of labels.
const CONTROLLER_SCALE: ScalePaths = ScalePaths {
    spec_replicas: Cow::Borrowed("/spec/replicas"),
    status_replicas: Cow::Borrowed("/status/replicas"),
    selector: ScaleSelector::Map(Cow::Borrowed("/spec/selector")),
};

/// The served subresource `name` of `resource` in `group`, or `None` if kapi does not serve it.
/// The verbs are the usual ones of the kind; the catalog replaces them with upstream's.
pub(crate) fn subresource(group: &str, resource: &str, name: &'static str) -> Option<Subresource> {
    let (kind, verbs) = match (group, resource, name) {
        (_, _, "status") => (SubresourceKind::Status, Verbs::GET_UPDATE_PATCH),
        ("", "namespaces", "finalize") => (SubresourceKind::Finalize, Verbs::UPDATE),
        ("apps", "deployments" | "replicasets" | "statefulsets", "scale") => (
            SubresourceKind::Scale(WORKLOAD_SCALE),
            Verbs::GET_UPDATE_PATCH,
        ),
        ("", "replicationcontrollers", "scale") => (
            SubresourceKind::Scale(CONTROLLER_SCALE),
            Verbs::GET_UPDATE_PATCH,
        ),
        ("", "pods", "binding") => (create(BindingCreater), Verbs::CREATE),
        ("", "pods", "eviction") => (create(pod::EvictionCreater), Verbs::CREATE),
        ("", "serviceaccounts", "token") => {
            (create(crate::token::TokenRequestCreater), Verbs::CREATE)
        }
        ("", "pods", "ephemeralcontainers") => (
            SubresourceKind::Part(pod::ephemeral_containers_part()),
            Verbs::GET_UPDATE_PATCH,
        ),
        ("", "pods", "resize") => (
            SubresourceKind::Part(pod::resize_part()),
            Verbs::GET_UPDATE_PATCH,
        ),
        ("certificates.k8s.io", "certificatesigningrequests", "approval") => (
            SubresourceKind::Part(csr::approval_part()),
            Verbs::GET_UPDATE_PATCH,
        ),
        ("", "pods", "log") => (SubresourceKind::Connect(connect::pod), Verbs::GET),
        ("", "pods", "attach" | "exec" | "portforward") => (
            SubresourceKind::Connect(connect::pod),
            Verbs::CREATE | Verbs::GET,
        ),
        ("", "pods", "proxy") => (SubresourceKind::Connect(connect::pod), PROXY_VERBS),
        ("", "nodes", "proxy") => (SubresourceKind::Connect(connect::node), PROXY_VERBS),
        ("", "services", "proxy") => (SubresourceKind::Connect(connect::service), PROXY_VERBS),
        _ => return None,
    };
    Some(Subresource {
        name,
        kind,
        verbs,
        response_kind: response_kind(group, resource, name),
    })
}

/// The kinds the built-in subresources read and write when they are not the parent's: the
/// create subresources' request kinds and the connect subresources' options kinds, as
/// upstream's storage of each makes them.
fn response_kind(group: &str, resource: &str, name: &str) -> Option<GroupVersionKind> {
    let (group, kind) = match (group, resource, name) {
        ("", "pods", "binding") => ("", "Binding"),
        ("", "pods", "eviction") => ("policy", "Eviction"),
        ("", "pods", "attach") => ("", "PodAttachOptions"),
        ("", "pods", "exec") => ("", "PodExecOptions"),
        ("", "pods", "portforward") => ("", "PodPortForwardOptions"),
        ("", "pods", "proxy") => ("", "PodProxyOptions"),
        ("", "nodes", "proxy") => ("", "NodeProxyOptions"),
        ("", "services", "proxy") => ("", "ServiceProxyOptions"),
        ("", "serviceaccounts", "token") => ("authentication.k8s.io", "TokenRequest"),
        _ => return None,
    };
    Some(GroupVersionKind::new(group, "v1", kind))
}

/// The verbs of the proxy subresources (every method is proxied).
const PROXY_VERBS: Verbs = Verbs::CREATE
    .union(Verbs::DELETE)
    .union(Verbs::GET)
    .union(Verbs::PATCH)
    .union(Verbs::UPDATE);

fn create(hook: impl kapi_server::resource::Creater) -> SubresourceKind {
    SubresourceKind::Create(CreateHandler(Arc::new(hook)))
}

#[cfg(test)]
mod tests;
