//! OpenAPI documents computed from the served [`ResourceDefinition`]s: the `/openapi/v3` index,
//! one OpenAPI 3.0 document per discovery path (`api`, `api/v1`, `apis`, `apis/<group>`,
//! `apis/<group>/<version>`), and the swagger 2.0 document of `/openapi/v2`.
//!
//! Paths and operations are built the way kube-apiserver builds them: the routes its REST
//! installer registers for each verb of a resource (list, create, deletecollection, the
//! deprecated watch routes, read, replace, patch, delete, list and watch across namespaces,
//! subresources), the query parameters of the meta/v1 option types (ListOptions, CreateOptions,
//! UpdateOptions, PatchOptions, DeleteOptions), operation IDs and tags from the route's path,
//! parameters shared by every operation of a path moved to the path, parameters sorted by name,
//! the `x-kubernetes-action` and `x-kubernetes-group-version-kind` extensions, response content
//! types, the 401 response every operation has, and (v2) the shared `parameters` section with
//! upstream's names. kubectl relies on the PATCH operations: it decides that the server
//! supports the `fieldValidation` parameter when the v3 document of an object's group version
//! has a PATCH operation with the object's group-version-kind and that query parameter.
//!
//! Schemas: the full definitions the server's schema provider gives (every built-in type, with
//! upstream's descriptions and Kubernetes extensions, so `kubectl explain` and kubectl's
//! client-side validation work), plus the meta/v1 and discovery types. A kind the provider does
//! not know is described only with `apiVersion`, `kind` and `metadata`; such incomplete kind
//! schemas deliberately carry no `x-kubernetes-group-version-kind`: `kubectl apply` computes
//! strategic merge patches from the v3 schema it finds by that extension and warns when a field
//! is missing from it; without the extension it silently uses its compiled-in types.
//!
//! Documents are `serde_json::Value`s (keys sorted, so the bytes are deterministic); serve
//! `serde_json::to_vec(&doc)`, whose hash is [`v3_hash`]. [`Documents`] generates the served
//! bytes once, on first request.
//!
//! The module's files: this one holds what every document is built from (the shared constants,
//! definition names, the meta/v1 option parameters, the routes of each resource and discovery
//! path, and routes grouped by path); `meta_schemas` the hand-written meta/v1 and discovery
//! schemas; `schemas` the schema set and its v2/v3 forms; `v3` and `v2` the two document
//! formats; `serving` the HTTP answers and their caching; `v2proto` the protobuf encoding of
//! v2.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};

mod meta_schemas;
mod schemas;
mod serving;
mod v2;
mod v2proto;
mod v3;

pub use schemas::{kind_definitions, schemas};
pub use serving::Documents;
pub use v2::v2;
pub use v3::{v3_document, v3_group_version, v3_hash, v3_index};

use crate::resource::{ResourceDefinition, Verbs};

/// `info.title` of every document.
pub const INFO_TITLE: &str = "Kubernetes";
/// `info.version` of every document: kube-apiserver writes its emulation version there.
pub const INFO_VERSION: &str = "1.35";

const SCHEMAS_V3: &str = "#/components/schemas/";
const DEFINITIONS_V2: &str = "#/definitions/";
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

/// What the served media types are, as upstream lists them in `produces`.
const MEDIA_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const STREAM_MEDIA_TYPES: &[&str] = &[
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
/// What custom resources accept: no strategic merge patch.
const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];
const ANY_TYPE: &[&str] = &["*/*"];

// ---------------------------------------------------------------------------------------------
// Parameters

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ParamIn {
    Body,
    Path,
    Query,
}

impl ParamIn {
    fn as_str(self) -> &'static str {
        match self {
            ParamIn::Body => "body",
            ParamIn::Path => "path",
            ParamIn::Query => "query",
        }
    }
}

/// One route parameter. A body parameter has a `schema` (a definition name) instead of a type.
#[derive(Clone, Debug)]
struct Param {
    name: &'static str,
    location: ParamIn,
    ty: &'static str,
    description: String,
    required: bool,
    schema: Option<String>,
}

fn query(name: &'static str, ty: &'static str, description: &str) -> Param {
    Param {
        name,
        location: ParamIn::Query,
        ty,
        description: description.to_string(),
        required: false,
        schema: None,
    }
}

