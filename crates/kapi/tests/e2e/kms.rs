//! KMS v2 encryption at rest with a real plugin process (kapi-testing's, served over gRPC on
//! a Unix socket), on etcd, checked against an independent reading of the format (ring's
//! HKDF and AES-GCM, k8s-pb's Secret): kapi's values are kube-apiserver's, kube-apiserver's
//! recorded values are served, decrypted seeds are cached (one Decrypt per seed, not per
//! value), a new key ID at the plugin is followed, and a plugin that dies fails `/readyz`
//! while reads and writes go on. Then the configuration file reloaded while kapi runs.

use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http::Method;
use k8s_pb::api::core::v1::Secret;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use kapi_storage::{EtcdConfig, EtcdStore, Store};
use kapi_testing::kms::{ANNOTATION, KmsPlugin};
use prost::Message;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use serde_json::json;

use crate::common::process::{Client, DEADLINE, Kapi};
use crate::common::{self, Backend};

/// kube-apiserver's stored KMS v2 envelope, read with a message of the test's own.
#[derive(Clone, PartialEq, prost::Message)]
struct Envelope {
    #[prost(bytes = "vec", tag = "1")]
    encrypted_data: Vec<u8>,
    #[prost(string, tag = "2")]
    key_id: String,
    #[prost(bytes = "vec", tag = "3")]
    encrypted_dek_source: Vec<u8>,
    #[prost(btree_map = "string, bytes", tag = "4")]
    annotations: std::collections::BTreeMap<String, Vec<u8>>,
    #[prost(int32, tag = "5")]
    encrypted_dek_source_type: i32,
}

const PREFIX: &[u8] = b"k8s:enc:kms:v2:kms-provider:";
/// The etcd prefix of upstream's recorded values.
const UPSTREAM_PREFIX: &str = "/43da1478-5e9c-4ef3-a92a-2b19d540c8a5/registry";

/// kube-apiserver 1.27's and 1.28's values, recorded by upstream's
/// `testKMSv2ProviderLegacyData` (docs/research/encryption.md §6.2): a plain DEK and a seed.
const LEGACY: [(&str, &str); 2] = [
    (
        "dek-source-aes-gcm-key",
        include_str!("../../../../docs/research/encryption-kat/dek-source-aes-gcm-key.value.hex"),
    ),
    (
        "dek-source-hkdf-sha256-xnonce-aes-gcm-seed",
        include_str!(
            "../../../../docs/research/encryption-kat/dek-source-hkdf-sha256-xnonce-aes-gcm-seed.value.hex"
        ),
    ),
];

fn hex(text: &str) -> Vec<u8> {
    let text = text.trim();
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// A configuration encrypting Secrets with the plugin, reading plaintext too.
fn config(endpoint: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: kms-provider\n      endpoint: {endpoint}\n      timeout: 3s\n  - identity: {{}}\n"
    )
}

/// A stored value's envelope.
fn envelope(value: &[u8]) -> Envelope {
    let rest = value
        .strip_prefix(PREFIX)
        .unwrap_or_else(|| panic!("not KMS v2: {:?}", String::from_utf8_lossy(value)));
    Envelope::decode(rest).expect("an EncryptedObject")
}

/// The Secret in a value kapi wrote, opened independently: the test plugin's DEK source is
/// the base64 of the seed; the data key is HKDF-SHA256-Expand(seed, info).
fn open(etcd_key: &str, value: &[u8]) -> Secret {
    let envelope = envelope(value);
    assert_eq!(envelope.encrypted_dek_source_type, 1, "a seed");
    let seed = base64::engine::general_purpose::STANDARD
        .decode(&envelope.encrypted_dek_source)
        .unwrap();
    let (info, rest) = envelope.encrypted_data.split_at(32);
    let (nonce, sealed) = rest.split_at(12);
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &seed);
    let info = [info];
    let key: UnboundKey = prk.expand(&info, &AES_256_GCM).unwrap().into();
    let mut sealed = sealed.to_vec();
    let plain = LessSafeKey::new(key)
        .open_in_place(
            Nonce::try_assume_unique_for_key(nonce).unwrap(),
            Aad::from(etcd_key.as_bytes()),
            &mut sealed,
        )
        .expect("ring opens kapi's value");
    let unknown = Unknown::decode(&plain[4..]).expect("an Unknown");
    Secret::decode(unknown.raw.unwrap_or_default().as_slice()).expect("a Secret")
}

