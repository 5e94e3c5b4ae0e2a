//! The workload kinds: core/v1 Pods, PodTemplates and ReplicationControllers, apps/v1
//! Deployments, ReplicaSets, StatefulSets, DaemonSets and ControllerRevisions, batch/v1
//! Jobs and CronJobs. Each gets upstream's defaulting (including the pod template defaults
//! inside every template), its strategy's status and generation handling, validation with
//! upstream's messages and field paths, its printer columns and its field selectors.

mod apps;
mod batch;
mod cron;
mod defaults;
mod pod;
mod podspec;
pub(crate) mod qos;
mod security;
mod tables;

use std::sync::Arc;

use serde_json::Value;

pub(crate) use apps::{TEMPLATE_GENERATION_ANNOTATION, set_template_generation};

use crate::kinds::KindStrategies;
use crate::util::int_of;

/// The strategies of the kinds this module owns.
pub(crate) fn strategies(group: &str, kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn kapi_server::resource::Strategy>, _) = match (group, kind) {
        ("", "Pod") => (Arc::new(pod::PodStrategy), tables::pods()),
        ("", "PodTemplate") => (Arc::new(pod::PodTemplateStrategy), tables::pod_templates()),
        ("", "ReplicationController") => (
            Arc::new(apps::ReplicationControllerStrategy),
            tables::replication_controllers(),
        ),
        ("apps", "Deployment") => (Arc::new(apps::DeploymentStrategy), tables::deployments()),
        ("apps", "ReplicaSet") => (Arc::new(apps::ReplicaSetStrategy), tables::replica_sets()),
        ("apps", "StatefulSet") => (Arc::new(apps::StatefulSetStrategy), tables::stateful_sets()),
        ("apps", "DaemonSet") => (Arc::new(apps::DaemonSetStrategy), tables::daemon_sets()),
        ("apps", "ControllerRevision") => (
            Arc::new(apps::ControllerRevisionStrategy),
            tables::controller_revisions(),
        ),
        ("batch", "Job") => (Arc::new(batch::JobStrategy), tables::jobs()),
        ("batch", "CronJob") => (Arc::new(batch::CronJobStrategy), tables::cron_jobs()),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// The `status.replicas` field selector of ReplicaSets and ReplicationControllers.
fn selectable_replicas(object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
    vec![(
        "status.replicas".into(),
        int_of(&object["status"], "replicas").to_string(),
    )]
}

#[cfg(test)]
mod tests;
