//! The swagger 2.0 document of `/openapi/v2`: every route of everything served, with
//! upstream's shared `parameters` section (its names, `<name>-<hash>` of the parameter's Go
//! encoding) and the schemas in v2 form. Separate from v3, which renders the same routes in
//! OpenAPI 3.0's shape; the protobuf encoding of this document is `v2proto`'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE;
use serde_json::{Map, Value, json};

use super::schemas::{reachable, to_v2_schema};
use super::{
    DEFINITIONS_V2, INFO_TITLE, INFO_VERSION, Param, ParamIn, document_keys, document_routes,
    group_by_path, is_common, method_key, operation_extensions, operation_id_and_tags,
    response_and_body_refs, sort_params,
};
use crate::resource::ResourceDefinition;

/// A v2 parameter serialized as upstream's encoder does (its field order), used to name shared
/// parameters exactly as upstream.
fn v2_parameter_go_json(param: &Param) -> String {
    let mut out = String::from("{");
    let mut field = |key: &str, value: String| {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&format!("\"{key}\":{value}"));
    };
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    if param.location != ParamIn::Body {
        field("uniqueItems", "true".into());
        field("type", quote(param.ty));
    }
    if !param.description.is_empty() {
        field("description", quote(&param.description));
    }
    field("name", quote(param.name));
    field("in", quote(param.location.as_str()));
    if param.required {
        field("required", "true".into());
    }
    if let Some(schema) = &param.schema {
        field(
            "schema",
            format!(
                "{{\"$ref\":{}}}",
                quote(&format!("{DEFINITIONS_V2}{schema}"))
            ),
        );
    }
    out.push('}');
    out
}

fn v2_parameter(param: &Param) -> Value {
    let mut p = Map::new();
    if !param.description.is_empty() {
        p.insert("description".into(), json!(param.description));
    }
    p.insert("in".into(), json!(param.location.as_str()));
    p.insert("name".into(), json!(param.name));
    if param.required {
        p.insert("required".into(), json!(true));
    }
    match &param.schema {
        Some(schema) => {
            p.insert(
                "schema".into(),
                json!({"$ref": format!("{DEFINITIONS_V2}{schema}")}),
            );
        }
        None => {
            p.insert("type".into(), json!(param.ty));
            p.insert("uniqueItems".into(), json!(true));
        }
    }
    Value::Object(p)
}

/// Whether upstream keeps a parameter inline rather than in the shared `parameters` section:
/// `name`, `dryRun` and `fieldValidation` (kubectl looks for the last two), and bodies of the
/// resource's own kinds.
fn v2_unshared(param: &Param) -> bool {
    (param.name == "name" && param.location != ParamIn::Body)
        || (param.location == ParamIn::Query
            && (param.name == "fieldValidation" || param.name == "dryRun"))
        || param
            .schema
            .as_deref()
            .is_some_and(|s| !s.starts_with("io.k8s.apimachinery"))
}

/// FNV-1 64 of `s`, first 6 bytes in URL-safe base64: upstream's shared parameter suffix.
fn parameter_hash(s: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in s.bytes() {
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        hash ^= u64::from(byte);
    }
    URL_SAFE.encode(&hash.to_be_bytes()[..6])
}

