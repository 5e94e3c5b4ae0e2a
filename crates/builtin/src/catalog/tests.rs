use std::collections::{HashMap, HashSet};

use kapi_server::resource::{ScalePaths, ScaleSelector, SubresourceKind};

use super::*;

fn entry(group: &str, version: &str, plural: &str) -> &'static CatalogEntry {
    CATALOG
        .iter()
        .find(|e| e.group == group && e.version == version && e.plural == plural)
        .expect("in the catalog")
}

#[test]
fn catalog_holds_upstreams_facts() {
    // (group, version, plural) -> (kind, namespaced, short names, categories, key prefix,
    // storage group/version).
    type Fact<'a> = (
        &'a str,
        bool,
        &'a [&'a str],
        &'a [&'a str],
        &'a str,
        &'a str,
    );
    let cases: &[((&str, &str, &str), Fact)] = &[
        (
            ("", "v1", "pods"),
            ("Pod", true, &["po"], &["all"], "pods", "v1"),
        ),
        (
            ("", "v1", "nodes"),
            ("Node", false, &["no"], &[], "minions", "v1"),
        ),
        (
            ("", "v1", "services"),
            ("Service", true, &["svc"], &["all"], "services/specs", "v1"),
        ),
        (
            ("", "v1", "endpoints"),
            ("Endpoints", true, &["ep"], &[], "services/endpoints", "v1"),
        ),
        (
            ("", "v1", "replicationcontrollers"),
            (
                "ReplicationController",
                true,
                &["rc"],
                &["all"],
                "controllers",
                "v1",
            ),
        ),
        (
            ("", "v1", "bindings"),
            ("Binding", true, &[], &[], "", "v1"),
        ),
        (
            ("apps", "v1", "deployments"),
            (
                "Deployment",
                true,
                &["deploy"],
                &["all"],
                "deployments",
                "apps/v1",
            ),
        ),
        (
            ("autoscaling", "v1", "horizontalpodautoscalers"),
            (
                "HorizontalPodAutoscaler",
                true,
                &["hpa"],
                &["all"],
                "horizontalpodautoscalers",
                "autoscaling/v2",
            ),
        ),
        (
            ("events.k8s.io", "v1", "events"),
            ("Event", true, &["ev"], &[], "events", "v1"),
        ),
        (
            ("networking.k8s.io", "v1", "ingresses"),
            (
                "Ingress",
                true,
                &["ing"],
                &[],
                "ingress",
                "networking.k8s.io/v1",
            ),
        ),
        (
            ("apiregistration.k8s.io", "v1", "apiservices"),
            (
                "APIService",
                false,
                &[],
                &["api-extensions"],
                "apiregistration.k8s.io/apiservices",
                "apiregistration.k8s.io/v1",
            ),
        ),
        (
            ("authorization.k8s.io", "v1", "localsubjectaccessreviews"),
            (
                "LocalSubjectAccessReview",
                true,
                &[],
                &[],
                "",
                "authorization.k8s.io/v1",
            ),
        ),
    ];
    for ((group, version, plural), want) in cases {
        let e = entry(group, version, plural);
        let storage = if e.storage_group.is_empty() {
            e.storage_version.to_string()
        } else {
            format!("{}/{}", e.storage_group, e.storage_version)
        };
        let got = (
            e.kind,
            e.namespaced,
            e.short_names,
            e.categories,
            e.key_prefix,
            storage.as_str(),
        );
        assert_eq!(got, *want, "{group}/{version} {plural}");
    }
}

#[test]
fn catalog_is_ga_only_without_crds() {
    let groups: HashSet<&str> = CATALOG.iter().map(|e| e.group).collect();
    assert!(!groups.contains("apiextensions.k8s.io"));
    assert_eq!(groups.len(), 20);
    for e in CATALOG {
        assert!(
            e.version
                .strip_prefix('v')
                .is_some_and(|n| n.parse::<u32>().is_ok()),
            "{} {}",
            e.group,
            e.version
        );
        assert_eq!(e.list_kind, format!("{}List", e.kind));
        assert_eq!(e.singular, e.kind.to_lowercase());
        assert!(!e.verbs.is_empty());
    }
}

