//! DefaultStorageClass and DefaultIngressClass (kubernetes/plugin/pkg/admission/storage/
//! storageclass/setdefault and network/defaultingressclass): a new PersistentVolumeClaim or
//! Ingress that names no class gets the default one: the class annotated
//! `<annotation>: "true"`, the newest when several are.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes};
use kapi_server::endpoints::Served;
use serde_json::{Value, json};

/// One of the two plugins.
pub struct DefaultClass {
    name: &'static str,
    /// The group and plural of the objects it defaults.
    target: (&'static str, &'static str),
    /// The field of their spec naming the class.
    field: &'static str,
    annotation: &'static str,
    classes: Served,
}

impl DefaultClass {
    /// DefaultStorageClass over the served `storageclasses`.
    pub fn storage(classes: Served) -> DefaultClass {
        DefaultClass {
            name: "DefaultStorageClass",
            target: ("", "persistentvolumeclaims"),
            field: "storageClassName",
            annotation: "storageclass.kubernetes.io/is-default-class",
            classes,
        }
    }

    /// DefaultIngressClass over the served `ingressclasses`.
    pub fn ingress(classes: Served) -> DefaultClass {
        DefaultClass {
            name: "DefaultIngressClass",
            target: ("networking.k8s.io", "ingresses"),
            field: "ingressClassName",
            annotation: "ingressclass.kubernetes.io/is-default-class",
            classes,
        }
    }

    /// The default class's name: the newest class annotated as default.
    fn default_class(&self) -> Option<String> {
        self.classes
            .cached_list(None)
            .into_iter()
            .filter(|class| class["metadata"]["annotations"][self.annotation] == "true")
            .max_by_key(|class| {
                class["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .and_then(|class| class["metadata"]["name"].as_str().map(str::to_string))
    }
}

#[async_trait]
impl AdmissionPlugin for DefaultClass {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(object) = super::created(attributes, self.target, object) else {
            return Ok(());
        };
        if object["spec"].get(self.field).is_some_and(|v| !v.is_null()) {
            return Ok(());
        }
        if let Some(class) = self.default_class() {
            object["spec"][self.field] = json!(class);
        }
        Ok(())
    }
}
