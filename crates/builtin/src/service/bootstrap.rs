//! The `kubernetes` Service and what backs it, kept as kube-apiserver's controllers keep them
//! (pkg/controlplane/controller/kubernetesservice, defaultservicecidr and the endpoint
//! reconciler): the default ServiceCIDR `kubernetes` holding the service range, the Service
//! `default/kubernetes` on the range's first IP, port 443 (`https`) targeting the secure port,
//! and its Endpoints and EndpointSlice pointing at the advertised address.

use std::net::IpAddr;
use std::sync::Arc;

use kapi_apimachinery::meta;
use kapi_apimachinery::status::ApiError;
use kapi_server::endpoints::Served;
use kapi_server::registry::{KUBE_APISERVER, ReadVersion, Write};
use kapi_server::resource::SubresourceKind;
use kapi_storage::Store;
use serde_json::{Value, json};

use super::ipallocator::Cidr;
use super::masterleases::MasterLeases;

/// The name of the Service, its Endpoints, EndpointSlice and the default ServiceCIDR.
const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The port the Service exposes.
const SERVICE_PORT: u16 = 443;

/// What the `kubernetes` Service is made of and where it is written.
#[derive(Clone)]
pub struct KubernetesService {
    pub services: Served,
    pub endpoints: Served,
    pub endpoint_slices: Served,
    pub service_cidrs: Served,
    /// `--service-cluster-ip-range`.
    pub cidr: Cidr,
    /// The address the Endpoints point at (`--advertise-address`).
    pub advertise: IpAddr,
    /// The secure port the Service targets.
    pub secure_port: u16,
    /// The store and key prefix of the servers' leases.
    pub store: Arc<dyn Store>,
    pub storage_prefix: String,
}

impl KubernetesService {
    fn leases(&self) -> MasterLeases {
        MasterLeases::new(self.store.clone(), &self.storage_prefix)
    }
}

/// Renews this server's lease, then creates what is missing and resets what drifted: the
/// ServiceCIDR (and its Ready condition), the Service (its ports and type), the Endpoints
/// and the EndpointSlice listing every live server. Every object is attempted; the first
/// error is returned.
pub async fn reconcile_kubernetes_service(target: &KubernetesService) -> Result<(), ApiError> {
    let (addresses, lease_error) = match target.leases().renew(target.advertise).await {
        Ok(addresses) => (addresses, None),
        Err(err) => (vec![target.advertise], Some(err)),
    };
    let reconciled = reconcile_objects(target, &addresses).await;
    lease_error.map_or(reconciled, Err)
}

/// A graceful shutdown's step: this server's lease is removed and the Endpoints list the
/// servers left (left alone when none is, rather than emptied, as upstream does).
pub async fn leave_kubernetes_endpoints(target: &KubernetesService) -> Result<(), ApiError> {
    let leases = target.leases();
    leases.remove(target.advertise).await?;
    let addresses = leases.live().await?;
    if addresses.is_empty() {
        return Ok(());
    }
    let steps = [
        (
            &target.endpoints,
            endpoints(target, &addresses),
            &["subsets"][..],
        ),
        (
            &target.endpoint_slices,
            endpoint_slice(target, &addresses),
            &["addressType", "endpoints", "ports"][..],
        ),
    ];
    for (served, desired, reconciled) in steps {
        ensure(served, NAMESPACE, desired, reconciled).await?;
    }
    Ok(())
}

/// Every object of the `kubernetes` Service, the Endpoints listing `addresses`.
async fn reconcile_objects(
    target: &KubernetesService,
    addresses: &[IpAddr],
) -> Result<(), ApiError> {
    let steps = [
        (
            &target.service_cidrs,
            "",
            service_cidr(target),
            &["spec"][..],
        ),
        (
            &target.services,
            NAMESPACE,
            service(target),
            &["spec.ports", "spec.type"][..],
        ),
        (
            &target.endpoints,
            NAMESPACE,
            endpoints(target, addresses),
            &["subsets"][..],
        ),
        (
            &target.endpoint_slices,
            NAMESPACE,
            endpoint_slice(target, addresses),
            &["addressType", "endpoints", "ports"][..],
        ),
    ];
    let mut first_error = None;
    for (served, namespace, desired, reconciled) in steps {
        if let Err(err) = ensure(served, namespace, desired, reconciled).await {
            first_error.get_or_insert(err);
        }
    }
    if let Err(err) = ensure_cidr_ready(target).await {
        first_error.get_or_insert(err);
    }
    first_error.map_or(Ok(()), Err)
}

