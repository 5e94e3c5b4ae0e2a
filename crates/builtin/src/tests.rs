use std::collections::HashSet;

use kapi_server::resource::Name;

use super::*;

/// group/version, plural, kind, namespaced, short names, number of verbs.
type Summary<'a> = (String, &'a str, &'a str, bool, Vec<&'a str>, usize);

/// The resources served before the catalog keep their definitions and storage layout.
#[test]
fn the_first_resources_as_discovery_lists_them() {
    let resources = resources(std::time::Duration::ZERO);
    let first = [
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("", "events"),
        ("events.k8s.io", "events"),
        ("coordination.k8s.io", "leases"),
    ];
    let find = |group: &str, plural: &str| {
        resources
            .iter()
            .find(|r| r.group_version.group == group && r.plural == plural)
            .expect("served")
    };
    let summary: Vec<Summary> = first
        .iter()
        .map(|(group, plural)| {
            let r = find(group, plural);
            (
                r.group_version.to_string(),
                &*r.plural,
                &*r.kind,
                r.namespaced,
                names(&r.short_names),
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
    for (group, plural) in first {
        let r = find(group, plural);
        assert!(r.categories.is_empty(), "{}", r.plural);
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
    let prefixes: HashSet<&str> = first
        .iter()
        .map(|(group, plural)| &*find(group, plural).storage.key_prefix)
        .collect();
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

#[test]
fn definitions_are_found_by_group_version_and_plural() {
    let pods = definition("", "v1", "pods").expect("pods are served");
    assert_eq!((&*pods.kind, &*pods.storage.key_prefix), ("Pod", "pods"));
    assert!(definition("apps", "v1beta1", "deployments").is_none());
    assert!(definition("apiextensions.k8s.io", "v1", "customresourcedefinitions").is_none());
}

/// Selectable fields as (name, value) pairs of plain strings, to compare with literals.
pub(crate) fn pairs(fields: &[(Name, String)]) -> Vec<(&str, String)> {
    fields
        .iter()
        .map(|(name, value)| (&**name, value.clone()))
        .collect()
}

/// A definition's names (short names, categories) as plain strings.
pub(crate) fn names(names: &[Name]) -> Vec<&str> {
    names.iter().map(|name| &**name).collect()
}
