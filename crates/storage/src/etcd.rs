//! The etcd backend: [`Store`] over etcd's v3 API, for kapi replicas that share one etcd
//! cluster, as kube-apiserver does.
//!
//! Every operation maps to one etcd request (conditional writes are transactions), so revisions,
//! compare-and-swap and compaction are etcd's own. On top of etcd-client this adds:
//! - failover between the configured servers (see `endpoints`): a dead member costs the calls
//!   in flight on it, not every third call;
//! - watches that survive a broken stream by watching again from the first undelivered
//!   revision (see `watch`), with periodic and on-demand progress notifications.

mod endpoints;
mod leases;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, DeleteOptions, GetOptions, PutOptions,
    ResponseHeader, Txn, TxnOp, TxnOpResponse, TxnResponse,
};

use self::endpoints::{CallError, Endpoints};
use self::leases::Leases;
use self::watch::Watch;
use crate::{
    CompactionTurn, DeleteResponse, GetResponse, KeyValue, ListOptions, ListResponse, Result,
    Revision, StorageError, Store, WatchOptions, WatchStream, decode_continue, encode_continue,
};

/// The largest response decoded from etcd (a range of a big collection can be many MiB), as
/// kube-apiserver's etcd client allows (2 GiB); etcd-client's default is 4 MiB.
pub(crate) const MAX_RESPONSE: usize = i32::MAX as usize;
/// How etcd says a revision is older than its compacted revision.
/// The key the servers sharing an etcd take compaction turns on (kube-apiserver's).
const COMPACT_REV_KEY: &str = "compact_rev_key";
const COMPACTED_MESSAGE: &str = "required revision has been compacted";
/// How etcd says a revision is newer than its current revision.
const FUTURE_MESSAGE: &str = "required revision is a future revision";

/// How to reach etcd (kube-apiserver's `--etcd-servers`, `--etcd-cafile`, `--etcd-certfile`,
/// `--etcd-keyfile`) and how the store behaves on top of it.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs of the etcd members, `http://` or `https://`.
    pub servers: Vec<String>,
    /// The CA that signed the servers' certificates (PEM), for `https://` servers.
    pub ca_file: Option<PathBuf>,
    /// A client certificate (PEM) for servers that require one; needs `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub key_file: Option<PathBuf>,
    /// How often every watch asks etcd for a progress notification, which becomes a
    /// [`WatchResponse::Progress`](crate::WatchResponse::Progress).
    pub progress_interval: Duration,
    /// The longest one call may wait for etcd, and the longest a broken watch keeps trying to
    /// resume, before failing with [`StorageError::Unavailable`].
    pub request_timeout: Duration,
}

