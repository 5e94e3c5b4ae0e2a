use crate::tests::pairs;
use serde_json::json;

use super::*;
use crate::util::{Cases, causes, expect};

const NAME_PART_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const NOT_STANDARD: &str = "name is neither a standard finalizer name nor is it fully qualified";

#[test]
fn create_defaults() {
    let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"},
                        "status": {"phase": "Terminating"}});
    NamespaceStrategy.prepare_for_create(&mut ns);
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    assert_eq!(
        ns["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "team-a"})
    );

    let mut ns = json!({"metadata": {"name": "b", "labels": {"kubernetes.io/metadata.name": "x", "a": "b"}},
                        "spec": {"finalizers": ["example.com/f"]}});
    NamespaceStrategy.prepare_for_create(&mut ns);
    assert_eq!(
        ns["spec"]["finalizers"],
        json!(["example.com/f", "kubernetes"])
    );
    assert_eq!(
        ns["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "b", "a": "b"})
    );
}

#[test]
fn update_keeps_finalizers_and_status() {
    let old = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]},
                     "status": {"phase": "Active"}});
    let mut new = json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"finalizers": []},
                         "status": {"phase": "Terminating"}});
    NamespaceStrategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(new["status"], json!({"phase": "Active"}));
    assert_eq!(
        new["metadata"]["labels"],
        json!({"x": "y", "kubernetes.io/metadata.name": "a"})
    );

    let old = json!({"metadata": {"name": "a"}, "spec": {}, "status": {"phase": "Terminating"}});
    let mut new = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}});
    NamespaceStrategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"], json!({}));
    assert_eq!(new["status"], json!({"phase": "Terminating"}));
}

#[test]
fn validation() {
    let bad_name = format!("Invalid value: \"-bad\": {NAME_PART_ERR}");
    let bad_not_standard = format!("Invalid value: \"-bad\": {NOT_STANDARD}");
    let mine = format!("Invalid value: \"mine\": {NOT_STANDARD}");
    let cases: Cases = vec![
        (
            json!({"spec": {"finalizers": ["kubernetes", "example.com/x"]}}),
            vec![],
        ),
        (
            json!({"spec": {"finalizers": ["custom"]}}),
            vec![(
                "spec.finalizers",
                "FieldValueInvalid",
                "Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified",
            )],
        ),
        (
            json!({"spec": {"finalizers": ["-bad"]}}),
            vec![
                ("spec.finalizers", "FieldValueInvalid", &bad_name),
                ("spec.finalizers", "FieldValueInvalid", &bad_not_standard),
            ],
        ),
        (
            json!({"metadata": {"finalizers": ["orphan", "mine"]}}),
            vec![("metadata.finalizers[1]", "FieldValueInvalid", &mine)],
        ),
    ];
    for (ns, want) in cases {
        assert_eq!(
            causes(&NamespaceStrategy.validate(&ns)),
            expect(&want),
            "{ns}"
        );
    }
    // Updates check metadata finalizers twice, as upstream's ValidateNamespace and
    // ValidateNamespaceUpdate both do.
    let ns = json!({"metadata": {"finalizers": ["mine"]}});
    assert_eq!(NamespaceStrategy.validate_update(&ns, &ns).len(), 2);
    assert_eq!(
        NamespaceStrategy.name_validator()("a.b", false),
        vec!["must not contain dots".to_string()]
    );
}

#[test]
fn status_and_finalize_validation() {
    let active = json!({"metadata": {"name": "a"}, "status": {"phase": "Active"}});
    assert!(validate_status_update(&active, &active).is_empty());
    let bad = json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}});
    assert_eq!(
        causes(&validate_status_update(&bad, &active)),
        expect(&[(
            "status.Phase",
            "FieldValueInvalid",
            "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
        )])
    );
    let deleting = json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Active"}});
    assert_eq!(
        causes(&validate_status_update(&deleting, &active)),
        expect(&[(
            "status.Phase",
            "FieldValueInvalid",
            "Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not empty"
        )])
    );
    let finalize = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes", "x"]}});
    assert_eq!(
        causes(&validate_finalize_update(&finalize, &active)),
        expect(&[(
            "spec.finalizers[1]",
            "FieldValueInvalid",
            &format!("Invalid value: \"x\": {NOT_STANDARD}")
        )])
    );
}

#[test]
fn deletion() {
    let strategy = NamespaceStrategy;
    let mut ns = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    assert!(strategy.has_pending_finalizers(&ns));
    strategy.prepare_for_pending_deletion(&mut ns);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(!strategy.has_pending_finalizers(&json!({"spec": {}})));
    assert!(!strategy.has_pending_finalizers(&json!({"spec": {"finalizers": []}})));
    assert!(strategy.return_deleted_object());
}

#[test]
fn definition_matches_upstream() {
    let def = crate::definition("", "v1", "namespaces").unwrap();
    assert_eq!(def.plural, "namespaces");
    assert!(!def.namespaced);
    assert_eq!(def.short_names, ["ns"]);
    assert_eq!(
        def.verbs.names(),
        [
            "create", "delete", "get", "list", "patch", "update", "watch"
        ]
    );
    let subresources: Vec<(&str, Vec<&str>)> = def
        .subresources
        .iter()
        .map(|s| (s.name, s.verbs.names()))
        .collect();
    assert_eq!(
        subresources,
        [
            ("finalize", vec!["update"]),
            ("status", vec!["get", "patch", "update"])
        ]
    );
    assert_eq!(def.storage.key_prefix, "namespaces");
    assert!(def.strategy.supports_field("status.phase"));
    assert!(!def.strategy.supports_field("spec.finalizers"));
    let ns = json!({"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z"}, "status": {"phase": "Active"}});
    assert_eq!(
        pairs(&def.strategy.selectable_fields(&ns)),
        [("status.phase", "Active".to_string())]
    );
    let table = def.table.unwrap();
    let columns: Vec<(&str, &str, i32)> = table
        .columns
        .iter()
        .map(|c| (&*c.name, &*c.format, c.priority))
        .collect();
    assert_eq!(
        columns,
        [("Name", "name", 0), ("Status", "", 0), ("Age", "", 0)]
    );
    let cells = (table.cells)(&ns);
    assert_eq!(cells[..2], [json!("a"), json!("Active")]);
    let age = cells[2].as_str().unwrap();
    assert!(
        age.starts_with(|c: char| c.is_ascii_digit()) && age.contains('y'),
        "{age}"
    );
}
