//! Validation of CustomResourceDefinitions as upstream's apiextensions validation
//! (`ValidateCustomResourceDefinition`, `...Update`, `...Status`), with its messages and
//! field paths.
//!
//! Upstream validates the internal version of a CRD, into which v1 converts by moving a
//! per-version `schema`, `subresources`, `additionalPrinterColumns` or `selectableFields` that
//! is identical in every version to the top level (`spec.validation`, `spec.subresources`,
//! ...). Its error paths follow: a single-version CRD's schema errors read
//! `spec.validation.openAPIV3Schema...`. [`Hoisted`] reproduces that choice.

use std::collections::HashSet;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, is_dns1035_label, is_dns1123_subdomain,
};
use serde_json::Value;

use super::access::{self, condition_type};
use super::approval::validate_api_approval;
use super::conversion::{accepts_known_review_version_or_none, validate_conversion};
use super::fieldpath::resolve_field_path;
use super::gojson;
use super::schema_rules::{Strictness, schema_has};

/// The most selectable fields a version may have.
pub const MAX_SELECTABLE_FIELDS: usize = 8;

/// The types of an additional printer column (sorted, as upstream lists them).
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];

/// The formats of an additional printer column (sorted).
const COLUMN_FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// The root schema fields allowed when the status subresource is enabled, as upstream's
/// Go field names (its message lists them) and their JSON names.
const ROOT_FIELDS_WITH_STATUS: [(&str, &str); 22] = [
    ("Description", "description"),
    ("Type", "type"),
    ("Format", "format"),
    ("Title", "title"),
    ("Maximum", "maximum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MultipleOf", "multipleOf"),
    ("Required", "required"),
    ("Items", "items"),
    ("Properties", "properties"),
    ("ExternalDocs", "externalDocs"),
    ("Example", "example"),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    ("XValidations", "x-kubernetes-validations"),
];

/// What a validation tolerates, from the stored object on update (upstream's
/// validationOptions, for the checks kapi implements).
#[derive(Clone, Debug)]
struct Options {
    /// Every version needs a schema (else only served ones, when fields are pruned).
    require_openapi_schema: bool,
    /// The schema rules enforced.
    strictness: Strictness,
    /// `spec.scope` and `spec.names.kind` are immutable (the old CRD is Established).
    require_immutable_names: bool,
    /// A webhook must accept a ConversionReview version the server knows.
    require_recognized_review_version: bool,
    /// The conversion webhook's `caBundle` may be invalid: on create, before the CRD is
    /// Established, or when the stored one is invalid already.
    allow_invalid_ca_bundle: bool,
    /// Versions ("" for the top level) whose unchanged selectable fields may exceed the
    /// maximum, as they already did.
    allow_too_many_selectable: HashSet<String>,
    /// Versions whose schema an update leaves unchanged: their rules are exempt from the
    /// per-expression cost limit, as upstream exempts them.
    unchanged_schemas: HashSet<String>,
}

/// Which per-version fields are identical in every version, so that upstream validates them
/// once at the top level of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hoisted {
    pub schema: bool,
    pub subresources: bool,
    pub columns: bool,
    pub selectable_fields: bool,
}

impl Hoisted {
    /// The hoisting of the v1 → internal conversion for `spec`.
    pub(crate) fn of(spec: &Value) -> Hoisted {
        let versions = spec["versions"].as_array().map(Vec::as_slice);
        let identical = |key: &str, list: bool| {
            let Some([first, rest @ ..]) = versions else {
                return false;
            };
            rest.iter().all(|v| same(&v[key], &first[key], list))
        };
        Hoisted {
            schema: identical("schema", false),
            subresources: identical("subresources", false),
            columns: identical("additionalPrinterColumns", true),
            selectable_fields: identical("selectableFields", true),
        }
    }

    /// The flags in the order of the internal version's fields: schema, subresources,
    /// columns, selectable fields.
    fn as_array(self) -> [bool; 4] {
        [
            self.schema,
            self.subresources,
            self.columns,
            self.selectable_fields,
        ]
    }
}

/// Whether two values of a field are equal as Go's semantic equality sees them: absent and
/// null are equal, and for lists (`list`) an empty list equals none.
fn same(a: &Value, b: &Value, list: bool) -> bool {
    let empty = |v: &Value| v.is_null() || (list && v.as_array().is_some_and(Vec::is_empty));
    (empty(a) && empty(b)) || a == b
}

