//! The type (`apiVersion` and `kind`) of a decoded object, as upstream's handlers decode
//! objects into the resource's Go type.
//!
//! A create or update body of another type fails as upstream's decoding fails
//! (handlers/rest.go transformDecodeError): `Pod in version "v1" cannot be handled as a
//! Namespace: converting (v1.Pod) to (core.Namespace): unknown conversion`, or `no kind ...
//! is registered` for a type the scheme does not have; another version of the resource's
//! kind decodes and is then refused by the handlers' API version check. Custom resources
//! decode whatever they say and are refused by their validator ([`crate::type_meta`]).
//!
//! A patch's result is decoded as upstream's patch handler decodes it
//! (handlers/patch.go):
//!
//! - **Strategic merge patches** are applied to a typed object: a patched `apiVersion` or
//!   `kind` lands in its TypeMeta and is lost in conversion, so the object keeps its type.
//! - **JSON and merge patches** of built-in resources are decoded by the type the patched
//!   JSON names: a missing `kind` is the resource's; another version of the same kind that
//!   is served converts; another registered type fails to convert, and an unregistered one
//!   is not registered (both 422 about the field `patch`); a missing `apiVersion` decodes
//!   into the internal type, which knows no field, so the name is missing (400), or every
//!   field is unknown (422 with `fieldValidation=Strict`).
//! - **Custom resources** (JSON and merge patches): a missing `kind` is a 422 about `patch`,
//!   a missing `apiVersion` a 500; another type is left for the custom resource validator's
//!   422 ([`crate::type_meta`]).
//!
//! Server-side apply checks the configuration's type itself (the field manager's
//! `invalid object type`).

use std::sync::Arc;

use kapi_apimachinery::schema::split_api_version;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::{go_json, quote};
use kapi_patch::PatchType;
use serde_json::Value;

use super::Apis;
use super::decode::{Directive, invalid_patch};
use crate::resource::ResourceDefinition;
use crate::type_meta::unknown_conversion;

/// The scheme name upstream's "not registered" errors print for the built-in types.
const BUILTIN_SCHEME: &str = "pkg/api/legacyscheme/scheme.go:30";

/// What the patched object's type decides.
pub(super) enum PatchedType {
    /// The object is of the resource's type (filled in where upstream fills it).
    Same(Value),
    /// The object is of another served version of the resource (whose definition this is):
    /// it converts.
    OtherVersion(Value, Arc<ResourceDefinition>),
}

impl Apis {
    /// The definition of the resource of `definition` in `group`/`version`, if served from
    /// the same storage.
    fn served_equivalent(
        &self,
        definition: &ResourceDefinition,
        group: &str,
        version: &str,
    ) -> Option<Arc<ResourceDefinition>> {
        let key = (
            group.to_string(),
            version.to_string(),
            definition.plural.to_string(),
        );
        let served = self.served(&key)?.definition;
        (served.storage.key_prefix == definition.storage.key_prefix
            && served.kind == definition.kind)
            .then_some(served)
    }

    /// Whether the server's schemas (the built-in scheme) have `kind` in `group`/`version`.
    fn registered(&self, group: &str, version: &str, kind: &str) -> bool {
        self.schemas
            .as_ref()
            .is_some_and(|schemas| schemas.kind_schema(group, version, kind).is_some())
    }
}

/// Resolves the type of `patched` (the served form after a `patch_type` patch) for
/// `definition`, as described in the module documentation; unknown-field warnings go to
/// `warn`.
pub(super) fn resolve_patched(
    definition: &ResourceDefinition,
    apis: &Apis,
    patch_type: PatchType,
    directive: Directive,
    url_name: &str,
    mut patched: Value,
    warn: &dyn Fn(Vec<String>),
) -> Result<PatchedType, ApiError> {
    let expected_version = definition.group_version.api_version();
    if patch_type == PatchType::StrategicMerge {
        patched["apiVersion"] = Value::from(expected_version);
        patched["kind"] = Value::from(&*definition.kind);
        return Ok(PatchedType::Same(patched));
    }
    let api_version = patched["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = patched["kind"].as_str().unwrap_or_default().to_string();
    if !definition.capabilities.typed {
        if kind.is_empty() {
            let json = go_json(&patched);
            let reason = format!("Object 'Kind' is missing in '{json}'");
            return Err(invalid_patch(json, reason));
        }
        if api_version.is_empty() {
            return Err(ApiError::internal(
                "Object 'apiVersion' is missing in 'object has no apiVersion field'",
            ));
        }
        return Ok(PatchedType::Same(patched));
    }
    if api_version.is_empty() {
        return Err(internal_type(&patched, directive, url_name, warn));
    }
    let kind = if kind.is_empty() {
        patched["kind"] = Value::from(&*definition.kind);
        definition.kind.to_string()
    } else {
        kind
    };
    if api_version == expected_version && kind == definition.kind {
        return Ok(PatchedType::Same(patched));
    }
    let (group, version) = split_api_version(&api_version);
    let group_version = &definition.group_version;
    if group == group_version.group
        && kind == definition.kind
        && let Some(other) = apis.served_equivalent(definition, group, version)
    {
        return Ok(PatchedType::OtherVersion(patched, other));
    }
    let reason = if apis.registered(group, version, &kind) {
        unknown_conversion(version, &kind, &group_version.group, &definition.kind)
    } else {
        not_registered(&kind, &api_version)
    };
    Err(invalid_patch(go_json(&patched), reason))
}

/// The type a request body must have: a resource's, or a subresource's own (pods/eviction's
/// policy/v1 Eviction, a scale's autoscaling/v1 Scale, ...).
pub(super) struct ExpectedType<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// Whether bodies are of registered types; an untyped (custom resource's) body of another
    /// kind is decoded as it is (the custom resource validator refuses it), not refused here.
    pub typed: bool,
    /// Other apiVersions of the kind a body may be in (upstream's `AcceptsGroupVersion`:
    /// pods/eviction takes policy/v1beta1 Evictions too).
    pub also_accepted: &'a [&'a str],
}

