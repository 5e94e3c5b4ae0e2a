//! The in-process controllers at scale: a namespace holding 10,000 objects of five kinds
//! deleted (the time until it is gone), 10,000 dependents of one owner collected once the
//! owner is deleted (the time until the last is gone), and the memory they cost the process
//! while they exist (RSS growth per dependent).
//!
//! `cargo bench -p kapi --bench controllers`, and again with `KAPI_BENCH_NO_GC=1` (the server
//! without its garbage collector, `--controllers=*,-garbage-collector-controller`): the
//! difference between the two runs' growth per dependent is what the collector's graph and
//! monitors cost per object. The collection itself is not measured without the collector.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

mod common;

/// Objects of each kind in the deleted namespace.
const PER_KIND: usize = 2_000;
/// Dependents of the one owner.
const DEPENDENTS: usize = 10_000;
/// Set to run without the garbage collector.
const NO_GC: &str = "KAPI_BENCH_NO_GC";

fn main() {
    if std::env::var_os(NO_GC).is_some() {
        let flags = ["--controllers=*,-garbage-collector-controller"];
        common::with_server_flags(&flags, |kubeconfig, _| run(kubeconfig, true));
    } else {
        common::with_server(|kubeconfig, _| run(kubeconfig, false));
    }
}

async fn run(kubeconfig: std::path::PathBuf, without_collector: bool) {
    let client = common::client(&kubeconfig).await;
    common::start_report(&client, "doomed").await;
    // The dependents first, so that their memory is measured in a process nothing else has
    // grown and shrunk yet.
    dependents(&client, without_collector).await;
    namespace_deletion(&client).await;
}

/// Fills namespace `doomed` with [`PER_KIND`] objects of each of five kinds, deletes it and
/// waits until it is gone.
async fn namespace_deletion(client: &kube::Client) {
    let kinds = [
        ("", "v1", "ConfigMap", json!({"data": {"key": "value"}})),
        ("", "v1", "Secret", json!({"stringData": {"key": "value"}})),
        ("", "v1", "ServiceAccount", json!({})),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        ),
        (
            "",
            "v1",
            "PodTemplate",
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}),
        ),
    ];
    for (group, version, kind, body) in kinds {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "doomed", &resource);
        let line = common::creates(PER_KIND, |i| {
            let api = api.clone();
            let mut object = body.clone();
            object["apiVersion"] = resource.api_version.clone().into();
            object["kind"] = kind.into();
            object["metadata"] = json!({"name": format!("{}-{i}", kind.to_lowercase())});
            async move {
                let object: DynamicObject = serde_json::from_value(object).expect("object");
                api.create(&PostParams::default(), &object).await.map(drop)
            }
        })
        .await;
        println!(
            "| {PER_KIND} {kind} creates in the namespace, concurrency {} | {line} |",
            common::CONCURRENCY
        );
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let started = Instant::now();
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("delete the namespace");
    while namespaces.get_opt("doomed").await.expect("get").is_some() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "| deleting the namespace holding {} objects of 5 kinds, until it is gone (upstream's 5 s wait included) | {:.1} s |",
        5 * PER_KIND,
        started.elapsed().as_secs_f64()
    );
}

/// Creates [`DEPENDENTS`] ConfigMaps owned by one, reports the memory they cost, deletes the
/// owner and (with the collector) waits until the last dependent is gone.
async fn dependents(client: &kube::Client, without_collector: bool) {
    common::create_namespace(client, "owned").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "owned");
    let owner: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "owner"}})).expect("owner");
    let owner = config_maps
        .create(&PostParams::default(), &owner)
        .await
        .expect("create the owner");
    let uid = owner.metadata.uid.expect("uid");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = rss_kib();
    let line = common::creates(DEPENDENTS, |i| {
        let config_maps = config_maps.clone();
        let dependent = json!({"metadata": {"name": format!("dependent-{i}"),
            "labels": {"bench": "dependent"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": uid, "blockOwnerDeletion": true}]},
            "data": {"key": "value"}});
        async move {
            let dependent: ConfigMap = serde_json::from_value(dependent).expect("dependent");
            config_maps
                .create(&PostParams::default(), &dependent)
                .await
                .map(drop)
        }
    })
    .await;
    println!(
        "| {DEPENDENTS} dependents of one owner created, concurrency {} | {line} |",
        common::CONCURRENCY
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib();
    let collector = if without_collector { "off" } else { "on" };
    println!(
        "| process RSS growth with {DEPENDENTS} dependents stored (collector {collector}) | {} KiB, {:.0} bytes per dependent |",
        after - before,
        (after - before) as f64 * 1024.0 / DEPENDENTS as f64
    );
    if without_collector {
        return;
    }
    let started = Instant::now();
    config_maps
        .delete("owner", &DeleteParams::background())
        .await
        .expect("delete the owner");
    // The namespace's own kube-root-ca.crt stays.
    let remaining = ListParams::default().labels("bench=dependent").limit(1);
    loop {
        let list = config_maps.list_metadata(&remaining).await.expect("list");
        if list.items.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "| collecting the {DEPENDENTS} dependents after their owner's deletion, until the last is gone | {:.1} s |",
        started.elapsed().as_secs_f64()
    );
}

/// This process's resident set, KiB.
fn rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
