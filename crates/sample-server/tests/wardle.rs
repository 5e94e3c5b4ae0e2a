//! The sample server, built on kapi-server and kapi-storage alone, serves its own group to a
//! real client (kube-rs) over real TLS on loopback: discovery, create, get, list, watch,
//! strategic merge patch, the status subresource, validation, OpenAPI and delete.

use std::path::Path;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kapi_sample_server::{GROUP, VERSION};
use kapi_server::{ServerConfig, TlsConfig};
use kapi_storage::{EmbeddedConfig, EmbeddedStore, Store};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind, WatchEvent};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};

/// A CA, a serving certificate for 127.0.0.1 and an admin client certificate, as PEM files
/// in `dir`; returns the CA and the client's certificate and key, PEM.
fn pki(dir: &Path) -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.distinguished_name.push(DnType::CommonName, "wardle CA");
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let leaf = |names: Vec<String>, name: &str, usage| {
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (serving, serving_key) = leaf(
        vec!["127.0.0.1".into()],
        "wardle",
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (client, client_key) = leaf(Vec::new(), "admin", ExtendedKeyUsagePurpose::ClientAuth);
    std::fs::write(dir.join("ca.crt"), &ca_pem).unwrap();
    std::fs::write(dir.join("serving.crt"), serving).unwrap();
    std::fs::write(dir.join("serving.key"), serving_key).unwrap();
    (ca_pem, client, client_key)
}

/// Starts the sample server on a free port with an embedded store in `dir`; a kube-rs client
/// of it.
async fn start(dir: &Path) -> kube::Client {
    let (ca, cert, key) = pki(dir);
    let tls = TlsConfig::from_pem_files(
        &dir.join("serving.crt"),
        &dir.join("serving.key"),
        Some(&dir.join("ca.crt")),
    )
    .unwrap();
    let mut config = ServerConfig::new(tls);
    config.secure_port = kapi_testing::free_port();
    let address = config.listen_address();
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.join("store"))).unwrap());
    let server = kapi_sample_server::server(config, store, "/registry").unwrap();
    let listening = server.bind().await.unwrap();
    tokio::spawn(listening.serve(std::future::pending()));
    let b64 = |pem: &str| {
        use k8s_openapi::ByteString;
        serde_json::to_value(ByteString(pem.as_bytes().to_vec())).unwrap()
    };
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "wardle",
        "clusters": [{"name": "wardle", "cluster": {
            "server": format!("https://{address}"),
            "certificate-authority-data": b64(&ca)}}],
        "users": [{"name": "admin", "user": {
            "client-certificate-data": b64(&cert), "client-key-data": b64(&key)}}],
        "contexts": [{"name": "wardle", "context": {"cluster": "wardle", "user": "admin"}}],
    });
    let kubeconfig: Kubeconfig = serde_json::from_value(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, kind), plural)
}

fn flunder(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Flunder",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_its_own_group_serves_a_real_client() {
    let dir = tempfile::tempdir().unwrap();
    let client = start(dir.path()).await;

    // Discovery lists the group and its two resources (there is no legacy `/api` here, as
    // on upstream's sample-apiserver, so kube-rs's full Discovery does not apply).
    let groups = client.list_api_groups().await.unwrap();
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, [GROUP]);
    let resources = client
        .list_api_group_resources(&format!("{GROUP}/{VERSION}"))
        .await
        .unwrap();
    let mut plurals: Vec<&str> = resources
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    plurals.sort();
    assert_eq!(plurals, ["fischers", "flunders", "flunders/status"]);

    let flunders: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &resource("Flunder", "flunders"));
    let watch = flunders
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();

    // Create: status is the subresource's, unknown fields are dropped with a warning.
    let mut sent = flunder(
        "one",
        json!({"reference": "two", "referenceType": "Flunder"}),
    );
    sent.data["status"] = json!({"phase": "Ready"});
    sent.data["extra"] = json!(true);
    let created = flunders
        .create(&PostParams::default(), &sent)
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["reference"], "two");
    assert!(created.data.get("status").is_none(), "{:?}", created.data);
    assert!(created.data.get("extra").is_none(), "{:?}", created.data);
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.managed_fields.is_some());

    // The watch sees it.
    let mut watch = watch;
    loop {
        match watch.try_next().await.unwrap().expect("an event") {
            WatchEvent::Added(object) => {
                assert_eq!(object.metadata.name.as_deref(), Some("one"));
                break;
            }
            WatchEvent::Bookmark(_) => continue,
            other => panic!("expected ADDED, got {other:?}"),
        }
    }

    // Get and list.
    let got = flunders.get("one").await.unwrap();
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );
    let listed = flunders.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);

    // Strategic merge patch, then the status subresource.
    let patched = flunders
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"reference": "three"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["reference"], "three");
    assert_eq!(patched.data["spec"]["referenceType"], "Flunder");
    let status = flunders
        .patch_status(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["phase"], "Ready");

    // Validation: the strategy's field errors, as a 422 Invalid Status.
    let bad = flunder("bad", json!({"reference": "x", "referenceType": "Frog"}));
    let err = flunders
        .create(&PostParams::default(), &bad)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a Status, got {err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .contains("spec.referenceType: Unsupported value: \"Frog\""),
        "{}",
        status.message
    );

    // A cluster-scoped kind with its own validation.
    let fischers: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("Fischer", "fischers"));
    let fischer: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Fischer",
        "metadata": {"name": "f"}, "disallowedFlunders": ["one", "one"],
    }))
    .unwrap();
    let err = fischers
        .create(&PostParams::default(), &fischer)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );

    // Admission: a Fischer bans a Flunder name (upstream's BanFlunder).
    let banning: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Fischer",
        "metadata": {"name": "strict"}, "disallowedFlunders": ["banned"],
    }))
    .unwrap();
    fischers
        .create(&PostParams::default(), &banning)
        .await
        .unwrap();
    let banned: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Flunder",
        "metadata": {"name": "banned"}, "spec": {},
    }))
    .unwrap();
    let err = flunders
        .create(&PostParams::default(), &banned)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "flunders.wardle.example.com \"banned\" is forbidden: this name may not be used, please change the resource name"
    );

    // OpenAPI carries the group's own schemas.
    let request = http::Request::get(format!("/openapi/v3/apis/{GROUP}/{VERSION}"))
        .body(Vec::new())
        .unwrap();
    let document: Value = client.request(request).await.unwrap();
    let schemas = &document["components"]["schemas"];
    assert!(
        schemas.get("com.example.wardle.v1alpha1.Flunder").is_some(),
        "{document}"
    );

    // Delete, and the watch sees that too.
    flunders
        .delete("one", &DeleteParams::default())
        .await
        .unwrap();
    loop {
        match watch.try_next().await.unwrap().expect("an event") {
            WatchEvent::Deleted(object) => {
                assert_eq!(object.metadata.name.as_deref(), Some("one"));
                break;
            }
            WatchEvent::Modified(_) | WatchEvent::Bookmark(_) => continue,
            other => panic!("expected DELETED, got {other:?}"),
        }
    }
    assert!(
        flunders
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
