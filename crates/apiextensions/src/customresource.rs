//! The served definitions of a CRD's custom resources: one [`ResourceDefinition`] per served
//! version over one stored collection, driven by the CRD (names, scope, subresources,
//! printer columns, selectable fields) and its structural schemas, as upstream's crdHandler
//! builds a crdInfo per CRD.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_apimachinery::schema::{GroupVersion, GroupVersionKind};
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_schema::{Catalog, KindSchema};
use kapi_server::object;
use kapi_server::resource::{
    ApiServicePriority, Capabilities, Converter, Name, ResourceDefinition, ScalePaths,
    ScaleSelector, StorageDefinition, Strategy, Subresource, SubresourceKind, Verbs,
};
use serde_json::{Map, Value};

use crate::cel;
use crate::conversion::{self, ServiceResolver};
use crate::crd::access::{CrdNames, served_versions, storage_version};
use crate::printer;
use crate::schema::{self as structural, Structural};

/// What a custom resource's version needs at run time: its schema in its three uses.
pub(crate) struct VersionSchema {
    pub structural: Structural,
    pub rules: cel::Validator,
    /// The schema as the decoder and the field manager navigate it.
    pub kind: KindSchema,
}

/// Everything served for one CRD: the definitions to install, the OpenAPI definitions of
/// their kinds, and the schemas by version for decoding.
pub(crate) struct CustomResources {
    pub definitions: Vec<ResourceDefinition>,
    pub openapi: Map<String, Value>,
    pub schemas: HashMap<String, Arc<VersionSchema>>,
}

/// Builds what `crd` serves. Fails (with the reason, for the CRD's status) if one of its
/// schemas cannot be used.
pub(crate) fn build(
    crd: &Value,
    resolver: Arc<dyn ServiceResolver>,
) -> Result<CustomResources, String> {
    let names = CrdNames::accepted(crd);
    let storage_version = storage_version(crd).ok_or("no storage version")?;
    let namespaced = crd["spec"]["scope"].as_str() == Some("Namespaced");
    let storage = Arc::new(StorageDefinition {
        key_prefix: format!("{}/{}", names.group, names.plural).into(),
        storage_version: GroupVersionKind::new(names.group.clone(), storage_version, &names.kind),
        namespaced,
        ttl: None,
        earlier_versions: None,
    });
    let mut built = CustomResources {
        definitions: Vec::new(),
        openapi: Map::new(),
        schemas: HashMap::new(),
    };
    for version in served_versions(crd) {
        let name = version["name"].as_str().unwrap_or_default();
        let schema = Arc::new(version_schema(crd, version)?);
        let kinds = (&*names.kind, &*names.list_kind, &*names.plural);
        let published = &version["schema"]["openAPIV3Schema"];
        let published = published.is_object().then_some(published);
        built.openapi.extend(kapi_server::openapi::kind_definitions(
            &names.group,
            name,
            kinds,
            published,
            &selectable_paths(version),
        ));
        let served = ServedVersion {
            names: &names,
            version,
            storage: storage.clone(),
            schema: schema.clone(),
        };
        built
            .definitions
            .push(served.definition(crd, resolver.clone()));
        built.schemas.insert(name.to_string(), schema);
    }
    Ok(built)
}

/// The schema of one version (the CRD's top-level `spec.validation` does not exist in v1:
/// every version has its own).
fn version_schema(crd: &Value, version: &Value) -> Result<VersionSchema, String> {
    let schema = &version["schema"]["openAPIV3Schema"];
    let schema = if schema.is_object() {
        schema.clone()
    } else {
        serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    };
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let structural = Structural::new(&schema)
        .map_err(|errors| format!("the schema of {name} is not structural: {errors}"))?;
    let rules = cel::Validator::compile(&schema, &Path::root("openAPIV3Schema"))
        .map_err(|errors| format!("the rules of {name} do not compile: {errors}"))?;
    let pruning = Arc::new(Structural::new(&schema).map_err(|errors| errors.to_string())?);
    let pruner: kapi_schema::Pruner =
        Arc::new(move |object: &mut Value| structural::prune(object, &pruning));
    let kind = field_schema(crd, version, &schema, pruner)
        .ok_or_else(|| format!("the schema of {name} has no kind"))?;
    Ok(VersionSchema {
        structural,
        rules,
        kind,
    })
}

/// The JSON paths of a version's `selectableFields`.
fn selectable_paths(version: &Value) -> Vec<String> {
    let fields = version["selectableFields"].as_array().into_iter().flatten();
    let paths = fields.filter_map(|field| field["jsonPath"].as_str());
    paths.map(str::to_string).collect()
}

