//! Rendering stored objects in the representation a client negotiated: JSON (fast path: the
//! stored bytes with the resourceVersion spliced in, see [`crate::codec`]), YAML,
//! meta.k8s.io Table, and PartialObjectMetadata.

use kapi_apimachinery::status::ApiError;
use kapi_protobuf::MessageEncoding;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

use super::negotiation::Output;
use crate::codec;
use crate::registry::{Item, ListResult};
use crate::resource::{PrinterColumn, ResourceDefinition};

/// Which object a Table row carries (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> Result<IncludeObject, ApiError> {
        match value {
            None | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

/// Renders objects of one resource as one negotiated output.
pub struct Renderer<'a> {
    pub definition: &'a ResourceDefinition,
    pub output: Output,
    pub include_object: IncludeObject,
}

impl Renderer<'_> {
    /// One object.
    pub fn object(&self, item: &Item) -> Result<Vec<u8>, ApiError> {
        if self.output == Output::Json && self.definition.converter.is_none() {
            let mut out = Vec::with_capacity(item.stored.len() + 32);
            codec::write_with_revision(&item.stored, item.revision, &mut out);
            return Ok(out);
        }
        if self.output == Output::Protobuf && self.definition.converter.is_none() {
            return self.protobuf_object(item);
        }
        let object = self.served(item)?;
        self.value(object)
    }

    /// One stored object in protobuf, straight from its JSON text (without a tree), or from
    /// the message the watch cache kept for it; a message made here is offered to the cache
    /// (every watcher of an event and every later LIST then share it).
    fn protobuf_object(&self, item: &Item) -> Result<Vec<u8>, ApiError> {
        let api_version = self.definition.group_version.api_version();
        let encoding = MessageEncoding::new(&api_version, &self.definition.kind)
            .map_err(ApiError::internal)?;
        let memo = item.cached.as_ref().map(|cached| &cached.encodings);
        let mut out = Vec::with_capacity(item.stored.len());
        if let Some(message) = memo.and_then(|memo| memo.bytes(encoding.id())) {
            encoding.body(&message, &mut out);
            return Ok(out);
        }
        let mut json = Vec::with_capacity(item.stored.len() + 32);
        codec::write_with_revision(&item.stored, item.revision, &mut json);
        let mut message = Vec::with_capacity(json.len());
        encoding
            .message_json(&json, &mut message)
            .map_err(ApiError::internal)?;
        if let Some(memo) = memo {
            memo.keep(encoding.id(), &message);
        }
        encoding.body(&message, &mut out);
        Ok(out)
    }

    /// One object already decoded into its served form.
    pub fn value(&self, object: Value) -> Result<Vec<u8>, ApiError> {
        let document = match self.output {
            Output::Json | Output::Yaml | Output::Protobuf => object,
            Output::Table { v1beta1 } => {
                let revision = object["metadata"]["resourceVersion"].clone();
                let rows = vec![self.row(&object)];
                self.table(v1beta1, json!({ "resourceVersion": revision }), rows)
            }
            Output::PartialMetadata { v1beta1, .. } => partial_metadata(&object, v1beta1),
        };
        encode(self.output, &document)
    }

    /// The objects of a list page in the served version, converted together.
    pub(super) fn served_items(&self, list: &ListResult) -> Result<Vec<Value>, ApiError> {
        let stored = list
            .items
            .iter()
            .map(Item::decode)
            .collect::<Result<Vec<_>, _>>()?;
        self.definition.served_forms(stored)
    }

    /// The object of `item` in the served version, with its resourceVersion.
    pub fn served(&self, item: &Item) -> Result<Value, ApiError> {
        self.definition.served_form(item.decode()?)
    }

    /// A Table row for one served object.
    pub(super) fn row(&self, object: &Value) -> Value {
        let cells = match &self.definition.table {
            Some(table) => (table.cells)(object),
            None => vec![
                Value::from(object["metadata"]["name"].as_str().unwrap_or_default()),
                object["metadata"]["creationTimestamp"].clone(),
            ],
        };
        let mut row = Map::new();
        row.insert("cells".into(), Value::Array(cells));
        match self.include_object {
            IncludeObject::None => {}
            IncludeObject::Metadata => {
                let v1beta1 = matches!(self.output, Output::Table { v1beta1: true });
                row.insert("object".into(), partial_metadata(object, v1beta1));
            }
            IncludeObject::Object => {
                row.insert("object".into(), object.clone());
            }
        }
        Value::Object(row)
    }

    /// A Table document with `rows`.
    pub fn table(&self, v1beta1: bool, meta: Value, rows: Vec<Value>) -> Value {
        json!({
            "kind": "Table",
            "apiVersion": meta_api_version(v1beta1),
            "metadata": meta,
            "columnDefinitions": self.columns(),
            "rows": rows,
        })
    }

    pub(super) fn columns(&self) -> Vec<Value> {
        match &self.definition.table {
            Some(table) => table.columns.iter().map(column_definition).collect(),
            None => DEFAULT_COLUMNS.iter().map(column_definition).collect(),
        }
    }
}

/// The columns of a resource without printer columns, as upstream's default table convertor.
const DEFAULT_COLUMNS: [PrinterColumn; 2] = [
    PrinterColumn {
        name: Cow::Borrowed("Name"),
        type_: Cow::Borrowed("string"),
        format: Cow::Borrowed("name"),
        description: Cow::Borrowed(NAME_DESCRIPTION),
        priority: 0,
    },
    PrinterColumn {
        name: Cow::Borrowed("Created At"),
        type_: Cow::Borrowed("date"),
        format: Cow::Borrowed(""),
        description: Cow::Borrowed(CREATED_AT_DESCRIPTION),
        priority: 0,
    },
];

/// ObjectMeta's documentation of `name`, which upstream uses to describe the Name column.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

pub(super) const CREATED_AT_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn column_definition(column: &PrinterColumn) -> Value {
    json!({
        "name": column.name,
        "type": column.type_,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    })
}

pub(super) fn meta_api_version(v1beta1: bool) -> &'static str {
    if v1beta1 {
        "meta.k8s.io/v1beta1"
    } else {
        "meta.k8s.io/v1"
    }
}

/// The PartialObjectMetadata of `object`.
pub fn partial_metadata(object: &Value, v1beta1: bool) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": meta_api_version(v1beta1),
        "metadata": object["metadata"].clone(),
    })
}

/// The ListMeta of a list page.
pub(super) fn list_meta(list: &ListResult) -> Value {
    let mut meta = Map::new();
    meta.insert(
        "resourceVersion".into(),
        Value::from(list.revision.to_string()),
    );
    if let Some(token) = &list.continue_token {
        meta.insert("continue".into(), Value::from(token.clone()));
    }
    if let Some(remaining) = list.remaining {
        meta.insert("remainingItemCount".into(), Value::from(remaining));
    }
    Value::Object(meta)
}

/// Encodes a document as the output's media type.
pub fn encode(output: Output, document: &Value) -> Result<Vec<u8>, ApiError> {
    match output {
        Output::Yaml => Ok(kapi_apimachinery::goyaml::to_string(document).into_bytes()),
        _ if output.is_protobuf() => protobuf(document),
        _ => {
            let mut out = Vec::new();
            codec::write_json(&mut out, document);
            Ok(out)
        }
    }
}

/// A document (which names its apiVersion and kind) as a Kubernetes protobuf body.
pub fn protobuf(document: &Value) -> Result<Vec<u8>, ApiError> {
    let field = |name: &str| document[name].as_str().unwrap_or_default();
    kapi_protobuf::encode(field("apiVersion"), field("kind"), document).map_err(ApiError::internal)
}