/// `/openapi/v2`: the swagger 2.0 document of everything served.
pub fn v2(defs: &[Arc<ResourceDefinition>], schemas: &BTreeMap<String, Value>) -> Value {
    let mut routes = Vec::new();
    for key in document_keys(defs) {
        routes.extend(document_routes(defs, &key).unwrap_or_default());
    }
    let groups = group_by_path(&routes);

    // Shared parameters: every parameter not kept inline, named `<name>-<hash>` after its
    // encoding.
    let mut shared: BTreeMap<String, &Param> = BTreeMap::new();
    for group in groups.values() {
        let inline = group
            .routes
            .iter()
            .flat_map(|r| r.params.iter().filter(|p| !is_common(group, p)));
        for param in inline.chain(group.common.iter().copied()) {
            if !v2_unshared(param) {
                shared.entry(v2_parameter_go_json(param)).or_insert(param);
            }
        }
    }
    let mut names: BTreeMap<&str, String> = BTreeMap::new();
    let mut parameters = Map::new();
    for (encoded, param) in &shared {
        let mut name = format!("{}-{}", param.name, parameter_hash(encoded));
        let mut i = 0;
        while parameters.contains_key(&name) {
            i += 1;
            name = format!("{}-{i}", param.name);
        }
        parameters.insert(name.clone(), v2_parameter(param));
        names.insert(encoded.as_str(), name);
    }
    let param_value = |param: &Param| -> Value {
        match names.get(v2_parameter_go_json(param).as_str()) {
            Some(name) if !v2_unshared(param) => json!({"$ref": format!("#/parameters/{name}")}),
            _ => v2_parameter(param),
        }
    };

    let mut paths = Map::new();
    for (path, group) in &groups {
        let mut item = Map::new();
        if !group.common.is_empty() {
            item.insert(
                "parameters".into(),
                Value::Array(group.common.iter().map(|p| param_value(p)).collect()),
            );
        }
        for route in &group.routes {
            let mut op = Map::new();
            op.insert("consumes".into(), json!(route.consumes));
            op.insert("description".into(), json!(route.description));
            let (id, tags) = operation_id_and_tags(&route.operation, &route.path);
            op.insert("operationId".into(), json!(id));
            let mut params: Vec<&Param> = route
                .params
                .iter()
                .filter(|p| !is_common(group, p))
                .collect();
            sort_params(&mut params);
            if !params.is_empty() {
                op.insert(
                    "parameters".into(),
                    Value::Array(params.into_iter().map(param_value).collect()),
                );
            }
            op.insert("produces".into(), json!(route.produces));
            let mut responses = Map::new();
            for (code, description, schema) in &route.responses {
                responses.insert(
                    code.to_string(),
                    json!({"description": description, "schema": {"$ref": format!("{DEFINITIONS_V2}{schema}")}}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            op.insert("responses".into(), Value::Object(responses));
            op.insert("schemes".into(), json!(["https"]));
            op.insert("tags".into(), json!(tags));
            operation_extensions(route, &mut op);
            item.insert(method_key(route.method).into(), Value::Object(op));
        }
        paths.insert(path.clone(), Value::Object(item));
    }

    let mut definitions = Value::Object(reachable(response_and_body_refs(&routes), schemas));
    to_v2_schema(&mut definitions);
    json!({
        "definitions": definitions,
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "parameters": parameters,
        "paths": paths,
        "security": [{"BearerToken": []}],
        "securityDefinitions": {
            "BearerToken": {"description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey"},
        },
        "swagger": "2.0",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::tests::builtin;
    use crate::openapi::{MEDIA_TYPES, PATCH_TYPES, schemas};

    #[test]
    fn swagger_shares_parameters_under_upstream_names() {
        let defs = builtin();
        let swagger = v2(&defs, &schemas(&defs, None));
        assert_eq!(swagger["swagger"], "2.0");
        assert_eq!(swagger["security"], json!([{"BearerToken": []}]));
        let shared = swagger["parameters"].as_object().unwrap();
        // Exactly the names kube-apiserver's swagger.json uses for these parameters; name,
        // dryRun and fieldValidation stay inline.
        assert_eq!(
            shared.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "allowWatchBookmarks-HC2hJt-J",
                "body-2Y1dVQaQ",
                "body-78PwaGsr",
                "continue-QfD61s0i",
                "fieldManager-7c6nTn1T",
                "fieldManager-Qy4HdaTW",
                "fieldSelector-xIcQKXFG",
                "force-tOGGb0Yi",
                "gracePeriodSeconds--K5HaBOS",
                "ignoreStoreReadErrorWithClusterBreakingPotential-QbNkfIqj",
                "labelSelector-5Zw57w4C",
                "limit-1NfNmdNH",
                "namespace-vgWSWtn3",
                "orphanDependents-uRB25kX5",
                "pretty-tJGM1-ng",
                "propagationPolicy-6jk3prlO",
                "resourceVersion-5WAnf1kx",
                "resourceVersionMatch-t8XhRHeC",
                "sendInitialEvents-rLXlEK_k",
                "timeoutSeconds-yvYezaOC",
                "watch-XNNPZGbK",
            ]
        );
        assert_eq!(
            shared["body-2Y1dVQaQ"],
            json!({
                "in": "body",
                "name": "body",
                "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"},
            })
        );

        let patch = &swagger["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["operationId"], "patchCoreV1NamespacedConfigMap");
        assert_eq!(patch["consumes"], json!(PATCH_TYPES));
        assert_eq!(patch["produces"], json!(MEDIA_TYPES));
        assert_eq!(patch["schemes"], json!(["https"]));
        let params = patch["parameters"].as_array().unwrap();
        assert_eq!(params[0], json!({"$ref": "#/parameters/body-78PwaGsr"}));
        assert_eq!(params[3]["name"], "fieldValidation");
        assert_eq!(params[3]["in"], "query");
        assert_eq!(
            patch["responses"]["200"]["schema"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.ConfigMap"
        );
        let put = &swagger["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["put"];
        assert_eq!(put["consumes"], json!(["*/*"]));
        assert_eq!(
            put["parameters"][0],
            json!({
                "in": "body",
                "name": "body",
                "required": true,
                "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"},
            })
        );
        let item_params =
            &swagger["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["parameters"];
        assert_eq!(item_params[0]["name"], "name");
        assert_eq!(
            item_params[1],
            json!({"$ref": "#/parameters/namespace-vgWSWtn3"})
        );
        assert_eq!(
            item_params[2],
            json!({"$ref": "#/parameters/pretty-tJGM1-ng"})
        );
        // v2 schemas have no defaults and point into #/definitions.
        let meta =
            &swagger["definitions"]["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"];
        assert_eq!(
            meta["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(meta.get("default").is_none());
    }
}
