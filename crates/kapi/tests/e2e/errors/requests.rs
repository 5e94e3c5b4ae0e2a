use super::*;

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
    let widgets = common::install_widgets(&admin).await;
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
            &format!("406: Not Acceptable\n\nAvailable representations: {MEDIA_TYPES}"),
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
                "406: Not Acceptable\n\nAvailable representations: {MEDIA_TYPES}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
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
            &format!("only the following media types are accepted: {MEDIA_TYPES}"),
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
