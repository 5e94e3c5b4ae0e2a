//! `autoregister-completion`, the boot-sequence health check upstream's aggregator adds
//! (pkg/controlplane/apiserver/aggregator.go): unhealthy until every local APIService
//! registered on start has been seen `Available` once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use kapi_server::HealthCheck;
use kapi_server::endpoints::Served;
use serde_json::Value;

/// The check over `api_services`, waiting for the APIServices `names`.
pub(crate) fn check(api_services: Served, names: BTreeSet<String>) -> HealthCheck {
    let pending = Arc::new(Mutex::new(names));
    HealthCheck::new("autoregister-completion", move || {
        let result = still_missing(&api_services, &pending);
        async move { result }
    })
}

/// Drops from `pending` the APIServices now available; an error naming those left.
fn still_missing(
    api_services: &Served,
    pending: &Mutex<BTreeSet<String>>,
) -> Result<(), kapi_server::BoxError> {
    let mut pending = pending
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    pending.retain(|name| {
        !api_services
            .cached("", name)
            .is_some_and(|service| is_available(&service))
    });
    if pending.is_empty() {
        return Ok(());
    }
    // Go's %v of a string list.
    let names: Vec<&str> = pending.iter().map(String::as_str).collect();
    Err(format!("missing APIService: [{}]", names.join(" ")).into())
}

/// Whether an APIService's `Available` condition is True.
fn is_available(service: &Value) -> bool {
    service["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True")
}
