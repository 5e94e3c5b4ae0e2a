//! The API servers' leases behind the `kubernetes` Endpoints (upstream's lease endpoint
//! reconciler, the default `--endpoint-reconciler-type`): every server keeps a lease at
//! `<prefix>/masterleases/<advertised IP>`, renewed each reconcile, and the Endpoints list
//! the IPs of the leases that exist, so several servers on one store agree on one list
//! instead of overwriting each other. As upstream's, a lease is an Endpoints naming the IP,
//! its generation bumped at each renewal, written to expire [`LEASE_TTL`] after it (an etcd
//! lease; the embedded store's expiry): a server that stops renewing drops out, and
//! kube-apiserver and kapi sharing an etcd see each other's leases alike.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kapi_apimachinery::status::ApiError;
use kapi_storage::{ListOptions, StorageError, Store};
use serde_json::{Value, json};

/// How long a lease lives without renewal (upstream's master lease TTL).
pub(super) const LEASE_TTL: Duration = Duration::from_secs(15);
/// The renewal time (Unix seconds) earlier kapi wrote on leases that did not expire by
/// themselves; such a lease older than the TTL is deleted.
const LEGACY_RENEWED: &str = "kapi.io/lease-renewed";

/// The leases of the servers sharing a store.
pub(super) struct MasterLeases {
    pub store: Arc<dyn Store>,
    /// The key prefix of the leases, ending in `/`.
    pub prefix: String,
    /// How long a lease lives unrenewed.
    pub ttl: Duration,
}

impl MasterLeases {
    /// The leases under `<storage_prefix>/masterleases/`.
    pub fn new(store: Arc<dyn Store>, storage_prefix: &str) -> MasterLeases {
        let prefix = format!("{}/masterleases/", storage_prefix.trim_end_matches('/'));
        MasterLeases {
            store,
            prefix,
            ttl: LEASE_TTL,
        }
    }

    /// Renews this server's lease and returns the IPs of every live lease, sorted.
    pub async fn renew(&self, own: IpAddr) -> Result<Vec<IpAddr>, ApiError> {
        self.write(own).await.map_err(ApiError::internal)?;
        self.live().await
    }

    /// The IPs of every live lease, sorted: every lease that exists (expired ones are gone
    /// from the store), but earlier kapi's leases past their renewal, which are deleted.
    pub async fn live(&self) -> Result<Vec<IpAddr>, ApiError> {
        let listed = self.store.list(&self.prefix, &ListOptions::default()).await;
        let mut live = Vec::new();
        for kv in listed.map_err(ApiError::internal)?.kvs {
            if legacy_expired(&kv.key, &kv.value, self.ttl) {
                // Another server may have renewed or deleted it meanwhile: nothing to do then.
                let _ = self.store.delete(&kv.key, Some(kv.mod_revision)).await;
                continue;
            }
            live.extend(
                kv.key
                    .strip_prefix(&self.prefix)
                    .and_then(|ip| ip.parse::<IpAddr>().ok()),
            );
        }
        live.sort();
        live.dedup();
        Ok(live)
    }

    /// Removes this server's lease (a graceful shutdown, or a start after an unclean one);
    /// whether there was one.
    pub async fn remove(&self, own: IpAddr) -> Result<bool, ApiError> {
        match self.store.delete(&self.key(own), None).await {
            Ok(_) => Ok(true),
            Err(StorageError::KeyNotFound { .. }) => Ok(false),
            Err(err) => Err(ApiError::internal(err)),
        }
    }

    fn key(&self, ip: IpAddr) -> String {
        format!("{}{ip}", self.prefix)
    }

