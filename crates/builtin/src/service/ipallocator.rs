//! ClusterIP allocation from the service CIDR, as upstream's IPAddress-backed allocator
//! (pkg/registry/core/service/ipallocator): an IP is reserved by creating the
//! networking.k8s.io/v1 IPAddress named by it, whose parentRef is the Service; the store's
//! create-if-absent makes the reservation atomic across servers. Automatic picks are random,
//! from the upper (dynamic) part of the range first, so that the lower (static) part stays
//! free for IPs chosen by users.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use kapi_apimachinery::status::ApiError;
use kapi_server::endpoints::Served;
use kapi_server::registry::ReadVersion;
use rand::Rng;
use serde_json::{Value, json};

/// The label naming an IPAddress's family.
const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// The label naming the controller managing an IPAddress.
const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
/// The manager of the IPAddresses of Services.
pub(super) const MANAGED_BY: &str = "ipallocator.k8s.io";

/// Why a CIDR does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CidrError {
    #[error("invalid CIDR address: {0}")]
    Invalid(String),
}

/// An IP network (`10.96.0.0/12`); the address is masked to the prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    base: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `address/prefix`.
    pub fn parse(text: &str) -> Result<Cidr, CidrError> {
        let invalid = || CidrError::Invalid(text.to_string());
        let (address, prefix) = text.split_once('/').ok_or_else(invalid)?;
        let address: IpAddr = address.parse().map_err(|_| invalid())?;
        let prefix: u8 = prefix.parse().map_err(|_| invalid())?;
        if prefix > bits(address)
            || prefix.to_string() != text.split_once('/').unwrap_or_default().1
        {
            return Err(invalid());
        }
        let mask = if prefix == 0 {
            0
        } else {
            u128::MAX << (bits(address) - prefix)
        };
        let base = from_u128(address.is_ipv6(), to_u128(address) & mask);
        Ok(Cidr { base, prefix })
    }

    /// `IPv4` or `IPv6`, as Services name families.
    pub fn family(&self) -> &'static str {
        if self.base.is_ipv6() { "IPv6" } else { "IPv4" }
    }

    /// Whether `ip` is in the network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        if ip.is_ipv6() != self.base.is_ipv6() {
            return false;
        }
        let host_bits = bits(ip) - self.prefix;
        let mask = if host_bits >= 128 {
            0
        } else {
            u128::MAX << host_bits
        };
        to_u128(ip) & mask == to_u128(self.base)
    }

    /// How many addresses can be handed out: all but the network address (and, for IPv4,
    /// the broadcast address).
    pub fn usable(&self) -> u128 {
        let host_bits = u32::from(bits(self.base) - self.prefix);
        let size = 1u128.checked_shl(host_bits).unwrap_or(u128::MAX);
        let reserved = if self.base.is_ipv6() { 1 } else { 2 };
        size.saturating_sub(reserved)
    }

    /// The `offset`-th usable address (0 is the one after the network address).
    pub fn nth(&self, offset: u128) -> IpAddr {
        from_u128(self.base.is_ipv6(), to_u128(self.base) + 1 + offset)
    }

    /// The offset of a usable address, if `ip` is one.
    fn offset_of(&self, ip: IpAddr) -> Option<u128> {
        if !self.contains(ip) {
            return None;
        }
        let offset = to_u128(ip).checked_sub(to_u128(self.base) + 1)?;
        (offset < self.usable()).then_some(offset)
    }

    /// The size of the static block at the start of the range that automatic picks use
    /// last: min(max(16, size/16), 256), none for ranges of 16 addresses or fewer.
    pub fn static_block(&self) -> u128 {
        let size = self.usable() + if self.base.is_ipv6() { 1 } else { 2 };
        if size <= 16 {
            return 0;
        }
        (size / 16).clamp(16, 256)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

fn bits(ip: IpAddr) -> u8 {
    if ip.is_ipv6() { 128 } else { 32 }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_u128(v6: bool, value: u128) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(value))
    } else {
        IpAddr::V4(Ipv4Addr::from(value as u32))
    }
}

