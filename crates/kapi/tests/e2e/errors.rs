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
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The media types kube-apiserver 1.35 serves built-in resources in (k8s.io/apimachinery
/// pkg/runtime/serializer/codec_factory.go newSerializersForScheme: JSON, YAML, protobuf; CBOR
/// only behind the alpha CBORServingAndStorage gate, off by default).
const MEDIA_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// The media types kapi answers in: kube-apiserver's [`MEDIA_TYPES`] less protobuf, whose
/// responses kapi does not serve yet (it decodes protobuf request bodies). This is the one
/// deliberate difference in these tests: a 406 lists only what kapi can actually send.
const RESPONSE_MEDIA_TYPES: &str = "application/json, application/yaml";

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
    expired_list
);

// ---------------------------------------------------------------------------------------------
// Cases where the store does not matter (embedded).

async fn embedded() -> Kapi {
    Kapi::start(Backend::Embedded, &[]).await
}

/// Paths no endpoint serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    // Under a served group-version (/api/v1, /apis/coordination.k8s.io/v1), the go-restful
    // web service finds no route (go-restful v3 curly.go SelectRoute: 404 "404: Page Not
    // Found"); apiserver pkg/server/handler.go serviceErrorHandler answers
    // NewGenericServerResponse(404, ...) (apimachinery errors.go), whose message ignores the
    // router's and whose details are empty but present.
    let expected = failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
        Some(json!({})),
    );
    for path in [
        "/api/v1/namespaces/default/foos",
        "/api/v1/foos",
        "/api/v1/namespaces/default/configmaps/x/nosuchsubresource",
        "/apis/coordination.k8s.io/v1/namespaces/default/foos",
        // A version the built-in group does not serve is still under the group's web
        // service (pkg/server/handler.go sends every path below a web service's root to
        // go-restful).
        "/apis/apps/v9/deployments",
        "/apis/apps/v1beta1/namespaces/default/deployments",
        "/api/v9/pods",
    ] {
        let reply = admin.get(path).await;
        checks.status(&reply, &expected);
    }
    // Outside every web service the request falls through the delegation chain to the
    // NotFound handler (apiserver pkg/util/notfoundhandler): Go's http.NotFound, plain text.
    let reply = admin.get("/apis/nosuch.example.com/v1/foos").await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.body, "404 page not found\n");
    assert_eq!(reply.header("content-type"), "text/plain; charset=utf-8");
    kapi.stop().await;
    checks.finish();
}

