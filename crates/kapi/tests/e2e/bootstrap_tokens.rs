//! Bootstrap tokens as kubeadm uses them: with `--enable-bootstrap-token-auth` a token
//! Secret's `<id>.<secret>` authenticates as `system:bootstrap:<id>`; the bootstrap signer
//! signs kube-public's `cluster-info` with it; the token cleaner deletes it once expired.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::Method;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::common::process::{DEADLINE, Kapi};

const SECRETS: &str = "/api/v1/namespaces/kube-system/secrets";

fn token_secret(id: &str, secret: &str, extra: Value) -> Value {
    let mut data = json!({"token-id": id, "token-secret": secret,
        "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true"});
    data.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"metadata": {"name": format!("bootstrap-token-{id}")},
        "type": "bootstrap.kubernetes.io/token", "stringData": data})
}

/// Polls `path` (as admin) until `done` accepts the reply.
async fn wait_until(kapi: &Kapi, path: &str, done: impl Fn(u16, &Value) -> bool) -> Value {
    let admin = kapi.admin();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let reply = admin.get(path).await;
        let body: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
        if done(reply.status, &body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{path} stays {}", reply.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_tokens_authenticate_sign_cluster_info_and_expire() {
    let controllers = "--controllers=*,bootstrap-signer-controller,token-cleaner-controller";
    let kapi = Kapi::start(
        Backend::Embedded,
        &["--enable-bootstrap-token-auth", controllers],
    )
    .await;
    let admin = kapi.admin();
    let groups = json!({"auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"});
    admin
        .create(SECRETS, token_secret("abcdef", "0123456789abcdef", groups))
        .await;

    // The token authenticates.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let whoami = |token: &'static str| {
        let anonymous = kapi.anonymous();
        let review = review.to_string();
        async move {
            let bearer = format!("Bearer {token}");
            let headers = [
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
            ];
            anonymous
                .send(
                    Method::POST,
                    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    &headers,
                    review,
                )
                .await
        }
    };
    let reply = whoami("abcdef.0123456789abcdef").await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let user = &reply.json()["status"]["userInfo"];
    assert_eq!(user["username"], "system:bootstrap:abcdef");
    assert_eq!(
        user["groups"],
        json!([
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated"
        ])
    );
    assert_eq!(whoami("abcdef.0123456789abcdee").await.status, 401);

    // cluster-info is signed with it.
    let kubeconfig = "apiVersion: v1\nkind: Config\nclusters: []\n";
    admin
        .create(
            "/api/v1/namespaces/kube-public/configmaps",
            json!({"metadata": {"name": "cluster-info"}, "data": {"kubeconfig": kubeconfig}}),
        )
        .await;
    let cluster_info = "/api/v1/namespaces/kube-public/configmaps/cluster-info";
    let signed = wait_until(&kapi, cluster_info, |_, cm| {
        cm["data"]["jws-kubeconfig-abcdef"].is_string()
    })
    .await;
    let signature = signed["data"]["jws-kubeconfig-abcdef"].as_str().unwrap();
    let (header, tag) = signature.split_once("..").unwrap();
    assert_eq!(
        URL_SAFE_NO_PAD.decode(header).unwrap(),
        br#"{"alg":"HS256","kid":"abcdef"}"#
    );
    let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(kubeconfig));
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"0123456789abcdef");
    ring::hmac::verify(
        &key,
        input.as_bytes(),
        &URL_SAFE_NO_PAD.decode(tag).unwrap(),
    )
    .expect("the signature verifies with the token's secret");

    // A token that expires is deleted, and its signature removed.
    let soon = kapi_apimachinery::gotime::format_rfc3339(
        kapi_apimachinery::gotime::Timestamp::now().seconds + 3,
    );
    admin
        .create(
            SECRETS,
            token_secret("ghijkl", "0123456789abcdef", json!({"expiration": soon})),
        )
        .await;
    wait_until(&kapi, cluster_info, |_, cm| {
        cm["data"]["jws-kubeconfig-ghijkl"].is_string()
    })
    .await;
    wait_until(
        &kapi,
        &format!("{SECRETS}/bootstrap-token-ghijkl"),
        |status, _| status == 404,
    )
    .await;
    let info = wait_until(&kapi, cluster_info, |_, cm| {
        cm["data"]["jws-kubeconfig-ghijkl"].is_null()
    })
    .await;
    assert!(info["data"]["jws-kubeconfig-abcdef"].is_string());
    kapi.stop().await;
}
