//! The forms objects take in storage (`--storage-media-type`): on etcd, built-in objects are
//! written in protobuf as kube-apiserver writes them, custom resources and APIServices as
//! JSON; and whatever form a value was written in (by kube-apiserver or by kapi), kapi serves
//! it the same.

use bytes::Bytes;
use http::Method;
use k8s_pb::api::core::v1::ConfigMap;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kapi_storage::{EtcdConfig, EtcdStore, Store};
use prost::Message;
use serde_json::json;

use crate::common::process::Kapi;
use crate::common::{self, Backend};

const MAGIC: &[u8] = b"k8s\0";

/// The metadata of an object kube-apiserver created in `default`.
fn upstream_meta(name: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        uid: Some(uid.into()),
        creation_timestamp: Some(Time {
            seconds: Some(1_767_225_600),
            nanos: Some(0),
        }),
        ..ObjectMeta::default()
    }
}

/// A ConfigMap as kube-apiserver stores it.
fn upstream_config_map(name: &str) -> Bytes {
    let object = ConfigMap {
        metadata: Some(upstream_meta(name, "6b1d5d0a-5a2e-4b9e-9d8e-0d3c1f6a0b01")),
        data: [("written-by".to_string(), "kube-apiserver".to_string())].into(),
        ..ConfigMap::default()
    };
    Bytes::from(common::protobuf_value("v1", "ConfigMap", &object))
}

/// A HorizontalPodAutoscaler as kube-apiserver stored it in autoscaling/v1.
fn upstream_v1_autoscaler(name: &str) -> Bytes {
    use k8s_pb::api::autoscaling::v1::{
        CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    };
    let object = HorizontalPodAutoscaler {
        metadata: Some(upstream_meta(name, "0f4d6c1e-2b7a-4c55-8e0b-7a1d2c3e4f50")),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: Some(CrossVersionObjectReference {
                kind: Some("Deployment".into()),
                name: Some("web".into()),
                api_version: Some("apps/v1".into()),
            }),
            min_replicas: Some(2),
            max_replicas: Some(5),
            target_cpu_utilization_percentage: Some(60),
        }),
        ..HorizontalPodAutoscaler::default()
    };
    Bytes::from(common::protobuf_value(
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        &object,
    ))
}

