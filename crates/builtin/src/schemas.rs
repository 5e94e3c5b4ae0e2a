//! The schemas of the built-in kinds as the server of the built-in API is given them:
//! kapi-api's catalog for decoding, strategic merge patch and OpenAPI, and kapi-protobuf's
//! table for protobuf request bodies.

use kapi_schema::KindSchema;
use kapi_server::endpoints::{self, ProtobufError, SchemaProvider};
use serde_json::{Map, Value};

/// The schemas and protobuf decoding of the built-in kinds of Kubernetes 1.35.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinSchemas;

impl SchemaProvider for BuiltinSchemas {
    fn kind_schema(&self, group: &str, version: &str, kind: &str) -> Option<KindSchema> {
        kapi_api::kind_schema(group, version, kind)
    }

    fn definitions(&self) -> std::sync::Arc<Map<String, Value>> {
        kapi_api::definitions()
    }

    fn serves_protobuf(&self, api_version: &str, kind: &str) -> bool {
        endpoints::table_serves_protobuf(api_version, kind)
    }

    fn decode_protobuf(&self, body: &[u8]) -> Result<Value, ProtobufError> {
        endpoints::decode_table_protobuf(body)
    }
}
