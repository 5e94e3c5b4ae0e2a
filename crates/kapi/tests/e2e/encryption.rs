//! Encryption at rest (`--encryption-provider-config`) on etcd, checked against an
//! independent AES-GCM (ring's) and protobuf (k8s-pb's): kapi's values are what
//! kube-apiserver writes, kube-apiserver's values are served by kapi, a key rotation is
//! finished by `kubectl replace` as upstream documents, and a missing key is named.

use std::collections::BTreeMap;

use bytes::Bytes;
use k8s_pb::api::core::v1::Secret;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use kapi_storage::{EtcdConfig, EtcdStore, Store};
use prost::Message;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use serde_json::json;

use crate::common::process::Kapi;
use crate::common::{self, Backend};

const KEY1: [u8; 32] = [1; 32];
const KEY2: [u8; 32] = [2; 32];
const GCM: &[u8] = b"k8s:enc:aesgcm:v1:";

/// An EncryptionConfiguration encrypting Secrets with AES-GCM `keys` (named, first writing),
/// reading plaintext too.
fn config(keys: &[(&str, [u8; 32])]) -> String {
    use base64::Engine as _;
    let keys: String = keys
        .iter()
        .map(|(name, key)| {
            let secret = base64::engine::general_purpose::STANDARD.encode(key);
            format!("      - name: {name}\n        secret: {secret}\n")
        })
        .collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n{keys}  - identity: {{}}\n"
    )
}

fn cipher(key: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).unwrap())
}

/// A stored value as kube-apiserver writes it with `key` named `name`: AES-256-GCM of the
/// protobuf object, the etcd key authenticated.
fn seal(name: &str, key: &[u8; 32], etcd_key: &str, plaintext: &[u8]) -> Bytes {
    let nonce = [7u8; 12];
    let mut sealed = plaintext.to_vec();
    cipher(key)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(etcd_key.as_bytes()),
            &mut sealed,
        )
        .unwrap();
    let mut value = GCM.to_vec();
    value.extend(format!("{name}:").as_bytes());
    value.extend(nonce);
    value.extend(sealed);
    Bytes::from(value)
}

/// The plaintext of a stored AES-GCM value of key `name`, opened by ring.
fn open(name: &str, key: &[u8; 32], etcd_key: &str, value: &[u8]) -> Vec<u8> {
    let prefix = [GCM, format!("{name}:").as_bytes()].concat();
    let rest = value.strip_prefix(prefix.as_slice()).unwrap_or_else(|| {
        panic!(
            "not encrypted with {name}: {:?}",
            String::from_utf8_lossy(value)
        )
    });
    let (nonce, sealed) = rest.split_at(12);
    let mut sealed = sealed.to_vec();
    let plain = cipher(key)
        .open_in_place(
            Nonce::try_assume_unique_for_key(nonce).unwrap(),
            Aad::from(etcd_key.as_bytes()),
            &mut sealed,
        )
        .expect("ring opens kapi's value");
    plain.to_vec()
}

/// A Secret as kube-apiserver stores it before encryption: `k8s\0` and an Unknown.
fn protobuf_secret(name: &str, data: &[(&str, &[u8])]) -> Vec<u8> {
    let secret = Secret {
        metadata: Some(ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some("3c0a1c6e-7a51-4b2f-9a37-5d1f0e2b4c61".into()),
            creation_timestamp: Some(Time {
                seconds: Some(1_767_225_600),
                nanos: Some(0),
            }),
            ..ObjectMeta::default()
        }),
        data: data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect::<BTreeMap<_, _>>(),
        r#type: Some("Opaque".into()),
        ..Secret::default()
    };
    common::protobuf_value("v1", "Secret", &secret)
}

