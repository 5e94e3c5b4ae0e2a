//! kapi's apiextensions server (k8s.io/apiextensions-apiserver's counterpart): the
//! CustomResourceDefinition resource, the controllers that bring CRDs to life, and the
//! custom resources they define, served by the generic REST handlers.
//!
//! - [`schema`]: structural schemas: the structural check, pruning, defaulting and OpenAPI
//!   validation of custom resources (with ratcheting).
//! - [`cel`]: `x-kubernetes-validations` rules.
//! - [`crd`]: the CustomResourceDefinition type itself: defaulting, validation, strategy.

mod admission;
pub mod cel;
mod controller;
pub mod conversion;
pub mod crd;
mod customresource;
pub mod jsonpath;
mod printer;
pub mod schema;
mod schemas;
mod server;
mod status;

pub use conversion::ServiceResolver;
pub use schemas::CrdSchemas;
pub use server::ApiExtensionsServer;
