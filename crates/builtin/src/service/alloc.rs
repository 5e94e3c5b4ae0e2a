//! The Service write steps (upstream's service REST storage `beginCreate`, `beginUpdate`
//! and `afterDelete` with its allocator in pkg/registry/core/service/storage/alloc.go): IP
//! family fields initialized for the cluster's single-stack range, ClusterIPs and NodePorts
//! reserved before a write and released when it fails, when a type change or update gives
//! them up, and when the Service is deleted; and the repair run at start.

use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;
use kapi_apimachinery::schema::GroupKind;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::endpoints::Served;
use kapi_server::registry::ListParams;
use kapi_server::write_steps::{Reservation, WriteSteps};
use kapi_storage::Store;
use serde_json::{Value, json};

use super::ipallocator::{Cidr, IpAllocator, IpError, Owner};
use super::portallocator::{PortAllocator, PortError, PortRange};
use super::strategy::{
    LOAD_BALANCER, NODE_PORT, is_headless, needs_cluster_ip, needs_health_check, needs_node_port,
    ports,
};
use super::validation::validate_cluster_ips_related;
use crate::util::{str_of, strings_of};

/// The ranges Services are allocated from (`--service-cluster-ip-range`,
/// `--service-node-port-range`).
#[derive(Clone, Copy, Debug)]
pub struct ServiceRanges {
    pub cluster_ips: Cidr,
    pub node_ports: PortRange,
}

/// Reserves and releases the ClusterIPs and NodePorts of Services: the write steps of the
/// services registry.
pub struct ServiceAllocator {
    ips: Arc<IpAllocator>,
    ports: Arc<PortAllocator>,
}

impl ServiceAllocator {
    /// The allocator of `ranges`, reserving IPs as `ip_addresses` objects and NodePorts in
    /// the RangeAllocation under `storage_prefix` in `store`.
    pub fn new(
        ranges: ServiceRanges,
        ip_addresses: Served,
        store: Arc<dyn Store>,
        storage_prefix: &str,
    ) -> Arc<ServiceAllocator> {
        Arc::new(ServiceAllocator {
            ips: IpAllocator::new(ranges.cluster_ips, ip_addresses),
            ports: PortAllocator::new(ranges.node_ports, store, storage_prefix),
        })
    }

    /// Re-reserves what every stored Service holds (upstream's repair controllers, run at
    /// start): missing IPAddresses are created, used NodePorts marked in the bitmap. IPs
    /// outside the range and IPs another Service holds are logged.
    pub async fn repair(&self, services: &Served) -> Result<(), ApiError> {
        let resource = services.definition.group_resource();
        let listed = services
            .registry
            .list(&resource, &ListParams::default())
            .await?;
        let mut used_ports = Vec::new();
        for item in &listed.items {
            let service = item.decode()?;
            let owner = owner_of(&service);
            for ip in allocated_ips(&service) {
                match self.ips.allocate(ip, &owner, false).await {
                    Ok(()) => {
                        tracing::info!(%ip, service = %owner.name, "repaired a missing IPAddress")
                    }
                    Err(IpError::Allocated) => {}
                    Err(err) => {
                        tracing::warn!(%err, %ip, service = %owner.name, "repairing a ClusterIP")
                    }
                }
            }
            used_ports.extend(allocated_ports(&service));
        }
        self.ports.mark(&used_ports).await.map_err(|err| match err {
            PortError::Storage(err) => err,
            other => ApiError::internal(other),
        })
    }

