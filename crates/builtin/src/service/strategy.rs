//! core/v1 Service: defaulting (pkg/apis/core/v1/defaults.go), the strategy's preparation
//! of creates and updates (pkg/registry/core/service/strategy.go), validation with
//! upstream's messages (pkg/apis/core/validation ValidateService*), the printer columns and
//! the `spec.clusterIP` and `spec.type` field selectors.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_port_name,
    name_is_dns1035_label, validate_labels,
};
use kapi_server::resource::{
    NameValidator, PrinterColumn, Strategy, SubresourceKind, TableConvertor,
};
use serde_json::{Map, Value, json};

use crate::hooks::TypeHooks;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{child_mut, str_of, strings_of};

pub(super) const CLUSTER_IP: &str = "ClusterIP";
pub(super) const NODE_PORT: &str = "NodePort";
pub(super) const LOAD_BALANCER: &str = "LoadBalancer";
pub(super) const EXTERNAL_NAME: &str = "ExternalName";
/// The clusterIP of a headless service.
pub(super) const NONE: &str = "None";
/// The longest ClientIP session affinity upstream accepts, in seconds.
const MAX_CLIENT_IP_AFFINITY_SECONDS: i64 = 86400;
/// The default ClientIP session affinity timeout (3 hours).
const DEFAULT_CLIENT_IP_AFFINITY_SECONDS: i64 = 10800;
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

const TYPE_DESCRIPTION: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
const CLUSTER_IP_DESCRIPTION: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const EXTERNAL_IPS_DESCRIPTION: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
const PORTS_DESCRIPTION: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const SELECTOR_DESCRIPTION: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";

/// The strategy and printer of Services.
pub(super) fn hooks() -> TypeHooks {
    TypeHooks {
        strategy: Arc::new(ServiceStrategy),
        table: Some(TableConvertor {
            columns: columns(),
            cells: std::sync::Arc::new(cells),
        }),
    }
}

fn columns() -> Vec<PrinterColumn> {
    vec![
        name_column(0),
        column("Type", TYPE_DESCRIPTION, 0),
        column("Cluster-IP", CLUSTER_IP_DESCRIPTION, 0),
        column("External-IP", EXTERNAL_IPS_DESCRIPTION, 0),
        column("Port(s)", PORTS_DESCRIPTION, 0),
        age_column(),
        column("Selector", SELECTOR_DESCRIPTION, 1),
    ]
}

/// NAME, TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE, SELECTOR (upstream's printService,
/// wide as server-side tables are).
fn cells(service: &Value) -> Vec<Value> {
    let spec = &service["spec"];
    let cluster_ip = strings_of(spec, "clusterIPs")
        .first()
        .map_or("<none>", |ip| ip)
        .to_string();
    let mut ports = port_string(spec);
    if ports.is_empty() {
        ports = "<none>".into();
    }
    vec![
        name_cell(service),
        Value::from(str_of(spec, "type")),
        Value::from(cluster_ip),
        Value::from(external_ip(service)),
        Value::from(ports),
        age_cell(service),
        Value::from(format_labels(spec.get("selector"))),
    ]
}

