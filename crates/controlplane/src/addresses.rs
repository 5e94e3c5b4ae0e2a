//! Where the server is reached: the advertised address, the URL of the admin kubeconfig and
//! the names its serving certificate must carry.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::options::ServeOptions;

/// The names the `kubernetes` service is reached by in a cluster.
const KUBERNETES_SERVICE_NAMES: [&str; 4] = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// `--advertise-address`, else the bind address, else (bound to all interfaces) the first
/// non-loopback address of the machine.
pub(crate) fn advertise_address(options: &ServeOptions) -> IpAddr {
    if let Some(address) = options.advertise_address {
        return address;
    }
    if !options.bind_address.is_unspecified() {
        return options.bind_address;
    }
    let addresses = machine_addresses();
    let first_v4 = addresses
        .iter()
        .find(|ip| ip.is_ipv4() && !ip.is_loopback());
    let first = first_v4.or_else(|| addresses.iter().find(|ip| !ip.is_loopback()));
    first.copied().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The URL local clients (the admin kubeconfig) reach the server at: the bind address, or
/// loopback when bound to all interfaces.
pub(crate) fn local_url(options: &ServeOptions) -> String {
    let host = match options.bind_address {
        ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    let host = match host {
        IpAddr::V6(v6) => format!("[{v6}]"),
        IpAddr::V4(v4) => v4.to_string(),
    };
    format!("https://{host}:{}", options.secure_port)
}

/// Every name the serving certificate must be valid for.
pub(crate) fn serving_names(options: &ServeOptions, advertise: IpAddr) -> BTreeSet<String> {
    let service_ip = options.service_cluster_ip_range.nth(0).to_string();
    let mut names: BTreeSet<String> = ["localhost", "127.0.0.1", &service_ip]
        .into_iter()
        .chain(KUBERNETES_SERVICE_NAMES)
        .map(String::from)
        .collect();
    names.insert(Ipv6Addr::LOCALHOST.to_string());
    if let Some(hostname) = gethostname::gethostname()
        .to_str()
        .filter(|h| !h.is_empty())
    {
        names.insert(hostname.to_ascii_lowercase());
    }
    names.extend(machine_addresses().iter().map(IpAddr::to_string));
    names.insert(advertise.to_string());
    names.extend(options.tls_san.iter().filter(|s| !s.is_empty()).cloned());
    names
}

/// The machine's interface addresses, IPv6 link-local ones left out (they need a zone).
fn machine_addresses() -> Vec<IpAddr> {
    let interfaces = if_addrs::get_if_addrs().unwrap_or_default();
    let link_local = |ip: &IpAddr| matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local());
    interfaces
        .iter()
        .map(|i| i.ip())
        .filter(|ip| !link_local(ip))
        .collect()
}
