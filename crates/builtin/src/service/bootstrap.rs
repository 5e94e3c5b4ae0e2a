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
    /// How the Endpoints are kept (`--endpoint-reconciler-type`).
    pub reconciler: EndpointReconciler,
}

/// How the `kubernetes` Endpoints and EndpointSlice are kept (`--endpoint-reconciler-type`),
/// as upstream's reconcilers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointReconciler {
    /// Every server keeps a lease; the Endpoints list the live ones (the default).
    Lease,
    /// Every server adds its address and cuts the list to this many (`--apiserver-count`),
    /// dropping the addresses that follow its own.
    MasterCount(usize),
    /// The Endpoints are left alone.
    None,
}

impl KubernetesService {
    fn leases(&self) -> MasterLeases {
        MasterLeases::new(self.store.clone(), &self.storage_prefix)
    }
}

/// Renews this server's lease, then creates what is missing and resets what drifted: the
/// ServiceCIDR (and its Ready condition), the Service (created only), the Endpoints and the
/// EndpointSlice listing every live server. Every object is attempted; the first
/// error is returned.
pub async fn reconcile_kubernetes_service(target: &KubernetesService) -> Result<(), ApiError> {
    match target.reconciler {
        EndpointReconciler::Lease => {
            let (addresses, lease_error) = match target.leases().renew(target.advertise).await {
                Ok(addresses) => (addresses, None),
                Err(err) => (vec![target.advertise], Some(err)),
            };
            let reconciled = reconcile_objects(target, Some(&addresses)).await;
            lease_error.map_or(reconciled, Err)
        }
        EndpointReconciler::MasterCount(count) => {
            let listed = listed_addresses(target).await?;
            let addresses = master_count(listed, &target.advertise.to_string(), count);
            let addresses: Vec<IpAddr> =
                addresses.iter().filter_map(|ip| ip.parse().ok()).collect();
            reconcile_objects(target, Some(&addresses)).await
        }
        EndpointReconciler::None => reconcile_objects(target, None).await,
    }
}

/// The addresses the Endpoints list now, as the master-count reconciler reads them: those
/// of its one subset (`None` when it is missing or not in that form, to be made anew).
async fn listed_addresses(target: &KubernetesService) -> Result<Option<Vec<String>>, ApiError> {
    let served = &target.endpoints;
    let resource = served.definition.group_resource();
    let read = served
        .registry
        .get(&resource, NAMESPACE, NAME, &ReadVersion::MostRecent)
        .await;
    let current = match read {
        Ok(item) => item.decode()?,
        Err(err) if err.is_not_found() => return Ok(None),
        Err(err) => return Err(err),
    };
    let subsets = current["subsets"].as_array().cloned().unwrap_or_default();
    let [subset] = subsets.as_slice() else {
        return Ok(None);
    };
    let addresses = subset["addresses"].as_array().cloned().unwrap_or_default();
    Ok(Some(
        addresses
            .iter()
            .filter_map(|address| address["ip"].as_str().map(str::to_string))
            .collect(),
    ))
}

/// Upstream's master-count reconciliation of the addresses `listed`: kept when they hold
/// `own` and number `count`; otherwise `own` is added, the list sorted as text, and while it
/// is too long the address after `own` (wrapping around) removed, so that servers that
/// agree on the count converge on one list.
fn master_count(listed: Option<Vec<String>>, own: &str, count: usize) -> Vec<String> {
    let Some(mut addresses) = listed else {
        return vec![own.to_string()];
    };
    if addresses.iter().any(|ip| ip == own) && addresses.len() == count {
        return addresses;
    }
    if !addresses.iter().any(|ip| ip == own) {
        addresses.push(own.to_string());
    }
    addresses.sort();
    addresses.dedup();
    // As upstream's loop, the index of `own` is not moved when an address before it goes.
    if let Some(i) = addresses.iter().position(|ip| ip == own) {
        while addresses.len() > count.max(1) {
            let remove = (i + 1) % addresses.len();
            addresses.remove(remove);
        }
    }
    addresses
}

