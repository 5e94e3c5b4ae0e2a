//! What field management needs to know about a type: how each node holds its value
//! (struct or map, granular or atomic; list as a map by keys, a set, or atomic; scalar).
//!
//! Walkers take an `Option<S>`: `None` is upstream's deduced type, used where there is no
//! schema (an unknown kind, or below a node without one): objects are granular maps
//! without named fields and lists are atomic.

/// How a list's elements are told apart (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListShape {
    /// The list is one value.
    Atomic,
    /// Scalar elements, each its own value.
    Set,
    /// Object elements, told apart by the values of these key fields; a key field an element
    /// leaves out has its default value, when the schema declares one.
    Map(Vec<(String, Option<serde_json::Value>)>),
}

/// How a schema node holds its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A string, number, boolean or int-or-string.
    Scalar,
    /// A struct (named fields) or a map (`additionalProperties`); `atomic` for
    /// `x-kubernetes-map-type: atomic`.
    Map { atomic: bool },
    /// A list.
    List(ListShape),
    /// No type: deduced from the value.
    Deduced,
}

/// A node of a type's schema.
pub trait Schema: Copy {
    /// How this node holds its value.
    fn shape(self) -> Shape;
    /// The declared (named) field `name` of a struct.
    fn field(self, name: &str) -> Option<Self>;
    /// The schema of a map's values.
    fn values(self) -> Option<Self>;
    /// The schema of a list's elements.
    fn items(self) -> Option<Self>;
    /// Whether a struct keeps fields it does not declare
    /// (`x-kubernetes-preserve-unknown-fields`).
    fn keeps_unknown_fields(self) -> bool {
        false
    }
}

/// The type of a caller without any schema: use `None::<Untyped>`.
#[derive(Clone, Copy, Debug)]
pub enum Untyped {}

impl Schema for Untyped {
    fn shape(self) -> Shape {
        match self {}
    }
    fn field(self, _name: &str) -> Option<Self> {
        match self {}
    }
    fn values(self) -> Option<Self> {
        match self {}
    }
    fn items(self) -> Option<Self> {
        match self {}
    }
}

/// The schema of the entry `name` of a map or struct node.
pub(crate) fn child<S: Schema>(schema: Option<S>, name: &str) -> Option<S> {
    schema.and_then(|s| s.field(name).or_else(|| s.values()))
}

/// Whether `name` is a declared field of a struct node.
pub(crate) fn is_named<S: Schema>(schema: Option<S>, name: &str) -> bool {
    schema.is_some_and(|s| s.field(name).is_some())
}

/// The schema of a list node's elements.
pub(crate) fn items<S: Schema>(schema: Option<S>) -> Option<S> {
    schema.and_then(Schema::items)
}

/// A test schema: a tree of nodes built in tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{ListShape, Schema, Shape};

    /// One node of a test schema.
    #[derive(Debug)]
    pub enum Node {
        Scalar,
        Struct(Vec<(&'static str, Node)>, bool),
        Map(Box<Node>, bool),
        List(ListShape, Box<Node>),
        Deduced,
    }

    /// A struct with granular fields.
    pub fn object(fields: Vec<(&'static str, Node)>) -> Node {
        Node::Struct(fields, false)
    }

    /// A granular map of `values`.
    pub fn map(values: Node) -> Node {
        Node::Map(Box::new(values), false)
    }

    /// A list keyed by `keys`.
    pub fn list_map(keys: &[&str], item: Node) -> Node {
        let keys = keys.iter().map(|key| (key.to_string(), None)).collect();
        Node::List(ListShape::Map(keys), Box::new(item))
    }

    /// A set of scalars.
    pub fn set() -> Node {
        Node::List(ListShape::Set, Box::new(Node::Scalar))
    }

    /// An atomic list of `item`.
    pub fn atomic_list(item: Node) -> Node {
        Node::List(ListShape::Atomic, Box::new(item))
    }

    /// Leaks a schema for the test's duration.
    pub fn leak(node: Node) -> &'static Node {
        Box::leak(Box::new(node))
    }

    impl Schema for &Node {
        fn shape(self) -> Shape {
            match self {
                Node::Scalar => Shape::Scalar,
                Node::Struct(_, atomic) | Node::Map(_, atomic) => Shape::Map { atomic: *atomic },
                Node::List(shape, _) => Shape::List(shape.clone()),
                Node::Deduced => Shape::Deduced,
            }
        }

        fn field(self, name: &str) -> Option<Self> {
            match self {
                Node::Struct(fields, _) => fields
                    .iter()
                    .find(|(field, _)| *field == name)
                    .map(|(_, node)| node),
                _ => None,
            }
        }

        fn values(self) -> Option<Self> {
            match self {
                Node::Map(values, _) => Some(values),
                _ => None,
            }
        }

        fn items(self) -> Option<Self> {
            match self {
                Node::List(_, item) => Some(item),
                _ => None,
            }
        }
    }
}