/// The schema the decoder and the field manager navigate: the published kind definition
/// (the version's schema with apiVersion, kind and ObjectMeta), over the meta/v1 definitions.
fn field_schema(
    crd: &Value,
    version: &Value,
    schema: &Value,
    pruner: kapi_schema::Pruner,
) -> Option<KindSchema> {
    let names = CrdNames::accepted(crd);
    let version = version["name"].as_str().unwrap_or_default();
    let kinds = (&*names.kind, &*names.list_kind, &*names.plural);
    let mut definitions =
        kapi_server::openapi::kind_definitions(&names.group, version, kinds, Some(schema), &[]);
    add_referenced(&mut definitions, &kapi_api::definitions());
    let name = kapi_server::openapi::definition_name(&names.group, version, &names.kind);
    let catalog = Arc::new(Catalog::from_definitions(&definitions));
    KindSchema::untyped(catalog, &name, pruner)
}

/// Adds to `definitions` the definitions of `builtin` they refer to (`$ref`), transitively:
/// a custom resource's catalog holds only the meta/v1 definitions its kind uses (ObjectMeta
/// and what it refers to), not all of them, as it is built for every version of every CRD.
fn add_referenced(definitions: &mut Map<String, Value>, builtin: &Map<String, Value>) {
    let mut pending: Vec<String> = Vec::new();
    for definition in definitions.values() {
        collect_refs(definition, &mut pending);
    }
    while let Some(name) = pending.pop() {
        if definitions.contains_key(&name) {
            continue;
        }
        if let Some(definition) = builtin.get(&name) {
            collect_refs(definition, &mut pending);
            definitions.insert(name, definition.clone());
        }
    }
}

/// The definition names of the `$ref`s in `schema` (v2 or v3 style).
fn collect_refs(schema: &Value, into: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            let reference = map.get("$ref").and_then(Value::as_str).and_then(|r| {
                r.strip_prefix("#/definitions/")
                    .or_else(|| r.strip_prefix("#/components/schemas/"))
            });
            if let Some(name) = reference {
                into.push(name.to_string());
            }
            map.values().for_each(|v| collect_refs(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, into)),
        _ => {}
    }
}

/// One served version of a CRD.
struct ServedVersion<'a> {
    /// The accepted names the resources are served under.
    names: &'a CrdNames,
    version: &'a Value,
    storage: Arc<StorageDefinition>,
    schema: Arc<VersionSchema>,
}

impl ServedVersion<'_> {
    fn definition(&self, crd: &Value, resolver: Arc<dyn ServiceResolver>) -> ResourceDefinition {
        let names = self.names;
        let version = self.version["name"].as_str().unwrap_or_default();
        let subresources = subresources(&self.version["subresources"]);
        let status = subresources.iter().any(|s| s.name == "status");
        let conversion = conversion::converter(crd, version, resolver);
        let converter: Option<Arc<dyn Converter>> = Some(Arc::new(Defaulting {
            conversion: conversion.clone(),
            schema: self.schema.clone(),
        }));
        let selectable = printer::selectable_fields(self.version);
        let selectable_read = fields_read(&selectable);
        ResourceDefinition {
            group_version: GroupVersion::new(names.group.clone(), version),
            kind: names.kind.clone().into(),
            list_kind: names.list_kind.clone().into(),
            plural: names.plural.clone().into(),
            singular: names.singular.clone().into(),
            namespaced: self.storage.namespaced,
            short_names: owned(&names.short_names),
            categories: owned(&names.categories),
            verbs: Verbs::ALL,
            subresources,
            table: Some(printer::table(self.version)),
            strategy: Arc::new(CustomResourceStrategy {
                schema: self.schema.clone(),
                conversion,
                status,
                selectable,
                selectable_read,
            }),
            storage: self.storage.clone(),
            converter,
            deprecation: deprecation(&names.group, version, &names.kind, self.version),
            capabilities: Capabilities::CUSTOM_RESOURCE,
            priority: ApiServicePriority::DEFAULT,
        }
    }
}

/// The warning of a deprecated version: its `deprecationWarning`, or upstream's default.
fn deprecation(group: &str, version: &str, kind: &str, declared: &Value) -> Option<String> {
    if declared["deprecated"].as_bool() != Some(true) {
        return None;
    }
    Some(match declared["deprecationWarning"].as_str() {
        Some(warning) => warning.to_string(),
        None => format!("{group}/{version} {kind} is deprecated"),
    })
}

