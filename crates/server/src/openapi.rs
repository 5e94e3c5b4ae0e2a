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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE;
use serde_json::{Map, Value, json};

mod v2proto;

use kapi_apimachinery::gotime::{Timestamp, format_rfc1123_utc};
use kapi_apimachinery::status::ApiError;

use crate::discovery;
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
    let kind = def.kind;
    let object = definition_name(group, version, kind);
    let list = definition_name(group, version, def.list_kind);
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
            "PATCH" if !def.custom_resource => PATCH_TYPES,
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
            served.sort_by(|a, b| a.plural.cmp(b.plural));
            // The CRD OpenAPI builder publishes the resources' routes only.
            let mut routes = match served.iter().all(|def| def.custom_resource) {
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
// Schemas

fn string_prop() -> Value {
    json!({"type": "string"})
}

fn ref_to(name: &str) -> Value {
    json!({"$ref": format!("{SCHEMAS_V3}{name}")})
}

/// A `$ref` with sibling keywords (v3 wraps these in `allOf`, see [`wrap_refs`]).
fn ref_with(name: &str, extra: Value) -> Value {
    let mut value = ref_to(name);
    if let (Value::Object(map), Value::Object(extra)) = (&mut value, extra) {
        map.extend(extra);
    }
    value
}

fn gvk_list(entries: &[(&str, &str, &str)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|(group, version, kind)| json!({"group": group, "kind": kind, "version": version}))
            .collect(),
    )
}

/// `x-kubernetes-group-version-kind` of the meta/v1 option types, registered in every built-in
/// group version: sorted by group, version.
fn all_group_versions_gvk(kind: &str) -> Value {
    let mut gvs: BTreeSet<(&str, &str)> = discovery::PRIORITIES
        .iter()
        .map(|(g, v, _, _)| (*g, *v))
        .collect();
    gvs.insert((discovery::APIREGISTRATION_GROUP, "v1"));
    Value::Array(
        gvs.into_iter()
            .map(|(group, version)| json!({"group": group, "kind": kind, "version": version}))
            .collect(),
    )
}

const API_VERSION_DESC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

fn api_version_prop() -> Value {
    json!({"description": API_VERSION_DESC, "type": "string"})
}

fn kind_prop() -> Value {
    json!({"description": KIND_DESC, "type": "string"})
}

fn string_array(list_type: &str) -> Value {
    json!({"items": {"default": "", "type": "string"}, "type": "array", "x-kubernetes-list-type": list_type})
}

