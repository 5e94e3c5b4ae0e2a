//! Table-driven tests of the workload strategies: defaults, the 422 causes upstream gives for
//! invalid objects, and the update rules.

use crate::tests::pairs;
use kapi_server::resource::{Strategy, SubresourceKind};
use serde_json::{Value, json};

use super::apps::{
    ControllerRevisionStrategy, DaemonSetStrategy, DeploymentStrategy, ReplicaSetStrategy,
    ReplicationControllerStrategy, StatefulSetStrategy,
};
use super::batch::{CronJobStrategy, JobStrategy};
use super::pod::{PodStrategy, PodTemplateStrategy};
use crate::util::{Cases, causes, expect};

/// A minimal valid container.
fn container() -> Value {
    json!({"name": "app", "image": "nginx:1.27"})
}

/// A pod with the given spec, named and namespaced.
fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": spec})
}

/// A pod template with labels `app: x`.
fn template(spec: Value) -> Value {
    json!({"metadata": {"labels": {"app": "x"}}, "spec": spec})
}

/// A controller object of `kind` with the given spec.
fn controller(spec: Value) -> Value {
    json!({"metadata": {"name": "c", "namespace": "default", "uid": "u1"}, "spec": spec})
}

/// Defaults (prepare_for_create), then validation, as the registry runs them.
fn create_causes(strategy: &dyn Strategy, mut object: Value) -> Vec<(String, String, String)> {
    strategy.prepare_for_create(&mut object);
    causes(&strategy.validate(&object))
}

