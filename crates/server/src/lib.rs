//! kapi's generic API server (k8s.io/apiserver's counterpart): TLS serving over HTTP/2 and
//! HTTP/1.1, the handler chain as tower layers, authentication and authorization, health
//! checks, post-start hooks, `/version`, `/metrics`, and the REST core.
//!
//! A request flows through [`filters`] in kube-apiserver's order, then to the non-resource
//! endpoints served here, then to the [`Route`] given to [`GenericApiServer::new`]. Requests
//! reaching the route carry as extensions: the resolved
//! [`RequestInfo`](kapi_apimachinery::request_info::RequestInfo), the [`UserInfo`], the
//! [`AuditId`], [`RequestReceived`], the [`RequestDeadline`] (non-long-running requests only)
//! and the [`ConnectionInfo`].

pub mod admission;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod body;
pub mod cacher;
pub mod cel_fields;
mod codec;
pub mod config;
pub mod endpoints;
pub mod filters;
pub mod healthz;
pub mod informer;
pub mod loopback;
pub mod metrics;
mod nonresource;
pub mod object;
pub mod query;
pub mod registry;
pub mod resource;
pub mod responses;
pub mod server;
pub mod serving;
pub mod storage_codec;
mod systemd;
mod type_meta;
pub mod version;
pub mod webhook_client;
pub mod write_steps;

/// The Kubernetes API machinery and the schema machinery a server built on this crate
/// names its types with.
pub use kapi_apimachinery as apimachinery;
pub use kapi_encryption as encryption;
pub use kapi_schema as schema;

pub use authn::{Authentication, Authenticator, UserInfo};
pub use authz::{Attributes, Authorizer, Decision};
pub use body::{Body, BoxError};
pub use config::ServerConfig;
pub use endpoints::ApiHandler;
pub use filters::request_log::{AuditId, RequestReceived};
pub use filters::timeout::RequestDeadline;
pub use healthz::{HealthCheck, HealthChecks};
pub use server::{
    GenericApiServer, ListeningServer, NonResourceHandler, PostStartHookContext, PostStartHooks,
    Route, ServerError, not_found_route,
};
pub use serving::{ConnectionInfo, TlsConfig};
pub mod discovery;
pub mod openapi;
pub mod proxy;
