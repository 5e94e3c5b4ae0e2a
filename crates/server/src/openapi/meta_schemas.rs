//! The hand-written meta/v1 (and runtime, discovery) schemas the documents reference:
//! ObjectMeta, ListMeta, Status, the option types, WatchEvent, the discovery types and the
//! rest of what the routes name. They are data, not assembly logic, and the schema provider
//! does not carry them, so they live apart from the code that builds the documents.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::meta;
use super::schemas::{api_version_prop, kind_prop, ref_to, ref_with};
use crate::resource::ResourceDefinition;

fn string_prop() -> Value {
    json!({"type": "string"})
}

fn gvk_list(entries: &[(&str, &str, &str)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|(group, version, kind)| json!({"group": group, "kind": kind, "version": version}))
            .collect(),
    )
}

/// `x-kubernetes-group-version-kind` of the meta/v1 option types, registered in every served
/// group version: sorted by group, version. (A schema provider knowing every group version of
/// its scheme, served or not, gives these types with its own list, which replaces this one.)
fn all_group_versions_gvk(defs: &[Arc<ResourceDefinition>], kind: &str) -> Value {
    let gvs: BTreeSet<(&str, &str)> = defs
        .iter()
        .map(|def| {
            (
                def.group_version.group.as_str(),
                def.group_version.version.as_str(),
            )
        })
        .collect();
    Value::Array(
        gvs.into_iter()
            .map(|(group, version)| json!({"group": group, "kind": kind, "version": version}))
            .collect(),
    )
}

fn string_array(list_type: &str) -> Value {
    json!({"items": {"default": "", "type": "string"}, "type": "array", "x-kubernetes-list-type": list_type})
}

/// The meta/v1 (and runtime) schemas the documents of `defs` reference, by definition name.
pub(super) fn meta_schemas(defs: &[Arc<ResourceDefinition>]) -> BTreeMap<String, Value> {
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
            "x-kubernetes-group-version-kind": all_group_versions_gvk(defs, "DeleteOptions"),
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
            "x-kubernetes-group-version-kind": all_group_versions_gvk(defs, "WatchEvent"),
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