#[test]
fn pod_defaults() {
    let mut object = pod(json!({"containers": [
        {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}],
         "livenessProbe": {"httpGet": {"port": 80}},
         "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
         "resources": {"limits": {"cpu": "1"}}},
        {"name": "b", "image": "busybox:1.36", "imagePullPolicy": "Never"},
        {"name": "c", "image": "repo/app@sha256:abc"},
    ], "volumes": [
        {"name": "v1"},
        {"name": "v2", "secret": {"secretName": "s"}},
        {"name": "v3", "configMap": {"name": "c"}},
    ], "serviceAccount": "builder"}));
    PodStrategy.prepare_for_create(&mut object);
    let spec = &object["spec"];
    for (key, want) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
        ("serviceAccountName", json!("builder")),
        ("serviceAccount", json!("builder")),
    ] {
        assert_eq!(spec[key], want, "{key}");
    }
    let a = &spec["containers"][0];
    assert_eq!(a["imagePullPolicy"], "Always");
    assert_eq!(a["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(a["terminationMessagePolicy"], "File");
    assert_eq!(spec["containers"][1]["resources"], json!({}));
    assert_eq!(a["ports"][0]["protocol"], "TCP");
    assert_eq!(
        a["livenessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(a["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(a["resources"]["requests"], json!({"cpu": "1"}));
    assert_eq!(spec["containers"][1]["imagePullPolicy"], "Never");
    assert_eq!(spec["containers"][2]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
    assert_eq!(spec["volumes"][2]["configMap"]["defaultMode"], 420);
    assert_eq!(
        object["status"],
        json!({"phase": "Pending", "qosClass": "Burstable"})
    );
    assert_eq!(object["metadata"]["generation"], 1);
    assert!(PodStrategy.validate(&object).is_empty());
}

#[test]
fn image_pull_policies() {
    for (image, want) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry.local:5000/team/app", "Always"),
        ("registry.local:5000/team/app:v2", "IfNotPresent"),
        ("app@sha256:0123", "IfNotPresent"),
        ("Upper/Case", "IfNotPresent"),
    ] {
        assert_eq!(super::defaults::pull_policy_for(image), want, "{image}");
    }
}

#[test]
fn invalid_pods() {
    let cases: Cases = vec![
        (
            json!({}),
            vec![("spec.containers", "FieldValueRequired", "Required value")],
        ),
        (
            json!({"containers": [{"name": "Bad_Name", "image": ""}]}),
            vec![
                (
                    "spec.containers[0].name",
                    "FieldValueInvalid",
                    "Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ),
                (
                    "spec.containers[0].image",
                    "FieldValueRequired",
                    "Required value",
                ),
            ],
        ),
        (
            json!({"containers": [container(), container()]}),
            vec![(
                "spec.containers[1].name",
                "FieldValueDuplicate",
                "Duplicate value: \"app\"",
            )],
        ),
        (
            json!({"containers": [container()], "restartPolicy": "Sometimes", "dnsPolicy": "Nope"}),
            vec![
                (
                    "spec.restartPolicy",
                    "FieldValueNotSupported",
                    "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                ),
                (
                    "spec.dnsPolicy",
                    "FieldValueNotSupported",
                    "Unsupported value: \"Nope\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
                ),
            ],
        ),
        (
            json!({"containers": [{"name": "app", "image": "nginx", "imagePullPolicy": "Sometimes",
                                   "ports": [{"containerPort": 70000, "protocol": "ICMP"}]}]}),
            vec![
                (
                    "spec.containers[0].ports[0].containerPort",
                    "FieldValueInvalid",
                    "Invalid value: 70000: must be between 1 and 65535, inclusive",
                ),
                (
                    "spec.containers[0].ports[0].protocol",
                    "FieldValueNotSupported",
                    "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
                (
                    "spec.containers[0].imagePullPolicy",
                    "FieldValueNotSupported",
                    "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                ),
            ],
        ),
        (
            json!({"containers": [{"name": "app", "image": "nginx", "volumeMounts": [{"name": "missing", "mountPath": "/data"}]}],
                   "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]}),
            vec![
                (
                    "spec.volumes[1].name",
                    "FieldValueDuplicate",
                    "Duplicate value: \"v\"",
                ),
                (
                    "spec.containers[0].volumeMounts[0].name",
                    "FieldValueNotFound",
                    "Not found: \"missing\"",
                ),
            ],
        ),
        (
            json!({"containers": [container()], "volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]}),
            vec![(
                "spec.volumes[0].hostPath",
                "FieldValueForbidden",
                "Forbidden: may not specify more than 1 volume type",
            )],
        ),
        (
            json!({"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}),
            vec![(
                "spec.containers[0].resources.requests",
                "FieldValueInvalid",
                "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            )],
        ),
        (
            json!({"containers": [{"name": "app", "image": " nginx"}]}),
            vec![(
                "spec.containers[0].image",
                "FieldValueInvalid",
                "Invalid value: \" nginx\": must not have leading or trailing whitespace",
            )],
        ),
        (
            json!({"containers": [{"name": "app", "image": "nginx", "env": [{"name": "A=B"}, {"name": "X", "valueFrom": {}}]}]}),
            vec![
                (
                    "spec.containers[0].env[0].name",
                    "FieldValueInvalid",
                    "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                ),
                (
                    "spec.containers[0].env[1].valueFrom",
                    "FieldValueInvalid",
                    "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ),
            ],
        ),
        (
            json!({"containers": [container()], "activeDeadlineSeconds": 0,
                   "tolerations": [{"operator": "Equal", "value": "x"}]}),
            vec![
                (
                    "spec.activeDeadlineSeconds",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be between 1 and 2147483647, inclusive",
                ),
                (
                    "spec.tolerations[0].operator",
                    "FieldValueInvalid",
                    "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                ),
            ],
        ),
        (
            json!({"containers": [{"name": "app", "image": "nginx", "livenessProbe": {"successThreshold": 2, "exec": {}}}]}),
            vec![
                (
                    "spec.containers[0].livenessProbe.exec.command",
                    "FieldValueRequired",
                    "Required value",
                ),
                (
                    "spec.containers[0].livenessProbe.successThreshold",
                    "FieldValueInvalid",
                    "Invalid value: 2: must be 1",
                ),
            ],
        ),
        (
            json!({"containers": [container()], "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}),
            vec![(
                "spec.ephemeralContainers",
                "FieldValueForbidden",
                "Forbidden: cannot be set on create",
            )],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            create_causes(&PodStrategy, pod(spec.clone())),
            expect(&want),
            "{spec}"
        );
    }
}

#[test]
fn pod_updates() {
    let mut old = pod(json!({"containers": [container()], "activeDeadlineSeconds": 100}));
    PodStrategy.prepare_for_create(&mut old);
    let update = |change: &dyn Fn(&mut Value)| {
        let mut new = old.clone();
        change(&mut new);
        PodStrategy.prepare_for_update(&mut new, &old);
        (causes(&PodStrategy.validate_update(&new, &old)), new)
    };
    let (errs, new) = update(&|p| p["spec"]["containers"][0]["image"] = json!("nginx:1.28"));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(new["metadata"]["generation"], 2);
    assert_eq!(new["status"], old["status"]);
    let (errs, _) = update(&|p| p["spec"]["restartPolicy"] = json!("Never"));
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].0, "spec");
    assert_eq!(errs[0].1, "FieldValueForbidden");
    assert!(errs[0].2.starts_with("Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"), "{}", errs[0].2);
    assert!(errs[0].2.contains("restartPolicy"));
    let (errs, _) = update(&|p| p["spec"]["activeDeadlineSeconds"] = json!(200));
    assert_eq!(
        errs,
        expect(&[(
            "spec.activeDeadlineSeconds",
            "FieldValueInvalid",
            "Invalid value: 200: must be less than or equal to previous value"
        )])
    );
    let (errs, _) = update(&|p| {
        p["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "b", "image": "b"}));
    });
    assert_eq!(
        errs,
        expect(&[(
            "spec.containers",
            "FieldValueForbidden",
            "Forbidden: pod updates may not add or remove containers"
        )])
    );
    let (errs, new) = update(&|p| p["metadata"]["labels"] = json!({"a": "b"}));
    assert!(errs.is_empty());
    assert_eq!(new["metadata"]["generation"], 1);
    let mut status = old.clone();
    status["status"]["qosClass"] = json!("Guaranteed");
    assert_eq!(
        causes(&PodStrategy.validate_subresource_update(&SubresourceKind::Status, &status, &old)),
        expect(&[(
            "status.qosClass",
            "FieldValueInvalid",
            "Invalid value: \"Guaranteed\": field is immutable"
        )])
    );
}

#[test]
fn pod_field_selectors() {
    let mut object =
        pod(json!({"containers": [container()], "nodeName": "n1", "hostNetwork": true}));
    PodStrategy.prepare_for_create(&mut object);
    let fields = PodStrategy.selectable_fields(&object);
    for (name, value) in [
        ("spec.nodeName", "n1"),
        ("spec.restartPolicy", "Always"),
        ("spec.schedulerName", "default-scheduler"),
        ("spec.hostNetwork", "true"),
        ("status.phase", "Pending"),
        ("status.podIP", ""),
    ] {
        assert!(
            pairs(&fields).contains(&(name, value.to_string())),
            "{name}"
        );
        assert!(PodStrategy.supports_field(name));
    }
    assert!(!PodStrategy.supports_field("spec.containers"));
}

#[test]
fn deployment_defaults_and_validation() {
    let mut object = controller(
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()]}))}),
    );
    DeploymentStrategy.prepare_for_create(&mut object);
    let spec = &object["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let pod_spec = &spec["template"]["spec"];
    assert_eq!(pod_spec["restartPolicy"], "Always");
    assert_eq!(pod_spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod_spec["terminationGracePeriodSeconds"], 30);
    assert!(pod_spec.get("enableServiceLinks").is_none());
    assert_eq!(object["status"], json!({}));
    assert!(DeploymentStrategy.validate(&object).is_empty());

    let cases: Cases = vec![
        (
            json!({"selector": {"matchLabels": {"app": "y"}}, "template": template(json!({"containers": [container()]}))}),
            vec![(
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                "Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
            )],
        ),
        (
            json!({"template": template(json!({}))}),
            vec![
                ("spec.selector", "FieldValueRequired", "Required value"),
                (
                    "spec.template.metadata.labels",
                    "FieldValueInvalid",
                    "Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
                ),
                (
                    "spec.template.spec.containers",
                    "FieldValueRequired",
                    "Required value",
                ),
            ],
        ),
        (
            json!({"replicas": -1, "selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()], "restartPolicy": "Never"})),
                   "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}}),
            vec![
                (
                    "spec.replicas",
                    "FieldValueInvalid",
                    "Invalid value: -1: must be greater than or equal to 0",
                ),
                (
                    "spec.template.spec.restartPolicy",
                    "FieldValueNotSupported",
                    "Unsupported value: \"Never\": supported values: \"Always\"",
                ),
                (
                    "spec.strategy.rollingUpdate.maxUnavailable",
                    "FieldValueInvalid",
                    "Invalid value: 0: may not be 0 when `maxSurge` is 0",
                ),
            ],
        ),
        (
            json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()]})),
                   "progressDeadlineSeconds": 5, "minReadySeconds": 10}),
            vec![(
                "spec.progressDeadlineSeconds",
                "FieldValueInvalid",
                "Invalid value: 5: must be greater than minReadySeconds",
            )],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            create_causes(&DeploymentStrategy, controller(spec.clone())),
            expect(&want),
            "{spec}"
        );
    }

    let mut recreate = controller(
        json!({"selector": {"matchLabels": {"app": "x"}}, "strategy": {"type": "Blue"},
        "template": template(json!({"containers": [container()]}))}),
    );
    DeploymentStrategy.prepare_for_create(&mut recreate);
    assert_eq!(
        causes(&DeploymentStrategy.validate(&recreate)),
        expect(&[(
            "spec.strategy",
            "FieldValueNotSupported",
            "Unsupported value: {\"Type\":\"Blue\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""
        )])
    );
    let mut new = object.clone();
    new["spec"]["selector"] = json!({"matchLabels": {"app": "x", "tier": "web"}});
    new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("web");
    DeploymentStrategy.prepare_for_update(&mut new, &object);
    assert_eq!(new["metadata"]["generation"], 2);
    assert_eq!(
        causes(&DeploymentStrategy.validate_update(&new, &object)),
        expect(&[(
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: {\"matchLabels\":{\"app\":\"x\",\"tier\":\"web\"}}: field is immutable"
        )])
    );
    let mut annotated = object.clone();
    annotated["metadata"]["annotations"] = json!({"a": "b"});
    DeploymentStrategy.prepare_for_update(&mut annotated, &object);
    assert_eq!(annotated["metadata"]["generation"], 2);
}

#[test]
fn replica_sets_and_controllers() {
    let mut rs = controller(
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()]}))}),
    );
    ReplicaSetStrategy.prepare_for_create(&mut rs);
    assert_eq!(rs["spec"]["replicas"], 1);
    assert!(ReplicaSetStrategy.validate(&rs).is_empty());
    assert_eq!(
        pairs(&ReplicaSetStrategy.selectable_fields(&rs)),
        vec![("status.replicas", "0".to_string())]
    );
    assert_eq!(
        create_causes(
            &ReplicaSetStrategy,
            controller(
                json!({"selector": {}, "template": template(json!({"containers": [container()]}))})
            )
        ),
        expect(&[(
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: {}: empty selector is invalid for deployment"
        )])
    );

    let mut rc = controller(json!({"template": template(json!({"containers": [container()]}))}));
    ReplicationControllerStrategy.prepare_for_create(&mut rc);
    assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "x"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    assert!(ReplicationControllerStrategy.validate(&rc).is_empty());
    assert_eq!(
        create_causes(
            &ReplicationControllerStrategy,
            controller(
                json!({"selector": {"app": "y"}, "template": template(json!({"containers": [container()], "activeDeadlineSeconds": 5}))})
            )
        ),
        expect(&[
            (
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                "Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"
            ),
            (
                "spec.template.spec.activeDeadlineSeconds",
                "FieldValueForbidden",
                "Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"
            ),
        ])
    );
}

#[test]
fn stateful_sets() {
    let mut object = controller(json!({"serviceName": "s",
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}], "selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [{"name": "db", "image": "postgres", "volumeMounts": [{"name": "data", "mountPath": "/var/lib/data"}]}]}))}));
    StatefulSetStrategy.prepare_for_create(&mut object);
    let spec = &object["spec"];
    assert_eq!(spec["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["revisionHistoryLimit"], 10);
    let claim = &spec["volumeClaimTemplates"][0];
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    assert!(StatefulSetStrategy.validate(&object).is_empty());
    assert_eq!(
        create_causes(
            &StatefulSetStrategy,
            controller(
                json!({"podManagementPolicy": "Random", "selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()]}))})
            )
        ),
        expect(&[(
            "spec.podManagementPolicy",
            "FieldValueInvalid",
            "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
        )])
    );
    let mut new = object.clone();
    new["spec"]["serviceName"] = json!("other");
    new["spec"]["replicas"] = json!(3);
    StatefulSetStrategy.prepare_for_update(&mut new, &object);
    assert_eq!(
        causes(&StatefulSetStrategy.validate_update(&new, &object)),
        expect(&[(
            "spec",
            "FieldValueForbidden",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        )])
    );
    assert!(!(StatefulSetStrategy.name_validator())("db.v1", false).is_empty());
    assert!((StatefulSetStrategy.name_validator())("db-v1", false).is_empty());
    let mut scaled = object.clone();
    scaled["spec"]["replicas"] = json!(3);
    assert!(
        StatefulSetStrategy
            .validate_update(&scaled, &object)
            .is_empty()
    );
}

#[test]
fn daemon_sets() {
    let mut object = controller(
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()]}))}),
    );
    DaemonSetStrategy.prepare_for_create(&mut object);
    assert_eq!(
        object["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(object["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        object["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );
    assert!(DaemonSetStrategy.validate(&object).is_empty());
    let mut new = object.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    DaemonSetStrategy.prepare_for_update(&mut new, &object);
    assert_eq!(
        new["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "2"
    );
    assert_eq!(new["metadata"]["generation"], 2);
    assert_eq!(
        create_causes(
            &DaemonSetStrategy,
            controller(
                json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(json!({"containers": [container()]})),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}})
            )
        ),
        expect(&[(
            "spec.updateStrategy.rollingUpdate.maxSurge",
            "FieldValueInvalid",
            "Invalid value: 1: may not be set when maxUnavailable is non-zero"
        )])
    );
}

#[test]
fn jobs() {
    let mut object = controller(
        json!({"template": {"spec": {"containers": [container()], "restartPolicy": "Never"}}}),
    );
    JobStrategy.prepare_for_create(&mut object);
    let spec = &object["spec"];
    for (key, want) in [
        ("completions", json!(1)),
        ("parallelism", json!(1)),
        ("backoffLimit", json!(6)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
        ("manualSelector", json!(false)),
        ("podReplacementPolicy", json!("TerminatingOrFailed")),
        (
            "selector",
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}),
        ),
    ] {
        assert_eq!(spec[key], want, "{key}");
    }
    assert_eq!(
        spec["template"]["metadata"]["labels"],
        json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "c", "controller-uid": "u1", "job-name": "c"})
    );
    assert!(
        JobStrategy.validate(&object).is_empty(),
        "{:?}",
        causes(&JobStrategy.validate(&object))
    );
    assert_eq!(
        pairs(&JobStrategy.selectable_fields(&object)),
        vec![("status.successful", "0".to_string())]
    );

    assert_eq!(
        create_causes(
            &JobStrategy,
            controller(
                json!({"template": {"spec": {"containers": [container()]}}, "parallelism": -1})
            )
        ),
        expect(&[
            (
                "spec.parallelism",
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0"
            ),
            (
                "spec.template.spec.restartPolicy",
                "FieldValueRequired",
                "Required value: valid values: \"OnFailure\", \"Never\""
            ),
        ])
    );

    let mut new = object.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
    JobStrategy.prepare_for_update(&mut new, &object);
    let errs = causes(&JobStrategy.validate_update(&new, &object));
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].0, "spec.template");
    assert!(errs[0].2.ends_with(": field is immutable"));
}

