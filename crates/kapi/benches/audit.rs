//! Audit benchmark: what auditing costs per request. ConfigMap creates at concurrency 32 by
//! the admin, on a server without auditing, then on servers whose audit policy records every
//! request at the Metadata level (log in the default `blocking` mode, then in `batch` mode)
//! and at the RequestResponse level (`blocking`), to a log file.
//!
//! `cargo bench -p kapi --bench audit`
//!
//! As the builtin benchmark: each server runs in this process on its own multi-threaded
//! runtime, the kube-rs client on a single-threaded one.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

mod common;
use common::creates;

const CREATES: usize = 10_000;
const NAMESPACE: &str = "bench";

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    common::with_server(|kubeconfig, _| async move {
        let admin = common::client(&kubeconfig).await;
        common::start_report(&admin, NAMESPACE).await;
        let report = configmap_creates(admin).await;
        println!("| ConfigMap creates without auditing | {report} |");
    });
    for (level, mode) in [
        ("Metadata", "blocking"),
        ("Metadata", "batch"),
        ("RequestResponse", "blocking"),
    ] {
        let policy = dir.path().join(format!("{level}.yaml"));
        let policy_text =
            format!("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: {level}\n");
        std::fs::write(&policy, policy_text).expect("write the policy");
        let log = dir.path().join(format!("{level}-{mode}.log"));
        let flags = [
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
            format!("--audit-log-mode={mode}"),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        run(
            &flags,
            &format!("the same, every request audited at {level} to a log file, {mode} mode"),
        );
        let size = std::fs::metadata(&log).map_or(0, |m| m.len());
        println!(
            "| audit log written at {level}, {mode} mode | {:.1} MiB |",
            size as f64 / 1048576.0
        );
    }
}

/// One server with `flags`: the report row of its creates.
fn run(flags: &[&str], label: &str) {
    common::with_server_flags(flags, |kubeconfig, _| async move {
        let admin = common::client(&kubeconfig).await;
        common::create_namespace(&admin, NAMESPACE).await;
        let report = configmap_creates(admin).await;
        println!("| {label} | {report} |");
    });
}

/// [`CREATES`] ConfigMap creates: the report line.
async fn configmap_creates(admin: kube::Client) -> String {
    let configmaps: Api<ConfigMap> = Api::namespaced(admin, NAMESPACE);
    creates(CREATES, |i| {
        let configmaps = configmaps.clone();
        let object = json!({"metadata": {"name": format!("c-{i}")}, "data": {"k": "v"}});
        async move {
            let object: ConfigMap = serde_json::from_value(object).expect("configmap");
            configmaps
                .create(&PostParams::default(), &object)
                .await
                .map(drop)
        }
    })
    .await
}
