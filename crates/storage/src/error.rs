//! The storage error type: distinct cases for what the API layer maps to distinct Status
//! reasons (AlreadyExists, NotFound, Conflict, Gone/Expired, Timeout, InternalError).

use crate::{KeyValue, Revision};

/// The result of a storage call.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Why a storage call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// A create found the key already there.
    #[error("key {key} already exists")]
    KeyExists { key: String },

    /// The key does not exist.
    #[error("key {key} not found")]
    KeyNotFound { key: String },

    /// A compare-and-swap found another mod revision. `current` is the value now stored, so a
    /// retry loop need not read it again.
    #[error("key {key} has been modified (expected mod revision {expected})")]
    Conflict {
        key: String,
        expected: Revision,
        current: Box<KeyValue>,
    },

    /// The requested revision is older than the compacted revision; its history is gone.
    /// `compacted` is the compacted revision, or 0 where the backend does not report it (etcd
    /// reports it on watches only).
    #[error("revision {requested} has been compacted (oldest retained revision {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },

    /// The requested revision is newer than the store's current revision.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },

    /// A continue token that does not belong to this list, or is malformed.
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),

    /// An argument the store cannot accept (for example a revision with a continue token).
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// The backend cannot be reached or did not answer in time; the outcome of a write that
    /// fails this way is unknown.
    #[error("storage unavailable: {0}")]
    Unavailable(String),

    /// Stored data failed its checksum or does not decode: the message names what (the key
    /// and revision where known). It is never served.
    #[error("storage damaged: {0}")]
    Damaged(String),

    /// A value could not be decrypted or encrypted (encryption at rest: no key for it, a
    /// key that does not authenticate it): the message names the key, as kube-apiserver's
    /// `unable to transform key` does.
    #[error("{0}")]
    Transform(String),

    /// The backend failed in a way it should not (I/O error).
    #[error("storage internal error: {0}")]
    Internal(String),
}

impl StorageError {
    pub(crate) fn internal(err: impl std::fmt::Display) -> Self {
        StorageError::Internal(err.to_string())
    }
}
