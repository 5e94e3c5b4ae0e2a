//! Schema-driven decoding of request bodies, as kube-apiserver's typed decoding: unknown
//! fields are dropped, and the `fieldValidation` directive decides what they (and duplicate
//! fields) cost: nothing (`Ignore`), a `Warning` header each (`Warn`, the default) or a 400
//! (`Strict`). Values of the wrong JSON type fail the request whatever the directive.
//!
//! The schemas come from a [`SchemaProvider`] the server is given by whoever assembles it
//! (kapi-builtin's for the built-in kinds, apiextensions' for custom resources); the generic
//! server knows no kinds of its own.

use kapi_apimachinery::schema::GroupKind;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_patch::PatchType;
use kapi_schema::{KindSchema, StrictError};
use serde_json::{Map, Value};

use super::params::Query;

/// Gives the schema of a kind, for decoding, strategic merge patch and OpenAPI.
pub trait SchemaProvider: Send + Sync {
    /// The schema of `group`/`version`/`kind`, if known.
    fn kind_schema(&self, group: &str, version: &str, kind: &str) -> Option<KindSchema>;

    /// Every definition the provider knows, in OpenAPI v2 form (`#/definitions/<name>`
    /// references), for the OpenAPI documents (a provider may make them on demand).
    fn definitions(&self) -> std::sync::Arc<Map<String, Value>>;

    /// Decodes a Kubernetes protobuf body (`application/vnd.kubernetes.protobuf`: the
    /// `k8s\0` magic and a `runtime.Unknown` envelope) into the JSON object of its kind. The
    /// default decodes none: protobuf is then refused as upstream refuses it for custom
    /// resources.
    fn decode_protobuf(&self, _body: &[u8]) -> Result<Value, ProtobufError> {
        Err(ProtobufError::Unsupported)
    }

    /// Whether objects of `apiVersion`/`kind` (and their lists) are served in protobuf.
    /// The default serves none, as upstream serves custom resources.
    fn serves_protobuf(&self, _api_version: &str, _kind: &str) -> bool {
        false
    }
}

/// Decodes a protobuf body of a kind kapi's protobuf table has (the built-in kinds, with
/// CustomResourceDefinition and APIService): what providers of those kinds answer
/// [`SchemaProvider::decode_protobuf`] with.
pub fn decode_table_protobuf(body: &[u8]) -> Result<Value, ProtobufError> {
    kapi_protobuf::decode(body).map_err(|err| match err.status_code() {
        415 => ProtobufError::Unsupported,
        _ => ProtobufError::Malformed(err.to_string()),
    })
}

/// Whether kapi's protobuf table has `apiVersion`/`kind`: what providers of the table's kinds
/// answer [`SchemaProvider::serves_protobuf`] with.
pub fn table_serves_protobuf(api_version: &str, kind: &str) -> bool {
    kapi_protobuf::supports(api_version, kind)
}

/// Why a protobuf body was not decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtobufError {
    /// A kind or envelope encoding the provider does not decode: a 415.
    Unsupported,
    /// Bytes that are not a valid encoding: a 400 with this message.
    Malformed(String),
}

/// The `fieldValidation` directive of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Directive {
    /// Unknown fields are dropped silently.
    Ignore,
    /// Each unknown or duplicate field becomes a warning (the default, as upstream's).
    Warn,
    /// Any unknown or duplicate field fails the request.
    Strict,
}

/// The directive of the request's `fieldValidation` parameter; an unsupported value is the
/// 422 of the options kind (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub(super) fn directive(query: &Query, options_kind: &str) -> Result<Directive, ApiError> {
    match query.get("fieldValidation").unwrap_or_default() {
        "Ignore" => Ok(Directive::Ignore),
        "" | "Warn" => Ok(Directive::Warn),
        "Strict" => Ok(Directive::Strict),
        other => {
            let mut errors = FieldErrors::default();
            errors.push(FieldError::not_supported(
                &Path::root("fieldValidation"),
                Value::String(other.to_string()),
                ["", "Ignore", "Strict", "Warn"],
            ));
            Err(ApiError::invalid(
                &GroupKind::new("meta.k8s.io", options_kind),
                "",
                &errors,
            ))
        }
    }
}

