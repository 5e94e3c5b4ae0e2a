//! core/v1 Service validation with upstream's messages (pkg/apis/core/validation
//! ValidateService*): the spec on create and update, the update rules of cluster IPs, IP
//! families and the load balancer class, and the load balancer status.

use std::collections::BTreeSet;
use std::net::IpAddr;

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_port_name, validate_labels,
};
use serde_json::Value;

use super::strategy::{
    CLUSTER_IP, EXTERNAL_NAME, LOAD_BALANCER, NODE_PORT, NONE, externally_accessible, is_headless,
    needs_cluster_ip, needs_health_check, ports, service_type,
};
use crate::util::{str_of, strings_of};

/// The longest ClientIP session affinity upstream accepts, in seconds.
const MAX_CLIENT_IP_AFFINITY_SECONDS: i64 = 86400;
const SERVICE_TYPES: [&str; 4] = [CLUSTER_IP, EXTERNAL_NAME, LOAD_BALANCER, NODE_PORT];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const SESSION_AFFINITIES: [&str; 2] = ["ClientIP", "None"];
const TRAFFIC_POLICIES: [&str; 2] = ["Cluster", "Local"];
const IP_FAMILIES: [&str; 2] = ["IPv4", "IPv6"];
const IP_FAMILY_POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
/// Upstream's message for values that are not IP addresses.
pub(super) const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
/// The kubelet's port, which LoadBalancer services may not expose.
const KUBELET_PORT: i64 = 10250;

/// Upstream's ValidateService (metadata is checked by the registry).
pub(super) fn validate_service(service: &Value) -> FieldErrors {
    let spec = &service["spec"];
    let spec_path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let kind = service_type(service);
    let headless = is_headless(service);
    if ports(spec).is_empty() && !headless && kind != EXTERNAL_NAME {
        errs.push(FieldError::required(&spec_path.child("ports"), ""));
    }
    errs.extend(validate_type_rules(service, &spec_path));
    let mut names = BTreeSet::new();
    let several = ports(spec).len() > 1;
    for (i, port) in ports(spec).iter().enumerate() {
        let path = spec_path.child("ports").index(i);
        errs.extend(validate_service_port(port, several, &mut names, &path));
    }
    if let Some(selector) = spec.get("selector").and_then(Value::as_object) {
        errs.extend(validate_labels(selector, &spec_path.child("selector")));
    }
    errs.extend(validate_session_affinity(spec, &spec_path));
    errs.extend(validate_cluster_ips_related(service));
    for (i, ip) in strings_of(spec, "externalIPs").into_iter().enumerate() {
        errs.extend(validate_external_ip(
            ip,
            &spec_path.child("externalIPs").index(i),
        ));
    }
    match kind {
        "" => errs.push(FieldError::required(&spec_path.child("type"), "")),
        kind if !SERVICE_TYPES.contains(&kind) => {
            errs.push(FieldError::not_supported(
                &spec_path.child("type"),
                kind,
                SERVICE_TYPES,
            ));
        }
        _ => {}
    }
    errs.extend(validate_node_ports(service, &spec_path));
    errs.extend(validate_duplicate_ports(spec, &spec_path));
    errs.extend(validate_load_balancer_fields(service, &spec_path));
    errs.extend(validate_traffic_policies(service, &spec_path));
    errs
}

/// The rules of each type: no headless NodePort/LoadBalancer, ExternalName's fields.
fn validate_type_rules(service: &Value, spec_path: &Path) -> FieldErrors {
    let spec = &service["spec"];
    let mut errs = FieldErrors::new();
    let headless_path = spec_path.child("clusterIPs").index(0);
    match service_type(service) {
        LOAD_BALANCER if is_headless(service) => errs.push(FieldError::invalid(
            &headless_path,
            NONE,
            "may not be set to 'None' for LoadBalancer services",
        )),
        LOAD_BALANCER => {
            for (i, port) in ports(spec).iter().enumerate() {
                if port["port"].as_i64() == Some(KUBELET_PORT) {
                    errs.push(FieldError::invalid(
                        &spec_path.child("ports").index(i),
                        KUBELET_PORT,
                        format!("may not expose port {KUBELET_PORT} externally since it is used by kubelet"),
                    ));
                }
            }
        }
        NODE_PORT if is_headless(service) => errs.push(FieldError::invalid(
            &headless_path,
            NONE,
            "may not be set to 'None' for NodePort services",
        )),
        EXTERNAL_NAME => {
            for key in ["clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                let set = match spec.get(key) {
                    Some(Value::Array(list)) => !list.is_empty(),
                    Some(value) => !value.is_null(),
                    None => false,
                };
                if set {
                    errs.push(FieldError::forbidden(
                        &spec_path.child(key),
                        "may not be set for ExternalName services",
                    ));
                }
            }
            let name = str_of(spec, "externalName");
            let cname = name.strip_suffix('.').unwrap_or(name);
            let path = spec_path.child("externalName");
            if cname.is_empty() {
                errs.push(FieldError::required(&path, ""));
            }
            for msg in if cname.is_empty() {
                Vec::new()
            } else {
                is_dns1123_subdomain(cname)
            } {
                errs.push(FieldError::invalid(&path, cname, msg));
            }
        }
        _ => {}
    }
    errs
}

