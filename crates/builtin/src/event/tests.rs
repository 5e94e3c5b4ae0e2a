use crate::tests::{names, pairs};
use serde_json::json;

use super::*;
use crate::util::{Cases, causes, expect};

fn core_strategy() -> EventStrategy {
    EventStrategy { strict: false }
}

fn strict_strategy() -> EventStrategy {
    EventStrategy { strict: true }
}

/// A new-style event as events.k8s.io/v1 clients (client-go's events recorder) write it.
fn events_v1() -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "pod.17a", "namespace": "ns"},
        "eventTime": "2024-05-01T10:00:00.123456Z",
        "series": {"count": 3, "lastObservedTime": "2024-05-01T10:05:00.000001Z"},
        "reportingController": "example.com/controller",
        "reportingInstance": "controller-1",
        "action": "Scheduling",
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "ns", "name": "pod", "uid": "u1", "apiVersion": "v1",
                      "resourceVersion": "7", "fieldPath": "spec.containers{a}"},
        "related": {"kind": "Node", "name": "node-1"},
        "note": "Successfully assigned ns/pod to node-1",
        "type": "Normal",
    })
}

/// A legacy event as core/v1 clients write it.
fn core_v1() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "pod.17b", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "pod", "uid": "u1"},
        "reason": "Pulled",
        "message": "Container image pulled",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2024-05-01T10:00:00Z",
        "lastTimestamp": "2024-05-01T10:01:00Z",
        "count": 2,
        "type": "Normal",
    })
}

#[test]
fn events_v1_to_core_and_back() {
    let converter = EventsV1Converter;
    let stored = converter.stored_form(events_v1()).unwrap();
    assert_eq!(
        stored,
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "pod.17a", "namespace": "ns"},
            "eventTime": "2024-05-01T10:00:00.123456Z",
            "series": {"count": 3, "lastObservedTime": "2024-05-01T10:05:00.000001Z"},
            "reportingComponent": "example.com/controller",
            "reportingInstance": "controller-1",
            "action": "Scheduling",
            "reason": "Scheduled",
            "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "pod", "uid": "u1", "apiVersion": "v1",
                               "resourceVersion": "7", "fieldPath": "spec.containers{a}"},
            "related": {"kind": "Node", "name": "node-1"},
            "message": "Successfully assigned ns/pod to node-1",
            "type": "Normal",
            "source": {},
            "firstTimestamp": null,
            "lastTimestamp": null,
        })
    );
    let served = converter.served_form(stored).unwrap();
    let mut want = events_v1();
    want["deprecatedSource"] = json!({});
    want["deprecatedFirstTimestamp"] = Value::Null;
    want["deprecatedLastTimestamp"] = Value::Null;
    assert_eq!(served, want);
}

#[test]
fn core_to_events_v1_and_back() {
    let converter = EventsV1Converter;
    let mut stored = core_v1();
    core_strategy().prepare_for_create(&mut stored);
    assert_eq!(stored["eventTime"], Value::Null);
    assert_eq!(stored["reportingComponent"], "");
    assert_eq!(stored["reportingInstance"], "");
    let served = converter.served_form(stored.clone()).unwrap();
    assert_eq!(
        served,
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "pod.17b", "namespace": "ns"},
            "eventTime": null,
            "reason": "Pulled",
            "regarding": {"kind": "Pod", "namespace": "ns", "name": "pod", "uid": "u1"},
            "note": "Container image pulled",
            "type": "Normal",
            "deprecatedSource": {"component": "kubelet", "host": "node-1"},
            "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z",
            "deprecatedLastTimestamp": "2024-05-01T10:01:00Z",
            "deprecatedCount": 2,
        })
    );
    assert_eq!(converter.stored_form(served).unwrap(), stored);
    assert!(converter.stored_form(json!("x")).is_err());
}

#[test]
fn normalization() {
    let mut event = json!({
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "", "extra": 1},
        "related": null,
        "count": 0,
        "message": "",
        "firstTimestamp": "2024-05-01T12:00:00.5+02:00",
        "eventTime": "0001-01-01T00:00:00Z",
        "series": {"count": 0, "lastObservedTime": "2024-05-01T10:00:00Z"},
    });
    core_strategy().prepare_for_create(&mut event);
    assert_eq!(
        event,
        json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "Pod"},
            "source": {},
            "firstTimestamp": "2024-05-01T10:00:00Z",
            "lastTimestamp": null,
            "eventTime": null,
            "series": {"lastObservedTime": "2024-05-01T10:00:00.000000Z"},
            "reportingComponent": "",
            "reportingInstance": "",
        })
    );
}