/// `port/protocol` or `port:nodePort/protocol`, comma separated.
fn port_string(spec: &Value) -> String {
    ports(spec)
        .iter()
        .map(|port| {
            let number = port["port"].as_i64().unwrap_or(0);
            let protocol = str_of(port, "protocol");
            match port["nodePort"].as_i64().unwrap_or(0) {
                0 => format!("{number}/{protocol}"),
                node_port => format!("{number}:{node_port}/{protocol}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The EXTERNAL-IP cell: external IPs, load balancer ingress or `<pending>`, the external
/// name.
fn external_ip(service: &Value) -> String {
    let spec = &service["spec"];
    let external_ips = strings_of(spec, "externalIPs");
    match str_of(spec, "type") {
        CLUSTER_IP | NODE_PORT if !external_ips.is_empty() => external_ips.join(","),
        CLUSTER_IP | NODE_PORT => "<none>".into(),
        LOAD_BALANCER => {
            let ingress: BTreeSet<&str> = service["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    [str_of(i, "ip"), str_of(i, "hostname")]
                        .into_iter()
                        .find(|s| !s.is_empty())
                })
                .collect();
            let mut all: Vec<&str> = ingress.into_iter().collect();
            all.extend(external_ips);
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        EXTERNAL_NAME => str_of(spec, "externalName").into(),
        _ => "<unknown>".into(),
    }
}

/// A label map as `k=v,k2=v2` (sorted), `<none>` when empty (labels.FormatLabels).
pub(super) fn format_labels(labels: Option<&Value>) -> String {
    let Some(labels) = labels.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let sorted: BTreeMap<&String, &str> = labels
        .iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
        .collect();
    sorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The strategy of Services.
pub(super) struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    /// SetDefaults_Service where upstream's decoder runs it (again in prepare, for the
    /// server's own writes).
    fn default(&self, service: &mut Value) {
        set_defaults(service);
    }

    /// Defaults, an empty status, and `clusterIPs` initialized from `clusterIP`.
    fn prepare_for_create(&self, service: &mut Value) {
        set_defaults(service);
        service["status"] = json!({ "loadBalancer": {} });
        let spec = child_mut(service, "spec");
        let cluster_ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
        if !cluster_ip.is_empty() && !spec.contains_key("clusterIPs") {
            let ips = json!([cluster_ip]);
            spec.insert("clusterIPs".into(), ips);
        }
    }

    /// Keeps the status, fills allocated values the update left out, keeps `clusterIP` and
    /// `clusterIPs` in step and wipes fields the new type does not use.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        set_defaults(new);
        new["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
        patch_allocated_values(new, old);
        normalize_cluster_ips(new, old);
        drop_type_dependent_fields(new, old);
    }

    fn name_validator(&self) -> NameValidator {
        name_is_dns1035_label
    }

    fn validate(&self, service: &Value) -> FieldErrors {
        validate_service(service)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = validate_cluster_ips_update(old, new);
        errs.extend(validate_ip_families_update(old, new));
        errs.extend(validate_load_balancer_class_update(old, new));
        if needs_health_check(old)
            && needs_health_check(new)
            && new["spec"]["healthCheckNodePort"] != old["spec"]["healthCheckNodePort"]
        {
            let path = Path::root("spec").child("healthCheckNodePort");
            errs.push(FieldError::forbidden(&path, "field is immutable"));
        }
        errs.extend(validate_service(new));
        errs
    }

    fn validate_subresource_update(
        &self,
        _subresource: &SubresourceKind,
        new: &Value,
        _old: &Value,
    ) -> FieldErrors {
        validate_load_balancer_status(new)
    }

    fn selectable_fields(&self, service: &Value) -> Vec<(&'static str, String)> {
        let spec = &service["spec"];
        vec![
            ("spec.clusterIP", str_of(spec, "clusterIP").to_string()),
            ("spec.type", str_of(spec, "type").to_string()),
        ]
    }

    fn supports_field(&self, field: &str) -> bool {
        matches!(field, "spec.clusterIP" | "spec.type")
    }
}

/// The ports of a service spec.
pub(super) fn ports(spec: &Value) -> &[Value] {
    spec.get("ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn service_type(service: &Value) -> &str {
    str_of(&service["spec"], "type")
}

/// Whether the service has a cluster IP to allocate (every type but ExternalName).
pub(super) fn needs_cluster_ip(service: &Value) -> bool {
    service_type(service) != EXTERNAL_NAME
}

/// Whether the service's ports have NodePorts.
pub(super) fn needs_node_port(service: &Value) -> bool {
    matches!(service_type(service), NODE_PORT | LOAD_BALANCER)
}

/// Whether a LoadBalancer service keeps traffic local and so needs a health check port.
pub(super) fn needs_health_check(service: &Value) -> bool {
    service_type(service) == LOAD_BALANCER
        && str_of(&service["spec"], "externalTrafficPolicy") == "Local"
}

/// Whether the service is reachable from outside the cluster (apiservice.ExternallyAccessible).
fn externally_accessible(service: &Value) -> bool {
    match service_type(service) {
        LOAD_BALANCER | NODE_PORT => true,
        CLUSTER_IP => !strings_of(&service["spec"], "externalIPs").is_empty(),
        _ => false,
    }
}

/// Whether the service is headless (`clusterIPs` is exactly `["None"]`).
pub(super) fn is_headless(service: &Value) -> bool {
    strings_of(&service["spec"], "clusterIPs") == [NONE]
}

/// Upstream's SetDefaults_Service, plus the omitempty normalization a typed decode does.
pub(super) fn set_defaults(service: &mut Value) {
    let spec = child_mut(service, "spec");
    spec.retain(|_, value| !value.is_null());
    for key in [
        "clusterIPs",
        "ipFamilies",
        "externalIPs",
        "selector",
        "ports",
    ] {
        let empty = match spec.get(key) {
            Some(Value::Array(list)) => list.is_empty(),
            Some(Value::Object(map)) => map.is_empty(),
            _ => false,
        };
        if empty {
            spec.remove(key);
        }
    }
    default_str(spec, "sessionAffinity", "None");
    if spec["sessionAffinity"] == "None" {
        spec.remove("sessionAffinityConfig");
    }
    if spec["sessionAffinity"] == "ClientIP"
        && spec
            .get("sessionAffinityConfig")
            .and_then(|c| c.get("clientIP"))
            .and_then(|c| c.get("timeoutSeconds"))
            .is_none_or(Value::is_null)
    {
        let config =
            json!({ "clientIP": { "timeoutSeconds": DEFAULT_CLIENT_IP_AFFINITY_SECONDS } });
        spec.insert("sessionAffinityConfig".into(), config);
    }
    default_str(spec, "type", CLUSTER_IP);
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        ports.iter_mut().for_each(default_port);
    }
    let kind = spec["type"].as_str().unwrap_or("").to_string();
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|l| !l.is_empty());
    let accessible = matches!(kind.as_str(), LOAD_BALANCER | NODE_PORT)
        || (kind == CLUSTER_IP && has_external_ips);
    if accessible {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(kind.as_str(), NODE_PORT | LOAD_BALANCER | CLUSTER_IP) {
        default_str(spec, "internalTrafficPolicy", "Cluster");
    }
    if kind == LOAD_BALANCER && !spec.contains_key("allocateLoadBalancerNodePorts") {
        spec.insert("allocateLoadBalancerNodePorts".into(), Value::Bool(true));
    }
}

/// Sets a string field when it is absent or empty.
fn default_str(fields: &mut Map<String, Value>, key: &str, value: &str) {
    if fields
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        fields.insert(key.into(), Value::from(value));
    }
}

/// Protocol TCP and targetPort = port when unset.
fn default_port(port: &mut Value) {
    let Some(fields) = port.as_object_mut() else {
        return;
    };
    fields.retain(|_, value| !value.is_null());
    default_str(fields, "protocol", "TCP");
    let unset = match fields.get("targetPort") {
        None => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if unset {
        let number = fields.get("port").cloned().unwrap_or(Value::from(0));
        fields.insert("targetPort".into(), number);
    }
}

/// Fills the allocated values (clusterIP(s), NodePorts by port name, the health check port)
/// an update left out, when both versions need them (upstream's patchAllocatedValues).
fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        let spec = child_mut(new, "spec");
        if spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
            && let Some(ip) = old["spec"]
                .get("clusterIP")
                .filter(|ip| ip.as_str() != Some(""))
        {
            spec.insert("clusterIP".into(), ip.clone());
        }
        if !spec.contains_key("clusterIPs")
            && let Some(ips) = old["spec"].get("clusterIPs")
        {
            spec.insert("clusterIPs".into(), ips.clone());
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let node_ports = |service: &Value| -> BTreeSet<i64> {
            ports(&service["spec"])
                .iter()
                .filter_map(|p| p["nodePort"].as_i64())
                .collect()
        };
        let used: BTreeSet<i64> = node_ports(old)
            .intersection(&node_ports(new))
            .copied()
            .collect();
        let by_name: BTreeMap<&str, i64> = ports(&old["spec"])
            .iter()
            .map(|p| (str_of(p, "name"), p["nodePort"].as_i64().unwrap_or(0)))
            .collect();
        if let Some(Value::Array(new_ports)) = child_mut(new, "spec").get_mut("ports") {
            for port in new_ports.iter_mut() {
                let old_port = by_name.get(str_of(port, "name")).copied().unwrap_or(0);
                if port["nodePort"].as_i64().unwrap_or(0) == 0
                    && old_port != 0
                    && !used.contains(&old_port)
                {
                    port["nodePort"] = Value::from(old_port);
                }
            }
        }
    }
    if needs_health_check(old) && needs_health_check(new) {
        let spec = child_mut(new, "spec");
        if spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
            && let Some(port) = old["spec"].get("healthCheckNodePort")
        {
            spec.insert("healthCheckNodePort".into(), port.clone());
        }
    }
}

/// Keeps `clusterIPs` in step with a changed `clusterIP` when only the singular field was
/// touched (upstream's NormalizeClusterIPs for updates).
fn normalize_cluster_ips(new: &mut Value, old: &Value) {
    let old_ip = str_of(&old["spec"], "clusterIP");
    let same_ips = old["spec"].get("clusterIPs") == new["spec"].get("clusterIPs");
    let spec = child_mut(new, "spec");
    let new_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if old_ip != new_ip && same_ips {
        if new_ip.is_empty() {
            spec.remove("clusterIPs");
        } else {
            spec.insert("clusterIPs".into(), json!([new_ip]));
        }
    } else if !new_ip.is_empty() && !spec.contains_key("clusterIPs") {
        spec.insert("clusterIPs".into(), json!([new_ip]));
    }
}

/// Wipes the fields a type change leaves without use, when the update did not change them
/// (upstream's dropTypeDependentFields).
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let unchanged = |new: &Value, key: &str| new["spec"].get(key) == old["spec"].get(key);
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        let same_ips = unchanged(new, "clusterIP") && unchanged(new, "clusterIPs");
        let same_families = unchanged(new, "ipFamilies");
        let same_policy = unchanged(new, "ipFamilyPolicy");
        let spec = child_mut(new, "spec");
        if same_ips {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        if same_families {
            spec.remove("ipFamilies");
        }
        if same_policy {
            spec.remove("ipFamilyPolicy");
        }
    }
    if needs_node_port(old) && !needs_node_port(new) {
        let node_ports = |service: &Value| -> Vec<Value> {
            ports(&service["spec"])
                .iter()
                .map(|p| p["nodePort"].clone())
                .collect()
        };
        if node_ports(old) == node_ports(new)
            && let Some(Value::Array(list)) = child_mut(new, "spec").get_mut("ports")
        {
            list.iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(|port| drop(port.remove("nodePort")));
        }
    }
    if needs_health_check(old) && !needs_health_check(new) && unchanged(new, "healthCheckNodePort")
    {
        child_mut(new, "spec").remove("healthCheckNodePort");
    }
    if service_type(new) != LOAD_BALANCER {
        for key in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if unchanged(new, key) {
                child_mut(new, "spec").remove(key);
            }
        }
    }
    if !externally_accessible(new) && unchanged(new, "externalTrafficPolicy") {
        child_mut(new, "spec").remove("externalTrafficPolicy");
    }
}

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
fn validate_cluster_ips_update(old: &Value, new: &Value) -> FieldErrors {
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
fn validate_ip_families_update(old: &Value, new: &Value) -> FieldErrors {
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
fn validate_load_balancer_class_update(old: &Value, new: &Value) -> FieldErrors {
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
fn validate_load_balancer_status(service: &Value) -> FieldErrors {
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
