//! Admission: plugins that see every write after authorization, as kube-apiserver's admission
//! chain does. A write passes two phases, each running the plugins in their registered order:
//!
//! - **mutating** ([`AdmissionPlugin::admit`]): on the decoded (or patched) object before the
//!   registry prepares and validates it; a plugin may change the object or reject the write;
//! - **validating** ([`AdmissionPlugin::validate`]): on the prepared, valid object just
//!   before it is stored; a plugin may only reject.
//!
//! The registry runs both phases inside its write (an update's phases see the object it is
//! about to replace, and run again when a conflict makes it retry), through the
//! [`WriteAdmission`] the request's handler gives it: [`Admission`] binds the plugins to one
//! request's [`Attributes`]. The first rejection ends the request with the plugin's error.

use crate::audit::AuditAnnotations;
use std::sync::Arc;

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use serde_json::Value;

use crate::authn::UserInfo;
use crate::object;
use crate::resource::ResourceDefinition;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// The operation as AdmissionReview and ValidatingAdmissionPolicy spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// The warnings of a request, sent as `Warning` headers with its response (each once).
#[derive(Debug, Default)]
pub struct Warnings(parking_lot::Mutex<Vec<String>>);

impl Warnings {
    /// Warnings that start with `initial` (e.g. a deprecated version's).
    pub fn new(initial: impl IntoIterator<Item = String>) -> Warnings {
        Warnings(parking_lot::Mutex::new(initial.into_iter().collect()))
    }

    /// Adds a warning unless the request has it already.
    pub fn add(&self, warning: impl Into<String>) {
        let warning = warning.into();
        let mut all = self.0.lock();
        if !all.contains(&warning) {
            all.push(warning);
        }
    }

    /// The warnings so far, in the order they were added.
    pub fn all(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

/// What a plugin knows of a write besides the objects (upstream's `admission.Attributes`).
/// Objects are in the resource's stored form; [`ResourceDefinition::served_form`] gives the
/// version the request was made in.
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    pub operation: Operation,
    /// The resource written: its group, version, kind, plural and scope.
    pub definition: &'a ResourceDefinition,
    /// The subresource written ("" for the resource itself).
    pub subresource: &'a str,
    pub namespace: &'a str,
    /// The object's name; empty for a create that generates it.
    pub name: &'a str,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    /// The write's options as the request gave them (without kind and apiVersion): a
    /// create's or update's `dryRun`, `fieldManager` and `fieldValidation`, a delete's
    /// DeleteOptions. Webhooks receive them as the review's `options`.
    pub options: &'a serde_json::Value,
    /// Where a plugin adds warnings for the client (ValidatingAdmissionPolicy's Warn action,
    /// webhooks' warnings).
    pub warnings: &'a Warnings,
    /// Where a plugin adds audit annotations (webhooks' and policies' auditAnnotations,
    /// PodSecurity's audit level).
    pub audit: &'a AuditAnnotations,
}

/// An admission plugin. It implements the phases it takes part in; the other is a no-op.
#[async_trait]
pub trait AdmissionPlugin: Send + Sync + 'static {
    /// The plugin's name, as `--enable-admission-plugins` spells it.
    fn name(&self) -> &'static str;

    /// The mutating phase: may change `object` (the new object of a create or update; `None`
    /// for delete and connect) or reject the write. `old` is the stored object of an update
    /// or delete.
    async fn admit(
        &self,
        _attributes: &Attributes<'_>,
        _object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// The validating phase: may reject the write, not change it.
    async fn validate(
        &self,
        _attributes: &Attributes<'_>,
        _object: Option<&Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Admission as the registry runs it within a write. The registry says which operation the
/// write turned out to be (an update of a missing object creates it) and passes the objects.
#[async_trait]
pub trait WriteAdmission: Send + Sync {
    /// The mutating phase on a new (created or updated) object.
    async fn mutate(
        &self,
        operation: Operation,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError>;

    /// The mutating phase of a delete, on the stored object (which it cannot change; a
    /// webhook's patch is refused).
    async fn mutate_delete(&self, _old: &Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// The validating phase, on the new object (none for a delete) and the stored one.
    async fn validate(
        &self,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError>;
}

/// The admission plugins of a server bound to one request.
pub struct Admission<'a> {
    pub plugins: &'a [Arc<dyn AdmissionPlugin>],
    /// The request's attributes; the operation and name are set per call from the write.
    pub attributes: Attributes<'a>,
}

impl Admission<'_> {
    /// The attributes of `operation` on `object` (its name when the request had none).
    fn attributes_for<'b>(
        &'b self,
        operation: Operation,
        object: Option<&'b Value>,
    ) -> Attributes<'b> {
        let mut attributes = self.attributes;
        attributes.operation = operation;
        if attributes.name.is_empty()
            && let Some(object) = object
        {
            attributes.name = object::name(object);
        }
        attributes
    }
}

#[async_trait]
impl WriteAdmission for Admission<'_> {
    async fn mutate(
        &self,
        operation: Operation,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let name = object::name(object).to_string();
        let mut attributes = self.attributes_for(operation, None);
        if attributes.name.is_empty() {
            attributes.name = &name;
        }
        for plugin in self.plugins {
            plugin.admit(&attributes, Some(object), old).await?;
        }
        Ok(())
    }

    async fn mutate_delete(&self, old: &Value) -> Result<(), ApiError> {
        let attributes = self.attributes_for(Operation::Delete, Some(old));
        for plugin in self.plugins {
            plugin.admit(&attributes, None, Some(old)).await?;
        }
        Ok(())
    }

    async fn validate(
        &self,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let attributes = self.attributes_for(operation, object.or(old));
        for plugin in self.plugins {
            plugin.validate(&attributes, object, old).await?;
        }
        Ok(())
    }
}
