//! The handler's served set at run time: resources installed and removed by an owner, the
//! delegation chain (unserved paths go to the delegate; discovery includes the delegate's
//! groups) and the 503 of paths asked for before they are all installed.

use std::sync::Arc;

use http::{Request, StatusCode};
use http_body_util::BodyExt;
use kapi_apimachinery::schema::{GroupVersion, GroupVersionKind};
use kapi_apimachinery::validation::field::FieldErrors;
use kapi_storage::{EmbeddedConfig, EmbeddedStore, Store};
use serde_json::{Map, Value};

use super::ApiHandler;
use crate::resource::{ResourceDefinition, StorageDefinition, Strategy, Verbs};

struct AnyObject;

impl Strategy for AnyObject {
    fn validate(&self, _object: &Value) -> FieldErrors {
        FieldErrors::default()
    }
}

/// A cluster-scoped resource `plural` of `group`/v1.
fn definition(group: &str, plural: &'static str, kind: &'static str) -> ResourceDefinition {
    let group_version = GroupVersion::new(group, "v1");
    ResourceDefinition {
        group_version: group_version.clone(),
        kind: kind.into(),
        list_kind: "List".into(),
        plural: plural.into(),
        singular: plural.into(),
        namespaced: false,
        short_names: [].to_vec(),
        categories: [].to_vec(),
        verbs: Verbs::ALL,
        subresources: Vec::new(),
        table: None,
        strategy: Arc::new(AnyObject),
        storage: Arc::new(StorageDefinition {
            key_prefix: plural.into(),
            storage_version: GroupVersionKind::new(group, "v1", kind),
            namespaced: false,
            ttl: None,
            earlier_versions: None,
        }),
        converter: None,
        deprecation: None,
        capabilities: crate::resource::Capabilities::TYPED,
        priority: crate::resource::ApiServicePriority::DEFAULT,
    }
}

fn store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).expect("the store opens"))
}

/// GETs `path`: the status and the body as JSON (null if it is not JSON).
async fn get(handler: &ApiHandler, path: &str) -> (StatusCode, Value) {
    let request = Request::get(path)
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .expect("a request");
    let response = handler.handle(request).await;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn group_names(list: &Value) -> Vec<&str> {
    list["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .collect()
}

#[tokio::test]
async fn installed_resources_are_served_until_uninstalled() {
    let dir = tempfile::tempdir().unwrap();
    let handler = ApiHandler::builder(store(&dir), "/registry")
        .resources([definition("a.example.com", "widgets", "Widget")])
        .build();
    let (status, _) = get(&handler, "/apis/b.example.com/v1/gadgets").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let gadgets = definition("b.example.com", "gadgets", "Gadget");
    handler.install("gadgets.b.example.com", vec![gadgets], Map::new());
    let (status, list) = get(&handler, "/apis/b.example.com/v1/gadgets").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["kind"], "List");
    let (_, groups) = get(&handler, "/apis").await;
    assert_eq!(group_names(&groups), ["a.example.com", "b.example.com"]);

    handler.uninstall("gadgets.b.example.com");
    let (status, _) = get(&handler, "/apis/b.example.com/v1/gadgets").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, groups) = get(&handler, "/apis").await;
    assert_eq!(group_names(&groups), ["a.example.com"]);
    let (status, _) = get(&handler, "/apis/a.example.com/v1/widgets").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn unserved_paths_go_down_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let (synced, synced_rx) = tokio::sync::watch::channel(false);
    let delegate = ApiHandler::builder(store.clone(), "/registry")
        .unserved_unavailable_until(synced_rx)
        .build();
    let handler = ApiHandler::builder(store, "/registry")
        .resources([definition("a.example.com", "widgets", "Widget")])
        .delegate(delegate.clone())
        .build();

    let (status, body) = get(&handler, "/apis/b.example.com/v1/gadgets").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["reason"], "ServiceUnavailable");
    assert_eq!(
        body["message"],
        "the request has been made before all known HTTP paths have been installed, please try again"
    );
    assert_eq!(body["details"]["retryAfterSeconds"], 5);

    synced.send_replace(true);
    let (status, _) = get(&handler, "/apis/b.example.com/v1/gadgets").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let gadgets = definition("b.example.com", "gadgets", "Gadget");
    delegate.install("gadgets.b.example.com", vec![gadgets], Map::new());
    let (status, _) = get(&handler, "/apis/b.example.com/v1/gadgets").await;
    assert_eq!(status, StatusCode::OK);
    let (_, groups) = get(&handler, "/apis").await;
    assert_eq!(group_names(&groups), ["a.example.com", "b.example.com"]);
    let (status, resources) = get(&handler, "/apis/b.example.com/v1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resources["resources"][0]["name"], "gadgets");
}
