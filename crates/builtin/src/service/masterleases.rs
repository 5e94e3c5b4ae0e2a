//! The API servers' leases behind the `kubernetes` Endpoints (upstream's lease endpoint
//! reconciler, the default `--endpoint-reconciler-type`): every server keeps a lease at
//! `<prefix>/masterleases/<advertised IP>`, renewed each reconcile, and the Endpoints list
//! the IPs of the leases still alive, so several servers on one store agree on one list
//! instead of overwriting each other. The store has no TTLs, so a lease carries its renewal
//! time and a lease not renewed within [`LEASE_TTL`] is expired (and deleted) by whichever
//! server sees it.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kapi_apimachinery::status::ApiError;
use kapi_storage::{ListOptions, StorageError, Store};
use serde_json::{Value, json};

/// How long a lease lives without renewal (upstream's master lease TTL).
pub(super) const LEASE_TTL: Duration = Duration::from_secs(15);
/// The annotation holding a lease's renewal time, in Unix seconds.
const RENEWED: &str = "kapi.io/lease-renewed";

/// The leases of the servers sharing a store.
pub(super) struct MasterLeases {
    pub store: Arc<dyn Store>,
    /// The key prefix of the leases, ending in `/`.
    pub prefix: String,
}

impl MasterLeases {
    /// The leases under `<storage_prefix>/masterleases/`.
    pub fn new(store: Arc<dyn Store>, storage_prefix: &str) -> MasterLeases {
        let prefix = format!("{}/masterleases/", storage_prefix.trim_end_matches('/'));
        MasterLeases { store, prefix }
    }

    /// Renews this server's lease and returns the IPs of every live lease, sorted; expired
    /// leases are deleted.
    pub async fn renew(&self, own: IpAddr) -> Result<Vec<IpAddr>, ApiError> {
        self.write(own, unix_seconds())
            .await
            .map_err(ApiError::internal)?;
        self.live().await
    }

    /// The IPs of every live lease, sorted; expired leases are deleted.
    pub async fn live(&self) -> Result<Vec<IpAddr>, ApiError> {
        let now = unix_seconds();
        let listed = self.store.list(&self.prefix, &ListOptions::default()).await;
        let mut live = Vec::new();
        for kv in listed.map_err(ApiError::internal)?.kvs {
            let lease: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
            let renewed = lease["metadata"]["annotations"][RENEWED]
                .as_str()
                .and_then(|s| s.parse::<u64>().ok());
            // A lease without kapi's renewal time is another server's (kube-apiserver's, on a
            // shared etcd: protobuf, expired by its etcd lease): live while it exists, and
            // never deleted here.
            if renewed.is_some_and(|renewed| renewed + LEASE_TTL.as_secs() < now) {
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

    /// Removes this server's lease (a graceful shutdown).
    pub async fn remove(&self, own: IpAddr) -> Result<(), ApiError> {
        match self.store.delete(&self.key(own), None).await {
            Ok(_) | Err(StorageError::KeyNotFound { .. }) => Ok(()),
            Err(err) => Err(ApiError::internal(err)),
        }
    }

    fn key(&self, ip: IpAddr) -> String {
        format!("{}{ip}", self.prefix)
    }

    /// Writes this server's lease renewed at `now`.
    async fn write(&self, own: IpAddr, now: u64) -> Result<(), StorageError> {
        let key = self.key(own);
        let lease = json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": { "name": own.to_string(), "annotations": { RENEWED: now.to_string() } },
            "subsets": [{ "addresses": [{ "ip": own.to_string() }] }],
        });
        let value = Bytes::from(lease.to_string());
        for _ in 0..8 {
            let current = self.store.get(&key, None).await?.kv;
            let written = match current {
                Some(kv) => {
                    self.store
                        .update(&key, value.clone(), kv.mod_revision)
                        .await
                }
                None => self.store.create(&key, value.clone()).await,
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
    async fn live_leases_are_listed_and_expired_ones_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap());
        let leases = MasterLeases::new(store.clone(), "/registry");
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.2".parse().unwrap(), "10.0.0.1".parse().unwrap());
        assert_eq!(leases.renew(a).await.unwrap(), [a]);
        assert_eq!(leases.renew(b).await.unwrap(), [b, a]);
        // A lease not renewed for longer than the TTL is gone.
        let stale = now_minus(LEASE_TTL.as_secs() + 5);
        leases.write(a, stale).await.unwrap();
        assert_eq!(leases.renew(b).await.unwrap(), [b]);
        assert!(
            store
                .get("/registry/masterleases/10.0.0.2", None)
                .await
                .unwrap()
                .kv
                .is_none()
        );
        leases.remove(b).await.unwrap();
        leases.remove(b).await.unwrap();
        let left = store
            .list("/registry/masterleases/", &ListOptions::default())
            .await
            .unwrap();
        assert!(left.kvs.is_empty());
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

    fn now_minus(seconds: u64) -> u64 {
        unix_seconds() - seconds
    }
}
