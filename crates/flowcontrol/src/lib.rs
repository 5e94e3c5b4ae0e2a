//! API Priority and Fairness as kube-apiserver 1.35 has it (k8s.io/apiserver
//! `pkg/util/flowcontrol`, kubernetes `pkg/registry/flowcontrol/ensurer`): the configuration
//! producer that creates the bootstrap FlowSchemas and PriorityLevelConfigurations
//! (kapi-builtin's `flowcontrol_bootstrap`), keeps them as the bootstrap says while their
//! `apf.kubernetes.io/autoupdate-spec` annotation is true, and removes auto-managed objects
//! the bootstrap no longer has; the `Dangling` condition of FlowSchemas; the classification
//! of requests by the FlowSchemas; and the flow controller that admits them: each priority
//! level's share of the server's concurrency, lent and borrowed by demand, its requests'
//! seats estimated, queued fairly and refused with a 429 when they cannot queue; its debug
//! tables and metrics.

mod classify;
mod controller;
mod dangling;
mod dump;
mod ensurer;
mod estimate;
mod limits;
mod metrics;
mod queueset;
mod retry;
mod timing;
mod watches;

use kapi_builtin::flowcontrol_bootstrap as bootstrap;

pub use classify::{Classification, Digest};
pub use controller::{FlowController, StatsFn};
pub use dangling::{CONFIG_CONSUMER, mark_dangling};
pub use ensurer::{CONFIG_PRODUCER, FlowControlResources, ensure, run_config_producer};
pub use metrics::FlowMetrics;
