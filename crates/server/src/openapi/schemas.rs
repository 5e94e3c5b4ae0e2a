//! The schema set the documents draw from: the full definitions the schema provider gives,
//! over the meta/v1 and discovery types, plus the kind (and custom resource) definitions
//! built here; the references between them; and their v3 (`#/components/schemas/`, `allOf`
//! around references with siblings) and v2 (`#/definitions/`, no defaults) forms. Separate
//! from the documents, which only pick the schemas their routes reach.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::meta_schemas::meta_schemas;
use super::{DEFINITIONS_V2, SCHEMAS_V3, definition_name, meta};
use crate::resource::ResourceDefinition;

pub(super) fn ref_to(name: &str) -> Value {
    json!({"$ref": format!("{SCHEMAS_V3}{name}")})
}

/// A `$ref` with sibling keywords (v3 wraps these in `allOf`, see [`wrap_refs`]).
pub(super) fn ref_with(name: &str, extra: Value) -> Value {
    let mut value = ref_to(name);
    if let (Value::Object(map), Value::Object(extra)) = (&mut value, extra) {
        map.extend(extra);
    }
    value
}

const API_VERSION_DESC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

pub(super) fn api_version_prop() -> Value {
    json!({"description": API_VERSION_DESC, "type": "string"})
}

pub(super) fn kind_prop() -> Value {
    json!({"description": KIND_DESC, "type": "string"})
}

/// The schemas of a resource's kind and list kind. Incomplete: see the `openapi` module documentation.
fn kind_schemas(def: &ResourceDefinition, out: &mut BTreeMap<String, Value>) {
    let group = def.group_version.group.as_str();
    let version = def.group_version.version.as_str();
    let kinds = (&*def.kind, &*def.list_kind, &*def.plural);
    out.extend(kind_definitions(group, version, kinds, None, &[]));
}

