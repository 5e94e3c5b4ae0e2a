//! StorageObjectInUseProtection (kubernetes/plugin/pkg/admission/storage/
//! storageobjectinuseprotection): new PersistentVolumeClaims and PersistentVolumes get the
//! `kubernetes.io/pvc-protection` and `kubernetes.io/pv-protection` finalizers, so that
//! deleting one in use waits until it is no longer used. The finalizers are lifted by the
//! protection controllers of kapi-builtin's protection module.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_builtin::{PV_PROTECTION, PVC_PROTECTION};
use kapi_server::admission::{AdmissionPlugin, Attributes};
use serde_json::{Value, json};

/// The StorageObjectInUseProtection admission plugin.
pub struct StorageObjectInUseProtection;

/// Adds `finalizer` to the object's finalizers unless it is there.
fn add_finalizer(object: &mut Value, finalizer: &str) {
    let finalizers = &mut object["metadata"]["finalizers"];
    match finalizers.as_array_mut() {
        Some(list) if list.iter().any(|f| f == finalizer) => {}
        Some(list) => list.push(json!(finalizer)),
        None => *finalizers = json!([finalizer]),
    }
}

#[async_trait]
impl AdmissionPlugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let plural: &str = &attributes.definition.plural;
        let finalizer = match plural {
            "persistentvolumeclaims" => PVC_PROTECTION,
            "persistentvolumes" => PV_PROTECTION,
            _ => return Ok(()),
        };
        if let Some(created) = super::created(attributes, ("", plural), object) {
            add_finalizer(created, finalizer);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finalizer_is_added_once() {
        let mut claim = json!({"metadata": {"finalizers": ["other"]}});
        add_finalizer(&mut claim, PVC_PROTECTION);
        add_finalizer(&mut claim, PVC_PROTECTION);
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!(["other", PVC_PROTECTION])
        );
        let mut volume = json!({"metadata": {}});
        add_finalizer(&mut volume, PV_PROTECTION);
        assert_eq!(volume["metadata"]["finalizers"], json!([PV_PROTECTION]));
    }
}