#[test]
fn cron_jobs() {
    let job_template = json!({"spec": {"template": {"spec": {"containers": [container()], "restartPolicy": "OnFailure"}}}});
    let mut object = controller(json!({"schedule": "*/5 * * * *", "jobTemplate": job_template}));
    CronJobStrategy.prepare_for_create(&mut object);
    let spec = &object["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    assert_eq!(
        spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
    assert!(spec["jobTemplate"]["spec"].get("backoffLimit").is_none());
    assert!(CronJobStrategy.validate(&object).is_empty());

    assert_eq!(
        create_causes(
            &CronJobStrategy,
            controller(
                json!({"schedule": "61 * * * *", "concurrencyPolicy": "Sometimes", "jobTemplate": job_template})
            )
        ),
        expect(&[
            (
                "spec.schedule",
                "FieldValueInvalid",
                "Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"
            ),
            (
                "spec.concurrencyPolicy",
                "FieldValueNotSupported",
                "Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""
            ),
        ])
    );
    assert_eq!(
        create_causes(
            &CronJobStrategy,
            controller(json!({"jobTemplate": job_template}))
        ),
        expect(&[("spec.schedule", "FieldValueRequired", "Required value")])
    );
}

#[test]
fn templates_and_revisions() {
    let mut object = json!({"metadata": {"name": "t"}, "template": template(json!({"containers": [container()]}))});
    PodTemplateStrategy.prepare_for_create(&mut object);
    assert_eq!(object["template"]["spec"]["restartPolicy"], "Always");
    assert!(PodTemplateStrategy.validate(&object).is_empty());
    let invalid = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"a": "-"}}, "spec": {"containers": [container()]}}});
    assert_eq!(
        create_causes(&PodTemplateStrategy, invalid)[0].0,
        "template.labels"
    );

    let revision = json!({"metadata": {"name": "r"}, "revision": -1});
    assert_eq!(
        causes(&ControllerRevisionStrategy.validate(&revision)),
        expect(&[
            (
                "data",
                "FieldValueRequired",
                "Required value: data is mandatory"
            ),
            (
                "revision",
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0"
            ),
        ])
    );
    let old = json!({"metadata": {"name": "r"}, "revision": 1, "data": {"a": 1}});
    let new = json!({"metadata": {"name": "r"}, "revision": 1, "data": {"a": 2}});
    assert_eq!(
        causes(&ControllerRevisionStrategy.validate_update(&new, &old)),
        expect(&[(
            "data",
            "FieldValueInvalid",
            "Invalid value: {\"a\":2}: field is immutable"
        )])
    );
}

#[test]
fn every_kind_has_strategies() {
    for (group, kind) in [
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "ReplicationController"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
    ] {
        let strategies = super::strategies(group, kind).expect(kind);
        assert!(strategies.table.is_some());
    }
    assert!(super::strategies("", "Service").is_none());
}

/// CronJob time zones validate as kube-apiserver's (Go's `time.LoadLocation` with the
/// embedded time/tzdata): the bundled database alone knows the IANA names, exactly as
/// spelled, so a machine without /usr/share/zoneinfo validates the same.
#[test]
fn time_zones_without_a_system_database() {
    for zone in [
        "America/New_York",
        "Europe/Warsaw",
        "Asia/Kolkata",
        "Etc/GMT+5",
    ] {
        assert!(super::batch::bundled_time_zone(zone), "{zone}");
        assert!(super::batch::known_time_zone(zone), "{zone}");
    }
    for zone in [
        "america/new_york",
        "Mars/Olympus_Mons",
        "zone.tab",
        "Europe",
    ] {
        assert!(!super::batch::bundled_time_zone(zone), "{zone}");
        assert!(!super::batch::known_time_zone(zone), "{zone}");
    }
}
