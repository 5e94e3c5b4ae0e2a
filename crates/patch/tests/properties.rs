//! Property-based tests of PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386)
//! and strategic merge patch, applied to arbitrary documents.
//!
//! A patch body is client input applied to a stored object, so the first property of each
//! format is that no document and no patch panics the server (errors are fine: they become
//! 4xx/5xx answers), and that a successful patch gives an object. Then what each format
//! promises:
//! - JSON patch: wherever the RFC 6902 implementation of the json-patch crate succeeds on
//!   a patch of non-root paths, ours succeeds with the same document (upstream's library
//!   is lenient in places, so only that direction holds);
//! - merge patch: applying a patch (whose lists hold no `null`) twice is applying it once;
//!   the patch computed between two null-free objects turns the first into the second; a
//!   new member is stored without its `null` members, as upstream stores it; a patch that
//!   is not an object is refused with upstream's status;
//! - strategic merge patch: without a schema and without directives it is a merge patch;
//!   `$patch: delete`/`replace` at the top behave as documented; a set list becomes the
//!   union of both lists and a list merged by key holds every key of both, with the
//!   patch's members merged in.
//!
//! And JSON text of any float reads back as the same float, as Go's `encoding/json` reads
//! it (the workspace turns on serde_json's `float_roundtrip` for that).
//!
//! Each property runs proptest's default of 256 cases (a few seconds in CI). For a long
//! run: `PROPTEST_CASES=100000 cargo test -p kapi-patch --test properties`.

use std::collections::BTreeSet;

use kapi_patch::{ListStrategy, MapStrategy, NoSchema, PatchError, PatchSchema, PatchType, apply};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------

/// Object keys: few, so that documents and patches name the same members; `m`, `s` and `r`
/// are the fields [`TestSchema`] gives a strategy.
const KEYS: &[&str] = &["a", "b", "c", "name", "m", "s", "r", ""];

/// A scalar: null, bool, small or large integer, float, short string.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        float(),
        prop::sample::select(&["", "x", "y", "é", "$patch", "delete"][..]).prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::String),
    ]
}

/// A float with a short decimal text (patch documents as people write them); any float's
/// text reading back exactly is `json_text_keeps_floats_exactly`.
fn float() -> impl Strategy<Value = Value> {
    (-(1i32 << 20)..(1 << 20), 0u32..=10)
        .prop_map(|(m, e)| Value::from(f64::from(m) / f64::from(1u32 << e)))
}

/// Builds values nested at most 4 deep from `leaf`, with keys from `key`.
fn nested(
    leaf: impl Strategy<Value = Value> + 'static,
    key: impl Strategy<Value = String> + Clone + 'static,
) -> impl Strategy<Value = Value> {
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            object_of(key.clone(), inner),
        ]
    })
}

