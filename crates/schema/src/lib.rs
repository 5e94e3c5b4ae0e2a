//! The schemas of kapi's API: a [`Catalog`] of resolved OpenAPI schema nodes with the
//! Kubernetes extensions (`x-kubernetes-list-type`, patch strategies and merge keys,
//! group-version-kinds, ...), for the built-in types of Kubernetes 1.35
//! ([`Catalog::builtin`]) and for inline schemas such as a CRD's.
//!
//! What the schemas drive: decoding a request body as kube-apiserver's typed decoding does
//! (unknown and duplicate fields, type errors), strategic merge patch metadata and the
//! OpenAPI documents.

mod builtin;
mod catalog;
pub mod decode;
mod kind;

pub use catalog::{Catalog, ListType, MapType, NodeType, SchemaRef};
pub use decode::{
    StrictError, StrictKind, TypeError, decode, duplicate_fields, duplicate_fields_untyped,
    strict_message,
};
pub use kind::{KindSchema, Pruner};