fn read_secret(plain: &[u8]) -> Secret {
    let envelope = Unknown::decode(&plain[4..]).expect("an Unknown");
    Secret::decode(envelope.raw.unwrap_or_default().as_slice()).expect("a Secret")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_encrypted_as_kube_apiserver_encrypts_them() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("encryption.yaml");
    std::fs::write(&config_path, config(&[("key1", KEY1)])).unwrap();
    let flag = format!("--encryption-provider-config={}", config_path.display());
    let mut kapi = Kapi::start(Backend::Etcd, &[&flag]).await;
    let admin = kapi.admin();
    let store = EtcdStore::connect(EtcdConfig::new(kapi.etcd().unwrap().endpoints()))
        .await
        .unwrap();
    let raw = async |key: &str| store.get(key, None).await.unwrap().kv.unwrap().value;

    // kapi's Secret is AES-GCM of its protobuf, as ring and k8s-pb read it.
    let secrets = "/api/v1/namespaces/default/secrets";
    admin
        .create(
            secrets,
            json!({"metadata": {"name": "by-kapi"}, "stringData": {"password": "hunter2"}}),
        )
        .await;
    let by_kapi = "/registry/secrets/default/by-kapi";
    let plain = open("key1", &KEY1, by_kapi, &raw(by_kapi).await);
    assert_eq!(read_secret(&plain).data["password"], b"hunter2");
    // Other resources are not encrypted.
    let namespace = raw("/registry/namespaces/default").await;
    assert!(namespace.starts_with(b"k8s\0"), "{namespace:?}");

    // kube-apiserver's encrypted Secret is served.
    let upstream = "/registry/secrets/default/upstream";
    let value = protobuf_secret("upstream", &[("token", b"from-upstream")]);
    store
        .create(upstream, seal("key1", &KEY1, upstream, &value))
        .await
        .unwrap();
    let served = admin.get(&format!("{secrets}/upstream")).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(served.json()["data"]["token"], "ZnJvbS11cHN0cmVhbQ==");
    // Copied under another key, AES-GCM's authentication refuses it.
    let moved = "/registry/secrets/default/moved";
    store
        .create(moved, seal("key1", &KEY1, upstream, &value))
        .await
        .unwrap();
    let refused = admin.get(&format!("{secrets}/moved")).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("cipher: message authentication failed"),
        "{}",
        refused.body
    );
    store.delete(moved, None).await.unwrap();

    let metrics = admin.get("/metrics").await.body;
    let written = "apiserver_storage_transformation_operations_total{resource=\"secrets\",transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:aesgcm:v1:\",status=\"OK\"}";
    assert!(metrics.contains(written), "{metrics}");

    // A new key first: old values still read, and replacing every Secret unchanged
    // re-encrypts it with the new key (upstream's stale values).
    std::fs::write(&config_path, config(&[("key2", KEY2), ("key1", KEY1)])).unwrap();
    kapi.restart().await;
    let admin = kapi.admin();
    assert_eq!(admin.get(&format!("{secrets}/by-kapi")).await.status, 200);
    let kubeconfig = kapi.data_dir.path().join("admin.kubeconfig");
    let listed = common::kubectl(&kubeconfig, &["get", "secrets", "-A", "-o", "json"], None).await;
    assert!(listed.status.success(), "{}", common::stderr(&listed));
    let replaced = common::kubectl(
        &kubeconfig,
        &["replace", "-f", "-"],
        Some(&common::stdout(&listed)),
    )
    .await;
    assert!(replaced.status.success(), "{}", common::stderr(&replaced));
    for (name, key) in [("by-kapi", by_kapi), ("upstream", upstream)] {
        let plain = open("key2", &KEY2, key, &raw(key).await);
        assert_eq!(
            read_secret(&plain).metadata.unwrap().name.as_deref(),
            Some(name)
        );
    }

    // A value of a key the configuration lacks is named, never served.
    let unknown = "/registry/secrets/default/unknown-key";
    let value = protobuf_secret("unknown-key", &[]);
    store
        .create(unknown, seal("key9", &[9; 32], unknown, &value))
        .await
        .unwrap();
    let missing = admin.get(&format!("{secrets}/unknown-key")).await;
    assert_eq!(missing.status, 500, "{}", missing.body);
    assert!(
        missing
            .body
            .contains("no matching key was found for the provided AES transformer"),
        "{}",
        missing.body
    );
    kapi.stop().await;
}
