//! Unit tests of Services: defaulting, validation tables with upstream's causes, update
//! rules, printers, CIDR arithmetic, and the allocator against a real embedded store.

use crate::tests::pairs;
use std::net::IpAddr;
use std::sync::Arc;

use kapi_server::endpoints::Served;
use kapi_server::registry::{DeleteParams, ReadVersion, Write};
use kapi_server::resource::Strategy;
use kapi_storage::{EmbeddedConfig, EmbeddedStore, Store};
use serde_json::{Value, json};

use super::strategy::ServiceStrategy;
use super::*;
use crate::util::{Cases, causes, expect};

fn prepared(spec: Value) -> Value {
    let mut service = json!({"metadata": {"name": "s", "namespace": "default"}, "spec": spec});
    ServiceStrategy.prepare_for_create(&mut service);
    service
}

#[test]
fn defaults_as_upstream() {
    let cases = vec![
        (
            json!({"ports": [{"port": 80}], "clusterIP": "10.0.0.1"}),
            json!({
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
                "type": "ClusterIP", "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
            }),
        ),
        (
            json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}],
                   "sessionAffinity": "ClientIP", "selector": {}}),
            json!({
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": "http"}],
                "type": "LoadBalancer", "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
                "allocateLoadBalancerNodePorts": true,
            }),
        ),
        (
            json!({"type": "ExternalName", "externalName": "a.example",
                   "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
            json!({"type": "ExternalName", "externalName": "a.example", "sessionAffinity": "None"}),
        ),
    ];
    for (spec, want) in cases {
        let service = prepared(spec.clone());
        assert_eq!(service["spec"], want, "{spec}");
        assert_eq!(service["status"], json!({"loadBalancer": {}}));
    }
}

