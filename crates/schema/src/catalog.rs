//! The catalog: OpenAPI schemas resolved into an arena of nodes, so that a walk over an
//! object follows properties, items and map values by index (recursive definitions such as
//! JSONSchemaProps cost nothing more), with the Kubernetes extensions read once.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Index of a node in a [`Catalog`]'s arena.
type NodeId = usize;

/// The JSON type a schema node accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    /// `type: object` (or properties without a type).
    Object,
    /// `type: array`.
    Array,
    /// `type: string`.
    String,
    /// `type: integer`.
    Integer,
    /// `type: number`.
    Number,
    /// `type: boolean`.
    Boolean,
    /// `x-kubernetes-int-or-string` or `format: int-or-string`: an integer or a string.
    IntOrString,
    /// No type: anything (also nodes that preserve unknown fields without a type).
    Unknown,
}

/// `x-kubernetes-list-type` with its `x-kubernetes-list-map-keys`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ListType {
    /// The list is one value (the default).
    #[default]
    Atomic,
    /// A set of scalars.
    Set,
    /// A map keyed by the values of these fields of the items.
    Map(Vec<String>),
}

/// `x-kubernetes-map-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MapType {
    /// Each key is a separate value (the default).
    #[default]
    Granular,
    /// The map is one value.
    Atomic,
}

/// Definitions whose Go types keep any JSON (runtime.RawExtension, apiextensions JSON,
/// managedFields' FieldsV1) although their schemas say only `type: object` or nothing.
const FREE_FORM_DEFINITIONS: &[&str] = &[
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
];

/// One resolved schema node. A node made from a `$ref` with sibling extensions keeps
/// those extensions and points at the referenced node for its shape.
#[derive(Debug, Default)]
struct Node {
    target: Option<NodeId>,
    ty: Option<NodeType>,
    format: Option<Box<str>>,
    properties: Vec<(Box<str>, NodeId)>,
    additional: Option<NodeId>,
    items: Option<NodeId>,
    list_type: Option<ListType>,
    map_type: Option<MapType>,
    patch_strategy: Option<Box<str>>,
    merge_key: Option<Box<str>>,
    preserve_unknown: Option<bool>,
    embedded: bool,
    /// `default`: the value a defaulted field has when absent (only list-map key fields
    /// carry one in the built-in catalog; server-side apply matches keys with it).
    default: Option<Value>,
    definition: Option<Box<str>>,
}

/// An arena of resolved schema nodes: the definitions of an OpenAPI document, or one
/// inline schema.
#[derive(Debug, Default)]
pub struct Catalog {
    nodes: Vec<Node>,
    by_name: HashMap<String, NodeId>,
    by_gvk: HashMap<(String, String, String), NodeId>,
    root: Option<NodeId>,
}

impl Catalog {
    /// A catalog of OpenAPI v2 style definitions (`$ref: #/definitions/<name>`; v3's
    /// `#/components/schemas/<name>` works too).
    pub fn from_definitions(defs: &Map<String, Value>) -> Catalog {
        let mut builder = Builder::default();
        for name in defs.keys() {
            let id = builder.nodes.len();
            builder.nodes.push(Node::default());
            builder.by_name.insert(name.clone(), id);
        }
        for (name, schema) in defs {
            let mut node = builder.node(schema);
            node.definition = Some(name.as_str().into());
            if FREE_FORM_DEFINITIONS.contains(&name.as_str()) {
                node.preserve_unknown = Some(true);
            }
            let id = builder.by_name[name];
            builder.nodes[id] = node;
        }
        let by_gvk = defs
            .iter()
            .flat_map(|(name, schema)| group_version_kinds(schema).map(move |gvk| (gvk, name)))
            .map(|(gvk, name)| (gvk, builder.by_name[name]))
            .collect();
        Catalog {
            nodes: builder.nodes,
            by_name: builder.by_name,
            by_gvk,
            root: None,
        }
    }

    /// A catalog of one inline schema (a CRD's `openAPIV3Schema`), whose root is that schema.
    pub fn from_schema(schema: &Value) -> Catalog {
        let mut builder = Builder::default();
        let root = builder.child(schema);
        Catalog {
            nodes: builder.nodes,
            root: Some(root),
            ..Catalog::default()
        }
    }

    /// The root of a catalog made by [`Catalog::from_schema`].
    pub fn root(&self) -> Option<SchemaRef<'_>> {
        self.root.map(|id| self.at(id))
    }

    /// The definition whose `x-kubernetes-group-version-kind` names this kind.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<SchemaRef<'_>> {
        let key = (group.to_string(), version.to_string(), kind.to_string());
        self.by_gvk.get(&key).map(|&id| self.at(id))
    }

    /// The definition of this name, e.g. `io.k8s.api.core.v1.Container`.
    pub fn definition(&self, name: &str) -> Option<SchemaRef<'_>> {
        self.by_name.get(name).map(|&id| self.at(id))
    }

    fn at(&self, id: NodeId) -> SchemaRef<'_> {
        SchemaRef { catalog: self, id }
    }
}

