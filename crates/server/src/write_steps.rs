//! Write steps: asynchronous steps a stored collection may add around the registry's writes,
//! for objects that hold claims kept outside themselves (a Service's ClusterIPs and
//! NodePorts). They are kube-apiserver's genericregistry.Store `BeginCreate`, `BeginUpdate`
//! and `AfterDelete`: a begin step reserves what the object claims (and fills what the
//! server picks) once the object is prepared and valid, and the registry commits the
//! reservation when the write is stored or reverts it when the write fails.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use serde_json::Value;

/// The write steps of one stored collection, set on its registry
/// ([`Registry::set_write_steps`](crate::registry::Registry::set_write_steps)).
#[async_trait]
pub trait WriteSteps: Send + Sync + 'static {
    /// Before a new object is stored: reserves what it claims, filling in what the server
    /// assigns. A dry run checks without reserving.
    async fn begin_create(
        &self,
        object: &mut Value,
        dry_run: bool,
    ) -> Result<Box<dyn Reservation>, ApiError>;

    /// Before an update of the main resource is stored: reserves what the new object claims
    /// beyond the old one.
    async fn begin_update(
        &self,
        new: &mut Value,
        old: &Value,
        dry_run: bool,
    ) -> Result<Box<dyn Reservation>, ApiError>;

    /// After an object is gone from storage: releases what it claimed.
    async fn after_delete(&self, object: &Value);
}

/// What a begin hook reserved, settled once the write's outcome is known.
#[async_trait]
pub trait Reservation: Send {
    /// The write was stored: keep the new claims and release the ones it gave up.
    async fn commit(self: Box<Self>);
    /// The write failed or was a dry run: release the new claims.
    async fn revert(self: Box<Self>);
}

/// Settles `reservation`: committed when `stored`, reverted otherwise.
pub(crate) async fn settle(reservation: Option<Box<dyn Reservation>>, stored: bool) {
    match reservation {
        Some(reservation) if stored => reservation.commit().await,
        Some(reservation) => reservation.revert().await,
        None => {}
    }
}
