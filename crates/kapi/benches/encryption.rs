//! The cost of encryption at rest per provider (none, aescbc, aesgcm, secretbox, KMS v2):
//! the transformer alone on a Secret's stored value (what each write, and each read from
//! storage, adds), then Secret creates and GETs through a server encrypting Secrets.
//!
//! `cargo bench -p kapi --bench encryption`
//!
//! The server runs in this process on the embedded store, the client on this thread (its
//! CPU left out of the server's); the KMS v2 plugin is kapi-testing's, on its own runtime.

use std::path::Path;
use std::time::Instant;

use k8s_openapi::api::core::v1::Secret;
use kapi_server::encryption::{EncryptionConfig, Metrics};
use kapi_testing::kms::KmsPlugin;
use kube::api::{Api, PostParams};
use serde_json::json;

mod common;
use common::{CONCURRENCY, server_cpu};

const TRANSFORMS: usize = 20_000;
const CREATES: usize = 3_000;
const GETS: usize = 20_000;
const NAMESPACE: &str = "bench";
const KEY: &str = "/registry/secrets/bench/s-1";

/// The providers measured, as the `providers:` of a configuration encrypting Secrets.
fn providers(kms_endpoint: &str) -> [(&'static str, String); 5] {
    let key32 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let keys = |provider: &str| {
        format!("  - {provider}:\n      keys:\n      - name: key1\n        secret: {key32}\n")
    };
    [
        ("identity", "  - identity: {}\n".to_string()),
        ("aescbc", keys("aescbc")),
        ("aesgcm", keys("aesgcm")),
        ("secretbox", keys("secretbox")),
        (
            "kms v2",
            format!(
                "  - kms:\n      apiVersion: v2\n      name: bench\n      endpoint: {kms_endpoint}\n"
            ),
        ),
    ]
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The plugin serves from its own runtime for the whole run.
    let plugin_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("plugin runtime");
    let plugin =
        plugin_runtime.block_on(async { KmsPlugin::start(&dir.path().join("kms.sock"), "1") });
    let value = serde_json::to_vec(&secret("s-1")).expect("JSON");
    println!("Secret value: {} B of JSON", value.len());
    println!(
        "| provider | to_storage per value | from_storage per value | creates, concurrency {CONCURRENCY} | server CPU per create | server CPU per GET |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, providers) in providers(&plugin.endpoint()) {
        let config = dir.path().join(format!("{}.yaml", name.replace(' ', "-")));
        std::fs::write(
            &config,
            format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"),
        )
        .expect("write the configuration");
        let (write, read) = plugin_runtime.block_on(transforms(&config, &value));
        let flag = format!("--encryption-provider-config={}", config.display());
        common::with_server_flags(&[&flag], |kubeconfig, _| async move {
            let client = common::client(&kubeconfig).await;
            common::create_namespace(&client, NAMESPACE).await;
            let (creates, per_create) = create_secrets(&client).await;
            let per_get = get_secrets(&client).await;
            println!(
                "| {name} | {write:.2} µs | {read:.2} µs | {creates} | {per_create:.0} µs | {per_get:.0} µs |"
            );
        });
    }
    drop(plugin);
}

/// A Secret of about 1 KiB.
fn secret(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "type": "Opaque",
        "data": {"token": "dG9rZW4tdmFsdWUt".repeat(48), "ca.crt": "Y2VydGlmaWNhdGUh".repeat(16)}
    })
}

/// Microseconds per value to write and to read a value with the configuration at `path`.
async fn transforms(path: &Path, value: &[u8]) -> (f64, f64) {
    let config = EncryptionConfig::load(path, false, &Metrics::default())
        .await
        .expect("the configuration loads");
    let transformer = config.transformer("", "secrets");
    let started = Instant::now();
    let mut stored = Vec::new();
    for _ in 0..TRANSFORMS {
        stored = transformer.to_storage(value, KEY).expect("to storage");
    }
    let write = started.elapsed().as_secs_f64() * 1e6 / TRANSFORMS as f64;
    let started = Instant::now();
    for _ in 0..TRANSFORMS {
        let read = transformer
            .from_storage(&stored, KEY)
            .await
            .expect("from storage");
        assert_eq!(read.data, value);
    }
    let read = started.elapsed().as_secs_f64() * 1e6 / TRANSFORMS as f64;
    (write, read)
}

/// [`CREATES`] Secret creates: the report line and the server CPU per create in µs.
async fn create_secrets(client: &kube::Client) -> (String, f64) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let cpu = server_cpu();
    let report = common::creates(CREATES, |i| {
        let secrets = secrets.clone();
        async move {
            let object = serde_json::from_value(secret(&format!("s-{i}"))).expect("secret");
            secrets
                .create(&PostParams::default(), &object)
                .await
                .map(drop)
        }
    })
    .await;
    (report, (server_cpu() - cpu) * 1e6 / CREATES as f64)
}

/// [`GETS`] Secret GETs at [`CONCURRENCY`]: the server CPU per GET in µs.
async fn get_secrets(client: &kube::Client) -> f64 {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let cpu = server_cpu();
    let report = common::creates(GETS, |i| {
        let secrets = secrets.clone();
        async move { secrets.get(&format!("s-{}", i % CREATES)).await.map(drop) }
    })
    .await;
    assert!(!report.contains("errors"), "{report}");
    (server_cpu() - cpu) * 1e6 / GETS as f64
}
