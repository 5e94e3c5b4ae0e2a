use serde_json::json;

use super::read;

#[test]
fn an_earlier_version_of_the_same_shape_reads_with_the_storage_apiversion() {
    let lease = json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "Lease",
        "metadata": {"name": "holder", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}});
    let mut expected = lease.clone();
    expected["apiVersion"] = json!("coordination.k8s.io/v1");
    assert_eq!(read(lease), Some(expected));
}

#[test]
fn versions_kapi_does_not_read_are_refused() {
    for (api_version, kind) in [
        ("coordination.k8s.io/v1alpha2", "LeaseCandidate"),
        ("v2", "ConfigMap"),
        ("batch/v1beta1", "Job"),
    ] {
        let object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
        assert_eq!(read(object), None, "{api_version} {kind}");
    }
    assert_eq!(read(json!({"kind": "CronJob"})), None);
    assert_eq!(read(json!("batch/v1beta1")), None);
}

#[test]
fn every_earlier_version_reads_as_a_served_storage_version() {
    let (served, _) = crate::catalog::build_all(None);
    for earlier in super::EARLIER {
        let stored = served.iter().any(|d| {
            let gvk = &d.storage.storage_version;
            gvk.group_version().api_version() == earlier.reads_as && gvk.kind == earlier.kind
        });
        assert!(
            stored,
            "{} {} reads as nothing stored",
            earlier.api_version, earlier.kind
        );
    }
}

#[test]
fn priority_levels_read_their_shares_as_nominal() {
    let v1beta2 = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2",
        "kind": "PriorityLevelConfiguration", "metadata": {"name": "old"},
        "spec": {"type": "Limited", "limited": {"assuredConcurrencyShares": 7,
            "lendablePercent": 10, "limitResponse": {"type": "Reject"}}}});
    let read_v1beta2 = read(v1beta2).unwrap();
    assert_eq!(
        read_v1beta2["apiVersion"],
        "flowcontrol.apiserver.k8s.io/v1"
    );
    assert_eq!(
        read_v1beta2["spec"]["limited"],
        json!({"nominalConcurrencyShares": 7, "lendablePercent": 10,
            "limitResponse": {"type": "Reject"}})
    );
    // v1beta3 marked a zero it kept with an annotation, which v1 does not need.
    let v1beta3 = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "PriorityLevelConfiguration", "metadata": {"name": "zero", "annotations":
            {"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}});
    let read_v1beta3 = read(v1beta3).unwrap();
    assert_eq!(read_v1beta3["metadata"], json!({"name": "zero"}));
    assert_eq!(
        read_v1beta3["spec"]["limited"]["nominalConcurrencyShares"],
        0
    );
}

#[test]
fn disruption_budgets_keep_what_their_v1beta1_selector_selected() {
    let budget = |selector: serde_json::Value| {
        json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"}, "spec": {"minAvailable": 1, "selector": selector}})
    };
    let label = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match";
    let selector = |selector| read(budget(selector)).unwrap()["spec"]["selector"].clone();
    // An empty selector selected nothing.
    assert_eq!(
        selector(json!({})),
        json!({"matchExpressions": [{"key": label, "operator": "Exists"}]})
    );
    assert_eq!(
        selector(json!({"matchLabels": {}})),
        json!({"matchExpressions": [{"key": label, "operator": "Exists"}]})
    );
    // The selector v1beta1 wrote for v1's select-all selects all.
    assert_eq!(
        selector(json!({"matchExpressions": [{"key": label, "operator": "DoesNotExist"}]})),
        json!({})
    );
    // Any other keeps its own requirements.
    assert_eq!(
        selector(json!({"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": label, "operator": "DoesNotExist"}]})),
        json!({"matchLabels": {"app": "web"}})
    );
    let absent = read(
        json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "b"}, "spec": {"minAvailable": 1}}),
    )
    .unwrap();
    assert_eq!(absent["spec"], json!({"minAvailable": 1}));
}

