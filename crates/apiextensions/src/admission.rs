//! The admission step of the apiextensions server's own: no custom resource is created while
//! its CRD is terminating (its instances are being deleted), as upstream's crdHandler wraps
//! admission for creates then.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use kapi_server::registry::Item;
use serde_json::Value;

use crate::crd::access::is_condition_true;

/// Forbids creating custom resources of a terminating CRD.
pub(crate) struct ForbidCreateWhileTerminating {
    pub crds: Served,
}

#[async_trait]
impl AdmissionPlugin for ForbidCreateWhileTerminating {
    fn name(&self) -> &'static str {
        "ForbidCreateWhileTerminating"
    }

    async fn admit(
        &self,
        request: &Attributes<'_>,
        _object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = request.definition;
        if request.operation != Operation::Create
            || definition.group_version.group == "apiextensions.k8s.io"
        {
            return Ok(());
        }
        let name = format!("{}.{}", definition.plural, definition.group_version.group);
        let key = self.crds.registry.key("", &name);
        let (cached, _) = self.crds.registry.cacher().get(&key);
        let terminating = cached
            .and_then(|object| Item::from(&*object).decode().ok())
            .is_some_and(|crd| is_condition_true(&crd, "Terminating"));
        if terminating {
            return Err(ApiError::forbidden(
                &definition.group_resource(),
                request.name,
                "create not allowed while custom resource definition is terminating",
            ));
        }
        Ok(())
    }
}
