//! Server-side apply and `metadata.managedFields`, as kube-apiserver's field manager
//! (k8s.io/apimachinery pkg/util/managedfields) over structured-merge-diff.
//!
//! - [`fieldpath`]: field paths and sets, and their FieldsV1 form;
//! - [`typed`]: schema-driven field sets, comparison, merge and removal of objects;
//! - [`managed`]: reading and writing `metadata.managedFields`;
//! - [`FieldManager`]: what the REST handlers call: [`FieldManager::update`] on every
//!   create, update and non-apply patch, [`FieldManager::apply`] for
//!   `application/apply-patch+yaml` patches (with kubectl's move from client-side apply:
//!   the last-applied annotation).
//!
//! Types are described by the [`Schema`] trait (struct or map, list types, map types),
//! implemented for `kapi-schema`'s nodes (from the catalog of a server's schemas);
//! without a schema, objects are granular maps and lists atomic, as upstream's deduced
//! type. Objects are compared and merged in the version of the request; managers whose
//! entries are in another version are compared in that same form.

mod catalog;
pub mod fieldpath;
mod lastapplied;
pub mod managed;
mod manager;
pub mod schema;
pub mod typed;

pub use fieldpath::{FieldsError, Path, PathElement, Set};
pub use lastapplied::LAST_APPLIED_ANNOTATION;
pub use managed::{Manager, Operation};
pub use manager::{
    ANCIENT_CHANGES, ApplyError, BEFORE_FIRST_APPLY, Conflict, FIELD_MANAGER_MAX_LENGTH,
    FieldManager, MAX_UPDATE_MANAGERS, manager_or_user_agent,
};
pub use schema::{ListShape, Schema, Shape, Untyped};