/// A request body as strict decoding reads it for repeated fields.
#[derive(Clone, Copy)]
pub(super) enum RawBody<'a> {
    Json(&'a [u8]),
    Yaml(&'a [u8]),
    /// A body whose repeated fields are not looked for (protobuf).
    Other,
}

/// Decodes a created or updated object against its kind's schema: drops unknown fields and
/// applies the directive to them and to the repeated fields of the `body` (a YAML body's
/// first, as go-yaml reports it). Errors are upstream's 400 `<Kind> in version "<v>" cannot
/// be handled as a <Kind>: <reason>`; the warnings of `Warn` are returned.
pub(super) fn decode_with_schema(
    schema: &KindSchema,
    kind: (&str, &str),
    object: &mut Value,
    body: RawBody<'_>,
    directive: Directive,
) -> Result<Vec<String>, ApiError> {
    let (kind, version) = kind;
    let cannot_handle = |reason: String| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {reason}"
        ))
    };
    let unknown = schema
        .decode(object)
        .map_err(|e| cannot_handle(e.to_string()))?;
    if directive == Directive::Ignore {
        return Ok(Vec::new());
    }
    // Each error, and the warnings it makes (go-yaml's errors one per line).
    let mut errors: Vec<(String, Vec<String>)> = match body {
        RawBody::Json(body) => schema
            .duplicate_fields(body)
            .iter()
            .map(|err| (err.to_string(), vec![err.to_string()]))
            .collect(),
        RawBody::Yaml(body) => super::yaml_strict::duplicate_key(body)
            .map(|line| vec![line])
            .map(|lines| (super::yaml_strict::unmarshal_errors(&lines), lines))
            .into_iter()
            .collect(),
        RawBody::Other => Vec::new(),
    };
    errors.extend(
        unknown
            .iter()
            .map(|err| (err.to_string(), vec![err.to_string()])),
    );
    match directive {
        Directive::Strict if !errors.is_empty() => {
            let messages: Vec<&str> = errors.iter().map(|(message, _)| message.as_str()).collect();
            Err(cannot_handle(format!(
                "strict decoding error: {}",
                messages.join(", ")
            )))
        }
        Directive::Strict => Ok(Vec::new()),
        _ => Ok(errors
            .into_iter()
            .flat_map(|(_, warnings)| warnings)
            .collect()),
    }
}

/// Upstream's 422 for a patched object that does not decode: ` "" is invalid: patch:
/// Invalid value: "<value>": <reason>` (no kind, no name).
pub(super) fn invalid_patch(value: String, reason: String) -> ApiError {
    let mut errors = FieldErrors::default();
    errors.push(FieldError::invalid(&Path::root("patch"), value, reason));
    ApiError::invalid(&GroupKind::new("", ""), "", &errors)
}

/// Decodes the result of a patch against its kind's schema, as upstream's patch handler
/// does after applying the patch: unknown fields of the patched object are dropped, and
/// with `Strict` (or for a type error) the request fails with upstream's 422 about the
/// field `patch`, whose value is the patch (strategic merge, printed as Go prints a map) or
/// the patched object (JSON and merge patches).
pub(super) fn decode_patched(
    schema: &KindSchema,
    patch_type: PatchType,
    patch: &[u8],
    patched: &mut Value,
    directive: Directive,
) -> Result<Vec<String>, ApiError> {
    let invalid = |patched: &Value, reason: String| {
        let value = match patch_type {
            PatchType::StrategicMerge => {
                kapi_apimachinery::gofmt::v(&serde_json::from_slice(patch).unwrap_or(Value::Null))
            }
            _ => serde_json::to_string(patched).unwrap_or_default(),
        };
        invalid_patch(value, reason)
    };
    let unknown = match schema.decode(patched) {
        Ok(unknown) => unknown,
        Err(err) => return Err(invalid(patched, err.to_string())),
    };
    // Upstream decodes merge patches into untyped maps first: their duplicates lead.
    let mut errors = match (patch_type, directive) {
        (PatchType::Json, _) | (_, Directive::Ignore) => Vec::new(),
        _ => kapi_schema::duplicate_fields_untyped(patch),
    };
    errors.extend(unknown);
    match directive {
        Directive::Ignore => Ok(Vec::new()),
        Directive::Warn => Ok(warnings(&errors)),
        Directive::Strict if errors.is_empty() => Ok(Vec::new()),
        Directive::Strict => Err(invalid(patched, kapi_schema::strict_message(&errors))),
    }
}