/// The `(group, version, kind)`s of a definition's `x-kubernetes-group-version-kind`.
pub fn group_version_kinds(schema: &Value) -> impl Iterator<Item = (String, String, String)> + '_ {
    schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|gvk| {
            let field = |name: &str| gvk.get(name).and_then(Value::as_str).unwrap_or_default();
            (
                field("group").to_string(),
                field("version").to_string(),
                field("kind").to_string(),
            )
        })
}

/// Builds nodes from JSON schemas, resolving references through `by_name`.
#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    by_name: HashMap<String, NodeId>,
}

impl Builder {
    /// The node of a nested schema: the referenced definition itself for a plain `$ref`,
    /// otherwise a new node.
    fn child(&mut self, schema: &Value) -> NodeId {
        if let Some(target) = self.reference(schema)
            && !has_extensions(schema)
        {
            return target;
        }
        let node = self.node(schema);
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The definition a schema refers to: `$ref`, or `allOf` with one `$ref` (v3 style).
    fn reference(&mut self, schema: &Value) -> Option<NodeId> {
        let reference = schema.get("$ref").or_else(|| {
            match schema.get("allOf").and_then(Value::as_array)?.as_slice() {
                [only] => only.get("$ref"),
                _ => None,
            }
        })?;
        let name = reference.as_str()?.rsplit('/').next()?;
        Some(match self.by_name.get(name) {
            Some(&id) => id,
            None => {
                self.nodes.push(Node::default());
                self.nodes.len() - 1
            }
        })
    }

    fn node(&mut self, schema: &Value) -> Node {
        let target = self.reference(schema);
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut props: Vec<(Box<str>, NodeId)> = properties
            .into_iter()
            .flatten()
            .map(|(name, prop)| (name.as_str().into(), self.child(prop)))
            .collect();
        props.sort_by(|a, b| a.0.cmp(&b.0));
        let additional = match schema.get("additionalProperties") {
            Some(inner @ Value::Object(_)) => Some(self.child(inner)),
            Some(Value::Bool(true)) => Some(self.child(&Value::Object(Map::new()))),
            _ => None,
        };
        let items = schema.get("items").map(|items| self.child(items));
        let text = |key: &str| schema.get(key).and_then(Value::as_str).map(Box::from);
        Node {
            target,
            ty: node_type(
                schema,
                target.is_some() || !props.is_empty(),
                items.is_some(),
            ),
            format: text("format"),
            properties: props,
            additional,
            items,
            list_type: list_type(schema),
            map_type: text("x-kubernetes-map-type").map(|t| match &*t {
                "atomic" => MapType::Atomic,
                _ => MapType::Granular,
            }),
            patch_strategy: text("x-kubernetes-patch-strategy"),
            merge_key: text("x-kubernetes-patch-merge-key"),
            preserve_unknown: schema
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool),
            embedded: schema
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            default: schema.get("default").cloned(),
            definition: None,
        }
    }
}

/// Whether a schema carries an `x-kubernetes-*` extension (a `$ref` with one is not the
/// plain referenced definition).
fn has_extensions(schema: &Value) -> bool {
    schema
        .as_object()
        .is_some_and(|o| o.keys().any(|k| k.starts_with("x-kubernetes-")))
}

/// The node type of a schema; `None` for a `$ref` without a type (its target decides).
fn node_type(schema: &Value, has_shape: bool, has_items: bool) -> Option<NodeType> {
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || schema.get("format").and_then(Value::as_str) == Some("int-or-string");
    if int_or_string {
        return Some(NodeType::IntOrString);
    }
    let ty = match schema.get("type").and_then(Value::as_str) {
        Some("object") => NodeType::Object,
        Some("array") => NodeType::Array,
        Some("string") => NodeType::String,
        Some("integer") => NodeType::Integer,
        Some("number") => NodeType::Number,
        Some("boolean") => NodeType::Boolean,
        _ if schema.get("$ref").is_some() || schema.get("allOf").is_some() => return None,
        _ if has_shape || schema.get("additionalProperties").is_some() => NodeType::Object,
        _ if has_items => NodeType::Array,
        _ => NodeType::Unknown,
    };
    Some(ty)
}