/// Sets the default ServiceCIDR's `Ready` condition when it holds this server's range and
/// has none yet (upstream's default ServiceCIDR controller; a condition set by others is left
/// alone).
async fn ensure_cidr_ready(target: &KubernetesService) -> Result<(), ApiError> {
    let served = &target.service_cidrs;
    let resource = served.definition.group_resource();
    let item = served
        .registry
        .get(&resource, "", NAME, &ReadVersion::MostRecent)
        .await?;
    let current = item.decode()?;
    let same_config = current["spec"]["cidrs"] == json!([target.cidr.to_string()]);
    let conditions = current["status"]["conditions"].as_array();
    let has_ready = conditions
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready");
    if !same_config || has_ready {
        return Ok(());
    }
    let write = Write {
        subresource: Some(&SubresourceKind::Status),
        dry_run: false,
        admission: None,
        manager: Some(KUBE_APISERVER),
    };
    let change = |stored: Option<&Value>| {
        let mut object = stored.cloned().unwrap_or_else(|| current.clone());
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        object["status"]["conditions"] = json!([{
            "type": "Ready",
            "status": "True",
            "lastTransitionTime": meta::now_rfc3339(),
            "reason": "",
            "message": "Kubernetes default Service CIDR is ready",
        }]);
        Ok(object)
    };
    served
        .registry
        .update(&served.definition, "", NAME, write, change)
        .await
        .map(drop)
}

/// Creates `desired` when missing, or writes its `reconciled` fields (dotted paths) over the
/// stored object when they differ.
async fn ensure(
    served: &Served,
    namespace: &str,
    desired: Value,
    reconciled: &[&str],
) -> Result<(), ApiError> {
    let (definition, registry) = (&served.definition, &served.registry);
    let resource = definition.group_resource();
    let current = match registry
        .get(&resource, namespace, NAME, &ReadVersion::MostRecent)
        .await
    {
        Ok(item) => item.decode()?,
        Err(err) if err.is_not_found() => {
            return match registry
                .create(definition, namespace, desired, Write::own(KUBE_APISERVER))
                .await
            {
                Err(err) if !err.is_already_exists() => Err(err),
                _ => Ok(()),
            };
        }
        Err(err) => return Err(err),
    };
    let drifted = reconciled
        .iter()
        .any(|path| at(&current, path) != at(&desired, path));
    if !drifted {
        return Ok(());
    }
    let change = |stored: Option<&Value>| {
        let mut object = stored.cloned().unwrap_or_else(|| desired.clone());
        // Unconditional: a concurrent write (another server reconciling) is retried over.
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        for path in reconciled {
            set_at(&mut object, path, at(&desired, path).clone());
        }
        Ok(object)
    };
    registry
        .update(
            definition,
            namespace,
            NAME,
            Write::own(KUBE_APISERVER),
            change,
        )
        .await
        .map(drop)
}

/// The value at a dotted path, `null` when absent.
fn at<'a>(object: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(object, |value, key| &value[key])
}

fn set_at(object: &mut Value, path: &str, value: Value) {
    let target = path
        .split('.')
        .fold(object, |current, key| &mut current[key]);
    *target = value;
}

fn service_cidr(target: &KubernetesService) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": { "name": NAME },
        "spec": { "cidrs": [target.cidr.to_string()] },
    })
}

fn service(target: &KubernetesService) -> Value {
    let ip = target.cidr.nth(0).to_string();
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": { "component": "apiserver", "provider": "kubernetes" },
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": ip,
            "clusterIPs": [ip],
            "sessionAffinity": "None",
            "ports": [{
                "name": "https",
                "port": SERVICE_PORT,
                "protocol": "TCP",
                "targetPort": target.secure_port,
            }],
        },
    })
}

fn endpoints(target: &KubernetesService, addresses: &[IpAddr]) -> Value {
    let addresses: Vec<Value> = addresses
        .iter()
        .map(|ip| json!({ "ip": ip.to_string() }))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" },
        },
        "subsets": [{
            "addresses": addresses,
            "ports": [{ "name": "https", "port": target.secure_port, "protocol": "TCP" }],
        }],
    })
}

fn endpoint_slice(target: &KubernetesService, addresses: &[IpAddr]) -> Value {
    let endpoints: Vec<Value> = addresses
        .iter()
        .filter(|ip| ip.is_ipv6() == target.advertise.is_ipv6())
        .map(|ip| json!({ "addresses": [ip.to_string()], "conditions": { "ready": true } }))
        .collect();
    let address_type = if target.advertise.is_ipv6() {
        "IPv6"
    } else {
        "IPv4"
    };
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": { "kubernetes.io/service-name": NAME },
        },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": [{ "name": "https", "port": target.secure_port, "protocol": "TCP" }],
    })
}
