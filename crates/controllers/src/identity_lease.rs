//! kube-apiserver's identity Lease (the APIServerIdentity feature, on by default): each
//! replica keeps a Lease in kube-system named by its identity (`apiserver-<hash of the host
//! name>`), labelled `apiserver.kubernetes.io/identity=kube-apiserver` and with the host
//! name, renewed every 10 seconds for an hour; and every replica deletes, each hour, the
//! identity Leases that have expired (replicas gone). Other replicas, kube-apiserver's too,
//! read them to know which API servers are alive.

use std::time::Duration;

use http::Method;
use kapi_apimachinery::gotime::{Timestamp, parse_formatted};
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The label naming an identity Lease's component.
pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
/// The component kapi is, as kube-apiserver names itself.
const COMPONENT: &str = "kube-apiserver";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
const NAMESPACE: &str = "kube-system";
/// How long a Lease lives unrenewed (upstream's `IdentityLeaseDurationSeconds`).
const LEASE_DURATION_SECONDS: i64 = 3600;

/// How often the Lease is renewed and expired ones collected.
#[derive(Clone, Copy, Debug)]
pub struct IdentityLeaseTiming {
    pub renew_interval: Duration,
    pub gc_period: Duration,
}

impl Default for IdentityLeaseTiming {
    /// Upstream's: renewed every 10 s, collected every hour.
    fn default() -> Self {
        IdentityLeaseTiming {
            renew_interval: Duration::from_secs(10),
            gc_period: Duration::from_secs(3600),
        }
    }
}

/// The identity of the API server on `hostname`, as kube-apiserver computes it: SHA-256 of
/// the host name and the component, each prefixed with its 16-bit length, the first 16 bytes
/// in lower-case unpadded base32.
pub fn api_server_id(hostname: &str) -> String {
    let mut data = Vec::with_capacity(hostname.len() + COMPONENT.len() + 4);
    for part in [hostname, COMPONENT] {
        data.extend_from_slice(&(part.len() as u16).to_be_bytes());
        data.extend_from_slice(part.as_bytes());
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, &data);
    format!("apiserver-{}", base32_lower(&digest.as_ref()[..16]))
}

/// RFC 4648 base32 in lower case, without padding.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let (mut out, mut buffer, mut bits) = (String::new(), 0u32, 0);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

fn lease_path(name: &str) -> String {
    format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{name}")
}

/// Keeps the identity Lease of this server on `hostname` renewed until `stopping`, held by
/// `<identity>_<uid>` when this server creates it (upstream's
/// `start-kube-apiserver-identity-lease-controller`).
pub fn start_identity_lease_controller(
    client: LoopbackClient,
    hostname: String,
    timing: IdentityLeaseTiming,
    stopping: CancellationToken,
) {
    let id = api_server_id(&hostname);
    let holder = format!("{id}_{}", kapi_apimachinery::meta::new_uid());
    tokio::spawn(async move {
        loop {
            if let Err(err) = renew(&client, &id, &holder, &hostname).await {
                tracing::warn!(lease = id, "renewing the identity lease failed: {err}");
            }
            tokio::select! {
                () = stopping.cancelled() => return,
                () = tokio::time::sleep(timing.renew_interval) => {}
            }
        }
    });
}

/// Deletes expired identity Leases at start and then every `timing.gc_period` until
/// `stopping` (upstream's `start-kube-apiserver-identity-lease-garbage-collector`); the
/// Lease of this server on `hostname` is never one of them.
pub fn start_identity_lease_gc(
    client: LoopbackClient,
    hostname: &str,
    timing: IdentityLeaseTiming,
    stopping: CancellationToken,
) {
    let own = api_server_id(hostname);
    tokio::spawn(async move {
        loop {
            collect_expired(&client, &own).await;
            tokio::select! {
                () = stopping.cancelled() => return,
                () = tokio::time::sleep(timing.gc_period) => {}
            }
        }
    });
}

