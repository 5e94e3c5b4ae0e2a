use super::*;

/// Whether a subresource's kind is the expected one.
type KindCheck = fn(&SubresourceKind) -> bool;

#[test]
fn every_subresource_upstream_lists_has_a_kind() {
    let cases: [(&str, &str, &str, KindCheck); 14] = [
        (
            "apps",
            "deployments",
            "scale",
            |k| matches!(k, SubresourceKind::Scale(p) if *p == WORKLOAD_SCALE),
        ),
        ("apps", "statefulsets", "scale", |k| {
            matches!(k, SubresourceKind::Scale(_))
        }),
        ("apps", "replicasets", "scale", |k| {
            matches!(k, SubresourceKind::Scale(_))
        }),
        (
            "",
            "replicationcontrollers",
            "scale",
            |k| matches!(k, SubresourceKind::Scale(p) if *p == CONTROLLER_SCALE),
        ),
        ("", "pods", "binding", |k| {
            matches!(k, SubresourceKind::Create(_))
        }),
        ("", "pods", "eviction", |k| {
            matches!(k, SubresourceKind::Create(_))
        }),
        ("", "serviceaccounts", "token", |k| {
            matches!(k, SubresourceKind::Create(_))
        }),
        ("", "pods", "ephemeralcontainers", |k| {
            matches!(k, SubresourceKind::Part(_))
        }),
        ("", "pods", "resize", |k| {
            matches!(k, SubresourceKind::Part(_))
        }),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "approval",
            |k| matches!(k, SubresourceKind::Part(_)),
        ),
        ("", "pods", "exec", |k| {
            matches!(k, SubresourceKind::Connect(_))
        }),
        ("", "nodes", "proxy", |k| {
            matches!(k, SubresourceKind::Connect(_))
        }),
        ("", "services", "proxy", |k| {
            matches!(k, SubresourceKind::Connect(_))
        }),
        ("", "namespaces", "finalize", |k| {
            matches!(k, SubresourceKind::Finalize)
        }),
    ];
    for (group, resource, name, expected) in cases {
        let sub = subresource(group, resource, name).unwrap_or_else(|| panic!("{resource}/{name}"));
        assert_eq!(sub.name, name);
        assert!(expected(&sub.kind), "{resource}/{name}: {:?}", sub.kind);
    }
    assert!(subresource("apps", "daemonsets", "scale").is_none());
    assert_eq!(
        PROXY_VERBS.names(),
        ["create", "delete", "get", "patch", "update"]
    );
}
