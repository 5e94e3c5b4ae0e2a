use super::*;

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

/// 429 TooManyRequests beyond `--max-mutating-requests-inflight`, with API Priority and
/// Fairness off (the max-in-flight filter it replaces; see flowcontrol.rs for its 429s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests() {
    let kapi = Kapi::start(
        Backend::Embedded,
        &[
            "--enable-priority-and-fairness=false",
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
    let held = kapi.admin().hold(CONFIGMAPS, &body).await;

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
    // Without flow control, nothing is classified.
    assert_eq!(refused.header("x-kubernetes-pf-flowschema-uid"), "");
    // Reads have their own limit, so alice's read goes through while the mutating slot is
    // held (retried while the in-process controllers' own reads, which are not system:masters,
    // take the one read slot); the masters group is never refused.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let reply = alice.get(&format!("{CONFIGMAPS}/missing")).await;
        if reply.status == 404 {
            break;
        }
        assert_eq!(reply.status, 429, "{}", reply.body);
        assert!(Instant::now() < deadline, "no read got the read slot");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let admin_probe = kapi
        .admin()
        .write(Method::POST, &probe, &configmap("admin-probe"))
        .await;
    assert_eq!(admin_probe.status, 201, "{}", admin_probe.body);

    // Releasing the held request frees the slot.
    assert_eq!(held.release().await, "HTTP/1.1 201 Created");
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