/// A CRD's names as a definition's.
fn owned(names: &[String]) -> Vec<Name> {
    names.iter().map(|name| Name::from(name.clone())).collect()
}

/// The status and scale subresources a version declares.
fn subresources(declared: &Value) -> Vec<Subresource> {
    let mut subresources = Vec::new();
    if declared.get("status").is_some() {
        subresources.push(Subresource {
            name: "status",
            kind: SubresourceKind::Status,
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        });
    }
    if let Some(scale) = declared.get("scale") {
        let pointer = |key: &str| json_pointer(scale[key].as_str().unwrap_or_default()).into();
        let selector = scale["labelSelectorPath"].as_str().unwrap_or_default();
        subresources.push(Subresource {
            name: "scale",
            kind: SubresourceKind::Scale(ScalePaths {
                spec_replicas: pointer("specReplicasPath"),
                status_replicas: pointer("statusReplicasPath"),
                selector: ScaleSelector::String(json_pointer(selector).into()),
            }),
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        });
    }
    subresources
}

/// `.spec.replicas` (the CRD's scale paths) as the JSON pointer `/spec/replicas`.
fn json_pointer(path: &str) -> String {
    path.split('.')
        .filter(|segment| !segment.is_empty())
        .map(|segment| format!("/{}", segment.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The converter of every custom resource version: conversion between the served and the
/// stored version (if they differ), and the served version's defaults applied to objects
/// read from storage, as upstream defaults custom resources when it decodes them from etcd.
struct Defaulting {
    conversion: Option<Arc<dyn Converter>>,
    schema: Arc<VersionSchema>,
}

impl Converter for Defaulting {
    fn stored_form(&self, object: Value) -> Result<Value, ApiError> {
        match &self.conversion {
            Some(conversion) => conversion.stored_form(object),
            None => Ok(object),
        }
    }

    fn served_form(&self, object: Value) -> Result<Value, ApiError> {
        let mut served = match &self.conversion {
            Some(conversion) => conversion.served_form(object)?,
            None => object,
        };
        structural::default(&mut served, &self.schema.structural);
        Ok(served)
    }

    fn served_forms(&self, objects: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        let mut served = match &self.conversion {
            Some(conversion) => conversion.served_forms(objects)?,
            None => objects,
        };
        for object in &mut served {
            structural::default(object, &self.schema.structural);
        }
        Ok(served)
    }
}

/// The strategy of custom resources (upstream's customresource strategy): the structural
/// schema's defaulting and validation, CEL rules, the status subresource's split and
/// generation.
struct CustomResourceStrategy {
    schema: Arc<VersionSchema>,
    /// The conversion from the stored version to this one, when they differ: the registry
    /// hands the strategy stored objects, and upstream validates an object in the version
    /// of its request, with that version's schema.
    conversion: Option<Arc<dyn Converter>>,
    /// Whether the status subresource is enabled (then the main resource ignores `status`).
    status: bool,
    selectable: Vec<(String, printer::SelectableField)>,
    /// The top-level fields the selectable fields' paths start from (`None`: a path that
    /// starts in the metadata, or one not a plain field name).
    selectable_read: Option<Vec<kapi_server::resource::Name>>,
}

impl CustomResourceStrategy {
    /// Validates `new` (an update of `old`) in this version.
    fn validate_against(&self, new: &Value, old: Option<&Value>) -> FieldErrors {
        let Some(conversion) = &self.conversion else {
            return self.validate_served(new, old);
        };
        let served = |object: &Value| conversion.served_form(object.clone());
        match (served(new), old.map(served).transpose()) {
            (Ok(new), Ok(old)) => self.validate_served(&new, old.as_ref()),
            (Err(err), _) | (_, Err(err)) => {
                FieldErrors::from(FieldError::internal(&Path::root("<nil>"), err.to_string()))
            }
        }
    }

    /// Validates an object of this version: its structural schema, then its CEL rules,
    /// unless the schema found the object unfit for them (a required field missing, a value
    /// of the wrong type, unsupported or too large), as upstream's hasBlockingErr decides.
    fn validate_served(&self, new: &Value, old: Option<&Value>) -> FieldErrors {
        let mut errors = structural::validate(new, old, &self.schema.structural);
        if self.schema.rules.is_empty() {
            return errors;
        }
        let blocking = errors.iter().any(|error| {
            matches!(
                error.error_type,
                ErrorType::NotSupported
                    | ErrorType::Required
                    | ErrorType::TooLong
                    | ErrorType::TooMany
                    | ErrorType::TypeInvalid
            )
        });
        match blocking {
            true => errors.push(FieldError::invalid(
                &Path::root("<nil>"),
                Value::Null,
                "some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation",
            )),
            false => errors.extend(self.schema.rules.validate(new, old)),
        }
        errors
    }
}

impl Strategy for CustomResourceStrategy {
    fn default(&self, object: &mut Value) {
        structural::default(object, &self.schema.structural);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        if self.status
            && let Some(fields) = object.as_object_mut()
        {
            fields.remove("status");
        }
        object::set_meta(object, "generation", Value::from(1));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.status {
            match old.get("status") {
                Some(status) => new["status"] = status.clone(),
                None => {
                    if let Some(fields) = new.as_object_mut() {
                        fields.remove("status");
                    }
                }
            }
        }
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
        object::set_meta(new, "generation", Value::from(generation));
        if changed_beyond_metadata(new, old, self.status) {
            object::set_meta(new, "generation", Value::from(generation + 1));
        }
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        self.validate_against(object, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        self.validate_against(new, Some(old))
    }

    fn validate_subresource_update(
        &self,
        _subresource: &SubresourceKind,
        new: &Value,
        old: &Value,
    ) -> FieldErrors {
        self.validate_against(new, Some(old))
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        self.selectable
            .iter()
            .filter_map(|(name, field)| Some((name.clone().into(), field.value(object)?)))
            .collect()
    }

    fn supports_field(&self, field: &str) -> bool {
        self.selectable.iter().any(|(name, _)| *name == field)
    }

    fn selectable_fields_read(&self) -> Option<&[kapi_server::resource::Name]> {
        self.selectable_read.as_deref()
    }
}

/// The top-level fields that the selectable fields named `selectable` (their paths without
/// the leading dot, such as `spec.color`) read; `None` when one starts in the metadata or
/// with something other than a plain field name, for the watch cache to decode whole
/// objects.
fn fields_read(
    selectable: &[(String, printer::SelectableField)],
) -> Option<Vec<kapi_server::resource::Name>> {
    let mut read: Vec<kapi_server::resource::Name> = Vec::new();
    for (name, _) in selectable {
        let first = name.split('.').next().unwrap_or_default();
        let plain = !first.is_empty()
            && first
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
        if !plain || first == "metadata" {
            return None;
        }
        if !read.iter().any(|field| field == first) {
            read.push(first.to_string().into());
        }
    }
    Some(read)
}

/// Whether an update changes more than metadata (and, with the status subresource, more
/// than metadata and status): upstream bumps the generation then.
fn changed_beyond_metadata(new: &Value, old: &Value, status: bool) -> bool {
    let strip = |object: &Value| {
        let mut fields = object.as_object().cloned().unwrap_or_default();
        fields.remove("metadata");
        if status {
            fields.remove("status");
        }
        fields
    };
    strip(new) != strip(old)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn selectable_fields_read_their_paths_first_field() {
        let read = |paths: &[&str]| {
            let fields: Vec<Value> = paths.iter().map(|p| json!({"jsonPath": p})).collect();
            let selectable = printer::selectable_fields(&json!({"selectableFields": fields}));
            fields_read(&selectable)
                .map(|read| read.iter().map(|name| name.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(read(&[]), Some(vec![]));
        assert_eq!(
            read(&[".spec.color", ".spec.size", ".status.phase"]),
            Some(vec!["spec".to_string(), "status".to_string()])
        );
        assert_eq!(read(&[".spec.color", ".metadata.labels.x"]), None);
        // A path that is not plain fields leaves the whole object to the watch cache.
        assert_eq!(read(&[".spec['color']"]), None);
    }

    #[test]
    fn a_kind_catalog_holds_only_the_meta_definitions_it_uses() {
        let mut definitions = kapi_server::openapi::kind_definitions(
            "example.com",
            "v1",
            ("Widget", "WidgetList", "widgets"),
            Some(&serde_json::json!({"type": "object"})),
            &[],
        );
        add_referenced(&mut definitions, &kapi_api::definitions());
        let meta = |name: &str| format!("io.k8s.apimachinery.pkg.apis.meta.v1.{name}");
        for used in [
            "ObjectMeta",
            "ListMeta",
            "ManagedFieldsEntry",
            "OwnerReference",
            "Time",
        ] {
            assert!(definitions.contains_key(&meta(used)), "{used} missing");
        }
        for unused in ["APIResourceList", "DeleteOptions", "Status", "WatchEvent"] {
            assert!(!definitions.contains_key(&meta(unused)), "{unused} present");
        }
    }
}
