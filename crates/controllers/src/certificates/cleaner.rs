//! kube-controller-manager's `csrcleaner` controller: every hour (and at start) it deletes
//! the requests that are done with, as upstream's: issued an hour after approval, denied or
//! failed an hour after the decision, pending a day after creation, and issued ones whose
//! certificate has expired.

use std::time::Duration;

use kapi_apimachinery::gotime;
use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use tokio_util::sync::CancellationToken;

use super::{CSR_PATH, Csr};

/// The controller's name (`--controllers`).
pub const CSR_CLEANER_CONTROLLER: &str = "certificatesigningrequest-cleaner-controller";

/// How often every request is looked at.
const POLLING_INTERVAL: Duration = Duration::from_secs(3600);
/// How long issued, denied and failed requests are kept after their condition.
const DECIDED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long undecided requests are kept after their creation.
const PENDING_EXPIRATION: Duration = Duration::from_secs(24 * 3600);

/// Starts the controller over the requests' watch cache, deleting through `client` until
/// `stopping`.
pub fn start_csr_cleaner(csrs: Served, client: LoopbackClient, stopping: CancellationToken) {
    tokio::spawn(async move {
        let mut polling = tokio::time::interval(POLLING_INTERVAL);
        loop {
            tokio::select! {
                () = stopping.cancelled() => return,
                _ = polling.tick() => {}
            }
            for csr in csrs.cached_list(None) {
                let csr = Csr(csr);
                if !done_with(&csr, gotime::Timestamp::now().seconds) {
                    continue;
                }
                let path = format!("{CSR_PATH}/{}", csr.name());
                let deleted = client.json(http::Method::DELETE, &path, None, None).await;
                if let Err(err) = deleted.or_else(|err| match err.code() {
                    404 => Ok(serde_json::Value::Null),
                    _ => Err(err),
                }) {
                    let name = csr.name();
                    tracing::warn!(
                        "{CSR_CLEANER_CONTROLLER}: unable to delete CSR {name:?}: {err}"
                    );
                }
            }
        }
    });
}

/// Whether `csr` is done with at `now` (seconds since the epoch).
fn done_with(csr: &Csr, now: i64) -> bool {
    let older = |time: &serde_json::Value, age: Duration| {
        time.as_str()
            .and_then(gotime::parse_rfc3339)
            .is_some_and(|time| now - time.seconds > age.as_secs() as i64)
    };
    let conditions: Vec<_> = csr.conditions().collect();
    let decided_past = |type_: &str| {
        conditions
            .iter()
            .any(|c| c["type"] == type_ && older(&c["lastUpdateTime"], DECIDED_EXPIRATION))
    };
    let pending_past =
        conditions.is_empty() && older(&csr.0["metadata"]["creationTimestamp"], PENDING_EXPIRATION);
    let approved = conditions.iter().any(|c| c["type"] == "Approved");
    (csr.issued() && decided_past("Approved"))
        || decided_past("Denied")
        || decided_past("Failed")
        || pending_past
        || (approved && certificate_expired(csr, now))
}

/// Whether the issued certificate's end has passed.
fn certificate_expired(csr: &Csr, now: i64) -> bool {
    use base64::Engine;
    let Some(encoded) = csr.0["status"]["certificate"].as_str() else {
        return false;
    };
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
        return false;
    };
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(&pem) else {
        return false;
    };
    pem.parse_x509()
        .is_ok_and(|cert| now > cert.validity().not_after.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_done_with_as_upstream_says() {
        let now = 1_800_000_000;
        let at = |seconds_ago: i64| gotime::format_rfc3339(now - seconds_ago);
        let csr = |conditions: serde_json::Value, certificate: Option<&str>, age: i64| {
            Csr(
                json!({"metadata": {"name": "r", "creationTimestamp": at(age)},
                "status": {"conditions": conditions, "certificate": certificate}}),
            )
        };
        let approved =
            |ago| json!([{"type": "Approved", "status": "True", "lastUpdateTime": at(ago)}]);
        assert!(
            !done_with(&csr(json!([]), None, 3600), now),
            "pending for an hour"
        );
        assert!(
            done_with(&csr(json!([]), None, 90_000), now),
            "pending for a day"
        );
        assert!(
            !done_with(&csr(approved(7200), None, 7200), now),
            "approved, not issued"
        );
        assert!(
            done_with(&csr(approved(7200), Some("x"), 7200), now),
            "issued long ago"
        );
        assert!(
            !done_with(&csr(approved(60), Some("x"), 7200), now),
            "issued a minute ago"
        );
        let denied = json!([{"type": "Denied", "status": "True", "lastUpdateTime": at(4000)}]);
        assert!(
            done_with(&csr(denied, None, 4000), now),
            "denied over an hour ago"
        );
    }
}
