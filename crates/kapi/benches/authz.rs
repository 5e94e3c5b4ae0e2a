//! Authorization and admission benchmark: what RBAC and a ValidatingAdmissionPolicy cost
//! per request. ConfigMap creates at concurrency 32
//! by a user that RBAC must authorize (a RoleBinding to `edit`), first with the bootstrap
//! policy alone, then with 1,000 more ClusterRoles and ClusterRoleBindings and 1,000 more
//! Roles and RoleBindings in the namespace (all for other users, so every request looks at
//! them); and the same creates by a `system:masters` admin, which RBAC never sees, before
//! and after the extra policy (the store grows with every run, so each comparison is with
//! the admin run just before). Then the admin's creates with a ValidatingAdmissionPolicy of
//! 3 CEL rules bound to them.
//!
//! `cargo bench -p kapi --bench authz`
//!
//! As the builtin benchmark: the server runs in this process on its own multi-threaded
//! runtime, kube-rs clients on a single-threaded one.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use kube::config::Kubeconfig;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

mod common;
use common::{CONCURRENCY, creates};

const CREATES: usize = 10_000;
const EXTRA_POLICY: usize = 1_000;
const NAMESPACE: &str = "bench";

fn main() {
    common::with_server(|kubeconfig, data_dir| async move {
        let admin = common::client(&kubeconfig).await;
        setup(&admin).await;
        let user = common::client_from(&user_kubeconfig(&kubeconfig, &data_dir)).await;
        wait_allowed(&user).await;
        let run = configmap_creates;
        let report = run(admin.clone(), "admin").await;
        println!("| ConfigMap creates by a system:masters admin (no RBAC evaluation) | {report} |");
        let report = run(user.clone(), "small").await;
        println!(
            "| ConfigMap creates by a user bound to `edit`, bootstrap policy only | {report} |"
        );
        add_policy(&admin).await;
        // The store holds more objects with every run: the admin's creates again are the
        // baseline for the runs after this point.
        let report = run(admin.clone(), "admin-again").await;
        println!("| the admin's creates again (baseline for the rows below) | {report} |");
        let report = run(user, "large").await;
        println!(
            "| the user's creates with {EXTRA_POLICY} more ClusterRoles + ClusterRoleBindings and {EXTRA_POLICY} more Roles + RoleBindings | {report} |"
        );
        add_policy_with_three_rules(&admin).await;
        let report = run(admin.clone(), "vap").await;
        println!(
            "| ConfigMap creates by the admin, a ValidatingAdmissionPolicy with 3 CEL rules applied to each | {report} |"
        );
    });
}

/// The bench namespace and the user's binding to `edit` in it.
async fn setup(admin: &kube::Client) {
    common::start_report(admin, NAMESPACE).await;
    let binding = binding(
        "RoleBinding",
        "bench-user-edit",
        "ClusterRole",
        "edit",
        "bench-user",
    );
    create(
        admin,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        Some(NAMESPACE),
        binding,
    )
    .await;
}

/// Adds the extra policy: roles and bindings for other users.
async fn add_policy(admin: &kube::Client) {
    let rules =
        json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]);
    let objects = futures::stream::iter(0..EXTRA_POLICY).map(|i| {
        let admin = admin.clone();
        let rules = rules.clone();
        async move {
            let name = format!("extra-{i}");
            let user = format!("other-{i}");
            let role = json!({"metadata": {"name": name}, "rules": rules});
            let rbac = "rbac.authorization.k8s.io/v1";
            create(
                &admin,
                rbac,
                "ClusterRole",
                "clusterroles",
                None,
                role.clone(),
            )
            .await;
            let crb = binding("ClusterRoleBinding", &name, "ClusterRole", &name, &user);
            create(
                &admin,
                rbac,
                "ClusterRoleBinding",
                "clusterrolebindings",
                None,
                crb,
            )
            .await;
            create(&admin, rbac, "Role", "roles", Some(NAMESPACE), role).await;
            let rb = binding("RoleBinding", &name, "Role", &name, &user);
            create(
                &admin,
                rbac,
                "RoleBinding",
                "rolebindings",
                Some(NAMESPACE),
                rb,
            )
            .await;
        }
    });
    objects
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
}

