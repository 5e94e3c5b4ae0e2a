//! Field paths and field sets: the vocabulary of managedFields.
//!
//! A [`PathElement`] names one step into an object: a field of a map or struct, an element
//! of an associative list by its keys, an element of a set by its value, or an element of
//! an atomic list by its index. A [`Set`] is a trie of paths: its members are the paths
//! that end at it, its children the sets below each element. Sets are written in the
//! FieldsV1 form of `metadata.managedFields[*].fieldsV1`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a struct or an entry of a map (`f:<name>`).
    Field(String),
    /// An element of an associative list (`x-kubernetes-list-type: map`), by the values of
    /// its key fields, sorted by field name (`k:{"name":"c"}`).
    Key(Vec<(String, Value)>),
    /// An element of a set (`x-kubernetes-list-type: set`), by its value (`v:"a"`).
    Value(Value),
    /// An element of a list by its position (`i:0`).
    Index(usize),
}

/// A path from an object's root.
pub type Path = Vec<PathElement>;

impl PathElement {
    /// The element's rank in upstream's order: fields, then keys, values, indexes.
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 spelling of the element (`f:name`, `k:{...}`, `v:...`, `i:0`).
    pub fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let object: Map<String, Value> = fields.iter().cloned().collect();
                format!("k:{}", Value::Object(object))
            }
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses the FieldsV1 spelling of an element.
    pub fn deserialize(text: &str) -> Result<PathElement, FieldsError> {
        let invalid = || FieldsError(format!("invalid path element {text:?}"));
        let (kind, rest) = text.split_at_checked(2).ok_or_else(invalid)?;
        match kind {
            "f:" => Ok(PathElement::Field(rest.to_string())),
            "v:" => serde_json::from_str(rest)
                .map(PathElement::Value)
                .map_err(|_| invalid()),
            "k:" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(object)) => Ok(PathElement::Key(object.into_iter().collect())),
                _ => Err(invalid()),
            },
            "i:" => rest.parse().map(PathElement::Index).map_err(|_| invalid()),
            _ => Err(invalid()),
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_keys(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// The human form upstream prints in conflicts: `.name`, `[name="c"]`, `[="a"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={value}]"),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A path in upstream's human form (`.spec.containers[name="c"].image`).
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// Key field lists compare field by field: name, then value; a shorter list first.
fn compare_keys(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((name_a, value_a), (name_b, value_b)) in a.iter().zip(b) {
        let order = name_a
            .cmp(name_b)
            .then_with(|| compare_values(value_a, value_b));
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// A total order over JSON values, as structured-merge-diff's: numbers, strings, booleans,
/// lists, maps, null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.total_cmp(&y)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(x, y)| compare_values(x, y))
            .find(|order| *order != Ordering::Equal)
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .zip(y)
            .map(|((kx, vx), (ky, vy))| kx.cmp(ky).then_with(|| compare_values(vx, vy)))
            .find(|order| *order != Ordering::Equal)
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A FieldsV1 document that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldsError(pub String);

/// A set of field paths, as a trie. Children are never empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Set {
        let mut set = Set::new();
        for path in paths {
            set.insert(path);
        }
        set
    }

    /// Whether the set has no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path; the empty path (the root itself) is never a member.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|set| set.has(rest)),
        }
    }

    /// Whether `element` is a member at this level.
    pub fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element` (without it), if any.
    pub fn child(&self, element: &PathElement) -> Option<&Set> {
        self.children.get(element)
    }

    /// The members at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The children at this level.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    /// Adds `element` as a member at this level.
    pub(crate) fn insert_member(&mut self, element: PathElement) {
        self.members.insert(element);
    }

    /// Sets the paths below `element`; an empty set removes them.
    pub(crate) fn set_child(&mut self, element: PathElement, child: Set) {
        if child.is_empty() {
            self.children.remove(&element);
        } else {
            self.children.insert(element, child);
        }
    }

    /// The paths in either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    /// The paths of `self` that are not in `other`. A member of `other` does not remove
    /// the paths below it.
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set {
            members: self.members.difference(&other.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            out.set_child(element.clone(), rest);
        }
        out
    }

    /// The paths of `self` that are neither in `other` nor below one of its members.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let mut out = Set {
            members: self.members.difference(&other.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if other.members.contains(element) {
                continue;
            }
            let rest = match other.children.get(element) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            out.set_child(element.clone(), rest);
        }
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set {
            members: self.members.intersection(&other.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                out.set_child(element.clone(), child.intersection(theirs));
            }
        }
        out
    }

    /// Every member path, members of a level before the levels below, in order (upstream's
    /// Iterate).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The FieldsV1 form: every element a key; a member alone is `{}`, an element with
    /// paths below is an object of them, with `".": {}` when it is a member too.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_contents(false))
    }

    fn fields_v1_contents(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        for member in &self.members {
            if !self.children.contains_key(member) {
                out.insert(member.serialize(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            let contents = child.fields_v1_contents(self.members.contains(element));
            out.insert(element.serialize(), Value::Object(contents));
        }
        out
    }

    /// Reads the FieldsV1 form.
    pub fn from_fields_v1(fields: &Value) -> Result<Set, FieldsError> {
        let object = fields
            .as_object()
            .ok_or_else(|| FieldsError("FieldsV1 must be a JSON object".to_string()))?;
        let mut set = Set::new();
        for (key, value) in object {
            if key == "." {
                continue;
            }
            let element = PathElement::deserialize(key)?;
            let inner = value
                .as_object()
                .ok_or_else(|| FieldsError(format!("the value of {key:?} must be an object")))?;
            if inner.is_empty() || inner.contains_key(".") {
                set.members.insert(element.clone());
            }
            let child = Set::from_fields_v1(value)?;
            set.set_child(element, child);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    fn key(name: &str, value: Value) -> PathElement {
        PathElement::Key(vec![(name.to_string(), value)])
    }

    #[test]
    fn element_spellings_round_trip() {
        let cases = [
            (field("spec"), "f:spec", ".spec"),
            (
                key("name", json!("c")),
                r#"k:{"name":"c"}"#,
                r#"[name="c"]"#,
            ),
            (PathElement::Value(json!("a")), r#"v:"a""#, r#"[="a"]"#),
            (PathElement::Value(json!(3)), "v:3", "[=3]"),
            (PathElement::Index(2), "i:2", "[2]"),
        ];
        for (element, serialized, human) in cases {
            assert_eq!(element.serialize(), serialized);
            assert_eq!(element.to_string(), human);
            assert_eq!(PathElement::deserialize(serialized).unwrap(), element);
        }
    }

    #[test]
    fn multi_field_keys_are_sorted_and_printed_in_order() {
        let element = PathElement::deserialize(r#"k:{"protocol":"TCP","containerPort":80}"#)
            .expect("valid key");
        assert_eq!(
            element.serialize(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(element.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
    }

    #[test]
    fn bad_elements_are_errors() {
        for text in ["", "x", "z:a", "k:[1]", "i:x", "v:{"] {
            assert!(PathElement::deserialize(text).is_err(), "{text}");
        }
    }

    #[test]
    fn elements_order_as_upstream() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            key("name", json!("b")),
            field("z"),
            PathElement::Value(json!(1)),
            field("a"),
        ];
        elements.sort();
        let spelled: Vec<String> = elements.iter().map(PathElement::serialize).collect();
        assert_eq!(
            spelled,
            ["f:a", "f:z", r#"k:{"name":"b"}"#, "v:1", r#"v:"a""#, "i:0"]
        );
    }

    #[test]
    fn fields_v1_round_trip() {
        let fields = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {
                    "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}
                },
                "f:replicas": {}
            }
        });
        let set = Set::from_fields_v1(&fields).expect("valid");
        let labels = [field("metadata"), field("labels")];
        assert!(set.has(&labels));
        assert!(!set.has(&[field("metadata")]));
        let container = [field("spec"), field("containers"), key("name", json!("c"))];
        assert!(set.has(&container));
        assert_eq!(set.to_fields_v1(), fields);
        assert_eq!(set.paths().len(), 6);
    }

    #[test]
    fn fields_v1_errors() {
        for fields in [json!([]), json!({"f:a": 1}), json!({"x:a": {}})] {
            assert!(Set::from_fields_v1(&fields).is_err(), "{fields}");
        }
    }

    fn set_of(paths: &[&[&str]]) -> Set {
        let paths: Vec<Path> = paths
            .iter()
            .map(|path| path.iter().map(|name| field(name)).collect())
            .collect();
        Set::from_paths(paths.iter().map(Vec::as_slice))
    }

    #[test]
    fn set_operations() {
        let a = set_of(&[&["a"], &["b", "c"], &["b", "d"]]);
        let b = set_of(&[&["b"], &["b", "c"], &["e"]]);
        struct Case {
            name: &'static str,
            got: Set,
            want: Set,
        }
        let cases = [
            Case {
                name: "union",
                got: a.union(&b),
                want: set_of(&[&["a"], &["b"], &["b", "c"], &["b", "d"], &["e"]]),
            },
            Case {
                name: "difference keeps paths below removed members",
                got: a.difference(&b),
                want: set_of(&[&["a"], &["b", "d"]]),
            },
            Case {
                name: "recursive difference drops paths below removed members",
                got: a.recursive_difference(&b),
                want: set_of(&[&["a"]]),
            },
            Case {
                name: "intersection",
                got: a.intersection(&b),
                want: set_of(&[&["b", "c"]]),
            },
            Case {
                name: "difference with itself is empty",
                got: a.difference(&a),
                want: Set::new(),
            },
        ];
        for case in cases {
            assert_eq!(case.got, case.want, "{}", case.name);
        }
        assert!(a.difference(&a).is_empty());
    }

    #[test]
    fn path_strings() {
        let path = vec![
            field("spec"),
            field("containers"),
            key("name", json!("c")),
            field("image"),
        ];
        assert_eq!(path_string(&path), r#".spec.containers[name="c"].image"#);
    }
}
