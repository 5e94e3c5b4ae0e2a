//! The built-in API of Kubernetes 1.35 as schemas, the role k8s.io/api and its generated
//! OpenAPI play upstream: every built-in definition, with upstream's structure, descriptions
//! and Kubernetes extensions, plus the XList kinds. [`kind_schema`] is a built-in kind's
//! schema for decoding, managed fields and strategic merge patch, resolved when the kind is
//! first asked for; [`api_service_priority`] where a built-in group version sorts in
//! discovery.
//!
//! The definitions are `definitions.json`, made ahead of time by `src/generate.rs` (a test module) from
//! k8s-openapi's `JsonSchema` implementations with upstream's extensions laid over them, so
//! that a server parses them rather than running the generator at every start.
//!
//! The generic server knows nothing of these: whoever assembles a server of built-in kinds
//! gives it their schemas.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::{Map, Value};

#[cfg(test)]
mod generate;
mod kinds;
mod priorities;

pub use kinds::kind_schema;
pub use priorities::api_service_priority;

/// Every built-in definition in OpenAPI v2 form, one per line (made by `src/generate.rs`).
const DEFINITIONS: &str = include_str!("definitions.json");

/// Every built-in definition without its descriptions (made by `src/generate.rs` with
/// `definitions.json`), one per line: a quarter of its size, and all the kinds' catalogs
/// read.
const STRUCTURE: &str = include_str!("structure.json");

/// Every built-in definition in OpenAPI v2 form with upstream's extensions, as
/// `/openapi/v2` serves them. Parsed when asked for and shared while anyone holds it: the
/// parsed map takes about 5 MB, and only the OpenAPI documents and new CRD schemas, built
/// now and then, read it (a parse takes a few milliseconds).
pub fn definitions() -> Arc<Map<String, Value>> {
    static PARSED: Mutex<Weak<Map<String, Value>>> = Mutex::new(Weak::new());
    let mut parsed = PARSED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(definitions) = parsed.upgrade() {
        return definitions;
    }
    let definitions = Arc::new(parse_definitions());
    *parsed = Arc::downgrade(&definitions);
    definitions
}

/// The built-in definitions, parsed.
fn parse_definitions() -> Map<String, Value> {
    serde_json::from_str(DEFINITIONS).expect("definitions.json is a JSON object")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_schema::{Catalog, ListType, MapType, NodeType};
    use std::sync::OnceLock;
    use std::time::Instant;

    /// Every built-in definition in one catalog, as the kinds' catalogs are made.
    pub(crate) fn whole_catalog() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| {
            let structure: Map<String, Value> = serde_json::from_str(STRUCTURE).unwrap();
            Catalog::from_definitions(&structure)
        })
    }

    #[test]
    fn every_upstream_definition_is_built() {
        let start = Instant::now();
        let catalog = whole_catalog();
        eprintln!("built-in catalog built in {:?}", start.elapsed());
        let defs = crate::definitions();
        assert_eq!(defs.len(), 735);
        assert!(defs.keys().all(|name| catalog.definition(name).is_some()));
        assert!(defs.values().all(|d| d.get("type").is_some()
            || d.get("properties").is_some()
            || d.get("description").is_some()));
        // Shared while held.
        assert!(Arc::ptr_eq(&defs, &crate::definitions()));
    }

    #[test]
    fn json_schema_props_have_their_default() {
        let catalog = whole_catalog();
        let props = catalog
            .definition("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
            .expect("JSONSchemaProps");
        let keys: Vec<&str> = props.properties().map(|(k, _)| k).collect();
        assert!(props.property("default").is_some(), "{keys:?}");
    }

    #[test]
    fn kinds_and_lists_are_found_by_group_version_kind() {
        let catalog = whole_catalog();
        let deployment = catalog.kind("apps", "v1", "Deployment").unwrap();
        assert_eq!(
            deployment.definition_name(),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        let list = catalog.kind("apps", "v1", "DeploymentList").unwrap();
        let items = list.property("items").unwrap().items().unwrap();
        assert_eq!(
            items.definition_name(),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        let meta = list.property("metadata").unwrap();
        assert_eq!(meta.definition_name(), Some(generate::LIST_META));
        assert!(catalog.kind("", "v1", "ConfigMapList").is_some());
        assert!(catalog.kind("", "v1", "Namespace").is_some());
    }

    #[test]
    fn pod_spec_carries_upstream_extensions() {
        let catalog = whole_catalog();
        let spec = catalog.definition("io.k8s.api.core.v1.PodSpec").unwrap();
        let containers = spec.property("containers").unwrap();
        assert_eq!(containers.patch_strategy(), Some("merge"));
        assert_eq!(containers.patch_merge_key(), Some("name"));
        assert_eq!(containers.list_type(), ListType::Map(vec!["name".into()]));
        let ports = containers.items().unwrap().property("ports").unwrap();
        assert_eq!(ports.patch_merge_key(), Some("containerPort"));
        assert_eq!(
            spec.property("nodeSelector").unwrap().map_type(),
            MapType::Atomic
        );
        let selector = catalog
            .definition("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
            .unwrap();
        assert_eq!(selector.map_type(), MapType::Atomic);
    }

    #[test]
    fn special_types_have_upstream_shapes() {
        let catalog = whole_catalog();
        let port = catalog
            .definition("io.k8s.api.core.v1.ContainerPort")
            .unwrap();
        let replicas = catalog
            .definition("io.k8s.api.apps.v1.DeploymentSpec")
            .and_then(|s| s.property("replicas"))
            .unwrap();
        assert_eq!(replicas.format(), Some("int32"));
        assert_eq!(
            port.property("containerPort").unwrap().node_type(),
            NodeType::Integer
        );
        let probe = catalog
            .definition("io.k8s.api.core.v1.HTTPGetAction")
            .and_then(|s| s.property("port"))
            .unwrap();
        assert_eq!(probe.node_type(), NodeType::IntOrString);
        let defs = crate::definitions();
        assert_eq!(
            defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"],
            "int-or-string"
        );
        assert_eq!(
            defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"],
            "string"
        );
        let raw = catalog
            .definition("io.k8s.apimachinery.pkg.runtime.RawExtension")
            .unwrap();
        assert!(raw.preserves_unknown_fields());
    }
}