#[test]
fn legacy_validation() {
    let cases: Cases = vec![
        (json!({"involvedObject": {"namespace": "ns"}}), vec![]),
        (
            json!({}),
            vec![(
                "involvedObject.namespace",
                "FieldValueInvalid",
                "Invalid value: \"\": does not match event.namespace",
            )],
        ),
        (
            json!({"involvedObject": {"namespace": "other"}}),
            vec![(
                "involvedObject.namespace",
                "FieldValueInvalid",
                "Invalid value: \"other\": does not match event.namespace",
            )],
        ),
        (
            json!({"metadata": {"name": "e", "namespace": "default"}, "involvedObject": {"kind": "Node", "name": "n"}}),
            vec![],
        ),
        (
            json!({"eventTime": "2024-05-01T10:00:00.000000Z", "involvedObject": {"namespace": "ns"}}),
            vec![
                ("reportingComponent", "FieldValueRequired", "Required value"),
                (
                    "reportingComponent",
                    "FieldValueInvalid",
                    "Invalid value: \"\": name part must be non-empty",
                ),
                (
                    "reportingComponent",
                    "FieldValueInvalid",
                    "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                ),
                ("reportingInstance", "FieldValueRequired", "Required value"),
                ("action", "FieldValueRequired", "Required value"),
                ("reason", "FieldValueRequired", "Required value"),
            ],
        ),
        (
            json!({"eventTime": "2024-05-01T10:00:00.000000Z", "reportingComponent": "c", "reportingInstance": "i".repeat(129),
                   "action": "a", "reason": "r", "message": "m".repeat(1025)}),
            vec![
                (
                    "involvedObject.namespace",
                    "FieldValueInvalid",
                    "Invalid value: \"\": does not match event.namespace",
                ),
                (
                    "reportingInstance",
                    "FieldValueInvalid",
                    "Invalid value: \"\": can have at most 128 characters",
                ),
                (
                    "message",
                    "FieldValueInvalid",
                    "Invalid value: \"\": can have at most 1024 characters",
                ),
            ],
        ),
    ];
    for (body, want) in cases {
        let mut event = json!({"metadata": {"name": "e", "namespace": "ns"}});
        for (k, v) in body.as_object().unwrap() {
            event[k] = v.clone();
        }
        core_strategy().prepare_for_create(&mut event);
        assert_eq!(
            causes(&core_strategy().validate(&event)),
            expect(&want),
            "{event}"
        );
    }
}

#[test]
fn strict_validation() {
    let strict = strict_strategy();
    let valid = EventsV1Converter.stored_form(events_v1()).unwrap();
    assert_eq!(causes(&strict.validate(&valid)), expect(&[]));
    let mut bad = EventsV1Converter
        .stored_form(json!({
            "metadata": {"name": "e", "namespace": "ns", "finalizers": ["x"]},
            "series": {"count": 1},
            "type": "Odd",
            "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
            "deprecatedCount": 4,
            "deprecatedSource": {"host": "h"},
            "regarding": {"namespace": "ns"},
        }))
        .unwrap();
    strict.prepare_for_create(&mut bad);
    assert_eq!(
        causes(&strict.validate(&bad)),
        expect(&[
            (
                "metadata.finalizers[0]",
                "FieldValueInvalid",
                "Invalid value: \"x\": name is neither a standard finalizer name nor is it fully qualified"
            ),
            (
                "series.count",
                "FieldValueInvalid",
                "Invalid value: \"\": should be at least 2"
            ),
            (
                "series.lastObservedTime",
                "FieldValueRequired",
                "Required value"
            ),
            ("eventTime", "FieldValueRequired", "Required value"),
            (
                "type",
                "FieldValueInvalid",
                "Invalid value: \"\": has invalid value: Odd"
            ),
            (
                "firstTimestamp",
                "FieldValueInvalid",
                "Invalid value: \"\": needs to be unset"
            ),
            (
                "count",
                "FieldValueInvalid",
                "Invalid value: \"\": needs to be unset"
            ),
            (
                "source",
                "FieldValueInvalid",
                "Invalid value: \"\": needs to be unset"
            ),
        ])
    );
    // The legacy part names reportingController by its events.k8s.io name.
    let mut event = valid.clone();
    event["reportingComponent"] = json!("");
    let errs = causes(&strict.validate(&event));
    assert_eq!(
        errs[0],
        (
            "reportingController".into(),
            "FieldValueRequired".into(),
            "Required value".into()
        )
    );
    assert_eq!(strict.name_validator()("a_b", false).len(), 1);
    assert!(core_strategy().name_validator()("a_b", false).is_empty());
}

#[test]
fn strict_update_immutability() {
    let strict = strict_strategy();
    let old = EventsV1Converter.stored_form(events_v1()).unwrap();
    assert!(strict.validate_update(&old, &old).is_empty());
    let mut changed = events_v1();
    changed["series"] = json!({"count": 4, "lastObservedTime": "2024-05-01T10:06:00Z"});
    assert!(
        strict
            .validate_update(
                &EventsV1Converter.stored_form(changed.clone()).unwrap(),
                &old
            )
            .is_empty()
    );
    changed["note"] = json!("other");
    changed["reason"] = json!("Other");
    changed["regarding"] = json!({"kind": "Pod", "namespace": "ns", "name": "p2"});
    changed["related"] = Value::Null;
    changed["eventTime"] = json!("2024-05-01T10:00:00.1234567Z");
    changed["deprecatedLastTimestamp"] = json!("2024-05-02T00:00:00Z");
    changed["reportingInstance"] = json!("controller-<2>");
    let new = EventsV1Converter.stored_form(changed).unwrap();
    assert_eq!(
        causes(&strict.validate_update(&new, &old)),
        expect(&[
            (
                "involvedObject",
                "FieldValueInvalid",
                r#"Invalid value: {"Kind":"Pod","Namespace":"ns","Name":"p2","UID":"","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable"#
            ),
            (
                "reason",
                "FieldValueInvalid",
                "Invalid value: \"Other\": field is immutable"
            ),
            (
                "message",
                "FieldValueInvalid",
                "Invalid value: \"other\": field is immutable"
            ),
            (
                "lastTimestamp",
                "FieldValueInvalid",
                "Invalid value: \"2024-05-02T00:00:00Z\": field is immutable"
            ),
            (
                "reason",
                "FieldValueInvalid",
                "Invalid value: \"Other\": field is immutable"
            ),
            (
                "related",
                "FieldValueInvalid",
                "Invalid value: null: field is immutable"
            ),
            (
                "reportingInstance",
                "FieldValueInvalid",
                "Invalid value: \"controller-<2>\": field is immutable"
            ),
        ])
    );
    // Core updates only get the legacy checks.
    assert!(core_strategy().validate_update(&new, &old).is_empty());
}

#[test]
fn table_cells() {
    let table = table();
    let columns: Vec<(&str, &str, i32)> = table
        .columns
        .iter()
        .map(|c| (&*c.name, &*c.format, c.priority))
        .collect();
    assert_eq!(
        columns,
        [
            ("Last Seen", "", 0),
            ("Type", "", 0),
            ("Reason", "", 0),
            ("Object", "", 0),
            ("Subobject", "", 1),
            ("Source", "", 1),
            ("Message", "", 0),
            ("First Seen", "", 1),
            ("Count", "", 1),
            ("Name", "name", 1),
        ]
    );
    let mut legacy = core_v1();
    legacy["message"] = json!("  pulled \n");
    let cells = cells(&legacy);
    assert_eq!(cells.len(), 10);
    assert_eq!(
        cells[1..7],
        [
            json!("Normal"),
            json!("Pulled"),
            json!("pod/pod"),
            json!(""),
            json!("kubelet, node-1"),
            json!("pulled")
        ]
    );
    assert_eq!(cells[8..], [json!(2), json!("pod.17b")]);
    assert!(
        cells[0].as_str().unwrap().ends_with(['d', 'y']),
        "{}",
        cells[0]
    );

    // New-style events, served either way: series count, reporting controller as source.
    for event in [
        events_v1(),
        EventsV1Converter.stored_form(events_v1()).unwrap(),
    ] {
        let cells = super::cells(&event);
        assert_eq!(
            cells[3..7],
            [
                json!("pod/pod"),
                json!("spec.containers{a}"),
                json!("example.com/controller, controller-1"),
                json!("Successfully assigned ns/pod to node-1")
            ]
        );
        assert_eq!(cells[8], json!(3));
    }
    // Singletons count 1; a kind without a name prints alone.
    let singleton = json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Node"}});
    let cells = super::cells(&singleton);
    assert_eq!(
        (cells[0].clone(), cells[3].clone(), cells[8].clone()),
        (json!("<unknown>"), json!("node"), json!(1))
    );
}

#[test]
fn field_selectors() {
    let core = crate::definition("", "v1", "events").unwrap();
    let events = crate::definition("events.k8s.io", "v1", "events").unwrap();
    assert_eq!(core.storage.key_prefix, "events");
    assert_eq!(events.group_version.to_string(), "events.k8s.io/v1");
    assert_eq!(
        (
            &names(&core.short_names)[..],
            &names(&events.short_names)[..]
        ),
        (&["ev"][..], &["ev"][..])
    );
    assert!(core.strategy.allow_create_on_update() && events.strategy.allow_create_on_update());
    for field in CORE_FIELDS {
        assert!(core.strategy.supports_field(field));
    }
    assert!(!core.strategy.supports_field("regarding.name"));
    assert!(events.strategy.supports_field("regarding.name"));
    assert!(events.strategy.supports_field("reportingController"));
    assert!(!events.strategy.supports_field("involvedObject.name"));
    let mut stored = EventsV1Converter.stored_form(events_v1()).unwrap();
    core.strategy.prepare_for_create(&mut stored);
    let fields = core.strategy.selectable_fields(&stored);
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("involvedObject.name"), Some("pod"));
    assert_eq!(get("regarding.name"), Some("pod"));
    assert_eq!(get("regarding.fieldPath"), Some("spec.containers{a}"));
    assert_eq!(get("reportingComponent"), Some("example.com/controller"));
    assert_eq!(get("reportingController"), Some("example.com/controller"));
    assert_eq!(get("source"), Some("example.com/controller"));
    assert_eq!(get("type"), Some("Normal"));
    assert_eq!(get("reason"), Some("Scheduled"));
    let legacy = core_v1();
    let fields = core.strategy.selectable_fields(&legacy);
    assert!(pairs(&fields).contains(&("source", "kubelet".to_string())));
}
