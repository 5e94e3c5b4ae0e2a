//! Leader election of the kube-controller-manager controllers kapi runs, as client-go's
//! leaderelection with a Lease lock (kube-system's `kube-controller-manager` Lease, as
//! kube-controller-manager's own): of several kapi replicas on one etcd (or a
//! kube-controller-manager beside kapi) only the holder runs the controllers. The holder
//! renews every retry period; one that cannot renew within the renew deadline stops its
//! controllers and campaigns again; a lease not renewed for its duration (as this replica
//! observed it, not by the clocks of others) is taken over. A replica shutting down releases
//! the lease so that another takes over at once.

use std::time::Duration;

use http::Method;
use kapi_apimachinery::status::ApiError;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The settings of `--leader-elect-*`.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// How long a lease lasts without renewal (`--leader-elect-lease-duration`, 15 s).
    pub lease_duration: Duration,
    /// How long the holder keeps trying to renew (`--leader-elect-renew-deadline`, 10 s).
    pub renew_deadline: Duration,
    /// The wait between attempts (`--leader-elect-retry-period`, 2 s).
    pub retry_period: Duration,
}

/// The Lease's namespace and name.
const NAMESPACE: &str = "kube-system";
const NAME: &str = "kube-controller-manager";

/// Runs `lead` with a token cancelled when leadership is lost, each time this replica
/// (`identity`, unique among the replicas) becomes the leader, until `stopping`; then the
/// lease is released before this returns, so the caller can hold the server's shutdown
/// (and its storage) open until another replica may take over at once.
pub async fn run_leader_elected(
    client: LoopbackClient,
    settings: LeaderElection,
    identity: String,
    stopping: CancellationToken,
    lead: impl Fn(CancellationToken),
) {
    let mut elector = Elector {
        client,
        settings,
        identity,
        observed: None,
    };
    elector.run(&stopping, lead).await;
}

struct Elector {
    client: LoopbackClient,
    settings: LeaderElection,
    identity: String,
    /// The lease's spec as last seen, and when it was first seen so.
    observed: Option<(Value, Instant)>,
}

impl Elector {
    async fn run(&mut self, stopping: &CancellationToken, lead: impl Fn(CancellationToken)) {
        loop {
            // Campaign.
            loop {
                if self.try_acquire_or_renew().await {
                    break;
                }
                tokio::select! {
                    () = stopping.cancelled() => return,
                    () = tokio::time::sleep(jittered(self.settings.retry_period)) => {}
                }
            }
            tracing::info!(
                lease = format!("{NAMESPACE}/{NAME}"),
                identity = self.identity,
                "successfully acquired lease"
            );
            let leading = stopping.child_token();
            lead(leading.clone());
            // Renew until the deadline passes without a renewal.
            let mut renewed = Instant::now();
            loop {
                tokio::select! {
                    () = stopping.cancelled() => {
                        leading.cancel();
                        self.release().await;
                        return;
                    }
                    () = tokio::time::sleep(self.settings.retry_period) => {}
                }
                // Each attempt is bounded by what is left of the deadline, as client-go's.
                let left = self
                    .settings
                    .renew_deadline
                    .saturating_sub(renewed.elapsed());
                let attempt = tokio::time::timeout(left, self.try_acquire_or_renew()).await;
                if attempt == Ok(true) {
                    renewed = Instant::now();
                } else if renewed.elapsed() >= self.settings.renew_deadline {
                    tracing::warn!(identity = self.identity, "leader election lost");
                    leading.cancel();
                    break;
                }
            }
        }
    }

    /// Takes the lease if it is free or expired, or renews it if it is ours: whether this
    /// replica holds it now.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = kapi_apimachinery::meta::now_rfc3339_micro();
        let duration = self.settings.lease_duration.as_secs().max(1);
        let path = format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{NAME}");
        let lease = match self.client.json(Method::GET, &path, None, None).await {
            Ok(lease) => lease,
            Err(err) if err.is_not_found() => {
                let spec = json!({"holderIdentity": self.identity,
                    "leaseDurationSeconds": duration, "acquireTime": now, "renewTime": now,
                    "leaseTransitions": 0});
                return self.write(Method::POST, spec, None).await.is_ok();
            }
            Err(_) => return false,
        };
        let spec = lease["spec"].clone();
        if self.observed.as_ref().is_none_or(|(seen, _)| *seen != spec) {
            self.observed = Some((spec.clone(), Instant::now()));
        }
        let holder = spec["holderIdentity"].as_str().unwrap_or_default();
        let ours = holder == self.identity;
        if !holder.is_empty() && !ours && !self.expired(&spec) {
            return false;
        }
        let transitions = spec["leaseTransitions"].as_i64().unwrap_or(0);
        let (acquired, transitions) = if ours {
            (spec["acquireTime"].clone(), transitions)
        } else {
            (Value::from(now.clone()), transitions + 1)
        };
        let new = json!({"holderIdentity": self.identity, "leaseDurationSeconds": duration,
            "acquireTime": acquired, "renewTime": now, "leaseTransitions": transitions});
        let version = lease["metadata"]["resourceVersion"].clone();
        self.write(Method::PUT, new, Some(version)).await.is_ok()
    }

    /// Whether the lease `spec` has gone unrenewed for its duration since this replica
    /// first saw it so.
    fn expired(&self, spec: &Value) -> bool {
        let seconds = spec["leaseDurationSeconds"].as_u64().unwrap_or(0);
        self.observed
            .as_ref()
            .is_none_or(|(_, seen)| seen.elapsed() >= Duration::from_secs(seconds))
    }

    /// Creates (POST) or replaces (PUT, at `version`) the lease with `spec`; on success,
    /// `spec` is what this replica observed last.
    async fn write(
        &mut self,
        method: Method,
        spec: Value,
        version: Option<Value>,
    ) -> Result<(), ApiError> {
        let mut lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NAMESPACE}, "spec": spec});
        let path = match version {
            Some(version) => {
                lease["metadata"]["resourceVersion"] = version;
                format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{NAME}")
            }
            None => format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"),
        };
        self.client.json(method, &path, None, Some(&lease)).await?;
        self.observed = Some((lease["spec"].clone(), Instant::now()));
        Ok(())
    }

    /// Gives the lease up (no holder, a one-second duration), if this replica holds it.
    async fn release(&mut self) {
        let path = format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{NAME}");
        let Ok(lease) = self.client.json(Method::GET, &path, None, None).await else {
            return;
        };
        if lease["spec"]["holderIdentity"] != self.identity.as_str() {
            return;
        }
        let now = kapi_apimachinery::meta::now_rfc3339_micro();
        let spec = json!({"holderIdentity": "", "leaseDurationSeconds": 1,
            "acquireTime": now, "renewTime": now,
            "leaseTransitions": lease["spec"]["leaseTransitions"]});
        let version = lease["metadata"]["resourceVersion"].clone();
        if let Err(err) = self.write(Method::PUT, spec, Some(version)).await {
            tracing::warn!("releasing the controllers' lease: {err}");
        }
    }
}

/// `period` stretched by up to 20%, as client-go's jitter spreads replicas' attempts.
fn jittered(period: Duration) -> Duration {
    period.mul_f64(1.0 + rand::random::<f64>() * 0.2)
}
