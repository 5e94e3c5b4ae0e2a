//! A sample extension API server built on kapi-server and kapi-storage alone, as upstream's
//! k8s.io/sample-apiserver is built on k8s.io/apiserver: the `wardle.example.com/v1alpha1`
//! group with namespaced Flunders and cluster-scoped Fischers.
//!
//! It shows what a server of its own kinds gives the generic server: resource definitions
//! with their strategies ([`definitions`]), the schemas of its kinds ([`WardleSchemas`]),
//! its admission plugin (BanFlunder), and a store; [`delegated`] authenticates and
//! authorizes through the API server that aggregates it. Everything else (REST endpoints, watch, discovery, OpenAPI, field
//! management, the handler chain) is the generic server's.

pub mod delegated;

use std::sync::{Arc, OnceLock};

use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::apimachinery::schema::{GroupVersion, GroupVersionKind};
use kapi_server::apimachinery::status::ApiError;
use kapi_server::apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::endpoints::{SchemaProvider, Served};
use kapi_server::resource::{
    ApiServicePriority, Capabilities, ResourceDefinition, StorageDefinition, Strategy, Subresource,
    SubresourceKind, Verbs,
};
use kapi_server::schema::{Catalog, KindSchema};
use kapi_server::{ApiHandler, GenericApiServer, Route, ServerConfig, ServerError};
use kapi_storage::Store;
use serde_json::{Map, Value, json};

/// The group this server serves.
pub const GROUP: &str = "wardle.example.com";
/// Its one version.
pub const VERSION: &str = "v1alpha1";

/// The kinds a Flunder's `spec.reference` may name.
const REFERENCE_TYPES: [&str; 2] = ["Flunder", "Fischer"];

/// The server: the wardle group's endpoints on `store`, under the key prefix `prefix`.
pub fn server(
    config: ServerConfig,
    store: Arc<dyn Store>,
    prefix: &str,
) -> Result<GenericApiServer, ServerError> {
    GenericApiServer::new(config, Route::new(api_handler(store, prefix)))
}

/// The wardle group's endpoints, discovery and OpenAPI, with its admission plugin.
pub fn api_handler(store: Arc<dyn Store>, prefix: &str) -> ApiHandler {
    let handler = ApiHandler::builder(store, prefix)
        .resources(definitions())
        .schemas(Arc::new(WardleSchemas))
        .build();
    if let Some(fischers) = handler.served(GROUP, VERSION, "fischers") {
        handler.set_admission(vec![Arc::new(BanFlunder { fischers })]);
    }
    handler
}

/// The sample server's admission plugin (upstream's BanFlunder): a Flunder may not be
/// created with a name some Fischer lists in `disallowedFlunders`.
struct BanFlunder {
    fischers: Served,
}

#[async_trait::async_trait]
impl AdmissionPlugin for BanFlunder {
    fn name(&self) -> &'static str {
        "BanFlunder"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        if attributes.operation != Operation::Create || definition.kind != "Flunder" {
            return Ok(());
        }
        let name = object
            .map_or("", |o| kapi_server::object::name(o))
            .to_string();
        let banned = self.fischers.cached_list(None).iter().any(|fischer| {
            let names = fischer["disallowedFlunders"].as_array();
            names.into_iter().flatten().any(|n| n == name.as_str())
        });
        match banned {
            true => Err(ApiError::forbidden(
                &definition.group_resource(),
                name,
                "this name may not be used, please change the resource name",
            )),
            false => Ok(()),
        }
    }
}

/// Flunders (namespaced, with a status subresource) and Fischers (cluster-scoped).
pub fn definitions() -> Vec<ResourceDefinition> {
    vec![
        definition("Flunder", "flunders", true, Arc::new(FlunderStrategy)),
        definition("Fischer", "fischers", false, Arc::new(FischerStrategy)),
    ]
}

fn definition(
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    strategy: Arc<dyn Strategy>,
) -> ResourceDefinition {
    let subresources = match namespaced {
        true => vec![Subresource {
            name: "status",
            kind: SubresourceKind::Status,
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        }],
        false => Vec::new(),
    };
    ResourceDefinition {
        group_version: GroupVersion::new(GROUP, VERSION),
        kind: kind.into(),
        list_kind: format!("{kind}List").into(),
        plural: plural.into(),
        singular: kind.to_lowercase().into(),
        namespaced,
        short_names: Vec::new(),
        categories: Vec::new(),
        verbs: Verbs::ALL,
        subresources,
        table: None,
        strategy,
        storage: Arc::new(StorageDefinition {
            key_prefix: plural.into(),
            storage_version: GroupVersionKind::new(GROUP, VERSION, kind),
            namespaced,
            ttl: None,
            earlier_versions: None,
        }),
        converter: None,
        deprecation: None,
        capabilities: Capabilities::TYPED,
        priority: ApiServicePriority::DEFAULT,
    }
}

