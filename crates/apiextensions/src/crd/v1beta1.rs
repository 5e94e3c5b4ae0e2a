//! CustomResourceDefinitions as kube-apiserver stores them: `apiextensions.k8s.io/v1beta1`
//! JSON (its storage codec is a legacy codec of v1beta1), read as v1 the way upstream's
//! decoder does it: v1beta1's defaults (`SetDefaults_CustomResourceDefinitionSpec`), then
//! the conversion through the internal type, which hands the spec's top-level validation,
//! subresources, printer columns and selectable fields to every version, moves the webhook
//! settings under `conversion.webhook`, and renames a column's `JSONPath` to `jsonPath`.

use serde_json::{Map, Value, json};

/// The v1 object of a stored v1beta1 CRD.
pub fn to_v1(mut crd: Value) -> Value {
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    if let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) {
        default_spec(spec);
        convert_spec(spec);
    }
    crd
}

/// v1beta1's defaults of a spec, as upstream's defaulting of what it decodes.
fn default_spec(spec: &mut Map<String, Value>) {
    spec.entry("scope").or_insert_with(|| json!("Namespaced"));
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str);
        let kind = kind.unwrap_or_default().to_string();
        if names.get("singular").is_none_or(|s| s.as_str() == Some("")) {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if names.get("listKind").is_none_or(|s| s.as_str() == Some("")) && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    let versions_empty = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if let (true, Some(version)) = (versions_empty, spec.get("version").cloned()) {
        spec.insert(
            "versions".into(),
            json!([{"name": version, "served": true, "storage": true}]),
        );
    }
    spec.entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    spec.entry("preserveUnknownFields").or_insert(json!(true));
}

/// The v1beta1 spec (defaulted) as v1's.
fn convert_spec(spec: &mut Map<String, Value>) {
    spec.remove("version");
    let validation = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let selectable = spec.remove("selectableFields");
    let versions = spec.get_mut("versions").and_then(Value::as_array_mut);
    for version in versions.into_iter().flatten() {
        let Some(version) = version.as_object_mut() else {
            continue;
        };
        let shared = [
            ("schema", &validation),
            ("subresources", &subresources),
            ("additionalPrinterColumns", &columns),
            ("selectableFields", &selectable),
        ];
        for (field, value) in shared {
            if let Some(value) = value.as_ref().filter(|v| !v.is_null()) {
                version.insert(field.into(), value.clone());
            }
        }
        if let Some(columns) = version
            .get_mut("additionalPrinterColumns")
            .and_then(Value::as_array_mut)
        {
            columns.iter_mut().for_each(rename_json_path);
        }
    }
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        let client_config = conversion.remove("webhookClientConfig");
        let review_versions = conversion.remove("conversionReviewVersions");
        if conversion.get("strategy") == Some(&json!("Webhook")) {
            let mut webhook = Map::new();
            if let Some(config) = client_config {
                webhook.insert("clientConfig".into(), config);
            }
            let versions = review_versions.unwrap_or_else(|| json!(["v1beta1"]));
            webhook.insert("conversionReviewVersions".into(), versions);
            conversion.insert("webhook".into(), Value::Object(webhook));
        }
    }
    // v1's field is a plain bool, left out when false.
    if spec.get("preserveUnknownFields") != Some(&json!(true)) {
        spec.remove("preserveUnknownFields");
    }
}

/// A printer column's v1beta1 `JSONPath` as v1's `jsonPath`.
fn rename_json_path(column: &mut Value) {
    if let Some(column) = column.as_object_mut()
        && let Some(path) = column.remove("JSONPath")
    {
        column.insert("jsonPath".into(), path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CRD as kube-apiserver 1.35 stores one created in v1 with one version: v1beta1,
    /// the version's schema, subresources and columns hoisted to the spec.
    #[test]
    fn upstream_v1beta1_storage_reads_as_v1() {
        let stored = json!({"kind": "CustomResourceDefinition",
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "metadata": {"name": "widgets.example.com", "generation": 1},
            "spec": {"group": "example.com", "version": "v1",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "scope": "Namespaced",
                "validation": {"openAPIV3Schema": {"type": "object"}},
                "subresources": {"status": {}},
                "versions": [{"name": "v1", "served": true, "storage": true}],
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}],
                "conversion": {"strategy": "None"},
                "preserveUnknownFields": false},
            "status": {"storedVersions": ["v1"]}});
        let v1 = to_v1(stored);
        assert_eq!(v1["apiVersion"], "apiextensions.k8s.io/v1");
        let spec = &v1["spec"];
        assert_eq!(spec.get("version"), None);
        assert_eq!(spec.get("validation"), None);
        assert_eq!(spec.get("preserveUnknownFields"), None);
        let version = &spec["versions"][0];
        assert_eq!(
            version["schema"],
            json!({"openAPIV3Schema": {"type": "object"}})
        );
        assert_eq!(version["subresources"], json!({"status": {}}));
        assert_eq!(
            version["additionalPrinterColumns"],
            json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}])
        );
        assert_eq!(v1["status"]["storedVersions"], json!(["v1"]));
    }

    #[test]
    fn v1beta1_defaults_and_webhooks_convert() {
        let stored = json!({"apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "version": "v2", "names": {"plural": "gadgets", "kind": "Gadget"},
                "conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://h/convert"}}}});
        let spec = to_v1(stored)["spec"].clone();
        assert_eq!(spec["scope"], "Namespaced");
        assert_eq!(spec["names"]["singular"], "gadget");
        assert_eq!(spec["names"]["listKind"], "GadgetList");
        assert_eq!(
            spec["versions"],
            json!([{"name": "v2", "served": true, "storage": true}])
        );
        assert_eq!(spec["preserveUnknownFields"], true);
        assert_eq!(
            spec["conversion"],
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://h/convert"},
                "conversionReviewVersions": ["v1beta1"]}})
        );
    }
}