/// Objects of up to 5 members.
fn object_of(
    key: impl Strategy<Value = String>,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key, value, 0..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn key() -> impl Strategy<Value = String> + Clone {
    prop::sample::select(KEYS).prop_map(String::from)
}

/// Any JSON value.
fn json_value() -> impl Strategy<Value = Value> {
    nested(scalar(), key())
}

/// Any JSON object (the documents the server stores are objects).
fn json_object() -> impl Strategy<Value = Value> {
    object_of(key(), json_value())
}

/// JSON without `null` anywhere.
fn null_free() -> impl Strategy<Value = Value> {
    nested(scalar().prop_filter("null", |v| !v.is_null()), key())
}

fn null_free_object() -> impl Strategy<Value = Value> {
    object_of(key(), null_free())
}

/// A JSON pointer: usually `/`-rooted, of object keys and array indexes, lenient and
/// escaped forms included; sometimes not rooted or empty.
fn pointer() -> impl Strategy<Value = String> + Clone {
    let segment = prop::sample::select(
        &[
            "a", "b", "name", "m", "", "0", "1", "2", "-", "-1", "01", "+1", "~0", "~1", "~",
            "x~1y",
        ][..],
    );
    let rooted = prop::collection::vec(segment, 1..4).prop_map(|s| format!("/{}", s.join("/")));
    prop_oneof![8 => rooted, 1 => Just(String::new()), 1 => Just("a/b".to_string())]
}

/// One JSON patch operation; members may be missing or of the wrong type.
fn operation(
    pointer: impl Strategy<Value = String> + Clone + 'static,
) -> impl Strategy<Value = Value> {
    let op =
        prop::sample::select(&["add", "remove", "replace", "move", "copy", "test", "bogus"][..]);
    let maybe = |s: BoxedStrategy<Value>| prop::option::weighted(0.9, s);
    (
        maybe(op.prop_map(Value::from).boxed()),
        maybe(pointer.clone().prop_map(Value::from).boxed()),
        maybe(pointer.prop_map(Value::from).boxed()),
        maybe(json_value().boxed()),
    )
        .prop_map(|(op, path, from, value)| {
            let mut m = Map::new();
            for (k, v) in [("op", op), ("path", path), ("from", from), ("value", value)] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            Value::Object(m)
        })
}

/// A JSON patch document: a list of operations, or (rarely) some other JSON.
fn json_patch_body() -> impl Strategy<Value = Value> {
    prop_oneof![
        9 => prop::collection::vec(operation(pointer()), 0..6).prop_map(Value::Array),
        1 => json_value(),
    ]
}

/// Serializes a patch for [`apply`].
fn bytes(patch: &Value) -> Vec<u8> {
    serde_json::to_vec(patch).unwrap()
}

/// The patch metadata of a made-up kind: lists named `m` merge by `name`, lists named `s`
/// are sets, objects named `r` are replaced; everything else is atomic or merges.
struct TestSchema;

impl PatchSchema for TestSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match path.last() {
            Some(&"m") => ListStrategy::merge_by("name"),
            Some(&"s") => ListStrategy::set(),
            _ => ListStrategy::Replace,
        }
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        match path.last() {
            Some(&"r") => MapStrategy::Replace,
            _ => MapStrategy::Merge,
        }
    }
}

/// Keys of strategic merge patches: plain ones and every directive.
fn smp_key() -> impl Strategy<Value = String> + Clone {
    prop::sample::select(
        &[
            "a",
            "b",
            "name",
            "m",
            "s",
            "r",
            "$patch",
            "$retainKeys",
            "$setElementOrder/m",
            "$setElementOrder/s",
            "$setElementOrder/a",
            "$deleteFromPrimitiveList/s",
            "$deleteFromPrimitiveList/m",
            "$setElementOrder",
            "$deleteFromPrimitiveList",
            "$x",
        ][..],
    )
    .prop_map(String::from)
}

/// A strategic merge patch, directives anywhere.
fn smp_patch() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        scalar(),
        prop::sample::select(&["replace", "delete", "merge", "name", "m", "s"][..])
            .prop_map(Value::from),
    ];
    object_of(smp_key(), nested(leaf, smp_key()))
}

// ---------------------------------------------------------------------------------------
// Never panics
// ---------------------------------------------------------------------------------------

/// Applies `patch` as every patch type, with and without a schema.
fn apply_all(doc: &Value, patch: &[u8]) -> Vec<Result<Value, PatchError>> {
    let mut out = Vec::new();
    for patch_type in [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge] {
        out.push(apply(patch_type, doc, patch, &NoSchema));
        out.push(apply(patch_type, doc, patch, &TestSchema));
    }
    out
}

proptest! {
    /// Arbitrary bytes as the body of every patch type never panic.
    #[test]
    fn arbitrary_bodies_never_panic(
        doc in json_value(),
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..48),
            any::<String>().prop_map(String::into_bytes),
        ],
    ) {
        for patched in apply_all(&doc, &body).into_iter().flatten() {
            prop_assert!(patched.is_object());
        }
    }

    /// Any JSON document patched with any JSON patch, merge patch or strategic merge patch
    /// (directives included) never panics, and a success is an object.
    #[test]
    fn patches_never_panic(
        doc in json_value(),
        patch in prop_oneof![json_patch_body(), json_value(), smp_patch()],
    ) {
        for patched in apply_all(&doc, &bytes(&patch)).into_iter().flatten() {
            prop_assert!(patched.is_object());
        }
    }
}

proptest! {
    /// JSON text of a float reads back as the same float, as Go's `encoding/json` reads it
    /// (serde_json does only with its `float_roundtrip` feature: without it,
    /// -36780.443420410156 read back as -36780.44342041016).
    #[test]
    fn json_text_keeps_floats_exactly(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let text = serde_json::to_string(&f).unwrap();
        prop_assert_eq!(serde_json::from_str::<f64>(&text).unwrap(), f, "{}", text);
    }
}