fn warnings(errors: &[StrictError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

/// The value of a `Warning` response header: `299 - "<text>"`, the text quoted as Go's
/// `strconv.Quote`.
pub(super) fn warning_header(text: &str) -> String {
    format!("299 - {}", kapi_apimachinery::quote(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> KindSchema {
        kapi_api::kind_schema("apps", "v1", "Deployment").unwrap()
    }

    #[test]
    fn directives_parse_with_upstream_errors() {
        let query = |q: &str| Query::parse(Some(q));
        assert_eq!(
            directive(&query(""), "CreateOptions").unwrap(),
            Directive::Warn
        );
        assert_eq!(
            directive(&query("fieldValidation=Strict"), "CreateOptions").unwrap(),
            Directive::Strict
        );
        assert_eq!(
            directive(&query("fieldValidation=Ignore"), "CreateOptions").unwrap(),
            Directive::Ignore
        );
        let err = directive(&query("fieldValidation=foo"), "PatchOptions").unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.status().message,
            r#"PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "foo": supported values: "", "Ignore", "Strict", "Warn""#
        );
    }

    #[test]
    fn directives_decide_what_unknown_and_duplicate_fields_cost() {
        let body = br#"{"kind":"Deployment","spec":{"replicas":1,"replicas":2,"foo":1}}"#;
        let decode = |directive| {
            let mut object: Value = serde_json::from_slice(body).unwrap();
            let result = decode_with_schema(
                &deployment(),
                ("Deployment", "v1"),
                &mut object,
                RawBody::Json(body),
                directive,
            );
            (result, object)
        };
        let (warnings, object) = decode(Directive::Warn);
        assert_eq!(
            warnings.unwrap(),
            [
                r#"duplicate field "spec.replicas""#,
                r#"unknown field "spec.foo""#
            ]
        );
        assert_eq!(object["spec"], json!({"replicas": 2}));
        let (ignored, _) = decode(Directive::Ignore);
        assert_eq!(ignored.unwrap(), Vec::<String>::new());
        let (strict, _) = decode(Directive::Strict);
        let err = strict.unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.status().message,
            r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "spec.replicas", unknown field "spec.foo""#
        );
    }

    #[test]
    fn type_errors_fail_whatever_the_directive() {
        let mut object = json!({"spec": {"replicas": "x"}});
        let err = decode_with_schema(
            &deployment(),
            ("Deployment", "v1"),
            &mut object,
            RawBody::Other,
            Directive::Ignore,
        )
        .unwrap_err();
        assert_eq!(
            err.status().message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
    }

    #[test]
    fn patched_objects_with_unknown_fields() {
        let patch = br#"{"spec":{"foo":1.5,"replicas":3}}"#;
        let mut patched = json!({"spec": {"foo": 1.5, "replicas": 3}});
        let err = decode_patched(
            &deployment(),
            PatchType::StrategicMerge,
            patch,
            &mut patched.clone(),
            Directive::Strict,
        )
        .unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.status().message,
            r#" "" is invalid: patch: Invalid value: "map[spec:map[foo:1.5 replicas:3]]": strict decoding error: unknown field "spec.foo""#
        );
        let warnings = decode_patched(
            &deployment(),
            PatchType::Merge,
            patch,
            &mut patched,
            Directive::Warn,
        )
        .unwrap();
        assert_eq!(warnings, [r#"unknown field "spec.foo""#]);
        assert_eq!(patched, json!({"spec": {"replicas": 3}}));
        let duplicated = decode_patched(
            &deployment(),
            PatchType::Merge,
            br#"{"spec":{"replicas":1,"replicas":3}}"#,
            &mut json!({"spec": {"replicas": 3}}),
            Directive::Warn,
        )
        .unwrap();
        assert_eq!(duplicated, [r#"duplicate field "spec.replicas""#]);
    }

    #[test]
    fn warning_header_quotes_like_go() {
        assert_eq!(
            warning_header(r#"unknown field "a""#),
            r#"299 - "unknown field \"a\"""#
        );
    }
}
