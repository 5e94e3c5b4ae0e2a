use std::sync::Arc;

use std::sync::LazyLock;

use kapi_server::UserInfo;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation, Warnings};
use kapi_server::registry::{DeleteParams, Registry};
use kapi_server::resource::ResourceDefinition;
use kapi_storage::{EmbeddedConfig, EmbeddedStore, Store};
use serde_json::{Value, json};

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    namespaces: ResourceDefinition,
    configmaps: ResourceDefinition,
    registry: Registry,
    plugin: NamespaceLifecycle,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap());
    let namespaces = kapi_builtin::definition("", "v1", "namespaces").unwrap();
    let registry = Registry::new(
        namespaces.storage.clone(),
        store,
        "/registry",
        namespaces.strategy.clone(),
        Some(Arc::new(kapi_builtin::BuiltinSchemas)),
    );
    let plugin = NamespaceLifecycle::new(registry.cacher().clone());
    Fixture {
        _dir: dir,
        namespaces,
        configmaps: kapi_builtin::definition("", "v1", "configmaps").unwrap(),
        registry,
        plugin,
    }
}

/// The user of the test requests.
static USER: LazyLock<UserInfo> = LazyLock::new(UserInfo::default);
/// The test requests' warnings.
static WARNINGS: LazyLock<Warnings> = LazyLock::new(Warnings::default);
static AUDIT: LazyLock<kapi_server::audit::AuditAnnotations> =
    LazyLock::new(kapi_server::audit::AuditAnnotations::default);

/// A write as the plugin's mutating phase sees it.
struct Request<'a> {
    attributes: Attributes<'a>,
    object: Option<Value>,
}

fn request<'a>(
    operation: Operation,
    definition: &'a ResourceDefinition,
    namespace: &'a str,
    name: &'a str,
    object: Option<&Value>,
) -> Request<'a> {
    Request {
        attributes: Attributes {
            operation,
            definition,
            subresource: "",
            namespace,
            name,
            user: &USER,
            dry_run: false,
            options: &serde_json::Value::Null,
            warnings: &WARNINGS,
            audit: &AUDIT,
        },
        object: object.cloned(),
    }
}

/// Runs the plugin's mutating phase on `request`.
async fn admit(
    plugin: &NamespaceLifecycle,
    request: &Request<'_>,
) -> Result<(), kapi_apimachinery::status::ApiError> {
    let mut object = request.object.clone();
    plugin
        .admit(&request.attributes, object.as_mut(), None)
        .await
}

async fn admit_configmap(
    f: &Fixture,
    operation: Operation,
    namespace: &str,
    name: &str,
    object: Option<&Value>,
) -> Result<(), kapi_apimachinery::status::ApiError> {
    let req = request(operation, &f.configmaps, namespace, name, object);
    admit(&f.plugin, &req).await
}

#[tokio::test]
async fn lifecycle() {
    let f = fixture().await;
    kapi_builtin::ensure_system_namespaces(&f.registry, &f.namespaces)
        .await
        .unwrap();
    // Idempotent.
    kapi_builtin::ensure_system_namespaces(&f.registry, &f.namespaces)
        .await
        .unwrap();
    let cm = json!({"metadata": {"name": "c"}});

    // Existing, active namespace: everything goes.
    admit_configmap(&f, Operation::Create, "default", "c", Some(&cm))
        .await
        .unwrap();
    admit_configmap(&f, Operation::Update, "kube-system", "c", Some(&cm))
        .await
        .unwrap();

    // A namespace that does not exist: 404 for creates and updates, deletes go through.
    let err = admit_configmap(&f, Operation::Create, "missing", "c", Some(&cm))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.reason(), err.message()),
        (404, "NotFound", "namespaces \"missing\" not found")
    );
    let details = err.status().details.as_ref().unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("missing", "namespaces")
    );
    assert!(
        admit_configmap(&f, Operation::Update, "missing", "c", Some(&cm))
            .await
            .unwrap_err()
            .is_not_found()
    );
    admit_configmap(&f, Operation::Delete, "missing", "c", None)
        .await
        .unwrap();

    // A namespace created a moment ago is found (the cache is re-checked after catching up).
    f.registry
        .create(
            &f.namespaces,
            "",
            json!({"metadata": {"name": "fresh"}}),
            kapi_server::registry::Write::plain(false),
        )
        .await
        .unwrap();
    admit_configmap(&f, Operation::Create, "fresh", "c", Some(&cm))
        .await
        .unwrap();

    // A terminating namespace refuses new content, with upstream's message and cause.
    let delete = request(Operation::Delete, &f.namespaces, "", "fresh", None);
    admit(&f.plugin, &delete).await.unwrap();
    let outcome = f
        .registry
        .delete(&f.namespaces, "", "fresh", &DeleteParams::default(), None)
        .await
        .unwrap();
    assert!(matches!(
        outcome,
        kapi_server::registry::DeleteOutcome::Pending(_)
    ));
    let generated = json!({"metadata": {"generateName": "c-"}});
    let err = admit_configmap(&f, Operation::Create, "fresh", "", Some(&generated))
        .await
        .unwrap_err();
    assert_eq!(err.code(), 403);
    assert_eq!(
        err.message(),
        "configmaps \"c-\" is forbidden: unable to create new content in namespace fresh because it is being terminated"
    );
    let status = serde_json::to_value(err.status()).unwrap();
    assert_eq!(
        status["details"],
        json!({"name": "c-", "kind": "configmaps", "causes": [{
            "reason": "NamespaceTerminating",
            "message": "namespace fresh is being terminated",
            "field": "metadata.namespace",
        }]})
    );
    // Updates and deletes in a terminating namespace are allowed.
    admit_configmap(&f, Operation::Update, "fresh", "c", Some(&cm))
        .await
        .unwrap();
    admit_configmap(&f, Operation::Delete, "fresh", "c", None)
        .await
        .unwrap();

    // The immortal namespaces cannot be deleted; others can.
    for name in IMMORTAL_NAMESPACES {
        let req = request(Operation::Delete, &f.namespaces, "", name, None);
        let err = admit(&f.plugin, &req).await.unwrap_err();
        assert_eq!(err.code(), 403);
        assert_eq!(
            err.message(),
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
    }
    let req = request(
        Operation::Delete,
        &f.namespaces,
        "",
        "kube-node-lease",
        None,
    );
    admit(&f.plugin, &req).await.unwrap();

    // Namespaces themselves and cluster-scoped resources are not checked.
    let ns = json!({"metadata": {"name": "other"}});
    let req = request(Operation::Create, &f.namespaces, "", "other", Some(&ns));
    admit(&f.plugin, &req).await.unwrap();
    let req = request(Operation::Create, &f.namespaces, "", "", None);
    admit(&f.plugin, &req).await.unwrap();
}

#[test]
fn names_in_errors() {
    let definition = kapi_builtin::definition("", "v1", "configmaps").unwrap();
    let named = json!({"metadata": {"name": "n", "generateName": "g-"}});
    let generated = json!({"metadata": {"generateName": "g-"}});
    let cases = [
        ("x", Some(&named), "x"),
        ("", Some(&named), "n"),
        ("", Some(&generated), "g-"),
        ("", None, "Unknown"),
    ];
    for (name, object, want) in cases {
        let req = request(Operation::Create, &definition, "ns", name, object);
        assert_eq!(resource_name(&req.attributes, req.object.as_ref()), want);
    }
}
