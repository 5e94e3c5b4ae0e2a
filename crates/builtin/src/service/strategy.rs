//! core/v1 Service: defaulting (pkg/apis/core/v1/defaults.go), the strategy's preparation
//! of creates and updates (pkg/registry/core/service/strategy.go), the printer columns and
//! the `spec.clusterIP` and `spec.type` field selectors; the validation is
//! [`super::validation`]'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::name_is_dns1035_label;
use kapi_server::resource::Name;
use kapi_server::resource::{
    NameValidator, PrinterColumn, Strategy, SubresourceKind, TableConvertor,
};
use serde_json::{Map, Value, json};

use super::validation::{
    validate_cluster_ips_update, validate_ip_families_update, validate_load_balancer_class_update,
    validate_load_balancer_status, validate_service,
};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{child_mut, str_of, strings_of};

pub(super) const CLUSTER_IP: &str = "ClusterIP";
pub(super) const NODE_PORT: &str = "NodePort";
pub(super) const LOAD_BALANCER: &str = "LoadBalancer";
pub(super) const EXTERNAL_NAME: &str = "ExternalName";
/// The clusterIP of a headless service.
pub(super) const NONE: &str = "None";
/// The default ClientIP session affinity timeout (3 hours).
const DEFAULT_CLIENT_IP_AFFINITY_SECONDS: i64 = 10800;

const TYPE_DESCRIPTION: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
const CLUSTER_IP_DESCRIPTION: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const EXTERNAL_IPS_DESCRIPTION: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
const PORTS_DESCRIPTION: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const SELECTOR_DESCRIPTION: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";

/// The strategy and printer of Services.
pub(super) fn strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(ServiceStrategy),
        table: Some(TableConvertor {
            order: None,
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

    fn selectable_fields(&self, service: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        let spec = &service["spec"];
        vec![
            (
                "spec.clusterIP".into(),
                str_of(spec, "clusterIP").to_string(),
            ),
            ("spec.type".into(), str_of(spec, "type").to_string()),
        ]
    }

    fn supports_field(&self, field: &str) -> bool {
        matches!(field, "spec.clusterIP" | "spec.type")
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("spec")])
    }
}

/// The ports of a service spec.
pub(super) fn ports(spec: &Value) -> &[Value] {
    spec.get("ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(super) fn service_type(service: &Value) -> &str {
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
pub(super) fn externally_accessible(service: &Value) -> bool {
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
