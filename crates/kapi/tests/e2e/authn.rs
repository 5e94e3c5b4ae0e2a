//! Authentication end to end: static tokens from `--token-auth-file`, service-account tokens
//! from `kubectl create token` used by kubectl and kube-rs, refused tokens (unknown, wrong
//! audience, bound to a deleted pod) answered 401 with upstream's Status, and impersonation.

use crate::common;

use common::{Backend, KUBECTL, TestServer, ok_stdin, stderr, stdout};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

/// The server URL and CA of the admin kubeconfig.
fn server_and_ca(server: &TestServer) -> (String, String) {
    let admin = Kubeconfig::read_from(&server.kubeconfig).expect("read the admin kubeconfig");
    let cluster = admin.clusters[0].cluster.clone().expect("a cluster");
    let ca = cluster.certificate_authority_data.expect("CA data");
    (cluster.server.expect("a server"), ca)
}

/// A kubeconfig authenticating with `token`, beside the admin one.
pub(crate) fn token_kubeconfig(server: &TestServer, name: &str, token: &str) -> std::path::PathBuf {
    let (url, ca) = server_and_ca(server);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster: {{server: {url}, certificate-authority-data: {ca}}}\nusers:\n- name: u\n  user: {{token: {token}}}\ncontexts:\n- name: c\n  context: {{cluster: kapi, user: u}}\ncurrent-context: c\n"
    );
    let path = server.data_dir.path().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

/// Runs kubectl with `kubeconfig`.
async fn kubectl_as(kubeconfig: &std::path::Path, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .await
        .expect("run kubectl")
}