fn path_param(name: &'static str, description: String) -> Param {
    Param {
        name,
        location: ParamIn::Path,
        ty: "string",
        description,
        required: true,
        schema: None,
    }
}

fn body(schema: String, required: bool) -> Param {
    Param {
        name: "body",
        location: ParamIn::Body,
        ty: "",
        description: String::new(),
        required,
        schema: Some(schema),
    }
}

const PRETTY: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
const NAMESPACE: &str = "object name and auth scope, such as for teams and projects";
const DRY_RUN: &str = "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed";
const FIELD_MANAGER: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.";
const FIELD_MANAGER_PATCH: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).";
const FIELD_VALIDATION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";
const FORCE: &str = "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.";
const GRACE_PERIOD: &str = "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.";
const ORPHAN_DEPENDENTS: &str = "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.";
const PROPAGATION_POLICY: &str = "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.";
const IGNORE_STORE_READ_ERROR: &str = "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it";
const LABEL_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.";
const FIELD_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.";
const WATCH: &str = "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.";
const ALLOW_WATCH_BOOKMARKS: &str = "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.";
const RESOURCE_VERSION: &str = "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const RESOURCE_VERSION_MATCH: &str = "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const TIMEOUT_SECONDS: &str = "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.";
const LIMIT: &str = "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.";
const CONTINUE: &str = "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.";
const SEND_INITIAL_EVENTS: &str = "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.";

fn pretty() -> Param {
    query("pretty", "string", PRETTY)
}