/// Polls `condition` until it holds, failing after `deadline`.
async fn eventually<F: AsyncFn() -> bool>(what: &str, deadline: Duration, condition: F) {
    let started = Instant::now();
    while !condition().await {
        assert!(started.elapsed() < deadline, "{what} did not happen");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn metrics(admin: &Client) -> String {
    admin.get("/metrics").await.body
}

/// The value of the sample of `metric` whose labels include every one of `labels`.
fn sample(metrics: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    metrics
        .lines()
        .filter(|line| line.starts_with(metric) && labels.iter().all(|l| line.contains(l)))
        .find_map(|line| line.rsplit(' ').next()?.parse().ok())
}

fn key_id_hash(key_id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, key_id.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_enveloped_by_a_kms_v2_plugin_as_kube_apiserver_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut plugin = KmsPlugin::start(&dir.path().join("kms.sock"), "1");
    let config_path = dir.path().join("encryption.yaml");
    std::fs::write(&config_path, config(&plugin.endpoint())).unwrap();
    let flags = [
        format!("--encryption-provider-config={}", config_path.display()),
        format!("--etcd-prefix={UPSTREAM_PREFIX}"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut kapi = Kapi::start(Backend::Etcd, &flags).await;
    let admin = kapi.admin();
    let store = EtcdStore::connect(EtcdConfig::new(kapi.etcd().unwrap().endpoints()))
        .await
        .unwrap();
    let raw = async |key: &str| store.get(key, None).await.unwrap().kv.unwrap().value;

    // The plugin's health is on /readyz and /healthz, not /livez.
    let readyz = admin.get("/readyz?verbose").await.body;
    assert!(readyz.contains("[+]kms-providers ok"), "{readyz}");
    assert!(
        admin
            .get("/healthz?verbose")
            .await
            .body
            .contains("[+]kms-providers ok")
    );
    assert!(
        !admin
            .get("/livez?verbose")
            .await
            .body
            .contains("kms-providers")
    );

    // kapi's value: the envelope of a seed the plugin encrypted, the data opened by ring.
    let secrets = "/api/v1/namespaces/default/secrets";
    let secret = |name: &str| json!({"metadata": {"name": name}, "stringData": {"password": name}});
    admin.create(secrets, secret("by-kapi")).await;
    let by_kapi = format!("{UPSTREAM_PREFIX}/secrets/default/by-kapi");
    let value = raw(&by_kapi).await;
    let stored = envelope(&value);
    assert_eq!(stored.key_id, "1");
    assert_eq!(stored.annotations[ANNOTATION], b"encrypted-local-kek");
    assert_eq!(open(&by_kapi, &value).data["password"], b"by-kapi");
    for i in 0..10 {
        admin.create(secrets, secret(&format!("s{i}"))).await;
    }
    // Its own writes never ask the plugin to decrypt.
    assert_eq!(plugin.calls("Decrypt"), 0);

    // kube-apiserver's recorded values, a plain DEK's and a seed's, are served.
    admin
        .create(
            "/api/v1/namespaces",
            json!({"metadata": {"name": "kms-v2-legacy-data"}}),
        )
        .await;
    for (name, value) in LEGACY {
        let key = format!("{UPSTREAM_PREFIX}/secrets/kms-v2-legacy-data/{name}");
        store.create(&key, Bytes::from(hex(value))).await.unwrap();
        let path = format!("/api/v1/namespaces/kms-v2-legacy-data/secrets/{name}");
        let served = admin.get(&path).await;
        assert_eq!(served.status, 200, "{}", served.body);
        let api_key = base64::engine::general_purpose::STANDARD
            .encode("086a7ffc-0225-11e8-ba89-0ed5f89f718b");
        assert_eq!(served.json()["data"]["api_key"], api_key.as_str());
    }
    assert_eq!(plugin.calls("Decrypt"), 2);
    // The plain DEK's value is stale: an unchanged update rewrites it with a seed.
    let legacy = "/api/v1/namespaces/kms-v2-legacy-data/secrets/dek-source-aes-gcm-key";
    let object = admin.get(legacy).await.json();
    let replaced = admin.write(Method::PUT, legacy, &object).await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let legacy_key = format!("{UPSTREAM_PREFIX}/secrets/kms-v2-legacy-data/dek-source-aes-gcm-key");
    let rewritten = open(&legacy_key, &raw(&legacy_key).await);
    assert_eq!(
        rewritten.metadata.unwrap().name.as_deref(),
        Some("dek-source-aes-gcm-key")
    );

    // After a restart every value is read again: one Decrypt per seed (kapi's earlier one
    // and the recorded one), not per value.
    let decrypts = plugin.calls("Decrypt");
    kapi.restart().await;
    let admin = kapi.admin();
    let listed = admin.get("/api/v1/secrets").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.json()["items"].as_array().unwrap().len(), 13);
    assert_eq!(plugin.calls("Decrypt") - decrypts, 2);
    let text = metrics(&admin).await;
    assert_eq!(
        sample(
            &text,
            "apiserver_storage_envelope_transformation_cache_misses_total",
            &[]
        ),
        Some(2.0),
        "{text}"
    );
    let hash = key_id_hash("1");
    let read = [
        "transformation_type=\"from_storage\"",
        "provider_name=\"kms-provider\"",
        hash.as_str(),
    ];
    assert!(
        sample(
            &text,
            "apiserver_envelope_encryption_key_id_hash_total",
            &read
        )
        .is_some()
    );
    let status_ok = [
        "method_name=\"/v2.KeyManagementService/Status\"",
        "grpc_status_code=\"OK\"",
    ];
    assert!(
        sample(
            &text,
            "apiserver_envelope_encryption_kms_operations_latency_seconds_count",
            &status_ok
        )
        .is_some(),
        "{text}"
    );

    // A new key ID at the plugin: the next probe makes a new seed; old values still read,
    // stale, and are rewritten under the new key.
    plugin.rotate("2");
    let rotated = key_id_hash("2");
    eventually("the rotation", DEADLINE, async || {
        admin.get("/readyz/kms-providers").await;
        sample(
            &metrics(&admin).await,
            "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds",
            &[rotated.as_str()],
        )
        .is_some()
    })
    .await;
    admin.create(secrets, secret("after-rotation")).await;
    let after = format!("{UPSTREAM_PREFIX}/secrets/default/after-rotation");
    assert_eq!(envelope(&raw(&after).await).key_id, "2");
    let object = admin.get(&format!("{secrets}/by-kapi")).await.json();
    let replaced = admin
        .write(Method::PUT, &format!("{secrets}/by-kapi"), &object)
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(envelope(&raw(&by_kapi).await).key_id, "2");

    // The plugin dies: /readyz fails on it (once its last good answer is 20 s old), /livez
    // does not, and values are still read and written with the seed in hand.
    plugin.pause();
    eventually("readyz failing", DEADLINE, async || {
        admin.get("/readyz").await.status == 500
    })
    .await;
    let readyz = admin.get("/readyz?verbose").await.body;
    assert!(
        readyz.contains("[-]kms-providers failed: reason withheld"),
        "{readyz}"
    );
    assert_eq!(admin.get("/livez").await.status, 200);
    assert_eq!(admin.get(&format!("{secrets}/s3")).await.status, 200);
    admin.create(secrets, secret("while-down")).await;
    plugin.resume();
    eventually("readyz passing", DEADLINE, async || {
        admin.get("/readyz").await.status == 200
    })
    .await;
    kapi.stop().await;
    drop(plugin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_configuration_is_reloaded_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("encryption.yaml");
    let aescbc = "  - aescbc:\n      keys:\n      - name: key1\n        secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
    let aesgcm =
        "  - aesgcm:\n      keys:\n      - name: key2\n        secret: AAECAwQFBgcICQoLDA0ODw==\n";
    let file = |providers: &str| {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"
        )
    };
    std::fs::write(&config_path, file(aescbc)).unwrap();
    let flags = [
        format!("--encryption-provider-config={}", config_path.display()),
        "--encryption-provider-config-automatic-reload".to_string(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let kapi = Kapi::start(Backend::Etcd, &flags).await;
    let admin = kapi.admin();
    let store = EtcdStore::connect(EtcdConfig::new(kapi.etcd().unwrap().endpoints()))
        .await
        .unwrap();
    let raw = async |key: &str| store.get(key, None).await.unwrap().kv.unwrap().value;
    // With reload on, /readyz always has the KMS check (passing without KMS providers).
    assert!(
        admin
            .get("/readyz?verbose")
            .await
            .body
            .contains("[+]kms-providers ok")
    );
    let text = metrics(&admin).await;
    let first = sample(
        &text,
        "apiserver_encryption_config_controller_last_config_info",
        &["hash=\"sha256:"],
    );
    assert_eq!(first, Some(1.0), "{text}");

    let secrets = "/api/v1/namespaces/default/secrets";
    admin
        .create(secrets, json!({"metadata": {"name": "before"}}))
        .await;
    assert!(
        raw("/registry/secrets/default/before")
            .await
            .starts_with(b"k8s:enc:aescbc:v1:key1:")
    );

    // The new file is polled (every minute), checked and used: AES-GCM writes, AES-CBC
    // still reads.
    std::fs::write(&config_path, file(&format!("{aesgcm}{aescbc}"))).unwrap();
    eventually("the reload", Duration::from_secs(90), async || {
        let text = metrics(&admin).await;
        sample(
            &text,
            "apiserver_encryption_config_controller_automatic_reloads_total",
            &["status=\"success\""],
        ) == Some(1.0)
    })
    .await;
    admin
        .create(secrets, json!({"metadata": {"name": "after"}}))
        .await;
    assert!(
        raw("/registry/secrets/default/after")
            .await
            .starts_with(b"k8s:enc:aesgcm:v1:key2:")
    );
    let before = admin.get(&format!("{secrets}/before")).await;
    assert_eq!(before.status, 200, "{}", before.body);
    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let listed = common::kubectl(&kubeconfig, &["get", "secrets", "-o", "name"], None).await;
    assert!(common::stdout(&listed).contains("secret/before"));
    kapi.stop().await;
}
