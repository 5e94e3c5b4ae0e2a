//! The generic server end to end: a real server in-process on a free port, real TLS, HTTP/1.1
//! and HTTP/2 clients, and routes defined here to play slow, hanging, panicking and streaming
//! handlers.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, PROTOCOLS, Protocol, TestServer, ok, route, start};
use futures::{FutureExt, StreamExt};
use http::{Method, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use kapi_server::body::{Body, BoxError};
use kapi_server::{UserInfo, not_found_route};
use tokio::sync::{Notify, Semaphore};

/// The 403 body for anonymous `GET /api`, byte for byte kube-apiserver's.
const FORBIDDEN_API: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/api\"","reason":"Forbidden","details":{},"code":403}
"#;

/// The version a response was served over, for a protocol.
fn version_of(protocol: Protocol) -> http::Version {
    match protocol {
        Protocol::Http1 => http::Version::HTTP_11,
        Protocol::Http2 => http::Version::HTTP_2,
    }
}

/// A server with the default not-found route and a post-start hook that finishes at once.
async fn plain_server() -> TestServer {
    start(
        not_found_route(),
        |_| {},
        |server| {
            server
                .add_post_start_hook("test-hook", |_| async { Ok(()) })
                .unwrap();
        },
    )
    .await
}

/// Polls `path` as anonymous until it answers `status`.
async fn wait_for_status(client: &Client, path: &str, status: StatusCode) {
    for _ in 0..200 {
        if client.get(path).await.status == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{path} never answered {status}");
}

#[tokio::test]
async fn health_endpoints_answer_in_upstream_format() {
    let server = plain_server().await;
    for protocol in PROTOCOLS {
        let anonymous = server.client(None, protocol);
        wait_for_status(&anonymous, "/readyz", StatusCode::OK).await;
        let healthz = anonymous.get("/healthz").await;
        assert_eq!(
            (healthz.status, healthz.body.as_str()),
            (StatusCode::OK, "ok")
        );
        assert_eq!(healthz.version, version_of(protocol));
        assert_eq!(healthz.header("content-type"), "text/plain; charset=utf-8");
        assert_eq!(healthz.header("x-content-type-options"), "nosniff");
        assert_eq!(healthz.header("cache-control"), "no-cache, private");
        assert_eq!(healthz.header("audit-id").len(), 36);

        let readyz = anonymous.get("/readyz?verbose").await;
        let expected = "[+]ping ok\n[+]log ok\n[+]poststarthook/test-hook ok\n[+]shutdown ok\nreadyz check passed\n";
        assert_eq!(
            (readyz.status, readyz.body.as_str()),
            (StatusCode::OK, expected)
        );

        let livez = anonymous.get("/livez?verbose&exclude=log").await;
        let expected =
            "[+]ping ok\n[+]log excluded: ok\n[+]poststarthook/test-hook ok\nlivez check passed\n";
        assert_eq!(livez.body, expected);

        let single = server
            .admin(protocol)
            .get("/readyz/poststarthook/test-hook")
            .await;
        assert_eq!(
            (single.status, single.body.as_str()),
            (StatusCode::OK, "ok")
        );
        // Upstream's public-info role names the endpoints exactly, not the checks below them.
        assert_eq!(
            anonymous.get("/readyz/ping").await.status,
            StatusCode::FORBIDDEN
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn post_start_hooks_gate_readiness() {
    let release = Arc::new(Notify::new());
    let gate = release.clone();
    let server = start(
        not_found_route(),
        |_| {},
        move |server| {
            server
                .add_post_start_hook("slow-hook", move |_| async move {
                    gate.notified().await;
                    Ok(())
                })
                .unwrap();
        },
    )
    .await;
    let anonymous = server.client(None, Protocol::Http1);
    let readyz = anonymous.get("/readyz").await;
    let expected = "[+]ping ok\n[+]log ok\n[-]poststarthook/slow-hook failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n";
    assert_eq!(
        (readyz.status, readyz.body.as_str()),
        (StatusCode::INTERNAL_SERVER_ERROR, expected)
    );
    let single = server
        .admin(Protocol::Http1)
        .get("/healthz/poststarthook/slow-hook")
        .await;
    assert_eq!(single.body, "internal server error: not finished\n");
    assert!(
        server.started().now_or_never().is_none(),
        "started before its hook"
    );

    release.notify_one();
    tokio::time::timeout(Duration::from_secs(30), server.started())
        .await
        .expect("started once the hook finished");
    wait_for_status(&anonymous, "/readyz", StatusCode::OK).await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failing_post_start_hook_stops_the_server() {
    let fail = Arc::new(Notify::new());
    let trigger = fail.clone();
    let server = start(
        not_found_route(),
        |_| {},
        move |server| {
            server
                .add_post_start_hook("broken", move |_| async move {
                    trigger.notified().await;
                    Err("no luck".into())
                })
                .unwrap();
        },
    )
    .await;
    fail.notify_one();
    let error = server.join().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"PostStartHook "broken" failed: no luck"#
    );
}

#[tokio::test]
async fn version_is_served_as_upstream() {
    let server = plain_server().await;
    for protocol in PROTOCOLS {
        let anonymous = server.client(None, protocol);
        for path in ["/version", "/version/"] {
            let version = anonymous.get(path).await;
            assert_eq!(version.status, StatusCode::OK);
            assert_eq!(version.header("content-type"), "application/json");
            let info: serde_json::Value = serde_json::from_str(&version.body).unwrap();
            assert_eq!(info["gitVersion"], "v1.35.0");
            assert_eq!(
                (info["major"].as_str(), info["minor"].as_str()),
                (Some("1"), Some("35"))
            );
        }
        let post = server.admin(protocol).send(Method::POST, "/version").await;
        let expected = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}
"#;
        assert_eq!(
            (post.status, post.body.as_str()),
            (StatusCode::METHOD_NOT_ALLOWED, expected)
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn anonymous_requests_are_forbidden_beyond_public_info() {
    let server = plain_server().await;
    for protocol in PROTOCOLS {
        let anonymous = server.client(None, protocol);
        let api = anonymous.get("/api").await;
        assert_eq!(
            (api.status, api.body.as_str()),
            (StatusCode::FORBIDDEN, FORBIDDEN_API)
        );
        assert_eq!(api.header("content-type"), "application/json");

        let list = anonymous.get("/api/v1/namespaces/default/configmaps").await;
        let status: serde_json::Value = serde_json::from_str(&list.body).unwrap();
        assert_eq!(
            status["message"],
            r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        assert_eq!(status["details"], serde_json::json!({"kind": "configmaps"}));

        assert_eq!(anonymous.get("/healthz").await.status, StatusCode::OK);
        assert_eq!(
            anonymous.get("/metrics").await.status,
            StatusCode::FORBIDDEN
        );

        let unknown = server.admin(protocol).get("/api").await;
        assert_eq!(
            (unknown.status, unknown.body.as_str()),
            (StatusCode::NOT_FOUND, "404 page not found\n")
        );
    }
    server.shutdown().await.unwrap();
}

/// A route that answers with the user it sees.
fn whoami() -> kapi_server::Route {
    route(|request: Request<Body>| async move {
        let user = request
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default();
        let extra = user
            .extra
            .values()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join(",");
        let text = format!("{}|{}|{}", user.name, user.groups.join(","), extra);
        Response::new(kapi_server::body::full(text))
    })
}

#[tokio::test]
async fn client_certificates_authenticate() {
    let server = start(whoami(), |_| {}, |_| {}).await;
    let pki = server.pki.clone();
    for protocol in PROTOCOLS {
        let admin = server
            .client(Some(&pki.admin), protocol)
            .get("/whoami")
            .await;
        let (name_groups, credential) = admin.body.rsplit_once('|').unwrap();
        assert_eq!(
            name_groups,
            "kapi-admin|system:masters,system:authenticated"
        );
        assert!(credential.starts_with("X509SHA256=") && credential.len() == 11 + 64);

        let user = server
            .client(Some(&pki.user), protocol)
            .get("/whoami")
            .await;
        assert!(user.body.starts_with("alice|dev,system:authenticated|"));

        let stranger = server
            .client(Some(&pki.stranger), protocol)
            .get("/whoami")
            .await;
        let expected = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}
"#;
        assert_eq!(
            (stranger.status, stranger.body.as_str()),
            (StatusCode::UNAUTHORIZED, expected)
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn audit_ids_are_echoed_or_made() {
    let server = plain_server().await;
    let anonymous = server.client(None, Protocol::Http1);
    let given = anonymous
        .try_send(Method::GET, "/healthz", &[("Audit-ID", "my-request")])
        .await
        .unwrap();
    assert_eq!(given.header("audit-id"), "my-request");
    let made = anonymous.get("/healthz").await;
    assert_ne!(
        made.header("audit-id"),
        anonymous.get("/healthz").await.header("audit-id")
    );
    server.shutdown().await.unwrap();
}

/// A route that holds lists of pods (`GET .../pods`) until released and answers everything
/// else, watches included, at once.
fn holding_route(entered: Arc<Semaphore>, release: Arc<Notify>) -> kapi_server::Route {
    route(move |request: Request<Body>| {
        let (entered, release) = (entered.clone(), release.clone());
        async move {
            let watch = request
                .uri()
                .query()
                .is_some_and(|q| q.contains("watch=true"));
            let list = request.method() == Method::GET && request.uri().path().ends_with("/pods");
            if list && !watch {
                let released = release.notified();
                tokio::pin!(released);
                released.as_mut().enable();
                entered.add_permits(1);
                released.await;
            }
            ok("done")
        }
    })
}

#[tokio::test]
async fn requests_beyond_the_inflight_limit_get_429() {
    for protocol in PROTOCOLS {
        let (entered, release) = (Arc::new(Semaphore::new(0)), Arc::new(Notify::new()));
        let server = start(
            holding_route(entered.clone(), release.clone()),
            |config| {
                config.max_requests_inflight = 1;
                config.max_mutating_requests_inflight = 1;
            },
            |_| {},
        )
        .await;
        let alice = server.client(Some(&server.pki.user), protocol);
        let pods = "/api/v1/namespaces/default/pods";
        let held = tokio::spawn({
            let alice = alice.clone();
            async move { alice.get(pods).await }
        });
        entered.acquire().await.unwrap().forget();

        let refused = alice.get(pods).await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.body, "Too many requests, please try again later.\n");
        assert_eq!(refused.header("retry-after"), "1");
        assert_eq!(refused.header("content-type"), "text/plain; charset=utf-8");
        // Health checks are never refused, however busy the server is.
        for check in ["/readyz", "/livez", "/healthz"] {
            assert_eq!(alice.get(check).await.status, StatusCode::OK, "{check}");
        }

        // Watches are long-running and not counted; mutating requests have their own limit.
        assert_eq!(
            alice.get(&format!("{pods}?watch=true")).await.status,
            StatusCode::OK
        );
        assert_eq!(alice.send(Method::POST, pods).await.status, StatusCode::OK);
        // system:masters is never refused.
        let admin = tokio::spawn({
            let admin = server.admin(protocol);
            async move { admin.get(pods).await }
        });
        entered.acquire().await.unwrap().forget();
        release.notify_waiters();
        assert_eq!(held.await.unwrap().status, StatusCode::OK);
        assert_eq!(admin.await.unwrap().status, StatusCode::OK);

        let metrics = server.admin(protocol).get("/metrics").await.body;
        let dropped = r#"apiserver_request_total{verb="LIST",dry_run="",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver",code="429"} 1"#;
        assert!(metrics.contains(dropped), "{metrics}");
        server.shutdown().await.unwrap();
    }
}

/// A response body that sends one line, then waits forever (a watch that sees no events).
fn endless_body() -> Body {
    let first =
        futures::stream::once(async { Ok::<_, BoxError>(Frame::data(Bytes::from("event\n"))) });
    StreamBody::new(first.chain(futures::stream::pending())).boxed_unsync()
}

/// A route that hangs on `/hang`, streams endlessly for watches, and streams for 1.3 s on
/// `/api/v1/pods?watch=true&short`.
fn slow_route() -> kapi_server::Route {
    route(|request: Request<Body>| async move {
        let query = request.uri().query().unwrap_or("");
        if request.uri().path() == "/hang" {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        if query.contains("short") {
            let late = futures::stream::once(async {
                tokio::time::sleep(Duration::from_millis(1300)).await;
                Ok::<_, BoxError>(Frame::data(Bytes::from("late event\n")))
            });
            return Response::new(StreamBody::new(late).boxed_unsync());
        }
        if query.contains("watch=true") {
            return Response::new(endless_body());
        }
        ok("quick")
    })
}

#[tokio::test]
async fn slow_requests_time_out_with_504() {
    let server = start(
        slow_route(),
        |config| config.request_timeout = Duration::from_secs(1),
        |_| {},
    )
    .await;
    for protocol in PROTOCOLS {
        let admin = server.admin(protocol);
        let started = Instant::now();
        let hung = admin.get("/hang").await;
        let expected = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}
"#;
        assert_eq!(
            (hung.status, hung.body.as_str()),
            (StatusCode::GATEWAY_TIMEOUT, expected)
        );
        assert_eq!(hung.header("content-type"), "text/plain; charset=utf-8");
        assert!(started.elapsed() >= Duration::from_secs(1));

        // The timeout parameter can only shorten the deadline.
        let shorter = Instant::now();
        let hung = admin.get("/hang?timeout=50ms").await;
        assert_eq!(hung.status, StatusCode::GATEWAY_TIMEOUT);
        assert!(shorter.elapsed() < Duration::from_millis(900));

        let invalid = admin.get("/hang?timeout=abc").await;
        let status: serde_json::Value = serde_json::from_str(&invalid.body).unwrap();
        assert_eq!(invalid.status, StatusCode::BAD_REQUEST);
        assert_eq!(
            status["message"],
            r#"invalid timeout specified in the request URL - time: invalid duration "abc""#
        );

        // A watch is long-running: it outlives the request timeout.
        let watch = admin.get("/api/v1/pods?watch=true&short").await;
        assert_eq!(
            (watch.status, watch.body.as_str()),
            (StatusCode::OK, "late event\n")
        );
    }
    // Each 504 is a termination in self-defense, as upstream's timeout filter records it.
    let metrics = server.admin(PROTOCOLS[0]).get("/metrics").await.body;
    let terminated = r#"apiserver_request_terminations_total{verb="GET",group="",version="",resource="",subresource="/hang",scope="",component="apiserver",code="504"} "#;
    let count = metrics
        .lines()
        .find_map(|line| line.strip_prefix(terminated))
        .map(str::to_string);
    let expected = (2 * PROTOCOLS.len()).to_string();
    assert_eq!(count.as_deref(), Some(expected.as_str()), "{metrics}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_panicking_handler_answers_500_and_the_server_lives() {
    let panicking = route(|request: Request<Body>| async move {
        if request.uri().path() == "/panic" {
            panic!("handler bug");
        }
        ok("fine")
    });
    let server = start(panicking, |_| {}, |_| {}).await;
    for protocol in PROTOCOLS {
        let admin = server.admin(protocol);
        let crashed = admin.get("/panic").await;
        assert_eq!(crashed.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            crashed.body,
            "This request caused apiserver to panic. Look in the logs for details.\n"
        );
        assert_eq!(admin.get("/fine").await.body, "fine");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_fails_readyz_then_drains() {
    let mut server = start(
        slow_route(),
        |config| config.shutdown_delay = Duration::from_millis(800),
        |_| {},
    )
    .await;
    let anonymous = server.client(None, Protocol::Http2);
    wait_for_status(&anonymous, "/readyz", StatusCode::OK).await;
    let watch = server
        .admin(Protocol::Http2)
        .open(Method::GET, "/api/v1/pods?watch=true", &[])
        .await
        .unwrap();
    let mut watch_body = watch.into_body();
    let first = watch_body
        .frame()
        .await
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap();
    assert_eq!(first, "event\n");

    let started = Instant::now();
    server.begin_shutdown();
    wait_for_status(&anonymous, "/readyz", StatusCode::INTERNAL_SERVER_ERROR).await;
    let readyz = anonymous.get("/readyz").await;
    assert!(
        readyz
            .body
            .ends_with("[-]shutdown failed: reason withheld\nreadyz check failed\n"),
        "{}",
        readyz.body
    );
    assert_eq!(anonymous.get("/healthz").await.status, StatusCode::OK);

    // Draining ends the watch cleanly, and the server stops long before its drain timeout.
    assert!(watch_body.collect().await.is_ok());
    assert!(started.elapsed() >= Duration::from_millis(700));
    tokio::time::timeout(Duration::from_secs(5), server.join())
        .await
        .unwrap()
        .unwrap();
    assert!(
        anonymous
            .try_send(Method::GET, "/healthz", &[])
            .await
            .is_err()
    );
}

#[tokio::test]
async fn metrics_count_health_requests() {
    let server = plain_server().await;
    let admin = server.admin(Protocol::Http1);
    server.client(None, Protocol::Http1).get("/healthz").await;
    let metrics = admin.get("/metrics").await;
    assert_eq!(
        metrics.header("content-type"),
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let healthz = r#"apiserver_request_total{verb="GET",dry_run="",group="",version="",resource="",subresource="/healthz",scope="",component="",code="200"}"#;
    assert!(metrics.body.contains(healthz), "{}", metrics.body);
    assert!(
        metrics
            .body
            .contains("apiserver_request_duration_seconds_bucket{")
    );
    server.shutdown().await.unwrap();
}