/// ListOptions' query parameters, without the `excluded` ones.
fn list_options(excluded: &[&str]) -> Vec<Param> {
    [
        query("labelSelector", "string", LABEL_SELECTOR),
        query("fieldSelector", "string", FIELD_SELECTOR),
        query("watch", "boolean", WATCH),
        query("allowWatchBookmarks", "boolean", ALLOW_WATCH_BOOKMARKS),
        query("resourceVersion", "string", RESOURCE_VERSION),
        query("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
        query("timeoutSeconds", "integer", TIMEOUT_SECONDS),
        query("limit", "integer", LIMIT),
        query("continue", "string", CONTINUE),
        query("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
    ]
    .into_iter()
    .filter(|p| !excluded.contains(&p.name))
    .collect()
}

fn create_options() -> Vec<Param> {
    vec![
        query("dryRun", "string", DRY_RUN),
        query("fieldManager", "string", FIELD_MANAGER),
        query("fieldValidation", "string", FIELD_VALIDATION),
    ]
}

fn update_options() -> Vec<Param> {
    create_options()
}

fn patch_options() -> Vec<Param> {
    vec![
        query("dryRun", "string", DRY_RUN),
        query("force", "boolean", FORCE),
        query("fieldManager", "string", FIELD_MANAGER_PATCH),
        query("fieldValidation", "string", FIELD_VALIDATION),
    ]
}

fn delete_options() -> Vec<Param> {
    vec![
        query("gracePeriodSeconds", "integer", GRACE_PERIOD),
        query("orphanDependents", "boolean", ORPHAN_DEPENDENTS),
        query("propagationPolicy", "string", PROPAGATION_POLICY),
        query("dryRun", "string", DRY_RUN),
        query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "boolean",
            IGNORE_STORE_READ_ERROR,
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Routes

/// One operation as kube-apiserver's REST installer registers it.
#[derive(Clone, Debug)]
struct Route {
    method: &'static str,
    path: String,
    /// The operation before the group/version are woven in, e.g. `listNamespacedConfigMap`.
    operation: String,
    description: String,
    /// `x-kubernetes-action` and `x-kubernetes-group-version-kind`, for resource routes.
    action: Option<&'static str>,
    gvk: Option<(String, String, String)>,
    params: Vec<Param>,
    consumes: &'static [&'static str],
    produces: Vec<&'static str>,
    /// (status code, description, definition name).
    responses: Vec<(u16, &'static str, String)>,
}

/// Kube-like capitalization of an operation ID segment: letters, `_` and (not first) digits
/// are kept, anything else is dropped and capitalizes the next kept character.
fn to_valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.char_indices() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_numeric()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// Upstream's operation ID and tags of a route: the verb prefix, then the group (without
/// `.k8s.io`, `core` for the legacy group) and version, then the rest of the operation.
fn operation_id_and_tags(operation: &str, path: &str) -> (String, Vec<String>) {
    // The shortest verb the operation starts with, as upstream's trie finds it.
    const VERBS: &[&str] = &[
        "get",
        "log",
        "read",
        "replace",
        "patch",
        "delete",
        "deletecollection",
        "watch",
        "connect",
        "proxy",
        "list",
        "create",
    ];
    let mut prefix = VERBS
        .iter()
        .filter(|verb| operation.starts_with(**verb))
        .min_by_key(|verb| verb.len())
        .map(|verb| verb.to_string())
        .unwrap_or_default();
    let rest = &operation[prefix.len()..];
    let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if parts.first() == Some(&"api") {
        parts.splice(0..1, ["apis", "core"]);
    }
    let mut tags = Vec::new();
    if parts.len() >= 2 && parts[0] == "apis" {
        let trimmed = parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]);
        prefix += &to_valid_operation_id(trimmed, !prefix.is_empty());
        let mut tag = to_valid_operation_id(trimmed, false);
        if parts.len() > 2 {
            prefix += &to_valid_operation_id(parts[2], !prefix.is_empty());
            tag = format!("{tag}_{}", to_valid_operation_id(parts[2], false));
        }
        tags.push(tag);
    } else if !parts.is_empty() {
        tags.push(to_valid_operation_id(parts[0], false));
    }
    let id = format!(
        "{prefix}{}",
        to_valid_operation_id(rest, !prefix.is_empty())
    );
    (id, tags)
}

/// `a`/`an` before a kind, none before a plural-looking one.
fn article(kind: &str) -> &'static str {
    if !kind.ends_with("ss") && kind.ends_with('s') {
        " "
    } else if kind
        .chars()
        .next()
        .is_some_and(|c| "aeiou".contains(c.to_ascii_lowercase()))
    {
        " an "
    } else {
        " a "
    }
}

/// Upper-cases the first letter (subresource names in operation IDs).
fn title(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `/api/v1` or `/apis/<group>/<version>`.
fn group_version_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The Go package path of a group's types as OpenAPI definition names spell it.
fn definition_package(group: &str) -> String {
    let known = match group {
        "" => Some("io.k8s.api.core"),
        "apiextensions.k8s.io" => Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"),
        "apiregistration.k8s.io" => Some("io.k8s.kube-aggregator.pkg.apis.apiregistration"),
        "internal.apiserver.k8s.io" => Some("io.k8s.api.apiserverinternal"),
        "flowcontrol.apiserver.k8s.io" => Some("io.k8s.api.flowcontrol"),
        "rbac.authorization.k8s.io" => Some("io.k8s.api.rbac"),
        _ => None,
    };
    if let Some(known) = known {
        return known.to_string();
    }
    if let Some(name) = group
        .strip_suffix(".k8s.io")
        .filter(|name| !name.contains('.'))
    {
        return format!("io.k8s.api.{name}");
    }
    if !group.contains('.') {
        return format!("io.k8s.api.{group}");
    }
    // Custom resources: the group reversed, as apiextensions names them.
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// The OpenAPI definition name of a kind, e.g. `io.k8s.api.core.v1.ConfigMap`.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    format!("{}.{version}.{kind}", definition_package(group))
}

fn meta(name: &str) -> String {
    format!("{META}{name}")
}

/// The routes of one resource and its subresources.
fn resource_routes(def: &ResourceDefinition) -> Vec<Route> {
    let group = def.group_version.group.as_str();
    let version = def.group_version.version.as_str();
    let prefix = group_version_prefix(group, version);
    let kind = &def.kind;
    let object = definition_name(group, version, kind);
    let list = definition_name(group, version, &def.list_kind);
    let gvk = Some((group.to_string(), version.to_string(), kind.to_string()));
    let namespaced_op = if def.namespaced { "Namespaced" } else { "" };
    let verbs = def.verbs;
    let has = |v: Verbs| verbs.contains(v);
    let all_media: Vec<&'static str> = MEDIA_TYPES
        .iter()
        .chain(STREAM_MEDIA_TYPES)
        .copied()
        .collect();

    let (collection_path, scope_params) = if def.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", def.plural),
            vec![path_param("namespace", NAMESPACE.to_string())],
        )
    } else {
        (format!("{prefix}/{}", def.plural), Vec::new())
    };
    let watch_collection_path = collection_path.replacen(&prefix, &format!("{prefix}/watch"), 1);
    let item_path = format!("{collection_path}/{{name}}");
    let watch_item_path = format!("{watch_collection_path}/{{name}}");
    let name_param = path_param("name", format!("name of the {kind}"));
    let mut item_params = scope_params.clone();
    item_params.push(name_param);

    let route = |method: &'static str,
                 path: &str,
                 action: &'static str,
                 operation: String,
                 description: String,
                 params: Vec<Param>,
                 produces: Vec<&'static str>,
                 responses: Vec<(u16, &'static str, String)>| Route {
        method,
        path: path.to_string(),
        operation,
        description,
        action: Some(action),
        gvk: gvk.clone(),
        consumes: match method {
            "PATCH" if def.capabilities.strategic_merge_patch => PATCH_TYPES,
            "PATCH" => CUSTOM_PATCH_TYPES,
            _ => ANY_TYPE,
        },
        params,
        produces,
        responses,
    };
    let with = |base: &[Param], extra: Vec<Param>| -> Vec<Param> {
        let mut params = vec![pretty()];
        params.extend(extra);
        params.extend(base.iter().cloned());
        params
    };
    let delete_returns = if def.strategy.return_deleted_object() {
        object.clone()
    } else {
        meta("Status")
    };

    let mut routes = Vec::new();
    let list_all = has(Verbs::LIST);
    if list_all {
        let description = if has(Verbs::WATCH) {
            format!("list or watch objects of kind {kind}")
        } else {
            format!("list objects of kind {kind}")
        };
        routes.push(route(
            "GET",
            &collection_path,
            "list",
            format!("list{namespaced_op}{kind}"),
            description,
            with(&scope_params, list_options(&[])),
            all_media.clone(),
            vec![(200, "OK", list.clone())],
        ));
    }
    if has(Verbs::CREATE) {
        let mut params = with(&scope_params, create_options());
        params.push(body(object.clone(), true));
        routes.push(route(
            "POST",
            &collection_path,
            "post",
            format!("create{namespaced_op}{kind}"),
            format!("create{}{kind}", article(kind)),
            params,
            MEDIA_TYPES.to_vec(),
            vec![
                (200, "OK", object.clone()),
                (201, "Created", object.clone()),
                (202, "Accepted", object.clone()),
            ],
        ));
    }
    if has(Verbs::DELETECOLLECTION) {
        let mut extra = delete_options();
        extra.extend(list_options(&["watch", "allowWatchBookmarks"]));
        let mut params = with(&scope_params, extra);
        params.push(body(meta("DeleteOptions"), false));
        routes.push(route(
            "DELETE",
            &collection_path,
            "deletecollection",
            format!("deletecollection{namespaced_op}{kind}"),
            format!("delete collection of {kind}"),
            params,
            MEDIA_TYPES.to_vec(),
            vec![(200, "OK", meta("Status"))],
        ));
    }
    if has(Verbs::WATCH) && list_all {
        routes.push(route(
            "GET",
            &watch_collection_path,
            "watchlist",
            format!("watch{namespaced_op}{kind}List"),
            format!(
                "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
            ),
            with(&scope_params, list_options(&[])),
            all_media.clone(),
            vec![(200, "OK", meta("WatchEvent"))],
        ));
    }
    // Item-level operations: on the object itself, then on each subresource (status and
    // finalize read and write the parent's kind).
    let mut targets = vec![(item_path.clone(), None, verbs)];
    targets.extend(def.subresources.iter().map(|sub| {
        (
            format!("{item_path}/{}", sub.name),
            Some(sub.name),
            sub.verbs,
        )
    }));
    for (path, sub, target_verbs) in targets {
        let on = |v: Verbs| target_verbs.contains(v);
        let suffix = sub.map(title).unwrap_or_default();
        // "read the specified Lease" / "read status of the specified Namespace".
        let specified = |verb: &str| match sub {
            None => format!("{verb} the specified {kind}"),
            Some(sub) => format!("{verb} {sub} of the specified {kind}"),
        };
        // "delete a Lease" / "delete status of a Namespace".
        let one = |verb: &str| match sub {
            None => format!("{verb}{}{kind}", article(kind)),
            Some(sub) => format!("{verb} {sub} of{}{kind}", article(kind)),
        };
        if on(Verbs::GET) {
            routes.push(route(
                "GET",
                &path,
                "get",
                format!("read{namespaced_op}{kind}{suffix}"),
                specified("read"),
                with(&item_params, Vec::new()),
                MEDIA_TYPES.to_vec(),
                vec![(200, "OK", object.clone())],
            ));
        }
        if on(Verbs::UPDATE) {
            let mut params = with(&item_params, update_options());
            params.push(body(object.clone(), true));
            routes.push(route(
                "PUT",
                &path,
                "put",
                format!("replace{namespaced_op}{kind}{suffix}"),
                specified("replace"),
                params,
                MEDIA_TYPES.to_vec(),
                vec![
                    (200, "OK", object.clone()),
                    (201, "Created", object.clone()),
                ],
            ));
        }
        if on(Verbs::PATCH) {
            let mut params = with(&item_params, patch_options());
            params.push(body(meta("Patch"), true));
            routes.push(route(
                "PATCH",
                &path,
                "patch",
                format!("patch{namespaced_op}{kind}{suffix}"),
                specified("partially update"),
                params,
                MEDIA_TYPES.to_vec(),
                vec![
                    (200, "OK", object.clone()),
                    (201, "Created", object.clone()),
                ],
            ));
        }
        // The object itself is created on its collection (above).
        if sub.is_some() && on(Verbs::CREATE) {
            let mut params = with(&item_params, create_options());
            params.push(body(object.clone(), true));
            routes.push(route(
                "POST",
                &path,
                "post",
                format!("create{namespaced_op}{kind}{suffix}"),
                one("create"),
                params,
                MEDIA_TYPES.to_vec(),
                vec![
                    (200, "OK", object.clone()),
                    (201, "Created", object.clone()),
                    (202, "Accepted", object.clone()),
                ],
            ));
        }
        if on(Verbs::DELETE) {
            let returns = if sub.is_none() {
                delete_returns.clone()
            } else {
                meta("Status")
            };
            let mut params = with(&item_params, delete_options());
            params.push(body(meta("DeleteOptions"), false));
            routes.push(route(
                "DELETE",
                &path,
                "delete",
                format!("delete{namespaced_op}{kind}{suffix}"),
                one("delete"),
                params,
                MEDIA_TYPES.to_vec(),
                vec![(200, "OK", returns.clone()), (202, "Accepted", returns)],
            ));
        }
    }
    if has(Verbs::WATCH) {
        routes.push(route(
            "GET",
            &watch_item_path,
            "watch",
            format!("watch{namespaced_op}{kind}"),
            format!(
                "watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
            ),
            with(&item_params, list_options(&[])),
            all_media.clone(),
            vec![(200, "OK", meta("WatchEvent"))],
        ));
    }
    if def.namespaced && list_all {
        let path = format!("{prefix}/{}", def.plural);
        let description = if has(Verbs::WATCH) {
            format!("list or watch objects of kind {kind}")
        } else {
            format!("list objects of kind {kind}")
        };
        routes.push(route(
            "GET",
            &path,
            "list",
            format!("list{kind}ForAllNamespaces"),
            description,
            with(&[], list_options(&[])),
            all_media.clone(),
            vec![(200, "OK", list.clone())],
        ));
        if has(Verbs::WATCH) {
            routes.push(route(
                "GET",
                &format!("{prefix}/watch/{}", def.plural),
                "watchlist",
                format!("watch{kind}ListForAllNamespaces"),
                format!(
                    "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
                ),
                with(&[], list_options(&[])),
                all_media.clone(),
                vec![(200, "OK", meta("WatchEvent"))],
            ));
        }
    }
    routes
}