/// Validates a new CRD (after defaulting), as upstream's ValidateCustomResourceDefinition.
/// The object metadata rules are the registry's; the name's relation to the spec is here.
pub fn validate_create(crd: &Value) -> FieldErrors {
    let options = Options {
        require_immutable_names: false,
        require_recognized_review_version: true,
        allow_invalid_ca_bundle: true,
        require_openapi_schema: true,
        strictness: Strictness::ALL,
        allow_too_many_selectable: HashSet::new(),
        unchanged_schemas: HashSet::new(),
    };
    let mut errs = validate_name(crd);
    errs.extend(validate_spec(&crd["spec"], &options, &Path::root("spec")));
    errs.extend(validate_common(crd, None));
    errs
}

/// Validates an update of a CRD, as upstream's ValidateCustomResourceDefinitionUpdate.
pub fn validate_update(new: &Value, old: &Value) -> FieldErrors {
    let old_review_versions = &old["spec"]["conversion"]["webhook"]["conversionReviewVersions"];
    let options = Options {
        require_immutable_names: access::is_condition_true(old, condition_type::ESTABLISHED),
        allow_invalid_ca_bundle: allow_invalid_ca_bundle(old),
        require_recognized_review_version: accepts_known_review_version_or_none(
            old_review_versions,
        ),
        allow_too_many_selectable: too_many_selectable_allowed(new, old),
        require_openapi_schema: list(&old["spec"]["versions"])
            .iter()
            .all(|v| v["schema"]["openAPIV3Schema"].is_object()),
        strictness: Strictness::for_update(&old["spec"]),
        unchanged_schemas: unchanged_schemas(new, old),
    };
    let spec_path = Path::root("spec");
    let mut errs = validate_spec(&new["spec"], &options, &spec_path);
    errs.extend(validate_spec_update(
        &new["spec"],
        &old["spec"],
        &options,
        &spec_path,
    ));
    errs.extend(validate_common(new, Some(old)));
    errs
}

/// Whether an update may leave the conversion webhook's `caBundle` invalid: the stored CRD
/// is not Established yet, or its own `caBundle` is invalid.
fn allow_invalid_ca_bundle(old: &Value) -> bool {
    if !access::is_condition_true(old, condition_type::ESTABLISHED) {
        return true;
    }
    let bundle = &old["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"];
    super::conversion::ca_bundle_error(bundle).is_some()
}

/// The names of the versions whose schema is the same in `new` and `old`.
fn unchanged_schemas(new: &Value, old: &Value) -> HashSet<String> {
    let old_versions = list(&old["spec"]["versions"]);
    list(&new["spec"]["versions"])
        .iter()
        .filter(|version| {
            old_versions
                .iter()
                .any(|o| o["name"] == version["name"] && o["schema"] == version["schema"])
        })
        .map(|version| text(&version["name"]).to_string())
        .collect()
}

/// Validates a write of the status subresource: the accepted names (upstream's
/// ValidateUpdateCustomResourceDefinitionStatus; metadata is the registry's).
pub fn validate_status_update(new: &Value) -> FieldErrors {
    validate_status(&new["status"])
}

/// The checks after the spec's, shared by create and update.
fn validate_common(crd: &Value, old: Option<&Value>) -> FieldErrors {
    let mut errs = validate_status(&crd["status"]);
    errs.extend(validate_stored_versions(crd));
    errs.extend(validate_api_approval(crd, old));
    errs.extend(validate_preserve_unknown_fields(crd, old));
    errs
}

/// `metadata.name` must be `<spec.names.plural>.<spec.group>`.
fn validate_name(crd: &Value) -> FieldErrors {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let spec = &crd["spec"];
    let required = format!(
        "{}.{}",
        text(&spec["names"]["plural"]),
        text(&spec["group"])
    );
    if name == required {
        return FieldErrors::new();
    }
    FieldErrors::from(FieldError::invalid(
        &Path::root("metadata").child("name"),
        name,
        r#"must be spec.names.plural+"."+spec.group"#,
    ))
}