impl<'a> ExpectedType<'a> {
    /// The type of `definition`'s objects.
    pub(super) fn of(definition: &'a ResourceDefinition) -> Self {
        ExpectedType {
            group: &definition.group_version.group,
            version: &definition.group_version.version,
            kind: &definition.kind,
            typed: definition.capabilities.typed,
            also_accepted: &[],
        }
    }

    fn api_version(&self) -> String {
        match self.group {
            "" => self.version.to_string(),
            group => format!("{group}/{}", self.version),
        }
    }

    /// Fills in a create or update body's missing `apiVersion` and `kind` with this type's,
    /// then refuses a body of another type; see the module documentation.
    pub(super) fn check_body(&self, apis: &Apis, object: &mut Value) -> Result<(), ApiError> {
        let expected_version = self.api_version();
        for (field, expected) in [
            ("apiVersion", expected_version.as_str()),
            ("kind", self.kind),
        ] {
            if object[field].as_str().is_none_or(str::is_empty) {
                object[field] = Value::from(expected);
            }
        }
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        if kind == self.kind && self.also_accepted.contains(&api_version) {
            return Ok(());
        }
        match self.body_error(apis, api_version, kind) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Upstream's error for a body of `api_version` and `kind` (both set) that is not of this
    /// type: another version of the kind is not the expected API version; another registered
    /// type does not convert; an unregistered one is not in the scheme.
    fn body_error(&self, apis: &Apis, api_version: &str, kind: &str) -> Option<ApiError> {
        let expected_version = self.api_version();
        if kind == self.kind && api_version == expected_version {
            return None;
        }
        let (group, version) = split_api_version(api_version);
        let registered = !self.typed || apis.registered(group, version, kind);
        if kind == self.kind && registered {
            return Some(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({expected_version})"
            )));
        }
        if !self.typed {
            return None;
        }
        let reason = if registered {
            unknown_conversion(version, kind, self.group, self.kind)
        } else {
            not_registered(kind, api_version)
        };
        Some(ApiError::bad_request(format!(
            "{kind} in version {} cannot be handled as a {}: {reason}",
            quote(version),
            self.kind
        )))
    }
}

/// Upstream's error for a type its scheme does not have.
fn not_registered(kind: &str, api_version: &str) -> String {
    format!(
        "no kind {} is registered for version {} in scheme {}",
        quote(kind),
        quote(api_version),
        quote(BUILTIN_SCHEME)
    )
}

/// A built-in object patched without an `apiVersion` decodes into the internal type, which
/// has no JSON field names: every field but `apiVersion` and `kind` is unknown (warned
/// about, or fatal with `Strict`), and then the object has no name.
fn internal_type(
    patched: &Value,
    directive: Directive,
    url_name: &str,
    warn: &dyn Fn(Vec<String>),
) -> ApiError {
    let unknown: Vec<String> = patched
        .as_object()
        .into_iter()
        .flat_map(|fields| fields.keys())
        .filter(|key| !matches!(key.as_str(), "apiVersion" | "kind"))
        .map(|key| format!("unknown field {}", quote(key)))
        .collect();
    match directive {
        Directive::Strict if !unknown.is_empty() => {
            let reason = format!("strict decoding error: {}", unknown.join(", "));
            return invalid_patch(go_json(patched), reason);
        }
        Directive::Warn => warn(unknown),
        _ => {}
    }
    ApiError::bad_request(format!(
        "the name of the object ({url_name} based on URL) was undeterminable: name must be provided"
    ))
}