    /// Reserves what `service` claims beyond `old` (everything on create).
    async fn reserve(
        &self,
        service: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<ServiceReservation, ApiError> {
        let mut reservation = ServiceReservation {
            ips: self.ips.clone(),
            ports: self.ports.clone(),
            owner: owner_of(service),
            dry_run,
            reserved_ips: Vec::new(),
            reserved_ports: Vec::new(),
            given_up_ips: Vec::new(),
            given_up_ports: Vec::new(),
        };
        let reserved = self.reserve_into(service, old, &mut reservation).await;
        if let Err(err) = reserved {
            Box::new(reservation).revert().await;
            return Err(err);
        }
        Ok(reservation)
    }

    async fn reserve_into(
        &self,
        service: &mut Value,
        old: Option<&Value>,
        reservation: &mut ServiceReservation,
    ) -> Result<(), ApiError> {
        let old_ips = old.map(allocated_ips).unwrap_or_default();
        if needs_cluster_ip(service) {
            // Invalid IPs are rejected before anything is reserved, as upstream does.
            let errs = validate_cluster_ips_related(service);
            if !errs.is_empty() {
                return Err(invalid(service, &errs));
            }
            self.init_ip_families(service)?;
            if !is_headless(service) && old_ips.is_empty() {
                self.reserve_cluster_ip(service, reservation).await?;
            }
        }
        let kept_ips = allocated_ips(service);
        reservation.given_up_ips = old_ips
            .into_iter()
            .filter(|ip| !kept_ips.contains(ip))
            .collect();
        let old_ports = old.map(allocated_ports).unwrap_or_default();
        self.reserve_node_ports(service, &old_ports, reservation)
            .await?;
        let kept_ports = allocated_ports(service);
        reservation.given_up_ports = old_ports
            .into_iter()
            .filter(|port| !kept_ports.contains(port))
            .collect();
        Ok(())
    }

    /// Fills `ipFamilyPolicy` (SingleStack) and `ipFamilies` (the range's family) and
    /// rejects dual-stack requirements and other families (upstream's initIPFamilyFields on
    /// a single-stack cluster).
    fn init_ip_families(&self, service: &mut Value) -> Result<(), ApiError> {
        let family = self.ips.cidr.family();
        if is_headless(service) && !has_selector(service) {
            init_selectorless_headless_families(service, family);
            return Ok(());
        }
        let spec = &service["spec"];
        let spec_path = Path::root("spec");
        let mut errs = FieldErrors::new();
        let policy = str_of(spec, "ipFamilyPolicy").to_string();
        if policy == "RequireDualStack" {
            errs.push(FieldError::invalid(
                &spec_path.child("ipFamilyPolicy"),
                policy.as_str(),
                "this cluster is not configured for dual-stack services",
            ));
        }
        let mut families: Vec<String> = strings_of(spec, "ipFamilies")
            .into_iter()
            .map(String::from)
            .collect();
        if families.len() > 1 && policy == "SingleStack" {
            errs.push(FieldError::invalid(
                &spec_path.child("ipFamilyPolicy"),
                policy.as_str(),
                "must be RequireDualStack or PreferDualStack when multiple 'ipFamilies' are specified",
            ));
        }
        if let Some(first) = families.first()
            && first != family
        {
            errs.push(FieldError::invalid(
                &spec_path.child("ipFamilies").index(0),
                first.as_str(),
                "not configured on this cluster",
            ));
        }
        if !errs.is_empty() {
            return Err(invalid(service, &errs));
        }
        families.truncate(1);
        if families.is_empty() {
            families.push(family.to_string());
        }
        let spec = service["spec"].as_object_mut().expect("defaulted spec");
        if policy.is_empty() {
            spec.insert("ipFamilyPolicy".into(), Value::from("SingleStack"));
        }
        spec.insert("ipFamilies".into(), json!(families));
        Ok(())
    }

    /// Reserves the requested ClusterIP, or picks one.
    async fn reserve_cluster_ip(
        &self,
        service: &mut Value,
        reservation: &mut ServiceReservation,
    ) -> Result<(), ApiError> {
        let requested = strings_of(&service["spec"], "clusterIPs")
            .first()
            .map(|ip| ip.to_string());
        let ip = match requested {
            Some(text) => {
                let ip: IpAddr = text.parse().map_err(|_| {
                    ApiError::internal(format!("failed to parse the ClusterIP {text}"))
                })?;
                self.ips
                    .allocate(ip, &reservation.owner, reservation.dry_run)
                    .await
                    .map_err(|err| match err {
                        IpError::Api(err) => err,
                        err => {
                            let path = Path::root("spec").child("clusterIPs");
                            let msg = format!("failed to allocate IP {text}: {err}");
                            invalid(
                                service,
                                &errors(FieldError::invalid(&path, text.as_str(), msg)),
                            )
                        }
                    })?;
                ip
            }
            None => self
                .ips
                .allocate_next(&reservation.owner, reservation.dry_run)
                .await
                .map_err(|err| match err {
                    IpError::Api(err) => err,
                    err => ApiError::internal(format!("failed to allocate a serviceIP: {err}")),
                })?,
        };
        if !reservation.dry_run {
            reservation.reserved_ips.push(ip);
        }
        let spec = service["spec"].as_object_mut().expect("defaulted spec");
        spec.insert("clusterIP".into(), Value::from(ip.to_string()));
        spec.insert("clusterIPs".into(), json!([ip.to_string()]));
        Ok(())
    }

    /// Reserves the NodePorts (and health check port) `service` needs and `old` did not hold.
    async fn reserve_node_ports(
        &self,
        service: &mut Value,
        old_ports: &[i64],
        reservation: &mut ServiceReservation,
    ) -> Result<(), ApiError> {
        if !needs_node_port(service) {
            return Ok(());
        }
        let auto = service_type_allocates_node_ports(service);
        let mut assigned: Vec<(i64, String, i64)> = Vec::new();
        let count = ports(&service["spec"]).len();
        for i in 0..count {
            let port = &service["spec"]["ports"][i];
            let (number, protocol) = (
                port["port"].as_i64().unwrap_or(0),
                str_of(port, "protocol").to_string(),
            );
            let requested = port["nodePort"].as_i64().unwrap_or(0);
            let node_port = if requested != 0 {
                if !old_ports.contains(&requested)
                    && !assigned.iter().any(|(_, _, p)| *p == requested)
                {
                    let path = Path::root("spec").child("ports").index(i).child("nodePort");
                    self.reserve_port(service, requested, &path, reservation)
                        .await?;
                }
                requested
            } else if !auto {
                continue;
            } else if let Some((_, _, shared)) = assigned
                .iter()
                .find(|(n, p, _)| *n == number && *p != protocol)
            {
                *shared
            } else {
                self.next_port(reservation).await?
            };
            assigned.push((number, protocol, node_port));
            service["spec"]["ports"][i]["nodePort"] = Value::from(node_port);
        }
        if needs_health_check(service) {
            let requested = service["spec"]["healthCheckNodePort"].as_i64().unwrap_or(0);
            let port = if requested == 0 {
                self.next_port(reservation).await?
            } else {
                if !old_ports.contains(&requested) {
                    let path = Path::root("spec").child("healthCheckNodePort");
                    self.reserve_port(service, requested, &path, reservation)
                        .await?;
                }
                requested
            };
            service["spec"]["healthCheckNodePort"] = Value::from(port);
        }
        Ok(())
    }

    /// Reserves a requested port; a failure is the field's validation error.
    async fn reserve_port(
        &self,
        service: &Value,
        port: i64,
        path: &Path,
        reservation: &mut ServiceReservation,
    ) -> Result<(), ApiError> {
        match self.ports.allocate(port, reservation.dry_run).await {
            Ok(()) => {
                if !reservation.dry_run {
                    reservation.reserved_ports.push(port);
                }
                Ok(())
            }
            Err(PortError::Storage(err)) => Err(err),
            Err(err) => Err(invalid(
                service,
                &errors(FieldError::invalid(path, port, err.to_string())),
            )),
        }
    }

    /// Reserves a port picked by the allocator.
    async fn next_port(&self, reservation: &mut ServiceReservation) -> Result<i64, ApiError> {
        match self.ports.allocate_next(reservation.dry_run).await {
            Ok(port) => {
                if !reservation.dry_run {
                    reservation.reserved_ports.push(port);
                }
                Ok(port)
            }
            Err(PortError::Storage(err)) => Err(err),
            Err(err) => Err(ApiError::internal(format!(
                "failed to allocate a nodePort: {err}"
            ))),
        }
    }
}

#[async_trait]
impl WriteSteps for ServiceAllocator {
    async fn begin_create(
        &self,
        service: &mut Value,
        dry_run: bool,
    ) -> Result<Box<dyn Reservation>, ApiError> {
        Ok(Box::new(self.reserve(service, None, dry_run).await?))
    }

