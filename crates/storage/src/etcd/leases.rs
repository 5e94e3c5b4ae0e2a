//! Leases for keys that expire, shared between writes as kube-apiserver's etcd3 lease
//! manager shares them: granting one lease per write would cost etcd a lease (and a
//! revocation) per Event.
//!
//! A lease granted for `ttl` is made a little longer (5% of `ttl`, at most a minute) and
//! given to later writes as long as it outlives their own `ttl` but not by more than that
//! margin, and to at most [`MAX_ATTACHED`] writes. So a key never expires before its `ttl`
//! and at most 5% (a minute) after it.

use std::time::{Duration, Instant};

use etcd_client::Client;
use tokio::sync::Mutex;

use super::endpoints::{CallError, Endpoints};
use crate::Result;

/// The share of a lease's `ttl` it is lengthened by to be reused.
const REUSE_SHARE: f64 = 0.05;
/// The longest a lease is lengthened by to be reused.
const REUSE_MAX: Duration = Duration::from_secs(60);
/// The most writes one lease is given to.
const MAX_ATTACHED: u64 = 1000;

/// The last lease granted, shared by the writes that can use it.
#[derive(Default)]
pub(super) struct Leases {
    last: Mutex<Option<Granted>>,
}

struct Granted {
    id: i64,
    expires: Instant,
    attached: u64,
}

impl Leases {
    /// A lease that expires no sooner than `ttl` from now and at most 5% (a minute) later.
    pub async fn lease(&self, endpoints: &Endpoints, ttl: Duration) -> Result<i64> {
        let ttl = Duration::from_secs(ttl.as_secs().max(1) + u64::from(ttl.subsec_nanos() > 0));
        let margin = ttl.mul_f64(REUSE_SHARE).min(REUSE_MAX);
        let now = Instant::now();
        let mut last = self.last.lock().await;
        if let Some(granted) = last.as_mut() {
            let outlives = granted.expires > now + ttl;
            let close_enough = granted.expires <= now + ttl + margin;
            if outlives && close_enough && granted.attached < MAX_ATTACHED {
                granted.attached += 1;
                return Ok(granted.id);
            }
        }
        let lengthened = ttl + Duration::from_secs(margin.as_secs());
        let seconds = i64::try_from(lengthened.as_secs()).unwrap_or(i64::MAX);
        let response = endpoints
            .write(|mut client: Client| async move { client.lease_grant(seconds, None).await })
            .await
            .map_err(CallError::into_storage)?;
        *last = Some(Granted {
            id: response.id(),
            expires: now + lengthened,
            attached: 1,
        });
        Ok(response.id())
    }
}