    /// Writes this server's lease again, expiring a TTL from now, its generation bumped (as
    /// upstream's, whose update must change the object to refresh the TTL).
    async fn write(&self, own: IpAddr) -> Result<(), StorageError> {
        let key = self.key(own);
        for _ in 0..8 {
            let current = self.store.get(&key, None).await?.kv;
            let generation = current
                .as_ref()
                .and_then(|kv| stored_object(&kv.key, &kv.value))
                .and_then(|lease| lease["metadata"]["generation"].as_i64())
                .unwrap_or(0);
            let lease = json!({
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"generation": generation + 1},
                "subsets": [{"addresses": [{"ip": own.to_string()}]}],
            });
            let value = Bytes::from(lease.to_string());
            let ttl = Some(self.ttl);
            let written = match current {
                Some(kv) => {
                    self.store
                        .update_expiring(&key, value, kv.mod_revision, ttl)
                        .await
                }
                None => self.store.create_expiring(&key, value, ttl).await,
            };
            match written {
                Err(StorageError::Conflict { .. } | StorageError::KeyExists { .. }) => continue,
                Err(StorageError::KeyNotFound { .. }) => continue,
                other => return other.map(drop),
            }
        }
        Ok(())
    }
}

/// A stored lease in whatever form it was written (kube-apiserver's protobuf, kapi's JSON).
fn stored_object(key: &str, value: &Bytes) -> Option<Value> {
    kapi_server::storage_codec::decode_value(key, value.clone()).ok()
}

/// Whether the lease is one earlier kapi wrote without expiry and it was last renewed more
/// than `ttl` ago.
fn legacy_expired(key: &str, value: &Bytes, ttl: Duration) -> bool {
    let renewed = stored_object(key, value).and_then(|lease| {
        lease["metadata"]["annotations"][LEGACY_RENEWED]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
    });
    renewed.is_some_and(|renewed| renewed + ttl.as_secs() < unix_seconds())
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_storage::{EmbeddedConfig, EmbeddedStore};

    #[tokio::test]
    async fn leases_are_listed_until_they_expire() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap());
        let mut leases = MasterLeases::new(store.clone(), "/registry");
        leases.ttl = Duration::from_secs(1);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.2".parse().unwrap(), "10.0.0.1".parse().unwrap());
        assert_eq!(leases.renew(a).await.unwrap(), [a]);
        assert_eq!(leases.renew(b).await.unwrap(), [b, a]);
        // Upstream's form: an Endpoints of the IP, its generation bumped at each renewal.
        leases.renew(a).await.unwrap();
        let key = "/registry/masterleases/10.0.0.2";
        let stored = store.get(key, None).await.unwrap().kv.unwrap();
        let lease: Value = serde_json::from_slice(&stored.value).unwrap();
        assert_eq!(lease["metadata"]["generation"], 2);
        assert_eq!(lease["subsets"][0]["addresses"][0]["ip"], "10.0.0.2");
        // Unrenewed, both expire by themselves.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !leases.live().await.unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the leases never expired"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        leases.renew(b).await.unwrap();
        leases.remove(b).await.unwrap();
        leases.remove(b).await.unwrap();
        assert!(leases.live().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn earlier_kapi_leases_past_their_renewal_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap());
        let leases = MasterLeases::new(store.clone(), "/registry");
        let legacy = |renewed: u64| {
            let lease = json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"annotations": {LEGACY_RENEWED: renewed.to_string()}}});
            Bytes::from(lease.to_string())
        };
        let (stale, fresh) = (
            "/registry/masterleases/10.0.0.3",
            "/registry/masterleases/10.0.0.4",
        );
        store
            .create(stale, legacy(unix_seconds() - 60))
            .await
            .unwrap();
        store.create(fresh, legacy(unix_seconds())).await.unwrap();
        assert_eq!(
            leases.live().await.unwrap(),
            ["10.0.0.4".parse::<IpAddr>().unwrap()]
        );
        assert!(store.get(stale, None).await.unwrap().kv.is_none());
    }

    #[tokio::test]
    async fn leases_kapi_did_not_write_are_live_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap());
        let leases = MasterLeases::new(store.clone(), "/registry");
        let key = "/registry/masterleases/10.0.0.9";
        store
            .create(
                key,
                Bytes::from_static(b"k8s\0\x0a\x0c\x0a\x02v1\x12\x09Endpoints"),
            )
            .await
            .unwrap();
        let live = leases.live().await.unwrap();
        assert_eq!(live, vec!["10.0.0.9".parse::<IpAddr>().unwrap()]);
        assert!(store.get(key, None).await.unwrap().kv.is_some());
    }
}
