//! PersistentVolumeClaimResize (kubernetes/plugin/pkg/admission/storage/persistentvolume/
//! resize): a claim may grow only once bound, and only when its StorageClass allows volume
//! expansion.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::Value;

use kapi_apimachinery::Quantity;

/// The PersistentVolumeClaimResize admission plugin.
pub struct PersistentVolumeClaimResize {
    classes: Served,
}

impl PersistentVolumeClaimResize {
    /// Reads StorageClasses from the served `storageclasses` collection.
    pub fn new(classes: Served) -> PersistentVolumeClaimResize {
        PersistentVolumeClaimResize { classes }
    }
}

/// The storage a claim requests.
fn requested(claim: &Value) -> Option<Quantity> {
    Quantity::of_field(&claim["spec"]["resources"]["requests"]["storage"])
}

/// Why growing `old` into `new` is refused, if it is; `expandable(class)` says whether a
/// StorageClass allows volume expansion.
fn refusal(new: &Value, old: &Value, expandable: impl Fn(&str) -> bool) -> Option<&'static str> {
    let (Some(after), Some(before)) = (requested(new), requested(old)) else {
        return None;
    };
    if after <= before {
        return None;
    }
    if old["status"]["phase"] != "Bound" {
        return Some("Only bound persistent volume claims can be expanded");
    }
    let class = new["spec"]["storageClassName"].as_str().unwrap_or_default();
    let same_class = old["spec"]["storageClassName"].as_str().unwrap_or_default() == class;
    if class.is_empty() || !same_class || !expandable(class) {
        return Some(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        );
    }
    None
}

#[async_trait]
impl AdmissionPlugin for PersistentVolumeClaimResize {
    fn name(&self) -> &'static str {
        "PersistentVolumeClaimResize"
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        let is_claim = definition.group_version.group.is_empty()
            && definition.plural == "persistentvolumeclaims"
            && attributes.subresource.is_empty();
        let (true, Operation::Update, Some(new), Some(old)) =
            (is_claim, attributes.operation, object, old)
        else {
            return Ok(());
        };
        let expandable = |name: &str| {
            self.classes
                .cached("", name)
                .is_some_and(|class| class["allowVolumeExpansion"] == true)
        };
        match refusal(new, old, expandable) {
            None => Ok(()),
            Some(message) => Err(ApiError::forbidden(
                &definition.group_resource(),
                attributes.name,
                message,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(size: &str, class: &str, phase: &str) -> Value {
        json!({"spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}},
            "status": {"phase": phase}})
    }

    #[test]
    fn claims_grow_only_bound_and_expandable() {
        let expandable = |class: &str| class == "fast";
        let bound = claim("1Gi", "fast", "Bound");
        assert_eq!(
            refusal(&claim("2Gi", "fast", "Bound"), &bound, expandable),
            None
        );
        assert_eq!(
            refusal(&claim("1Gi", "fast", "Bound"), &bound, expandable),
            None
        );
        assert_eq!(
            refusal(
                &claim("2Gi", "fast", "Pending"),
                &claim("1Gi", "fast", "Pending"),
                expandable
            ),
            Some("Only bound persistent volume claims can be expanded")
        );
        let slow = claim("1Gi", "slow", "Bound");
        assert!(refusal(&claim("2Gi", "slow", "Bound"), &slow, expandable).is_some());
        assert!(
            refusal(
                &claim("2Gi", "", "Bound"),
                &claim("1Gi", "", "Bound"),
                expandable
            )
            .is_some()
        );
    }
}
