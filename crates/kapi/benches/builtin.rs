//! Built-in API benchmark: realistic Pods (about 4 KiB) and Deployments created at
//! concurrency 32 with validation and defaulting on, and server-side apply updates/s.
//!
//! `cargo bench -p kapi --bench builtin`
//!
//! A kapi server on the embedded store runs in this process (its own multi-threaded runtime,
//! as the binary runs it); the client is kube-rs on a separate single-threaded runtime, so both
//! share the machine as a real client and server on one host do.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};

mod common;
use common::{CONCURRENCY, creates};
use serde_json::{Value, json};

const PODS: usize = 5_000;
const DEPLOYMENTS: usize = 5_000;
const APPLY_OBJECTS: usize = 100;
const APPLIES: usize = 5_000;
const NAMESPACE: &str = "bench";

fn main() {
    common::with_server(|kubeconfig, _| async move {
        let client = common::client(&kubeconfig).await;
        common::start_report(&client, NAMESPACE).await;
        let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
        let size = serde_json::to_vec(&pod("sample")).expect("json").len();
        let report = creates(PODS, |i| {
            let pods = pods.clone();
            async move {
                let pod = serde_json::from_value(pod(&format!("pod-{i}"))).expect("pod");
                pods.create(&PostParams::default(), &pod).await.map(drop)
            }
        })
        .await;
        println!("| Pod creates ({size} B each), concurrency {CONCURRENCY} | {report} |");
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
        let size = serde_json::to_vec(&deployment("sample", 1))
            .expect("json")
            .len();
        let report = creates(DEPLOYMENTS, |i| {
            let deployments = deployments.clone();
            async move {
                let object = serde_json::from_value(deployment(&format!("deploy-{i}"), 1))
                    .expect("deployment");
                deployments
                    .create(&PostParams::default(), &object)
                    .await
                    .map(drop)
            }
        })
        .await;
        println!("| Deployment creates ({size} B each), concurrency {CONCURRENCY} | {report} |");
        let report = applies(&deployments).await;
        println!(
            "| server-side apply updates of {APPLY_OBJECTS} Deployments, concurrency {CONCURRENCY} | {report} |"
        );
    });
}

/// Server-side apply: [`APPLY_OBJECTS`] Deployments created by apply, then [`APPLIES`] applies
/// each changing one Deployment's replicas and an annotation (timed).
async fn applies(deployments: &Api<Deployment>) -> String {
    let params = Arc::new(PatchParams::apply("bench").force());
    for i in 0..APPLY_OBJECTS {
        let name = format!("apply-{i}");
        deployments
            .patch(&name, &params, &Patch::Apply(deployment(&name, 1)))
            .await
            .expect("first apply");
    }
    creates(APPLIES, |i| {
        let deployments = deployments.clone();
        let params = params.clone();
        async move {
            let name = format!("apply-{}", i % APPLY_OBJECTS);
            let mut config = deployment(&name, (i % 5) as i64 + 1);
            config["metadata"]["annotations"] = json!({"bench/revision": i.to_string()});
            deployments
                .patch(&name, &params, &Patch::Apply(config))
                .await
                .map(drop)
        }
    })
    .await
}

/// A Deployment as users write them: two containers, probes, resources, env, volumes.
fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name, "tier": "backend"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "backend"}},
                "spec": pod_spec(),
            },
        },
    })
}

/// A Pod of about 4 KiB.
fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": "web", "tier": "frontend", "release": "2026.11", "team": "platform",
                "pod-template-hash": "7d9f8b6c5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7d9f8b6c5d", "uid": "6f1c3a52-1d0e-4c1b-9a57-2f3e8d4b7c10",
                "controller": true, "blockOwnerDeletion": true}],
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "kubectl.kubernetes.io/default-container": "web",
                "example.com/owner": "platform-team@example.com",
                "example.com/description": "A benchmark pod shaped like a typical web workload with a sidecar, probes, resources and volumes.",
            },
        },
        "spec": pod_spec(),
    })
}

fn pod_spec() -> Value {
    let mut env: Vec<Value> = (0..12)
        .map(|i| json!({"name": format!("SETTING_{i}"), "value": format!("value-of-setting-number-{i}")}))
        .collect();
    env.extend([
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}),
        json!({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "web-db", "key": "password"}}}),
    ]);
    json!({
        "serviceAccountName": "default",
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000},
        "containers": [
            {
                "name": "web",
                "image": "registry.example.com/team/web:1.27.3",
                "args": ["--port=8080", "--metrics-port=9090", "--log-level=info"],
                "ports": [
                    {"name": "http", "containerPort": 8080},
                    {"name": "metrics", "containerPort": 9090},
                ],
                "env": env,
                "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"},
                },
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
                "startupProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "failureThreshold": 30},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10},
                "volumeMounts": [
                    {"name": "config", "mountPath": "/etc/web"},
                    {"name": "cache", "mountPath": "/var/cache/web"},
                ],
            },
            {
                "name": "log-shipper",
                "image": "registry.example.com/team/log-shipper:3.1.0",
                "args": ["--input=/var/log/web", "--output=collector.logging.svc:24224"],
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"cpu": "200m", "memory": "128Mi"},
                },
                "volumeMounts": [{"name": "logs", "mountPath": "/var/log/web"}],
            },
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": "web-config"}},
            {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "logs", "emptyDir": {}},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
        ],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
    })
}