#[test]
fn endpoint_slices_move_zone_and_hostname_out_of_topology() {
    let slice = json!({"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
        "metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": [
            {"addresses": ["10.0.0.1"], "topology": {"kubernetes.io/hostname": "node-1",
                "topology.kubernetes.io/zone": "z1", "rack": "r7"}},
            {"addresses": ["10.0.0.2"], "nodeName": "node-9",
                "topology": {"kubernetes.io/hostname": "node-2"}},
            {"addresses": ["10.0.0.3"], "topology": {}}]});
    let read = read(slice).unwrap();
    assert_eq!(
        read["endpoints"],
        json!([
            {"addresses": ["10.0.0.1"], "nodeName": "node-1", "zone": "z1",
                "deprecatedTopology": {"rack": "r7"}},
            {"addresses": ["10.0.0.2"], "nodeName": "node-9",
                "deprecatedTopology": {"kubernetes.io/hostname": "node-2"}},
            {"addresses": ["10.0.0.3"]}])
    );
}

#[test]
fn ingress_backends_name_their_service() {
    for api_version in ["extensions/v1beta1", "networking.k8s.io/v1beta1"] {
        let ingress = json!({"apiVersion": api_version, "kind": "Ingress",
            "metadata": {"name": "i"}, "spec": {
                "backend": {"serviceName": "default", "servicePort": 80},
                "rules": [{"host": "a.example.com", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix",
                        "backend": {"serviceName": "web", "servicePort": "http"}},
                    {"path": "/static", "pathType": "ImplementationSpecific",
                        "backend": {"resource": {"kind": "Bucket", "name": "b"}}}]}}]}});
        let read = read(ingress).unwrap();
        assert_eq!(read["apiVersion"], "networking.k8s.io/v1");
        assert_eq!(
            read["spec"],
            json!({"defaultBackend": {"service": {"name": "default", "port": {"number": 80}}},
                "rules": [{"host": "a.example.com", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix",
                        "backend": {"service": {"name": "web", "port": {"name": "http"}}}},
                    {"path": "/static", "pathType": "ImplementationSpecific",
                        "backend": {"resource": {"kind": "Bucket", "name": "b"}}}]}}]})
        );
    }
}

#[test]
fn workloads_keep_their_earlier_fields_in_annotations() {
    let deployment = json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment",
        "metadata": {"name": "d"}, "spec": {"replicas": 1, "rollbackTo": {"revision": 3}}});
    let read_deployment = read(deployment).unwrap();
    assert_eq!(read_deployment["apiVersion"], "apps/v1");
    assert_eq!(read_deployment["spec"], json!({"replicas": 1}));
    assert_eq!(
        read_deployment["metadata"]["annotations"],
        json!({"deprecated.deployment.rollback.to": "3"})
    );
    let daemon_set = json!({"apiVersion": "extensions/v1beta1", "kind": "DaemonSet",
        "metadata": {"name": "d"}, "spec": {"templateGeneration": 4}});
    let read_daemon_set = read(daemon_set).unwrap();
    assert_eq!(read_daemon_set["spec"], json!({}));
    assert_eq!(
        read_daemon_set["metadata"]["annotations"],
        json!({"deprecated.daemonset.template.generation": "4"})
    );
    let stateful_set = json!({"apiVersion": "apps/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "s"}, "spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}}]}});
    assert_eq!(
        read(stateful_set).unwrap()["spec"]["volumeClaimTemplates"],
        json!([{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}])
    );
}

#[test]
fn dynamic_resources_read_v1beta1_devices_and_requests_in_v1_form() {
    let slice = json!({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
        "metadata": {"name": "s"}, "spec": {"driver": "gpu.example.com", "nodeName": "n",
            "pool": {"name": "p", "resourceSliceCount": 1, "generation": 1},
            "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "x"}}}},
                {"name": "gpu-1"}]}});
    assert_eq!(
        read(slice).unwrap()["spec"]["devices"],
        json!([{"name": "gpu-0", "attributes": {"model": {"string": "x"}}}, {"name": "gpu-1"}])
    );
    let claim = json!({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
        "metadata": {"name": "c"}, "spec": {"devices": {"requests": [
            {"name": "one", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
            {"name": "any", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}]}]}}});
    assert_eq!(
        read(claim).unwrap()["spec"]["devices"]["requests"],
        json!([{"name": "one", "exactly": {"deviceClassName": "gpu",
                "allocationMode": "ExactCount", "count": 1}},
            {"name": "any", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}]}])
    );
}