/// Why an IP could not be reserved, worded as upstream's allocator errors.
#[derive(Debug, thiserror::Error)]
pub(super) enum IpError {
    #[error("provided IP is already allocated")]
    Allocated,
    #[error("the provided network does not match the current range")]
    NotInRange,
    #[error("range is full")]
    Full,
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// The service whose IPs are reserved.
#[derive(Clone, Debug)]
pub(super) struct Owner {
    pub namespace: String,
    pub name: String,
}

/// Reserves ClusterIPs as IPAddress objects.
pub(super) struct IpAllocator {
    pub cidr: Cidr,
    ip_addresses: Served,
}

impl IpAllocator {
    pub fn new(cidr: Cidr, ip_addresses: Served) -> Arc<IpAllocator> {
        Arc::new(IpAllocator { cidr, ip_addresses })
    }

    /// Reserves `ip` for `owner` (a dry run only checks that it is free).
    pub async fn allocate(&self, ip: IpAddr, owner: &Owner, dry_run: bool) -> Result<(), IpError> {
        if self.cidr.offset_of(ip).is_none() {
            return Err(IpError::NotInRange);
        }
        if dry_run {
            return match self.exists(ip).await? {
                true => Err(IpError::Allocated),
                false => Ok(()),
            };
        }
        let object = self.ip_address(ip, owner);
        let registry = &self.ip_addresses.registry;
        match registry
            .create(
                &self.ip_addresses.definition,
                "",
                object,
                kapi_server::registry::Write::own(kapi_server::registry::KUBE_APISERVER),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if err.is_already_exists() => Err(IpError::Allocated),
            Err(err) => Err(err.into()),
        }
    }

    /// Reserves a free IP for `owner`, picked at random from the dynamic block first, then
    /// from the static block.
    pub async fn allocate_next(&self, owner: &Owner, dry_run: bool) -> Result<IpAddr, IpError> {
        let usable = self.cidr.usable();
        let static_block = self.cidr.static_block().min(usable);
        for (start, end) in [(static_block, usable), (0, static_block)] {
            if start >= end {
                continue;
            }
            let size = end - start;
            let first = rand::rng().random_range(0..size);
            for step in 0..size {
                let ip = self.cidr.nth(start + (first + step) % size);
                match self.allocate(ip, owner, dry_run).await {
                    Ok(()) => return Ok(ip),
                    Err(IpError::Allocated) => continue,
                    Err(err) => return Err(err),
                }
            }
        }
        Err(IpError::Full)
    }

    /// Releases `ip` if it is reserved for `owner` (another service's reservation of the
    /// same IP is left alone).
    pub async fn release(&self, ip: IpAddr, owner: &Owner) {
        let name = ip.to_string();
        let served = &self.ip_addresses;
        let resource = served.definition.group_resource();
        let Ok(item) = served
            .registry
            .get(&resource, "", &name, &ReadVersion::MostRecent)
            .await
        else {
            return;
        };
        let Ok(object) = item.decode() else { return };
        let parent = &object["spec"]["parentRef"];
        if parent["namespace"] != owner.namespace.as_str() || parent["name"] != owner.name.as_str()
        {
            return;
        }
        let params = kapi_server::registry::DeleteParams {
            precondition_uid: object["metadata"]["uid"].as_str().map(String::from),
            ..Default::default()
        };
        if let Err(err) = served
            .registry
            .delete(&served.definition, "", &name, &params, None)
            .await
            && !err.is_not_found()
        {
            tracing::warn!(%err, ip = %name, "releasing a ClusterIP");
        }
    }

    /// Whether an IPAddress exists for `ip`.
    pub async fn exists(&self, ip: IpAddr) -> Result<bool, ApiError> {
        let served = &self.ip_addresses;
        let resource = served.definition.group_resource();
        let name = ip.to_string();
        match served
            .registry
            .get(&resource, "", &name, &ReadVersion::MostRecent)
            .await
        {
            Ok(_) => Ok(true),
            Err(err) if err.is_not_found() => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// The IPAddress reserving `ip` for `owner`.
    fn ip_address(&self, ip: IpAddr, owner: &Owner) -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": ip.to_string(),
                "labels": {
                    FAMILY_LABEL: self.cidr.family(),
                    MANAGED_BY_LABEL: MANAGED_BY,
                },
            },
            "spec": {
                "parentRef": {
                    "group": "",
                    "resource": "services",
                    "namespace": owner.namespace,
                    "name": owner.name,
                },
            },
        })
    }
}