    async fn begin_update(
        &self,
        new: &mut Value,
        old: &Value,
        dry_run: bool,
    ) -> Result<Box<dyn Reservation>, ApiError> {
        Ok(Box::new(self.reserve(new, Some(old), dry_run).await?))
    }

    async fn after_delete(&self, service: &Value) {
        let owner = owner_of(service);
        for ip in allocated_ips(service) {
            self.ips.release(ip, &owner).await;
        }
        self.ports.release(&allocated_ports(service)).await;
    }
}

/// What one write reserved and what it gives up.
struct ServiceReservation {
    ips: Arc<IpAllocator>,
    ports: Arc<PortAllocator>,
    owner: Owner,
    dry_run: bool,
    reserved_ips: Vec<IpAddr>,
    reserved_ports: Vec<i64>,
    given_up_ips: Vec<IpAddr>,
    given_up_ports: Vec<i64>,
}

#[async_trait]
impl Reservation for ServiceReservation {
    async fn commit(self: Box<Self>) {
        for ip in &self.given_up_ips {
            self.ips.release(*ip, &self.owner).await;
        }
        self.ports.release(&self.given_up_ports).await;
    }

    async fn revert(self: Box<Self>) {
        for ip in &self.reserved_ips {
            self.ips.release(*ip, &self.owner).await;
        }
        self.ports.release(&self.reserved_ports).await;
    }
}

/// Whether the service selects pods.
fn has_selector(service: &Value) -> bool {
    service["spec"]["selector"]
        .as_object()
        .is_some_and(|selector| !selector.is_empty())
}

/// A headless service without selector may hold endpoints of any family, whatever the
/// cluster's: its policy defaults to RequireDualStack and its families to both, the
/// cluster's first (upstream's initIPFamilyFields).
fn init_selectorless_headless_families(service: &mut Value, primary: &str) {
    let spec = service["spec"].as_object_mut().expect("defaulted spec");
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        spec.insert("ipFamilyPolicy".into(), Value::from("RequireDualStack"));
    }
    let single = spec["ipFamilyPolicy"] == "SingleStack";
    let mut families: Vec<Value> = match spec.get("ipFamilies") {
        Some(Value::Array(list)) if !list.is_empty() => list.clone(),
        _ => vec![Value::from(primary)],
    };
    if families.len() < 2 && !single {
        let other = if families[0] == "IPv6" {
            "IPv4"
        } else {
            "IPv6"
        };
        families.push(Value::from(other));
    }
    spec.insert("ipFamilies".into(), Value::Array(families));
}