/// Upstream's validateServicePort.
fn validate_service_port(
    port: &Value,
    require_name: bool,
    names: &mut BTreeSet<String>,
    path: &Path,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let name = str_of(port, "name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        for msg in is_dns1123_label(name) {
            errs.push(FieldError::invalid(&path.child("name"), name, msg));
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&path.child("name"), name));
        }
    }
    let number = port["port"].as_i64().unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errs.push(FieldError::invalid(&path.child("port"), number, PORT_RANGE));
    }
    match str_of(port, "protocol") {
        "" => errs.push(FieldError::required(&path.child("protocol"), "")),
        protocol if !PROTOCOLS.contains(&protocol) => {
            errs.push(FieldError::not_supported(
                &path.child("protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
        _ => {}
    }
    errs.extend(validate_port_num_or_name(
        &port["targetPort"],
        &path.child("targetPort"),
    ));
    if let Some(app_protocol) = port.get("appProtocol").and_then(Value::as_str) {
        for msg in is_qualified_name(app_protocol) {
            errs.push(FieldError::invalid(
                &path.child("appProtocol"),
                app_protocol,
                msg,
            ));
        }
    }
    errs
}

/// Upstream's ValidatePortNumOrName for an IntOrString.
pub(super) fn validate_port_num_or_name(port: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    match port {
        Value::String(name) => {
            for msg in is_valid_port_name(name) {
                errs.push(FieldError::invalid(path, name.as_str(), msg));
            }
        }
        other => {
            let number = other.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&number) {
                errs.push(FieldError::invalid(path, number, PORT_RANGE));
            }
        }
    }
    errs
}

fn validate_session_affinity(spec: &Value, spec_path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = spec_path.child("sessionAffinity");
    let config_path = spec_path.child("sessionAffinityConfig");
    match str_of(spec, "sessionAffinity") {
        "" => errs.push(FieldError::required(&path, "")),
        "ClientIP" => {
            let required = "when session affinity type is ClientIP";
            let config = &spec["sessionAffinityConfig"];
            let client_ip = &config["clientIP"];
            let timeout_path = config_path.child("clientIP").child("timeoutSeconds");
            if config.is_null() {
                errs.push(FieldError::required(&config_path, required));
            } else if client_ip.is_null() {
                errs.push(FieldError::required(
                    &config_path.child("clientIP"),
                    required,
                ));
            } else if let Some(timeout) = client_ip["timeoutSeconds"].as_i64() {
                if timeout <= 0 || timeout > MAX_CLIENT_IP_AFFINITY_SECONDS {
                    errs.push(FieldError::invalid(
                        &timeout_path,
                        timeout,
                        format!(
                            "must be greater than 0 and less than {MAX_CLIENT_IP_AFFINITY_SECONDS}"
                        ),
                    ));
                }
            } else {
                errs.push(FieldError::required(&timeout_path, required));
            }
        }
        "None" => {
            if spec
                .get("sessionAffinityConfig")
                .is_some_and(|c| !c.is_null())
            {
                errs.push(FieldError::forbidden(
                    &config_path,
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(&path, other, SESSION_AFFINITIES)),
    }
    errs
}

/// Upstream's ValidateServiceClusterIPsRelatedFields.
pub(super) fn validate_cluster_ips_related(service: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if service_type(service) == EXTERNAL_NAME {
        return errs;
    }
    let spec = &service["spec"];
    let spec_path = Path::root("spec");
    let ips_path = spec_path.child("clusterIPs");
    let cluster_ip = str_of(spec, "clusterIP");
    let ips = strings_of(spec, "clusterIPs");
    let ips_value = spec.get("clusterIPs").cloned().unwrap_or(Value::Null);
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.push(FieldError::required(&ips_path, ""));
        } else if ips[0] != cluster_ip {
            errs.push(FieldError::invalid(
                &ips_path,
                ips_value.clone(),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid(
            &ips_path,
            ips_value.clone(),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let families = strings_of(spec, "ipFamilies");
    let mut seen = BTreeSet::new();
    for (i, family) in families.iter().enumerate() {
        let path = spec_path.child("ipFamilies").index(i);
        if !IP_FAMILIES.contains(family) {
            errs.push(FieldError::not_supported(&path, *family, IP_FAMILIES));
        }
        if !seen.insert(*family) {
            errs.push(FieldError::duplicate(&path, *family));
        }
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str)
        && !IP_FAMILY_POLICIES.contains(&policy)
    {
        errs.push(FieldError::not_supported(
            &spec_path.child("ipFamilyPolicy"),
            policy,
            IP_FAMILY_POLICIES,
        ));
    }
    let mut invalid_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && *ip == NONE {
            if ips.len() > 1 {
                invalid_ips = true;
                errs.push(FieldError::invalid(
                    &ips_path,
                    ips_value.clone(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if ip.parse::<IpAddr>().is_err() {
            invalid_ips = true;
            errs.push(FieldError::invalid(&ips_path.index(i), *ip, INVALID_IP));
        }
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid(
            &ips_path,
            ips_value.clone(),
            "may only hold up to 2 values",
        ));
    }
    if invalid_ips {
        return errs;
    }
    if ips.len() == 2 {
        let v6 = |ip: &str| ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6());
        if v6(ips[0]) == v6(ips[1]) {
            errs.push(FieldError::invalid(
                &ips_path,
                ips_value,
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(service) {
        for (i, (ip, family)) in ips.iter().zip(families.iter()).enumerate() {
            let is_v6 = ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6());
            let wanted = match (*family, is_v6) {
                ("IPv4", true) => "IPv4",
                ("IPv6", false) => "IPv6",
                _ => continue,
            };
            errs.push(FieldError::invalid(
                &ips_path.index(i),
                *ip,
                format!("expected an {wanted} value as indicated by `ipFamilies[{i}]`"),
            ));
        }
    }
    errs
}

/// An external IP: a valid IP that is not unspecified, loopback, link-local or link-local
/// multicast (upstream's IsValidIP and ValidateNonSpecialIP).
fn validate_external_ip(ip: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Ok(parsed) = ip.parse::<IpAddr>() else {
        errs.push(FieldError::invalid(path, ip, INVALID_IP));
        return errs;
    };
    let special = match parsed {
        _ if parsed.is_unspecified() => Some("may not be unspecified (0.0.0.0, ::)"),
        _ if parsed.is_loopback() => {
            Some("may not be in the loopback range (127.0.0.0/8, ::1/128)")
        }
        IpAddr::V4(v4) if v4.is_link_local() => {
            Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        }
        IpAddr::V6(v6) if v6.is_unicast_link_local() => {
            Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        }
        IpAddr::V4(v4) if v4.octets()[..3] == [224, 0, 0] => {
            Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
        }
        IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xff00 && v6.segments()[0] & 0x000f == 2 => {
            Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
        }
        _ => None,
    };
    if let Some(msg) = special {
        errs.push(FieldError::invalid(path, ip, msg));
    }
    errs
}

/// NodePorts: none on ClusterIP services, no duplicate (protocol, nodePort).
fn validate_node_ports(service: &Value, spec_path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut seen = BTreeSet::new();
    for (i, port) in ports(&service["spec"]).iter().enumerate() {
        let node_port = port["nodePort"].as_i64().unwrap_or(0);
        let path = spec_path.child("ports").index(i).child("nodePort");
        if node_port == 0 {
            continue;
        }
        if service_type(service) == CLUSTER_IP {
            errs.push(FieldError::forbidden(
                &path,
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
        if !seen.insert((str_of(port, "protocol").to_string(), node_port)) {
            errs.push(FieldError::duplicate(&path, node_port));
        }
    }
    errs
}

/// No duplicate (protocol, port) pairs.
fn validate_duplicate_ports(spec: &Value, spec_path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut seen = BTreeSet::new();
    for (i, port) in ports(spec).iter().enumerate() {
        let protocol = str_of(port, "protocol").to_string();
        let number = port["port"].as_i64().unwrap_or(0);
        if !seen.insert((protocol.clone(), number)) {
            // Upstream prints the key, an internal ServicePort, as Go's JSON of its fields.
            let key = format!(
                r#"{{"Name":"","Protocol":{},"AppProtocol":null,"Port":{number},"TargetPort":0,"NodePort":0}}"#,
                Value::from(protocol)
            );
            errs.push(FieldError {
                error_type: ErrorType::Duplicate,
                field: spec_path.child("ports").index(i).to_string(),
                bad_value: Some(key),
                detail: String::new(),
            });
        }
    }
    errs
}

/// loadBalancerSourceRanges, allocateLoadBalancerNodePorts and loadBalancerClass only on
/// LoadBalancer services.
fn validate_load_balancer_fields(service: &Value, spec_path: &Path) -> FieldErrors {
    let spec = &service["spec"];
    let mut errs = FieldErrors::new();
    let is_lb = service_type(service) == LOAD_BALANCER;
    let only_lb = "may only be used when `type` is 'LoadBalancer'";
    let ranges = strings_of(spec, "loadBalancerSourceRanges");
    if !ranges.is_empty() {
        let path = spec_path.child("LoadBalancerSourceRanges");
        if !is_lb {
            errs.push(FieldError::forbidden(&path, only_lb));
        }
        for (i, range) in ranges.iter().enumerate() {
            let range = range.trim();
            if super::Cidr::parse(range).is_err() {
                errs.push(FieldError::invalid(
                    &path.index(i),
                    range,
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                ));
            }
        }
    }
    let allocate = spec
        .get("allocateLoadBalancerNodePorts")
        .filter(|v| !v.is_null());
    if allocate.is_some() && !is_lb {
        errs.push(FieldError::forbidden(
            &spec_path.child("allocateLoadBalancerNodePorts"),
            only_lb,
        ));
    }
    if is_lb && allocate.is_none() {
        errs.push(FieldError::required(
            &Path::root("allocateLoadBalancerNodePorts"),
            "",
        ));
    }
    if let Some(class) = spec.get("loadBalancerClass").and_then(Value::as_str) {
        let path = spec_path.child("loadBalancerClass");
        if is_lb {
            for msg in is_qualified_name(class) {
                errs.push(FieldError::invalid(&path, class, msg));
            }
        } else {
            errs.push(FieldError::forbidden(&path, only_lb));
        }
    }
    errs
}

/// externalTrafficPolicy, healthCheckNodePort, internalTrafficPolicy, trafficDistribution.
fn validate_traffic_policies(service: &Value, spec_path: &Path) -> FieldErrors {
    let spec = &service["spec"];
    let mut errs = FieldErrors::new();
    let external = str_of(spec, "externalTrafficPolicy");
    let external_path = spec_path.child("externalTrafficPolicy");
    if !externally_accessible(service) {
        if !external.is_empty() {
            errs.push(FieldError::invalid(
                &external_path,
                external,
                "may only be set for externally-accessible services",
            ));
        }
    } else if external.is_empty() {
        errs.push(FieldError::required(&external_path, ""));
    } else if !TRAFFIC_POLICIES.contains(&external) {
        errs.push(FieldError::not_supported(
            &external_path,
            external,
            TRAFFIC_POLICIES,
        ));
    }
    let health = spec["healthCheckNodePort"].as_i64().unwrap_or(0);
    let health_path = spec_path.child("healthCheckNodePort");
    if !needs_health_check(service) {
        if health != 0 {
            errs.push(FieldError::invalid(
                &health_path,
                health,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if health == 0 {
        errs.push(FieldError::required(&health_path, ""));
    } else if !(1..=65535).contains(&health) {
        errs.push(FieldError::invalid(&health_path, health, PORT_RANGE));
    }
    let internal_path = spec_path.child("internalTrafficPolicy");
    match spec.get("internalTrafficPolicy").and_then(Value::as_str) {
        None if matches!(
            service_type(service),
            NODE_PORT | LOAD_BALANCER | CLUSTER_IP
        ) =>
        {
            errs.push(FieldError::required(&internal_path, ""));
        }
        Some(policy) if !TRAFFIC_POLICIES.contains(&policy) => {
            errs.push(FieldError::not_supported(
                &internal_path,
                policy,
                TRAFFIC_POLICIES,
            ));
        }
        _ => {}
    }
    if let Some(distribution) = spec.get("trafficDistribution").and_then(Value::as_str) {
        const DISTRIBUTIONS: [&str; 3] = ["PreferClose", "PreferSameNode", "PreferSameZone"];
        if !DISTRIBUTIONS.contains(&distribution) {
            let path = spec_path.child("trafficDistribution");
            errs.push(FieldError::not_supported(
                &path,
                distribution,
                DISTRIBUTIONS,
            ));
        }
    }
    errs
}

/// Upstream's validateUpgradeDowngradeClusterIPs: a set clusterIP never changes.
pub(super) fn validate_cluster_ips_update(old: &Value, new: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !needs_cluster_ip(old) || !needs_cluster_ip(new) || (is_headless(old) && is_headless(new)) {
        return errs;
    }
    let old_ips = strings_of(&old["spec"], "clusterIPs");
    let new_ips = strings_of(&new["spec"], "clusterIPs");
    let value = new["spec"]
        .get("clusterIPs")
        .cloned()
        .unwrap_or(Value::Null);
    let path = Path::root("spec").child("clusterIPs");
    let changed = "may not change once set";
    if old_ips.len() == new_ips.len() {
        for (i, ip) in old_ips.iter().enumerate() {
            if *ip != new_ips[i] {
                errs.push(FieldError::invalid(&path.index(i), value.clone(), changed));
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.push(FieldError::invalid(
                &path.index(0),
                value.clone(),
                "primary clusterIP can not be unset",
            ));
        } else if new_ips[0] != old_ips[0] {
            errs.push(FieldError::invalid(&path.index(0), value.clone(), changed));
        }
        if new_ips.len() == 1 && str_of(&new["spec"], "ipFamilyPolicy") != "SingleStack" {
            errs.push(FieldError::invalid(
                &Path::root("spec").child("ipFamilyPolicy"),
                new["spec"]
                    .get("ipFamilyPolicy")
                    .cloned()
                    .unwrap_or(Value::Null),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        errs.push(FieldError::invalid(&path.index(0), value, changed));
    }
    errs
}

/// Upstream's validateUpgradeDowngradeIPFamilies: the primary family never changes.
pub(super) fn validate_ip_families_update(old: &Value, new: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !needs_cluster_ip(old) || !needs_cluster_ip(new) || is_headless(old) || is_headless(new) {
        return errs;
    }
    let old_families = strings_of(&old["spec"], "ipFamilies");
    let new_families = strings_of(&new["spec"], "ipFamilies");
    let path = Path::root("spec").child("ipFamilies").index(0);
    let value = new["spec"]
        .get("ipFamilies")
        .cloned()
        .unwrap_or(Value::Null);
    if old_families.len() == new_families.len() {
        for (i, family) in old_families.iter().enumerate() {
            if *family != new_families[i] {
                errs.push(FieldError::invalid(
                    &path,
                    value.clone(),
                    "may not change once set",
                ));
            }
        }
    }
    errs
}

/// A LoadBalancer's loadBalancerClass never changes.
pub(super) fn validate_load_balancer_class_update(old: &Value, new: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if service_type(old) == LOAD_BALANCER
        && service_type(new) == LOAD_BALANCER
        && old["spec"].get("loadBalancerClass") != new["spec"].get("loadBalancerClass")
    {
        errs.push(FieldError::invalid(
            &Path::root("spec").child("loadBalancerClass"),
            new["spec"]
                .get("loadBalancerClass")
                .cloned()
                .unwrap_or(Value::Null),
            "may not change once set",
        ));
    }
    errs
}

/// The load balancer status a status update writes: ingress IPs are IPs, hostnames DNS
/// subdomains (upstream's ValidateLoadBalancerStatus).
pub(super) fn validate_load_balancer_status(service: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let ingress = service["status"]["loadBalancer"]["ingress"].as_array();
    let path = Path::root("status").child("loadBalancer").child("ingress");
    for (i, entry) in ingress.into_iter().flatten().enumerate() {
        let ip = str_of(entry, "ip");
        if !ip.is_empty() && ip.parse::<IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                &path.index(i).child("ip"),
                ip,
                INVALID_IP,
            ));
        }
        let hostname = str_of(entry, "hostname");
        let host_path = path.index(i).child("hostname");
        for msg in if hostname.is_empty() {
            Vec::new()
        } else {
            is_dns1123_subdomain(hostname)
        } {
            errs.push(FieldError::invalid(&host_path, hostname, msg));
        }
        if hostname.parse::<IpAddr>().is_ok() {
            errs.push(FieldError::invalid(
                &host_path,
                hostname,
                "must be a DNS name, not an IP address",
            ));
        }
    }
    errs
}