// ---------------------------------------------------------------------------------------
// JSON patch
// ---------------------------------------------------------------------------------------

/// A `/`-rooted pointer (never the whole document) into a [`json_patch_doc`]: a top-level
/// member, then array indexes (lenient forms too) or object keys.
fn rooted_pointer() -> impl Strategy<Value = String> + Clone {
    // Repeats weigh the choices: mostly the list `a` and its indexes.
    let first = prop::sample::select(&["a", "a", "a", "a", "b", "b", "name", "", "~1"][..]);
    let rest = prop::sample::select(
        &[
            "0", "0", "1", "1", "2", "2", "3", "-", "-", "-1", "01", "+1", "a", "b", "name", "",
        ][..],
    );
    (first, prop::collection::vec(rest, 0..2)).prop_map(|(first, rest)| {
        std::iter::once(first)
            .chain(rest)
            .fold(String::new(), |p, s| format!("{p}/{s}"))
    })
}

/// An object for JSON patches to work on: a list of scalars and objects at `a`, an object
/// of scalars and lists at `b`, and any other members.
fn json_patch_doc() -> impl Strategy<Value = Value> {
    let list = prop::collection::vec(prop_oneof![scalar(), object_of(key(), scalar())], 0..4)
        .prop_map(Value::Array);
    let b = object_of(key(), prop_oneof![scalar(), list.clone()]);
    (json_object(), list, b).prop_map(|(doc, a, b)| {
        let mut doc = doc.as_object().unwrap().clone();
        doc.insert("a".into(), a);
        doc.insert("b".into(), b);
        Value::Object(doc)
    })
}

/// A well-formed operation: every member its op needs, of the right type.
fn rfc_operation() -> impl Strategy<Value = Value> {
    let op = prop::sample::select(&["add", "remove", "replace", "move", "copy", "test"][..]);
    (op, rooted_pointer(), rooted_pointer(), json_value()).prop_map(|(op, path, from, value)| {
        match op {
            "remove" => json!({"op": op, "path": path}),
            "move" | "copy" => json!({"op": op, "path": path, "from": from}),
            _ => json!({"op": op, "path": path, "value": value}),
        }
    })
}

/// The document the json-patch crate's RFC 6902 implementation makes of `doc`, if it
/// accepts the patch.
fn rfc6902(doc: &Value, patch: &Value) -> Option<Value> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone()).ok()?;
    let mut doc = doc.clone();
    // patch_unsafe: no undo on failure, of which only successes are used.
    json_patch::patch_unsafe(&mut doc, &ops).ok()?;
    Some(doc)
}

proptest! {
    /// Wherever RFC 6902 applies a patch (of non-root paths) to an object, ours gives the
    /// same document.
    #[test]
    fn json_patch_agrees_with_rfc6902(
        doc in json_patch_doc(),
        ops in prop::collection::vec(rfc_operation(), 1..3),
    ) {
        let patch = Value::Array(ops);
        if let Some(want) = rfc6902(&doc, &patch) {
            let got = apply(PatchType::Json, &doc, &bytes(&patch), &NoSchema);
            prop_assert_eq!(got, Ok(want), "patch {}", patch);
        }
    }

    /// Adding a new member, testing it and removing it again leaves the document as it was.
    #[test]
    fn json_patch_add_test_remove_is_identity(doc in json_object(), value in json_value()) {
        let patch = json!([
            {"op": "add", "path": "/new~1key", "value": value},
            {"op": "test", "path": "/new~1key", "value": value},
            {"op": "remove", "path": "/new~1key"},
        ]);
        let doc = match doc {
            Value::Object(mut m) => { m.remove("new/key"); Value::Object(m) }
            other => other,
        };
        prop_assert_eq!(apply(PatchType::Json, &doc, &bytes(&patch), &NoSchema), Ok(doc));
    }
}

// ---------------------------------------------------------------------------------------
// Merge patch
// ---------------------------------------------------------------------------------------

/// The merge patch that turns object `from` into object `to`: `null` for removed members,
/// a nested patch where both are objects, the new value elsewhere.
fn merge_diff(from: &Map<String, Value>, to: &Map<String, Value>) -> Value {
    let mut patch = Map::new();
    for k in from.keys().filter(|k| !to.contains_key(*k)) {
        patch.insert(k.clone(), Value::Null);
    }
    for (k, new) in to {
        match (from.get(k), new) {
            (Some(old), _) if old == new => {}
            (Some(Value::Object(old)), Value::Object(new)) => {
                patch.insert(k.clone(), merge_diff(old, new));
            }
            _ => {
                patch.insert(k.clone(), new.clone());
            }
        }
    }
    Value::Object(patch)
}

