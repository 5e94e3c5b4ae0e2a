//! The schemas the apiextensions handler decodes with: custom resources' from their CRDs
//! (pruned by their structural schemas, never refused for a field's type), the built-in
//! catalog's (kapi-api) for the CustomResourceDefinition kind itself.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_schema::KindSchema;
use kapi_server::endpoints::{self, ProtobufError, SchemaProvider};
use parking_lot::RwLock;
use serde_json::{Map, Value};

use crate::customresource::VersionSchema;

/// A served custom resource kind: (group, version, kind).
type KindKey = (String, String, String);

/// The schemas of the served custom resources, by (group, version, kind), kept by the CRD
/// controllers as they install and remove CRDs.
#[derive(Default)]
pub struct CrdSchemas {
    kinds: RwLock<HashMap<KindKey, Arc<VersionSchema>>>,
    /// The kinds each CRD installed, by CRD name.
    owned: RwLock<HashMap<String, Vec<KindKey>>>,
}

impl CrdSchemas {
    /// Records the schemas of `crd`'s served versions (replacing those it had).
    pub(crate) fn insert(
        &self,
        name: &str,
        crd: &Value,
        versions: HashMap<String, Arc<VersionSchema>>,
    ) {
        self.remove(name);
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let kind = crd["status"]["acceptedNames"]["kind"]
            .as_str()
            .unwrap_or_default();
        let mut kinds = self.kinds.write();
        let mut keys = Vec::new();
        for (version, schema) in versions {
            let key = (group.to_string(), version, kind.to_string());
            kinds.insert(key.clone(), schema);
            keys.push(key);
        }
        self.owned.write().insert(name.to_string(), keys);
    }

    /// Forgets the schemas of the CRD `name`.
    pub(crate) fn remove(&self, name: &str) {
        if let Some(keys) = self.owned.write().remove(name) {
            let mut kinds = self.kinds.write();
            for key in keys {
                kinds.remove(&key);
            }
        }
    }
}

impl SchemaProvider for CrdSchemas {
    fn kind_schema(&self, group: &str, version: &str, kind: &str) -> Option<KindSchema> {
        let key = (group.to_string(), version.to_string(), kind.to_string());
        match self.kinds.read().get(&key) {
            Some(schema) => Some(schema.kind.clone()),
            None => kapi_api::kind_schema(group, version, kind),
        }
    }

    fn definitions(&self) -> std::sync::Arc<Map<String, Value>> {
        kapi_api::definitions()
    }

    /// CustomResourceDefinitions (custom resources have no protobuf: their handlers are
    /// dynamic, which the server never serves in protobuf).
    fn serves_protobuf(&self, api_version: &str, kind: &str) -> bool {
        endpoints::table_serves_protobuf(api_version, kind)
    }

    fn decode_protobuf(&self, body: &[u8]) -> Result<Value, ProtobufError> {
        endpoints::decode_table_protobuf(body)
    }
}
