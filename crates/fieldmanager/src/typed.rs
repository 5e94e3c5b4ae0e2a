//! Schema-driven operations on objects, as structured-merge-diff's typed package: the field
//! set of an object, the comparison of two objects, the merge of an applied configuration
//! into a live object, and the removal of a set of fields.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::fieldpath::{Path, PathElement, Set};
use crate::schema::{self, ListShape, Schema, Shape};

/// How one value is walked, from its schema node and the value itself.
enum Atom<S> {
    /// Compared and merged whole: scalars, atomic maps and lists, and values whose type
    /// does not match their schema.
    Leaf,
    /// A granular map or struct.
    Map(Option<S>),
    /// A granular list.
    List(Option<S>, ListShape),
}

fn atom<S: Schema>(schema: Option<S>, value: &Value) -> Atom<S> {
    let shape = schema.map_or(Shape::Deduced, Schema::shape);
    match (shape, value) {
        (Shape::Map { atomic: false }, Value::Object(_)) => Atom::Map(schema),
        (Shape::Deduced, Value::Object(_)) => Atom::Map(None),
        (Shape::List(ListShape::Atomic), _) => Atom::Leaf,
        (Shape::List(list), Value::Array(_)) => Atom::List(schema::items(schema), list),
        _ => Atom::Leaf,
    }
}

/// The atom of a node present on one or both sides; a node whose kind differs between the
/// sides is a leaf.
fn atom_of<S: Schema>(schema: Option<S>, lhs: Option<&Value>, rhs: Option<&Value>) -> Atom<S> {
    match (lhs, rhs) {
        (Some(l), Some(r)) => match (atom(schema, l), atom(schema, r)) {
            (Atom::Map(s), Atom::Map(_)) => Atom::Map(s),
            (Atom::List(s, list), Atom::List(..)) => Atom::List(s, list),
            _ => Atom::Leaf,
        },
        (Some(value), None) | (None, Some(value)) => atom(schema, value),
        (None, None) => Atom::Leaf,
    }
}

/// The atom of a node compared across two versions: as [`atom_of`], except that null is an
/// empty map or list (structured-merge-diff's comparison reads a null list or map as one
/// without items: a null `conditions` given items gains them one by one).
fn compared_atom<S: Schema>(
    schema: Option<S>,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Atom<S> {
    match (lhs, rhs) {
        (Some(Value::Null), Some(other)) | (Some(other), Some(Value::Null)) => atom(schema, other),
        _ => atom_of(schema, lhs, rhs),
    }
}

/// Whether a value is absent or an empty map or list (such nodes compare as leaves).
fn is_empty_container(value: Option<&Value>) -> bool {
    match value {
        None => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(Value::Array(list)) => list.is_empty(),
        Some(_) => false,
    }
}

/// The path element of a list element: its keys in a list-map, its value in a set, else its
/// index.
fn item_element(list: &ListShape, index: usize, item: &Value) -> PathElement {
    match (list, item) {
        (ListShape::Map(keys), Value::Object(fields)) => {
            let mut key: Vec<(String, Value)> = keys
                .iter()
                .filter_map(|(name, default)| {
                    let value = fields.get(name).or(default.as_ref())?;
                    Some((name.clone(), value.clone()))
                })
                .collect();
            key.sort_by(|a, b| a.0.cmp(&b.0));
            PathElement::Key(key)
        }
        (ListShape::Set, item) if !item.is_object() && !item.is_array() => {
            PathElement::Value(item.clone())
        }
        _ => PathElement::Index(index),
    }
}

/// The elements of a list with their path elements.
fn elements<'v>(list: &ListShape, items: &'v [Value]) -> Vec<(PathElement, &'v Value)> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| (item_element(list, index, item), item))
        .collect()
}

/// The fields an object sets (upstream's ToFieldSet): every scalar and atomic value, every
/// list element, every map entry that is not a declared struct field, and every empty map
/// or null.
pub fn to_field_set<S: Schema>(value: &Value, schema: Option<S>) -> Set {
    let mut set = Set::new();
    collect_fields(value, schema, &mut Vec::new(), &mut set);
    set
}