proptest! {
    /// Applying a merge patch twice gives what applying it once gives, for patches whose
    /// lists hold no `null`s. (Upstream's merge is not idempotent for those: a list put
    /// where the document has an object keeps its `{"a":null}` members the first time and
    /// loses them the second, as evanphx/json-patch v4 prunes nulls only where the
    /// document has no object; `{"r":{}}` patched with `{"r":[{"a":null}]}`. kapi does the
    /// same.)
    #[test]
    fn merge_patch_is_idempotent(doc in json_object(), patch in plain_patch()) {
        let patch = bytes(&patch);
        let once = apply(PatchType::Merge, &doc, &patch, &NoSchema).unwrap();
        let twice = apply(PatchType::Merge, &once, &patch, &NoSchema).unwrap();
        prop_assert_eq!(twice, once);
    }

    /// The merge patch computed between two null-free objects turns the first into the
    /// second.
    #[test]
    fn merge_patch_of_a_diff_reaches_the_target(
        from in null_free_object(),
        to in null_free_object(),
    ) {
        let patch = merge_diff(from.as_object().unwrap(), to.as_object().unwrap());
        prop_assert_eq!(apply(PatchType::Merge, &from, &bytes(&patch), &NoSchema), Ok(to));
    }

    /// A merge patch that is not an object is refused: a list as "not an object" (422),
    /// `null` and scalars as a bad request (400).
    #[test]
    fn merge_patch_of_a_non_object_is_refused(
        doc in json_object(),
        patch in prop_oneof![
            scalar(),
            prop::collection::vec(json_value(), 0..4).prop_map(Value::Array),
        ],
    ) {
        let status = apply(PatchType::Merge, &doc, &bytes(&patch), &NoSchema)
            .map_err(|e| e.status_code());
        prop_assert_eq!(status, Err(if patch.is_array() { 422 } else { 400 }));
    }
}

/// `v` without `null` object members, at any depth, through lists too (`null` list
/// elements stay): what upstream's merge patch stores where the document had no object.
fn prune_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), prune_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(prune_nulls).collect()),
        other => other.clone(),
    }
}

proptest! {
    /// A member the document does not have as an object is set to the patch's value without
    /// its `null` members (through lists too), as evanphx/json-patch v4 stores it; members
    /// the patch does not name are kept.
    #[test]
    fn merge_patch_sets_new_values_without_nulls(
        doc in json_object(),
        key in key(),
        value in json_value(),
    ) {
        // A `null` would delete: use a value full of them instead.
        let value = if value.is_null() {
            json!([null, {"a": null, "b": [{"c": null}]}])
        } else {
            value
        };
        let mut doc = doc.as_object().unwrap().clone();
        if doc.get(&key).is_some_and(Value::is_object) {
            doc.remove(&key);
        }
        let patch = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
        let original = Value::Object(doc.clone());
        let patched = apply(PatchType::Merge, &original, &bytes(&patch), &NoSchema);
        doc.insert(key, prune_nulls(&value));
        prop_assert_eq!(patched, Ok(Value::Object(doc)));
    }
}

// ---------------------------------------------------------------------------------------
// Strategic merge patch
// ---------------------------------------------------------------------------------------

/// A patch without directives: object members may be `null` (deletions), lists hold no
/// `null` at any depth.
fn plain_patch() -> impl Strategy<Value = Value> {
    let member = prop_oneof![
        1 => Just(Value::Null),
        4 => null_free(),
    ];
    let value = member.prop_recursive(3, 24, 4, |inner| object_of(key(), inner));
    object_of(key(), value)
}

/// Set elements, all numbers or all strings (upstream refuses to merge lists whose
/// elements differ in type), repeats allowed.
fn set_elements() -> impl Strategy<Value = Vec<Value>> {
    prop_oneof![
        prop::collection::vec((0i64..6).prop_map(Value::from), 0..6),
        prop::collection::vec("[a-d]".prop_map(Value::from), 0..6),
    ]
}