/// A discovery endpoint's GET route (`/api/`, `/apis/`, `/apis/<group>/`, `<gv>/`).
fn discovery_route(path: String, operation: &str, description: &str, response: String) -> Route {
    Route {
        method: "GET",
        path,
        operation: operation.to_string(),
        description: description.to_string(),
        action: None,
        gvk: None,
        params: Vec::new(),
        consumes: MEDIA_TYPES,
        produces: MEDIA_TYPES.to_vec(),
        responses: vec![(200, "OK", response)],
    }
}

/// What one OpenAPI v3 document (one discovery path) covers.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum DocumentKey {
    /// `api`: the legacy root.
    LegacyRoot,
    /// `apis`: the group list.
    Root,
    /// `apis/<group>`.
    Group(String),
    /// `api/v1`, `apis/<group>/<version>`.
    GroupVersion(String, String),
}

impl DocumentKey {
    fn path(&self) -> String {
        match self {
            DocumentKey::LegacyRoot => "api".into(),
            DocumentKey::Root => "apis".into(),
            DocumentKey::Group(group) => format!("apis/{group}"),
            DocumentKey::GroupVersion(group, version) => {
                group_version_prefix(group, version)[1..].to_string()
            }
        }
    }

    fn parse(path: &str) -> Option<DocumentKey> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match parts.as_slice() {
            ["api"] => Some(DocumentKey::LegacyRoot),
            ["apis"] => Some(DocumentKey::Root),
            ["api", version] => Some(DocumentKey::GroupVersion(
                String::new(),
                version.to_string(),
            )),
            ["apis", group] => Some(DocumentKey::Group(group.to_string())),
            ["apis", group, version] => Some(DocumentKey::GroupVersion(
                group.to_string(),
                version.to_string(),
            )),
            _ => None,
        }
    }
}

