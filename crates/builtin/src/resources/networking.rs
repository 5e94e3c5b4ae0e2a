//! networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy
//! (kubernetes/pkg/apis/networking/v1/defaults.go, pkg/apis/networking/validation,
//! pkg/registry/networking/*/strategy.go).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_port_name, validate_label_selector,
};
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{
    age, col, default_field, each_item, enum_field, format_selector, invalid_each, items,
    object_at, table, text, text_at,
};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{
    reset_for_create, start_generation, track_generation, validate_core, validate_core_update,
};
use crate::util::{str_of, validate_immutable};

/// The strategies of the networking kinds of this module.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "Ingress" => (Arc::new(IngressStrategy), ingress_table()),
        "IngressClass" => (Arc::new(IngressClassStrategy), ingress_class_table()),
        "NetworkPolicy" => (Arc::new(NetworkPolicyStrategy), network_policy_table()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// ingressStrategy (pkg/registry/networking/ingress/strategy.go).
struct IngressStrategy;

impl Strategy for IngressStrategy {
    fn prepare_for_create(&self, ingress: &mut Value) {
        reset_for_create(ingress, json!({"loadBalancer": {}}));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        track_generation(new, old);
    }

    fn validate(&self, ingress: &Value) -> FieldErrors {
        validate_core(ingress, validate_ingress(ingress))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// ingressClassStrategy (pkg/registry/networking/ingressclass/strategy.go).
struct IngressClassStrategy;

impl Strategy for IngressClassStrategy {
    fn default(&self, class: &mut Value) {
        ingress_class_defaults(class);
    }

    fn prepare_for_create(&self, class: &mut Value) {
        ingress_class_defaults(class);
        start_generation(class);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        ingress_class_defaults(new);
        track_generation(new, old);
    }

    fn validate(&self, class: &Value) -> FieldErrors {
        validate_core(class, validate_ingress_class(class))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_ingress_class_update(new, old))
    }
}

/// networkPolicyStrategy (pkg/registry/networking/networkpolicy/strategy.go).
struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    fn default(&self, policy: &mut Value) {
        network_policy_defaults(policy);
    }

    fn prepare_for_create(&self, policy: &mut Value) {
        network_policy_defaults(policy);
        start_generation(policy);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        network_policy_defaults(new);
        track_generation(new, old);
    }

    fn validate(&self, policy: &Value) -> FieldErrors {
        validate_core(policy, validate_network_policy(policy))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];
const WILDCARD_DNS1123_SUBDOMAIN_ERROR: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const PORT_RANGE_ERROR: &str = "must be between 1 and 65535, inclusive";

// ---- Ingress ----

/// ValidateIngressSpec.
fn validate_ingress(ingress: &Value) -> FieldErrors {
    let spec = &ingress["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let rules = items(spec, "/rules");
    let backend = &spec["defaultBackend"];
    if rules.is_empty() && backend.is_null() {
        let rendered = if spec["rules"].is_array() {
            "[]"
        } else {
            "null"
        };
        errs.push(FieldError::invalid_rendered(
            &path,
            rendered.to_string(),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if !backend.is_null() {
        errs.extend(validate_backend(backend, &path.child("defaultBackend")));
    }
    for (i, rule) in rules.iter().enumerate() {
        errs.extend(validate_rule(rule, &path.child("rules").index(i)));
    }
    for (i, tls) in items(spec, "/tls").iter().enumerate() {
        for (j, host) in items(tls, "/hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or("");
            let host_path = path.child("tls").index(i).child("hosts").index(j);
            errs.extend(validate_host(host, &host_path));
        }
    }
    if let Some(class) = spec["ingressClassName"].as_str() {
        errs.extend(invalid_each(
            &path.child("ingressClassName"),
            class,
            is_dns1123_subdomain(class),
        ));
    }
    errs
}

/// A host: a DNS subdomain, or a wildcard one when it has a `*`.
fn validate_host(host: &str, path: &Path) -> FieldErrors {
    if host.contains('*') {
        let valid = host
            .strip_prefix("*.")
            .is_some_and(|rest| is_dns1123_subdomain(rest).is_empty());
        if valid {
            FieldErrors::new()
        } else {
            invalid_each(
                path,
                host,
                vec![WILDCARD_DNS1123_SUBDOMAIN_ERROR.to_string()],
            )
        }
    } else {
        invalid_each(path, host, is_dns1123_subdomain(host))
    }
}

/// validateIngressRules for one rule: its host and HTTP paths.
fn validate_rule(rule: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let host = str_of(rule, "host");
    if !host.is_empty() {
        if host.parse::<std::net::IpAddr>().is_ok() {
            errs.push(FieldError::invalid(
                &path.child("host"),
                host,
                "must be a DNS name, not an IP address",
            ));
        }
        errs.extend(validate_host(host, &path.child("host")));
    }
    if rule["http"].is_object() {
        let http = path.child("http");
        let paths = items(rule, "/http/paths");
        if paths.is_empty() {
            errs.push(FieldError::required(&http.child("paths"), ""));
        }
        for (i, entry) in paths.iter().enumerate() {
            errs.extend(validate_http_path(entry, &http.child("paths").index(i)));
        }
    }
    errs
}

/// validateHTTPIngressPath: a path type, an absolute clean path, a backend.
fn validate_http_path(entry: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(path_type) = entry["pathType"].as_str() else {
        errs.push(FieldError::required(
            &path.child("pathType"),
            "pathType must be specified",
        ));
        return errs;
    };
    let value = str_of(entry, "path");
    let value_path = path.child("path");
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(FieldError::invalid(
                    &value_path,
                    value,
                    "must be an absolute path",
                ));
            }
            for sequence in INVALID_PATH_SEQUENCES
                .iter()
                .filter(|s| value.contains(**s))
            {
                let msg = format!("must not contain '{sequence}'");
                errs.push(FieldError::invalid(&value_path, value, msg));
            }
            for suffix in INVALID_PATH_SUFFIXES
                .iter()
                .filter(|s| value.ends_with(**s))
            {
                let msg = format!("cannot end with '{suffix}'");
                errs.push(FieldError::invalid(&value_path, value, msg));
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(FieldError::invalid(
                    &value_path,
                    value,
                    "must be an absolute path",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("pathType"),
            other,
            PATH_TYPES,
        )),
    }
    errs.extend(validate_backend(&entry["backend"], &path.child("backend")));
    errs
}

/// validateIngressBackend: exactly one of a resource or a service with a name and a port.
fn validate_backend(backend: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let resource = &backend["resource"];
    let service = &backend["service"];
    match (resource.is_null(), service.is_null()) {
        (false, false) => errs.push(FieldError::invalid(
            path,
            "",
            "cannot set both resource and service backends",
        )),
        (false, true) => {
            let resource_path = path.child("resource");
            super::common::require_str(resource, "kind", &resource_path, &mut errs);
            super::common::require_str(resource, "name", &resource_path, &mut errs);
        }
        (true, false) => errs.extend(validate_service_backend(service, path)),
        (true, true) => errs.push(FieldError::invalid(
            path,
            "",
            "resource or service backend is required",
        )),
    }
    errs
}

/// The service of a backend: a DNS-1035 name and a port name or number.
fn validate_service_backend(service: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let service_path = path.child("service");
    let name = str_of(service, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&service_path.child("name"), ""));
    } else {
        errs.extend(invalid_each(
            &service_path.child("name"),
            name,
            is_dns1035_label(name),
        ));
    }
    let port_name = text_at(service, "/port/name");
    let port_number = service
        .pointer("/port/number")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let port_path = service_path.child("port");
    match (port_name.is_empty(), port_number == 0) {
        (false, false) => errs.push(FieldError::invalid(
            path,
            "",
            "cannot set both port name & port number",
        )),
        (false, true) => errs.extend(invalid_each(
            &port_path.child("name"),
            port_name,
            is_valid_port_name(port_name),
        )),
        (true, false) => {
            if !(1..=65535).contains(&port_number) {
                errs.push(FieldError::invalid(
                    &port_path.child("number"),
                    port_number,
                    PORT_RANGE_ERROR,
                ));
            }
        }
        (true, true) => errs.push(FieldError::required(
            path,
            "port name or number is required",
        )),
    }
    errs
}

fn ingress_table() -> TableConvertor {
    table(
        vec![
            col(
                "Class",
                "The name of the IngressClass resource that should be used for additional configuration",
            ),
            col(
                "Hosts",
                "Hosts that incoming requests are matched against before the ingress rule",
            ),
            col(
                "Address",
                "Address is a list containing ingress points for the load-balancer",
            ),
            col("Ports", "Ports of TLS configurations that open"),
            age(),
        ],
        ingress_cells,
    )
}

/// NAME, CLASS, HOSTS (at most three), ADDRESS, PORTS, AGE.
fn ingress_cells(ingress: &Value) -> Vec<Value> {
    let class = ingress["spec"]["ingressClassName"]
        .as_str()
        .unwrap_or("<none>");
    let rules = items(ingress, "/spec/rules");
    let hosts: Vec<&str> = rules
        .iter()
        .take(3)
        .map(|rule| str_of(rule, "host"))
        .filter(|host| !host.is_empty())
        .collect();
    let mut hosts_cell = if hosts.is_empty() {
        "*".to_string()
    } else {
        hosts.join(",")
    };
    if rules.len() > 3 && !hosts.is_empty() {
        hosts_cell = format!("{hosts_cell} + {} more...", rules.len() - 3);
    }
    let ports = if items(ingress, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name_cell(ingress),
        text(class),
        text(hosts_cell),
        text(load_balancer_addresses(ingress)),
        text(ports),
        age_cell(ingress),
    ]
}

/// The sorted, distinct IPs (or else hostnames) of the load balancer, cut at 16 characters.
fn load_balancer_addresses(ingress: &Value) -> String {
    let mut addresses: Vec<&str> = items(ingress, "/status/loadBalancer/ingress")
        .iter()
        .map(|entry| match str_of(entry, "ip") {
            "" => str_of(entry, "hostname"),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    addresses.sort();
    addresses.dedup();
    let joined = addresses.join(",");
    if joined.len() > 16 {
        let kept: String = joined.chars().take(13).collect();
        format!("{kept}...")
    } else {
        joined
    }
}

// ---- IngressClass ----

/// SetDefaults_IngressClass: parameters are cluster-scoped unless said otherwise.
fn ingress_class_defaults(class: &mut Value) {
    if class["spec"]["parameters"].is_object() {
        default_field(
            object_at(class, "/spec/parameters"),
            "scope",
            json!("Cluster"),
        );
    }
}

/// ValidateIngressClassSpec: a domain-prefixed controller of at most 250 characters and
/// parameters that name their kind and object.
fn validate_ingress_class(class: &Value) -> FieldErrors {
    let path = Path::root("spec");
    let controller_path = path.child("controller");
    let controller = text_at(class, "/spec/controller");
    let mut errs = FieldErrors::new();
    if controller.len() > 250 {
        errs.push(FieldError::too_long(&controller_path, 250));
    }
    match controller.split_once('/') {
        Some((host, rest)) if !host.is_empty() && !rest.is_empty() => {
            errs.extend(invalid_each(
                &controller_path,
                host,
                is_dns1123_subdomain(host),
            ));
        }
        _ => errs.push(FieldError::invalid(
            &controller_path,
            controller,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )),
    }
    let parameters = &class["spec"]["parameters"];
    if parameters.is_object() {
        let parameters_path = path.child("parameters");
        super::common::require_str(parameters, "kind", &parameters_path, &mut errs);
        super::common::require_str(parameters, "name", &parameters_path, &mut errs);
        enum_field(
            parameters,
            "scope",
            &["Cluster", "Namespace"],
            false,
            &parameters_path,
            &mut errs,
        );
        let scope = str_of(parameters, "scope");
        let namespace = str_of(parameters, "namespace");
        if scope == "Namespace" && namespace.is_empty() {
            errs.push(FieldError::required(
                &parameters_path.child("namespace"),
                "`parameters.scope` is set to 'Namespace'",
            ));
        }
        if scope == "Cluster" && !namespace.is_empty() {
            errs.push(FieldError::forbidden(
                &parameters_path.child("namespace"),
                "`parameters.scope` is set to 'Cluster'",
            ));
        }
    }
    errs
}

/// ValidateIngressClassUpdate: the controller is immutable.
fn validate_ingress_class_update(new: &Value, old: &Value) -> FieldErrors {
    validate_immutable(
        &new["spec"]["controller"],
        &old["spec"]["controller"],
        &Path::root("spec").child("controller"),
    )
}

fn ingress_class_table() -> TableConvertor {
    table(
        vec![
            col(
                "Controller",
                "Controller that is responsible for handling this class",
            ),
            col(
                "Parameters",
                "A reference to a resource with additional parameters",
            ),
            age(),
        ],
        |class| {
            let parameters = &class["spec"]["parameters"];
            let shown = if parameters.is_object() {
                let mut kind = str_of(parameters, "kind").to_string();
                if let Some(group) = parameters["apiGroup"].as_str() {
                    kind = format!("{kind}.{group}");
                }
                format!("{kind}/{}", str_of(parameters, "name"))
            } else {
                "<none>".to_string()
            };
            vec![
                name_cell(class),
                text(text_at(class, "/spec/controller")),
                text(shown),
                age_cell(class),
            ]
        },
    )
}

// ---- NetworkPolicy ----

/// SetDefaults_NetworkPolicy: ports are TCP; policy types are Ingress, plus Egress when
/// there are egress rules.
fn network_policy_defaults(policy: &mut Value) {
    let spec = object_at(policy, "/spec");
    for direction in ["ingress", "egress"] {
        each_item(spec, direction, |rule| {
            each_item(crate::util::fields_mut(rule), "ports", |port| {
                default_field(crate::util::fields_mut(port), "protocol", json!("TCP"));
            });
        });
    }
    let has_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_some_and(|types| !types.is_empty());
    if !has_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|rules| !rules.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// ValidateNetworkPolicySpec.
fn validate_network_policy(policy: &Value) -> FieldErrors {
    let spec = &policy["spec"];
    let path = Path::root("spec");
    let mut errs = validate_label_selector(&spec["podSelector"], &path.child("podSelector"));
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(spec, &format!("/{direction}")).iter().enumerate() {
            let rule_path = path.child(direction).index(i);
            for (j, port) in items(rule, "/ports").iter().enumerate() {
                errs.extend(validate_port(port, &rule_path.child("ports").index(j)));
            }
            for (j, peer) in items(rule, &format!("/{peers}")).iter().enumerate() {
                errs.extend(validate_peer(peer, &rule_path.child(peers).index(j)));
            }
        }
    }
    let types = items(spec, "/policyTypes");
    if types.len() > 2 {
        let rendered = Value::Array(types.to_vec()).to_string();
        errs.push(FieldError::invalid_rendered(
            &path.child("policyTypes"),
            rendered,
            "may not specify more than two policyTypes",
        ));
        return errs;
    }
    for (i, kind) in types.iter().enumerate() {
        let kind = kind.as_str().unwrap_or("");
        if !matches!(kind, "Ingress" | "Egress") {
            errs.push(FieldError::not_supported(
                &path.child("policyTypes").index(i),
                kind,
                ["Ingress", "Egress"],
            ));
        }
    }
    errs
}

/// ValidateNetworkPolicyPort: protocol, port number or name, end port.
fn validate_port(port: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(protocol) = port["protocol"].as_str()
        && !matches!(protocol, "TCP" | "UDP" | "SCTP")
    {
        errs.push(FieldError::not_supported(
            &path.child("protocol"),
            protocol,
            ["TCP", "UDP", "SCTP"],
        ));
    }
    let end_port = port["endPort"].as_i64();
    match &port["port"] {
        Value::Number(number) => {
            let number = number.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&number) {
                errs.push(FieldError::invalid(
                    &path.child("port"),
                    number,
                    PORT_RANGE_ERROR,
                ));
            }
            if let Some(end) = end_port {
                if end < number {
                    errs.push(FieldError::invalid(
                        &path.child("endPort"),
                        number,
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&end) {
                    errs.push(FieldError::invalid(
                        &path.child("endPort"),
                        end,
                        PORT_RANGE_ERROR,
                    ));
                }
            }
        }
        Value::String(name) => {
            if let Some(end) = end_port {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            errs.extend(invalid_each(
                &path.child("port"),
                name,
                is_valid_port_name(name),
            ));
        }
        _ => {
            if let Some(end) = end_port {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    errs
}

/// ValidateNetworkPolicyPeer: one kind of peer, or selectors together; ipBlock alone.
fn validate_peer(peer: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if !peer[key].is_null() {
            peers += 1;
            errs.extend(validate_label_selector(&peer[key], &path.child(key)));
        }
    }
    let block = &peer["ipBlock"];
    if !block.is_null() {
        peers += 1;
        errs.extend(validate_ip_block(block, &path.child("ipBlock")));
    }
    if peers == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if peers > 1 && !block.is_null() {
        errs.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

/// A CIDR as `netutils.ParseCIDRSloppy` reads it: an address and a prefix length.
fn parse_cidr(cidr: &str) -> Option<(std::net::IpAddr, u8)> {
    let (address, prefix) = cidr.split_once('/')?;
    let address: std::net::IpAddr = address.parse().ok()?;
    let prefix: u8 = prefix.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    (prefix <= max).then_some((address, prefix))
}

/// ValidateIPBlock: a valid CIDR and `except` entries that are strict subsets of it.
fn validate_ip_block(block: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let cidr = str_of(block, "cidr");
    if cidr.is_empty() {
        errs.push(FieldError::required(&path.child("cidr"), ""));
        return errs;
    }
    const CIDR_ERROR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
    let Some((_, prefix)) = parse_cidr(cidr) else {
        errs.push(FieldError::invalid(&path.child("cidr"), cidr, CIDR_ERROR));
        return errs;
    };
    for (i, except) in items(block, "/except").iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let except_path = path.child("except").index(i);
        match parse_cidr(except) {
            None => errs.push(FieldError::invalid(&except_path, except, CIDR_ERROR)),
            Some((_, except_prefix)) if except_prefix <= prefix => errs.push(FieldError::invalid(
                &except_path,
                except,
                "must be a strict subset of `cidr`",
            )),
            Some(_) => {}
        }
    }
    errs
}

fn network_policy_table() -> TableConvertor {
    table(
        vec![
            col(
                "Pod-Selector",
                "podSelector selects the pods to which this NetworkPolicy object applies.",
            ),
            age(),
        ],
        |policy| {
            vec![
                name_cell(policy),
                text(format_selector(&policy["spec"]["podSelector"])),
                age_cell(policy),
            ]
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{Cases, causes, expect};
    use kapi_apimachinery::validation::FIELD_IMMUTABLE_ERROR_MSG as IMMUTABLE;

    fn strategy(kind: &str) -> Arc<dyn Strategy> {
        strategies(kind).unwrap().strategy
    }

    fn backend() -> Value {
        json!({"service": {"name": "web", "port": {"number": 80}}})
    }

    #[test]
    fn ingress_validation() {
        let cases: Cases = vec![
            (
                json!({"rules": [{"host": "a.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend()}]}}]}),
                vec![],
            ),
            (
                json!({}),
                vec![(
                    "spec",
                    "FieldValueInvalid",
                    "Invalid value: null: either `defaultBackend` or `rules` must be specified",
                )],
            ),
            (
                json!({"rules": [{"host": "10.0.0.1", "http": {"paths": [
                    {"path": "/a", "backend": backend()},
                    {"path": "a//b", "pathType": "Exact", "backend": {"service": {"name": "web"}}},
                    {"path": "/", "pathType": "Regex", "backend": {}},
                ]}}]}),
                vec![
                    (
                        "spec.rules[0].host",
                        "FieldValueInvalid",
                        r#"Invalid value: "10.0.0.1": must be a DNS name, not an IP address"#,
                    ),
                    (
                        "spec.rules[0].http.paths[0].pathType",
                        "FieldValueRequired",
                        "Required value: pathType must be specified",
                    ),
                    (
                        "spec.rules[0].http.paths[1].path",
                        "FieldValueInvalid",
                        r#"Invalid value: "a//b": must be an absolute path"#,
                    ),
                    (
                        "spec.rules[0].http.paths[1].path",
                        "FieldValueInvalid",
                        r#"Invalid value: "a//b": must not contain '//'"#,
                    ),
                    (
                        "spec.rules[0].http.paths[1].backend",
                        "FieldValueRequired",
                        "Required value: port name or number is required",
                    ),
                    (
                        "spec.rules[0].http.paths[2].pathType",
                        "FieldValueNotSupported",
                        r#"Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix""#,
                    ),
                    (
                        "spec.rules[0].http.paths[2].backend",
                        "FieldValueInvalid",
                        r#"Invalid value: "": resource or service backend is required"#,
                    ),
                ],
            ),
            (
                json!({"defaultBackend": {"service": {"name": "Web", "port": {"number": 70000}}}, "tls": [{"hosts": ["*.ok.com", "a*.bad"]}]}),
                vec![
                    (
                        "spec.defaultBackend.service.name",
                        "FieldValueInvalid",
                        r#"Invalid value: "Web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
                    ),
                    (
                        "spec.defaultBackend.service.port.number",
                        "FieldValueInvalid",
                        "Invalid value: 70000: must be between 1 and 65535, inclusive",
                    ),
                    (
                        "spec.tls[0].hosts[1]",
                        "FieldValueInvalid",
                        r#"Invalid value: "a*.bad": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                    ),
                ],
            ),
        ];
        let strategy = strategy("Ingress");
        for (spec, want) in cases {
            let ingress = json!({"metadata": {"name": "i", "namespace": "n"}, "spec": spec});
            assert_eq!(
                causes(&strategy.validate(&ingress)),
                expect(&want),
                "{spec}"
            );
        }
    }

    #[test]
    fn ingress_status_generation_and_printer() {
        let strategy = strategy("Ingress");
        let mut ingress = json!({"metadata": {"name": "i"}, "spec": {"ingressClassName": "nginx", "rules": [
            {"host": "a.com"}, {"host": "b.com"}, {}, {"host": "d.com"}, {"host": "e.com"}], "tls": [{}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}});
        strategy.prepare_for_create(&mut ingress);
        assert_eq!(ingress["status"], json!({"loadBalancer": {}}));
        assert_eq!(ingress["metadata"]["generation"], 1);
        ingress["status"] = json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "10.0.0.2"}]}});
        let cells = ingress_cells(&ingress);
        assert_eq!(
            cells[1..5],
            [
                json!("nginx"),
                json!("a.com,b.com + 2 more..."),
                json!("10.0.0.2,lb.e..."),
                json!("80, 443")
            ]
        );
        let bare = json!({"metadata": {"name": "j"}, "spec": {}});
        assert_eq!(
            ingress_cells(&bare)[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn network_policy_defaults_and_validation() {
        let strategy = strategy("NetworkPolicy");
        let mut policy = json!({"metadata": {"name": "p"}, "spec": {"podSelector": {},
            "ingress": [{"ports": [{"port": 80}]}], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}});
        strategy.prepare_for_create(&mut policy);
        assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
        assert!(strategy.validate(&policy).is_empty());
        let mut ingress_only = json!({"spec": {"podSelector": {"matchLabels": {"app": "db"}}}});
        strategy.prepare_for_create(&mut ingress_only);
        assert_eq!(ingress_only["spec"]["policyTypes"], json!(["Ingress"]));
        let bad = json!({"spec": {"podSelector": {}, "policyTypes": ["Sideways"], "ingress": [{
            "ports": [{"protocol": "ICMP", "port": "http", "endPort": 90}],
            "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/4"]}, "podSelector": {}}]}]}});
        assert_eq!(
            causes(&strategy.validate(&bad)),
            expect(&[
                (
                    "spec.ingress[0].ports[0].protocol",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP""#
                ),
                (
                    "spec.ingress[0].ports[0].endPort",
                    "FieldValueInvalid",
                    "Invalid value: 90: may not be specified when `port` is non-numeric"
                ),
                (
                    "spec.ingress[0].from[0]",
                    "FieldValueRequired",
                    "Required value: must specify a peer"
                ),
                (
                    "spec.ingress[0].from[1].ipBlock.except[0]",
                    "FieldValueInvalid",
                    r#"Invalid value: "10.0.0.0/4": must be a strict subset of `cidr`"#
                ),
                (
                    "spec.ingress[0].from[1]",
                    "FieldValueForbidden",
                    "Forbidden: may not specify both ipBlock and another peer"
                ),
                (
                    "spec.policyTypes[0]",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Sideways": supported values: "Ingress", "Egress""#
                ),
            ])
        );
        let cells = (network_policy_table().cells)(
            &json!({"metadata": {"name": "p"}, "spec": {"podSelector": {"matchLabels": {"app": "db"}}}}),
        );
        assert_eq!(cells[1], "app=db");
    }

    #[test]
    fn ingress_class_rules() {
        let strategy = strategy("IngressClass");
        let mut class = json!({"metadata": {"name": "c"}, "spec": {"controller": "example.com/ingress",
            "parameters": {"kind": "Params", "name": "p", "apiGroup": "example.com"}}});
        strategy.prepare_for_create(&mut class);
        assert_eq!(class["spec"]["parameters"]["scope"], "Cluster");
        assert!(strategy.validate(&class).is_empty());
        assert_eq!(
            (ingress_class_table().cells)(&class)[2],
            "Params.example.com/p"
        );
        let mut changed = class.clone();
        changed["spec"]["controller"] = json!("example.com/other");
        assert_eq!(
            causes(&strategy.validate_update(&changed, &class)),
            expect(&[(
                "spec.controller",
                "FieldValueInvalid",
                &format!(r#"Invalid value: "example.com/other": {IMMUTABLE}"#)
            )])
        );
        let bad = json!({"spec": {"controller": "nginx"}});
        assert_eq!(
            causes(&strategy.validate(&bad)),
            expect(&[(
                "spec.controller",
                "FieldValueInvalid",
                r#"Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#
            )])
        );
    }
}
