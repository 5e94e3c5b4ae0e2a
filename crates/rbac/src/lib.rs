//! Role-based access control as kube-apiserver does it (plugin/pkg/auth/authorizer/rbac and
//! pkg/registry/rbac): the RBAC authorizer over the watch caches of roles and bindings, the
//! escalation checks on role and binding writes, the bootstrap policy reconciled at start, and
//! the controller that keeps aggregated ClusterRoles' rules current; and the Node authorizer
//! (plugin/pkg/auth/authorizer/node), which gives kubelets the reach of their node's pods.

mod authorizer;
mod bootstrap;
mod controller_policy;
mod escalation;
mod node;
mod policy;
mod resolver;
mod rules;

pub use authorizer::RbacAuthorizer;
pub use bootstrap::{RbacResources, start as start_bootstrap_policy};
pub use escalation::EscalationCheck;
pub use node::{NodeAuthorizer, NodeResources};
pub use resolver::RuleResolver;