/// A string field ("" when absent or not a string, as a Go string field reads).
pub(crate) fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// A list field's entries (none when absent).
pub(crate) fn list(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// A bool field (false when absent).
fn flag(value: &Value) -> bool {
    value.as_bool().unwrap_or(false)
}

/// Upstream's validateCustomResourceDefinitionSpec (for the v1 fields).
fn validate_spec(spec: &Value, options: &Options, path: &Path) -> FieldErrors {
    let hoisted = Hoisted::of(spec);
    let versions = list(&spec["versions"]);
    let preserve_unknown = flag(&spec["preserveUnknownFields"]);
    let options = &Options {
        strictness: Strictness {
            structural: !preserve_unknown || uses_pruning_features(versions),
            ..options.strictness
        },
        ..options.clone()
    };
    let mut errs = validate_group(text(&spec["group"]), &path.child("group"));
    errs.extend(validate_enum(
        &spec["scope"],
        &["Cluster", "Namespaced"],
        &path.child("scope"),
    ));
    errs.extend(require_schemas(
        versions,
        options.require_openapi_schema,
        preserve_unknown,
        &path.child("versions"),
    ));
    if !preserve_unknown_false_or_defaults_absent(spec) {
        errs.push(FieldError::invalid(
            &path.child("preserveUnknownFields"),
            true,
            "must be false in order to use defaults in the schema",
        ));
    }
    errs.extend(validate_versions(spec, hoisted, options, path));
    errs.extend(validate_spec_names(&spec["names"], &path.child("names")));
    errs.extend(validate_hoisted(spec, hoisted, options, path));
    let strategy = text(&spec["conversion"]["strategy"]);
    if preserve_unknown && !strategy.is_empty() && strategy != "None" {
        errs.push(FieldError::invalid(
            &path.child("conversion").child("strategy"),
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errs.extend(validate_conversion(
        &spec["conversion"],
        options.require_recognized_review_version,
        options.allow_invalid_ca_bundle,
        &path.child("conversion"),
    ));
    errs
}

/// `spec.group`: required, a DNS subdomain, with at least one dot.
fn validate_group(group: &str, path: &Path) -> FieldErrors {
    if group.is_empty() {
        return FieldErrors::from(FieldError::required(path, ""));
    }
    let problems = is_dns1123_subdomain(group);
    if !problems.is_empty() {
        return FieldErrors::from(FieldError::invalid(path, group, problems.join(",")));
    }
    if !group.contains('.') {
        return FieldErrors::from(FieldError::invalid(
            path,
            group,
            "should be a domain with at least one dot",
        ));
    }
    FieldErrors::new()
}

/// A required string field with a fixed set of values (upstream's validateEnumStrings).
pub(crate) fn validate_enum(value: &Value, accepted: &[&str], path: &Path) -> FieldErrors {
    let value = text(value);
    if value.is_empty() {
        return FieldErrors::from(FieldError::required(path, ""));
    }
    if accepted.contains(&value) {
        return FieldErrors::new();
    }
    FieldErrors::from(FieldError::not_supported(path, value, accepted))
}

/// v1 requires a schema in every version; a stored CRD that lacks some (created before this
/// rule) needs them only in served versions, and only when unknown fields are pruned.
fn require_schemas(
    versions: &[Value],
    all: bool,
    preserve_unknown: bool,
    path: &Path,
) -> FieldErrors {
    if !all && preserve_unknown {
        return FieldErrors::new();
    }
    let detail = if all {
        ""
    } else {
        "because otherwise all fields are pruned"
    };
    versions
        .iter()
        .enumerate()
        .filter(|(_, v)| all || flag(&v["served"]))
        .filter(|(_, v)| !v["schema"]["openAPIV3Schema"].is_object())
        .map(|(i, _)| {
            FieldError::required(
                &path.index(i).child("schema").child("openAPIV3Schema"),
                detail,
            )
        })
        .collect()
}

/// Whether the spec may keep its `preserveUnknownFields` given its schemas' defaults:
/// defaults need pruning, so `preserveUnknownFields: true` forbids them.
fn preserve_unknown_false_or_defaults_absent(spec: &Value) -> bool {
    !flag(&spec["preserveUnknownFields"])
        || !list(&spec["versions"])
            .iter()
            .any(|v| schema_has_default(&v["schema"]["openAPIV3Schema"]))
}

/// Whether some schema has defaults or `x-kubernetes-*` extensions, which need a structural
/// schema even where unknown fields are preserved.
fn uses_pruning_features(versions: &[Value]) -> bool {
    versions.iter().any(|v| {
        schema_has(&v["schema"]["openAPIV3Schema"], &|node| {
            node.get("default").is_some_and(|d| !d.is_null())
                || node.keys().any(|key| key.starts_with("x-kubernetes-"))
        })
    })
}

/// Whether a schema or any schema nested in it has a `default`.
fn schema_has_default(schema: &Value) -> bool {
    schema_has(schema, &|node| {
        node.get("default").is_some_and(|d| !d.is_null())
    })
}

/// Each version's own rules, then the rules on the list of versions.
fn validate_versions(
    spec: &Value,
    hoisted: Hoisted,
    options: &Options,
    path: &Path,
) -> FieldErrors {
    let versions = list(&spec["versions"]);
    let versions_path = path.child("versions");
    let mut errs = FieldErrors::new();
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let name = text(&version["name"]);
        unique &= seen.insert(name);
        let problems = is_dns1035_label(name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &versions_path.index(i).child("name"),
                name,
                problems.join(","),
            ));
        }
        errs.extend(validate_version(
            version,
            hoisted,
            options,
            &versions_path.index(i),
        ));
    }
    let printed = || gojson::versions(&spec["versions"], hoisted.as_array());
    if !unique {
        errs.push(FieldError::invalid_rendered(
            &versions_path,
            printed(),
            "must contain unique version names",
        ));
    }
    let storage = versions.iter().filter(|v| flag(&v["storage"])).count();
    if storage != 1 {
        errs.push(FieldError::invalid_rendered(
            &versions_path,
            printed(),
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal `spec.version` is the first version's name, checked again there.
    if let Some(first) = versions.first().map(|v| text(&v["name"]))
        && !first.is_empty()
    {
        let problems = is_dns1035_label(first);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("version"),
                first,
                problems.join(","),
            ));
        }
    }
    errs
}

/// Upstream's validateCustomResourceDefinitionVersion, for the fields not hoisted.
fn validate_version(
    version: &Value,
    hoisted: Hoisted,
    options: &Options,
    path: &Path,
) -> FieldErrors {
    let mut errs: FieldErrors = deprecation_warning_problems(version)
        .into_iter()
        .map(|problem| {
            FieldError::invalid(
                &path.child("deprecationWarning"),
                version["deprecationWarning"].clone(),
                problem,
            )
        })
        .collect();
    if !hoisted.schema {
        let status = version["subresources"]["status"].is_object();
        errs.extend(validate_schema(
            &version["schema"],
            status,
            options.strictness,
            options.unchanged_schemas.contains(text(&version["name"])),
            &path.child("schema"),
        ));
    }
    if !hoisted.subresources {
        errs.extend(validate_subresources(
            &version["subresources"],
            &path.child("subresources"),
        ));
    }
    if !hoisted.columns {
        errs.extend(validate_columns(
            &version["additionalPrinterColumns"],
            &path.child("additionalPrinterColumns"),
        ));
    }
    if !hoisted.selectable_fields && !list(&version["selectableFields"]).is_empty() {
        let allow_too_many = options
            .allow_too_many_selectable
            .contains(text(&version["name"]));
        // A schema identical in every version was moved to the top level, so upstream
        // finds none here.
        let schema = match hoisted.schema {
            true => &Value::Null,
            false => &version["schema"]["openAPIV3Schema"],
        };
        errs.extend(if schema.is_object() {
            validate_selectable_fields(
                &version["selectableFields"],
                schema,
                allow_too_many,
                &path.child("selectableFields"),
            )
        } else {
            FieldErrors::from(FieldError::invalid(
                &path.child("selectableFields"),
                "",
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            ))
        });
    }
    errs
}

/// The problems of a version's `deprecationWarning` (upstream's validateDeprecationWarning).
fn deprecation_warning_problems(version: &Value) -> Vec<String> {
    let warning = &version["deprecationWarning"];
    let Some(warning) = warning.as_str() else {
        return Vec::new();
    };
    if !flag(&version["deprecated"]) {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut problems = Vec::new();
    if warning.len() > 256 {
        problems.push("must be <= 256 characters long".into());
    }
    if warning.is_empty() {
        problems.push("must not be an empty string".into());
    }
    // Every control character is also non-printable, so upstream's control-character
    // message is never reached.
    if let Some((i, _)) = warning.char_indices().find(|(_, c)| !is_printable(*c)) {
        problems.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    problems
}

/// Go's unicode.IsPrint for the characters a deprecation warning may hold: no control or
/// format characters, and no space other than U+0020.
fn is_printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{AD}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}'))
}

/// The fields identical in every version, validated once at the top level.
fn validate_hoisted(spec: &Value, hoisted: Hoisted, options: &Options, path: &Path) -> FieldErrors {
    let Some(first) = list(&spec["versions"]).first() else {
        return FieldErrors::new();
    };
    let mut errs = FieldErrors::new();
    if hoisted.schema {
        let any_status = list(&spec["versions"])
            .iter()
            .any(|v| v["subresources"]["status"].is_object());
        errs.extend(validate_schema(
            &first["schema"],
            any_status,
            options.strictness,
            options.unchanged_schemas.contains(text(&first["name"])),
            &path.child("validation"),
        ));
    }
    if hoisted.subresources {
        errs.extend(validate_subresources(
            &first["subresources"],
            &path.child("subresources"),
        ));
    }
    if hoisted.columns {
        errs.extend(validate_columns(
            &first["additionalPrinterColumns"],
            &path.child("additionalPrinterColumns"),
        ));
    }
    if hoisted.selectable_fields && !list(&first["selectableFields"]).is_empty() {
        let schema = &first["schema"]["openAPIV3Schema"];
        errs.extend(if hoisted.schema && first["schema"].is_object() {
            validate_selectable_fields(
                &first["selectableFields"],
                schema,
                options.allow_too_many_selectable.contains(""),
                &path.child("selectableFields"),
            )
        } else {
            FieldErrors::from(FieldError::invalid(
                &path.child("selectableFields"),
                "",
                "may only be set when validations.schema is included",
            ))
        });
    }
    errs
}

/// Upstream's validateCustomResourceDefinitionValidation for a `schema`
/// (CustomResourceValidation) at `path`: the root's restrictions, the structural check and
/// the compilation of CEL rules.
fn validate_schema(
    validation: &Value,
    status_enabled: bool,
    strictness: Strictness,
    unchanged: bool,
    path: &Path,
) -> FieldErrors {
    let schema = &validation["openAPIV3Schema"];
    if !schema.is_object() {
        return FieldErrors::new();
    }
    let schema_path = path.child("openAPIV3Schema");
    let mut errs = FieldErrors::new();
    if status_enabled {
        errs.extend(validate_root_with_status(schema, &schema_path));
    }
    if flag(&schema["nullable"]) {
        errs.push(FieldError::forbidden(
            &schema_path.child("nullable"),
            "nullable cannot be true at the root",
        ));
    }
    errs.extend(super::schema_checks::structural_and_rules(
        schema,
        &schema_path,
        strictness,
        unchanged,
    ));
    errs
}

/// With the status subresource, the root schema must be an object with only the fields
/// that survive extracting `properties[status]`.
fn validate_root_with_status(schema: &Value, path: &Path) -> FieldErrors {
    let Some(map) = schema.as_object() else {
        return FieldErrors::new();
    };
    let allowed: Vec<&str> = ROOT_FIELDS_WITH_STATUS.iter().map(|(go, _)| *go).collect();
    for (key, value) in map {
        if super::defaults::is_zero(value) {
            continue;
        }
        if key == "type" {
            if value.as_str() != Some("object") {
                return FieldErrors::from(FieldError::invalid(
                    &path.child("type"),
                    value.clone(),
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
            }
            continue;
        }
        if !ROOT_FIELDS_WITH_STATUS.iter().any(|(_, json)| json == key) {
            return FieldErrors::from(FieldError::invalid(
                path,
                schema.clone(),
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    allowed.join(" ")
                ),
            ));
        }
    }
    FieldErrors::new()
}

/// Upstream's ValidateCustomResourceDefinitionSubresources: the scale paths.
fn validate_subresources(subresources: &Value, path: &Path) -> FieldErrors {
    let scale = &subresources["scale"];
    if !scale.is_object() {
        return FieldErrors::new();
    }
    let mut errs = FieldErrors::new();
    for (key, prefix, under) in [
        ("specReplicasPath", ".spec.", ".spec"),
        ("statusReplicasPath", ".status.", ".status"),
    ] {
        let field_path = path.child(&format!("scale.{key}"));
        let value = text(&scale[key]);
        if value.is_empty() {
            errs.push(FieldError::required(&field_path, ""));
            continue;
        }
        let problems = validate_simple_json_path(value, &field_path);
        if !problems.is_empty() {
            errs.extend(problems);
        } else if !value.starts_with(prefix) {
            errs.push(FieldError::invalid(
                &field_path,
                value,
                format!("should be a json path under {under}"),
            ));
        }
    }
    let selector = text(&scale["labelSelectorPath"]);
    if !selector.is_empty() {
        let field_path = path.child("scale.labelSelectorPath");
        let problems = validate_simple_json_path(selector, &field_path);
        if !problems.is_empty() {
            errs.extend(problems);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                &field_path,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

/// A JSON path in dot notation starting with `.` (upstream's validateSimpleJSONPath).
fn validate_simple_json_path(value: &str, path: &Path) -> FieldErrors {
    if value.is_empty() {
        return FieldErrors::from(FieldError::invalid(path, value, "must not be empty"));
    }
    if !value.starts_with('.') {
        return FieldErrors::from(FieldError::invalid(
            path,
            value,
            "must be a simple json path starting with .",
        ));
    }
    FieldErrors::new()
}

/// Each additional printer column (upstream's ValidateCustomResourceColumnDefinition).
fn validate_columns(columns: &Value, path: &Path) -> FieldErrors {
    list(columns)
        .iter()
        .enumerate()
        .flat_map(|(i, column)| validate_column(column, &path.index(i)))
        .collect()
}

fn validate_column(column: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if text(&column["name"]).is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    let type_ = text(&column["type"]);
    if type_.is_empty() {
        errs.push(FieldError::required(&path.child("type"), types));
    } else if !COLUMN_TYPES.contains(&type_) {
        errs.push(FieldError::invalid(&path.child("type"), type_, types));
    }
    let format = text(&column["format"]);
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        errs.push(FieldError::invalid(
            &path.child("format"),
            format,
            format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    let json_path = text(&column["jsonPath"]);
    // Upstream names the field by its Go name here.
    let json_path_field = path.child("JSONPath");
    if json_path.is_empty() {
        errs.push(FieldError::required(&json_path_field, ""));
    } else {
        errs.extend(validate_simple_json_path(json_path, &json_path_field));
    }
    errs
}

/// Upstream's ValidateCustomResourceSelectableFields against the version's schema.
fn validate_selectable_fields(
    fields: &Value,
    schema: &Value,
    allow_too_many: bool,
    path: &Path,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut unique = HashSet::new();
    for (i, field) in list(fields).iter().enumerate() {
        let json_path = text(&field["jsonPath"]);
        let field_path = path.index(i).child("jsonPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(&field_path, ""));
            continue;
        }
        let (resolved, found) = match resolve_field_path(json_path, schema, false) {
            Ok(found) => found,
            Err(problem) => {
                errs.push(FieldError::invalid(
                    &field_path,
                    json_path,
                    format!("is an invalid path: {problem}"),
                ));
                continue;
            }
        };
        if resolved == "metadata"
            || resolved.starts_with("metadata.")
            || resolved.starts_with("metadata[")
        {
            errs.push(FieldError::invalid(
                &field_path,
                json_path,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(text(&found["type"]), "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                &field_path,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(resolved) {
            errs.push(FieldError::duplicate(&field_path, json_path));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !allow_too_many {
        errs.push(FieldError::too_many(
            path,
            Some(unique.len()),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    errs
}

/// Upstream's ValidateCustomResourceDefinitionNames plus the names the spec requires.
fn validate_spec_names(names: &Value, path: &Path) -> FieldErrors {
    let mut errs: FieldErrors = ["plural", "singular", "kind", "listKind"]
        .into_iter()
        .filter(|key| text(&names[*key]).is_empty())
        .map(|key| FieldError::required(&path.child(key), ""))
        .collect();
    errs.extend(validate_names(names, path));
    errs
}

/// The formats of a set of names (`spec.names` or `status.acceptedNames`).
fn validate_names(names: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for key in ["plural", "singular"] {
        let value = text(&names[key]);
        let problems = is_dns1035_label(value);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(key),
                value,
                problems.join(","),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = text(&names[key]);
        let problems = is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(key),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                ),
            ));
        }
    }
    errs.extend(validate_labels_list(
        &names["shortNames"],
        &path.child("shortNames"),
    ));
    let kind = text(&names["kind"]);
    if !kind.is_empty() && kind == text(&names["listKind"]) {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    errs.extend(validate_labels_list(
        &names["categories"],
        &path.child("categories"),
    ));
    errs
}

/// Every entry must be a DNS-1035 label (short names, categories).
fn validate_labels_list(values: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, value) in list(values).iter().enumerate() {
        let value = text(value);
        let problems = is_dns1035_label(value);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.index(i),
                value,
                problems.join(","),
            ));
        }
    }
    errs
}

/// The status's accepted names (upstream's ValidateCustomResourceDefinitionStatus).
fn validate_status(status: &Value) -> FieldErrors {
    validate_names(
        &status["acceptedNames"],
        &Path::root("status").child("acceptedNames"),
    )
}

/// `status.storedVersions`: not empty, holding the storage version, and only versions still
/// in `spec.versions`.
fn validate_stored_versions(crd: &Value) -> FieldErrors {
    let path = Path::root("status").child("storedVersions");
    let stored_value = &crd["status"]["storedVersions"];
    let stored: Vec<&str> = list(stored_value).iter().map(text).collect();
    if stored.is_empty() {
        return FieldErrors::from(FieldError::invalid_rendered(
            &path,
            gojson::string_slice(stored_value),
            "must have at least one stored version",
        ));
    }
    let mut errs = FieldErrors::new();
    let versions = list(&crd["spec"]["versions"]);
    for version in versions {
        let name = text(&version["name"]);
        if flag(&version["storage"]) && !stored.contains(&name) {
            errs.push(FieldError::invalid_rendered(
                &path,
                gojson::string_slice(stored_value),
                format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, name) in stored.iter().enumerate() {
        let in_spec = versions.iter().any(|v| text(&v["name"]) == *name);
        // A name listed twice counts once, at its last index, as upstream's map does.
        let last = stored.iter().rposition(|s| s == name) == Some(i);
        if !in_spec && last {
            errs.push(FieldError::invalid(
                &path.index(i),
                *name,
                format!("missing from spec.versions; {name} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {name} and removes {name} from status.storedVersions"),
            ));
        }
    }
    errs
}

/// `spec.preserveUnknownFields: true` is only kept by CRDs that already had it.
fn validate_preserve_unknown_fields(crd: &Value, old: Option<&Value>) -> FieldErrors {
    if old.is_some_and(|old| flag(&old["spec"]["preserveUnknownFields"])) {
        return FieldErrors::new();
    }
    if !flag(&crd["spec"]["preserveUnknownFields"]) {
        return FieldErrors::new();
    }
    FieldErrors::from(FieldError::invalid(
        &Path::root("spec").child("preserveUnknownFields"),
        true,
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    ))
}

/// The versions (and "" for the top level) whose selectable fields were already more than
/// the maximum and did not change.
fn too_many_selectable_allowed(new: &Value, old: &Value) -> HashSet<String> {
    let mut allowed = HashSet::new();
    let kept = |new: &Value, old: &Value| {
        list(&old["selectableFields"]).len() > MAX_SELECTABLE_FIELDS
            && same(&new["selectableFields"], &old["selectableFields"], true)
    };
    let hoisted =
        Hoisted::of(&new["spec"]).selectable_fields && Hoisted::of(&old["spec"]).selectable_fields;
    let (new_first, old_first) = (access::versions(new).first(), access::versions(old).first());
    if let (true, Some(new_first), Some(old_first)) = (hoisted, new_first, old_first)
        && kept(new_first, old_first)
    {
        allowed.insert(String::new());
    }
    for version in list(&new["spec"]["versions"]) {
        let name = text(&version["name"]);
        if access::version(old, name).is_some_and(|old_version| kept(version, old_version)) {
            allowed.insert(name.to_string());
        }
    }
    allowed
}

/// The immutable parts of the spec (upstream's validateCustomResourceDefinitionSpecUpdate).
fn validate_spec_update(spec: &Value, old: &Value, options: &Options, path: &Path) -> FieldErrors {
    let names = path.child("names");
    let mut checks = Vec::new();
    if options.require_immutable_names {
        checks.push((&spec["scope"], &old["scope"], path.child("scope")));
        checks.push((
            &spec["names"]["kind"],
            &old["names"]["kind"],
            names.child("kind"),
        ));
    }
    checks.push((&spec["group"], &old["group"], path.child("group")));
    checks.push((
        &spec["names"]["plural"],
        &old["names"]["plural"],
        names.child("plural"),
    ));
    checks
        .into_iter()
        .filter(|(new, old, _)| text(new) != text(old))
        .map(|(new, _, path)| FieldError::invalid(&path, text(new), FIELD_IMMUTABLE_ERROR_MSG))
        .collect()
}