/// A graceful shutdown's step, and a start's (after an unclean shutdown), as upstream's
/// reconcilers' RemoveEndpoints: this server's lease is removed and the Endpoints list the
/// servers left; with the master-count reconciler this server's address is removed from
/// them. Nothing is written when this server had no lease or is not listed, nor when no
/// server would be left (upstream's write of an empty subset fails validation, and the
/// Endpoints stay as they were).
pub async fn leave_kubernetes_endpoints(target: &KubernetesService) -> Result<(), ApiError> {
    let addresses: Vec<IpAddr> = match target.reconciler {
        EndpointReconciler::None => return Ok(()),
        EndpointReconciler::MasterCount(_) => {
            let own = target.advertise.to_string();
            // No Endpoints in the master-count form: upstream's adapter reads none, and
            // there is nothing to leave.
            let Some(listed) = listed_addresses(target).await? else {
                return Ok(());
            };
            if !listed.contains(&own) {
                return Ok(());
            }
            let left = listed.iter().filter(|ip| **ip != own);
            left.filter_map(|ip| ip.parse().ok()).collect()
        }
        EndpointReconciler::Lease => {
            let leases = target.leases();
            if !leases.remove(target.advertise).await? {
                return Ok(());
            }
            leases.live().await?
        }
    };
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

/// The bootstrap controller's start, before the server reports ready: this server is taken
/// out of the Endpoints a previous run that did not shut down cleanly left it in (as
/// [`leave_kubernetes_endpoints`]; upstream's `Start` removes its endpoint until the server
/// is ready), the ServiceCIDR (with its Ready condition) is created or reset, and the
/// Service created when missing. The Endpoints and this server's lease are [`reconcile_kubernetes_service`]'s, once
/// the server is ready. Every step is attempted; the first error is returned.
pub async fn start_kubernetes_service(target: &KubernetesService) -> Result<(), ApiError> {
    let left = leave_kubernetes_endpoints(target).await;
    let reconciled = reconcile_objects(target, None).await;
    left.and(reconciled)
}

/// Every object of the `kubernetes` Service, the Endpoints listing `addresses` (left
/// alone when `None`).
async fn reconcile_objects(
    target: &KubernetesService,
    addresses: Option<&[IpAddr]>,
) -> Result<(), ApiError> {
    let mut steps = vec![
        (
            &target.service_cidrs,
            "",
            service_cidr(target),
            &["spec"][..],
        ),
        // Created when missing, never reset: upstream's controller reconciles the Service
        // only when asked to (`reconcile=false` on every pass since 1.17), so an edited
        // `kubernetes` Service keeps its edits.
        (&target.services, NAMESPACE, service(target), &[][..]),
    ];
    if let Some(addresses) = addresses {
        steps.push((
            &target.endpoints,
            NAMESPACE,
            endpoints(target, addresses),
            &["subsets"][..],
        ));
        steps.push((
            &target.endpoint_slices,
            NAMESPACE,
            endpoint_slice(target, addresses),
            &["addressType", "endpoints", "ports"][..],
        ));
    }
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
    // No address, no subset (upstream's RepackSubsets drops an empty one).
    let subsets = match addresses.is_empty() {
        true => json!([]),
        false => json!([{
            "addresses": addresses,
            "ports": [{ "name": "https", "port": target.secure_port, "protocol": "TCP" }],
        }]),
    };
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" },
        },
        "subsets": subsets,
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

#[cfg(test)]
mod tests {
    use super::master_count;

    fn ips(list: &[&str]) -> Vec<String> {
        list.iter().map(|ip| ip.to_string()).collect()
    }

    /// Upstream's master-count reconciliation (pkg/controlplane/reconcilers/mastercount.go).
    #[test]
    fn master_count_adds_itself_and_cuts_after_itself() {
        assert_eq!(master_count(None, "10.0.0.2", 3), ips(&["10.0.0.2"]));
        let listed = Some(ips(&["10.0.0.1", "10.0.0.3"]));
        assert_eq!(
            master_count(listed, "10.0.0.2", 3),
            ips(&["10.0.0.1", "10.0.0.2", "10.0.0.3"])
        );
        // Right already: left as listed.
        let listed = Some(ips(&["10.0.0.3", "10.0.0.1"]));
        assert_eq!(
            master_count(listed, "10.0.0.1", 2),
            ips(&["10.0.0.3", "10.0.0.1"])
        );
        // Too many: the addresses after its own go, wrapping around.
        let listed = Some(ips(&["10.0.0.1", "10.0.0.2", "10.0.0.4"]));
        assert_eq!(
            master_count(listed, "10.0.0.3", 2),
            ips(&["10.0.0.2", "10.0.0.3"])
        );
        // Upstream's index is not moved as addresses before it go, so a cut wrapping around
        // may drop its own address; the next reconciliation adds it back.
        let listed = Some(ips(&["10.0.0.1", "10.0.0.2"]));
        let once = master_count(listed, "10.0.0.9", 1);
        assert_eq!(once, ips(&["10.0.0.2"]));
        assert_eq!(master_count(Some(once), "10.0.0.9", 1), ips(&["10.0.0.9"]));
    }
}