/// Every document kube-apiserver would list for these definitions.
fn document_keys(defs: &[Arc<ResourceDefinition>]) -> Vec<DocumentKey> {
    let mut keys = BTreeSet::from([DocumentKey::LegacyRoot, DocumentKey::Root]);
    for def in defs {
        let gv = &def.group_version;
        if !gv.group.is_empty() {
            keys.insert(DocumentKey::Group(gv.group.clone()));
        }
        keys.insert(DocumentKey::GroupVersion(
            gv.group.clone(),
            gv.version.clone(),
        ));
    }
    keys.into_iter().collect()
}

/// The routes of one document, or `None` when nothing is served there.
fn document_routes(defs: &[Arc<ResourceDefinition>], key: &DocumentKey) -> Option<Vec<Route>> {
    match key {
        DocumentKey::LegacyRoot => Some(vec![discovery_route(
            "/api/".into(),
            "getAPIVersions",
            "get available API versions",
            meta("APIVersions"),
        )]),
        DocumentKey::Root => Some(vec![discovery_route(
            "/apis/".into(),
            "getAPIVersions",
            "get available API versions",
            meta("APIGroupList"),
        )]),
        DocumentKey::Group(group) => {
            if group.is_empty() || !defs.iter().any(|def| def.group_version.group == *group) {
                return None;
            }
            Some(vec![discovery_route(
                format!("/apis/{group}/"),
                "getAPIGroup",
                "get information of a group",
                meta("APIGroup"),
            )])
        }
        DocumentKey::GroupVersion(group, version) => {
            let mut served: Vec<&Arc<ResourceDefinition>> = defs
                .iter()
                .filter(|def| {
                    def.group_version.group == *group && def.group_version.version == *version
                })
                .collect();
            if served.is_empty() {
                return None;
            }
            served.sort_by(|a, b| a.plural.cmp(&b.plural));
            // The CRD OpenAPI builder publishes the resources' routes only.
            let mut routes = match served.iter().all(|def| def.capabilities.dynamic) {
                true => Vec::new(),
                false => vec![discovery_route(
                    format!("{}/", group_version_prefix(group, version)),
                    "getAPIResources",
                    "get available resources",
                    meta("APIResourceList"),
                )],
            };
            routes.extend(served.into_iter().flat_map(|def| resource_routes(def)));
            Some(routes)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Path items

/// Routes grouped by path; per path, the parameters every route has (moved to the path).
struct PathGroup<'a> {
    routes: Vec<&'a Route>,
    common: Vec<&'a Param>,
}

fn group_by_path(routes: &[Route]) -> BTreeMap<String, PathGroup<'_>> {
    let mut by_path: BTreeMap<String, Vec<&Route>> = BTreeMap::new();
    for route in routes {
        by_path.entry(route.path.clone()).or_default().push(route);
    }
    by_path
        .into_iter()
        .map(|(path, routes)| {
            let mut common: Vec<&Param> = routes[0]
                .params
                .iter()
                .filter(|p| p.location != ParamIn::Body)
                .filter(|p| {
                    routes.iter().all(|r| {
                        r.params
                            .iter()
                            .any(|q| q.name == p.name && q.location == p.location)
                    })
                })
                .collect();
            sort_params(&mut common);
            (path, PathGroup { routes, common })
        })
        .collect()
}

fn sort_params(params: &mut [&Param]) {
    params.sort_by(|a, b| {
        a.name
            .cmp(b.name)
            .then(a.location.as_str().cmp(b.location.as_str()))
    });
}

fn is_common(group: &PathGroup<'_>, param: &Param) -> bool {
    group
        .common
        .iter()
        .any(|c| c.name == param.name && c.location == param.location)
}

fn method_key(method: &str) -> &'static str {
    match method {
        "GET" => "get",
        "PUT" => "put",
        "POST" => "post",
        "DELETE" => "delete",
        _ => "patch",
    }
}