/// A ValidatingAdmissionPolicy with 3 CEL rules on ConfigMaps, bound in the bench namespace;
/// returns once it refuses a ConfigMap that breaks a rule.
async fn add_policy_with_three_rules(admin: &kube::Client) {
    let admission = "admissionregistration.k8s.io/v1";
    let policy = json!({
        "metadata": {"name": "three-rules"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "object.metadata.name.size() < 64"},
                {"expression": "!has(object.data) || object.data.size() <= 10"},
                {"expression": "!has(object.data) || object.data.all(k, object.data[k].size() < 1024)"},
            ],
        },
    });
    create(
        admin,
        admission,
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        None,
        policy,
    )
    .await;
    let binding = json!({
        "metadata": {"name": "three-rules"},
        "spec": {"policyName": "three-rules", "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}}},
    });
    create(
        admin,
        admission,
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        None,
        binding,
    )
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let data: serde_json::Map<String, Value> =
        (0..11).map(|i| (format!("k{i}"), json!("v"))).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0.. {
        let probe: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("probe-{i}")}, "data": data}),
        )
        .unwrap();
        if configmaps
            .create(&PostParams::default(), &probe)
            .await
            .is_err()
        {
            return;
        }
        assert!(Instant::now() < deadline, "the policy was never applied");
    }
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, user: &str) -> Value {
    json!({
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
}

/// Creates one object as the admin.
async fn create(
    admin: &kube::Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
    mut object: Value,
) {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(admin.clone(), ns, &resource),
        None => Api::all_with(admin.clone(), &resource),
    };
    let object: DynamicObject = serde_json::from_value(object).expect("object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("create");
}

/// A kubeconfig for `bench-user`: a client certificate from kapi's CA.
fn user_kubeconfig(admin: &Path, data_dir: &Path) -> String {
    let read = |file: &str| std::fs::read_to_string(data_dir.join("pki").join(file)).unwrap();
    let ca_key = rcgen::KeyPair::from_pem(&read("ca.key")).expect("CA key");
    let issuer = rcgen::Issuer::from_ca_cert_pem(&read("ca.crt"), ca_key).expect("CA");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "bench-user");
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("sign");
    let encode = |pem: String| base64::engine::general_purpose::STANDARD.encode(pem);
    let admin = Kubeconfig::read_from(admin).expect("admin kubeconfig");
    let cluster = admin.clusters[0].cluster.clone().expect("cluster");
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster: {{server: {}, certificate-authority-data: {}}}\nusers:\n- name: u\n  user: {{client-certificate-data: {}, client-key-data: {}}}\ncontexts:\n- name: c\n  context: {{cluster: kapi, user: u}}\ncurrent-context: c\n",
        cluster.server.expect("server"),
        cluster.certificate_authority_data.expect("CA data"),
        encode(cert.pem()),
        encode(key.serialize_pem()),
    )
}

/// [`CREATES`] ConfigMap creates as `client`; the report line.
async fn configmap_creates(client: kube::Client, prefix: &'static str) -> String {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    creates(CREATES, |i| {
        let configmaps = configmaps.clone();
        let object = json!({"metadata": {"name": format!("{prefix}-{i}")}, "data": {"k": "v"}});
        async move {
            let object: ConfigMap = serde_json::from_value(object).expect("configmap");
            configmaps
                .create(&PostParams::default(), &object)
                .await
                .map(drop)
        }
    })
    .await
}

/// Waits until RBAC has seen the user's binding (it follows the bindings' watch cache).
async fn wait_allowed(user: &kube::Client) {
    let configmaps: Api<ConfigMap> = Api::namespaced(user.clone(), NAMESPACE);
    let deadline = Instant::now() + Duration::from_secs(30);
    while configmaps.list(&Default::default()).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the user's binding was never seen"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
