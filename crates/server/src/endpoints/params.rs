//! Query parameters of REST requests, parsed and validated as kube-apiserver does
//! (ListOptions, GetOptions, DeleteOptions, CreateOptions / UpdateOptions / PatchOptions).

use std::collections::HashMap;
use std::time::Duration;

use kapi_apimachinery::fields::Selector as FieldSelector;
use kapi_apimachinery::labels::Selector as LabelSelector;
use kapi_apimachinery::schema::GroupKind;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_storage::Revision;
use serde_json::Value;

use crate::registry::{DeleteParams, ListParams, ReadVersion};
use crate::resource::ResourceDefinition;

/// A request's query parameters (the first value of each).
#[derive(Debug, Default)]
pub struct Query(HashMap<String, String>);

/// A create's, update's or patch's options as the query gave them, for admission: `dryRun`
/// (a list, as the options hold it), `fieldManager` and `fieldValidation`.
pub fn write_options_json(query: &Query) -> Value {
    let mut options = serde_json::Map::new();
    if let Some(dry_run) = query.get("dryRun") {
        options.insert("dryRun".into(), serde_json::json!([dry_run]));
    }
    for key in ["fieldManager", "fieldValidation"] {
        if let Some(value) = query.get(key) {
            options.insert(key.into(), Value::from(value));
        }
    }
    Value::Object(options)
}

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        let mut params = HashMap::new();
        for (key, value) in crate::query::pairs(query.unwrap_or_default()) {
            params
                .entry(key.into_owned())
                .or_insert_with(|| value.into_owned());
        }
        Query(params)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean option, as upstream decodes it ([`crate::query::option_flag`]): present
    /// with an empty value, it is true.
    pub fn flag(&self, key: &str) -> bool {
        crate::query::option_flag(self.0.get(key).map(String::as_str))
    }

    /// Whether `key` was given, even with an empty value.
    pub fn given(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }
}

/// The options of a watch request besides the ones a list has.
#[derive(Debug)]
pub struct WatchParams {
    pub list: ListParams,
    /// The resourceVersion as given ("" unset, "0", or a revision).
    pub resource_version: Option<Revision>,
    pub allow_bookmarks: bool,
    pub send_initial_events: bool,
    pub timeout: Option<Duration>,
}

/// Which request's resourceVersion is parsed: list and get share its match rules; a watch
/// validates resourceVersionMatch with its own (see [`watch_params`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadKind {
    Get,
    List,
    Watch,
}