/// Whether NodePorts are picked for ports that do not request one.
fn service_type_allocates_node_ports(service: &Value) -> bool {
    let spec = &service["spec"];
    match str_of(spec, "type") {
        NODE_PORT => true,
        LOAD_BALANCER => spec["allocateLoadBalancerNodePorts"].as_bool() != Some(false),
        _ => false,
    }
}

/// The ClusterIPs a service holds (none for headless and ExternalName services).
fn allocated_ips(service: &Value) -> Vec<IpAddr> {
    if !needs_cluster_ip(service) {
        return Vec::new();
    }
    strings_of(&service["spec"], "clusterIPs")
        .iter()
        .filter_map(|ip| ip.parse().ok())
        .collect()
}

/// The NodePorts and health check port a service holds.
fn allocated_ports(service: &Value) -> Vec<i64> {
    let mut held = Vec::new();
    if needs_node_port(service) {
        held.extend(
            ports(&service["spec"])
                .iter()
                .filter_map(|p| p["nodePort"].as_i64()),
        );
    }
    if needs_health_check(service) {
        held.extend(service["spec"]["healthCheckNodePort"].as_i64());
    }
    held.retain(|port| *port != 0);
    held.sort_unstable();
    held.dedup();
    held
}

fn owner_of(service: &Value) -> Owner {
    Owner {
        namespace: str_of(&service["metadata"], "namespace").to_string(),
        name: str_of(&service["metadata"], "name").to_string(),
    }
}

fn errors(error: FieldError) -> FieldErrors {
    let mut errs = FieldErrors::new();
    errs.push(error);
    errs
}

/// The 422 of a Service.
fn invalid(service: &Value, errs: &FieldErrors) -> ApiError {
    let name = str_of(&service["metadata"], "name");
    ApiError::invalid(&GroupKind::new("", "Service"), name, errs)
}
