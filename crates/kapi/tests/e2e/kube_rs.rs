//! kube-rs (the `kube` crate) against kapi, on the embedded store and on etcd: typed CRUD on
//! ConfigMaps, Secrets, Leases and Namespaces through `Api<K>`, `kube::runtime::watcher` streams
//! that see every change in order (with and without a label selector, with a paginated or a
//! streaming initial list), paginated lists walking `continue`, and raw `Api::watch` from a
//! resourceVersion and with `sendInitialEvents`.

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use common::{Backend, TestServer};
use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::Status;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use serde_json::json;

/// How long a test waits for one event or response before it fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// A kube-rs client built from the server's admin kubeconfig, as a user's program builds it.
async fn kube_client(server: &TestServer) -> Client {
    common::kube_client_at(&server.kubeconfig).await
}

/// Creates namespace `name` and returns an `Api<K>` in it.
async fn namespaced<K>(client: &Client, name: &str) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as kube::Resource>::DynamicType: Default,
{
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the test namespace");
    Api::namespaced(client.clone(), name)
}

fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn configmap(name: &str, data: &[(&str, &str)], labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: (!labels.is_empty()).then(|| string_map(labels)),
            ..ObjectMeta::default()
        },
        data: Some(string_map(data)),
        ..ConfigMap::default()
    }
}

/// The API error status of a failed call (kube::Error::Api), or a panic naming what else failed.
fn api_status<T: Debug>(result: Result<T, kube::Error>) -> Box<Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error status, got {other:?}"),
    }
}

fn rv<K: kube::Resource>(object: &K) -> u64 {
    object
        .meta()
        .resource_version
        .as_deref()
        .expect("a resourceVersion")
        .parse()
        .expect("a numeric resourceVersion")
}

/// The next item of `stream`, within the deadline.
async fn next<S: Stream + Unpin>(stream: &mut S, what: &str) -> S::Item {
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .unwrap_or_else(|_| panic!("waited {DEADLINE:?} in vain for {what}"))
        .unwrap_or_else(|| panic!("the stream ended while waiting for {what}"))
}

/// A watcher event as (kind, name, resourceVersion); Init and InitDone have no object.
fn describe(event: &Event<ConfigMap>) -> (&'static str, String, u64) {
    match event {
        Event::Apply(cm) => ("Apply", cm.name_any(), rv(cm)),
        Event::Delete(cm) => ("Delete", cm.name_any(), rv(cm)),
        Event::Init => ("Init", String::new(), 0),
        Event::InitApply(cm) => ("InitApply", cm.name_any(), rv(cm)),
        Event::InitDone => ("InitDone", String::new(), 0),
    }
}

/// Reads watcher events until `count` have come (failing on any watcher error).
async fn watcher_events<S>(stream: &mut S, count: usize) -> Vec<(&'static str, String, u64)>
where
    S: Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let mut events = Vec::new();
    while events.len() < count {
        let event = next(stream, "a watcher event")
            .await
            .expect("a watcher event");
        events.push(describe(&event));
    }
    events
}