/// The user `kubectl auth whoami` reports with `kubeconfig`.
async fn whoami(kubeconfig: &std::path::Path) -> Value {
    let output = kubectl_as(kubeconfig, &["auth", "whoami", "-o", "json"]).await;
    assert!(output.status.success(), "whoami: {}", stderr(&output));
    serde_json::from_str::<Value>(&stdout(&output)).unwrap()["status"]["userInfo"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_tokens_authenticate_and_bad_ones_get_401() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "s3cret,alice,1001,\"devs,ops\"\n").unwrap();
    let flag = format!("--token-auth-file={}", tokens.path().display());
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    let alice = token_kubeconfig(&server, "alice", "s3cret");
    let user = whoami(&alice).await;
    assert_eq!(user["username"], "alice");
    assert_eq!(user["uid"], "1001");
    assert_eq!(
        user["groups"],
        serde_json::json!(["devs", "ops", "system:authenticated"])
    );
    let wrong = token_kubeconfig(&server, "wrong", "nope");
    let output = kubectl_as(&wrong, &["get", "--raw", "/api/v1/namespaces"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );
    let output = kubectl_as(&wrong, &["get", "--raw", "/healthz"]).await;
    assert!(!output.status.success(), "a bad token is never anonymous");
    // A TokenReview asks the same authenticators: the token file's token is good for the API
    // audiences, and only for them.
    let review = |audiences: &str| {
        format!(
            r#"{{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",
            "spec":{{"token":"s3cret","audiences":{audiences}}}}}"#
        )
    };
    let reviewed =
        |answer: String| serde_json::from_str::<Value>(&answer).unwrap()["status"].clone();
    let create = ["create", "-f", "-", "-o", "json"];
    let status = reviewed(common::ok_stdin(&server, &create, &review("[]")).await);
    assert_eq!(
        status,
        serde_json::json!({"authenticated": true,
            "user": {"username": "alice", "uid": "1001",
                "groups": ["devs", "ops", "system:authenticated"]},
            "audiences": ["https://kubernetes.default.svc.cluster.local"]})
    );
    let status = reviewed(common::ok_stdin(&server, &create, &review(r#"["vault"]"#)).await);
    assert_eq!(
        status,
        serde_json::json!({"user": {}, "error": "invalid bearer token"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens_authenticate_kubectl_and_kube_rs() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server
        .kubectl_ok(&["create", "serviceaccount", "robot"])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "robot",
            "--clusterrole=edit",
            "--serviceaccount=default:robot",
        ])
        .await;
    let token = server.kubectl_ok(&["create", "token", "robot"]).await;
    let robot = token_kubeconfig(&server, "robot", token.trim());
    let user = whoami(&robot).await;
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(
        user["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    // RBAC sees the service account's binding.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let output = kubectl_as(&robot, &["create", "configmap", "from-kubectl"]).await;
        if output.status.success() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", stderr(&output));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let config = Kubeconfig::read_from(&robot).unwrap();
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(configmaps.get("from-kubectl").await.is_ok());
    // A token for another audience is refused.
    let other = server
        .kubectl_ok(&[
            "create",
            "token",
            "robot",
            "--audience=https://elsewhere.example",
        ])
        .await;
    let other = token_kubeconfig(&server, "other", other.trim());
    let output = kubectl_as(&other, &["auth", "whoami"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );
    // The same token, expired (re-signed with the server's own key: `kubectl create token`
    // cannot ask for less than ten minutes), is refused; re-signed as it was, it works.
    let key = std::fs::read_to_string(server.data_dir.path().join("pki/sa.key")).unwrap();
    let key = rcgen::KeyPair::from_pem(&key).unwrap();
    let resigned = |shift: i64| {
        let mut claims = jwt_claims(token.trim());
        for field in ["iat", "nbf", "exp"] {
            claims[field] = (claims[field].as_i64().unwrap() + shift).into();
        }
        sign(&key, &jwt_part(token.trim(), 0), &claims)
    };
    let fresh = token_kubeconfig(&server, "fresh", &resigned(0));
    assert_eq!(
        whoami(&fresh).await["username"],
        "system:serviceaccount:default:robot"
    );
    let expired = token_kubeconfig(&server, "expired", &resigned(-7200));
    let output = kubectl_as(&expired, &["auth", "whoami"]).await;
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_bound_to_a_pod_dies_with_it() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server
        .kubectl_ok(&["create", "serviceaccount", "robot"])
        .await;
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccountName":"robot","containers":[{"name":"c","image":"busybox"}]}}"#;
    ok_stdin(&server, &["create", "-f", "-"], pod).await;
    let token = server
        .kubectl_ok(&[
            "create",
            "token",
            "robot",
            "--bound-object-kind=Pod",
            "--bound-object-name=p",
        ])
        .await;
    let robot = token_kubeconfig(&server, "robot", token.trim());
    let user = whoami(&robot).await;
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        serde_json::json!(["p"])
    );
    server
        .kubectl_ok(&["delete", "pod", "p", "--wait=false"])
        .await;
    let output = kubectl_as(&robot, &["auth", "whoami"]).await;
    assert!(!output.status.success(), "the token outlived its pod");
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_needs_the_impersonate_verb() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "t,bob,2\n").unwrap();
    let flag = format!("--token-auth-file={}", tokens.path().display());
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    let user = server
        .kubectl_ok(&[
            "auth",
            "whoami",
            "--as=alice",
            "--as-group=devs",
            "-o",
            "json",
        ])
        .await;
    let user: Value = serde_json::from_str(&user).unwrap();
    assert_eq!(user["status"]["userInfo"]["username"], "alice");
    assert_eq!(
        user["status"]["userInfo"]["groups"],
        serde_json::json!(["devs", "system:authenticated"])
    );
    let bob = token_kubeconfig(&server, "bob", "t");
    let output = kubectl_as(
        &bob,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/configmaps",
            "--as=alice",
        ],
    )
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_can_discover_the_issuer_and_its_keys() {
    use base64::Engine;
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server
        .kubectl_ok(&["create", "serviceaccount", "robot"])
        .await;
    let token = server.kubectl_ok(&["create", "token", "robot"]).await;
    let header = token.trim().split('.').next().unwrap();
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .unwrap(),
    )
    .unwrap();
    let robot = token_kubeconfig(&server, "robot", token.trim());
    let output = kubectl_as(
        &robot,
        &["get", "--raw", "/.well-known/openid-configuration"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let configuration: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        configuration["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert!(
        configuration["jwks_uri"]
            .as_str()
            .unwrap()
            .ends_with("/openid/v1/jwks")
    );
    assert_eq!(
        configuration["id_token_signing_alg_values_supported"],
        serde_json::json!([header["alg"]])
    );
    let output = kubectl_as(&robot, &["get", "--raw", "/openid/v1/jwks"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let jwks: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let key = &jwks["keys"][0];
    assert_eq!(key["kid"], header["kid"]);
    assert_eq!(key["alg"], header["alg"]);
    assert_eq!(key["use"], "sig");
    // Anonymous requests are not allowed to (upstream's default policy).
    let anonymous = token_kubeconfig(&server, "nobody", "");
    let output = kubectl_as(&anonymous, &["get", "--raw", "/openid/v1/jwks"]).await;
    assert!(!output.status.success());
}

/// A signed ES256 JWT with `claims`, for the key `key` (id `k1`).
fn jwt(key: &rcgen::KeyPair, claims: &Value) -> String {
    let header = serde_json::json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
    sign(key, &header, claims)
}

/// Part `index` of a JWT (0: header, 1: claims), decoded.
fn jwt_part(token: &str, index: usize) -> Value {
    use base64::Engine;
    let part = token.split('.').nth(index).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The claims of a JWT.
fn jwt_claims(token: &str) -> Value {
    jwt_part(token, 1)
}

/// An ES256 JWT of `header` and `claims` signed with `key`.
fn sign(key: &rcgen::KeyPair, header: &Value, claims: &Value) -> String {
    use base64::Engine;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let signed = format!(
        "{}.{}",
        encode(header.to_string().as_bytes()),
        encode(claims.to_string().as_bytes())
    );
    let rng = ring::rand::SystemRandom::new();
    let signer =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &key.serialize_der(), &rng)
            .unwrap();
    let signature = signer.sign(&rng, signed.as_bytes()).unwrap();
    format!("{signed}.{}", encode(signature.as_ref()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_tokens_from_a_configured_issuer() {
    use base64::Engine;
    use std::sync::{Arc, OnceLock};
    let key = Arc::new(rcgen::KeyPair::generate().unwrap());
    let issuer_url: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
    let (served_key, served_url) = (key.clone(), issuer_url.clone());
    let (address, ca) = common::serve_webhook(move |path, _| {
        let (key, url) = (served_key.clone(), served_url.clone());
        async move {
            let url = url.get().cloned().unwrap_or_default();
            if path == "/.well-known/openid-configuration" {
                return serde_json::json!({"issuer": url, "jwks_uri": format!("{url}/keys")});
            }
            let point = &key.public_key_raw()[1..];
            let (x, y) = point.split_at(32);
            let encode = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
            serde_json::json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
                "x": encode(x), "y": encode(y)}]})
        }
    })
    .await;
    let url = format!("https://{address}");
    issuer_url.set(url.clone()).unwrap();
    let config = serde_json::json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthenticationConfiguration",
        "jwt": [{
            "issuer": {"url": url, "audiences": ["kapi"], "certificateAuthority": ca},
            "claimMappings": {"username": {"claim": "sub", "prefix": "oidc:"}, "groups": {"claim": "groups", "prefix": "oidc:"}},
        }],
    });
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), config.to_string()).unwrap();
    let flag = format!("--authentication-config={}", file.path().display());
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = |aud: &str, exp: i64| serde_json::json!({"iss": url, "sub": "alice", "aud": aud, "groups": ["devs"], "iat": now, "exp": exp});
    let alice = token_kubeconfig(&server, "alice", &jwt(&key, &claims("kapi", now + 600)));
    let user = whoami(&alice).await;
    assert_eq!(user["username"], "oidc:alice");
    assert_eq!(
        user["groups"],
        serde_json::json!(["oidc:devs", "system:authenticated"])
    );
    for (name, token) in [
        ("expired", jwt(&key, &claims("kapi", now - 60))),
        (
            "elsewhere",
            jwt(&key, &claims("another-audience", now + 600)),
        ),
        (
            "forged",
            jwt(
                &rcgen::KeyPair::generate().unwrap(),
                &claims("kapi", now + 600),
            ),
        ),
    ] {
        let output = kubectl_as(
            &token_kubeconfig(&server, name, &token),
            &["auth", "whoami"],
        )
        .await;
        assert!(!output.status.success(), "{name} was accepted");
        assert!(
            stderr(&output).contains("Unauthorized"),
            "{name}: {}",
            stderr(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_audiences_and_the_jwks_uri_are_configurable() {
    let server = TestServer::start(
        Backend::Embedded,
        &[
            "--api-audiences=kapi-api",
            "--service-account-jwks-uri=https://keys.example/jwks",
        ],
    )
    .await;
    server
        .kubectl_ok(&["create", "serviceaccount", "robot"])
        .await;
    for (audience, accepted) in [
        (None, true),
        (Some("kapi-api"), true),
        (Some("https://kubernetes.default.svc.cluster.local"), false),
    ] {
        let mut args = vec!["create", "token", "robot"];
        let flag = audience.map(|a| format!("--audience={a}"));
        if let Some(flag) = &flag {
            args.push(flag);
        }
        let token = server.kubectl_ok(&args).await;
        let robot = token_kubeconfig(&server, "robot", token.trim());
        let output = kubectl_as(&robot, &["auth", "whoami"]).await;
        assert_eq!(
            output.status.success(),
            accepted,
            "{audience:?}: {}",
            stderr(&output)
        );
    }
    let configuration = server
        .kubectl_ok(&["get", "--raw", "/.well-known/openid-configuration"])
        .await;
    let configuration: Value = serde_json::from_str(&configuration).unwrap();
    assert_eq!(configuration["jwks_uri"], "https://keys.example/jwks");
}

/// Legacy, secret-based tokens: a `kubernetes.io/service-account-token` Secret is filled with
/// a token, the CA and the namespace; the token authenticates as its account until the Secret
/// goes; a token Secret for a missing account is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_based_tokens_are_issued_and_honoured() {
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n\
        rules: [{level: Metadata, resources: [{group: authentication.k8s.io}, {group: ''}]}]\n";
    let (server, _audit, log) = common::audited(policy, &[]).await;
    // The annotations of the newest audit event for `resource` (not of the in-process
    // controllers' requests, which are audited too).
    let annotations_of_last = |resource: &str| -> Value {
        let events = common::audit_events(&log);
        let controller = |e: &Value| {
            e["user"]["username"]
                .as_str()
                .is_some_and(|u| u.starts_with("system:serviceaccount:kube-system:"))
        };
        let last = events
            .iter()
            .rev()
            .find(|e| e["objectRef"]["resource"] == resource && !controller(e));
        last.map(|e| e["annotations"].clone()).unwrap_or_default()
    };
    server.kubectl_ok(&["create", "serviceaccount", "ci"]).await;
    // A TokenRequest's event names the credential id of the token it issued.
    let issued = server.kubectl_ok(&["create", "token", "ci"]).await;
    let jti = jwt_claims(issued.trim())["jti"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        annotations_of_last("serviceaccounts")["authentication.kubernetes.io/issued-credential-id"],
        format!("JTI={jti}")
    );
    let secret = r#"{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token",
        "metadata":{"name":"ci-token","annotations":{"kubernetes.io/service-account.name":"ci"}}}"#;
    ok_stdin(&server, &["create", "-f", "-"], secret).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let filled = loop {
        let secret = common::get_json(&server, &["secret", "ci-token"]).await;
        if secret["data"]["token"].is_string() {
            break secret;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never filled: {secret}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    use base64::Engine as _;
    let decode = |field: &str| {
        let data = filled["data"][field].as_str().unwrap();
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(decode("namespace"), "default");
    assert!(decode("ca.crt").starts_with("-----BEGIN CERTIFICATE-----"));
    let account = common::get_json(&server, &["serviceaccount", "ci"]).await;
    assert_eq!(
        filled["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        account["metadata"]["uid"]
    );
    let ci = token_kubeconfig(&server, "ci", &decode("token"));
    assert_eq!(
        whoami(&ci).await["username"],
        "system:serviceaccount:default:ci"
    );
    // TokenReviews accept it too, for the API audiences.
    let review = serde_json::json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview", "spec": {"token": decode("token")}});
    let create = ["create", "-f", "-", "-o", "json"];
    let answer = common::ok_stdin(&server, &create, &review.to_string()).await;
    let status = serde_json::from_str::<Value>(&answer).unwrap()["status"].clone();
    assert_eq!(
        (&status["authenticated"], &status["user"]["username"]),
        (
            &Value::Bool(true),
            &Value::from("system:serviceaccount:default:ci")
        )
    );
    // Its uses are annotated in the audit log, as a manually created Secret's token...
    let used = annotations_of_last("selfsubjectreviews");
    assert_eq!(
        used["authentication.k8s.io/legacy-token"],
        "system:serviceaccount:default:ci"
    );
    assert_eq!(
        used["authentication.k8s.io/legacy-token-manual-secret"],
        "ci-token"
    );
    // ... or, once the account lists the Secret, as an auto-generated one, with a warning.
    let listed = r#"{"secrets": [{"name": "ci-token"}]}"#;
    server
        .kubectl_ok(&["patch", "serviceaccount", "ci", "-p", listed])
        .await;
    let output = kubectl_as(&ci, &["auth", "whoami"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "Warning: Use tokens from the TokenRequest API or manually created secret-based \
             tokens instead of auto-generated secret-based tokens."
        ),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        annotations_of_last("selfsubjectreviews")["authentication.k8s.io/legacy-token-autogenerated-secret"],
        "ci-token"
    );

    // Its use is recorded on the Secret, by the day; a token labelled invalid is refused.
    let used = loop {
        let secret = common::get_json(&server, &["secret", "ci-token"]).await;
        if let Some(day) =
            secret["metadata"]["labels"]["kubernetes.io/legacy-token-last-used"].as_str()
        {
            break day.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "use never recorded: {secret}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // Today, or yesterday if the day changed since the request.
    let day = |when: &str| {
        let output = std::process::Command::new("date")
            .args(["-u", "-d", when, "+%F"])
            .output()
            .expect("date");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert!([day("now"), day("yesterday")].contains(&used), "{used}");
    // Since when uses are tracked is published for kube-controller-manager's cleaner.
    let tracking = common::get_json(
        &server,
        &[
            "configmap",
            "-n",
            "kube-system",
            "kube-apiserver-legacy-service-account-token-tracking",
        ],
    )
    .await;
    let since = tracking["data"]["since"].as_str().unwrap_or_default();
    assert!(
        [day("now"), day("yesterday")].iter().any(|d| d == since),
        "{tracking}"
    );
    server
        .kubectl_ok(&[
            "label",
            "secret",
            "ci-token",
            "kubernetes.io/legacy-token-invalid-since=2026-01-01",
        ])
        .await;
    let output = kubectl_as(&ci, &["auth", "whoami"]).await;
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );
    // The failed authentication's event says why.
    assert_eq!(
        annotations_of_last("selfsubjectreviews")["authentication.k8s.io/legacy-token-invalidated"],
        "ci-token/default"
    );
    server
        .kubectl_ok(&[
            "label",
            "secret",
            "ci-token",
            "kubernetes.io/legacy-token-invalid-since-",
        ])
        .await;
    assert_eq!(
        whoami(&ci).await["username"],
        "system:serviceaccount:default:ci"
    );

    server.kubectl_ok(&["delete", "secret", "ci-token"]).await;
    let output = kubectl_as(&ci, &["auth", "whoami"]).await;
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );

    let orphan = r#"{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token",
        "metadata":{"name":"orphan","annotations":{"kubernetes.io/service-account.name":"nobody"}}}"#;
    ok_stdin(&server, &["create", "-f", "-"], orphan).await;
    server
        .kubectl_ok(&["wait", "--for=delete", "secret/orphan", "--timeout=10s"])
        .await;
}

/// Webhook token authentication: tokens nothing else knows are asked of a TokenReview
/// service the test serves; its users are who the webhook says, refused tokens get 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_webhook_vouches_for_its_users() {
    let (address, ca) = common::serve_webhook(|_, review: Value| async move {
        let status = match review["spec"]["token"].as_str() {
            Some("opaque-jane") => serde_json::json!({"authenticated": true, "user": {
                "username": "jane", "uid": "7", "groups": ["developers"]}}),
            _ => serde_json::json!({"authenticated": false, "error": "unknown token"}),
        };
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status})
    })
    .await;
    let file = common::webhook_kubeconfig(&format!("https://{address}/authenticate"), &ca);
    let flag = format!(
        "--authentication-token-webhook-config-file={}",
        file.path().display()
    );
    let server = TestServer::start(Backend::Embedded, &[&flag]).await;
    let jane = token_kubeconfig(&server, "jane", "opaque-jane");
    let user = whoami(&jane).await;
    assert_eq!(user["username"], "jane");
    assert_eq!(
        user["groups"],
        serde_json::json!(["developers", "system:authenticated"])
    );
    let stranger = token_kubeconfig(&server, "stranger", "opaque-stranger");
    let output = kubectl_as(&stranger, &["auth", "whoami"]).await;
    assert!(
        stderr(&output).contains("Unauthorized"),
        "{}",
        stderr(&output)
    );
}

/// A self-signed CA for front proxies, and certificates it issues for `names`: the CA's PEM,
/// then each certificate's (PEM certificate, PEM key).
fn front_proxy_pki(names: &[&str]) -> (String, Vec<(String, String)>) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, "front-proxy-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let issued = names.iter().map(|name| {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, *name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    });
    (ca_cert.pem(), issued.collect())
}

/// Who a SelfSubjectReview says the sender of `headers` is, through a client with the
/// certificate `identity` (PEM certificate and key); the API error when refused.
async fn review_as_proxied(
    server: &TestServer,
    identity: &(String, String),
    headers: &[(&'static str, &str)],
) -> Result<Value, kube::Error> {
    use base64::Engine;
    let (url, ca) = server_and_ca(server);
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster: {{server: {url}, certificate-authority-data: {ca}}}\nusers:\n- name: u\n  user: {{client-certificate-data: {}, client-key-data: {}}}\ncontexts:\n- name: c\n  context: {{cluster: kapi, user: u}}\ncurrent-context: c\n",
        encode(&identity.0),
        encode(&identity.1)
    );
    let kubeconfig: Kubeconfig = serde_yaml_ng::from_str(&text).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    for (name, value) in headers {
        config
            .headers
            .push((http::HeaderName::from_static(name), value.parse().unwrap()));
    }
    let client = kube::Client::try_from(config).unwrap();
    let review =
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let request = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&review).unwrap())
        .unwrap();
    let answer: Value = client.request(request).await?;
    Ok(answer["status"]["userInfo"].clone())
}

/// Front-proxy authentication (`--requestheader-*`): a proxy whose certificate the
/// request-header CA issued, with an allowed common name, names the user in headers; other
/// certificates' headers count for nothing (401); the `extension-apiserver-authentication`
/// ConfigMap publishes the settings for extension API servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn front_proxies_name_their_users_in_headers() {
    let (ca, issued) = front_proxy_pki(&["front-proxy-client", "intruder"]);
    let (proxy, intruder) = (&issued[0], &issued[1]);
    let ca_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca_file.path(), &ca).unwrap();
    let ca_flag = format!(
        "--requestheader-client-ca-file={}",
        ca_file.path().display()
    );
    let flags = [
        ca_flag.as_str(),
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-uid-headers=X-Remote-Uid",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    ];
    let server = TestServer::start(Backend::Embedded, &flags).await;
    let alice = [
        ("x-remote-user", "alice"),
        ("x-remote-uid", "a-1"),
        ("x-remote-group", "devs"),
        ("x-remote-group", "ops"),
        ("x-remote-extra-scopes", "read"),
        ("x-remote-extra-acme.com%2fproject", "apollo"),
    ];
    let user = review_as_proxied(&server, proxy, &alice).await.unwrap();
    assert_eq!(
        user,
        serde_json::json!({"username": "alice", "uid": "a-1",
            "groups": ["devs", "ops", "system:authenticated"],
            "extra": {"acme.com/project": ["apollo"], "scopes": ["read"]}})
    );
    // A certificate with another common name, or the proxy's without a user header: 401.
    for (identity, headers) in [(intruder, &alice[..]), (proxy, &alice[2..])] {
        match review_as_proxied(&server, identity, headers).await {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, 401, "{status:?}"),
            other => panic!("expected 401, got {other:?}"),
        }
    }
    // Published for extension API servers, with kapi's client CA.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let data = loop {
        let output = server
            .kubectl(&[
                "get",
                "configmap",
                "-n",
                "kube-system",
                "extension-apiserver-authentication",
                "-o",
                "json",
            ])
            .await;
        if output.status.success() {
            let config_map: Value = serde_json::from_str(&stdout(&output)).unwrap();
            break config_map["data"].clone();
        }
        assert!(std::time::Instant::now() < deadline, "{}", stderr(&output));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let client_ca = std::fs::read_to_string(server.data_dir.path().join("pki/ca.crt")).unwrap();
    assert_eq!(data["client-ca-file"], client_ca);
    assert_eq!(data["requestheader-client-ca-file"], ca);
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-uid-headers"], r#"["X-Remote-Uid"]"#);
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
}