/// The OpenAPI definitions (v2 form) of a kind and its list kind, as upstream's CRD OpenAPI
/// builder publishes custom resources: the kind's `schema` (a CRD version's openAPIV3Schema,
/// unfolded: int-or-string as `anyOf` integer or string, embedded resources with their
/// apiVersion, kind and metadata; any object without one) with apiVersion, kind and
/// metadata, and the list of it; both naming the CRD's `selectable` field paths.
pub fn kind_definitions(
    group: &str,
    version: &str,
    (kind, list_kind, plural): (&str, &str, &str),
    schema: Option<&Value>,
    selectable: &[String],
) -> Map<String, Value> {
    let object = definition_name(group, version, kind);
    let gvk = |kind: &str| json!([{"group": group, "kind": kind, "version": version}]);
    let mut definition = match schema {
        Some(schema) => schema.clone(),
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    unfold(&mut definition);
    if !definition["properties"].is_object() {
        definition["properties"] = json!({});
    }
    definition["properties"]["apiVersion"] = api_version_prop();
    definition["properties"]["kind"] = kind_prop();
    definition["properties"]["metadata"] = object_metadata_prop();
    let selectable_fields: Vec<Value> = selectable
        .iter()
        .map(|path| json!({"fieldPath": path.trim_start_matches('.')}))
        .collect();
    if schema.is_some() {
        definition["x-kubernetes-group-version-kind"] = gvk(kind);
        if !selectable_fields.is_empty() {
            definition["x-kubernetes-selectable-fields"] = json!(selectable_fields);
        }
    }
    let plural_items = format!(
        "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
        plural
    );
    let mut list = json!({
        "description": format!("{list_kind} is a list of {kind}"),
        "properties": {
            "apiVersion": api_version_prop(),
            "items": {"description": plural_items, "items": ref_to(&object), "type": "array"},
            "kind": kind_prop(),
            "metadata": ref_with(&meta("ListMeta"), json!({
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            })),
        },
        "required": ["items"],
        "type": "object",
    });
    if schema.is_some() {
        list["x-kubernetes-group-version-kind"] = gvk(list_kind);
        if !selectable_fields.is_empty() {
            list["x-kubernetes-selectable-fields"] = json!(selectable_fields);
        }
    }
    let mut definitions = Map::new();
    definitions.insert(object, definition);
    definitions.insert(definition_name(group, version, list_kind), list);
    definitions
}

/// The `metadata` property of a custom resource or embedded resource: the ObjectMeta
/// reference with PartialObjectMetadata's description.
fn object_metadata_prop() -> Value {
    ref_with(
        &meta("ObjectMeta"),
        json!({
            "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        }),
    )
}

/// Upstream's structural schema `Unfold` and the builder's embedded properties, through
/// the whole schema: an int-or-string gains `anyOf` integer or string (unless it has an
/// `anyOf`), an embedded resource gains the apiVersion, kind and metadata properties, with
/// kind and apiVersion required.
fn unfold(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get_mut(key) {
            unfold(child);
        }
    }
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        properties.values_mut().for_each(unfold);
    }
    let flag = |node: &Map<String, Value>, key: &str| node.get(key) == Some(&Value::Bool(true));
    if flag(node, "x-kubernetes-int-or-string") && !node.contains_key("anyOf") {
        node.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if flag(node, "x-kubernetes-embedded-resource") {
        let properties = node.entry("properties").or_insert_with(|| json!({}));
        properties["apiVersion"] = json!({"type": "string",
            "description": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"});
        properties["kind"] = json!({"type": "string",
            "description": "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"});
        properties["metadata"] = object_metadata_prop();
        let required = node.entry("required").or_insert_with(|| json!([]));
        if let Some(required) = required.as_array_mut() {
            for key in ["kind", "apiVersion"] {
                if !required.iter().any(|r| r == key) {
                    required.push(json!(key));
                }
            }
        }
    }
}

/// Every schema the documents of `defs` may reference, in v3 form: the `full` definitions
/// (OpenAPI v2 form, e.g. the schema provider's) over the meta/v1 and discovery types, and
/// the minimal schemas of the kinds `full` lacks.
pub fn schemas(
    defs: &[Arc<ResourceDefinition>],
    full: Option<&Map<String, Value>>,
) -> BTreeMap<String, Value> {
    let mut schemas = meta_schemas(defs);
    for (name, schema) in full.into_iter().flatten() {
        let mut schema = schema.clone();
        to_v3_schema(&mut schema);
        schemas.insert(name.clone(), schema);
    }
    for def in defs {
        let gv = &def.group_version;
        if !schemas.contains_key(&definition_name(&gv.group, &gv.version, &def.kind)) {
            kind_schemas(def, &mut schemas);
        }
    }
    schemas
}

/// v3: references point into `#/components/schemas/`.
fn to_v3_schema(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix(DEFINITIONS_V2)
            {
                *r = format!("{SCHEMAS_V3}{name}");
            }
            map.values_mut().for_each(to_v3_schema);
        }
        Value::Array(items) => items.iter_mut().for_each(to_v3_schema),
        _ => {}
    }
}

/// Collects the definition names `value` references (with `prefix`).
fn collect_refs(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref")
                && let Some(name) = r.strip_prefix(prefix)
            {
                out.insert(name.to_string());
            }
            map.values().for_each(|v| collect_refs(v, prefix, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, prefix, out)),
        _ => {}
    }
}

/// The schemas reachable from `roots`, following references between schemas.
pub(super) fn reachable(
    roots: BTreeSet<String>,
    schemas: &BTreeMap<String, Value>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let mut pending: Vec<String> = roots.into_iter().collect();
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(schema) = schemas.get(&name) {
            let mut refs = BTreeSet::new();
            collect_refs(schema, SCHEMAS_V3, &mut refs);
            pending.extend(refs);
            out.insert(name, schema.clone());
        }
    }
    out
}

/// v3: a `$ref` with sibling keywords becomes `{"allOf": [{"$ref": ...}], ...siblings}`.
pub(super) fn wrap_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.len() > 1
                && let Some(r) = map.remove("$ref")
            {
                map.insert("allOf".into(), json!([{"$ref": r}]));
            }
            map.values_mut().for_each(wrap_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(wrap_refs),
        _ => {}
    }
}