#[test]
fn definitions_follow_their_entries() {
    let (served, unserved) = build_all(None);
    assert_eq!(served.len() + unserved.len(), CATALOG.len());
    let served_keys: HashSet<(String, &str)> = served
        .iter()
        .map(|d| (d.group_version.to_string(), &*d.plural))
        .collect();
    for (definition, e) in served.iter().zip(CATALOG.iter().filter(|e| {
        let gv = GroupVersion::new(e.group, e.version).to_string();
        served_keys.contains(&(gv, e.plural))
    })) {
        assert_eq!(
            (&*definition.kind, definition.namespaced, definition.verbs),
            (e.kind, e.namespaced, verbs_of(e.verbs)),
            "{}",
            e.plural
        );
        assert_eq!(definition.storage.key_prefix, e.key_prefix);
        assert_eq!(definition.converter.is_none(), e.is_storage_version());
        assert!(definition.table.is_some(), "{}", e.plural);
        for sub in &definition.subresources {
            let listed = e
                .subresources
                .iter()
                .find(|s| s.name == sub.name)
                .expect("only the catalog's subresources are served");
            assert_eq!(
                sub.verbs,
                verbs_of(listed.verbs),
                "{}/{}",
                e.plural,
                sub.name
            );
        }
    }
}

#[test]
fn unserved_entries_say_why() {
    let (_, unserved) = build_all(None);
    for u in &unserved {
        let e = entry(u.group, u.version, u.plural);
        let want = if !e.is_stored() && e.verbs.contains(&"create") {
            NO_CREATER
        } else if !e.is_stored() {
            NO_READER
        } else {
            NO_CONVERTER
        };
        assert_eq!(u.reason, want, "{} {}", u.group, u.plural);
        assert!(u.reason != NO_CONVERTER || !e.is_storage_version());
    }
    // Nothing answers componentstatuses' reads yet.
    assert!(unserved.iter().any(|u| u.plural == "componentstatuses"));
}

#[test]
fn versions_of_a_resource_share_their_storage() {
    let (served, _) = build_all(None);
    let mut by_prefix: HashMap<&str, Vec<&ResourceDefinition>> = HashMap::new();
    for d in served.iter().filter(|d| !d.storage.key_prefix.is_empty()) {
        by_prefix.entry(&d.storage.key_prefix).or_default().push(d);
    }
    let events = &by_prefix["events"];
    assert_eq!(events.len(), 2);
    assert!(Arc::ptr_eq(&events[0].storage, &events[1].storage));
    assert_eq!(
        events[0].storage.storage_version,
        GroupVersionKind::new("", "v1", "Event")
    );
    for definitions in by_prefix.values() {
        for d in definitions {
            assert!(Arc::ptr_eq(&d.storage, &definitions[0].storage));
        }
    }
}

#[test]
fn own_modules_provide_their_kinds() {
    let (served, _) = build_all(None);
    let find = |group: &str, plural: &str| {
        served
            .iter()
            .find(|d| d.group_version.group == group && d.plural == plural)
            .expect("served")
    };
    fn columns(d: &ResourceDefinition) -> Vec<&str> {
        d.table
            .as_ref()
            .unwrap()
            .columns
            .iter()
            .map(|c| &*c.name)
            .collect()
    }
    assert_eq!(columns(find("", "namespaces")), ["Name", "Status", "Age"]);
    assert_eq!(columns(find("", "configmaps")), ["Name", "Data", "Age"]);
    assert_eq!(
        columns(find("", "secrets")),
        ["Name", "Type", "Data", "Age"]
    );
    assert_eq!(
        columns(find("", "serviceaccounts")),
        ["Name", "Secrets", "Age"]
    );
    assert_eq!(
        columns(find("coordination.k8s.io", "leases")),
        ["Name", "Holder", "Age"]
    );
    assert_eq!(find("events.k8s.io", "events").subresources.len(), 0);
    assert!(
        find("events.k8s.io", "events")
            .strategy
            .supports_field("regarding.name")
    );
    assert!(!find("", "events").strategy.supports_field("regarding.name"));
    let namespaces: Vec<&str> = find("", "namespaces")
        .subresources
        .iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(namespaces, ["finalize", "status"]);
}

#[test]
fn kinds_without_strategies_of_their_own_print_name_and_age() {
    let table = default_table();
    let names: Vec<&str> = table.columns.iter().map(|c| &*c.name).collect();
    assert_eq!(names, ["Name", "Age"]);
    let object = serde_json::json!({"metadata": {"name": "x"}});
    assert_eq!((table.cells)(&object)[0], "x");
}

/// The served definition of `plural` in `group` (its first served version).
fn served<'a>(
    definitions: &'a [ResourceDefinition],
    group: &str,
    plural: &str,
) -> &'a ResourceDefinition {
    definitions
        .iter()
        .find(|d| d.group_version.group == group && d.plural == plural)
        .unwrap_or_else(|| panic!("{group} {plural} is served"))
}

/// Names a subresource kind, so that tables can say which one they expect.
fn kind_name(kind: &SubresourceKind) -> &'static str {
    match kind {
        SubresourceKind::Status => "Status",
        SubresourceKind::Finalize => "Finalize",
        SubresourceKind::Scale(_) => "Scale",
        SubresourceKind::Part(_) => "Part",
        SubresourceKind::Create(_) => "Create",
        SubresourceKind::Connect(_) => "Connect",
    }
}