/// Flunders: `spec.reference` names a Flunder or Fischer of `spec.referenceType` (both or
/// neither), as the sample-apiserver validates them; `status` is the status subresource's.
struct FlunderStrategy;

impl Strategy for FlunderStrategy {
    fn prepare_for_create(&self, object: &mut Value) {
        if let Some(object) = object.as_object_mut() {
            object.remove("status");
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(new) = new.as_object_mut() {
                    new.remove("status");
                }
            }
        }
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let spec = Path::root("spec");
        let reference = object["spec"]["reference"].as_str().unwrap_or_default();
        let reference_type = object["spec"]["referenceType"].as_str().unwrap_or_default();
        let mut errors = FieldErrors::new();
        match (reference.is_empty(), reference_type) {
            (true, "") => {}
            (false, "") => errors.push(FieldError::required(
                &spec.child("referenceType"),
                "referenceType is required if reference is set",
            )),
            (_, kind) if !REFERENCE_TYPES.contains(&kind) => {
                errors.push(FieldError::not_supported(
                    &spec.child("referenceType"),
                    Value::from(kind),
                    REFERENCE_TYPES,
                ));
            }
            (true, _) => errors.push(FieldError::required(
                &spec.child("reference"),
                "reference is required if referenceType is set",
            )),
            _ => {}
        }
        errors
    }
}

/// Fischers: `disallowedFlunders`, a set of names, no name twice.
struct FischerStrategy;

impl Strategy for FischerStrategy {
    fn validate(&self, object: &Value) -> FieldErrors {
        let path = Path::root("disallowedFlunders");
        let mut errors = FieldErrors::new();
        let names = object["disallowedFlunders"]
            .as_array()
            .into_iter()
            .flatten();
        let mut seen = Vec::new();
        for (index, name) in names.enumerate() {
            if seen.contains(&name) {
                errors.push(FieldError::duplicate(&path.index(index), name.clone()));
            }
            seen.push(name);
        }
        errors
    }
}

/// The schemas of Flunders and Fischers, in OpenAPI v2 form, as a typed server's generated
/// OpenAPI would give them.
pub struct WardleSchemas;

impl WardleSchemas {
    fn catalog() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| Catalog::from_definitions(&Self::json()))
    }

    /// The wardle definitions in OpenAPI v2 form, made once.
    fn json() -> Arc<Map<String, Value>> {
        static JSON: OnceLock<Arc<Map<String, Value>>> = OnceLock::new();
        JSON.get_or_init(|| Arc::new(wardle_definitions())).clone()
    }
}

impl SchemaProvider for WardleSchemas {
    fn kind_schema(&self, group: &str, version: &str, kind: &str) -> Option<KindSchema> {
        KindSchema::of_kind(Self::catalog(), group, version, kind)
    }

    fn definitions(&self) -> Arc<Map<String, Value>> {
        Self::json()
    }
}

/// The definition name of a wardle type.
fn name(kind: &str) -> String {
    format!("com.example.wardle.{VERSION}.{kind}")
}

fn wardle_definitions() -> Map<String, Value> {
    let object_meta =
        json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"});
    let list_meta = json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"});
    let string = json!({"type": "string"});
    let typed = |kind: &str, properties: Value| {
        json!({
            "type": "object",
            "properties": properties,
            "x-kubernetes-group-version-kind": [{"group": GROUP, "version": VERSION, "kind": kind}],
        })
    };
    let list = |item: &str| {
        typed(
            &format!("{item}List"),
            json!({
                "apiVersion": string, "kind": string, "metadata": list_meta,
                "items": {"type": "array", "items": {"$ref": format!("#/definitions/{}", name(item))}},
            }),
        )
    };
    let mut definitions = Map::new();
    definitions.insert(
        name("Flunder"),
        typed(
            "Flunder",
            json!({
                "apiVersion": string, "kind": string, "metadata": object_meta,
                "spec": {"$ref": format!("#/definitions/{}", name("FlunderSpec"))},
                "status": {"type": "object", "properties": {"phase": string}},
            }),
        ),
    );
    definitions.insert(
        name("FlunderSpec"),
        json!({"type": "object", "properties": {"reference": string, "referenceType": string}}),
    );
    definitions.insert(
        name("Fischer"),
        typed(
            "Fischer",
            json!({
                "apiVersion": string, "kind": string, "metadata": object_meta,
                "disallowedFlunders": {"type": "array", "items": string, "x-kubernetes-list-type": "set"},
            }),
        ),
    );
    definitions.insert(name("FlunderList"), list("Flunder"));
    definitions.insert(name("FischerList"), list("Fischer"));
    definitions
}
