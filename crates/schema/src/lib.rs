//! Schemas as kapi's servers use them: a [`Catalog`] of resolved OpenAPI schema nodes with
//! the Kubernetes extensions (`x-kubernetes-list-type`, patch strategies and merge keys,
//! group-version-kinds, ...), made from any API's definitions (kapi-api holds the built-in
//! ones) or from an inline schema such as a CRD's.
//!
//! What the schemas drive: decoding a request body as kube-apiserver's typed decoding does
//! (unknown and duplicate fields, type errors), strategic merge patch metadata and the
//! OpenAPI documents.

mod catalog;
pub mod decode;
mod kind;

pub use catalog::{Catalog, ListType, MapType, NodeType, SchemaRef, group_version_kinds};
pub use decode::{
    StrictError, StrictKind, TypeError, decode, duplicate_fields, duplicate_fields_untyped,
    strict_message,
};
pub use kind::{KindSchema, Pruner};
