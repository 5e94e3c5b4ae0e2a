use std::collections::HashSet;

use super::*;

/// group/version, plural, kind, namespaced, short names, number of verbs.
type Summary<'a> = (String, &'a str, &'a str, bool, Vec<&'a str>, usize);

#[test]
fn resources_as_discovery_lists_them() {
    let resources = resources();
    let summary: Vec<Summary> = resources
        .iter()
        .map(|r| {
            (
                r.group_version.to_string(),
                r.plural,
                r.kind,
                r.namespaced,
                r.short_names.to_vec(),
                r.verbs.names().len(),
            )
        })
        .collect();
    let want: Vec<Summary> = vec![
        ("v1".into(), "namespaces", "Namespace", false, vec!["ns"], 7),
        ("v1".into(), "configmaps", "ConfigMap", true, vec!["cm"], 8),
        ("v1".into(), "secrets", "Secret", true, vec![], 8),
        (
            "v1".into(),
            "serviceaccounts",
            "ServiceAccount",
            true,
            vec!["sa"],
            8,
        ),
        ("v1".into(), "events", "Event", true, vec!["ev"], 8),
        (
            "events.k8s.io/v1".into(),
            "events",
            "Event",
            true,
            vec!["ev"],
            8,
        ),
        (
            "coordination.k8s.io/v1".into(),
            "leases",
            "Lease",
            true,
            vec![],
            8,
        ),
    ];
    assert_eq!(summary, want);
    for r in &resources {
        assert!(r.categories.is_empty(), "{}", r.plural);
        assert_eq!(r.list_kind, format!("{}List", r.kind));
        assert_eq!(r.singular, r.kind.to_lowercase());
        assert_eq!(r.storage.namespaced, r.namespaced);
        let table = r.table.as_ref().expect("every resource prints a table");
        assert_eq!(
            table.columns.iter().filter(|c| c.format == "name").count(),
            1,
            "{}",
            r.plural
        );
        // The stored version is served, except by the converted events.k8s.io/v1 events.
        let stored = r.group_version_kind() == r.storage.storage_version;
        assert_eq!(stored, r.converter.is_none(), "{}", r.plural);
    }
    let prefixes: HashSet<&str> = resources.iter().map(|r| r.storage.key_prefix).collect();
    let want: HashSet<&str> = [
        "namespaces",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "events",
        "leases",
    ]
    .into();
    assert_eq!(prefixes, want);
}
