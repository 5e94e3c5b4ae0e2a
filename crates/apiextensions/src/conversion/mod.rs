//! Conversion between the versions of a CRD, as upstream's CR converters do it: `None`
//! rewrites only `apiVersion`; `Webhook` sends a ConversionReview to the CRD's webhook and
//! checks what comes back (count, apiVersion, kind, and metadata other than labels and
//! annotations unchanged).

mod webhook;

use std::sync::Arc;

use kapi_apimachinery::status::ApiError;
use kapi_server::resource::Converter;
use serde_json::Value;

pub use webhook::ServiceResolver;

/// The converter between `served_version` and the storage version of `crd`, or `None` when
/// no object can be in another version: the CRD stores and has only that version. Objects
/// stored before the storage version changed keep their version in storage, so even the
/// storage version's reads convert them (as upstream's storage codec converts every object
/// it decodes).
pub(crate) fn converter(
    crd: &Value,
    served_version: &str,
    resolver: Arc<dyn ServiceResolver>,
) -> Option<Arc<dyn Converter>> {
    let storage = crate::crd::access::storage_version(crd)?;
    let only = |list: &Value| {
        list.as_array()
            .into_iter()
            .flatten()
            .all(|v| v.as_str().or(v["name"].as_str()) == Some(storage))
    };
    let one_version = only(&crd["spec"]["versions"]) && only(&crd["status"]["storedVersions"]);
    if storage == served_version && one_version {
        return None;
    }
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let versions = Versions {
        served: format!("{group}/{served_version}"),
        stored: format!("{group}/{storage}"),
    };
    let conversion = &crd["spec"]["conversion"];
    match conversion["strategy"].as_str() {
        Some("Webhook") => {
            let kind = crd["status"]["acceptedNames"]["kind"]
                .as_str()
                .unwrap_or_default();
            let webhook = webhook::Webhook::new(&conversion["webhook"], kind, resolver);
            Some(Arc::new(WebhookConverter { versions, webhook }))
        }
        _ => Some(Arc::new(NoneConverter { versions })),
    }
}

/// The two apiVersions a converter moves objects between.
struct Versions {
    served: String,
    stored: String,
}

/// The `None` strategy: the same object under the other apiVersion.
struct NoneConverter {
    versions: Versions,
}

fn with_api_version(mut object: Value, api_version: &str) -> Value {
    if let Some(fields) = object.as_object_mut() {
        fields.insert("apiVersion".to_string(), Value::from(api_version));
    }
    object
}

impl Converter for NoneConverter {
    fn stored_form(&self, object: Value) -> Result<Value, ApiError> {
        Ok(with_api_version(object, &self.versions.stored))
    }

    fn served_form(&self, object: Value) -> Result<Value, ApiError> {
        Ok(with_api_version(object, &self.versions.served))
    }
}

/// The `Webhook` strategy.
struct WebhookConverter {
    versions: Versions,
    webhook: webhook::Webhook,
}

impl Converter for WebhookConverter {
    fn stored_form(&self, object: Value) -> Result<Value, ApiError> {
        self.webhook.convert_one(object, &self.versions.stored)
    }

    fn served_form(&self, object: Value) -> Result<Value, ApiError> {
        self.webhook.convert_one(object, &self.versions.served)
    }

    fn served_forms(&self, objects: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        self.webhook.convert_list(objects, &self.versions.served)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    pub(super) struct NoServices;

    #[async_trait::async_trait]
    impl ServiceResolver for NoServices {
        async fn resolve(&self, _: &str, _: &str, _: i32) -> Result<String, String> {
            Err("no services".into())
        }
    }

    fn crd(strategy: &str) -> Value {
        json!({"spec": {"group": "stable.example.com", "conversion": {"strategy": strategy},
            "versions": [{"name": "v1", "storage": true}, {"name": "v2", "storage": false}]},
            "status": {"acceptedNames": {"kind": "CronTab"}}})
    }

    #[test]
    fn none_rewrites_the_api_version_only() {
        let resolver: Arc<dyn ServiceResolver> = Arc::new(NoServices);
        let convert = converter(&crd("None"), "v2", resolver.clone()).expect("a converter");
        let stored = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "spec": {"a": 1}});
        let served = convert.served_form(stored.clone()).unwrap();
        assert_eq!(served["apiVersion"], "stable.example.com/v2");
        assert_eq!(served["spec"], stored["spec"]);
        assert_eq!(convert.stored_form(served).unwrap(), stored);
        // The storage version's reads convert objects stored in another version.
        let storage = converter(&crd("None"), "v1", resolver.clone()).expect("a converter");
        let older = json!({"apiVersion": "stable.example.com/v2", "kind": "CronTab"});
        assert_eq!(
            storage.served_form(older).unwrap()["apiVersion"],
            "stable.example.com/v1"
        );
        let mut single = crd("None");
        single["spec"]["versions"] = json!([{"name": "v1", "storage": true}]);
        single["status"]["storedVersions"] = json!(["v1"]);
        assert!(converter(&single, "v1", resolver).is_none());
    }
}