fn list_type(schema: &Value) -> Option<ListType> {
    let keys = || {
        schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    match schema.get("x-kubernetes-list-type")?.as_str()? {
        "set" => Some(ListType::Set),
        "map" => Some(ListType::Map(keys())),
        _ => Some(ListType::Atomic),
    }
}

/// A node of a [`Catalog`]: cheap to copy, borrowed from the catalog.
#[derive(Clone, Copy)]
pub struct SchemaRef<'a> {
    catalog: &'a Catalog,
    id: NodeId,
}

impl std::fmt::Debug for SchemaRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaRef")
            .field("id", &self.id)
            .field("definition", &self.definition_name())
            .field("type", &self.node_type())
            .finish()
    }
}

/// How many `$ref`s a node may go through to reach its shape (guards reference cycles).
const MAX_REFERENCES: usize = 16;

impl<'a> SchemaRef<'a> {
    fn own(&self) -> &'a Node {
        &self.catalog.nodes[self.id]
    }

    /// The node that gives this one its shape: itself, or what its `$ref` leads to.
    fn shape(&self) -> &'a Node {
        let mut node = self.own();
        for _ in 0..MAX_REFERENCES {
            match node.target {
                Some(target) if node.ty.is_none() => node = &self.catalog.nodes[target],
                _ => break,
            }
        }
        node
    }

    /// The value of an extension: this node's own, or else its referenced definition's.
    fn either<T>(&self, get: impl Fn(&'a Node) -> Option<T>) -> Option<T> {
        get(self.own()).or_else(|| get(self.shape()))
    }

    /// The JSON type this node accepts.
    pub fn node_type(&self) -> NodeType {
        self.shape().ty.unwrap_or(NodeType::Unknown)
    }

    /// The `format` (`int32`, `int64`, `date-time`, `byte`, ...).
    pub fn format(&self) -> Option<&'a str> {
        self.either(|n| n.format.as_deref())
    }

    /// The schema of the property `name`.
    pub fn property(&self, name: &str) -> Option<SchemaRef<'a>> {
        let props = &self.shape().properties;
        props
            .binary_search_by(|(p, _)| (**p).cmp(name))
            .ok()
            .map(|i| self.catalog.at(props[i].1))
    }

    /// The properties, by name.
    pub fn properties(&self) -> impl Iterator<Item = (&'a str, SchemaRef<'a>)> + use<'a> {
        let catalog = self.catalog;
        self.shape()
            .properties
            .iter()
            .map(move |(name, id)| (&**name, catalog.at(*id)))
    }

    /// The schema of the values of a map (`additionalProperties`).
    pub fn additional_properties(&self) -> Option<SchemaRef<'a>> {
        self.shape().additional.map(|id| self.catalog.at(id))
    }

    /// The schema of the items of an array.
    pub fn items(&self) -> Option<SchemaRef<'a>> {
        self.shape().items.map(|id| self.catalog.at(id))
    }

    /// `x-kubernetes-list-type` (with the map keys); atomic when absent.
    pub fn list_type(&self) -> ListType {
        self.either(|n| n.list_type.clone()).unwrap_or_default()
    }

    /// `x-kubernetes-map-type`; granular when absent.
    pub fn map_type(&self) -> MapType {
        self.either(|n| n.map_type).unwrap_or_default()
    }

    /// `x-kubernetes-patch-strategy`: `merge`, `retainKeys`, `merge,retainKeys` or `replace`.
    pub fn patch_strategy(&self) -> Option<&'a str> {
        self.either(|n| n.patch_strategy.as_deref())
    }

    /// `x-kubernetes-patch-merge-key`.
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.either(|n| n.merge_key.as_deref())
    }

    /// `x-kubernetes-preserve-unknown-fields` (also true for the definitions whose Go
    /// types keep any JSON, such as RawExtension).
    pub fn preserves_unknown_fields(&self) -> bool {
        self.either(|n| n.preserve_unknown).unwrap_or(false)
    }

    /// The schema's `default`, if it declares one.
    pub fn default_value(&self) -> Option<&'a Value> {
        self.either(|n| n.default.as_ref())
    }

    /// `x-kubernetes-embedded-resource`.
    pub fn embedded_resource(&self) -> bool {
        self.own().embedded || self.shape().embedded
    }

    /// The name of the definition this node is (or refers to), e.g.
    /// `io.k8s.api.core.v1.Container`.
    pub fn definition_name(&self) -> Option<&'a str> {
        self.either(|n| n.definition.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defs() -> Map<String, Value> {
        json!({
            "a.Spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "format": "int32"},
                    "containers": {
                        "type": "array",
                        "items": {"$ref": "#/definitions/a.Container"},
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "x-kubernetes-patch-strategy": "merge",
                        "x-kubernetes-patch-merge-key": "name"
                    },
                    "selector": {
                        "$ref": "#/definitions/a.Selector",
                        "x-kubernetes-patch-strategy": "replace"
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "port": {"$ref": "#/definitions/a.IntOrString"},
                    "props": {"$ref": "#/definitions/a.Props"}
                }
            },
            "a.Container": {"type": "object", "properties": {"name": {"type": "string"}}},
            "a.Selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                           "properties": {"x": {"type": "string"}}},
            "a.IntOrString": {"type": "string", "format": "int-or-string"},
            "a.Props": {"type": "object", "properties": {
                "not": {"$ref": "#/definitions/a.Props"},
                "items": {"type": "array", "items": {"$ref": "#/definitions/a.Props"}}
            }},
            "a.Thing": {"type": "object", "x-kubernetes-group-version-kind": [
                {"group": "g", "version": "v1", "kind": "Thing"},
                {"group": "", "version": "v1", "kind": "Thing"}
            ]}
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn resolves_references_and_extensions() {
        let catalog = Catalog::from_definitions(&defs());
        let spec = catalog.definition("a.Spec").unwrap();
        assert_eq!(spec.node_type(), NodeType::Object);
        assert_eq!(spec.definition_name(), Some("a.Spec"));
        let replicas = spec.property("replicas").unwrap();
        assert_eq!(
            (replicas.node_type(), replicas.format()),
            (NodeType::Integer, Some("int32"))
        );
        let containers = spec.property("containers").unwrap();
        assert_eq!(containers.list_type(), ListType::Map(vec!["name".into()]));
        assert_eq!(containers.patch_strategy(), Some("merge"));
        assert_eq!(containers.patch_merge_key(), Some("name"));
        let item = containers.items().unwrap();
        assert_eq!(item.definition_name(), Some("a.Container"));
        assert_eq!(item.property("name").unwrap().node_type(), NodeType::String);
        let selector = spec.property("selector").unwrap();
        assert_eq!(selector.patch_strategy(), Some("replace"));
        assert_eq!(selector.map_type(), MapType::Atomic);
        assert_eq!(selector.node_type(), NodeType::Object);
        assert_eq!(selector.definition_name(), Some("a.Selector"));
        assert!(selector.property("x").is_some());
        let labels = spec.property("labels").unwrap();
        assert_eq!(labels.map_type(), MapType::Granular);
        assert_eq!(
            labels.additional_properties().unwrap().node_type(),
            NodeType::String
        );
        assert_eq!(
            spec.property("port").unwrap().node_type(),
            NodeType::IntOrString
        );
        assert!(spec.property("missing").is_none());
        let names: Vec<_> = spec.properties().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "containers",
                "labels",
                "port",
                "props",
                "replicas",
                "selector"
            ]
        );
    }

    #[test]
    fn recursive_definitions_resolve() {
        let catalog = Catalog::from_definitions(&defs());
        let props = catalog.definition("a.Props").unwrap();
        let deep = props
            .property("not")
            .and_then(|p| p.property("items"))
            .and_then(|p| p.items())
            .and_then(|p| p.property("not"))
            .unwrap();
        assert_eq!(deep.definition_name(), Some("a.Props"));
    }

    #[test]
    fn kinds_by_group_version_kind() {
        let catalog = Catalog::from_definitions(&defs());
        for group in ["g", ""] {
            let thing = catalog.kind(group, "v1", "Thing").unwrap();
            assert_eq!(thing.definition_name(), Some("a.Thing"));
        }
        assert!(catalog.kind("g", "v2", "Thing").is_none());
    }

    #[test]
    fn inline_schema_and_defaults() {
        let catalog = Catalog::from_schema(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "list": {"type": "array", "items": {"type": "string"},
                         "x-kubernetes-list-type": "set"},
                "plain": {"type": "array", "items": {"type": "string"}},
                "free": {},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true}
            }
        }));
        let root = catalog.root().unwrap();
        assert!(root.definition_name().is_none());
        assert!(root.property("spec").unwrap().preserves_unknown_fields());
        assert!(!root.preserves_unknown_fields());
        assert_eq!(
            root.property("port").unwrap().node_type(),
            NodeType::IntOrString
        );
        assert_eq!(root.property("list").unwrap().list_type(), ListType::Set);
        assert_eq!(
            root.property("plain").unwrap().list_type(),
            ListType::Atomic
        );
        assert_eq!(
            root.property("free").unwrap().node_type(),
            NodeType::Unknown
        );
        assert!(root.property("embedded").unwrap().embedded_resource());
    }

    #[test]
    fn free_form_definitions_preserve_unknown_fields() {
        let catalog = Catalog::from_definitions(
            json!({"io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object"}})
                .as_object()
                .unwrap(),
        );
        let raw = catalog
            .definition("io.k8s.apimachinery.pkg.runtime.RawExtension")
            .unwrap();
        assert!(raw.preserves_unknown_fields());
    }
}
