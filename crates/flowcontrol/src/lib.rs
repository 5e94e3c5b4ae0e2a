//! API Priority and Fairness as kube-apiserver 1.35 has it (k8s.io/apiserver
//! `pkg/apis/flowcontrol/bootstrap`, kubernetes `pkg/registry/flowcontrol/ensurer`): the
//! bootstrap configuration — the mandatory `exempt` and `catch-all` FlowSchemas and
//! PriorityLevelConfigurations and the suggested ones — and the configuration producer
//! that creates them, keeps them as the bootstrap says while their
//! `apf.kubernetes.io/autoupdate-spec` annotation is true, and removes auto-managed objects
//! the bootstrap no longer has.

pub mod bootstrap;
mod ensurer;

pub use ensurer::{CONFIG_PRODUCER, FlowControlResources, ensure, run_config_producer};