/// Custom resource paths the CRD handler does not serve: an unknown resource of a custom
/// group, or a namespaced resource's object at cluster scope, are passed on to the final
/// plain 404 (apiextensions customresource_handler.go ServeHTTP: r.delegate.ServeHTTP);
/// an unknown subresource is the object's NotFound; a PATCH of another type names the
/// patch types custom resources accept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_paths_the_crd_handler_does_not_serve() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    admin
        .create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        )
        .await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let deadline = Instant::now() + Duration::from_secs(10);
    while admin.get(widgets).await.status != 200 {
        assert!(Instant::now() < deadline, "the CRD was never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}});
    admin.create(widgets, widget).await;
    for path in [
        "/apis/example.com/v1/namespaces/default/nothings",
        "/apis/example.com/v1/widgets/w1",
    ] {
        let reply = admin.get(path).await;
        assert_eq!(
            (reply.status, reply.body.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
    }
    assert_eq!(admin.get("/apis/example.com/v1/widgets").await.status, 200);
    let reply = admin.get(&format!("{widgets}/w1/nosuchsubresource")).await;
    checks.status(
        &reply,
        &failure(
            404,
            "NotFound",
            r#"widgets.example.com "w1" not found"#,
            Some(json!({"name": "w1", "group": "example.com", "kind": "widgets"})),
        ),
    );
    let text = [("content-type", "text/plain")];
    let reply = admin
        .send(Method::PATCH, &format!("{widgets}/w1"), &text, "{}")
        .await;
    checks.status(
        &reply,
        &failure(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            None,
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// A YAML body's repeated key is a strict decoding error named by its line, as go-yaml's
/// strict conversion reports it (apimachinery json.go unmarshal: YAMLToJSONStrict), and a
/// warning of that line with `Warn` (apiserver handlers/rest.go parseYAMLWarnings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_bodies_report_repeated_keys() {
    let kapi = embedded().await;
    let admin = kapi.admin();
    let yaml = [("content-type", "application/yaml")];
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\ndata:\n  a: one\n  a: two\nbogus: 1\n";
    let reply = admin
        .send(
            Method::POST,
            &format!("{CONFIGMAPS}?fieldValidation=Strict"),
            &yaml,
            body,
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(
        reply.json()["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         yaml: unmarshal errors:\n  line 7: key \"a\" already set in map, unknown field \"bogus\""
    );
    let reply = admin
        .send(
            Method::POST,
            &format!("{CONFIGMAPS}?fieldValidation=Warn"),
            &yaml,
            body,
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["data"]["a"], "two");
    assert_eq!(
        reply.header("warning"),
        r#"299 - "line 7: key \"a\" already set in map""#
    );
    kapi.stop().await;
}

/// 400 BadRequest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    admin.create(CONFIGMAPS, configmap("present")).await;
    // apiserver pkg/registry/rest/meta.go EnsureObjectNamespaceMatchesRequestNamespace
    // (called by handlers/create.go and update.go): NewBadRequest, no details.
    let mismatch = failure(
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
        None,
    );
    let mut other_namespace = configmap("elsewhere");
    other_namespace["metadata"]["namespace"] = json!("kube-system");
    checks.status(
        &admin
            .write(Method::POST, CONFIGMAPS, &other_namespace)
            .await,
        &mismatch,
    );
    // A body of another type fails to decode into the resource's (handlers/rest.go
    // transformDecodeError over the scheme's conversion and registration errors); another
    // version of the same kind decodes, and create.go's API version check refuses it.
    let namespaces = "/api/v1/namespaces";
    for (body, message) in [
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
            r#"Pod in version "v1" cannot be handled as a Namespace: converting (v1.Pod) to (core.Namespace): unknown conversion"#,
        ),
        (
            json!({"apiVersion": "v1", "kind": "Gizmo", "metadata": {"name": "p"}}),
            r#"Gizmo in version "v1" cannot be handled as a Namespace: no kind "Gizmo" is registered for version "v1" in scheme "pkg/api/legacyscheme/scheme.go:30""#,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Namespace", "metadata": {"name": "p"}}),
            r#"Namespace in version "v1" cannot be handled as a Namespace: no kind "Namespace" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30""#,
        ),
    ] {
        let reply = admin.write(Method::POST, namespaces, &body).await;
        checks.status(&reply, &failure(400, "BadRequest", message, None));
    }
    let hpa = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"}, "spec": {"maxReplicas": 1,
        "scaleTargetRef": {"kind": "Deployment", "name": "d"}}});
    let reply = admin
        .write(
            Method::POST,
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
            &hpa,
        )
        .await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            "the API version in the data (autoscaling/v1) does not match the expected API version (autoscaling/v2)",
            None,
        ),
    );
    // Subresource bodies decode into the subresource's own type the same way (pods/binding's
    // core Binding, pods/eviction's policy Eviction, serviceaccounts/token's TokenRequest,
    // scale's autoscaling Scale).
    admin
        .create(
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "web"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .await;
    admin
        .create(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "d"}, "spec": {"replicas": 0,
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}});
    for (method, path, body, message) in [
        (
            Method::POST,
            "/api/v1/namespaces/default/pods/web/binding",
            &pod,
            r#"Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to (core.Binding): unknown conversion"#,
        ),
        (
            Method::POST,
            "/api/v1/namespaces/default/pods/web/eviction",
            &pod,
            r#"Pod in version "v1" cannot be handled as a Eviction: converting (v1.Pod) to (policy.Eviction): unknown conversion"#,
        ),
        (
            Method::POST,
            "/api/v1/namespaces/default/serviceaccounts/default/token",
            &pod,
            r#"Pod in version "v1" cannot be handled as a TokenRequest: converting (v1.Pod) to (authentication.TokenRequest): unknown conversion"#,
        ),
        (
            Method::PUT,
            "/apis/apps/v1/namespaces/default/deployments/d/scale",
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
            r#"Deployment in version "v1" cannot be handled as a Scale: converting (v1.Deployment) to (autoscaling.Scale): unknown conversion"#,
        ),
    ] {
        let reply = admin.write(method, path, body).await;
        checks.status(&reply, &failure(400, "BadRequest", message, None));
    }
    // policy/v1beta1 Evictions are still taken (upstream's EvictionREST.AcceptsGroupVersion).
    let eviction = json!({"apiVersion": "policy/v1beta1", "kind": "Eviction",
        "metadata": {"name": "web", "namespace": "default"}});
    let reply = admin
        .write(
            Method::POST,
            "/api/v1/namespaces/default/pods/web/eviction",
            &eviction,
        )
        .await;
    checks.check(reply.status == 201, || {
        format!("v1beta1 eviction: {} {}", reply.status, reply.body)
    });
    let mut moved = admin.get(&format!("{CONFIGMAPS}/present")).await.json();
    moved["metadata"]["namespace"] = json!("kube-system");
    let reply = admin
        .write(Method::PUT, &format!("{CONFIGMAPS}/present"), &moved)
        .await;
    checks.status(&reply, &mismatch);
    // apiserver handlers/rest.go checkName (update.go, after the namespace check).
    let renamed = configmap("another-name");
    let reply = admin
        .write(Method::PUT, &format!("{CONFIGMAPS}/present"), &renamed)
        .await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            "the name of the object (another-name) does not match the name on the URL (present)",
            None,
        ),
    );
    // Malformed JSON: the JSON serializer reads apiVersion/kind first (apimachinery
    // pkg/runtime/serializer/json/meta.go SimpleMetaFactory.Interpret, encoding/json's
    // error), and handlers/rest.go transformDecodeError, with no kind known, answers
    // "the object provided is unrecognized (must be of type <Kind>): <err> (<summary>)",
    // where summarizeData keeps the first 30 bytes of a body starting with '{' and adds " ...".
    let truncated = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}"#;
    let reply = admin
        .send(
            Method::POST,
            CONFIGMAPS,
            &[("content-type", "application/json")],
            truncated,
        )
        .await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            &format!(
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({} ...)",
                &truncated[..30]
            ),
            None,
        ),
    );
    // A body that is not JSON at all: the summary is hex (summarizeData's default branch),
    // encoding/json: "invalid character 'o' in literal null (expecting 'u')".
    let reply = admin
        .send(
            Method::POST,
            CONFIGMAPS,
            &[("content-type", "application/json")],
            "not json",
        )
        .await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u') (6e6f74206a736f6e)",
            None,
        ),
    );
    // A bad label selector: handlers/get.go ListResource decodes the query with the meta
    // parameter codec and wraps the error in NewBadRequest; the error is labels.Parse's
    // (apimachinery pkg/labels/selector.go parse/parseOperator), verbatim.
    let reply = admin
        .get(&format!("{CONFIGMAPS}?labelSelector=a%20b"))
        .await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            None,
        ),
    );
    // List options as upstream's parameter decoding, ValidateListOptions and storage check
    // them: a limit that is not a number is a 400, one of 0 or less means none; a list
    // takes no sendInitialEvents; a continue token must be valid and comes without a
    // resourceVersion.
    let reply = admin.get(&format!("{CONFIGMAPS}?limit=abc")).await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            r#"strconv.ParseInt: parsing "abc": invalid syntax"#,
            None,
        ),
    );
    let reply = admin.get(&format!("{CONFIGMAPS}?limit=-1")).await;
    assert_eq!(reply.status, 200);
    let reply = admin
        .get(&format!("{CONFIGMAPS}?sendInitialEvents=false"))
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json()["message"],
        r#"ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"#
    );
    let first = admin.get(&format!("{CONFIGMAPS}?limit=1")).await.json();
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let reply = admin
        .get(&format!(
            "{CONFIGMAPS}?limit=1&continue={token}&resourceVersion=5"
        ))
        .await;
    checks.status(
        &reply,
        &failure(
            400,
            "BadRequest",
            "specifying resource version is not allowed when using continue",
            None,
        ),
    );
    let reply = admin.get(&format!("{CONFIGMAPS}?continue=!!")).await;
    assert_eq!(reply.status, 400);
    let message = reply.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("invalid continue token: continue key is not valid: "),
        "{message}"
    );
    // apiserver pkg/storage/continue.go DecodeContinue: a start key that is not its own
    // clean path would range outside the resource's keys.
    let forged = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NSwic3RhcnQiOiIuLi9zZWNyZXRzL3gifQ";
    checks.status(
        &admin
            .get(&format!("{CONFIGMAPS}?limit=1&continue={forged}"))
            .await,
        &failure(
            400,
            "BadRequest",
            "invalid continue token: continue key is not valid: ../secrets/x",
            None,
        ),
    );
    // apimachinery pkg/fields/selector.go: `a===b` is `a` `==` `=b`, whose `=` is unescaped.
    checks.status(
        &admin
            .get(&format!("{CONFIGMAPS}?fieldSelector=a%3D%3D%3Db"))
            .await,
        &failure(
            400,
            "BadRequest",
            "invalid field selector: unescaped character in value: 61",
            None,
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 422 Invalid, with one cause per field error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    // kubernetes pkg/apis/core/validation ValidateConfigMap → ValidateObjectMeta with
    // NameIsDNSSubdomain (apimachinery pkg/api/validation/objectmeta.go,
    // pkg/util/validation/validation.go IsDNS1123Subdomain and RegexError); the error is
    // field.Invalid (pkg/util/validation/field/errors.go: ErrorBody `Invalid value: "<v>":
    // <detail>`); apimachinery errors.go NewInvalid: message `<Kind> "<name>" is invalid:
    // <aggregate>`, details name, kind (the Kind, not the resource), one cause per error.
    let name_error = r#"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#;
    let name_cause = format!(r#"Invalid value: "Bad_Name": {name_error}"#);
    let reply = admin
        .write(Method::POST, CONFIGMAPS, &configmap("Bad_Name"))
        .await;
    checks.status(
        &reply,
        &failure(
            422,
            "Invalid",
            &format!(r#"ConfigMap "Bad_Name" is invalid: metadata.name: {name_cause}"#),
            Some(json!({
                "name": "Bad_Name",
                "kind": "ConfigMap",
                "causes": [
                    {"reason": "FieldValueInvalid", "message": name_cause, "field": "metadata.name"},
                ],
            })),
        ),
    );
    // Several errors: field.ErrorList.ToAggregate, whose Error() is `[a, b]` (apimachinery
    // pkg/util/errors/errors.go aggregate.Error); the label value error comes from
    // ValidateLabels (pkg/apis/meta/v1/validation, content.IsLabelValue) on the field
    // metadata.labels, after the name's (objectmeta.go order).
    let label_error = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let label_cause = format!(r#"Invalid value: "bad value!": {label_error}"#);
    let mut both = configmap("Bad_Name");
    both["metadata"]["labels"] = json!({"app": "bad value!"});
    let reply = admin.write(Method::POST, CONFIGMAPS, &both).await;
    checks.status(
        &reply,
        &failure(
            422,
            "Invalid",
            &format!(
                r#"ConfigMap "Bad_Name" is invalid: [metadata.name: {name_cause}, metadata.labels: {label_cause}]"#
            ),
            Some(json!({
                "name": "Bad_Name",
                "kind": "ConfigMap",
                "causes": [
                    {"reason": "FieldValueInvalid", "message": name_cause, "field": "metadata.name"},
                    {"reason": "FieldValueInvalid", "message": label_cause, "field": "metadata.labels"},
                ],
            })),
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 422 Invalid for list and watch options, and what 1.35 accepts there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_list_options() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    // apiserver handlers/get.go ListResource → apimachinery
    // pkg/apis/meta/internalversion/validation ValidateListOptions (lists) or
    // validateWatchOptions (watches) → NewInvalid(GroupKind{meta.k8s.io, ListOptions}, "",
    // errs): the name is empty (quoted in the message, omitted from details), the cause
    // message is field.Forbidden's body "Forbidden: <detail>".
    let options_invalid = |field: &str, detail: &str| {
        failure(
            422,
            "Invalid",
            &format!(r#"ListOptions.meta.k8s.io "" is invalid: {field}: Forbidden: {detail}"#),
            Some(json!({
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": [
                    {"reason": "FieldValueForbidden", "message": format!("Forbidden: {detail}"), "field": field},
                ],
            })),
        )
    };
    let reply = admin
        .get(&format!("{CONFIGMAPS}?resourceVersionMatch=NotOlderThan"))
        .await;
    checks.status(
        &reply,
        &options_invalid(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
    );
    let reply = admin
        .get(&format!("{CONFIGMAPS}?watch=true&sendInitialEvents=true"))
        .await;
    checks.status(
        &reply,
        &options_invalid(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
    );
    let reply = admin
        .get(&format!(
            "{CONFIGMAPS}?watch=true&resourceVersion=0&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    checks.status(
        &reply,
        &options_invalid(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
    );
    // validateWatchOptions has no resourceVersion requirement (the list rule above does not
    // apply to watches) and, in 1.35, no allowWatchBookmarks requirement: client-go's and
    // kube-rs's streaming lists send resourceVersion="" for a consistent initial state.
    for query in [
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=&timeoutSeconds=1",
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    ] {
        let reply = admin.get(&format!("{CONFIGMAPS}?{query}")).await;
        checks.check(reply.status == 200, || {
            format!(
                "GET {CONFIGMAPS}?{query}: kube-apiserver 1.35 serves this watch (HTTP 200), kapi answered HTTP {}: {}",
                reply.status, reply.body
            )
        });
    }
    kapi.stop().await;
    checks.finish();
}

/// 405 MethodNotAllowed: a verb the resource's REST storage does not implement has no route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn method_not_allowed() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    // Namespaces have no DeleteCollection (kubernetes pkg/registry/core/namespace/storage
    // REST lists its methods; apiserver endpoints/installer.go registers routes only for the
    // verbs implemented), so DELETE /api/v1/namespaces matches the path's routes (GET, POST)
    // but not the method: go-restful v3 jsr311.go detectRoute → 405 "405: Method Not
    // Allowed" → apiserver pkg/server/handler.go serviceErrorHandler →
    // NewGenericServerResponse(405): generic message, empty details, no Allow header.
    let expected = failure(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        Some(json!({})),
    );
    let reply = admin
        .send(Method::DELETE, "/api/v1/namespaces", &[], "")
        .await;
    checks.status(&reply, &expected);
    // POST to a named object: its path has GET, PUT, PATCH and DELETE routes only.
    let reply = admin
        .write(Method::POST, &format!("{CONFIGMAPS}/x"), &configmap("x"))
        .await;
    checks.status(&reply, &expected);
    kapi.stop().await;
    checks.finish();
}

/// 406 NotAcceptable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_acceptable() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    admin.create(CONFIGMAPS, configmap("present")).await;
    // A media type no route produces: go-restful v3 jsr311.go detectRoute refuses it before
    // any handler runs, with "406: Not Acceptable\n\nAvailable representations: <the route's
    // Produces>" (apiserver endpoints/installer.go: a GET of one object produces the
    // serializer's media types; a list also the ;stream=watch ones), and
    // serviceErrorHandler → NewGenericServerResponse(406) keeps that message (reason
    // NotAcceptable, empty details). The Status is written as JSON (responsewriters
    // WriteObjectNegotiated → WriteRawJSON when the Accept header cannot be met).
    let csv = [("accept", "text/csv")];
    let reply = admin
        .send(Method::GET, &format!("{CONFIGMAPS}/present"), &csv, "")
        .await;
    checks.status(
        &reply,
        &failure(
            406,
            "NotAcceptable",
            &format!("406: Not Acceptable\n\nAvailable representations: {RESPONSE_MEDIA_TYPES}"),
            Some(json!({})),
        ),
    );
    let reply = admin.send(Method::GET, CONFIGMAPS, &csv, "").await;
    checks.status(
        &reply,
        &failure(
            406,
            "NotAcceptable",
            &format!(
                "406: Not Acceptable\n\nAvailable representations: {RESPONSE_MEDIA_TYPES}, application/json;stream=watch"
            ),
            Some(json!({})),
        ),
    );
    // A media type the route accepts (application/json) with a transformation the endpoint
    // does not offer: the handler's negotiation refuses it (apiserver
    // handlers/negotiation/negotiate.go NegotiateOutputMediaType → errors.go
    // NewNotAcceptableError: "only the following media types are accepted: ...", no details).
    let foo = [("accept", "application/json;as=Foo;v=v1;g=meta.k8s.io")];
    let reply = admin
        .send(Method::GET, &format!("{CONFIGMAPS}/present"), &foo, "")
        .await;
    checks.status(
        &reply,
        &failure(
            406,
            "NotAcceptable",
            &format!("only the following media types are accepted: {RESPONSE_MEDIA_TYPES}"),
            None,
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 415 UnsupportedMediaType.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_media_type() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    admin.create(CONFIGMAPS, configmap("present")).await;
    // PATCH routes consume only the patch types (apiserver endpoints/installer.go
    // Consumes(json-patch, merge-patch, strategic-merge-patch, apply-patch+yaml)), so
    // go-restful v3 jsr311.go detectRoute refuses a body of another type: 415 "415:
    // Unsupported Media Type" → serviceErrorHandler → NewGenericServerResponse(415), which
    // keeps the router's message (reason UnsupportedMediaType, empty details).
    let text = [("content-type", "text/plain")];
    let reply = admin
        .send(
            Method::PATCH,
            &format!("{CONFIGMAPS}/present"),
            &text,
            r#"{"data":{"k":"w"}}"#,
        )
        .await;
    checks.status(
        &reply,
        &failure(
            415,
            "UnsupportedMediaType",
            "415: Unsupported Media Type",
            Some(json!({})),
        ),
    );
    // POST routes consume */* (installer.go newWebService: ws.Consumes("*/*")); the create
    // handler's negotiation refuses the type (handlers/negotiation/negotiate.go
    // NegotiateInputSerializerForMediaType → errors.go NewUnsupportedMediaTypeError, no
    // details).
    let reply = admin
        .send(
            Method::POST,
            CONFIGMAPS,
            &text,
            configmap("text").to_string(),
        )
        .await;
    checks.status(
        &reply,
        &failure(
            415,
            "UnsupportedMediaType",
            &format!(
                "the body of the request was in an unknown format - accepted media types include: {MEDIA_TYPES}"
            ),
            None,
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 413 RequestEntityTooLarge for a body over 3 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_entity_too_large() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let admin = kapi.admin();
    // apiserver pkg/server/config.go: MaxRequestBodyBytes 3 MiB; handlers/rest.go
    // limitedReadBody reads limit+1 bytes and answers NewRequestEntityTooLargeError("limit is
    // 3145728") (apimachinery errors.go: "Request entity too large: <msg>", no details).
    // A valid ConfigMap of exactly 3 MiB + 1 byte.
    let limit = 3 * 1024 * 1024;
    let (head, tail) = (
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":""#,
        r#""}}"#,
    );
    let body = format!(
        "{head}{}{tail}",
        "x".repeat(limit + 1 - head.len() - tail.len())
    );
    assert_eq!(body.len(), limit + 1);
    let reply = admin
        .send(
            Method::POST,
            CONFIGMAPS,
            &[("content-type", "application/json")],
            body,
        )
        .await;
    checks.status(
        &reply,
        &failure(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
            None,
        ),
    );
    assert_eq!(admin.get(&format!("{CONFIGMAPS}/big")).await.status, 404);
    kapi.stop().await;
    checks.finish();
}

/// Lets `group` create and read ConfigMaps everywhere (a ClusterRole and its binding).
async fn grant_configmaps(admin: &Client, group: &str) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let role = json!({
        "metadata": {"name": "configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}],
    });
    let binding = json!({
        "metadata": {"name": "configmaps"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "configmaps"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    });
    for (path, body) in [("clusterroles", role), ("clusterrolebindings", binding)] {
        let reply = admin
            .write(Method::POST, &format!("{rbac}/{path}"), &body)
            .await;
        assert_eq!(reply.status, 201, "{}", reply.body);
    }
}

/// 429 TooManyRequests beyond `--max-mutating-requests-inflight`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests() {
    let kapi = Kapi::start(
        Backend::Embedded,
        &[
            "--max-mutating-requests-inflight",
            "1",
            "--max-requests-inflight",
            "1",
        ],
    )
    .await;
    grant_configmaps(&kapi.admin(), "developers").await;
    let alice = kapi.user("alice", "developers");
    // RBAC follows its objects' watch caches: wait until alice's grant is seen.
    let deadline = Instant::now() + DEADLINE;
    while alice.get(&format!("{CONFIGMAPS}/missing")).await.status == 403 {
        assert!(Instant::now() < deadline, "alice's binding was never seen");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The admin holds the one mutating slot: a create whose body has not all arrived (the
    // slot is taken when the request enters the filter, before the handler reads the body).
    let body = format!("{:<1000}", r#"{"metadata":{"name":"held"}}"#);
    let mut held = kapi.admin().connect().await.expect("connect");
    let head = format!(
        "POST {CONFIGMAPS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    held.write_all(head.as_bytes()).await.expect("send head");
    held.write_all(&body.as_bytes()[..1]).await.expect("send");
    held.flush().await.expect("flush");

    // apiserver pkg/server/filters/maxinflight.go: a request that finds no free slot (and is
    // not system:masters) gets tooManyRequests: `Retry-After: 1` and Go's http.Error, a plain
    // text body (not a Status), "Too many requests, please try again later.\n".
    let probe = format!("{CONFIGMAPS}?dryRun=All");
    let deadline = Instant::now() + DEADLINE;
    let refused = loop {
        let reply = alice.write(Method::POST, &probe, &configmap("probe")).await;
        if reply.status == 429 {
            break reply;
        }
        assert_eq!(reply.status, 201, "{}", reply.body);
        assert!(Instant::now() < deadline, "the held request took no slot");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(refused.body, "Too many requests, please try again later.\n");
    assert_eq!(refused.header("retry-after"), "1");
    assert_eq!(refused.header("content-type"), "text/plain; charset=utf-8");
    assert_eq!(refused.header("x-content-type-options"), "nosniff");
    // Reads have their own limit; the masters group is never refused.
    assert_eq!(
        alice.get(&format!("{CONFIGMAPS}/missing")).await.status,
        404
    );
    let admin_probe = kapi
        .admin()
        .write(Method::POST, &probe, &configmap("admin-probe"))
        .await;
    assert_eq!(admin_probe.status, 201, "{}", admin_probe.body);

    // Releasing the held request frees the slot.
    held.write_all(&body.as_bytes()[1..]).await.expect("send");
    held.flush().await.expect("flush");
    let mut answer = vec![0u8; 64];
    let read = tokio::time::timeout(DEADLINE, held.read(&mut answer))
        .await
        .expect("the held request is answered")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer[..read]).to_string();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    // The slot is free once the held response has been sent in full.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let reply = alice.write(Method::POST, &probe, &configmap("probe")).await;
        if reply.status == 201 {
            break;
        }
        assert_eq!(reply.status, 429, "{}", reply.body);
        assert!(Instant::now() < deadline, "the slot was not released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kapi.stop().await;
}

/// 403 Forbidden for an anonymous request the authorizer denies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let anonymous = kapi.anonymous();
    // apiserver pkg/endpoints/filters/authorization.go → responsewriters/errors.go Forbidden:
    // NewForbidden(GroupResource, name, forbiddenMessage) (apimachinery errors.go), with no
    // authorizer reason appended (RBAC denies with an empty reason when no binding is
    // broken): details group, kind (the resource) and name as set.
    let reply = anonymous.get("/api/v1/namespaces").await;
    checks.status(
        &reply,
        &failure(
            403,
            "Forbidden",
            r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#,
            Some(json!({"kind": "namespaces"})),
        ),
    );
    let reply = anonymous.get(&format!("{CONFIGMAPS}/x")).await;
    checks.status(
        &reply,
        &failure(
            403,
            "Forbidden",
            r#"configmaps "x" is forbidden: User "system:anonymous" cannot get resource "configmaps" in API group "" in the namespace "default""#,
            Some(json!({"name": "x", "kind": "configmaps"})),
        ),
    );
    let reply = anonymous.get(LEASES).await;
    checks.status(
        &reply,
        &failure(
            403,
            "Forbidden",
            r#"leases.coordination.k8s.io is forbidden: User "system:anonymous" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "default""#,
            Some(json!({"group": "coordination.k8s.io", "kind": "leases"})),
        ),
    );
    // A non-resource path (RBAC's system:public-info-viewer allows only /healthz, /livez,
    // /readyz and /version to the unauthenticated): no group or resource, so
    // "forbidden: <message>" and empty details.
    let reply = anonymous.get("/metrics").await;
    checks.status(
        &reply,
        &failure(
            403,
            "Forbidden",
            r#"forbidden: User "system:anonymous" cannot get path "/metrics""#,
            Some(json!({})),
        ),
    );
    kapi.stop().await;
    checks.finish();
}

/// 401 Unauthorized for a client certificate no trusted CA issued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized() {
    let kapi = embedded().await;
    let mut checks = Checks::default();
    let stranger = kapi.stranger();
    // kube-apiserver requests but does not require client certificates at the TLS layer; the
    // x509 authenticator fails to verify the chain, the anonymous authenticator is not tried
    // after an error (union FailOnError), and apiserver pkg/endpoints/filters/authentication.go
    // Unauthorized answers NewUnauthorized("Unauthorized") (no details).
    let expected = failure(401, "Unauthorized", "Unauthorized", None);
    checks.status(&stranger.get("/api/v1/namespaces").await, &expected);
    checks.status(&stranger.get("/readyz").await, &expected);
    kapi.stop().await;
    checks.finish();
}

/// JSON is indented as Go's `json.MarshalIndent` writes it for people: `?pretty=true`, or a
/// curl, Wget or browser User-Agent (upstream's `isPrettyPrint`); never for kubectl, never for
/// a watch, and `?pretty=false` wins over the User-Agent. Discovery keeps Go's field order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pretty_json_for_people_and_discovery_in_go_field_order() {
    const CURL: &[(&str, &str)] = &[("user-agent", "curl/8.5.0")];
    const KUBECTL: &[(&str, &str)] = &[("user-agent", "kubectl/v1.35.0 (linux/amd64)")];
    let kapi = embedded().await;
    let admin = kapi.admin();
    let send = |path: &'static str, headers: &'static [(&'static str, &'static str)]| {
        let admin = admin.clone();
        async move { admin.send(Method::GET, path, headers, "").await }
    };

    let missing = send("/api/v1/namespaces/default/configmaps/nope", CURL).await;
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.body,
        "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"configmaps \\\"nope\\\" not found\",\n  \"reason\": \"NotFound\",\n  \"details\": {\n    \"name\": \"nope\",\n    \"kind\": \"configmaps\"\n  },\n  \"code\": 404\n}"
    );
    let compact = send("/api/v1/namespaces/default/configmaps/nope", KUBECTL).await;
    assert!(
        compact
            .body
            .starts_with("{\"kind\":\"Status\",\"apiVersion\":\"v1\""),
        "{}",
        compact.body
    );
    let off = send(
        "/api/v1/namespaces/default/configmaps/nope?pretty=false",
        CURL,
    )
    .await;
    assert_eq!(off.body, compact.body);
    let on = send(
        "/api/v1/namespaces/default/configmaps/nope?pretty=1",
        KUBECTL,
    )
    .await;
    assert_eq!(on.body, missing.body);

    let list = send("/api/v1/namespaces?pretty=true", &[]).await;
    assert!(
        list.body.starts_with(
            "{\n  \"kind\": \"NamespaceList\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {"
        ),
        "{}",
        list.body
    );
    // The same items (the list's resourceVersion moves with the server's own lease writes).
    assert_eq!(
        serde_json::from_str::<Value>(&list.body).unwrap()["items"],
        serde_json::from_str::<Value>(&send("/api/v1/namespaces", &[]).await.body).unwrap()["items"]
    );

    let resources = send("/api/v1", &[]).await;
    assert!(
        resources.body.starts_with("{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":[{\"name\":\"bindings\",\"singularName\":\"binding\",\"namespaced\":true,\"kind\":\"Binding\",\"verbs\":[\"create\"]}"),
        "{}",
        &resources.body[..200]
    );
    let groups = send("/apis", CURL).await;
    assert!(groups.body.starts_with("{\n  \"kind\": \"APIGroupList\",\n  \"apiVersion\": \"v1\",\n  \"groups\": [\n    {\n      \"name\": \"apiregistration.k8s.io\","), "{}", &groups.body[..200]);

    // A watch is never indented (upstream's stream serializer has no pretty form).
    let watch = send("/api/v1/namespaces?watch=true&timeoutSeconds=1", CURL).await;
    let first = watch.body.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("{\"type\":\"ADDED\",\"object\":{\""),
        "{first}"
    );
    kapi.stop().await;
}
