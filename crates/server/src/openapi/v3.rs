//! The OpenAPI 3.0 documents: one per discovery path (`api`, `api/v1`, `apis`,
//! `apis/<group>`, `apis/<group>/<version>`), with their operations, request bodies and
//! responses per content type and the schemas their routes reach, and the `/openapi/v3` index
//! of them with each document's hash. Separate from v2, which renders the same routes in
//! swagger 2.0's shape.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::schemas::{reachable, ref_to, wrap_refs};
use super::{
    DocumentKey, INFO_TITLE, INFO_VERSION, Param, ParamIn, PathGroup, Route, document_keys,
    document_routes, group_by_path, group_version_prefix, is_common, method_key,
    operation_extensions, operation_id_and_tags, response_and_body_refs, sort_params,
};
use crate::discovery;
use crate::resource::ResourceDefinition;

fn v3_parameter(param: &Param) -> Value {
    let mut p = Map::new();
    if !param.description.is_empty() {
        p.insert("description".into(), json!(param.description));
    }
    p.insert("in".into(), json!(param.location.as_str()));
    p.insert("name".into(), json!(param.name));
    if param.required {
        p.insert("required".into(), json!(true));
    }
    p.insert(
        "schema".into(),
        json!({"type": param.ty, "uniqueItems": true}),
    );
    Value::Object(p)
}

