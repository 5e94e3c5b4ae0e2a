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
use kube::api::{Api, Patch, PatchParams, PostParams};

mod common;
use common::{CONCURRENCY, creates, pod, pod_spec};
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
        let size = serde_json::to_vec(&pod("sample")).expect("json").len();
        let report = common::create_pods(&client, NAMESPACE, PODS).await;
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