fn operation_extensions(route: &Route, op: &mut Map<String, Value>) {
    if let Some(action) = route.action {
        op.insert("x-kubernetes-action".into(), json!(action));
    }
    if let Some((group, version, kind)) = &route.gvk {
        op.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": group, "kind": kind, "version": version}),
        );
    }
}

fn response_and_body_refs(routes: &[Route]) -> BTreeSet<String> {
    routes
        .iter()
        .flat_map(|r| {
            r.responses
                .iter()
                .map(|(_, _, schema)| schema.clone())
                .chain(r.params.iter().filter_map(|p| p.schema.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full schema set of the built-in kinds (the server's schema provider), for the tests
    /// of the documents that embed it.
    pub(super) fn full() -> std::sync::Arc<Map<String, Value>> {
        kapi_api::definitions()
    }

    #[test]
    fn operation_ids_and_tags() {
        let cases = [
            (
                "deletecollectionNamespacedLease",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                "deleteCoordinationV1CollectionNamespacedLease",
                "coordination_v1",
            ),
            (
                "listNamespacedConfigMap",
                "/api/v1/namespaces/{namespace}/configmaps",
                "listCoreV1NamespacedConfigMap",
                "core_v1",
            ),
            ("getAPIVersions", "/api/", "getCoreAPIVersions", "core"),
            ("getAPIVersions", "/apis/", "getAPIVersions", "apis"),
            (
                "getAPIGroup",
                "/apis/coordination.k8s.io/",
                "getCoordinationAPIGroup",
                "coordination",
            ),
            (
                "getAPIResources",
                "/apis/coordination.k8s.io/v1/",
                "getCoordinationV1APIResources",
                "coordination_v1",
            ),
            (
                "listNamespacedRole",
                "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
                "listRbacAuthorizationV1NamespacedRole",
                "rbacAuthorization_v1",
            ),
            (
                "patchFlowSchemaStatus",
                "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{name}/status",
                "patchFlowcontrolApiserverV1FlowSchemaStatus",
                "flowcontrolApiserver_v1",
            ),
            (
                "readNamespacedCronTab",
                "/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs/{name}",
                "readStableExampleComV1beta1NamespacedCronTab",
                "stableExampleCom_v1beta1",
            ),
        ];
        for (operation, path, id, tag) in cases {
            assert_eq!(
                operation_id_and_tags(operation, path),
                (id.to_string(), vec![tag.to_string()]),
                "{operation}"
            );
        }
    }

    #[test]
    fn definition_names() {
        assert_eq!(
            definition_name("", "v1", "ConfigMap"),
            "io.k8s.api.core.v1.ConfigMap"
        );
        assert_eq!(
            definition_name("apps", "v1", "Deployment"),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            definition_name("coordination.k8s.io", "v1", "Lease"),
            "io.k8s.api.coordination.v1.Lease"
        );
        assert_eq!(
            definition_name("rbac.authorization.k8s.io", "v1", "Role"),
            "io.k8s.api.rbac.v1.Role"
        );
        assert_eq!(
            definition_name("internal.apiserver.k8s.io", "v1alpha1", "StorageVersion"),
            "io.k8s.api.apiserverinternal.v1alpha1.StorageVersion"
        );
        assert_eq!(
            definition_name("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
        assert_eq!(
            definition_name("apiregistration.k8s.io", "v1", "APIService"),
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
        );
        assert_eq!(
            definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
    }
}