/// A list of objects merged by `name`, names distinct, each with one other member `field`.
fn named_elements(field: &'static str) -> impl Strategy<Value = Vec<Value>> {
    prop::collection::btree_map("[a-e]", (0i64..5).prop_map(Value::from), 0..5).prop_map(move |m| {
        m.into_iter()
            .map(|(name, v)| {
                let mut element = Map::new();
                element.insert("name".into(), Value::from(name));
                element.insert(field.into(), v);
                Value::Object(element)
            })
            .collect()
    })
}

/// The distinct elements of lists, as text.
fn distinct(lists: &[&Value]) -> BTreeSet<String> {
    lists
        .iter()
        .flat_map(|l| l.as_array().unwrap())
        .map(Value::to_string)
        .collect()
}

proptest! {
    /// Without a schema and without directives, a strategic merge patch is a merge patch.
    #[test]
    fn strategic_without_schema_is_a_merge_patch(doc in json_object(), patch in plain_patch()) {
        let body = bytes(&patch);
        let strategic = apply(PatchType::StrategicMerge, &doc, &body, &NoSchema);
        let merge = apply(PatchType::Merge, &doc, &body, &NoSchema);
        prop_assert_eq!(strategic, merge, "patch {}", patch);
    }

    /// `$patch: delete` at the top empties the object; `$patch: replace` makes it the rest
    /// of the patch.
    #[test]
    fn strategic_top_level_directives(doc in json_object(), rest in plain_patch()) {
        let smp = |patch: &Value| {
            apply(PatchType::StrategicMerge, &doc, &bytes(patch), &TestSchema)
        };
        let mut delete = rest.clone();
        delete["$patch"] = json!("delete");
        prop_assert_eq!(smp(&delete), Ok(json!({})));
        let mut replace = rest.clone();
        replace["$patch"] = json!("replace");
        prop_assert_eq!(smp(&replace), Ok(rest));
    }

    /// A set list (`s`) becomes the union of the stored and the patch's elements, each
    /// once.
    #[test]
    fn strategic_set_lists_are_unions(
        (old, new) in prop_oneof![
            (set_elements(), Just(vec![])),
            (Just(vec![]), set_elements()),
            set_elements().prop_flat_map(|old| {
                // The patch's elements of the same type as the stored ones.
                let strings = old.first().is_some_and(Value::is_string);
                let new = if strings {
                    prop::collection::vec("[a-d]".prop_map(Value::from), 0..6).boxed()
                } else {
                    prop::collection::vec((0i64..6).prop_map(Value::from), 0..6).boxed()
                };
                (Just(old), new)
            }),
        ],
    ) {
        let (old, new) = (Value::from(old), Value::from(new));
        let doc = json!({"s": old.clone()});
        let patch = bytes(&json!({"s": new.clone()}));
        let merged = apply(PatchType::StrategicMerge, &doc, &patch, &TestSchema);
        prop_assert!(merged.is_ok(), "{:?}", merged);
        let merged = merged.unwrap();
        let got = merged["s"].as_array().cloned().unwrap_or_default();
        let got_set = distinct(&[&merged["s"]]);
        prop_assert_eq!(got.len(), got_set.len(), "repeated elements in {:?}", got);
        prop_assert_eq!(got_set, distinct(&[&old, &new]));
    }

    /// A list merged by key (`m`) holds every name of both lists once; elements the patch
    /// names keep their stored member and gain the patch's.
    #[test]
    fn strategic_keyed_lists_merge_elements(
        old in named_elements("old"),
        new in named_elements("new"),
    ) {
        let doc = json!({"m": old.clone()});
        let patch = bytes(&json!({"m": new.clone()}));
        let merged = apply(PatchType::StrategicMerge, &doc, &patch, &TestSchema);
        prop_assert!(merged.is_ok(), "{:?}", merged);
        let merged = merged.unwrap();
        let items = merged["m"].as_array().cloned().unwrap_or_default();
        let name = |v: &Value| v["name"].as_str().unwrap().to_string();
        let names: Vec<String> = items.iter().map(name).collect();
        let want: BTreeSet<String> = old.iter().chain(&new).map(name).collect();
        prop_assert_eq!(names.len(), want.len(), "{:?}", names);
        prop_assert_eq!(names.into_iter().collect::<BTreeSet<_>>(), want);
        for element in old.iter().chain(&new) {
            let found = items.iter().find(|i| name(i) == name(element)).unwrap();
            for (k, v) in element.as_object().unwrap() {
                prop_assert_eq!(&found[k], v, "element {}", element);
            }
        }
    }
}