/// v2: references point into `#/definitions/` and schemas carry no defaults (the keyword;
/// a property named `default`, as JSONSchemaProps has, stays).
pub(super) fn to_v2_schema(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("default");
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix(SCHEMAS_V3)
            {
                *r = format!("{DEFINITIONS_V2}{name}");
            }
            for (key, child) in map.iter_mut() {
                match (key.as_str(), child) {
                    ("properties", Value::Object(properties)) => {
                        properties.values_mut().for_each(to_v2_schema)
                    }
                    (_, child) => to_v2_schema(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_v2_schema),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::tests::builtin;
    use crate::openapi::tests::full;
    use crate::openapi::{v2, v3_document, v3_group_version};

    fn resolve_all(doc: &Value, prefix: &str, section: &Value) {
        let mut refs = BTreeSet::new();
        collect_refs(doc, prefix, &mut refs);
        assert!(!refs.is_empty());
        for name in refs {
            assert!(section.get(&name).is_some(), "unresolved {prefix}{name}");
        }
    }

    #[test]
    fn references_resolve_and_incomplete_kinds_carry_no_gvk() {
        let defs = builtin();
        for path in [
            "api",
            "api/v1",
            "apis",
            "apis/apps",
            "apis/apps/v1",
            "apis/events.k8s.io/v1",
        ] {
            let doc = v3_document(&defs, path, &schemas(&defs, None)).unwrap();
            resolve_all(&doc, SCHEMAS_V3, &doc["components"]["schemas"]);
        }
        let doc = v3_group_version(&defs, "apps", "v1", &schemas(&defs, None)).unwrap();
        let schemas = &doc["components"]["schemas"];
        let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(deployment["type"], "object");
        assert!(deployment.get("x-kubernetes-group-version-kind").is_none());
        assert_eq!(
            deployment["properties"]["metadata"]["allOf"],
            json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
        );
        assert_eq!(
            schemas["io.k8s.api.apps.v1.DeploymentList"]["required"],
            json!(["items"])
        );
        assert!(schemas.get("io.k8s.api.core.v1.ConfigMap").is_none());
        assert_eq!(
            schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Status"]["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Status", "version": "v1"}])
        );
        assert!(
            schemas
                .get("io.k8s.apimachinery.pkg.apis.meta.v1.Time")
                .is_some()
        );
        assert_eq!(
            doc["components"]["securitySchemes"]["BearerToken"]["type"],
            "apiKey"
        );

        let swagger = v2(&defs, &super::schemas(&defs, None));
        resolve_all(&swagger, DEFINITIONS_V2, &swagger["definitions"]);
        let mut params = BTreeSet::new();
        collect_refs(&swagger, "#/parameters/", &mut params);
        for name in params {
            assert!(
                swagger["parameters"].get(&name).is_some(),
                "unresolved parameter {name}"
            );
        }
    }

    #[test]
    fn full_schemas_are_served_in_v2_and_v3_form() {
        let defs = builtin();
        let start = std::time::Instant::now();
        let schemas = super::schemas(&defs, Some(&full()));
        let doc = v3_group_version(&defs, "apps", "v1", &schemas).unwrap();
        let swagger = v2(&defs, &schemas);
        eprintln!("schemas, apps/v1 and v2 generated in {:?}", start.elapsed());
        let components = &doc["components"]["schemas"];
        resolve_all(&doc, SCHEMAS_V3, components);
        let deployment = &components["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert_eq!(
            deployment["properties"]["spec"]["allOf"],
            json!([{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}])
        );
        let containers = &components["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert!(components.get("io.k8s.api.core.v1.Container").is_some());
        // Only what the group version's paths reach: no core/v1 kinds.
        assert!(components.get("io.k8s.api.core.v1.Pod").is_none());
        let definitions = &swagger["definitions"];
        resolve_all(&swagger, DEFINITIONS_V2, definitions);
        assert_eq!(
            definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["template"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"
        );
    }
}