fn collect_fields<S: Schema>(value: &Value, schema: Option<S>, path: &mut Path, set: &mut Set) {
    match atom(schema, value) {
        Atom::Leaf => set.insert(path),
        Atom::Map(schema) => {
            for (name, child) in value.as_object().into_iter().flatten() {
                path.push(PathElement::Field(name.clone()));
                collect_fields(child, schema::child(schema, name), path, set);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !schema::is_named(schema, name) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Atom::List(items, list) => {
            let elements = elements(&list, value.as_array().map_or(&[], Vec::as_slice));
            let mut seen = BTreeMap::new();
            for (element, _) in &elements {
                *seen.entry(element.clone()).or_insert(0) += 1;
            }
            for (element, item) in elements {
                let duplicated = seen[&element] > 1;
                path.push(element);
                if !duplicated {
                    collect_fields(item, items, path, set);
                }
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// What upstream's typed conversion of `value` first refuses, if anything: a field its
/// schema's structs do not declare (`.spec.foo: field not declared in schema`) or an
/// element an associative list repeats (`.spec.ports: duplicate entries for key
/// [name="a"]`).
pub fn conversion_error<S: Schema>(value: &Value, schema: Option<S>) -> Option<String> {
    find_undeclared(value, schema, &mut Vec::new())
}

fn find_undeclared<S: Schema>(value: &Value, schema: Option<S>, path: &mut Path) -> Option<String> {
    match atom(schema, value) {
        Atom::Leaf => None,
        Atom::Map(schema) => {
            let strict = schema.is_some_and(|s| s.values().is_none() && !s.keeps_unknown_fields());
            for (name, child) in value.as_object().into_iter().flatten() {
                path.push(PathElement::Field(name.clone()));
                if strict && !schema::is_named(schema, name) {
                    let at = crate::fieldpath::path_string(path);
                    return Some(format!("{at}: field not declared in schema"));
                }
                let found = find_undeclared(child, schema::child(schema, name), path);
                path.pop();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Atom::List(items, list) => {
            let slice = value.as_array().map_or(&[][..], Vec::as_slice);
            let mut seen = Vec::new();
            for (element, item) in elements(&list, slice) {
                // An associative list (a map or a set) may not repeat an element.
                if !matches!(element, PathElement::Index(_)) {
                    if seen.contains(&element) {
                        let at = crate::fieldpath::path_string(path);
                        return Some(format!("{at}: duplicate entries for key {element}"));
                    }
                    seen.push(element.clone());
                }
                path.push(element);
                let found = find_undeclared(item, items, path);
                path.pop();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
    }
}

/// What changed between two objects: fields added, removed, and leaves modified.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// The comparison without `ignored` and the fields below its members.
    pub fn excluding(self, ignored: &Set) -> Comparison {
        if ignored.is_empty() {
            return self;
        }
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compares `lhs` (old) with `rhs` (new), as upstream's Compare: a node only on one side is
/// added or removed (with every node below it); a leaf on both sides is modified when it
/// differs.
pub fn compare<S: Schema>(lhs: &Value, rhs: &Value, schema: Option<S>) -> Comparison {
    let mut comparison = Comparison::default();
    compare_node(
        Some(lhs),
        Some(rhs),
        schema,
        &mut Vec::new(),
        &mut comparison,
    );
    comparison
}

fn compare_node<S: Schema>(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: Option<S>,
    path: &mut Path,
    out: &mut Comparison,
) {
    // Null counts as empty here: null and an empty list differ as leaves, as upstream's.
    let empty = |v: Option<&Value>| v.is_some_and(Value::is_null) || is_empty_container(v);
    let both_empty = empty(lhs) && empty(rhs);
    match compared_atom(schema, lhs, rhs) {
        Atom::Map(schema) if !both_empty => {
            let keys: BTreeSet<&String> = lhs
                .and_then(Value::as_object)
                .into_iter()
                .chain(rhs.and_then(Value::as_object))
                .flat_map(Map::keys)
                .collect();
            for key in keys {
                path.push(PathElement::Field(key.clone()));
                let (l, r) = (lhs.and_then(|v| v.get(key)), rhs.and_then(|v| v.get(key)));
                compare_node(l, r, schema::child(schema, key), path, out);
                path.pop();
            }
        }
        Atom::List(items, list) if !both_empty => compare_lists(lhs, rhs, items, &list, path, out),
        _ => {
            if let (Some(l), Some(r)) = (lhs, rhs)
                && l != r
            {
                out.modified.insert(path);
            }
        }
    }
    if lhs.is_none() {
        out.added.insert(path);
    } else if rhs.is_none() {
        out.removed.insert(path);
    }
}

fn compare_lists<S: Schema>(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    items: Option<S>,
    list: &ListShape,
    path: &mut Path,
    out: &mut Comparison,
) {
    let group = |value: Option<&Value>| {
        let mut grouped: BTreeMap<PathElement, Vec<Value>> = BTreeMap::new();
        let slice = value
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (element, item) in elements(list, slice) {
            grouped.entry(element).or_default().push(item.clone());
        }
        grouped
    };
    let (left, right) = (group(lhs), group(rhs));
    let all: BTreeSet<&PathElement> = left.keys().chain(right.keys()).collect();
    let none = Vec::new();
    for element in all {
        let l = left.get(element).unwrap_or(&none);
        let r = right.get(element).unwrap_or(&none);
        path.push(element.clone());
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => compare_node(l.first(), r.first(), items, path, out),
            (2.., 2..) => {
                if l != r {
                    out.modified.insert(path);
                }
            }
            (2.., _) => out.removed.insert(path),
            (_, _) => out.added.insert(path),
        }
        path.pop();
    }
}

/// Merges an applied configuration into a live object (upstream's Merge): granular maps and
/// lists merge entry by entry, leaves take the configuration's value. A list keeps the live
/// order and places the configuration's elements in the configuration's order.
pub fn merge<S: Schema>(live: &Value, config: &Value, schema: Option<S>) -> Value {
    merge_node(Some(live), Some(config), schema).unwrap_or(Value::Null)
}

fn merge_node<S: Schema>(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: Option<S>,
) -> Option<Value> {
    let both_empty = is_empty_container(lhs) && is_empty_container(rhs);
    match atom_of(schema, lhs, rhs) {
        Atom::Map(schema) if !both_empty => {
            let mut out = Map::new();
            let keys: BTreeSet<&String> = lhs
                .and_then(Value::as_object)
                .into_iter()
                .chain(rhs.and_then(Value::as_object))
                .flat_map(Map::keys)
                .collect();
            for key in keys {
                let (l, r) = (lhs.and_then(|v| v.get(key)), rhs.and_then(|v| v.get(key)));
                if let Some(merged) = merge_node(l, r, schema::child(schema, key)) {
                    out.insert(key.clone(), merged);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Atom::List(items, list) if !both_empty => {
            let out = merge_lists(lhs, rhs, items, &list);
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => rhs.or(lhs).cloned(),
    }
}

/// The elements of a list by path element: the first value of each, and the order of
/// first appearance.
fn index_elements<'v>(
    list: &ListShape,
    value: Option<&'v Value>,
) -> (Vec<PathElement>, BTreeMap<PathElement, &'v Value>) {
    let slice = value
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut order = Vec::new();
    let mut found = BTreeMap::new();
    for (element, item) in elements(list, slice) {
        if !found.contains_key(&element) {
            found.insert(element.clone(), item);
            order.push(element);
        }
    }
    (order, found)
}

/// Merges two granular lists: live elements absent from the configuration stay where they
/// are; elements in both follow the configuration's order.
fn merge_lists<S: Schema>(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    items: Option<S>,
    list: &ListShape,
) -> Vec<Value> {
    let (live, live_items) = index_elements(list, lhs);
    let (config, config_items) = index_elements(list, rhs);
    let mut shared = config
        .iter()
        .filter(|element| live_items.contains_key(element))
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_shared = shared.next();
    let mut emitted = BTreeSet::new();
    let mut out = Vec::new();
    let push = |element: &PathElement, out: &mut Vec<Value>| {
        let l = live_items.get(element).copied();
        let r = config_items.get(element).copied();
        out.extend(merge_node(l, r, items));
    };
    let (mut li, mut ri) = (0, 0);
    while li < live.len() || ri < config.len() {
        if li < live.len() && ri < config.len() {
            if live[li] == config[ri] {
                emitted.insert(&live[li]);
                push(&live[li], &mut out);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            let later_in_config = config_items.contains_key(&live[li]);
            if later_in_config && next_shared.is_some_and(|next| *next != live[li]) {
                li += 1;
                continue;
            }
        }
        if li < live.len() {
            if !config_items.contains_key(&live[li]) {
                push(&live[li], &mut out);
                li += 1;
                continue;
            } else if emitted.contains(&live[li]) {
                li += 1;
            }
        }
        if ri < config.len() {
            emitted.insert(&config[ri]);
            push(&config[ri], &mut out);
            if next_shared == Some(&config[ri]) {
                next_shared = shared.next();
            }
            ri += 1;
        }
    }
    out
}

/// Removes the members of `set` from an object (upstream's RemoveItems): a member map
/// entry or list element is dropped whole; below other entries the removal goes on. A map
/// or list left empty by the removal is dropped too.
pub fn remove_items<S: Schema>(value: &Value, set: &Set, schema: Option<S>) -> Value {
    remove_node(value, set, schema).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_node<S: Schema>(value: &Value, set: &Set, schema: Option<S>) -> Option<Value> {
    match atom(schema, value) {
        Atom::Leaf => Some(value.clone()),
        Atom::Map(schema) => {
            let mut out = Map::new();
            for (name, child) in value.as_object().into_iter().flatten() {
                let element = PathElement::Field(name.clone());
                if set.has_member(&element) {
                    continue;
                }
                let kept = match set.child(&element) {
                    Some(below) => remove_node(child, below, schema::child(schema, name)),
                    None => Some(child.clone()),
                };
                out.extend(kept.map(|kept| (name.clone(), kept)));
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Atom::List(items, list) => {
            let mut out = Vec::new();
            let slice = value.as_array().map_or(&[][..], Vec::as_slice);
            for (element, item) in elements(&list, slice) {
                if set.has_member(&element) {
                    continue;
                }
                out.extend(match set.child(&element) {
                    Some(below) => remove_node(item, below, items),
                    None => Some(item.clone()),
                });
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
    }
}

/// The set with every declared struct field that has paths below it made a member too
/// (upstream's EnsureNamedFieldsAreMembers), so that removing it removes the field.
pub fn with_named_fields_as_members<S: Schema>(set: &Set, schema: Option<S>) -> Set {
    let mut out = set.clone();
    for (element, child) in set.children() {
        let child_schema = match element {
            PathElement::Field(name) => {
                if schema::is_named(schema, name) {
                    out.insert_member(element.clone());
                }
                schema::child(schema, name)
            }
            _ => schema::items(schema),
        };
        out.set_child(
            element.clone(),
            with_named_fields_as_members(child, child_schema),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::Untyped;
    use crate::schema::testing::{Node, atomic_list, leak, list_map, map, object, set};

    /// A Deployment-like schema: struct spec with a replicas scalar, a list-map of
    /// containers (keyed by name) with a set of args and list-map of ports keyed by
    /// containerPort and protocol, labels as a granular map, an atomic selector map, and
    /// an atomic list of command strings.
    fn deployment() -> &'static Node {
        let container = object(vec![
            ("name", Node::Scalar),
            ("image", Node::Scalar),
            ("args", set()),
            ("command", atomic_list(Node::Scalar)),
            (
                "ports",
                list_map(
                    &["containerPort", "protocol"],
                    object(vec![
                        ("containerPort", Node::Scalar),
                        ("protocol", Node::Scalar),
                    ]),
                ),
            ),
        ]);
        leak(object(vec![
            ("apiVersion", Node::Scalar),
            ("kind", Node::Scalar),
            (
                "metadata",
                object(vec![("name", Node::Scalar), ("labels", map(Node::Scalar))]),
            ),
            (
                "spec",
                object(vec![
                    ("replicas", Node::Scalar),
                    ("selector", Node::Map(Box::new(Node::Scalar), true)),
                    ("containers", list_map(&["name"], container)),
                    ("extra", Node::Deduced),
                ]),
            ),
        ]))
    }

    fn fields(set: &Set) -> Value {
        set.to_fields_v1()
    }

    #[test]
    fn field_sets_by_shape() {
        let schema = Some(deployment());
        let cases = [
            (
                "struct fields are not members, scalars are",
                json!({"spec": {"replicas": 1}}),
                json!({"f:spec": {"f:replicas": {}}}),
            ),
            (
                "map entries are members",
                json!({"metadata": {"labels": {"a": "1"}}}),
                json!({"f:metadata": {"f:labels": {"f:a": {}}}}),
            ),
            (
                "empty maps are members",
                json!({"metadata": {"labels": {}}}),
                json!({"f:metadata": {"f:labels": {}}}),
            ),
            (
                "atomic maps are one member",
                json!({"spec": {"selector": {"a": "1", "b": "2"}}}),
                json!({"f:spec": {"f:selector": {}}}),
            ),
            (
                "list-map elements by key, themselves members",
                json!({"spec": {"containers": [{"name": "c", "image": "i"}]}}),
                json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:image": {}, "f:name": {}
                }}}}),
            ),
            (
                "multi-key list-map",
                json!({"spec": {"containers": [{"name": "c", "ports": [
                    {"containerPort": 80, "protocol": "TCP"}
                ]}]}}),
                json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:name": {}, "f:ports": {
                        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:protocol": {}
                        }
                    }
                }}}}),
            ),
            (
                "set elements by value",
                json!({"spec": {"containers": [{"name": "c", "args": ["a", "b"]}]}}),
                json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:name": {}, "f:args": {"v:\"a\"": {}, "v:\"b\"": {}}
                }}}}),
            ),
            (
                "atomic lists are one member",
                json!({"spec": {"containers": [{"name": "c", "command": ["x", "y"]}]}}),
                json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:name": {}, "f:command": {}
                }}}}),
            ),
            (
                "deduced nodes: maps granular, lists atomic",
                json!({"spec": {"extra": {"a": {"b": 1}, "l": [1, 2]}}}),
                json!({"f:spec": {"f:extra": {"f:a": {".": {}, "f:b": {}}, "f:l": {}}}}),
            ),
        ];
        for (name, object, want) in cases {
            assert_eq!(fields(&to_field_set(&object, schema)), want, "{name}");
        }
    }

    #[test]
    fn field_sets_without_schema() {
        let object = json!({"data": {"a": "1"}, "list": [1]});
        let got = to_field_set(&object, None::<Untyped>);
        assert_eq!(
            fields(&got),
            json!({"f:data": {".": {}, "f:a": {}}, "f:list": {}})
        );
    }

    #[test]
    fn comparisons() {
        let schema = Some(deployment());
        let cases = [
            (
                "a new map is added with its entries",
                json!({}),
                json!({"metadata": {"labels": {"a": "1"}}}),
                json!({"f:metadata": {".": {}, "f:labels": {".": {}, "f:a": {}}}}),
                json!({}),
                json!({}),
            ),
            (
                "a changed scalar is modified",
                json!({"spec": {"replicas": 1}}),
                json!({"spec": {"replicas": 2}}),
                json!({}),
                json!({"f:spec": {"f:replicas": {}}}),
                json!({}),
            ),
            (
                "a removed list-map element is removed with its fields",
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
                json!({"spec": {"containers": [{"name": "b"}]}}),
                json!({}),
                json!({}),
                json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {
                    ".": {}, "f:name": {}
                }}}}),
            ),
            (
                "an atomic map changes as one leaf",
                json!({"spec": {"selector": {"a": "1"}}}),
                json!({"spec": {"selector": {"a": "2", "b": "3"}}}),
                json!({}),
                json!({"f:spec": {"f:selector": {}}}),
                json!({}),
            ),
            (
                "a null list-map given elements gains them one by one",
                json!({"spec": {"containers": null}}),
                json!({"spec": {"containers": [{"name": "a"}]}}),
                json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {
                    ".": {}, "f:name": {}
                }}}}),
                json!({}),
                json!({}),
            ),
            (
                "null and an empty list differ as leaves",
                json!({"spec": {"containers": null}}),
                json!({"spec": {"containers": []}}),
                json!({}),
                json!({"f:spec": {"f:containers": {}}}),
                json!({}),
            ),
            (
                "reordering a list-map changes nothing",
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
                json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}}),
                json!({}),
                json!({}),
                json!({}),
            ),
        ];
        for (name, lhs, rhs, added, modified, removed) in cases {
            let got = compare(&lhs, &rhs, schema);
            assert_eq!(fields(&got.added), added, "{name}: added");
            assert_eq!(fields(&got.modified), modified, "{name}: modified");
            assert_eq!(fields(&got.removed), removed, "{name}: removed");
        }
    }

    #[test]
    fn merges() {
        let schema = Some(deployment());
        let cases = [
            (
                "struct fields merge granularly",
                json!({"spec": {"replicas": 1, "selector": {"a": "1"}}}),
                json!({"spec": {"replicas": 3}}),
                json!({"spec": {"replicas": 3, "selector": {"a": "1"}}}),
            ),
            (
                "atomic maps are replaced",
                json!({"spec": {"selector": {"a": "1"}}}),
                json!({"spec": {"selector": {"b": "2"}}}),
                json!({"spec": {"selector": {"b": "2"}}}),
            ),
            (
                "granular maps merge",
                json!({"metadata": {"labels": {"a": "1"}}}),
                json!({"metadata": {"labels": {"b": "2"}}}),
                json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            ),
            (
                "list-maps merge by key, keeping live-only elements in place",
                json!({"spec": {"containers": [
                    {"name": "a", "image": "1"}, {"name": "x"}, {"name": "b", "image": "1"}
                ]}}),
                json!({"spec": {"containers": [
                    {"name": "b", "image": "2"}, {"name": "c"}, {"name": "a"}
                ]}}),
                json!({"spec": {"containers": [
                    {"name": "x"}, {"name": "b", "image": "2"}, {"name": "c"},
                    {"name": "a", "image": "1"}
                ]}}),
            ),
            (
                "sets are unions",
                json!({"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}),
                json!({"spec": {"containers": [{"name": "a", "args": ["z", "x"]}]}}),
                json!({"spec": {"containers": [{"name": "a", "args": ["z", "x", "y"]}]}}),
            ),
            (
                "atomic lists are replaced",
                json!({"spec": {"containers": [{"name": "a", "command": ["x", "y"]}]}}),
                json!({"spec": {"containers": [{"name": "a", "command": ["z"]}]}}),
                json!({"spec": {"containers": [{"name": "a", "command": ["z"]}]}}),
            ),
        ];
        for (name, live, config, want) in cases {
            assert_eq!(merge(&live, &config, schema), want, "{name}");
        }
    }

    #[test]
    fn removals() {
        let schema = Some(deployment());
        let object = json!({
            "metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 1, "containers": [{"name": "a"}, {"name": "b"}]}
        });
        let cases = [
            (
                "a scalar",
                json!({"f:spec": {"f:replicas": {}}}),
                json!({
                    "metadata": {"labels": {"a": "1", "b": "2"}},
                    "spec": {"containers": [{"name": "a"}, {"name": "b"}]}
                }),
            ),
            (
                "a list element and a map entry",
                json!({
                    "f:metadata": {"f:labels": {"f:a": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {}}}
                }),
                json!({
                    "metadata": {"labels": {"b": "2"}},
                    "spec": {"replicas": 1, "containers": [{"name": "b"}]}
                }),
            ),
            (
                "a map emptied by the removal goes too",
                json!({"f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}}}),
                json!({"spec": {"replicas": 1, "containers": [{"name": "a"}, {"name": "b"}]}}),
            ),
        ];
        for (name, remove, want) in cases {
            let set = Set::from_fields_v1(&remove).expect("valid");
            assert_eq!(remove_items(&object, &set, schema), want, "{name}");
        }
    }

    #[test]
    fn named_fields_become_members() {
        let set = Set::from_fields_v1(&json!({
            "f:metadata": {"f:labels": {"f:a": {}}},
            "f:spec": {"f:extra": {"f:x": {"f:y": {}}}}
        }))
        .expect("valid");
        let got = with_named_fields_as_members(&set, Some(deployment()));
        assert_eq!(
            got.to_fields_v1(),
            json!({
                "f:metadata": {".": {}, "f:labels": {".": {}, "f:a": {}}},
                "f:spec": {".": {}, "f:extra": {".": {}, "f:x": {"f:y": {}}}}
            })
        );
    }
}
