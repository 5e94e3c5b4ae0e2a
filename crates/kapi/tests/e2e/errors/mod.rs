//! The error contract: for each Status reason kapi can answer with, the exact JSON (code,
//! reason, message, details) kube-apiserver 1.35 returns for the same request, compared as
//! parsed JSON over a raw HTTPS client (so nothing between the test and the wire interprets
//! the answer).
//!
//! Each expectation names where upstream produces it: k8s.io/apimachinery v0.35 and
//! k8s.io/apiserver v0.35 (the staging repositories of kubernetes 1.35), kubernetes/kubernetes
//! for the registries, and github.com/emicklei/go-restful/v3 (v3.12, the router
//! kube-apiserver's resource endpoints are installed in).
//!
//! Not covered: InternalError (500). kube-apiserver answers it for faults (a storage that
//! returns garbage, a panic in a handler) that a correct server cannot be driven into through
//! its API, and faking one would test the fake; crates/apimachinery/src/status.rs checks its
//! JSON (`internal_and_too_large_resource_version`).

use crate::common;

use std::time::{Duration, Instant};

use common::Backend;
use common::process::{Checks, Client, DEADLINE, Kapi, failure};
use http::Method;
use serde_json::{Value, json};

mod access;
mod requests;

/// The media types kube-apiserver 1.35 serves built-in resources in (k8s.io/apimachinery
/// pkg/runtime/serializer/codec_factory.go newSerializersForScheme: JSON, YAML, protobuf; CBOR
/// only behind the alpha CBORServingAndStorage gate, off by default).
const MEDIA_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn rv_of(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .parse()
        .expect("numeric")
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

// ---------------------------------------------------------------------------------------------
// Cases on both backends (the storage answers them).

/// 404 NotFound for objects that do not exist.
async fn not_found(backend: Backend) {
    let kapi = Kapi::start(backend, &[]).await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    // apimachinery pkg/api/errors/errors.go NewNotFound (via apiserver
    // pkg/storage/errors/storage.go InterpretGetError): `<resource> "<name>" not found`,
    // details name and kind = the resource (plural); group omitted for the core group.
    let expected = failure(
        404,
        "NotFound",
        r#"configmaps "missing" not found"#,
        Some(json!({"name": "missing", "kind": "configmaps"})),
    );
    checks.status(
        &admin.get(&format!("{CONFIGMAPS}/missing")).await,
        &expected,
    );
    // DELETE: registry/generic/registry/store.go Delete → InterpretDeleteError → NewNotFound.
    let reply = admin
        .send(Method::DELETE, &format!("{CONFIGMAPS}/missing"), &[], "")
        .await;
    checks.status(&reply, &expected);
    // PATCH: endpoints/handlers/patch.go, the patcher's Get → NewNotFound.
    let reply = admin
        .write(
            Method::PATCH,
            &format!("{CONFIGMAPS}/missing"),
            &json!({"data": {}}),
        )
        .await;
    checks.status(&reply, &expected);
    // A grouped resource: the message qualifies it (GroupResource.String()), details.group.
    let reply = admin.get(&format!("{LEASES}/missing")).await;
    checks.status(
        &reply,
        &failure(
            404,
            "NotFound",
            r#"leases.coordination.k8s.io "missing" not found"#,
            Some(json!({"name": "missing", "group": "coordination.k8s.io", "kind": "leases"})),
        ),
    );
    // A cluster-scoped resource.
    let reply = admin.get("/api/v1/namespaces/missing").await;
    checks.status(
        &reply,
        &failure(
            404,
            "NotFound",
            r#"namespaces "missing" not found"#,
            Some(json!({"name": "missing", "kind": "namespaces"})),
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 409 AlreadyExists for a create of an existing name.
async fn already_exists(backend: Backend) {
    let kapi = Kapi::start(backend, &[]).await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    admin.create(CONFIGMAPS, configmap("taken")).await;
    // apimachinery errors.go NewAlreadyExists (via apiserver pkg/storage/errors/storage.go
    // InterpretCreateError): `<resource> "<name>" already exists`, details name and kind.
    let reply = admin
        .write(Method::POST, CONFIGMAPS, &configmap("taken"))
        .await;
    checks.status(
        &reply,
        &failure(
            409,
            "AlreadyExists",
            r#"configmaps "taken" already exists"#,
            Some(json!({"name": "taken", "kind": "configmaps"})),
        ),
    );
    // generateName is used only when the name is empty (apiserver rest.BeforeCreate): a
    // taken name with a generateName beside it is still taken.
    let mut named = configmap("taken");
    named["metadata"]["generateName"] = json!("taken-");
    checks.status(
        &admin.write(Method::POST, CONFIGMAPS, &named).await,
        &failure(
            409,
            "AlreadyExists",
            r#"configmaps "taken" already exists"#,
            Some(json!({"name": "taken", "kind": "configmaps"})),
        ),
    );
    let lease = json!({"metadata": {"name": "taken"}, "spec": {"holderIdentity": "a"}});
    admin.create(LEASES, lease.clone()).await;
    checks.status(
        &admin.write(Method::POST, LEASES, &lease).await,
        &failure(
            409,
            "AlreadyExists",
            r#"leases.coordination.k8s.io "taken" already exists"#,
            Some(json!({"name": "taken", "group": "coordination.k8s.io", "kind": "leases"})),
        ),
    );
    let reply = admin
        .write(
            Method::POST,
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "default"}}),
        )
        .await;
    checks.status(
        &reply,
        &failure(
            409,
            "AlreadyExists",
            r#"namespaces "default" already exists"#,
            Some(json!({"name": "default", "kind": "namespaces"})),
        ),
    );
    // The name of an object being deleted (held by a finalizer): the store reads it back
    // and says so (apiserver registry/generic/registry/store.go Create).
    let mut held = configmap("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    admin.create(CONFIGMAPS, held.clone()).await;
    let deleted = admin
        .write(Method::DELETE, &format!("{CONFIGMAPS}/held"), &json!({}))
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    checks.status(
        &admin
            .write(Method::POST, CONFIGMAPS, &configmap("held"))
            .await,
        &failure(
            409,
            "AlreadyExists",
            r#"object is being deleted: configmaps "held" already exists"#,
            Some(json!({"name": "held", "kind": "configmaps"})),
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 409 Conflict: an update or patch at a stale resourceVersion, and delete preconditions that
/// do not hold.
async fn conflicts(backend: Backend) {
    let kapi = Kapi::start(backend, &[]).await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    let created = admin.create(CONFIGMAPS, configmap("contended")).await;
    let path = format!("{CONFIGMAPS}/contended");
    let mut update = created.clone();
    update["data"]["k"] = json!("first");
    let updated = admin.write(Method::PUT, &path, &update).await;
    assert_eq!(updated.status, 200, "{}", updated.body);

    // apiserver pkg/registry/generic/registry/store.go Update: a resourceVersion that is not
    // the stored one → NewConflict(resource, name, OptimisticLockErrorMsg).
    let stale = failure(
        409,
        "Conflict",
        r#"Operation cannot be fulfilled on configmaps "contended": the object has been modified; please apply your changes to the latest version and try again"#,
        Some(json!({"name": "contended", "kind": "configmaps"})),
    );
    update["data"]["k"] = json!("second");
    checks.status(&admin.write(Method::PUT, &path, &update).await, &stale);
    // endpoints/handlers/patch.go: a patch that sets metadata.resourceVersion makes it the
    // update's precondition, with the same conflict (and no retry).
    let patch = json!({"metadata": {"resourceVersion": rv_of(&created).to_string()}, "data": {"k": "third"}});
    checks.status(&admin.write(Method::PATCH, &path, &patch).await, &stale);

    // apiserver pkg/registry/rest/delete.go BeforeDelete checks the preconditions first and
    // names the object by its *kind* (GroupResource{Group: gvk.Group, Resource: gvk.Kind}).
    let uid = created["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let wrong_uid = "00000000-0000-0000-0000-000000000000";
    let options =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": wrong_uid}});
    let reply = admin.write(Method::DELETE, &path, &options).await;
    checks.status(
        &reply,
        &failure(
            409,
            "Conflict",
            &format!(
                r#"Operation cannot be fulfilled on ConfigMap "contended": the UID in the precondition ({wrong_uid}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"#
            ),
            Some(json!({"name": "contended", "kind": "ConfigMap"})),
        ),
    );
    let current = admin.get(&path).await.json();
    let current_rv = rv_of(&current);
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": rv_of(&created).to_string()}});
    let reply = admin.write(Method::DELETE, &path, &options).await;
    checks.status(
        &reply,
        &failure(
            409,
            "Conflict",
            &format!(
                r#"Operation cannot be fulfilled on ConfigMap "contended": the ResourceVersion in the precondition ({}) does not match the ResourceVersion in record ({current_rv}). The object might have been modified"#,
                rv_of(&created)
            ),
            Some(json!({"name": "contended", "kind": "ConfigMap"})),
        ),
    );
    // kubernetes pkg/registry/core/namespace/storage/storage.go REST.Delete checks the UID
    // precondition itself, with its own message and the namespaces resource.
    let namespace = admin
        .create(
            "/api/v1/namespaces",
            json!({"metadata": {"name": "preconditioned"}}),
        )
        .await;
    let ns_uid = namespace["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let options =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": wrong_uid}});
    let reply = admin
        .write(
            Method::DELETE,
            "/api/v1/namespaces/preconditioned",
            &options,
        )
        .await;
    checks.status(
        &reply,
        &failure(
            409,
            "Conflict",
            &format!(
                r#"Operation cannot be fulfilled on namespaces "preconditioned": Precondition failed: UID in precondition: {wrong_uid}, UID in object meta: {ns_uid}"#
            ),
            Some(json!({"name": "preconditioned", "kind": "namespaces"})),
        ),
    );
    // The object is untouched by the refused writes.
    let kept = admin.get(&path).await.json();
    checks.check(kept["data"]["k"] == json!("first"), || {
        format!("the refused writes changed the object: {kept}")
    });
    kapi.stop().await;
    checks.finish();
}

/// A watch from a resourceVersion older than the watch cache's window: HTTP 200 and a single
/// ERROR event carrying 410 Expired. The window starts at the revision the cache was filled
/// at, so a restart on the same store makes every earlier revision too old.
async fn expired_watch(backend: Backend) {
    let mut kapi = Kapi::start(backend, &[]).await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    let old = admin.create(CONFIGMAPS, configmap("old")).await;
    let r1 = rv_of(&old);
    admin.create(CONFIGMAPS, configmap("newer")).await;
    kapi.restart().await;
    let admin = kapi.admin();
    let listed = admin.get(CONFIGMAPS).await.json();
    let listed_at: u64 = listed["metadata"]["resourceVersion"]
        .as_str()
        .expect("list resourceVersion")
        .parse()
        .expect("numeric");
    let reply = admin
        .get(&format!("{CONFIGMAPS}?watch=true&resourceVersion={r1}"))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), "application/json");
    let lines: Vec<&str> = reply.body.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "one ERROR event, then the end: {:?}",
        reply.body
    );
    let event: Value = serde_json::from_str(lines[0]).expect("a JSON watch event");
    // The cache was listed when the server started; the bootstrap controllers may have written
    // (to other resources) since, so its revision lies between r1 and the list's.
    let cache_start: u64 = event["object"]["message"]
        .as_str()
        .and_then(|message| message.rsplit_once('('))
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no cache revision in {event}"));
    assert!(
        r1 < cache_start && cache_start <= listed_at,
        "cache revision {cache_start} not in ({r1}, {listed_at}]"
    );
    // apiserver pkg/storage/cacher/watch_cache.go getAllEventsSinceLocked:
    // NewResourceExpired("too old resource version: %d (%d)", rv, oldest-1), where oldest-1
    // is the revision the cache was listed at; cacher.go newErrWatcher sends it as the one
    // ERROR event (the Status without details, apimachinery errors.go NewResourceExpired).
    let expected = json!({
        "type": "ERROR",
        "object": failure(
            410,
            "Expired",
            &format!("too old resource version: {r1} ({cache_start})"),
            None,
        ),
    });
    checks.check(event == expected, || {
        format!("watch event mismatch\n--- actual: {event}\n--- expected: {expected}")
    });
    kapi.stop().await;
    checks.finish();
}

/// The names of a list's items.
fn item_names(list: &Value) -> Vec<String> {
    let items = list["items"].as_array().expect("items");
    items
        .iter()
        .filter_map(|item| item["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// A list at an exact resourceVersion that compaction removed: 410 Expired.
async fn expired_list(backend: Backend) {
    let kapi = Kapi::start(
        backend,
        &["--etcd-compaction-interval", "1s", common::NO_ROOT_CA[0]],
    )
    .await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    let old = admin.create(CONFIGMAPS, configmap("old")).await;
    let r1 = rv_of(&old);
    admin.create(CONFIGMAPS, configmap("newer")).await;
    // A first page, whose continue token names the revision it was read at.
    let page = admin.get(&format!("{CONFIGMAPS}?limit=1")).await.json();
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_string();
    admin.create(CONFIGMAPS, configmap("newest")).await;
    let path = format!("{CONFIGMAPS}?resourceVersion={r1}&resourceVersionMatch=Exact");
    let deadline = Instant::now() + DEADLINE;
    let reply = loop {
        let reply = admin.get(&path).await;
        if reply.status != 200 {
            break reply;
        }
        let names = item_names(&reply.json());
        assert_eq!(names, ["old"], "the list at {r1} before compaction");
        assert!(
            Instant::now() < deadline,
            "revision {r1} was not compacted in {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // apiserver pkg/storage/etcd3/errors.go interpretListError: etcd's ErrCompacted on a
    // list without continue → NewResourceExpired("The resourceVersion for the provided list
    // is too old.") (the watch cache, asked for an exact revision it has no snapshot of,
    // delegates to etcd: pkg/storage/cacher/delegator.go).
    checks.status(
        &reply,
        &failure(
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
            None,
        ),
    );
    // The token's revision is compacted too (the newest write came after it): 410 with
    // upstream's message and a token that continues from the same key at the latest
    // revision (etcd3 handleCompactedErrorForPaging), which then lists the rest.
    let continued = format!("{CONFIGMAPS}?continue={token}");
    let deadline = Instant::now() + DEADLINE;
    let reply = loop {
        let reply = admin.get(&continued).await;
        if reply.status != 200 {
            break reply;
        }
        assert!(
            Instant::now() < deadline,
            "the token's revision was not compacted in {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut body = reply.json();
    let fresh = body["metadata"]["continue"].take();
    body["metadata"] = json!({});
    let expected = failure(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        None,
    );
    checks.check(reply.status == 410 && body == expected, || {
        format!("expired continue: HTTP {} {body}", reply.status)
    });
    let fresh = fresh.as_str().expect("a fresh continue token");
    let rest = admin.get(&format!("{CONFIGMAPS}?continue={fresh}")).await;
    let names = item_names(&rest.json());
    checks.check(names == ["newest", "old"], || {
        format!("the inconsistent continuation listed {names:?}")
    });
    kapi.stop().await;
    checks.finish();
}

on_both_backends!(
    not_found,
    already_exists,
    conflicts,
    expired_watch,
    expired_list,
);

// ---------------------------------------------------------------------------------------------
// Cases where the store does not matter (embedded).

async fn embedded() -> Kapi {
    Kapi::start(Backend::Embedded, &[]).await
}