/// Typed CRUD on ConfigMaps: create, get, list, replace (and a stale replace), merge,
/// strategic merge and JSON patches, delete, and the 404 after it.
async fn configmap_crud(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-crud").await;
    let pp = PostParams::default();

    let created = api
        .create(&pp, &configmap("settings", &[("a", "1")], &[]))
        .await
        .expect("create");
    assert_eq!(created.metadata.namespace.as_deref(), Some("kube-rs-crud"));
    assert!(
        created
            .metadata
            .uid
            .as_deref()
            .is_some_and(|uid| uid.len() == 36)
    );
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.data, Some(string_map(&[("a", "1")])));
    let again = api_status(api.create(&pp, &configmap("settings", &[], &[])).await);
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(again.message, r#"configmaps "settings" already exists"#);

    let got = api.get("settings").await.expect("get");
    assert_eq!(got, created);
    assert_eq!(api.get_opt("missing").await.expect("get_opt"), None);
    let listed = api.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items, vec![created.clone()]);
    let list_rv: u64 = listed
        .metadata
        .resource_version
        .as_deref()
        .expect("a list resourceVersion")
        .parse()
        .expect("numeric");
    assert!(list_rv >= rv(&created));

    let mut changed = got.clone();
    changed.data = Some(string_map(&[("a", "2")]));
    let replaced = api
        .replace("settings", &pp, &changed)
        .await
        .expect("replace");
    assert!(rv(&replaced) > rv(&created));
    assert_eq!(replaced.metadata.uid, created.metadata.uid);
    assert_eq!(replaced.data, Some(string_map(&[("a", "2")])));
    let stale = api_status(api.replace("settings", &pp, &got).await);
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        stale.message,
        r#"Operation cannot be fulfilled on configmaps "settings": the object has been modified; please apply your changes to the latest version and try again"#
    );

    let patch_params = PatchParams::default();
    let merged = api
        .patch(
            "settings",
            &patch_params,
            &Patch::Merge(json!({"data": {"b": "3"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(merged.data, Some(string_map(&[("a", "2"), ("b", "3")])));
    assert!(rv(&merged) > rv(&replaced));
    let strategic = api
        .patch(
            "settings",
            &patch_params,
            &Patch::Strategic(json!({"metadata": {"labels": {"tier": "web"}}, "data": {"c": "4"}})),
        )
        .await
        .expect("strategic merge patch");
    assert_eq!(
        strategic.data,
        Some(string_map(&[("a", "2"), ("b", "3"), ("c", "4")]))
    );
    assert_eq!(strategic.labels(), &string_map(&[("tier", "web")]));
    let operations = json!([
        {"op": "test", "path": "/data/c", "value": "4"},
        {"op": "replace", "path": "/data/a", "value": "20"},
        {"op": "remove", "path": "/data/b"},
        {"op": "add", "path": "/metadata/annotations", "value": {"note": "json patch"}},
    ]);
    let json_patched = api
        .patch(
            "settings",
            &patch_params,
            &Patch::<()>::Json(serde_json::from_value(operations).expect("a JSON patch")),
        )
        .await
        .expect("JSON patch");
    assert_eq!(
        json_patched.data,
        Some(string_map(&[("a", "20"), ("c", "4")]))
    );
    assert_eq!(
        json_patched.annotations(),
        &string_map(&[("note", "json patch")])
    );
    let failed_test = json!([{"op": "test", "path": "/data/c", "value": "5"}]);
    let failed = api_status(
        api.patch(
            "settings",
            &patch_params,
            &Patch::<()>::Json(serde_json::from_value(failed_test).expect("a JSON patch")),
        )
        .await,
    );
    assert_eq!(failed.code, 422, "{failed:?}");
    assert_eq!(api.get("settings").await.expect("get"), json_patched);

    let deleted = api
        .delete("settings", &DeleteParams::default())
        .await
        .expect("delete");
    let status = deleted
        .right()
        .expect("configmaps answer a delete with a Status");
    assert!(status.is_success(), "{status:?}");
    let details = status.details.expect("delete status details");
    assert_eq!(details.name, "settings");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(Some(details.uid.as_str()), created.metadata.uid.as_deref());

    let gone = api_status(api.get("settings").await);
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert!(gone.is_not_found());
    assert_eq!(gone.message, r#"configmaps "settings" not found"#);
    let details = gone.details.expect("not found details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("settings", "configmaps")
    );
    assert!(
        api.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    server.stop().await;
}

/// Typed CRUD on Secrets (stringData folded into data, as upstream's conversion does) and on
/// coordination.k8s.io/v1 Leases (MicroTime kept to the microsecond).
async fn secret_and_lease_crud(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let secrets: Api<Secret> = namespaced(&client, "kube-rs-secrets").await;
    let pp = PostParams::default();

    // base64("s3cret") and base64("admin").
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "credentials"},
        "type": "Opaque",
        "data": {"password": "czNjcmV0"},
        "stringData": {"user": "admin"},
    }))
    .expect("a Secret");
    let created = secrets.create(&pp, &secret).await.expect("create secret");
    let data_of = |secret: &Secret| {
        let value = serde_json::to_value(&secret.data).expect("secret data as JSON");
        serde_json::from_value::<BTreeMap<String, String>>(value).expect("base64 strings")
    };
    assert_eq!(
        data_of(&created),
        string_map(&[("password", "czNjcmV0"), ("user", "YWRtaW4=")])
    );
    assert_eq!(created.string_data, None);
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        secrets.get("credentials").await.expect("get secret"),
        created
    );

    let mut changed = created.clone();
    changed.string_data = Some(string_map(&[("password", "n3w")]));
    let replaced = secrets
        .replace("credentials", &pp, &changed)
        .await
        .expect("replace secret");
    assert_eq!(
        data_of(&replaced),
        string_map(&[("password", "bjN3"), ("user", "YWRtaW4=")])
    );
    assert!(rv(&replaced) > rv(&created));
    let patched = secrets
        .patch(
            "credentials",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"user": null}, "metadata": {"labels": {"k": "v"}}})),
        )
        .await
        .expect("merge patch secret");
    assert_eq!(data_of(&patched), string_map(&[("password", "bjN3")]));
    assert_eq!(patched.labels(), &string_map(&[("k", "v")]));
    let listed = secrets
        .list(&ListParams::default())
        .await
        .expect("list secrets");
    assert_eq!(listed.items, vec![patched.clone()]);
    let deleted = secrets
        .delete("credentials", &DeleteParams::default())
        .await
        .expect("delete secret");
    assert!(deleted.right().expect("a Status").is_success());
    let gone = api_status(secrets.get("credentials").await);
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert_eq!(gone.message, r#"secrets "credentials" not found"#);

    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "node-a"},
        "spec": {
            "holderIdentity": "node-a",
            "leaseDurationSeconds": 40,
            "acquireTime": "2026-01-02T03:04:05.123456Z",
            "renewTime": "2026-01-02T03:04:05.123456Z",
        },
    }))
    .expect("a Lease");
    let created = leases.create(&pp, &lease).await.expect("create lease");
    let spec_json = |lease: &Lease| serde_json::to_value(&lease.spec).expect("lease spec as JSON");
    assert_eq!(spec_json(&created), spec_json(&lease));
    assert_eq!(leases.get("node-a").await.expect("get lease"), created);
    let mut renewed = created.clone();
    renewed.spec = Some(
        serde_json::from_value(json!({
            "holderIdentity": "node-a",
            "leaseDurationSeconds": 40,
            "acquireTime": "2026-01-02T03:04:05.123456Z",
            "renewTime": "2026-01-02T03:04:15.654321Z",
        }))
        .expect("a lease spec"),
    );
    let replaced = leases
        .replace("node-a", &pp, &renewed)
        .await
        .expect("renew lease");
    assert_eq!(spec_json(&replaced), spec_json(&renewed));
    let patched = leases
        .patch(
            "node-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"holderIdentity": "node-b", "leaseTransitions": 1}})),
        )
        .await
        .expect("patch lease");
    let spec = patched.spec.as_ref().expect("lease spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("node-b"));
    assert_eq!(spec.lease_transitions, Some(1));
    let names: Vec<String> = leases
        .list(&ListParams::default())
        .await
        .expect("list leases")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names, ["node-a"]);
    let deleted = leases
        .delete("node-a", &DeleteParams::default())
        .await
        .expect("delete lease");
    let details = deleted.right().expect("a Status").details.expect("details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("coordination.k8s.io", "leases")
    );
    let gone = api_status(leases.get("node-a").await);
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        gone.message,
        r#"leases.coordination.k8s.io "node-a" not found"#
    );
    let details = gone.details.expect("not found details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("coordination.k8s.io", "leases")
    );
    server.stop().await;
}

