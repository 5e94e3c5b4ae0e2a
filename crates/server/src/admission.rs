//! Admission: plugins that see every write after authorization and before storage, and may
//! reject it, as kube-apiserver's admission chain does. Plugins run in the order they are
//! registered; the first rejection ends the request.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use serde_json::Value;

use crate::resource::ResourceDefinition;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

/// One write as admission plugins see it.
pub struct AdmissionRequest<'a> {
    pub operation: Operation,
    pub definition: &'a ResourceDefinition,
    /// The subresource written ("" for the resource itself).
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The object being written (create, update), in the stored version.
    pub object: Option<&'a Value>,
    /// The object before the write (update, delete).
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
}

/// An admission plugin.
#[async_trait]
pub trait AdmissionPlugin: Send + Sync + 'static {
    /// The plugin's name, as `--enable-admission-plugins` spells it.
    fn name(&self) -> &'static str;

    /// Rejects the write with the error the client gets, or lets it through.
    async fn admit(&self, request: &AdmissionRequest<'_>) -> Result<(), ApiError>;
}

/// Runs `plugins` in order on `request`.
pub async fn admit(
    plugins: &[std::sync::Arc<dyn AdmissionPlugin>],
    request: &AdmissionRequest<'_>,
) -> Result<(), ApiError> {
    for plugin in plugins {
        plugin.admit(request).await?;
    }
    Ok(())
}
