//! kapi's generic admission plugins, as k8s.io/apiserver's admission/plugin packages: the
//! admission webhooks (MutatingAdmissionWebhook and ValidatingAdmissionWebhook, driven by
//! Mutating/ValidatingWebhookConfigurations) and ValidatingAdmissionPolicy. They implement
//! kapi-server's `AdmissionPlugin` and read their configuration objects from the server's watch
//! caches.

mod authz;
mod cel;
mod matching;
mod parsed;
pub mod policy;
pub mod typecheck;
pub mod webhook;