#[test]
fn validation_table() {
    let dup_port = r#"Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}"#;
    let cases: Cases = vec![
        (json!({"ports": [{"port": 80}]}), vec![]),
        (
            json!({"selector": {"app": "x"}}),
            vec![("spec.ports", "FieldValueRequired", "Required value")],
        ),
        (json!({"clusterIP": "None"}), vec![]),
        (
            json!({"ports": [{"port": 80}, {"port": 81, "name": "b"}]}),
            vec![("spec.ports[0].name", "FieldValueRequired", "Required value")],
        ),
        (
            json!({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}),
            vec![(
                "spec.ports[1].name",
                "FieldValueDuplicate",
                "Duplicate value: \"a\"",
            )],
        ),
        (
            json!({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]}),
            vec![("spec.ports[1]", "FieldValueDuplicate", dup_port)],
        ),
        (
            json!({"ports": [{"port": 0, "protocol": "HTTP"}]}),
            vec![
                (
                    "spec.ports[0].port",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be between 1 and 65535, inclusive",
                ),
                (
                    "spec.ports[0].protocol",
                    "FieldValueNotSupported",
                    "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
                (
                    "spec.ports[0].targetPort",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be between 1 and 65535, inclusive",
                ),
            ],
        ),
        (
            json!({"ports": [{"port": 80, "targetPort": "Http_x"}]}),
            vec![(
                "spec.ports[0].targetPort",
                "FieldValueInvalid",
                "Invalid value: \"Http_x\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            )],
        ),
        (
            json!({"type": "NodePort", "clusterIP": "None", "ports": [{"port": 80}]}),
            vec![(
                "spec.clusterIPs[0]",
                "FieldValueInvalid",
                "Invalid value: \"None\": may not be set to 'None' for NodePort services",
            )],
        ),
        (
            json!({"ports": [{"port": 80, "nodePort": 30000}]}),
            vec![(
                "spec.ports[0].nodePort",
                "FieldValueForbidden",
                "Forbidden: may not be used when `type` is 'ClusterIP'",
            )],
        ),
        (
            json!({"type": "NodePort", "ports": [{"port": 80, "name": "a", "nodePort": 30000}, {"port": 81, "name": "b", "nodePort": 30000}]}),
            vec![(
                "spec.ports[1].nodePort",
                "FieldValueDuplicate",
                "Duplicate value: 30000",
            )],
        ),
        (
            json!({"type": "ExternalName", "clusterIP": "10.0.0.1"}),
            vec![
                (
                    "spec.clusterIPs",
                    "FieldValueForbidden",
                    "Forbidden: may not be set for ExternalName services",
                ),
                ("spec.externalName", "FieldValueRequired", "Required value"),
            ],
        ),
        (
            json!({"type": "Magic", "ports": [{"port": 80}]}),
            vec![(
                "spec.type",
                "FieldValueNotSupported",
                "Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            )],
        ),
        (
            json!({"clusterIP": "10.0.0.300", "ports": [{"port": 80}]}),
            vec![(
                "spec.clusterIPs[0]",
                "FieldValueInvalid",
                "Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )],
        ),
        (
            json!({"ports": [{"port": 80}], "selector": {"a b": "c"}}),
            vec![(
                "spec.selector",
                "FieldValueInvalid",
                "Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )],
        ),
        (
            json!({"ports": [{"port": 80}], "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 90000}}}),
            vec![(
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                "FieldValueInvalid",
                "Invalid value: 90000: must be greater than 0 and less than 86400",
            )],
        ),
        (
            json!({"ports": [{"port": 80}], "externalIPs": ["127.0.0.1"]}),
            vec![(
                "spec.externalIPs[0]",
                "FieldValueInvalid",
                "Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            )],
        ),
        (
            json!({"type": "LoadBalancer", "ports": [{"port": 10250}], "externalTrafficPolicy": "Local", "healthCheckNodePort": 0}),
            vec![
                (
                    "spec.ports[0]",
                    "FieldValueInvalid",
                    "Invalid value: 10250: may not expose port 10250 externally since it is used by kubelet",
                ),
                (
                    "spec.healthCheckNodePort",
                    "FieldValueRequired",
                    "Required value",
                ),
            ],
        ),
    ];
    for (spec, want) in cases {
        let service = prepared(spec.clone());
        assert_eq!(
            causes(&ServiceStrategy.validate(&service)),
            expect(&want),
            "{spec}"
        );
    }
}

#[test]
fn updates_keep_allocated_values_and_reject_changed_cluster_ips() {
    let mut old = prepared(json!({"type": "NodePort", "clusterIP": "10.0.0.1",
        "ports": [{"port": 80, "name": "http", "nodePort": 30080}]}));
    old["spec"]["ipFamilyPolicy"] = json!("SingleStack");
    old["spec"]["ipFamilies"] = json!(["IPv4"]);
    // An apply without the allocated values keeps them.
    let mut new = json!({"metadata": old["metadata"].clone(), "spec": {"type": "NodePort",
        "ports": [{"port": 80, "name": "http"}]}});
    ServiceStrategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.0.0.1"]));
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 30080);
    assert!(ServiceStrategy.validate_update(&new, &old).is_empty());
    // Changing the IP is rejected.
    let mut changed = old.clone();
    changed["spec"]["clusterIP"] = json!("10.0.0.2");
    ServiceStrategy.prepare_for_update(&mut changed, &old);
    assert_eq!(
        causes(&ServiceStrategy.validate_update(&changed, &old)),
        expect(&[(
            "spec.clusterIPs[0]",
            "FieldValueInvalid",
            "Invalid value: [\"10.0.0.2\"]: may not change once set",
        )])
    );
    // Turning into ExternalName wipes the IPs, families and NodePorts.
    let mut external = old.clone();
    external["spec"]["type"] = json!("ExternalName");
    external["spec"]["externalName"] = json!("a.example");
    ServiceStrategy.prepare_for_update(&mut external, &old);
    assert!(ServiceStrategy.validate_update(&external, &old).is_empty());
    for key in [
        "clusterIP",
        "clusterIPs",
        "ipFamilies",
        "ipFamilyPolicy",
        "externalTrafficPolicy",
    ] {
        assert!(external["spec"].get(key).is_none(), "{key}");
    }
    assert!(external["spec"]["ports"][0].get("nodePort").is_none());
    let fields = ServiceStrategy.selectable_fields(&old);
    assert_eq!(
        pairs(&fields),
        vec![
            ("spec.clusterIP", "10.0.0.1".to_string()),
            ("spec.type", "NodePort".to_string())
        ]
    );
}

#[test]
fn service_rows_as_upstream_prints_them() {
    let strategies = strategies("", "Service").unwrap();
    let table = strategies.table.unwrap();
    let names: Vec<&str> = table.columns.iter().map(|c| &*c.name).collect();
    assert_eq!(
        names,
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    let mut lb = prepared(json!({"type": "LoadBalancer", "clusterIP": "10.0.0.9",
        "ports": [{"port": 80, "nodePort": 30001}, {"port": 53, "protocol": "UDP"}],
        "selector": {"b": "2", "a": "1"}}));
    let row = (table.cells)(&lb);
    assert_eq!(
        row[1..5],
        [
            json!("LoadBalancer"),
            json!("10.0.0.9"),
            json!("<pending>"),
            json!("80:30001/TCP,53/UDP")
        ]
    );
    assert_eq!(row[6], json!("a=1,b=2"));
    lb["status"] =
        json!({"loadBalancer": {"ingress": [{"hostname": "h.example"}, {"ip": "1.2.3.4"}]}});
    lb["spec"]["externalIPs"] = json!(["5.6.7.8"]);
    assert_eq!((table.cells)(&lb)[3], json!("1.2.3.4,h.example,5.6.7.8"));
    let headless = prepared(json!({"clusterIP": "None"}));
    let row = (table.cells)(&headless);
    assert_eq!(row[2..5], [json!("None"), json!("<none>"), json!("<none>")]);
    assert_eq!(row[6], json!("<none>"));
}

#[test]
fn endpoints_slices_cidrs_and_addresses_rows() {
    let endpoints = strategies("", "Endpoints").unwrap().table.unwrap();
    let subsets = json!({"subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "ports": [{"port": 80}, {"port": 443}]},
    ]});
    assert_eq!(
        (endpoints.cells)(&subsets)[1],
        json!("10.0.0.1:80,[fd00::1]:80,10.0.0.1:443 + 1 more...")
    );
    assert_eq!((endpoints.cells)(&json!({}))[1], json!("<none>"));
    let slices = strategies("discovery.k8s.io", "EndpointSlice")
        .unwrap()
        .table
        .unwrap();
    let slice = json!({"addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}, {}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
    let row = (slices.cells)(&slice);
    assert_eq!(
        row[1..4],
        [json!("IPv4"), json!("80,x,*"), json!("10.0.0.1,10.0.0.2")]
    );
    assert_eq!(
        (slices.cells)(&json!({}))[2..4],
        [json!("<unset>"), json!("<unset>")]
    );
    let addresses = strategies("networking.k8s.io", "IPAddress")
        .unwrap()
        .table
        .unwrap();
    let address = json!({"spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "k"}}});
    assert_eq!((addresses.cells)(&address)[1], json!("services/default/k"));
    let cidrs = strategies("networking.k8s.io", "ServiceCIDR")
        .unwrap()
        .table
        .unwrap();
    let cidr = json!({"spec": {"cidrs": ["10.0.0.0/24", "fd00::/108"]}});
    assert_eq!((cidrs.cells)(&cidr)[1], json!("10.0.0.0/24,fd00::/108"));
}

#[test]
fn endpoint_slices_and_ip_addresses_validate_as_upstream() {
    let slices = strategies("discovery.k8s.io", "EndpointSlice")
        .unwrap()
        .strategy;
    let mut slice = json!({"metadata": {"name": "s"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["fd00::1"]}], "ports": [{"port": 80}, {"port": 81}]});
    slices.prepare_for_create(&mut slice);
    assert_eq!(slice["metadata"]["generation"], 1);
    assert_eq!(
        causes(&slices.validate(&slice)),
        expect(&[
            (
                "endpoints[0].addresses[0]",
                "FieldValueInvalid",
                "Invalid value: \"fd00::1\": must be a valid IPv4 address"
            ),
            (
                "ports[1].name",
                "FieldValueDuplicate",
                "Duplicate value: \"\""
            ),
        ])
    );
    let addresses = strategies("networking.k8s.io", "IPAddress")
        .unwrap()
        .strategy;
    assert_eq!(
        addresses.name_validator()("10.0.0.01", false),
        vec!["ParseAddr(\"10.0.0.01\"): unable to parse IP".to_string()]
    );
    assert_eq!(
        addresses.name_validator()("2001:db8:0::1", false),
        vec!["must be a canonical format IP address".to_string()]
    );
    assert_eq!(
        causes(&addresses.validate(&json!({"spec": {"parentRef": {"resource": "services"}}}))),
        expect(&[(
            "spec.parentRef.name",
            "FieldValueRequired",
            "Required value"
        )])
    );
    let cidrs = strategies("networking.k8s.io", "ServiceCIDR")
        .unwrap()
        .strategy;
    let two_v4 = json!({"spec": {"cidrs": ["10.0.0.0/24", "10.1.0.0/24"]}});
    assert_eq!(
        causes(&cidrs.validate(&two_v4)),
        expect(&[(
            "spec.cidrs",
            "FieldValueInvalid",
            "Invalid value: {\"cidrs\":[\"10.0.0.0/24\",\"10.1.0.0/24\"]}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        )])
    );
}

#[test]
fn cidrs_hand_out_usable_addresses() {
    let cidr = Cidr::parse("10.96.0.0/12").unwrap();
    assert_eq!(cidr.family(), "IPv4");
    assert_eq!(cidr.nth(0).to_string(), "10.96.0.1");
    assert_eq!(cidr.usable(), (1 << 20) - 2);
    assert_eq!(cidr.static_block(), 256);
    assert!(cidr.contains("10.111.255.255".parse().unwrap()));
    assert!(!cidr.contains("10.112.0.0".parse().unwrap()));
    assert_eq!(
        Cidr::parse("10.0.0.7/24").unwrap().to_string(),
        "10.0.0.0/24"
    );
    let small = Cidr::parse("192.168.0.0/28").unwrap();
    assert_eq!((small.usable(), small.static_block()), (14, 0));
    let v6 = Cidr::parse("fd00::/112").unwrap();
    assert_eq!(
        (v6.family(), v6.usable(), v6.static_block()),
        ("IPv6", 65535, 256)
    );
    for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "10.0.0.0/08"] {
        assert!(Cidr::parse(bad).is_err(), "{bad}");
    }
}

/// The services and ipaddresses of a fresh embedded store, with the allocator on services.
fn served(dir: &tempfile::TempDir, cidr: &str) -> (Served, Served, Arc<ServiceAllocator>) {
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap());
    let api = kapi_server::ApiHandler::builder(store.clone(), "/registry")
        .resources(crate::resources(std::time::Duration::ZERO))
        .build();
    let services = api.served("", "v1", "services").unwrap().clone();
    let addresses = api
        .served("networking.k8s.io", "v1", "ipaddresses")
        .unwrap()
        .clone();
    let ranges = ServiceRanges {
        cluster_ips: Cidr::parse(cidr).unwrap(),
        node_ports: PortRange::parse("30000-30003").unwrap(),
    };
    let allocator = ServiceAllocator::new(ranges, addresses.clone(), store, "/registry");
    services.registry.set_write_steps(allocator.clone());
    (services, addresses, allocator)
}

async fn create(
    services: &Served,
    name: &str,
    spec: Value,
) -> Result<Value, kapi_apimachinery::status::ApiError> {
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec});
    services
        .registry
        .create(
            &services.definition,
            "default",
            service,
            Write::plain(false),
        )
        .await
}

async fn exists(addresses: &Served, ip: &str) -> bool {
    let resource = addresses.definition.group_resource();
    addresses
        .registry
        .get(&resource, "", ip, &ReadVersion::MostRecent)
        .await
        .is_ok()
}

#[tokio::test]
async fn allocates_releases_and_repairs() {
    let dir = tempfile::tempdir().unwrap();
    let (services, addresses, allocator) = served(&dir, "10.0.0.0/29");
    // Six usable IPs; the static block is empty for so small a range.
    let mut ips = Vec::new();
    for i in 0..6 {
        let spec = json!({"ports": [{"port": 80}]});
        let created = create(&services, &format!("s{i}"), spec).await.unwrap();
        let ip: IpAddr = created["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(exists(&addresses, &ip.to_string()).await);
        ips.push(ip);
    }
    let first = ips[0].to_string();
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 6);
    let full = create(&services, "full", json!({"ports": [{"port": 80}]}))
        .await
        .unwrap_err();
    assert_eq!(full.code(), 500);
    assert!(
        full.message()
            .contains("failed to allocate a serviceIP: range is full"),
        "{}",
        full.message()
    );

    // Deleting releases the IP.
    let delete = DeleteParams::default();
    for name in ["s0", "s1"] {
        let registry = &services.registry;
        registry
            .delete(&services.definition, "default", name, &delete, None)
            .await
            .unwrap();
    }
    assert!(!exists(&addresses, &first).await);
    // NodePorts: a requested port is reserved, a taken one rejected (and the IP picked for
    // the rejected service given back), released when the type no longer needs them.
    let spec = json!({"type": "NodePort", "ports": [{"port": 80, "name": "a", "nodePort": 30001}, {"port": 81, "name": "b"}]});
    let np = create(&services, "np", spec.clone()).await.unwrap();
    assert_eq!(np["spec"]["ports"][0]["nodePort"], 30001);
    let taken = create(
        &services,
        "np2",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30001}]}),
    )
    .await;
    let taken = taken.unwrap_err();
    assert!(
        taken.message().contains(
            "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"
        ),
        "{}",
        taken.message()
    );

    // Turning the NodePort service into a ClusterIP one releases its ports.
    let change = |current: Option<&Value>| {
        let mut service = current.unwrap().clone();
        service["spec"]["type"] = json!("ClusterIP");
        Ok(service)
    };
    let (updated, _) = services
        .registry
        .update(
            &services.definition,
            "default",
            "np",
            Write::default(),
            change,
        )
        .await
        .unwrap();
    assert!(updated["spec"]["ports"][0].get("nodePort").is_none());
    // The last free IP (np2's was given back) and the released port.
    let again = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30001}]});
    create(&services, "np3", again).await.unwrap();

    // The repair recreates a lost IPAddress.
    let lost = updated["spec"]["clusterIP"].as_str().unwrap().to_string();
    let params = DeleteParams::default();
    addresses
        .registry
        .delete(&addresses.definition, "", &lost, &params, None)
        .await
        .unwrap();
    assert!(!exists(&addresses, &lost).await);
    allocator.repair(&services).await.unwrap();
    assert!(exists(&addresses, &lost).await);
}

#[tokio::test]
async fn dry_runs_and_failed_creates_reserve_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (services, addresses, _) = served(&dir, "10.0.0.0/24");
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "dry", "namespace": "default"},
        "spec": {"clusterIP": "10.0.0.5", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30002}]}});
    let dry = services
        .registry
        .create(
            &services.definition,
            "default",
            service.clone(),
            Write::plain(true),
        )
        .await
        .unwrap();
    assert_eq!(dry["spec"]["clusterIP"], "10.0.0.5");
    assert!(!exists(&addresses, "10.0.0.5").await);
    // A create that fails on its NodePort gives its ClusterIP back.
    let bad = json!({"clusterIP": "10.0.0.6", "type": "NodePort", "ports": [{"port": 80, "nodePort": 40000}]});
    let err = create(&services, "bad", bad).await.unwrap_err();
    assert!(
        err.message().contains(
            "provided port is not in the valid range. The range of valid ports is 30000-30003"
        ),
        "{}",
        err.message()
    );
    assert!(!exists(&addresses, "10.0.0.6").await);
    let out = create(
        &services,
        "out",
        json!({"clusterIP": "10.1.0.6", "ports": [{"port": 80}]}),
    )
    .await
    .unwrap_err();
    assert!(out.message().contains(
        "spec.clusterIPs: Invalid value: \"10.1.0.6\": failed to allocate IP 10.1.0.6: the provided network does not match the current range"
    ), "{}", out.message());
    let dual = create(
        &services,
        "dual",
        json!({"ipFamilyPolicy": "RequireDualStack", "ports": [{"port": 80}]}),
    )
    .await
    .unwrap_err();
    assert!(dual.message().contains("spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"), "{}", dual.message());
    let spec = json!({"clusterIP": "None", "selector": {"app": "a"}, "ports": [{"port": 80}]});
    let headless = create(&services, "headless", spec).await.unwrap();
    assert_eq!(headless["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(headless["spec"]["ipFamilies"], json!(["IPv4"]));
    create(&services, "real", service["spec"].clone())
        .await
        .unwrap();
    assert!(exists(&addresses, "10.0.0.5").await);
}