impl EtcdConfig {
    /// A configuration for `servers` with plain connections, progress notifications every 5 s
    /// and a 10 s request timeout.
    pub fn new(servers: Vec<String>) -> EtcdConfig {
        EtcdConfig {
            servers,
            ca_file: None,
            cert_file: None,
            key_file: None,
            progress_interval: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// The [`Store`] backed by an etcd cluster. Cheap to share: wrap it in an `Arc`.
pub struct EtcdStore {
    shared: Arc<Shared>,
}

/// What the store and its watches share.
struct Shared {
    endpoints: Endpoints,
    /// The leases of keys written with a time to live.
    leases: Leases,
    progress_interval: Duration,
    /// [`Store::request_progress`] bumps this; every live watch holds a receiver and asks
    /// etcd for a progress notification when it changes.
    progress_requests: tokio::sync::watch::Sender<u64>,
}

impl EtcdStore {
    /// Connects to the configured servers and checks that at least one of them answers.
    /// Fails with [`StorageError::InvalidRequest`] on a bad configuration and
    /// [`StorageError::Unavailable`] when no server answers within the request timeout.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdStore> {
        if config.progress_interval.is_zero() || config.request_timeout.is_zero() {
            return Err(StorageError::InvalidRequest(
                "the progress interval and the request timeout must be positive".into(),
            ));
        }
        let store = EtcdStore {
            shared: Arc::new(Shared {
                endpoints: Endpoints::new(&config).await?,
                leases: Leases::default(),
                progress_interval: config.progress_interval,
                progress_requests: tokio::sync::watch::Sender::new(0),
            }),
        };
        store.current_revision().await?;
        tracing::info!(servers = ?config.servers, "connected to etcd");
        Ok(store)
    }

    fn endpoints(&self) -> &Endpoints {
        &self.shared.endpoints
    }

    /// A linearizable range read at `revision` (the latest if `None`), retried on another
    /// server when one is unavailable.
    async fn range(
        &self,
        key: &[u8],
        mut options: GetOptions,
        revision: Option<Revision>,
    ) -> Result<etcd_client::GetResponse> {
        if let Some(revision) = revision {
            options = options.with_revision(revision);
        }
        let result = self
            .endpoints()
            .read(|client: Client| {
                let (key, options) = (key.to_vec(), options.clone());
                async move {
                    let mut kv = client.kv_client().max_decoding_message_size(MAX_RESPONSE);
                    kv.get(key, Some(options)).await
                }
            })
            .await;
        match (result, revision) {
            (Ok(response), _) => Ok(response),
            (Err(err), Some(revision)) => Err(self.revision_error(err, revision).await),
            (Err(err), None) => Err(err.into_storage()),
        }
    }

    /// The put of `value` at `key`, attached to a lease when it expires after `ttl`.
    async fn put(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<TxnOp> {
        let options = match ttl {
            Some(ttl) => {
                let lease = self.shared.leases.lease(self.endpoints(), ttl).await?;
                Some(PutOptions::new().with_lease(lease))
            }
            None => None,
        };
        Ok(TxnOp::put(key, value.to_vec(), options))
    }

    /// A transaction, sent once (see [`Endpoints::write`]).
    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        self.endpoints()
            .write(|mut client: Client| {
                let txn = txn.clone();
                async move { client.txn(txn).await }
            })
            .await
            .map_err(CallError::into_storage)
    }

    /// Maps the error of a read or compaction at `requested` to Compacted or FutureRevision
    /// where etcd said so.
    async fn revision_error(&self, err: CallError, requested: Revision) -> StorageError {
        match err.etcd_message() {
            Some(message) if message.contains(COMPACTED_MESSAGE) => StorageError::Compacted {
                requested,
                compacted: 0,
            },
            Some(message) if message.contains(FUTURE_MESSAGE) => {
                match self.current_revision().await {
                    Ok(current) => StorageError::FutureRevision { requested, current },
                    Err(err) => err,
                }
            }
            _ => err.into_storage(),
        }
    }

    /// Whether `after` is older than the compacted revision, so a watch after it must fail. A
    /// range read at `after` fails exactly then (at 1 for `after` 0, which would read the
    /// latest).
    async fn watch_start_compacted(&self, key: &str, after: Revision) -> Result<bool> {
        let options = GetOptions::new().with_count_only();
        match self
            .range(&range_start(key), options, Some(after.max(1)))
            .await
        {
            Ok(_) => Ok(false),
            Err(StorageError::Compacted { .. }) => Ok(true),
            Err(StorageError::FutureRevision { .. }) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

#[async_trait]
impl Store for EtcdStore {
    /// etcd before 3.4.31 and 3.5.13 can send a requested progress notification ahead of
    /// events it has not sent yet (etcd-io/etcd#15220, #17507), and Debian ships 3.4.23; as
    /// kube-apiserver does with etcd it cannot vouch for, kapi then reads storage for
    /// consistent reads instead of trusting the watch cache's progress.
    fn ordered_progress(&self) -> bool {
        false
    }

    async fn current_revision(&self) -> Result<Revision> {
        // A count-only read of one key: the cheapest request whose header has the revision.
        let response = self
            .range(&range_start(""), GetOptions::new().with_count_only(), None)
            .await?;
        header_revision(response.header())
    }

    async fn create_expiring(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<Revision> {
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([self.put(key, value, ttl).await?]);
        let response = self.txn(txn).await?;
        if !response.succeeded() {
            return Err(StorageError::KeyExists { key: key.into() });
        }
        header_revision(response.header())
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse> {
        let revision = revision.filter(|r| *r > 0);
        let response = self
            .range(&range_start(key), GetOptions::new(), revision)
            .await?;
        let kv = response.kvs().first().map(key_value).transpose()?;
        let revision = match revision {
            Some(revision) => revision,
            None => header_revision(response.header())?,
        };
        Ok(GetResponse { kv, revision })
    }

    async fn list(&self, prefix: &str, options: &ListOptions) -> Result<ListResponse> {
        let (start, token_revision) = match &options.continue_token {
            Some(token) => {
                let (revision, key) = decode_continue(prefix, token)?;
                (key, Some(revision))
            }
            None => (prefix.to_owned(), None),
        };
        if token_revision.is_some() && options.revision.is_some() {
            return Err(StorageError::InvalidRequest(
                "a list cannot have both a revision and a continue token".into(),
            ));
        }
        let revision = options.revision.or(token_revision).filter(|r| *r > 0);
        let mut range = GetOptions::new().with_range(prefix_end(prefix.as_bytes()));
        if let Some(limit) = options.limit.filter(|limit| *limit > 0) {
            range = range.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let response = self.range(&range_start(&start), range, revision).await?;
        let read_at = match revision {
            Some(revision) => revision,
            None => header_revision(response.header())?,
        };
        let kvs = response
            .kvs()
            .iter()
            .map(key_value)
            .collect::<Result<Vec<_>>>()?;
        let (continue_token, remaining) = match kvs.last() {
            Some(last) if response.more() => {
                // The next page starts right after the last key of this one.
                let next = format!("{}\0", last.key);
                let remaining = u64::try_from(response.count()).unwrap_or(0);
                (
                    Some(encode_continue(prefix, &next, read_at)),
                    remaining.saturating_sub(kvs.len() as u64),
                )
            }
            _ => (None, 0),
        };
        Ok(ListResponse {
            kvs,
            revision: read_at,
            continue_token,
            remaining,
        })
    }

    async fn update_expiring(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<Revision> {
        let txn = Txn::new()
            .when(unchanged_since(key, expected))
            .and_then([self.put(key, value, ttl).await?])
            .or_else([TxnOp::get(key, None)]);
        let response = self.txn(txn).await?;
        if !response.succeeded() {
            return Err(precondition_failure(key, expected, &response));
        }
        header_revision(response.header())
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse> {
        let delete = TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()));
        let txn = match expected {
            Some(expected) => Txn::new()
                .when(unchanged_since(key, expected))
                .and_then([delete])
                .or_else([TxnOp::get(key, None)]),
            None => Txn::new().and_then([delete]),
        };
        let response = self.txn(txn).await?;
        if let (false, Some(expected)) = (response.succeeded(), expected) {
            return Err(precondition_failure(key, expected, &response));
        }
        let prev_kv = response
            .op_responses()
            .iter()
            .find_map(|op| match op {
                TxnOpResponse::Delete(deleted) => deleted.prev_kvs().first().map(key_value),
                _ => None,
            })
            .transpose()?
            .ok_or_else(|| StorageError::KeyNotFound { key: key.into() })?;
        Ok(DeleteResponse {
            prev_kv,
            revision: header_revision(response.header())?,
        })
    }

    async fn watch(&self, key: &str, options: WatchOptions) -> Result<WatchStream> {
        let after = match options.after {
            Some(after) => after,
            None => self.current_revision().await?,
        };
        let compacted = options.after.is_some() && self.watch_start_compacted(key, after).await?;
        let range_end = options.prefix.then(|| prefix_end(key.as_bytes()));
        let stream = Watch::new(self.shared.clone(), range_start(key), range_end, after)
            .open()
            .await?;
        if compacted {
            // etcd reports the compacted revision only on the watch itself.
            let wait = self.endpoints().request_timeout();
            return Err(watch::compaction_error(stream, after, wait).await);
        }
        Ok(stream)
    }

    async fn request_progress(&self) -> Result<()> {
        self.shared
            .progress_requests
            .send_modify(|generation| *generation = generation.wrapping_add(1));
        Ok(())
    }

    /// kube-apiserver's turn-taking: whoever swaps `compact_rev_key` from the version it
    /// expects (writing the revision it will compact) compacts; the others learn the key's
    /// version and try at the next interval. The key is at etcd's root, outside any
    /// `--etcd-prefix`, as kube-apiserver's.
    async fn compaction_turn(&self, turn: CompactionTurn) -> Result<CompactionTurn> {
        let txn = Txn::new()
            .when([Compare::version(
                COMPACT_REV_KEY,
                CompareOp::Equal,
                turn.version,
            )])
            .and_then([TxnOp::put(COMPACT_REV_KEY, turn.revision.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let response = self.txn(txn).await?;
        let current = response
            .header()
            .map(|header| header.revision())
            .unwrap_or_default();
        if !response.succeeded() {
            let version = response.op_responses().iter().find_map(|op| match op {
                TxnOpResponse::Get(read) => read.kvs().first().map(|kv| kv.version()),
                _ => None,
            });
            return Ok(CompactionTurn {
                version: version.unwrap_or_default(),
                revision: current,
            });
        }
        let next = CompactionTurn {
            version: turn.version + 1,
            revision: current,
        };
        if turn.revision != 0 {
            // A failed compaction still ends the turn, as upstream's: the next one tries
            // a newer revision.
            match self.compact(turn.revision).await {
                Ok(()) | Err(StorageError::Compacted { .. }) => {}
                Err(err) => tracing::warn!(%err, revision = turn.revision, "compaction failed"),
            }
        }
        Ok(next)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let result = self
            .endpoints()
            .write(|mut client: Client| async move {
                let options = CompactionOptions::new().with_physical();
                client.compact(revision, Some(options)).await
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(err) => Err(self.revision_error(err, revision).await),
        }
    }
}

/// The compares of a conditional write: the key exists and its mod revision is `expected`.
/// The first alone would pass for a missing key when `expected` is 0.
fn unchanged_since(key: &str, expected: Revision) -> [Compare; 2] {
    [
        Compare::create_revision(key, CompareOp::Greater, 0),
        Compare::mod_revision(key, CompareOp::Equal, expected),
    ]
}

/// The error of a conditional write whose compares failed, from the read in its else branch.
fn precondition_failure(key: &str, expected: Revision, response: &TxnResponse) -> StorageError {
    let current = response.op_responses().iter().find_map(|op| match op {
        TxnOpResponse::Get(read) => Some(read.kvs().first().map(key_value)),
        _ => None,
    });
    match current.flatten() {
        None => StorageError::KeyNotFound { key: key.into() },
        Some(Ok(current)) => StorageError::Conflict {
            key: key.into(),
            expected,
            current: Box::new(current),
        },
        Some(Err(err)) => err,
    }
}

/// The revision in a response header; etcd always sends one.
fn header_revision(header: Option<&ResponseHeader>) -> Result<Revision> {
    header
        .map(ResponseHeader::revision)
        .ok_or_else(|| StorageError::Internal("etcd response without a header".into()))
}

/// Our key-value from etcd's; keys are UTF-8 because every write here takes a `&str`.
fn key_value(kv: &etcd_client::KeyValue) -> Result<KeyValue> {
    let key = kv.key_str().map_err(|_| {
        StorageError::Internal(format!(
            "etcd returned a key that is not UTF-8: {:?}",
            kv.key()
        ))
    })?;
    Ok(KeyValue {
        key: Arc::from(key),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

/// The first key of a range: etcd has no empty key, so the range of everything starts at
/// "\0".
fn range_start(key: &str) -> Vec<u8> {
    if key.is_empty() {
        vec![0]
    } else {
        key.as_bytes().to_vec()
    }
}

/// The end (exclusive) of the range of keys that start with `prefix`: the prefix with its last
/// byte below 0xff incremented. "\0" means "to the end", for an empty prefix or one of 0xff
/// bytes only.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_the_last_byte_below_0xff() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0".to_vec());
        assert_eq!(prefix_end(b"a\xff\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b""), vec![0]);
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn range_start_of_everything_is_nul() {
        assert_eq!(range_start(""), vec![0]);
        assert_eq!(range_start("/a"), b"/a".to_vec());
    }
}
