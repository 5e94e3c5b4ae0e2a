//! The `Available` condition of APIServices naming a Service, as upstream's remote
//! availability controller keeps it (kube-aggregator/pkg/controllers/status/remote): the
//! Service must exist; a ClusterIP Service must have the port and ready endpoints for it;
//! and the backend must answer its group version's discovery (`/apis/<group>/<version>`) as
//! `system:kube-aggregator` of `system:masters`, within 5 s, on one of five tries. Each
//! APIService is checked when it, a Service, an EndpointSlice or an Endpoints changes, every
//! [`RESYNC`], and after a failure again with backoff (5 ms doubling to 30 s). The
//! `aggregator_unavailable_apiservice` metrics follow every check.
//!
//! kapi runs no EndpointSlice mirroring yet, so a Service without EndpointSlices is judged by
//! its Endpoints, as the proxy routes by them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kapi_server::endpoints::Served;
use kapi_server::informer;
use kapi_server::proxy::ProxyError;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::available::{Condition, with_condition, write_status};
use crate::backends::Backends;
use crate::metrics::AvailabilityMetrics;
use crate::resolver::{ServiceResolver, service_port_name};

/// How often every APIService is checked again without a change (upstream's resync).
const RESYNC: Duration = Duration::from_secs(30);
/// The first retry's delay after a failure, and the longest.
const BACKOFF_FIRST: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Tries of the discovery check, made at once; one success suffices.
const ATTEMPTS: usize = 5;
/// How long one try may take.
const TRY_TIMEOUT: Duration = Duration::from_secs(5);

/// The controller.
pub(crate) struct RemoteAvailability {
    pub api_services: Served,
    pub resolver: ServiceResolver,
    pub backends: Arc<Backends>,
    pub metrics: AvailabilityMetrics,
}

/// When an APIService is next checked, and how many checks in a row failed.
#[derive(Clone, Copy)]
struct Schedule {
    due: Instant,
    failures: u32,
}

impl RemoteAvailability {
    /// Runs until `stopping`.
    pub(crate) fn start(self, stopping: CancellationToken) {
        let changed = Arc::new(Notify::new());
        let followed = [
            self.api_services.clone(),
            self.resolver.services.clone(),
            self.resolver.endpoint_slices.clone(),
            self.resolver.endpoints.clone(),
        ];
        informer::notify_on_changes(followed, &changed, &stopping);
        tokio::spawn(async move {
            let mut schedules: HashMap<String, Schedule> = HashMap::new();
            loop {
                let next = schedules.values().map(|s| s.due).min();
                let wake = next.unwrap_or_else(|| Instant::now() + RESYNC);
                let all = tokio::select! {
                    _ = stopping.cancelled() => return,
                    _ = changed.notified() => true,
                    _ = tokio::time::sleep_until(wake) => false,
                };
                self.pass(&mut schedules, all).await;
            }
        });
    }

    /// Checks the remote APIServices that are due (all of them after a change), then
    /// schedules each one's next check.
    async fn pass(&self, schedules: &mut HashMap<String, Schedule>, all: bool) {
        let now = Instant::now();
        let items = self.api_services.cached_list(None);
        let remote: Vec<&Value> = items
            .iter()
            .filter(|item| item["spec"]["service"].is_object())
            .collect();
        let names: Vec<String> = remote.iter().map(|i| name(i).to_string()).collect();
        schedules.retain(|name, _| names.contains(name));
        self.metrics.forget_all_but(&names);
        let due: Vec<&Value> = remote
            .into_iter()
            .filter(|item| all || schedules.get(name(item)).is_none_or(|s| s.due <= now))
            .collect();
        let checks = due.iter().map(|item| self.sync(item));
        let results = futures::future::join_all(checks).await;
        for (item, ok) in due.into_iter().zip(results) {
            let previous = schedules.get(name(item)).map_or(0, |s| s.failures);
            let schedule = match ok {
                true => Schedule {
                    due: now + RESYNC,
                    failures: 0,
                },
                false => Schedule {
                    due: now + backoff(previous + 1),
                    failures: previous + 1,
                },
            };
            schedules.insert(name(item).to_string(), schedule);
        }
    }

    /// Checks one APIService and writes its condition if it changed; whether it passed.
    async fn sync(&self, item: &Value) -> bool {
        let condition = self.check(item).await;
        let passed = condition.available();
        self.metrics.observe(name(item), &condition);
        if let Some(status) = with_condition(&item["status"], &condition)
            && let Err(err) = write_status(&self.api_services, name(item), status).await
        {
            tracing::debug!("updating APIService {} status: {err}", name(item));
            return false;
        }
        passed
    }