/// `Api::<Namespace>::all`: the system namespaces are listed, a created namespace is Active
/// with the `kubernetes` finalizer, and deleting it answers the Terminating namespace.
async fn namespaces_all(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names = |list: &kube::core::ObjectList<Namespace>| -> Vec<String> {
        list.items.iter().map(ResourceExt::name_any).collect()
    };
    let before = namespaces.list(&ListParams::default()).await.expect("list");
    assert_eq!(
        names(&before),
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some("kube-rs".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let created = namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create namespace");
    let status = created.status.as_ref().expect("namespace status");
    assert_eq!(status.phase.as_deref(), Some("Active"));
    let spec = created.spec.as_ref().expect("namespace spec");
    assert_eq!(
        spec.finalizers.as_deref(),
        Some(&["kubernetes".to_string()][..])
    );
    assert_eq!(
        created.labels(),
        &string_map(&[("kubernetes.io/metadata.name", "kube-rs")])
    );
    let after = namespaces.list(&ListParams::default()).await.expect("list");
    assert_eq!(
        names(&after),
        [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-rs",
            "kube-system"
        ]
    );
    let selected = namespaces
        .list(&ListParams::default().labels("kubernetes.io/metadata.name=kube-rs"))
        .await
        .expect("list by label");
    assert_eq!(names(&selected), ["kube-rs"]);
    let deleted = namespaces
        .delete("kube-rs", &DeleteParams::default())
        .await
        .expect("delete namespace");
    let terminating = deleted
        .left()
        .expect("a namespace delete answers the namespace");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let status = terminating.status.as_ref().expect("namespace status");
    assert_eq!(status.phase.as_deref(), Some("Terminating"));
    server.stop().await;
}

/// `kube::runtime::watcher` on the configmaps of a namespace sees every change, in order,
/// with the resourceVersions the writes answered.
async fn watcher_sees_every_change(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-watch").await;
    let pp = PostParams::default();
    let existing = api
        .create(&pp, &configmap("existing", &[("k", "v")], &[]))
        .await
        .expect("create");
    let mut stream = kube::runtime::watcher(api.clone(), watcher::Config::default()).boxed();
    let initial = watcher_events(&mut stream, 3).await;
    assert_eq!(
        initial,
        [
            ("Init", String::new(), 0),
            ("InitApply", "existing".to_string(), rv(&existing)),
            ("InitDone", String::new(), 0),
        ]
    );

    let mut expected = Vec::new();
    for i in 0..5 {
        let name = format!("cm-{i}");
        let created = api
            .create(&pp, &configmap(&name, &[("i", &i.to_string())], &[]))
            .await
            .expect("create");
        expected.push(("Apply", name, rv(&created)));
    }
    let updated = api
        .patch(
            "cm-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"i": "updated"}})),
        )
        .await
        .expect("update");
    expected.push(("Apply", "cm-0".to_string(), rv(&updated)));
    let mut replaced = api.get("existing").await.expect("get");
    replaced.data = Some(string_map(&[("k", "replaced")]));
    let replaced = api
        .replace("existing", &pp, &replaced)
        .await
        .expect("replace");
    expected.push(("Apply", "existing".to_string(), rv(&replaced)));
    for name in ["cm-4", "existing"] {
        api.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    let seen = watcher_events(&mut stream, expected.len() + 2).await;
    let (writes, deletes) = seen.split_at(expected.len());
    assert_eq!(writes, expected.as_slice());
    let last_write = rv(&replaced);
    assert_eq!((deletes[0].0, deletes[0].1.as_str()), ("Delete", "cm-4"));
    assert_eq!(
        (deletes[1].0, deletes[1].1.as_str()),
        ("Delete", "existing")
    );
    // A deletion's event carries the revision of the deletion.
    assert!(
        last_write < deletes[0].2 && deletes[0].2 < deletes[1].2,
        "{deletes:?}"
    );

    // The event objects are the objects: the update's event has the patched data.
    let after = api
        .patch(
            "cm-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"j": "x"}})),
        )
        .await
        .expect("patch");
    match next(&mut stream, "the patch event").await.expect("event") {
        Event::Apply(cm) => assert_eq!(cm, after),
        other => panic!("expected Apply(cm-1), got {other:?}"),
    }
    server.stop().await;
}

/// A label-selected watcher (with a streaming initial list on one run, paginated on the
/// other) sees objects as they start and stop matching the selector.
async fn watcher_with_label_selector(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-selector").await;
    let pp = PostParams::default();
    api.create(&pp, &configmap("before-other", &[], &[("app", "other")]))
        .await
        .expect("create");
    let before = api
        .create(&pp, &configmap("before-web", &[], &[("app", "web")]))
        .await
        .expect("create");
    for streaming in [false, true] {
        let mut config = watcher::Config::default().labels("app=web");
        if streaming {
            // The streaming initial list is read at resourceVersion 0 (any state of the
            // cache); a consistent list first makes the cache hold every earlier write.
            api.list(&ListParams::default())
                .await
                .expect("consistent list");
            config = config.streaming_lists();
        }
        let mut stream = kube::runtime::watcher(api.clone(), config).boxed();
        let initial = watcher_events(&mut stream, 3).await;
        assert_eq!(
            initial,
            [
                ("Init", String::new(), 0),
                ("InitApply", "before-web".to_string(), rv(&before)),
                ("InitDone", String::new(), 0),
            ],
            "streaming: {streaming}"
        );
        let suffix = if streaming { "s" } else { "p" };
        let (a, b, other) = (
            format!("a-{suffix}"),
            format!("b-{suffix}"),
            format!("other-{suffix}"),
        );
        let label = |app: &str| Patch::Merge(json!({"metadata": {"labels": {"app": app}}}));
        let a_created = api
            .create(&pp, &configmap(&a, &[], &[("app", "web")]))
            .await
            .expect("create");
        api.create(&pp, &configmap(&b, &[], &[("app", "db")]))
            .await
            .expect("create");
        api.create(&pp, &configmap(&other, &[], &[]))
            .await
            .expect("create");
        let b_joins = api
            .patch(&b, &PatchParams::default(), &label("web"))
            .await
            .expect("relabel");
        let a_leaves = api
            .patch(&a, &PatchParams::default(), &label("db"))
            .await
            .expect("relabel");
        api.delete(&other, &DeleteParams::default())
            .await
            .expect("delete");
        api.delete(&b, &DeleteParams::default())
            .await
            .expect("delete");
        let seen = watcher_events(&mut stream, 4).await;
        assert_eq!(
            seen[..3],
            [
                ("Apply", a.clone(), rv(&a_created)),
                ("Apply", b.clone(), rv(&b_joins)),
                ("Delete", a.clone(), rv(&a_leaves)),
            ],
            "streaming: {streaming}"
        );
        assert_eq!((seen[3].0, seen[3].1.as_str()), ("Delete", b.as_str()));
        assert!(seen[3].2 > rv(&a_leaves));
    }
    server.stop().await;
}

/// `ListParams::default().limit(2)` walks 7 objects in 4 pages through `continue`, each page
/// at the first page's resourceVersion with the remaining item count, unaffected by a write
/// made in between.
async fn paginated_list(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-pages").await;
    let pp = PostParams::default();
    for i in 0..7 {
        api.create(
            &pp,
            &configmap(&format!("cm-{i}"), &[("i", &i.to_string())], &[]),
        )
        .await
        .expect("create");
    }
    let first = api
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    let pinned = first
        .metadata
        .resource_version
        .clone()
        .expect("a list resourceVersion");
    // Written after the first page: the pages that follow are at the first page's revision.
    let late = api
        .create(&pp, &configmap("cm-7", &[], &[]))
        .await
        .expect("create");
    assert!(rv(&late) > pinned.parse::<u64>().expect("numeric"));

    let mut pages = Vec::new();
    let mut page = first;
    loop {
        let names: Vec<String> = page.items.iter().map(ResourceExt::name_any).collect();
        let meta = page.metadata.clone();
        assert_eq!(meta.resource_version.as_deref(), Some(pinned.as_str()));
        pages.push((names, meta.remaining_item_count, meta.continue_.is_some()));
        let Some(token) = meta.continue_ else {
            break;
        };
        assert!(!token.is_empty());
        page = api
            .list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .expect("next page");
    }
    let expected: Vec<(Vec<String>, Option<i64>, bool)> = vec![
        (vec!["cm-0".into(), "cm-1".into()], Some(5), true),
        (vec!["cm-2".into(), "cm-3".into()], Some(3), true),
        (vec!["cm-4".into(), "cm-5".into()], Some(1), true),
        (vec!["cm-6".into()], None, false),
    ];
    assert_eq!(pages, expected);

    // A fresh list sees the late write; a limit larger than the collection has no continue.
    let all = api
        .list(&ListParams::default().limit(100))
        .await
        .expect("list");
    assert_eq!(all.items.len(), 8);
    assert_eq!(all.metadata.continue_, None);
    assert_eq!(all.metadata.remaining_item_count, None);
    server.stop().await;
}

/// A raw watch event as (type, name, resourceVersion).
fn describe_watch_event(event: &WatchEvent<ConfigMap>) -> (&'static str, String, String) {
    let of = |cm: &ConfigMap| (cm.name_any(), cm.resource_version().unwrap_or_default());
    match event {
        WatchEvent::Added(cm) => ("ADDED", of(cm).0, of(cm).1),
        WatchEvent::Modified(cm) => ("MODIFIED", of(cm).0, of(cm).1),
        WatchEvent::Deleted(cm) => ("DELETED", of(cm).0, of(cm).1),
        WatchEvent::Bookmark(bookmark) => (
            "BOOKMARK",
            String::new(),
            bookmark.metadata.resource_version.clone(),
        ),
        WatchEvent::Error(status) => panic!("watch error event: {status:?}"),
    }
}

/// `Api::watch` from a resourceVersion delivers exactly the changes after it; with
/// `WatchParams::streaming_lists()` it first sends the current objects, then a BOOKMARK
/// annotated `k8s.io/initial-events-end`.
async fn resource_version_watch(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-rv").await;
    let pp = PostParams::default();
    let a = api
        .create(&pp, &configmap("a", &[("v", "1")], &[]))
        .await
        .expect("create");
    let from = a.resource_version().expect("rv");
    let b = api
        .create(&pp, &configmap("b", &[], &[]))
        .await
        .expect("create");
    let a2 = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .await
        .expect("patch");
    api.delete("b", &DeleteParams::default())
        .await
        .expect("delete");
    // The watch starts after the writes: they are replayed from the resourceVersion. kube's
    // default WatchParams allow bookmarks.
    let stream = api
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch");
    let mut stream = stream.boxed();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = next(&mut stream, "a watch event")
            .await
            .expect("a watch event");
        let described = describe_watch_event(&event);
        // Bookmarks (about once a minute) may come between events; they are not changes.
        if described.0 != "BOOKMARK" {
            seen.push(described);
        }
    }
    let rv_of = |cm: &ConfigMap| cm.resource_version().expect("rv");
    assert_eq!(seen[0], ("ADDED", "b".into(), rv_of(&b)));
    assert_eq!(seen[1], ("MODIFIED", "a".into(), rv_of(&a2)));
    assert_eq!((seen[2].0, seen[2].1.as_str()), ("DELETED", "b"));
    let deletion: u64 = seen[2].2.parse().expect("numeric");
    assert!(deletion > rv(&a2));

    // Streaming list: the current objects, then the initial-events-end bookmark, then changes.
    let c = api
        .create(&pp, &configmap("c", &[], &[]))
        .await
        .expect("create");
    let stream = api
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .expect("streaming list watch");
    let mut stream = stream.boxed();
    let mut initial = Vec::new();
    let bookmark = loop {
        match next(
            &mut stream,
            "an initial ADDED event or the initial-events-end BOOKMARK",
        )
        .await
        .expect("a watch event")
        {
            WatchEvent::Added(cm) => initial.push((cm.name_any(), rv(&cm))),
            WatchEvent::Bookmark(bookmark) => break bookmark,
            other => panic!("unexpected event before the initial-events-end bookmark: {other:?}"),
        }
    };
    initial.sort();
    assert_eq!(
        initial,
        [("a".to_string(), rv(&a2)), ("c".to_string(), rv(&c))]
    );
    assert_eq!(
        bookmark
            .metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(bookmark.types.kind, "ConfigMap");
    assert_eq!(bookmark.types.api_version, "v1");
    let bookmark_rv: u64 = bookmark.metadata.resource_version.parse().expect("numeric");
    assert!(bookmark_rv >= rv(&c), "{bookmark_rv} < {}", rv(&c));
    let d = api
        .create(&pp, &configmap("d", &[], &[]))
        .await
        .expect("create");
    loop {
        match next(&mut stream, "the event of d")
            .await
            .expect("a watch event")
        {
            WatchEvent::Added(cm) => {
                assert_eq!(cm, d);
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("expected ADDED d, got {other:?}"),
        }
    }
    server.stop().await;
}

/// A watch from resourceVersion "0" with bookmarks allowed: kube-apiserver 1.35 (WatchList
/// on by default) defaults such a legacy watch to sendInitialEvents=true with
/// resourceVersionMatch=NotOlderThan (k8s.io/apimachinery pkg/apis/meta/internalversion
/// defaults.go SetListOptionsDefaults, called by apiserver handlers/get.go ListResource), so
/// the current objects are followed by the initial-events-end BOOKMARK
/// (pkg/storage/cacher/cacher.go setInitialEventsEndBookmarkIfRequested).
async fn legacy_watch_initial_events_end(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-legacy").await;
    let pp = PostParams::default();
    let mut written = Vec::new();
    for name in ["one", "two"] {
        let created = api
            .create(&pp, &configmap(name, &[], &[]))
            .await
            .expect("create");
        written.push((name.to_string(), rv(&created)));
    }
    // resourceVersion 0 reads any state of the cache; a consistent list first makes it hold
    // both writes.
    api.list(&ListParams::default())
        .await
        .expect("consistent list");
    let stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    let mut stream = stream.boxed();
    let mut initial = Vec::new();
    let bookmark = loop {
        match next(
            &mut stream,
            "an initial ADDED event or the initial-events-end BOOKMARK",
        )
        .await
        .expect("a watch event")
        {
            WatchEvent::Added(cm) => initial.push((cm.name_any(), rv(&cm))),
            WatchEvent::Bookmark(bookmark) => break bookmark,
            other => panic!("unexpected event before the initial-events-end bookmark: {other:?}"),
        }
    };
    initial.sort();
    assert_eq!(initial, written);
    assert_eq!(
        bookmark
            .metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true"),
        "the first BOOKMARK of a legacy watch ends the initial events"
    );
    let bookmark_rv: u64 = bookmark.metadata.resource_version.parse().expect("numeric");
    assert!(bookmark_rv >= written[1].1);
    let three = api
        .create(&pp, &configmap("three", &[], &[]))
        .await
        .expect("create");
    loop {
        match next(&mut stream, "the event of three")
            .await
            .expect("a watch event")
        {
            WatchEvent::Added(cm) => {
                assert_eq!(cm, three);
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("expected ADDED three, got {other:?}"),
        }
    }
    server.stop().await;
}

/// `Api::delete_collection` with a label selector: the matching objects go (the answer lists
/// them), the others stay.
async fn delete_collection_by_label(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = namespaced(&client, "kube-rs-collection").await;
    let pp = PostParams::default();
    for i in 0..40 {
        let tier = if i % 4 == 0 { "keep" } else { "drop" };
        api.create(&pp, &configmap(&format!("cm-{i}"), &[], &[("tier", tier)]))
            .await
            .expect("create");
    }
    let selected = ListParams::default().labels("tier=drop");
    let deleted = api
        .delete_collection(&DeleteParams::default(), &selected)
        .await
        .expect("deletecollection");
    let list = deleted.left().expect("the deleted objects");
    assert_eq!(
        list.items.len(),
        30,
        "every matching object is in the answer"
    );
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|cm| cm.labels()["tier"].clone())
        .collect();
    assert_eq!(left.len(), 10);
    assert!(left.iter().all(|tier| tier == "keep"), "{left:?}");
    server.stop().await;
}

on_both_backends!(
    delete_collection_by_label,
    configmap_crud,
    secret_and_lease_crud,
    namespaces_all,
    watcher_sees_every_change,
    watcher_with_label_selector,
    paginated_list,
    resource_version_watch,
    legacy_watch_initial_events_end,
);
