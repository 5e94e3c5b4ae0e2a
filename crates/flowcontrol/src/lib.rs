//! API Priority and Fairness as kube-apiserver 1.35 has it (k8s.io/apiserver
//! `pkg/apis/flowcontrol/bootstrap`, kubernetes `pkg/registry/flowcontrol/ensurer`): the
//! bootstrap configuration — the mandatory `exempt` and `catch-all` FlowSchemas and
//! PriorityLevelConfigurations and the suggested ones — and the configuration producer
//! that creates them, keeps them as the bootstrap says while their
//! `apf.kubernetes.io/autoupdate-spec` annotation is true, and removes auto-managed objects
//! the bootstrap no longer has; the `Dangling` condition of FlowSchemas, which says
//! whether the priority level each names exists; and the classification of requests by the
//! FlowSchemas (the server's `X-Kubernetes-PF-*` headers). Queuing by priority level is
//! not built yet.

pub mod bootstrap;
mod classify;
mod dangling;
mod ensurer;

pub use classify::{Classification, Classifier, Digest};
pub use dangling::{CONFIG_CONSUMER, mark_dangling};
pub use ensurer::{CONFIG_PRODUCER, FlowControlResources, ensure, run_config_producer};