/// Creates the Lease, or renews it (its renew time, and the labels if they went missing),
/// as upstream's lease controller does; an existing Lease keeps its holder.
async fn renew(
    client: &LoopbackClient,
    id: &str,
    holder: &str,
    hostname: &str,
) -> Result<(), kapi_apimachinery::ApiError> {
    let path = lease_path(id);
    let mut lease = match client.json(Method::GET, &path, None, None).await {
        Ok(lease) => lease,
        Err(err) if err.is_not_found() => json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": id, "namespace": NAMESPACE},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": LEASE_DURATION_SECONDS},
        }),
        Err(err) => return Err(err),
    };
    lease["spec"]["renewTime"] = Value::from(kapi_apimachinery::meta::now_rfc3339_micro());
    let labels = &mut lease["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[IDENTITY_LABEL] = Value::from(COMPONENT);
    labels[HOSTNAME_LABEL] = Value::from(hostname);
    match lease["metadata"]["resourceVersion"].is_string() {
        true => client.json(Method::PUT, &path, None, Some(&lease)).await?,
        false => {
            let collection = format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases");
            client
                .json(Method::POST, &collection, None, Some(&lease))
                .await?
        }
    };
    Ok(())
}

/// Whether `lease` has gone unrenewed longer than its duration (one without a renew time or
/// a duration counts as expired, as upstream's `isLeaseExpired`).
fn expired(lease: &Value, now: &Timestamp) -> bool {
    let spec = &lease["spec"];
    let renewed = spec["renewTime"].as_str().and_then(parse_formatted);
    match (renewed, spec["leaseDurationSeconds"].as_i64()) {
        (Some(renewed), Some(duration)) => renewed.seconds + duration < now.seconds,
        _ => true,
    }
}

/// Deletes the expired identity Leases of kube-apiservers (checking each again before it
/// goes, as upstream's collector does), never this server's own.
async fn collect_expired(client: &LoopbackClient, own: &str) {
    let selector = format!("{IDENTITY_LABEL}={COMPONENT}");
    let list = format!(
        "/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases?labelSelector={}",
        selector.replace('=', "%3D")
    );
    let Ok(leases) = client.json(Method::GET, &list, None, None).await else {
        return;
    };
    let now = Timestamp::now();
    let items = leases["items"].as_array().cloned().unwrap_or_default();
    for lease in items.iter().filter(|lease| expired(lease, &now)) {
        let Some(name) = lease["metadata"]["name"].as_str().filter(|n| *n != own) else {
            continue;
        };
        let path = lease_path(name);
        let Ok(current) = client.json(Method::GET, &path, None, None).await else {
            continue;
        };
        if !expired(&current, &Timestamp::now()) {
            continue;
        }
        // Deleted only at the version seen expired, so a renewal meanwhile keeps it.
        let version = current["metadata"]["resourceVersion"].clone();
        let options = json!({"kind": "DeleteOptions", "apiVersion": "v1",
            "preconditions": {"resourceVersion": version}});
        match client
            .json(Method::DELETE, &path, None, Some(&options))
            .await
        {
            Ok(_) => tracing::info!(lease = name, "deleted an expired identity lease"),
            Err(err) if err.is_not_found() || err.code() == 409 => {}
            Err(err) => tracing::warn!(lease = name, "deleting an expired identity lease: {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed with Python's hashlib and base64 from upstream's description.
    #[test]
    fn identities_are_kube_apiservers() {
        assert_eq!(
            api_server_id("test-server-a"),
            "apiserver-tcwjsvs6hjq4qbwzx5rvp5fsqe"
        );
        assert_eq!(
            api_server_id("kapi-host"),
            "apiserver-vstai3qryl2h6axzdce5gwvnlu"
        );
    }

    #[test]
    fn leases_expire_after_their_duration() {
        let now = Timestamp {
            seconds: 1_767_225_600,
            nanos: 0,
        };
        let lease =
            |renewed: &str| json!({"spec": {"renewTime": renewed, "leaseDurationSeconds": 3600}});
        assert!(!expired(&lease("2026-01-01T00:00:00.000000Z"), &now));
        assert!(!expired(&lease("2025-12-31T23:00:00.000000Z"), &now));
        assert!(expired(&lease("2025-12-31T22:59:59.000000Z"), &now));
        assert!(expired(&json!({"spec": {}}), &now));
    }
}