/// `value` as an Unknown envelope and its kind's message, read by k8s-pb.
fn read_upstream(value: &[u8]) -> (TypeMeta, ConfigMap) {
    assert!(value.starts_with(MAGIC), "not protobuf: {value:?}");
    let envelope = Unknown::decode(&value[MAGIC.len()..]).expect("an Unknown");
    let object =
        ConfigMap::decode(envelope.raw.unwrap_or_default().as_slice()).expect("a ConfigMap");
    (envelope.type_meta.unwrap_or_default(), object)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_values_are_stored_and_read_as_kube_apiserver_does() {
    let kapi = Kapi::start(Backend::Etcd, &[]).await;
    let admin = kapi.admin();
    let etcd = kapi.etcd().expect("an etcd backend");
    let store = EtcdStore::connect(EtcdConfig::new(etcd.endpoints()))
        .await
        .expect("connect to etcd");
    let raw = |key: &'static str| {
        let store = &store;
        async move {
            let kv = store.get(key, None).await.expect("etcd get").kv;
            kv.unwrap_or_else(|| panic!("{key} is not stored")).value
        }
    };

    // kapi writes built-in objects in protobuf, which an independent implementation reads.
    let configmaps = "/api/v1/namespaces/default/configmaps";
    admin
        .create(
            configmaps,
            json!({"metadata": {"name": "by-kapi"}, "data": {"a": "1"}}),
        )
        .await;
    let (type_meta, object) = read_upstream(&raw("/registry/configmaps/default/by-kapi").await);
    assert_eq!(type_meta.api_version.as_deref(), Some("v1"));
    assert_eq!(type_meta.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(object.data["a"], "1");
    assert_eq!(object.metadata.unwrap().resource_version, None);

    // Custom resources and APIServices stay JSON.
    let widgets = common::install_widgets(&admin).await;
    admin
        .create(
            widgets,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 1}}),
        )
        .await;
    let widget = raw("/registry/example.com/widgets/default/w").await;
    assert_eq!(widget.first(), Some(&b'{'), "{widget:?}");
    let apiservice = raw("/registry/apiregistration.k8s.io/apiservices/v1.").await;
    assert_eq!(apiservice.first(), Some(&b'{'), "{apiservice:?}");

    // What kube-apiserver writes (protobuf), and JSON and YAML, are served alike.
    let revision = store
        .create(
            "/registry/configmaps/default/upstream",
            upstream_config_map("upstream"),
        )
        .await
        .expect("etcd put");
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: as-yaml\n  namespace: default\n  uid: 0f0e8a52-1c1e-4f7e-a0f5-2b2b9e0c9d11\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\ndata:\n  written-by: yaml\n";
    store
        .create("/registry/configmaps/default/as-yaml", Bytes::from(yaml))
        .await
        .expect("etcd put");
    let upstream = admin.get(&format!("{configmaps}/upstream")).await;
    assert_eq!(upstream.status, 200, "{}", upstream.body);
    let upstream = upstream.json();
    assert_eq!(upstream["data"]["written-by"], "kube-apiserver");
    assert_eq!(
        upstream["metadata"]["creationTimestamp"],
        "2026-01-01T00:00:00Z"
    );
    assert_eq!(
        upstream["metadata"]["resourceVersion"],
        revision.to_string()
    );
    let listed = admin.get(configmaps).await.json();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"upstream") && names.contains(&"as-yaml"),
        "{names:?}"
    );
    let yaml_object = admin.get(&format!("{configmaps}/as-yaml")).await.json();
    assert_eq!(yaml_object["data"]["written-by"], "yaml");

    // kapi's update of kube-apiserver's object is protobuf again, and keeps what it had.
    let patched = admin
        .write(
            Method::PATCH,
            &format!("{configmaps}/upstream"),
            &json!({"data": {"patched": "yes"}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let (_, object) = read_upstream(&raw("/registry/configmaps/default/upstream").await);
    assert_eq!(object.data["written-by"], "kube-apiserver");
    assert_eq!(object.data["patched"], "yes");

    // An update that changes nothing still writes a value stored in another form in the
    // form written now, as upstream's (storage migration, `kubectl replace`).
    let unchanged = admin.get(&format!("{configmaps}/as-yaml")).await.json();
    let replaced = admin
        .write(Method::PUT, &format!("{configmaps}/as-yaml"), &unchanged)
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let (_, object) = read_upstream(&raw("/registry/configmaps/default/as-yaml").await);
    assert_eq!(object.data["written-by"], "yaml");

    // The NodePort bitmap is kube-apiserver's RangeAllocation at its key, read in any form:
    // a port kube-apiserver marked in protobuf is not handed out again.
    let service = |name: &str, port: u16| {
        json!({"metadata": {"name": name}, "spec": {"type": "NodePort",
            "ports": [{"port": 80, "nodePort": port}]}})
    };
    let services = "/api/v1/namespaces/default/services";
    admin.create(services, service("first", 30080)).await;
    let key = "/registry/ranges/servicenodeports";
    let stored = store
        .get(key, None)
        .await
        .unwrap()
        .kv
        .expect("the NodePort bitmap");
    let bitmap: serde_json::Value = serde_json::from_slice(&stored.value).unwrap();
    assert_eq!(bitmap["kind"], "RangeAllocation");
    assert_eq!(bitmap["range"], "30000-32767");
    // Ports 30080 and 30081: bits 80 and 81 of a big-endian integer.
    let mut data = vec![0x03];
    data.extend([0; 10]);
    let allocation = k8s_pb::api::core::v1::RangeAllocation {
        metadata: Some(ObjectMeta::default()),
        range: Some("30000-32767".into()),
        data: Some(data),
    };
    let value = common::protobuf_value("v1", "RangeAllocation", &allocation);
    store
        .update(key, Bytes::from(value), stored.mod_revision)
        .await
        .expect("etcd put");
    let taken = admin
        .write(Method::POST, services, &service("second", 30081))
        .await;
    assert_eq!(taken.status, 422, "{}", taken.body);
    assert!(
        taken.body.contains("provided port is already allocated"),
        "{}",
        taken.body
    );

    // A CRD as kube-apiserver stores it (v1beta1 JSON, Go's field order, the version's
    // schema hoisted) is served as v1, and so are its custom resources.
    let crd = json!({"kind": "CustomResourceDefinition",
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "metadata": {"name": "gizmos.example.com", "uid": "9a1f9b2e-57a4-4c1e-8f5d-1c2b3a4d5e6f",
            "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"group": "example.com", "version": "v1",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "scope": "Namespaced",
            "validation": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "versions": [{"name": "v1", "served": true, "storage": true}],
            "conversion": {"strategy": "None"}, "preserveUnknownFields": false},
        "status": {"conditions": [], "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": ["v1"]}});
    let crd_key = "/registry/apiextensions.k8s.io/customresourcedefinitions/gizmos.example.com";
    store
        .create(crd_key, Bytes::from(format!("{crd}\n")))
        .await
        .expect("etcd put");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let served = admin.get(&format!("{crds}/gizmos.example.com")).await;
    assert_eq!(served.status, 200, "{}", served.body);
    let served = served.json();
    assert_eq!(served["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(
        served["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"],
        "object"
    );
    let gizmos = "/apis/example.com/v1/namespaces/default/gizmos";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while admin.get(gizmos).await.status != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "kube-apiserver's CRD was never served"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // A value of a version kapi does not read is refused, naming it, never served as kapi's.
    let future = "/registry/limitranges/default/future";
    let value = json!({"kind": "LimitRange", "apiVersion": "v2", "metadata": {"name": "future"}});
    store
        .create(future, Bytes::from(value.to_string()))
        .await
        .expect("etcd put");
    let refused = admin
        .get("/api/v1/namespaces/default/limitranges/future")
        .await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("is a v2 LimitRange, which kapi does not read as v1 LimitRange"),
        "{}",
        refused.body
    );

    // A value an older kube-apiserver stored in autoscaling/v1, before HorizontalPodAutoscalers
    // were stored as v2, is converted on read as upstream converts it.
    store
        .create(
            "/registry/horizontalpodautoscalers/default/older",
            upstream_v1_autoscaler("older"),
        )
        .await
        .expect("etcd put");
    let v2 = admin
        .get("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/older")
        .await;
    assert_eq!(v2.status, 200, "{}", v2.body);
    let v2 = v2.json();
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(v2["spec"]["minReplicas"], 2);
    let metric = &v2["spec"]["metrics"][0];
    assert_eq!(metric["resource"]["name"], "cpu", "{v2}");
    assert_eq!(
        metric["resource"]["target"]["averageUtilization"], 60,
        "{v2}"
    );
    let v1 = admin
        .get("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/older")
        .await;
    assert_eq!(v1.status, 200, "{}", v1.body);
    assert_eq!(v1.json()["spec"]["targetCPUUtilizationPercentage"], 60);

    // A value that is no object kapi can read is named, never served.
    store
        .create(
            "/registry/limitranges/default/damaged",
            Bytes::from_static(b"\x00\x01garbage"),
        )
        .await
        .expect("etcd put");
    let damaged = admin
        .get("/api/v1/namespaces/default/limitranges/damaged")
        .await;
    assert_eq!(damaged.status, 500, "{}", damaged.body);
    assert!(
        damaged
            .body
            .contains("/registry/limitranges/default/damaged"),
        "{}",
        damaged.body
    );
    assert!(damaged.body.contains("storage damaged"), "{}", damaged.body);
    let list = admin.get("/api/v1/namespaces/default/limitranges").await;
    assert_eq!(list.status, 500, "{}", list.body);
    assert!(
        list.body.contains("/registry/limitranges/default/damaged"),
        "{}",
        list.body
    );

    // Bytes that begin as kapi's own stored JSON but are not JSON (written into etcd by
    // another writer) are damage too, not served as they are: cut short, and with a byte
    // that is not UTF-8 where kapi would not parse it.
    let own = r#"{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"#;
    for (name, rest) in [
        ("cut", &br#""cut","namespace":"default""#[..]),
        (
            "bytes",
            &b"\"bytes\",\"namespace\":\"default\",\"annotations\":{\"a\":\"\xff\"}}}"[..],
        ),
    ] {
        let key = format!("/registry/podtemplates/default/{name}");
        let value = [own.as_bytes(), rest].concat();
        store
            .create(&key, Bytes::from(value))
            .await
            .expect("etcd put");
        let damaged = admin
            .get(&format!("/api/v1/namespaces/default/podtemplates/{name}"))
            .await;
        assert_eq!(damaged.status, 500, "{}", damaged.body);
        assert!(damaged.body.contains(&key), "{}", damaged.body);
        assert!(damaged.body.contains("storage damaged"), "{}", damaged.body);
        let list = admin.get("/api/v1/namespaces/default/podtemplates").await;
        assert_eq!(list.status, 500, "{}", list.body);
        assert!(list.body.contains(&key), "{}", list.body);
        store.delete(&key, None).await.expect("etcd delete");
    }
    kapi.stop().await;
}

/// Metadata of an object an older kube-apiserver wrote, in `namespace` (`None`: cluster
/// scoped).
fn earlier_meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        namespace: namespace.map(Into::into),
        ..upstream_meta(name, "3c1e7a52-9b0d-4f6e-a2c8-5d4b3a291f07")
    }
}

/// Objects an older kube-apiserver stored in versions 1.35 no longer serves, as protobuf
/// values under their keys: the key, the value, the path kapi serves it at.
fn earlier_values() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    use k8s_pb::api::{batch, core, discovery, extensions, flowcontrol, policy, rbac};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    let zero_shares = flowcontrol::v1beta3::PriorityLevelConfiguration {
        metadata: Some(ObjectMeta {
            annotations: [(
                "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares".to_string(),
                String::new(),
            )]
            .into(),
            ..earlier_meta("zero-shares", None)
        }),
        spec: Some(flowcontrol::v1beta3::PriorityLevelConfigurationSpec {
            r#type: Some("Limited".into()),
            limited: Some(flowcontrol::v1beta3::LimitedPriorityLevelConfiguration {
                nominal_concurrency_shares: Some(0),
                limit_response: Some(flowcontrol::v1beta3::LimitResponse {
                    r#type: Some("Reject".into()),
                    queuing: None,
                }),
                lendable_percent: Some(0),
                borrowing_limit_percent: None,
            }),
            exempt: None,
        }),
        status: None,
    };
    let assured = flowcontrol::v1beta2::PriorityLevelConfiguration {
        metadata: Some(earlier_meta("assured", None)),
        spec: Some(flowcontrol::v1beta2::PriorityLevelConfigurationSpec {
            r#type: Some("Limited".into()),
            limited: Some(flowcontrol::v1beta2::LimitedPriorityLevelConfiguration {
                assured_concurrency_shares: Some(7),
                limit_response: Some(flowcontrol::v1beta2::LimitResponse {
                    r#type: Some("Reject".into()),
                    queuing: None,
                }),
                lendable_percent: Some(10),
                borrowing_limit_percent: None,
            }),
            exempt: None,
        }),
        status: None,
    };
    let cron_job = batch::v1beta1::CronJob {
        metadata: Some(earlier_meta("nightly", Some("default"))),
        spec: Some(batch::v1beta1::CronJobSpec {
            schedule: Some("0 3 * * *".into()),
            concurrency_policy: Some("Forbid".into()),
            job_template: Some(batch::v1beta1::JobTemplateSpec {
                metadata: None,
                spec: Some(batch::v1::JobSpec {
                    template: Some(core::v1::PodTemplateSpec {
                        metadata: None,
                        spec: Some(core::v1::PodSpec {
                            containers: vec![core::v1::Container {
                                name: Some("backup".into()),
                                image: Some("busybox".into()),
                                ..Default::default()
                            }],
                            restart_policy: Some("OnFailure".into()),
                            ..Default::default()
                        }),
                    }),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let budget = policy::v1beta1::PodDisruptionBudget {
        metadata: Some(earlier_meta("none-selected", Some("default"))),
        spec: Some(policy::v1beta1::PodDisruptionBudgetSpec {
            min_available: Some(IntOrString {
                r#type: Some(0),
                int_val: Some(1),
                str_val: None,
            }),
            selector: Some(LabelSelector::default()),
            ..Default::default()
        }),
        status: None,
    };
    let backend = |service: &str, port: i32| extensions::v1beta1::IngressBackend {
        service_name: Some(service.into()),
        service_port: Some(IntOrString {
            r#type: Some(0),
            int_val: Some(port),
            str_val: None,
        }),
        resource: None,
    };
    let ingress = extensions::v1beta1::Ingress {
        metadata: Some(earlier_meta("site", Some("default"))),
        spec: Some(extensions::v1beta1::IngressSpec {
            backend: Some(backend("fallback", 8080)),
            rules: vec![extensions::v1beta1::IngressRule {
                host: Some("site.example.com".into()),
                ingress_rule_value: Some(extensions::v1beta1::IngressRuleValue {
                    http: Some(extensions::v1beta1::HttpIngressRuleValue {
                        paths: vec![extensions::v1beta1::HttpIngressPath {
                            path: Some("/".into()),
                            path_type: Some("Prefix".into()),
                            backend: Some(backend("web", 80)),
                        }],
                    }),
                }),
            }],
            ..Default::default()
        }),
        status: None,
    };
    let slice = discovery::v1beta1::EndpointSlice {
        metadata: Some(earlier_meta("web-abc", Some("default"))),
        address_type: Some("IPv4".into()),
        endpoints: vec![discovery::v1beta1::Endpoint {
            addresses: vec!["10.0.0.7".into()],
            topology: [
                ("kubernetes.io/hostname".to_string(), "node-1".to_string()),
                (
                    "topology.kubernetes.io/zone".to_string(),
                    "zone-a".to_string(),
                ),
            ]
            .into(),
            ..Default::default()
        }],
        ports: Vec::new(),
    };
    let role = rbac::v1beta1::ClusterRole {
        metadata: Some(earlier_meta("earlier-reader", None)),
        rules: vec![rbac::v1beta1::PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec![String::new()],
            resources: vec!["pods".into()],
            ..Default::default()
        }],
        aggregation_rule: None,
    };
    let flowcontrol = "flowcontrol.apiserver.k8s.io";
    vec![
        (
            "/registry/prioritylevelconfigurations/zero-shares",
            common::protobuf_value(
                &format!("{flowcontrol}/v1beta3"),
                "PriorityLevelConfiguration",
                &zero_shares,
            ),
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/zero-shares",
        ),
        (
            "/registry/prioritylevelconfigurations/assured",
            common::protobuf_value(
                &format!("{flowcontrol}/v1beta2"),
                "PriorityLevelConfiguration",
                &assured,
            ),
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/assured",
        ),
        (
            "/registry/cronjobs/default/nightly",
            common::protobuf_value("batch/v1beta1", "CronJob", &cron_job),
            "/apis/batch/v1/namespaces/default/cronjobs/nightly",
        ),
        (
            "/registry/poddisruptionbudgets/default/none-selected",
            common::protobuf_value("policy/v1beta1", "PodDisruptionBudget", &budget),
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets/none-selected",
        ),
        (
            "/registry/ingress/default/site",
            common::protobuf_value("extensions/v1beta1", "Ingress", &ingress),
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses/site",
        ),
        (
            "/registry/endpointslices/default/web-abc",
            common::protobuf_value("discovery.k8s.io/v1beta1", "EndpointSlice", &slice),
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/web-abc",
        ),
        (
            "/registry/clusterroles/earlier-reader",
            common::protobuf_value("rbac.authorization.k8s.io/v1beta1", "ClusterRole", &role),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/earlier-reader",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_stored_in_earlier_versions_are_served_as_kube_apiserver_serves_them() {
    let kapi = Kapi::start(Backend::Etcd, &[]).await;
    let admin = kapi.admin();
    let etcd = kapi.etcd().expect("an etcd backend");
    let store = EtcdStore::connect(EtcdConfig::new(etcd.endpoints()))
        .await
        .expect("connect to etcd");
    let mut served = serde_json::Map::new();
    for (key, value, path) in earlier_values() {
        store
            .create(key, Bytes::from(value))
            .await
            .expect("etcd put");
        let got = admin.get(path).await;
        assert_eq!(got.status, 200, "{path}: {}", got.body);
        served.insert(path.into(), got.json());
    }
    let at = |path: &str| &served[&format!("/apis/{path}")];

    let zero = at("flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/zero-shares");
    assert_eq!(zero["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    assert_eq!(
        zero["spec"]["limited"]["nominalConcurrencyShares"], 0,
        "{zero}"
    );
    assert!(zero["metadata"].get("annotations").is_none(), "{zero}");
    let assured = at("flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/assured");
    assert_eq!(
        assured["spec"]["limited"]["nominalConcurrencyShares"], 7,
        "{assured}"
    );
    assert_eq!(
        assured["spec"]["limited"]["lendablePercent"], 10,
        "{assured}"
    );

    let cron_job = at("batch/v1/namespaces/default/cronjobs/nightly");
    assert_eq!(cron_job["apiVersion"], "batch/v1");
    assert_eq!(cron_job["spec"]["schedule"], "0 3 * * *");
    assert_eq!(cron_job["spec"]["concurrencyPolicy"], "Forbid");

    // v1beta1's empty selector selected no pods; v1 keeps that meaning.
    let budget = at("policy/v1/namespaces/default/poddisruptionbudgets/none-selected");
    assert_eq!(
        budget["spec"]["selector"],
        json!({"matchExpressions": [{"key": "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match",
            "operator": "Exists"}]}),
        "{budget}"
    );

    let ingress = at("networking.k8s.io/v1/namespaces/default/ingresses/site");
    assert_eq!(
        ingress["spec"]["defaultBackend"],
        json!({"service": {"name": "fallback", "port": {"number": 8080}}}),
        "{ingress}"
    );
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"],
        json!({"service": {"name": "web", "port": {"number": 80}}}),
        "{ingress}"
    );

    let slice = at("discovery.k8s.io/v1/namespaces/default/endpointslices/web-abc");
    let endpoint = &slice["endpoints"][0];
    assert_eq!(endpoint["nodeName"], "node-1", "{slice}");
    assert_eq!(endpoint["zone"], "zone-a", "{slice}");
    assert!(endpoint.get("deprecatedTopology").is_none(), "{slice}");

    let role = at("rbac.authorization.k8s.io/v1/clusterroles/earlier-reader");
    assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
    assert_eq!(role["rules"][0]["resources"], json!(["pods"]));

    // Lists read them the same.
    let list = admin.get("/apis/networking.k8s.io/v1/ingresses").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.json()["items"][0]["spec"], ingress["spec"]);

    // A write stores the value in the storage version, which kube-apiserver reads.
    let mut updated = cron_job.clone();
    updated["spec"]["suspend"] = json!(true);
    let replaced = admin
        .write(
            Method::PUT,
            "/apis/batch/v1/namespaces/default/cronjobs/nightly",
            &updated,
        )
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let stored = store
        .get("/registry/cronjobs/default/nightly", None)
        .await
        .unwrap()
        .kv
        .expect("the CronJob");
    let envelope = Unknown::decode(&stored.value[MAGIC.len()..]).expect("an Unknown");
    let type_meta = envelope.type_meta.unwrap_or_default();
    assert_eq!(type_meta.api_version.as_deref(), Some("batch/v1"));
    let written =
        k8s_pb::api::batch::v1::CronJob::decode(envelope.raw.unwrap_or_default().as_slice())
            .expect("a batch/v1 CronJob");
    assert_eq!(written.spec.unwrap().suspend, Some(true));

    // An earlier value of another kind under a collection's key is refused, never served
    // as the collection's kind.
    store
        .create(
            "/registry/cronjobs/default/misplaced",
            Bytes::from(common::protobuf_value(
                "rbac.authorization.k8s.io/v1beta1",
                "ClusterRole",
                &k8s_pb::api::rbac::v1beta1::ClusterRole {
                    metadata: Some(earlier_meta("misplaced", Some("default"))),
                    ..Default::default()
                },
            )),
        )
        .await
        .expect("etcd put");
    let misplaced = admin
        .get("/apis/batch/v1/namespaces/default/cronjobs/misplaced")
        .await;
    assert_eq!(misplaced.status, 500, "{}", misplaced.body);
    assert!(
        misplaced.body.contains(
            "is a rbac.authorization.k8s.io/v1beta1 ClusterRole, which kapi does not read as batch/v1 CronJob"
        ),
        "{}",
        misplaced.body
    );
    kapi.stop().await;
}
