//! Property tests of server-side apply and managedFields ([`FieldManager`]), for hostile
//! input and for apply's own laws, without a schema (objects as granular maps, lists
//! atomic, as upstream's deduced type):
//!
//! - any live object (managedFields of any shape included) and any configuration never
//!   panic `apply` or `update`: errors are answers, not crashes;
//! - applying a configuration leaves every field it sets at the value it sets;
//! - applying the same configuration twice is applying it once;
//! - a second manager changing a field the first applied conflicts without `force`, and
//!   takes it over with `force`.
//!
//! Each property runs proptest's default of 256 cases. For a long run:
//! `PROPTEST_CASES=100000 cargo test -p kapi-fieldmanager --test properties`.

use kapi_fieldmanager::{ApplyError, FieldManager, Untyped};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const NOW: &str = "2026-11-27T10:00:00Z";

fn manager() -> FieldManager<Untyped> {
    FieldManager::new(None, "v1", "ConfigMap", "")
}

/// Any JSON value nested at most 3 deep, keys from a small set so that objects overlap.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Keys from a small set, field-path-like ones included, so that objects overlap.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "data", "spec", "x.y", "f:a", "k:{}"])
        .prop_map(str::to_string)
}

/// A configuration of the manager's type: `data` of null-free values, a name, labels.
/// Maps are never empty: kapi keeps an empty map where Go leaves out an empty `omitempty`
/// map of a built-in type (README, "Not yet"), so `labels: {}` applied after `labels: {a}`
/// is pruned away once and written back as `{}` the next time.
fn config() -> impl Strategy<Value = Value> {
    (
        prop::collection::btree_map(key(), null_free(), 1..4),
        prop::collection::btree_map("[a-z]{1,3}", "[a-z]{0,3}", 1..3),
    )
        .prop_map(|(data, labels)| {
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "labels": labels},
                "data": Value::Object(data.into_iter().collect::<Map<_, _>>()),
            })
        })
}

/// A value without nulls (a null in an applied configuration removes the field).
fn null_free() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 1..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A live object whose metadata (managedFields included) may be anything.
fn hostile_live() -> impl Strategy<Value = Value> {
    (value(), value(), value()).prop_map(|(managed, data, extra)| {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u", "managedFields": managed},
            "data": data,
            "extra": extra,
        })
    })
}

/// Whether every leaf `config` sets has the same value in `object` (an empty map may be
/// left out, as Go leaves out an empty `metadata.labels`).
fn holds(object: &Value, config: &Value) -> bool {
    match (object, config) {
        (Value::Object(have), Value::Object(want)) => {
            want.iter().all(|(key, want)| match have.get(key) {
                Some(have) => holds(have, want),
                None => want.as_object().is_some_and(Map::is_empty),
            })
        }
        (have, want) => have == want,
    }
}

/// A value a manager owns whole: a scalar or a list (lists are atomic without a schema).
fn atomic() -> impl Strategy<Value = Value> {
    null_free().prop_filter("not a map", |value| !value.is_object())
}

proptest! {
    /// Hostile live objects and configurations are answered, never a panic.
    #[test]
    fn apply_and_update_never_panic(live in hostile_live(), config in value(), new in value()) {
        let manager = manager();
        let _ = manager.apply(Some(&live), &config, "m", false, NOW);
        let _ = manager.apply(Some(&live), &config, "kubectl", true, NOW);
        let mut updated = new;
        manager.update(Some(&live), &mut updated, "m", NOW);
        let mut created = live.clone();
        manager.update(None, &mut created, "m", NOW);
    }

    /// An apply to nothing, or to an object the manager applied before, leaves every field
    /// of the configuration at its value; applying it again changes nothing.
    #[test]
    fn apply_sets_the_configuration_and_is_idempotent(first in config(), second in config()) {
        let manager = manager();
        let created = manager.apply(None, &first, "m", false, NOW).unwrap();
        prop_assert!(holds(&created, &first), "{} does not hold {}", created, first);
        let again = manager.apply(Some(&created), &first, "m", false, NOW).unwrap();
        prop_assert_eq!(&again, &created);
        let changed = manager.apply(Some(&created), &second, "m", false, NOW).unwrap();
        prop_assert!(holds(&changed, &second), "{} does not hold {}", changed, second);
        let again = manager.apply(Some(&changed), &second, "m", false, NOW).unwrap();
        prop_assert_eq!(again, changed);
    }

    /// Another manager setting a field to another value conflicts without force and owns
    /// it with force; the first manager then conflicts in turn.
    #[test]
    fn another_manager_conflicts_unless_forced(value in atomic(), other in atomic()) {
        prop_assume!(value != other);
        let manager = manager();
        let config = |v: &Value| json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"k": v}});
        let live = manager.apply(None, &config(&value), "first", false, NOW).unwrap();
        let refused = manager.apply(Some(&live), &config(&other), "second", false, NOW);
        prop_assert!(
            matches!(&refused, Err(ApplyError::Conflicts(conflicts)) if !conflicts.is_empty()),
            "no conflict"
        );
        let forced = manager.apply(Some(&live), &config(&other), "second", true, NOW).unwrap();
        prop_assert_eq!(&forced["data"]["k"], &other);
        let back = manager.apply(Some(&forced), &config(&value), "first", false, NOW);
        prop_assert!(matches!(back, Err(ApplyError::Conflicts(_))), "no conflict back");
    }
}