    /// The `Available` condition of the APIService `item`, as upstream's checks find it.
    async fn check(&self, item: &Value) -> Condition {
        let reference = &item["spec"]["service"];
        let namespace = reference["namespace"].as_str().unwrap_or_default();
        let service_name = reference["name"].as_str().unwrap_or_default();
        let port = reference["port"].as_i64().unwrap_or(443) as i32;
        let unavailable = |reason, message| Condition {
            status: "False",
            reason,
            message,
        };
        let Some(service) = self.resolver.services.cached(namespace, service_name) else {
            return unavailable(
                "ServiceNotFound",
                format!("service/{service_name} in {namespace:?} is not present"),
            );
        };
        let cluster_ip = matches!(service["spec"]["type"].as_str(), None | Some("ClusterIP"));
        if cluster_ip {
            let Some(port_name) = service_port_name(&service, port) else {
                return unavailable(
                    "ServicePortError",
                    format!(
                        "service/{service_name} in {namespace:?} is not listening on port {port}"
                    ),
                );
            };
            if let Some(condition) = self.endpoints_condition(namespace, service_name, port_name) {
                return condition;
            }
        }
        match self
            .discovery_check(item, namespace, service_name, port)
            .await
        {
            Ok(()) => Condition {
                status: "True",
                reason: "Passed",
                message: "all checks passed".into(),
            },
            Err(message) => unavailable("FailedDiscoveryCheck", message),
        }
    }

    /// The condition when the Service has no ready endpoint for its port `port_name`.
    fn endpoints_condition(
        &self,
        namespace: &str,
        name: &str,
        port_name: &str,
    ) -> Option<Condition> {
        let addresses = self.resolver.endpoint_addresses(namespace, name, port_name);
        let Some(addresses) = addresses else {
            return Some(Condition {
                status: "False",
                reason: "EndpointsNotFound",
                message: format!("cannot find endpointslices for service/{name} in {namespace:?}"),
            });
        };
        addresses.is_empty().then(|| Condition {
            status: "False",
            reason: "MissingEndpoints",
            message: format!(
                "endpointslices for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
            ),
        })
    }

    /// Upstream's discovery check: GET the group version's discovery from an endpoint,
    /// [`ATTEMPTS`] times at once, each within [`TRY_TIMEOUT`]; one success suffices.
    async fn discovery_check(
        &self,
        item: &Value,
        namespace: &str,
        service_name: &str,
        port: i32,
    ) -> Result<(), String> {
        let backend = self
            .backends
            .table()
            .get(name(item))
            .cloned()
            .ok_or("the APIService is not routed yet")?;
        let transport = backend.transport.clone()?;
        let (group, version) = (&item["spec"]["group"], &item["spec"]["version"]);
        let (group, version) = (
            group.as_str().unwrap_or_default(),
            version.as_str().unwrap_or_default(),
        );
        let path = match name(item) == "v1." {
            true => format!("/api/{version}"),
            false => format!("/apis/{group}/{version}"),
        };
        let user = crate::aggregator_user();
        let attempt = || async {
            let endpoint = self.resolver.resolve(namespace, service_name, port)?;
            let url = format!("https://{endpoint}{path}");
            let fetched = transport
                .get(&endpoint, &path, &user, "application/json", TRY_TIMEOUT)
                .await;
            match fetched {
                Ok((status, _, _)) if status.is_success() || status.is_redirection() => Ok(()),
                Ok((status, _, _)) => Err(format!(
                    "failing or missing response from {url}: bad status from {url}: {}",
                    status.as_u16()
                )),
                Err(ProxyError::Timeout) => Err(format!("timed out waiting for {url}")),
                Err(err) => Err(format!(
                    "failing or missing response from {url}: Get {url:?}: {err}"
                )),
            }
        };
        let results = futures::future::join_all((0..ATTEMPTS).map(|_| attempt())).await;
        match results.iter().any(Result::is_ok) {
            true => Ok(()),
            false => Err(results
                .into_iter()
                .rev()
                .find_map(Result::err)
                .unwrap_or_default()),
        }
    }
}

/// The delay before the `failures`-th retry.
fn backoff(failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(20));
    BACKOFF_FIRST.saturating_mul(factor).min(BACKOFF_MAX)
}

fn name(item: &Value) -> &str {
    kapi_server::object::name(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_5ms_to_30s() {
        assert_eq!(backoff(1), Duration::from_millis(5));
        assert_eq!(backoff(2), Duration::from_millis(10));
        assert_eq!(backoff(4), Duration::from_millis(40));
        assert_eq!(backoff(40), BACKOFF_MAX);
    }
}