/// Parses the resourceVersion and resourceVersionMatch of a read.
fn read_version(query: &Query, errors: &mut FieldErrors, kind: ReadKind) -> ReadVersion {
    let rv = query.get("resourceVersion");
    let parsed = match rv {
        None => None,
        Some(text) => match text.parse::<Revision>() {
            Ok(revision) if revision >= 0 => Some(revision),
            _ => {
                errors.push(FieldError::invalid(
                    &Path::root("resourceVersion"),
                    Value::String(text.to_string()),
                    "must be a valid resource version",
                ));
                return ReadVersion::MostRecent;
            }
        },
    };
    let rv_match = query.get("resourceVersionMatch");
    if kind == ReadKind::Watch {
        return match parsed {
            None => ReadVersion::MostRecent,
            Some(0) => ReadVersion::Any,
            Some(revision) => ReadVersion::NotOlderThan(revision),
        };
    }
    let list = kind == ReadKind::List;
    match (parsed, rv_match) {
        (None, None) => ReadVersion::MostRecent,
        (None, Some(_)) => {
            errors.push(FieldError::forbidden(
                &Path::root("resourceVersionMatch"),
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
            ReadVersion::MostRecent
        }
        (Some(0), None | Some("NotOlderThan")) => ReadVersion::Any,
        (Some(0), Some("Exact")) => {
            errors.push(FieldError::forbidden(
                &Path::root("resourceVersionMatch"),
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
            ReadVersion::Any
        }
        (Some(revision), None) if list && query.get("limit").is_some() => {
            // Legacy semantics: a list with a limit and a resourceVersion reads exactly there.
            ReadVersion::Exact(revision)
        }
        (Some(revision), None | Some("NotOlderThan")) => ReadVersion::NotOlderThan(revision),
        (Some(revision), Some("Exact")) => ReadVersion::Exact(revision),
        (Some(_), Some(other)) => {
            errors.push(FieldError::not_supported(
                &Path::root("resourceVersionMatch"),
                Value::String(other.to_string()),
                ["Exact", "NotOlderThan", ""],
            ));
            ReadVersion::MostRecent
        }
    }
}

/// Parses and validates the parameters of a LIST (or the list part of a WATCH).
pub fn list_params(
    query: &Query,
    definition: &ResourceDefinition,
    namespace: Option<&str>,
    watch: bool,
) -> Result<ListParams, ApiError> {
    let mut errors = FieldErrors::default();
    let labels = match query.get("labelSelector") {
        Some(text) => Some(LabelSelector::parse(text).map_err(ApiError::bad_request)?),
        None => None,
    };
    let fields = match query.get("fieldSelector") {
        Some(text) => Some(parse_field_selector(text, definition)?),
        None => None,
    };
    // A limit of 0 or less means none (upstream's storage); one that is not a number fails
    // parameter decoding.
    let limit = match query.get("limit") {
        None => None,
        Some(text) => match text.parse::<i64>() {
            Ok(limit) if limit > 0 => Some(limit as usize),
            Ok(_) => None,
            Err(_) => {
                return Err(ApiError::bad_request(format!(
                    "strconv.ParseInt: parsing {}: invalid syntax",
                    kapi_apimachinery::quote(text)
                )));
            }
        },
    };
    let kind = if watch {
        ReadKind::Watch
    } else {
        ReadKind::List
    };
    let version = read_version(query, &mut errors, kind);
    let continue_token = query.get("continue").map(str::to_string);
    if !watch {
        if continue_token.is_some() && query.get("resourceVersionMatch").is_some() {
            errors.push(FieldError::forbidden(
                &Path::root("resourceVersionMatch"),
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if query.get("sendInitialEvents").is_some() {
            errors.push(FieldError::forbidden(
                &Path::root("sendInitialEvents"),
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    invalid_options("ListOptions", errors)?;
    if let Some(token) = continue_token.as_deref().filter(|_| !watch) {
        check_continue(token, query.get("resourceVersion"))?;
    }
    Ok(ListParams {
        namespace: namespace.map(str::to_string),
        labels,
        fields,
        limit: if watch { None } else { limit },
        continue_token: if watch { None } else { continue_token },
        version,
    })
}

/// A list's continue token must be one of ours, and comes without a resourceVersion (other
/// than "0"): upstream's storage checks, 400s.
fn check_continue(token: &str, resource_version: Option<&str>) -> Result<(), ApiError> {
    if let Err(err) = kapi_storage::decode_continue("", token) {
        // A token that is not JSON is reported in Go's words, as upstream's decoder does.
        let go_syntax =
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, token)
                .ok()
                .and_then(|raw| kapi_apimachinery::gojson::check_valid(&raw).err());
        let why = match (go_syntax, err) {
            (Some(syntax), _) => syntax,
            (None, kapi_storage::StorageError::InvalidContinue(why)) => why,
            (None, other) => other.to_string(),
        };
        return Err(ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        )));
    }
    if resource_version.is_some_and(|rv| !rv.is_empty() && rv != "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok(())
}

/// Parses a field selector and rejects fields the resource does not support, with
/// upstream's message.
fn parse_field_selector(
    text: &str,
    definition: &ResourceDefinition,
) -> Result<FieldSelector, ApiError> {
    let selector = FieldSelector::parse(text).map_err(ApiError::bad_request)?;
    for requirement in selector.requirements() {
        let field = requirement.field.as_str();
        // metadata.namespace selects only where objects have one (upstream's
        // ObjectMetaFieldsSet).
        let common =
            field == "metadata.name" || (field == "metadata.namespace" && definition.namespaced);
        if !common && !definition.strategy.supports_field(field) {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {field}"
            )));
        }
    }
    Ok(selector)
}

/// Parses and validates the parameters of a WATCH.
pub fn watch_params(
    query: &Query,
    definition: &ResourceDefinition,
    namespace: Option<&str>,
) -> Result<WatchParams, ApiError> {
    let list = list_params(query, definition, namespace, true)?;
    let resource_version = match list.version {
        ReadVersion::MostRecent => None,
        ReadVersion::Any => Some(0),
        ReadVersion::NotOlderThan(revision) | ReadVersion::Exact(revision) => Some(revision),
    };
    let allow_bookmarks = query.flag("allowWatchBookmarks");
    let send_given = query.given("sendInitialEvents");
    let rv_match = query.get("resourceVersionMatch");
    let mut errors = FieldErrors::default();
    let match_path = Path::root("resourceVersionMatch");
    if send_given && rv_match != Some("NotOlderThan") {
        errors.push(FieldError::forbidden(
            &match_path,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(rv_match) = rv_match {
        if !send_given {
            errors.push(FieldError::forbidden(
                &match_path,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            errors.push(FieldError::not_supported(
                &match_path,
                Value::String(rv_match.to_string()),
                ["NotOlderThan"],
            ));
        }
    }
    // 1.35 defaults a legacy watch (resourceVersion "" or "0", nothing else said) to a
    // watch-list: the initial state, then (with bookmarks) the initial-events-end bookmark.
    let send_initial_events = match send_given {
        true => query.flag("sendInitialEvents"),
        false => rv_match.is_none() && matches!(resource_version, None | Some(0)),
    };
    invalid_options("ListOptions", errors)?;
    let timeout = match query.get("timeoutSeconds").map(str::parse::<u64>) {
        None => None,
        Some(Ok(seconds)) => Some(Duration::from_secs(seconds)),
        Some(Err(_)) => return Err(ApiError::bad_request("invalid timeoutSeconds")),
    };
    Ok(WatchParams {
        list,
        resource_version,
        allow_bookmarks,
        send_initial_events,
        timeout,
    })
}

/// Parses the resourceVersion of a GET.
pub fn get_version(query: &Query) -> Result<ReadVersion, ApiError> {
    let mut errors = FieldErrors::default();
    let version = read_version(query, &mut errors, ReadKind::Get);
    invalid_options("GetOptions", errors)?;
    Ok(version)
}

/// Whether the write is a dry run; only "All" is accepted, as upstream.
pub fn dry_run(query: &Query, options_kind: &str) -> Result<bool, ApiError> {
    match query.get("dryRun") {
        None => Ok(false),
        Some("All") => Ok(true),
        Some(other) => {
            let mut errors = FieldErrors::default();
            errors.push(FieldError::not_supported(
                &Path::root("dryRun"),
                Value::String(other.to_string()),
                ["All"],
            ));
            invalid_options(options_kind, errors).map(|()| false)
        }
    }
}

/// The field manager and `force` of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// `?fieldManager=` ("" when absent).
    pub field_manager: String,
    /// `?force=true` (apply only).
    pub force: bool,
}

/// How a write is made, for the checks of its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// A create or an update (CreateOptions / UpdateOptions).
    CreateOrUpdate,
    /// A patch other than apply (PatchOptions).
    Patch,
    /// A server-side apply patch (PatchOptions).
    Apply,
}

/// `fieldManager` and `force`, validated as upstream's ValidateCreateOptions /
/// ValidateUpdateOptions / ValidatePatchOptions: apply needs a field manager, `force` is
/// for apply only, and a field manager has at most 128 printable characters.
pub fn write_options(
    query: &Query,
    options_kind: &str,
    kind: WriteKind,
) -> Result<WriteOptions, ApiError> {
    let field_manager = query.get("fieldManager").unwrap_or_default().to_string();
    let force = query.get("force");
    let path = Path::root("fieldManager");
    let mut errors = FieldErrors::default();
    match kind {
        WriteKind::Apply if field_manager.is_empty() => {
            errors.push(FieldError::required(&path, "is required for apply patch"));
        }
        WriteKind::Patch if force.is_some() => errors.push(FieldError::forbidden(
            &Path::root("force"),
            "may not be specified for non-apply patch",
        )),
        _ => {}
    }
    if field_manager.len() > kapi_fieldmanager::FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long(
            &path,
            kapi_fieldmanager::FIELD_MANAGER_MAX_LENGTH,
        ));
    }
    for (position, c) in field_manager.char_indices().filter(|(_, c)| c.is_control()) {
        let detail = format!(
            "invalid character U+{:04X} (at position {position})",
            c as u32
        );
        errors.push(FieldError::invalid(&path, field_manager.clone(), detail));
    }
    invalid_options(options_kind, errors)?;
    Ok(WriteOptions {
        field_manager,
        force: matches!(force, Some("1" | "t" | "T" | "true" | "TRUE" | "True")),
    })
}

/// The delete options from the query and the optional DeleteOptions body.
pub fn delete_params(
    query: &Query,
    schemas: Option<&dyn super::SchemaProvider>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<DeleteParams, ApiError> {
    let protobuf =
        content_type.map(super::negotiation::essence) == Some(super::negotiation::PROTOBUF);
    let options: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else if protobuf {
        super::negotiation::decode_body(schemas, content_type, body)?
    } else {
        serde_json::from_slice(body).map_err(|err| {
            ApiError::bad_request(format!("unable to decode DeleteOptions: {err}"))
        })?
    };
    let text = |key: &str| options[key].as_str().map(str::to_string);
    let propagation_policy = query
        .get("propagationPolicy")
        .map(str::to_string)
        .or_else(|| text("propagationPolicy"))
        .or_else(|| match options["orphanDependents"].as_bool() {
            Some(true) => Some("Orphan".to_string()),
            Some(false) => Some("Background".to_string()),
            None => None,
        });
    let mut errors = FieldErrors::default();
    if let Some(policy) = &propagation_policy
        && !matches!(policy.as_str(), "Orphan" | "Background" | "Foreground")
    {
        errors.push(FieldError::not_supported(
            &Path::root("propagationPolicy"),
            Value::String(policy.clone()),
            ["Foreground", "Background", "Orphan", "nil"],
        ));
    }
    let dry_run = query.get("dryRun").map(str::to_string).or_else(|| {
        options["dryRun"]
            .as_array()
            .and_then(|values| values.first()?.as_str().map(str::to_string))
    });
    if let Some(value) = &dry_run
        && value != "All"
    {
        errors.push(FieldError::not_supported(
            &Path::root("dryRun"),
            Value::String(value.clone()),
            ["All"],
        ));
    }
    invalid_options("DeleteOptions", errors)?;
    let mut given = options.as_object().cloned().unwrap_or_default();
    given.remove("kind");
    given.remove("apiVersion");
    if let Some(seconds) = query
        .get("gracePeriodSeconds")
        .and_then(|s| s.parse::<i64>().ok())
    {
        given.insert("gracePeriodSeconds".into(), Value::from(seconds));
    }
    if let Some(policy) = query.get("propagationPolicy") {
        given.insert("propagationPolicy".into(), Value::from(policy));
    }
    if let Some(dry_run) = query.get("dryRun") {
        given.insert("dryRun".into(), serde_json::json!([dry_run]));
    }
    let grace_period_seconds = given.get("gracePeriodSeconds").and_then(Value::as_i64);
    Ok(DeleteParams {
        options: Value::Object(given),
        precondition_uid: options["preconditions"]["uid"].as_str().map(str::to_string),
        precondition_resource_version: options["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_string),
        propagation_policy,
        grace_period_seconds,
        dry_run: dry_run.is_some(),
    })
}

/// Fails with 422 Invalid on the options kind (meta.k8s.io) when there are errors.
fn invalid_options(kind: &str, errors: FieldErrors) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(
        &GroupKind::new("meta.k8s.io", kind),
        "",
        &errors,
    ))
}

#[cfg(test)]
mod write_options_tests {
    use super::*;

    /// A query, the kind of write, and the manager and force parsed or the error message.
    type Case<'a> = (&'a str, WriteKind, Result<(&'a str, bool), &'a str>);

    #[test]
    fn write_options_are_validated_as_upstream() {
        let long = format!("fieldManager={}", "x".repeat(129));
        let cases: [Case; 7] = [
            (
                "fieldManager=m&force=true",
                WriteKind::Apply,
                Ok(("m", true)),
            ),
            ("fieldManager=m", WriteKind::Apply, Ok(("m", false))),
            (
                "",
                WriteKind::Apply,
                Err(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ),
            ),
            (
                "force=false",
                WriteKind::Patch,
                Err(
                    "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
                ),
            ),
            ("", WriteKind::CreateOrUpdate, Ok(("", false))),
            (
                &long,
                WriteKind::CreateOrUpdate,
                Err(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes",
                ),
            ),
            (
                "fieldManager=a%07b",
                WriteKind::CreateOrUpdate,
                Err(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\ab\": invalid character U+0007 (at position 1)",
                ),
            ),
        ];
        for (query, kind, want) in cases {
            let got = write_options(&Query::parse(Some(query)), "PatchOptions", kind);
            match (got, want) {
                (Ok(options), Ok((manager, force))) => {
                    assert_eq!(
                        (options.field_manager.as_str(), options.force),
                        (manager, force)
                    );
                }
                (Err(err), Err(message)) => {
                    assert_eq!(err.code(), 422, "{query}");
                    assert_eq!(err.message(), message, "{query}");
                }
                (got, want) => panic!("{query}: got {got:?}, want {want:?}"),
            }
        }
    }
}