/// The subresources of a definition as (name, kind, discovery verbs).
fn subresource_facts(definition: &ResourceDefinition) -> Vec<(&str, &str, Vec<&str>)> {
    definition
        .subresources
        .iter()
        .map(|s| (s.name, kind_name(&s.kind), s.verbs.names()))
        .collect()
}

#[test]
fn scaled_resources_use_upstreams_scale_paths() {
    // Upstream's Scale of the apps workloads formats spec.selector (a LabelSelector); that of
    // ReplicationControllers turns spec.selector (a label map) into a selector string.
    let label_selector = ScalePaths {
        spec_replicas: "/spec/replicas".into(),
        status_replicas: "/status/replicas".into(),
        selector: ScaleSelector::LabelSelector("/spec/selector".into()),
    };
    let label_map = ScalePaths {
        selector: ScaleSelector::Map("/spec/selector".into()),
        ..label_selector.clone()
    };
    let want: HashMap<(&str, &str), ScalePaths> = HashMap::from([
        (("apps", "deployments"), label_selector.clone()),
        (("apps", "replicasets"), label_selector.clone()),
        (("apps", "statefulsets"), label_selector),
        (("", "replicationcontrollers"), label_map),
    ]);
    let (served, _) = build_all(None);
    let mut scaled: HashMap<(&str, &str), ScalePaths> = HashMap::new();
    for d in &served {
        for sub in d.subresources.iter().filter(|s| s.name == "scale") {
            let SubresourceKind::Scale(paths) = &sub.kind else {
                panic!("{}/scale is {:?}", d.plural, sub.kind);
            };
            assert_eq!(
                sub.verbs.names(),
                ["get", "patch", "update"],
                "{}",
                d.plural
            );
            scaled.insert((d.group_version.group.as_str(), &*d.plural), paths.clone());
        }
    }
    assert_eq!(scaled, want);
}

#[test]
fn pods_serve_upstreams_subresources() {
    let (definitions, _) = build_all(None);
    let read_write = vec!["get", "patch", "update"];
    let stream = vec!["create", "get"];
    let proxy = vec!["create", "delete", "get", "patch", "update"];
    assert_eq!(
        subresource_facts(served(&definitions, "", "pods")),
        [
            ("attach", "Connect", stream.clone()),
            ("binding", "Create", vec!["create"]),
            ("ephemeralcontainers", "Part", read_write.clone()),
            ("eviction", "Create", vec!["create"]),
            ("exec", "Connect", stream.clone()),
            ("log", "Connect", vec!["get"]),
            ("portforward", "Connect", stream),
            ("proxy", "Connect", proxy),
            ("resize", "Part", read_write.clone()),
            ("status", "Status", read_write),
        ]
    );
}

#[test]
fn other_kinds_serve_upstreams_special_subresources() {
    let (definitions, _) = build_all(None);
    let read_write = vec!["get", "patch", "update"];
    let proxy = vec!["create", "delete", "get", "patch", "update"];
    let cases = [
        (
            "",
            "serviceaccounts",
            vec![("token", "Create", vec!["create"])],
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            vec![
                ("approval", "Part", read_write.clone()),
                ("status", "Status", read_write.clone()),
            ],
        ),
        (
            "",
            "namespaces",
            vec![
                ("finalize", "Finalize", vec!["update"]),
                ("status", "Status", read_write.clone()),
            ],
        ),
        (
            "",
            "nodes",
            vec![
                ("proxy", "Connect", proxy.clone()),
                ("status", "Status", read_write.clone()),
            ],
        ),
        (
            "",
            "services",
            vec![
                ("proxy", "Connect", proxy),
                ("status", "Status", read_write),
            ],
        ),
    ];
    for (group, plural, want) in cases {
        assert_eq!(
            subresource_facts(served(&definitions, group, plural)),
            want,
            "{group} {plural}"
        );
    }
}

#[test]
fn computed_resources_are_create_only_and_never_stored() {
    let want: HashSet<(&str, &str)> = HashSet::from([
        ("", "bindings"),
        ("authentication.k8s.io", "selfsubjectreviews"),
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "localsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    ]);
    let (definitions, _) = build_all(None);
    let computed: HashSet<(&str, &str)> = definitions
        .iter()
        .filter(|d| d.storage.key_prefix.is_empty())
        .map(|d| (d.group_version.group.as_str(), &*d.plural))
        .collect();
    assert_eq!(computed, want);
    for (group, plural) in want {
        let d = served(&definitions, group, plural);
        assert_eq!(d.verbs, Verbs::CREATE, "{plural}");
        assert!(d.strategy.creater().is_some(), "{plural} has a creater");
        assert!(d.subresources.is_empty(), "{plural}");
    }
    let stored = served(&definitions, "", "configmaps");
    assert!(stored.strategy.creater().is_none());
}
