//! The `Available` condition of local APIServices, as upstream's
//! apiservice-status-local-available-controller keeps it
//! (kube-aggregator/pkg/controllers/status/local): a group version served by the chain
//! itself is always available. APIServices naming a Service are left to the remote
//! availability check.

use std::collections::BTreeSet;

use kapi_apimachinery::meta::now_rfc3339;
use kapi_apimachinery::status::ApiError;
use kapi_server::endpoints::Served;
use kapi_server::informer::{self, Change};
use kapi_server::registry::KUBE_APISERVER;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The condition's reason for local APIServices.
const REASON: &str = "Local";
/// Its message.
const MESSAGE: &str = "Local APIServices are always available";
/// How soon a failed write is tried again.
const RETRY: std::time::Duration = std::time::Duration::from_millis(500);

/// What to look at: one APIService, or all of them.
enum Check {
    One(String),
    All,
}

/// Keeps local APIServices `Available` until `stopping`: each when it changes, all when
/// the follower starts over.
pub(crate) fn start(api_services: Served, stopping: CancellationToken) {
    let (changed, mut to_check) = mpsc::unbounded_channel::<Check>();
    let notice = move |change: Change<'_>| {
        let check = match change {
            Change::Resync => Check::All,
            Change::Event(event) => Check::One(event.object.name().to_string()),
        };
        changed.send(check).is_ok()
    };
    tokio::spawn(informer::follow(
        api_services.clone(),
        stopping.clone(),
        notice,
    ));
    tokio::spawn(async move {
        // The APIServices still to look at: those changed, and those whose write failed.
        let mut pending = BTreeSet::new();
        loop {
            let retry = tokio::time::sleep(RETRY);
            let check = tokio::select! {
                _ = stopping.cancelled() => return,
                _ = retry, if !pending.is_empty() => None,
                check = to_check.recv() => match check {
                    None => return,
                    check => check,
                },
            };
            // A burst of changes is looked at once.
            let checks = check
                .into_iter()
                .chain(std::iter::from_fn(|| to_check.try_recv().ok()));
            for check in checks {
                match check {
                    Check::One(name) => {
                        pending.insert(name);
                    }
                    Check::All => pending.extend(
                        api_services
                            .cached_list_parts(&[], &["name"])
                            .iter()
                            .map(|service| kapi_server::object::name(service).to_string()),
                    ),
                }
            }
            // All at once: the writes share the store's commits.
            let names = std::mem::take(&mut pending);
            let marked = names.iter().map(|name| mark_available(&api_services, name));
            let results = futures::future::join_all(marked).await;
            for (name, result) in names.into_iter().zip(results) {
                if let Err(err) = result {
                    tracing::debug!("marking APIService {name} available: {err}");
                    pending.insert(name);
                }
            }
        }
    });
}

/// Sets the `Available` condition of the local APIService `name` if it lacks it.
async fn mark_available(api_services: &Served, name: &str) -> Result<(), ApiError> {
    let Some(current) = api_services.cached("", name) else {
        return Ok(());
    };
    if current["spec"]["service"].is_object() || kapi_server::object::is_deleting(&current) {
        return Ok(());
    }
    match available_status(&current["status"]) {
        Some(status) => write_status(api_services, name, status).await,
        None => Ok(()),
    }
}

/// An APIService's `Available` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Condition {
    /// "True", "False" or "Unknown".
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Condition {
    /// Whether it says the APIService is available.
    pub(crate) fn available(&self) -> bool {
        self.status == "True"
    }
}

/// The status of a local APIService, `None` when it is already so.
fn available_status(status: &Value) -> Option<Value> {
    let local = Condition {
        status: "True",
        reason: REASON,
        message: MESSAGE.into(),
    };
    with_condition(status, &local)
}

/// `status` with the `Available` condition set as upstream's SetAPIServiceCondition sets it
/// (the transition time moves only when the condition's status does); `None` when it is
/// already so.
pub(crate) fn with_condition(status: &Value, condition: &Condition) -> Option<Value> {
    let mut status = if status.is_object() {
        status.clone()
    } else {
        json!({})
    };
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let existing = conditions.iter().find(|c| c["type"] == "Available");
    if existing.is_some_and(|c| {
        c["status"] == condition.status
            && c["reason"] == condition.reason
            && c["message"] == condition.message.as_str()
    }) {
        return None;
    }
    let since = match existing {
        Some(c) if c["status"] == condition.status => c["lastTransitionTime"].clone(),
        _ => json!(now_rfc3339()),
    };
    let mut written = json!({"type": "Available", "status": condition.status,
        "lastTransitionTime": since, "reason": condition.reason});
    if !condition.message.is_empty() {
        written["message"] = json!(condition.message);
    }
    let mut kept: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c["type"] != "Available")
        .collect();
    kept.push(written);
    status["conditions"] = Value::Array(kept);
    Some(status)
}

/// Writes an APIService's status through its status subresource, as kube-apiserver's (a
/// missing APIService is not an error: it is gone).
pub(crate) async fn write_status(
    api_services: &Served,
    name: &str,
    status: Value,
) -> Result<(), ApiError> {
    match api_services
        .write_status("", name, status, KUBE_APISERVER)
        .await
    {
        Err(err) if err.code() == 404 => Ok(()),
        written => written,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_is_set_once_and_keeps_its_transition_time() {
        let status = available_status(&Value::Null).unwrap();
        let condition = &status["conditions"][0];
        assert_eq!(condition["status"], "True");
        assert_eq!(condition["reason"], "Local");
        assert_eq!(
            condition["message"],
            "Local APIServices are always available"
        );
        assert_eq!(available_status(&status), None);
        let mut other_reason = status.clone();
        other_reason["conditions"][0]["reason"] = json!("Passed");
        other_reason["conditions"][0]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        let fixed = available_status(&other_reason).unwrap();
        assert_eq!(fixed["conditions"][0]["reason"], "Local");
        assert_eq!(
            fixed["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
    }
}
