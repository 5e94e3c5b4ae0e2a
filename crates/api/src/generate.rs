//! How `definitions.json` is made: k8s-openapi's `JsonSchema` implementations (structure
//! and upstream's descriptions, named as upstream names its definitions) generate every
//! built-in definition, the types k8s-openapi describes differently get upstream's shapes,
//! and upstream's Kubernetes extensions from `extensions.json` (made by
//! tools/gen_openapi_extensions.py, with `roots.rs`) are laid over them, with the XList
//! kinds k8s-openapi has no types for. `structure.json` is the same without the
//! descriptions, which is all the schema catalog reads. A test checks both files are what
//! this makes; after a change here, in k8s-openapi or in those two files, write them anew
//! with `KAPI_WRITE_DEFINITIONS=1 cargo test -p kapi-api definitions_json`.

use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// Per definition: `x` its own extensions, `p` its properties' extensions, `r` its required
/// properties, `listOf` the item definition of an XList kind.
const EXTENSIONS: &str = include_str!("extensions.json");

/// ListMeta, the `metadata` of every XList kind.
pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

macro_rules! roots {
    ($($ty:ty,)*) => {
        /// Adds the definition of every built-in type (and what it references) to `generator`.
        fn generate_roots(generator: &mut SchemaGenerator) {
            $( generator.subschema_for::<$ty>(); )*
        }
    };
}

include!("roots.rs");

/// Every built-in definition in OpenAPI v2 form, with upstream's extensions.
fn generated() -> Map<String, Value> {
    let mut generator = SchemaSettings::draft07()
        .with(|s| s.transforms.clear())
        .into_generator();
    generate_roots(&mut generator);
    let mut defs = generator.take_definitions(false);
    normalize_special_types(&mut defs);
    let overlay: Value = serde_json::from_str(EXTENSIONS).expect("extensions.json is JSON");
    let overlay = overlay["definitions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (name, facts) in &overlay {
        if let Some(item) = facts.get("listOf").and_then(Value::as_str) {
            let list = list_definition(&defs, name, item);
            defs.insert(name.clone(), list);
        }
        if let Some(def) = defs.get_mut(name) {
            apply_facts(def, facts);
        }
    }
    defs
}

/// Gives the types k8s-openapi describes differently the schemas upstream serves:
/// IntOrString is `type: string, format: int-or-string`, Quantity `type: string`, and
/// apiextensions JSON and the JSONSchemaPropsOr* unions have no type.
fn normalize_special_types(defs: &mut Map<String, Value>) {
    let mut set = |name: &str, change: &dyn Fn(&mut Map<String, Value>)| {
        if let Some(Value::Object(def)) = defs.get_mut(name) {
            def.remove("x-kubernetes-int-or-string");
            def.remove("type");
            def.remove("oneOf");
            change(def);
        }
    };
    set("io.k8s.apimachinery.pkg.util.intstr.IntOrString", &|def| {
        def.insert("type".into(), "string".into());
        def.insert("format".into(), "int-or-string".into());
    });
    set("io.k8s.apimachinery.pkg.api.resource.Quantity", &|def| {
        def.insert("type".into(), "string".into());
    });
    for untyped in [
        "JSON",
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ] {
        set(
            &format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{untyped}"),
            &|_| {},
        );
    }
    // k8s-openapi's schemars impl leaves out JSONSchemaProps' `default` (a keyword in Rust).
    let props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
    if let Some(properties) = defs
        .get_mut(props)
        .and_then(|def| def.get_mut("properties"))
        .and_then(Value::as_object_mut)
    {
        properties.entry("default").or_insert_with(|| json!({
            "$ref": "#/definitions/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
            "description": "default is a default value for undefined object fields. Defaulting is a beta feature under the CustomResourceDefaulting feature gate. Defaulting requires spec.preserveUnknownFields to be false.",
        }));
    }
}

/// The definition of an XList kind `name` listing the definition `item`: apiVersion and
/// kind as the item's, `items`, and ListMeta.
fn list_definition(defs: &Map<String, Value>, name: &str, item: &str) -> Value {
    let kind = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
    let item_property = |p: &str| defs[item]["properties"][p].clone();
    json!({
        "description": format!("{} is a list of {} objects.", kind(name), kind(item)),
        "type": "object",
        "properties": {
            "apiVersion": item_property("apiVersion"),
            "items": {
                "description": format!("items is the list of {} objects.", kind(item)),
                "type": "array",
                "items": {"$ref": format!("#/definitions/{item}")}
            },
            "kind": item_property("kind"),
            "metadata": {
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                "$ref": format!("#/definitions/{LIST_META}")
            }
        },
        "required": ["items"]
    })
}

/// Lays a definition's extension facts over its schema.
fn apply_facts(def: &mut Value, facts: &Value) {
    if let Some(def) = def.as_object_mut() {
        match facts.get("r") {
            Some(required) => def.insert("required".into(), required.clone()),
            None => def.remove("required"),
        };
    }
    if let Some(own) = facts.get("x") {
        merge_extensions(def, own);
    }
    let props = facts.get("p").and_then(Value::as_object);
    for (prop, prop_facts) in props.into_iter().flatten() {
        if let Some(schema) = def.pointer_mut(&format!("/properties/{prop}")) {
            merge_extensions(schema, prop_facts);
        }
    }
}

/// Adds the extensions of `facts` to `schema`, descending into `items` and
/// `additionalProperties`.
fn merge_extensions(schema: &mut Value, facts: &Value) {
    let (Some(schema), Some(facts)) = (schema.as_object_mut(), facts.as_object()) else {
        return;
    };
    for (key, value) in facts {
        match (key.as_str(), schema.get_mut(key)) {
            ("items" | "additionalProperties", Some(inner)) => merge_extensions(inner, value),
            ("items" | "additionalProperties", None) => {}
            _ => {
                schema.insert(key.clone(), value.clone());
            }
        }
    }
}

/// `definitions` written as `definitions.json` is: a JSON object with one definition per
/// line, in the map's order.
fn written(definitions: &Map<String, Value>) -> String {
    let mut out = String::from("{\n");
    for (index, (name, definition)) in definitions.iter().enumerate() {
        if index > 0 {
            out.push_str(",\n");
        }
        out.push_str(&Value::String(name.clone()).to_string());
        out.push(':');
        out.push_str(&definition.to_string());
    }
    out.push_str("\n}\n");
    out
}

/// `schema` without its documentation: every `description` whose value is text (a property
/// named `description` is a schema, and stays).
fn undocumented(schema: &Value) -> Value {
    match schema {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, value)| !(key.as_str() == "description" && value.is_string()))
                .map(|(key, value)| (key.clone(), undocumented(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(undocumented).collect()),
        other => other.clone(),
    }
}

#[test]
fn definitions_json_is_what_k8s_openapi_and_the_extensions_make() {
    let definitions = generated();
    let made = written(&definitions);
    let structure = written(
        &undocumented(&Value::Object(definitions.clone()))
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    if std::env::var_os("KAPI_WRITE_DEFINITIONS").is_some() {
        let dir = env!("CARGO_MANIFEST_DIR");
        std::fs::write(format!("{dir}/src/definitions.json"), &made)
            .expect("write definitions.json");
        std::fs::write(format!("{dir}/src/structure.json"), &structure)
            .expect("write structure.json");
        return;
    }
    assert!(
        made == crate::DEFINITIONS && structure == crate::STRUCTURE,
        "definitions.json or structure.json is out of date: write them anew with \
         KAPI_WRITE_DEFINITIONS=1 cargo test -p kapi-api definitions_json"
    );
    assert_eq!(crate::parse_definitions(), definitions);
}