fn v3_operation(route: &Route, group: &PathGroup<'_>) -> Value {
    let mut op = Map::new();
    op.insert("description".into(), json!(route.description));
    let (id, tags) = operation_id_and_tags(&route.operation, &route.path);
    op.insert("operationId".into(), json!(id));
    let mut params: Vec<&Param> = route
        .params
        .iter()
        .filter(|p| p.location != ParamIn::Body && !is_common(group, p))
        .collect();
    sort_params(&mut params);
    if !params.is_empty() {
        op.insert(
            "parameters".into(),
            Value::Array(params.into_iter().map(v3_parameter).collect()),
        );
    }
    if let Some(body) = route.params.iter().find(|p| p.location == ParamIn::Body) {
        let schema = ref_to(body.schema.as_deref().unwrap_or_default());
        let content: Map<String, Value> = route
            .consumes
            .iter()
            .map(|ct| (ct.to_string(), json!({"schema": schema.clone()})))
            .collect();
        let mut request = Map::new();
        request.insert("content".into(), Value::Object(content));
        if body.required {
            request.insert("required".into(), json!(true));
        }
        op.insert("requestBody".into(), Value::Object(request));
    }
    let mut responses = Map::new();
    for (code, description, schema) in &route.responses {
        let schema = ref_to(schema);
        let content: Map<String, Value> = route
            .produces
            .iter()
            .map(|ct| (ct.to_string(), json!({"schema": schema.clone()})))
            .collect();
        responses.insert(
            code.to_string(),
            json!({"content": content, "description": description}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    op.insert("responses".into(), Value::Object(responses));
    op.insert("tags".into(), json!(tags));
    operation_extensions(route, &mut op);
    Value::Object(op)
}

fn v3_document_from_routes(routes: &[Route], schemas: &BTreeMap<String, Value>) -> Value {
    let mut paths = Map::new();
    for (path, group) in group_by_path(routes) {
        let mut item = Map::new();
        if !group.common.is_empty() {
            item.insert(
                "parameters".into(),
                Value::Array(group.common.iter().map(|p| v3_parameter(p)).collect()),
            );
        }
        for route in &group.routes {
            item.insert(method_key(route.method).into(), v3_operation(route, &group));
        }
        paths.insert(path, Value::Object(item));
    }
    let mut components = Map::new();
    let mut schemas = Value::Object(reachable(response_and_body_refs(routes), schemas));
    wrap_refs(&mut schemas);
    components.insert("schemas".into(), schemas);
    components.insert(
        "securitySchemes".into(),
        json!({"BearerToken": {"description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey"}}),
    );
    json!({
        "components": components,
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "openapi": "3.0.0",
        "paths": paths,
    })
}

/// The OpenAPI v3 document of one discovery path (`api`, `api/v1`, `apis`, `apis/<group>`,
/// `apis/<group>/<version>`, with or without slashes around), as listed by [`v3_index`];
/// `None` when nothing is served there.
pub fn v3_document(
    defs: &[Arc<ResourceDefinition>],
    path: &str,
    schemas: &BTreeMap<String, Value>,
) -> Option<Value> {
    let key = DocumentKey::parse(path)?;
    let routes = document_routes(defs, &key)?;
    let mut document = v3_document_from_routes(&routes, schemas);
    if let DocumentKey::GroupVersion(group, version) = &key
        && custom_resources_only(defs, group, version)
    {
        // Custom resources' documents are the CRD OpenAPI builder's.
        document["info"] = json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"});
    }
    Some(document)
}

/// Whether a served group version holds custom resources only.
fn custom_resources_only(defs: &[Arc<ResourceDefinition>], group: &str, version: &str) -> bool {
    let mut served = defs
        .iter()
        .filter(|d| d.group_version.group == group && d.group_version.version == version)
        .peekable();
    served.peek().is_some() && served.all(|d| d.capabilities.dynamic)
}

/// The OpenAPI v3 document of a group version (`group` empty for the core group); `None` when
/// the group version is not served.
pub fn v3_group_version(
    defs: &[Arc<ResourceDefinition>],
    group: &str,
    version: &str,
    schemas: &BTreeMap<String, Value>,
) -> Option<Value> {
    v3_document(defs, &group_version_prefix(group, version), schemas)
}

/// The hash of a served v3 document: upper-case hex SHA-512 of `serde_json::to_vec(doc)`. It
/// is the `hash` query parameter of the document's URL in [`v3_index`] and (quoted) its ETag.
pub fn v3_hash(doc: &Value) -> String {
    discovery::sha512_hex(&serde_json::to_vec(doc).unwrap_or_default())
}

/// `/openapi/v3`: `{"paths": {"<path>": {"serverRelativeURL": "/openapi/v3/<path>?hash=<HASH>"}}}`
/// for `api`, `api/v1`, `apis`, each `apis/<group>` and each `apis/<group>/<version>`.
pub fn v3_index(defs: &[Arc<ResourceDefinition>], schemas: &BTreeMap<String, Value>) -> Value {
    let mut paths = Map::new();
    for key in document_keys(defs) {
        let path = key.path();
        if let Some(doc) = v3_document(defs, &path, schemas) {
            let url = format!("/openapi/v3/{path}?hash={}", v3_hash(&doc));
            paths.insert(path, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::tests::{builtin, def, no_deletecollection, status};
    use crate::openapi::{schemas, v2};
    use crate::resource::Verbs;

    fn op<'a>(doc: &'a Value, path: &str, method: &str) -> &'a Value {
        doc["paths"]
            .get(path)
            .and_then(|item| item.get(method))
            .unwrap_or_else(|| panic!("no {method} {path}"))
    }

    fn names(params: &Value) -> Vec<&str> {
        params
            .as_array()
            .map(|a| a.iter().map(|p| p["name"].as_str().unwrap()).collect())
            .unwrap_or_default()
    }

    const LIST_PARAMS: [&str; 10] = [
        "allowWatchBookmarks",
        "continue",
        "fieldSelector",
        "labelSelector",
        "limit",
        "resourceVersion",
        "resourceVersionMatch",
        "sendInitialEvents",
        "timeoutSeconds",
        "watch",
    ];

    /// kubectl's check (cli-runtime's query_param_verifier_v3): the first PATCH operation with
    /// the kind's group-version-kind must list `fieldValidation` among its own query parameters.
    fn supports_field_validation(
        doc: &Value,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<(), String> {
        for item in doc["paths"].as_object().unwrap().values() {
            let Some(patch) = item.get("patch") else {
                continue;
            };
            let gvk = &patch["x-kubernetes-group-version-kind"];
            if gvk["group"] != group || gvk["version"] != version || gvk["kind"] != kind {
                continue;
            }
            let params = patch["parameters"].as_array().cloned().unwrap_or_default();
            if params
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
            {
                continue;
            }
            return Err(format!("PATCH without fieldValidation for {kind}"));
        }
        let found = doc["paths"].as_object().unwrap().values().any(|item| {
            item.get("patch")
                .is_some_and(|p| p["x-kubernetes-group-version-kind"]["kind"] == kind)
        });
        if found {
            Ok(())
        } else {
            Err(format!("no PATCH for {kind}"))
        }
    }

    #[test]
    fn kubectl_finds_field_validation_for_every_kind() {
        let defs = builtin();
        for d in &defs {
            let gv = &d.group_version;
            let doc =
                v3_group_version(&defs, &gv.group, &gv.version, &schemas(&defs, None)).unwrap();
            supports_field_validation(&doc, &gv.group, &gv.version, &d.kind).unwrap();
        }
    }

    #[test]
    fn namespaced_resource_paths_match_upstream() {
        let defs = builtin();
        let doc =
            v3_group_version(&defs, "coordination.k8s.io", "v1", &schemas(&defs, None)).unwrap();
        assert_eq!(doc["openapi"], "3.0.0");
        assert_eq!(
            doc["info"],
            json!({"title": "Kubernetes", "version": INFO_VERSION})
        );
        let paths: Vec<&str> = doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            paths,
            [
                "/apis/coordination.k8s.io/v1/",
                "/apis/coordination.k8s.io/v1/leases",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
                "/apis/coordination.k8s.io/v1/watch/leases",
                "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases",
                "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases/{name}",
            ]
        );

        let discovery = op(&doc, "/apis/coordination.k8s.io/v1/", "get");
        assert_eq!(discovery["operationId"], "getCoordinationV1APIResources");
        assert_eq!(discovery["description"], "get available resources");
        assert!(discovery.get("x-kubernetes-action").is_none());
        assert_eq!(
            discovery["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList"
        );

        // All namespaces: a single route, every parameter on the path.
        let all = &doc["paths"]["/apis/coordination.k8s.io/v1/leases"];
        let mut expected: Vec<&str> = LIST_PARAMS.to_vec();
        expected.insert(5, "pretty");
        assert_eq!(names(&all["parameters"]), expected);
        assert_eq!(
            all["get"]["operationId"],
            "listCoordinationV1LeaseForAllNamespaces"
        );
        assert_eq!(all["get"]["x-kubernetes-action"], "list");
        assert!(all["get"].get("parameters").is_none());
        assert_eq!(
            all["get"]["responses"]["200"]["content"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            [
                "application/json",
                "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf",
                "application/vnd.kubernetes.protobuf;stream=watch",
                "application/yaml"
            ]
        );
        assert_eq!(
            all["get"]["responses"]["401"],
            json!({"description": "Unauthorized"})
        );

        let collection =
            &doc["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"];
        assert_eq!(names(&collection["parameters"]), ["namespace", "pretty"]);
        assert_eq!(
            collection["parameters"][0],
            json!({
                "description": "object name and auth scope, such as for teams and projects",
                "in": "path",
                "name": "namespace",
                "required": true,
                "schema": {"type": "string", "uniqueItems": true},
            })
        );
        assert_eq!(names(&collection["get"]["parameters"]), LIST_PARAMS);
        assert_eq!(
            collection["get"]["description"],
            "list or watch objects of kind Lease"
        );
        let post = &collection["post"];
        assert_eq!(post["operationId"], "createCoordinationV1NamespacedLease");
        assert_eq!(post["description"], "create a Lease");
        assert_eq!(post["x-kubernetes-action"], "post");
        assert_eq!(
            names(&post["parameters"]),
            ["dryRun", "fieldManager", "fieldValidation"]
        );
        assert_eq!(
            post["requestBody"],
            json!({
                "content": {"*/*": {"schema": {"$ref": "#/components/schemas/io.k8s.api.coordination.v1.Lease"}}},
                "required": true,
            })
        );
        assert_eq!(
            post["responses"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["200", "201", "202", "401"]
        );
        let deletecollection = &collection["delete"];
        assert_eq!(
            deletecollection["operationId"],
            "deleteCoordinationV1CollectionNamespacedLease"
        );
        assert_eq!(deletecollection["x-kubernetes-action"], "deletecollection");
        assert_eq!(
            names(&deletecollection["parameters"]),
            [
                "continue",
                "dryRun",
                "fieldSelector",
                "gracePeriodSeconds",
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                "labelSelector",
                "limit",
                "orphanDependents",
                "propagationPolicy",
                "resourceVersion",
                "resourceVersionMatch",
                "sendInitialEvents",
                "timeoutSeconds",
            ]
        );
        assert_eq!(
            deletecollection["requestBody"],
            json!({
                "content": {"*/*": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"}}},
            })
        );

        let item =
            &doc["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"];
        assert_eq!(names(&item["parameters"]), ["name", "namespace", "pretty"]);
        assert_eq!(item["parameters"][0]["description"], "name of the Lease");
        assert!(item["get"].get("parameters").is_none());
        assert_eq!(
            item["get"]["operationId"],
            "readCoordinationV1NamespacedLease"
        );
        assert_eq!(
            names(&item["put"]["parameters"]),
            ["dryRun", "fieldManager", "fieldValidation"]
        );
        assert_eq!(
            item["put"]["operationId"],
            "replaceCoordinationV1NamespacedLease"
        );
        assert_eq!(item["delete"]["description"], "delete a Lease");
        assert_eq!(
            names(&item["delete"]["parameters"]),
            [
                "dryRun",
                "gracePeriodSeconds",
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                "orphanDependents",
                "propagationPolicy",
            ]
        );
        assert_eq!(
            item["delete"]["responses"]["200"]["content"]["application/yaml"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"
        );
        let patch = &item["patch"];
        assert_eq!(patch["operationId"], "patchCoordinationV1NamespacedLease");
        assert_eq!(patch["description"], "partially update the specified Lease");
        assert_eq!(patch["tags"], json!(["coordination_v1"]));
        assert_eq!(patch["x-kubernetes-action"], "patch");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "coordination.k8s.io", "kind": "Lease", "version": "v1"})
        );
        assert_eq!(
            names(&patch["parameters"]),
            ["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        assert_eq!(
            patch["requestBody"]["content"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            [
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json"
            ]
        );
        assert_eq!(patch["requestBody"]["required"], true);
        assert_eq!(
            patch["responses"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["200", "201", "401"]
        );

        let watch = &doc["paths"]["/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases/{name}"];
        assert_eq!(
            watch["get"]["operationId"],
            "watchCoordinationV1NamespacedLease"
        );
        assert_eq!(watch["get"]["x-kubernetes-action"], "watch");
        let mut expected: Vec<&str> = LIST_PARAMS.to_vec();
        expected.splice(5..5, ["name", "namespace", "pretty"]);
        assert_eq!(names(&watch["parameters"]), expected);
        let watch_list = op(
            &doc,
            "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases",
            "get",
        );
        assert_eq!(
            watch_list["operationId"],
            "watchCoordinationV1NamespacedLeaseList"
        );
        assert_eq!(watch_list["x-kubernetes-action"], "watchlist");
        assert_eq!(
            op(&doc, "/apis/coordination.k8s.io/v1/watch/leases", "get")["operationId"],
            "watchCoordinationV1LeaseListForAllNamespaces"
        );
    }

    #[test]
    fn cluster_scoped_resource_and_subresources() {
        let defs = builtin();
        let doc = v3_group_version(&defs, "", "v1", &schemas(&defs, None)).unwrap();
        let paths: Vec<&str> = doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for path in [
            "/api/v1/",
            "/api/v1/namespaces",
            "/api/v1/namespaces/{name}",
            "/api/v1/namespaces/{name}/finalize",
            "/api/v1/namespaces/{name}/status",
            "/api/v1/watch/namespaces",
            "/api/v1/watch/namespaces/{name}",
            "/api/v1/configmaps",
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
        ] {
            assert!(paths.contains(&path), "{path}");
        }
        // No deletecollection for namespaces.
        assert!(doc["paths"]["/api/v1/namespaces"].get("delete").is_none());
        assert_eq!(
            op(&doc, "/api/v1/namespaces/{name}", "delete")["description"],
            "delete a Namespace"
        );
        let status = &doc["paths"]["/api/v1/namespaces/{name}/status"];
        assert_eq!(names(&status["parameters"]), ["name", "pretty"]);
        assert_eq!(status["get"]["operationId"], "readCoreV1NamespaceStatus");
        assert_eq!(
            status["get"]["description"],
            "read status of the specified Namespace"
        );
        assert_eq!(status["put"]["operationId"], "replaceCoreV1NamespaceStatus");
        assert_eq!(status["patch"]["operationId"], "patchCoreV1NamespaceStatus");
        assert_eq!(
            status["patch"]["description"],
            "partially update status of the specified Namespace"
        );
        assert_eq!(
            status["patch"]["x-kubernetes-group-version-kind"],
            json!({"group": "", "kind": "Namespace", "version": "v1"})
        );
        assert_eq!(
            names(&status["patch"]["parameters"]),
            ["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        // finalize has a single route: everything is on the path.
        let finalize = &doc["paths"]["/api/v1/namespaces/{name}/finalize"];
        assert_eq!(
            names(&finalize["parameters"]),
            [
                "dryRun",
                "fieldManager",
                "fieldValidation",
                "name",
                "pretty"
            ]
        );
        assert_eq!(
            finalize["put"]["operationId"],
            "replaceCoreV1NamespaceFinalize"
        );
        assert_eq!(
            finalize["put"]["description"],
            "replace finalize of the specified Namespace"
        );
        assert!(finalize.get("get").is_none());
    }

    #[test]
    fn root_and_group_documents() {
        let defs = builtin();
        let api = v3_document(&defs, "api", &schemas(&defs, None)).unwrap();
        assert_eq!(
            op(&api, "/api/", "get")["operationId"],
            "getCoreAPIVersions"
        );
        let apis = v3_document(&defs, "/apis/", &schemas(&defs, None)).unwrap();
        assert_eq!(op(&apis, "/apis/", "get")["operationId"], "getAPIVersions");
        assert_eq!(op(&apis, "/apis/", "get")["tags"], json!(["apis"]));
        let group = v3_document(&defs, "apis/apps", &schemas(&defs, None)).unwrap();
        let get = op(&group, "/apis/apps/", "get");
        assert_eq!(get["operationId"], "getAppsAPIGroup");
        assert_eq!(get["description"], "get information of a group");
        assert!(v3_document(&defs, "apis/batch", &schemas(&defs, None)).is_none());
        assert!(v3_document(&defs, "apis/apps/v2", &schemas(&defs, None)).is_none());
        assert!(v3_document(&defs, "apis/apps/v1/extra", &schemas(&defs, None)).is_none());
    }

    #[test]
    fn index_lists_documents_with_their_hashes() {
        let defs = builtin();
        let index = v3_index(&defs, &schemas(&defs, None));
        let paths = index["paths"].as_object().unwrap();
        assert_eq!(
            paths.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "api",
                "api/v1",
                "apis",
                "apis/apps",
                "apis/apps/v1",
                "apis/coordination.k8s.io",
                "apis/coordination.k8s.io/v1",
                "apis/events.k8s.io",
                "apis/events.k8s.io/v1",
            ]
        );
        for (path, entry) in paths {
            let url = entry["serverRelativeURL"].as_str().unwrap();
            let hash = v3_hash(&v3_document(&defs, path, &schemas(&defs, None)).unwrap());
            assert_eq!(hash.len(), 128);
            assert_eq!(url, format!("/openapi/v3/{path}?hash={hash}"));
        }
        // Deterministic.
        assert_eq!(
            serde_json::to_vec(&v3_index(&defs, &schemas(&defs, None))).unwrap(),
            serde_json::to_vec(&index).unwrap()
        );
        assert_eq!(
            serde_json::to_vec(&v2(&defs, &schemas(&defs, None))).unwrap(),
            serde_json::to_vec(&v2(&defs, &schemas(&defs, None))).unwrap()
        );
    }

    #[test]
    fn delete_returning_the_object_and_other_verb_sets() {
        struct ReturnsObject;
        impl crate::resource::Strategy for ReturnsObject {
            fn validate(
                &self,
                _object: &Value,
            ) -> kapi_apimachinery::validation::field::FieldErrors {
                Default::default()
            }
            fn return_deleted_object(&self) -> bool {
                true
            }
        }
        let base = def(
            "",
            "v1",
            "Namespace",
            "namespaces",
            false,
            &["ns"],
            &[],
            no_deletecollection(),
            vec![status()],
        );
        let mut namespaces = (*base).clone();
        namespaces.strategy = Arc::new(ReturnsObject);
        let readonly = def(
            "",
            "v1",
            "ComponentStatus",
            "componentstatuses",
            false,
            &["cs"],
            &[],
            Verbs::GET | Verbs::LIST,
            vec![],
        );
        let defs = vec![Arc::new(namespaces), readonly];
        let doc = v3_group_version(&defs, "", "v1", &schemas(&defs, None)).unwrap();
        assert_eq!(
            op(&doc, "/api/v1/namespaces/{name}", "delete")["responses"]["200"]["content"]["application/json"]
                ["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.Namespace"
        );
        assert_eq!(
            op(&doc, "/api/v1/componentstatuses", "get")["description"],
            "list objects of kind ComponentStatus"
        );
        assert!(
            doc["paths"]
                .get("/api/v1/watch/componentstatuses")
                .is_none()
        );
        assert!(
            doc["paths"]["/api/v1/componentstatuses/{name}"]
                .get("patch")
                .is_none()
        );
    }
}