/// The meta/v1 (and runtime) schemas the documents reference, by definition name.
fn meta_schemas() -> BTreeMap<String, Value> {
    let mut s = BTreeMap::new();
    let string_map =
        json!({"additionalProperties": {"default": "", "type": "string"}, "type": "object"});
    s.insert(
        meta("Time"),
        json!({"description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.", "format": "date-time", "type": "string"}),
    );
    s.insert(
        meta("MicroTime"),
        json!({"description": "MicroTime is version of Time with microsecond level precision.", "format": "date-time", "type": "string"}),
    );
    s.insert(
        meta("FieldsV1"),
        json!({"description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.", "type": "object"}),
    );
    s.insert(
        meta("ManagedFieldsEntry"),
        json!({
            "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
            "properties": {
                "apiVersion": string_prop(),
                "fieldsType": string_prop(),
                "fieldsV1": ref_to(&meta("FieldsV1")),
                "manager": string_prop(),
                "operation": string_prop(),
                "subresource": string_prop(),
                "time": ref_to(&meta("Time")),
            },
            "type": "object",
        }),
    );
    s.insert(
        meta("OwnerReference"),
        json!({
            "description": "OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.",
            "properties": {
                "apiVersion": {"default": "", "type": "string"},
                "blockOwnerDeletion": {"type": "boolean"},
                "controller": {"type": "boolean"},
                "kind": {"default": "", "type": "string"},
                "name": {"default": "", "type": "string"},
                "uid": {"default": "", "type": "string"},
            },
            "required": ["apiVersion", "kind", "name", "uid"],
            "type": "object",
            "x-kubernetes-map-type": "atomic",
        }),
    );
    s.insert(
        meta("ObjectMeta"),
        json!({
            "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
            "properties": {
                "annotations": string_map.clone(),
                "creationTimestamp": ref_to(&meta("Time")),
                "deletionGracePeriodSeconds": {"format": "int64", "type": "integer"},
                "deletionTimestamp": ref_to(&meta("Time")),
                "finalizers": {
                    "items": {"default": "", "type": "string"},
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "generateName": string_prop(),
                "generation": {"format": "int64", "type": "integer"},
                "labels": string_map,
                "managedFields": {
                    "items": ref_with(&meta("ManagedFieldsEntry"), json!({"default": {}})),
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                },
                "name": string_prop(),
                "namespace": string_prop(),
                "ownerReferences": {
                    "items": ref_with(&meta("OwnerReference"), json!({"default": {}})),
                    "type": "array",
                    "x-kubernetes-list-map-keys": ["uid"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "uid",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "resourceVersion": string_prop(),
                "selfLink": string_prop(),
                "uid": string_prop(),
            },
            "type": "object",
        }),
    );
    s.insert(
        meta("ListMeta"),
        json!({
            "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.",
            "properties": {
                "continue": string_prop(),
                "remainingItemCount": {"format": "int64", "type": "integer"},
                "resourceVersion": string_prop(),
                "selfLink": string_prop(),
            },
            "type": "object",
        }),
    );
    s.insert(
        meta("StatusCause"),
        json!({
            "description": "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
            "properties": {"field": string_prop(), "message": string_prop(), "reason": string_prop()},
            "type": "object",
        }),
    );
    s.insert(
        meta("StatusDetails"),
        json!({
            "description": "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.",
            "properties": {
                "causes": {
                    "items": ref_with(&meta("StatusCause"), json!({"default": {}})),
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                },
                "group": string_prop(),
                "kind": string_prop(),
                "name": string_prop(),
                "retryAfterSeconds": {"format": "int32", "type": "integer"},
                "uid": string_prop(),
            },
            "type": "object",
        }),
    );
    s.insert(
        meta("Status"),
        json!({
            "description": "Status is a return value for calls that don't return other objects.",
            "properties": {
                "apiVersion": api_version_prop(),
                "code": {"format": "int32", "type": "integer"},
                "details": ref_to(&meta("StatusDetails")),
                "kind": kind_prop(),
                "message": string_prop(),
                "metadata": ref_with(&meta("ListMeta"), json!({"default": {}})),
                "reason": string_prop(),
                "status": string_prop(),
            },
            "type": "object",
            "x-kubernetes-group-version-kind": gvk_list(&[("", "v1", "Status")]),
        }),
    );
    s.insert(
        meta("Preconditions"),
        json!({
            "description": "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
            "properties": {"resourceVersion": string_prop(), "uid": string_prop()},
            "type": "object",
        }),
    );
    s.insert(
        meta("DeleteOptions"),
        json!({
            "description": "DeleteOptions may be provided when deleting an API object.",
            "properties": {
                "apiVersion": api_version_prop(),
                "dryRun": string_array("atomic"),
                "gracePeriodSeconds": {"format": "int64", "type": "integer"},
                "ignoreStoreReadErrorWithClusterBreakingPotential": {"type": "boolean"},
                "kind": kind_prop(),
                "orphanDependents": {"type": "boolean"},
                "preconditions": ref_to(&meta("Preconditions")),
                "propagationPolicy": string_prop(),
            },
            "type": "object",
            "x-kubernetes-group-version-kind": all_group_versions_gvk("DeleteOptions"),
        }),
    );
    s.insert(
        meta("Patch"),
        json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"}),
    );
    s.insert(
        "io.k8s.apimachinery.pkg.runtime.RawExtension".into(),
        json!({"description": "RawExtension is used to hold extensions in external versions.", "type": "object"}),
    );
    s.insert(
        meta("WatchEvent"),
        json!({
            "description": "Event represents a single event to a watched resource.",
            "properties": {
                "object": ref_with("io.k8s.apimachinery.pkg.runtime.RawExtension", json!({"default": {}})),
                "type": {"default": "", "type": "string"},
            },
            "required": ["type", "object"],
            "type": "object",
            "x-kubernetes-group-version-kind": all_group_versions_gvk("WatchEvent"),
        }),
    );
    s.insert(
        meta("ServerAddressByClientCIDR"),
        json!({
            "description": "ServerAddressByClientCIDR helps the client to determine the server address that they should use, depending on the clientCIDR that they match.",
            "properties": {"clientCIDR": {"default": "", "type": "string"}, "serverAddress": {"default": "", "type": "string"}},
            "required": ["clientCIDR", "serverAddress"],
            "type": "object",
        }),
    );
    s.insert(
        meta("GroupVersionForDiscovery"),
        json!({
            "description": "GroupVersion contains the \"group/version\" and \"version\" string of a version. It is made a struct to keep extensibility.",
            "properties": {"groupVersion": {"default": "", "type": "string"}, "version": {"default": "", "type": "string"}},
            "required": ["groupVersion", "version"],
            "type": "object",
        }),
    );
    let addresses = json!({
        "items": ref_with(&meta("ServerAddressByClientCIDR"), json!({"default": {}})),
        "type": "array",
        "x-kubernetes-list-type": "atomic",
    });
    s.insert(
        meta("APIVersions"),
        json!({
            "description": "APIVersions lists the versions that are available, to allow clients to discover the API at /api, which is the root path of the legacy v1 API.",
            "properties": {
                "apiVersion": api_version_prop(),
                "kind": kind_prop(),
                "serverAddressByClientCIDRs": addresses.clone(),
                "versions": string_array("atomic"),
            },
            "required": ["versions", "serverAddressByClientCIDRs"],
            "type": "object",
            "x-kubernetes-group-version-kind": gvk_list(&[("", "v1", "APIVersions")]),
        }),
    );
    s.insert(
        meta("APIGroup"),
        json!({
            "description": "APIGroup contains the name, the supported versions, and the preferred version of a group.",
            "properties": {
                "apiVersion": api_version_prop(),
                "kind": kind_prop(),
                "name": {"default": "", "type": "string"},
                "preferredVersion": ref_with(&meta("GroupVersionForDiscovery"), json!({"default": {}})),
                "serverAddressByClientCIDRs": addresses,
                "versions": {
                    "items": ref_with(&meta("GroupVersionForDiscovery"), json!({"default": {}})),
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                },
            },
            "required": ["name", "versions"],
            "type": "object",
            "x-kubernetes-group-version-kind": gvk_list(&[("", "v1", "APIGroup")]),
        }),
    );
    s.insert(
        meta("APIGroupList"),
        json!({
            "description": "APIGroupList is a list of APIGroup, to allow clients to discover the API at /apis.",
            "properties": {
                "apiVersion": api_version_prop(),
                "groups": {
                    "items": ref_with(&meta("APIGroup"), json!({"default": {}})),
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                },
                "kind": kind_prop(),
            },
            "required": ["groups"],
            "type": "object",
            "x-kubernetes-group-version-kind": gvk_list(&[("", "v1", "APIGroupList")]),
        }),
    );
    s.insert(
        meta("APIResource"),
        json!({
            "description": "APIResource specifies the name of a resource and whether it is namespaced.",
            "properties": {
                "categories": string_array("atomic"),
                "group": string_prop(),
                "kind": {"default": "", "type": "string"},
                "name": {"default": "", "type": "string"},
                "namespaced": {"default": false, "type": "boolean"},
                "shortNames": string_array("atomic"),
                "singularName": {"default": "", "type": "string"},
                "storageVersionHash": string_prop(),
                "verbs": {"items": {"default": "", "type": "string"}, "type": "array"},
                "version": string_prop(),
            },
            "required": ["name", "singularName", "namespaced", "kind", "verbs"],
            "type": "object",
        }),
    );
    s.insert(
        meta("APIResourceList"),
        json!({
            "description": "APIResourceList is a list of APIResource, it is used to expose the name of the resources supported in a specific group and version, and if the resource is namespaced.",
            "properties": {
                "apiVersion": api_version_prop(),
                "groupVersion": {"default": "", "type": "string"},
                "kind": kind_prop(),
                "resources": {
                    "items": ref_with(&meta("APIResource"), json!({"default": {}})),
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                },
            },
            "required": ["groupVersion", "resources"],
            "type": "object",
            "x-kubernetes-group-version-kind": gvk_list(&[("", "v1", "APIResourceList")]),
        }),
    );
    s
}

/// The schemas of a resource's kind and list kind. Incomplete: see the module documentation.
fn kind_schemas(def: &ResourceDefinition, out: &mut BTreeMap<String, Value>) {
    let group = def.group_version.group.as_str();
    let version = def.group_version.version.as_str();
    let kinds = (def.kind, def.list_kind, def.plural);
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
    let mut schemas = meta_schemas();
    for (name, schema) in full.into_iter().flatten() {
        let mut schema = schema.clone();
        to_v3_schema(&mut schema);
        schemas.insert(name.clone(), schema);
    }
    for def in defs {
        let gv = &def.group_version;
        if !schemas.contains_key(&definition_name(&gv.group, &gv.version, def.kind)) {
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
fn reachable(roots: BTreeSet<String>, schemas: &BTreeMap<String, Value>) -> Map<String, Value> {
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
fn wrap_refs(value: &mut Value) {
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
fn to_v2_schema(value: &mut Value) {
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

// ---------------------------------------------------------------------------------------------
// OpenAPI v3

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
    served.peek().is_some() && served.all(|d| d.custom_resource)
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

// ---------------------------------------------------------------------------------------------
// Serving

/// One served v3 document: its bytes and their hash (the `?hash=` of its URL, and its ETag).
struct V3Document {
    bytes: Vec<u8>,
    hash: String,
}

/// The v3 index and every v3 document, by path (`api/v1`, `apis/apps/v1`, ...).
struct V3Documents {
    index: Vec<u8>,
    documents: BTreeMap<String, V3Document>,
}

fn v3_documents(
    defs: &[Arc<ResourceDefinition>],
    schemas: &BTreeMap<String, Value>,
) -> V3Documents {
    let documents: BTreeMap<String, V3Document> = document_keys(defs)
        .into_iter()
        .filter_map(|key| {
            let path = key.path();
            let doc = v3_document(defs, &path, schemas)?;
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            let hash = discovery::sha512_hex(&bytes);
            Some((path, V3Document { bytes, hash }))
        })
        .collect();
    let paths: Map<String, Value> = documents
        .iter()
        .map(|(path, doc)| {
            let url = format!("/openapi/v3/{path}?hash={}", doc.hash);
            (path.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    let index = serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default();
    V3Documents { index, documents }
}

/// The served OpenAPI documents of a fixed set of definitions, generated once, on first
/// request (generating every document with full schemas takes a while; start-up does not
/// wait for it).
#[derive(Default)]
pub struct Documents {
    schemas: OnceLock<BTreeMap<String, Value>>,
    v2: OnceLock<Value>,
    v2_json: OnceLock<Vec<u8>>,
    v2_protobuf: OnceLock<Vec<u8>>,
    v3: OnceLock<V3Documents>,
}

impl Documents {
    fn schemas(
        &self,
        defs: &[Arc<ResourceDefinition>],
        full: Option<&Map<String, Value>>,
    ) -> &BTreeMap<String, Value> {
        self.schemas.get_or_init(|| schemas(defs, full))
    }

    fn v3(
        &self,
        defs: &[Arc<ResourceDefinition>],
        full: Option<&Map<String, Value>>,
    ) -> &V3Documents {
        self.v3
            .get_or_init(|| v3_documents(defs, self.schemas(defs, full)))
    }

    /// The v2 document as JSON, or as protobuf when the client prefers it.
    fn v2_bytes(
        &self,
        defs: &[Arc<ResourceDefinition>],
        full: Option<&Map<String, Value>>,
        protobuf: bool,
    ) -> (&[u8], &'static str) {
        let doc = || self.v2.get_or_init(|| v2(defs, self.schemas(defs, full)));
        if protobuf {
            let bytes = self.v2_protobuf.get_or_init(|| v2proto::encode(doc()));
            return (bytes, v2proto::CONTENT_TYPE);
        }
        let bytes = self
            .v2_json
            .get_or_init(|| serde_json::to_vec(doc()).unwrap_or_default());
        (bytes, "application/json")
    }

    /// Answers `/openapi/v2` and `/openapi/v3[/<path>]` as kube-apiserver does (kube-openapi's
    /// handlers): JSON (v2 also as gnostic protobuf) with a quoted ETag (304 for a matching
    /// `If-None-Match`); a v3 document asked for with its current `?hash=` is
    /// `Cache-Control: public, immutable`, one asked for with another hash redirects (301) to
    /// its current URL. `None` for other paths; 406 for a v2 request accepting neither form.
    pub fn respond<B>(
        &self,
        request: &http::Request<B>,
        defs: &[Arc<ResourceDefinition>],
        full: Option<&Map<String, Value>>,
    ) -> Option<Result<http::Response<crate::body::Body>, ApiError>> {
        let path = request.uri().path().trim_end_matches('/');
        let mut content_type = "application/json";
        let (bytes, hash, immutable) = match path.strip_prefix("/openapi/") {
            Some("v2") => {
                let accept = request.headers().get(http::header::ACCEPT);
                let Some(protobuf) = v2_wants_protobuf(accept.and_then(|v| v.to_str().ok())) else {
                    return Some(Err(ApiError::not_acceptable([
                        "application/json",
                        v2proto::MEDIA_TYPE,
                    ])));
                };
                let (bytes, media_type) = self.v2_bytes(defs, full, protobuf);
                content_type = media_type;
                (bytes, discovery::sha512_hex(bytes), false)
            }
            Some("v3") => {
                let index = &self.v3(defs, full).index;
                (index.as_slice(), discovery::sha512_hex(index), false)
            }
            Some(other) => {
                let key = DocumentKey::parse(other.strip_prefix("v3/")?)?.path();
                let doc = self.v3(defs, full).documents.get(&key)?;
                let query = request.uri().query().unwrap_or_default();
                let hash = query.split('&').find_map(|pair| pair.strip_prefix("hash="));
                match hash {
                    Some(hash) if hash != doc.hash => {
                        let location = format!("/openapi/v3/{key}?hash={}", doc.hash);
                        return Some(Ok(redirect(&location)));
                    }
                    Some(_) => (doc.bytes.as_slice(), doc.hash.clone(), true),
                    None => (doc.bytes.as_slice(), doc.hash.clone(), false),
                }
            }
            None => return None,
        };
        let body = (bytes, content_type);
        Some(Ok(document_response(request, body, &hash, immutable)))
    }
}

/// Whether a v2 request gets protobuf (`Some(true)`), JSON (`Some(false)`) or nothing: the
/// first Accept clause naming either (or a wildcard) decides; no Accept means JSON.
fn v2_wants_protobuf(accept: Option<&str>) -> Option<bool> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(false);
    };
    accept.split(',').find_map(|clause| {
        let media = clause.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json" | "application/*" | "*/*" => Some(false),
            v2proto::MEDIA_TYPE | v2proto::CONTENT_TYPE => Some(true),
            _ => None,
        }
    })
}

/// 301 to `location`.
fn redirect(location: &str) -> http::Response<crate::body::Body> {
    let mut response = http::Response::new(crate::body::empty());
    *response.status_mut() = http::StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = http::HeaderValue::from_str(location) {
        response.headers_mut().insert(http::header::LOCATION, value);
    }
    response
}

/// A document with its ETag, or 304 when the client has it.
fn document_response<B>(
    request: &http::Request<B>,
    (bytes, content_type): (&[u8], &str),
    hash: &str,
    immutable: bool,
) -> http::Response<crate::body::Body> {
    use http::header;
    let etag = format!("\"{hash}\"");
    let fresh = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut response = match fresh {
        true => http::Response::new(crate::body::empty()),
        false => http::Response::new(crate::body::full(bytes.to_vec())),
    };
    if fresh {
        *response.status_mut() = http::StatusCode::NOT_MODIFIED;
    }
    let headers = response.headers_mut();
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(value) = http::HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(header::CONTENT_TYPE, content_type);
    set(header::ETAG, &etag);
    if immutable {
        set(header::VARY, "Accept");
        set(header::CACHE_CONTROL, "public, immutable");
        let year = Timestamp::now().seconds.saturating_add(365 * 24 * 3600);
        set(header::EXPIRES, &format_rfc1123_utc(year));
    }
    response
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v2 (swagger 2.0)

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
    use crate::discovery::tests::{builtin, def, no_deletecollection, status};

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
            supports_field_validation(&doc, &gv.group, &gv.version, d.kind).unwrap();
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

    fn full() -> &'static Map<String, Value> {
        crate::endpoints::SchemaProvider::definitions(&crate::endpoints::BuiltinSchemas)
    }

    #[test]
    fn full_schemas_are_served_in_v2_and_v3_form() {
        let defs = builtin();
        let start = std::time::Instant::now();
        let schemas = super::schemas(&defs, Some(full()));
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

    fn get(
        documents: &Documents,
        uri: &str,
        etag: Option<&str>,
    ) -> http::Response<crate::body::Body> {
        let mut request = http::Request::builder().uri(uri);
        if let Some(etag) = etag {
            request = request.header(http::header::IF_NONE_MATCH, etag);
        }
        let request = request.body(()).unwrap();
        documents
            .respond(&request, &builtin(), Some(full()))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn documents_are_served_with_etags_and_hashes() {
        let documents = Documents::default();
        let index = get(&documents, "/openapi/v3", None);
        assert_eq!(index.status(), 200);
        let bytes =
            futures::executor::block_on(http_body_util::BodyExt::collect(index.into_body()))
                .unwrap()
                .to_bytes();
        let index: Value = serde_json::from_slice(&bytes).unwrap();
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let hash = url.rsplit_once("?hash=").unwrap().1;

        let plain = get(&documents, "/openapi/v3/apis/apps/v1", None);
        assert_eq!(plain.status(), 200);
        let etag = format!("\"{hash}\"");
        assert_eq!(plain.headers()["etag"], etag.as_str());
        assert!(plain.headers().get("cache-control").is_none());

        let pinned = get(&documents, url, None);
        assert_eq!(pinned.headers()["cache-control"], "public, immutable");
        assert_eq!(pinned.headers()["vary"], "Accept");
        assert!(
            pinned.headers()["expires"]
                .to_str()
                .unwrap()
                .ends_with(" UTC")
        );

        let stale = get(&documents, "/openapi/v3/apis/apps/v1?hash=ABC", None);
        assert_eq!(stale.status(), 301);
        assert_eq!(stale.headers()["location"], url);

        let cached = get(&documents, "/openapi/v3/apis/apps/v1", Some(&etag));
        assert_eq!(cached.status(), 304);
        assert_eq!(get(&documents, "/openapi/v3/api/v1", None).status(), 200);
        assert_eq!(get(&documents, "/openapi/v3/apis/apps", None).status(), 200);
        assert_eq!(get(&documents, "/openapi/v2", None).status(), 200);
        let missing = http::Request::builder()
            .uri("/openapi/v3/apis/nothing/v1")
            .body(())
            .unwrap();
        assert!(
            documents
                .respond(&missing, &builtin(), Some(full()))
                .is_none()
        );
    }

    #[test]
    fn v2_is_json_or_protobuf_by_accept() {
        let proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(v2_wants_protobuf(None), Some(false));
        assert_eq!(v2_wants_protobuf(Some("application/json")), Some(false));
        assert_eq!(v2_wants_protobuf(Some(proto)), Some(true));
        assert_eq!(
            v2_wants_protobuf(Some(&format!("{proto}, application/json"))),
            Some(true)
        );
        assert_eq!(v2_wants_protobuf(Some("text/html")), None);
        let documents = Documents::default();
        let request = http::Request::builder()
            .uri("/openapi/v2")
            .header(http::header::ACCEPT, proto)
            .body(())
            .unwrap();
        let response = documents
            .respond(&request, &builtin(), Some(full()))
            .unwrap()
            .unwrap();
        assert_eq!(
            response.headers()["content-type"],
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        );
    }
}
