//! kube-apiserver's GuaranteedUpdate: read, transform, compare-and-swap, retry on conflict.

use std::sync::Arc;

use bytes::Bytes;

use crate::{KeyValue, Result, StorageError, Store};

/// Applies `try_update` to the current value of `key` and writes the result with a
/// compare-and-swap on the mod revision it read, retrying with the newer value until the
/// write lands. `try_update` gets `None` when the key does not exist; the result is then
/// created. It may fail (for example with [`StorageError::KeyNotFound`] where creating is not
/// allowed) and so end the loop.
///
/// `cached` is a value the caller already has (from a watch cache); it is tried first and
/// corrected by the conflict if stale. When `try_update` returns the bytes already stored,
/// nothing is written and the stored value is returned, as kube-apiserver does.
pub async fn guaranteed_update<S, F>(
    store: &S,
    key: &str,
    cached: Option<KeyValue>,
    mut try_update: F,
) -> Result<KeyValue>
where
    S: Store + ?Sized,
    F: FnMut(Option<&KeyValue>) -> Result<Bytes>,
{
    let mut current = match cached {
        Some(kv) => Some(kv),
        None => store.get(key, None).await?.kv,
    };
    loop {
        let value = try_update(current.as_ref())?;
        let written = match &current {
            Some(kv) if kv.value == value => return Ok(kv.clone()),
            Some(kv) => store.update(key, value.clone(), kv.mod_revision).await,
            None => store.create(key, value.clone()).await,
        };
        match written {
            Ok(revision) => {
                let create_revision = current.as_ref().map_or(revision, |kv| kv.create_revision);
                return Ok(KeyValue {
                    key: Arc::from(key),
                    value,
                    create_revision,
                    mod_revision: revision,
                });
            }
            Err(StorageError::Conflict { current: now, .. }) => current = Some(*now),
            Err(StorageError::KeyExists { .. } | StorageError::KeyNotFound { .. }) => {
                current = store.get(key, None).await?.kv;
            }
            Err(err) => return Err(err),
        }
    }
}
