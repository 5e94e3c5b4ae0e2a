//! Name, label and metadata validation (k8s.io/apimachinery/pkg/util/validation,
//! pkg/api/validation and pkg/apis/meta/v1/validation).
//!
//! The `is_*` functions return upstream's list of messages (empty when valid); the
//! `validate_*` functions return field errors. The texts are upstream's, including its
//! inconsistencies: DNS names say "characters", label keys and values say "bytes".

pub mod field;

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::gofmt;
use crate::schema::GroupVersionKind;
use field::{ErrorType, FieldError, FieldErrors, Path};

/// The longest DNS-1123 label (and label key name, and label value).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// The longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// The largest total size of an object's annotations, keys plus values, in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;
/// The detail of errors about fields that may not change.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// The detail of errors about negative numbers.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// "must be no more than N characters" (the DNS and config key checks).
fn max_len_characters(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// "must be no more than N bytes" (the label key and value checks).
fn max_len_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// Upstream's description of a failed pattern, with examples and the pattern itself. The
/// examples are joined as upstream joins them, which leaves two spaces before each "or".
fn regex_error(msg: &str, pattern: &str, examples: &[&str]) -> String {
    let quoted: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{pattern}')",
        quoted.join(" or ")
    )
}

/// True when `s` is non-empty, made of `inner` characters, and starts and ends with an
/// `edge` character: the shape of every name pattern here.
fn bracketed(s: &str, edge: impl Fn(u8) -> bool, inner: impl Fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => edge(first) && edge(last) && b.iter().all(|&c| inner(c)),
        _ => false,
    }
}

/// Lower-case letters and digits.
fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn matches_dns1123_label(s: &str) -> bool {
    bracketed(s, lower_alnum, |c| lower_alnum(c) || c == b'-')
}

/// Matches dot-separated DNS-1123 labels.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_label_key_name(s: &str) -> bool {
    bracketed(
        s,
        |c| c.is_ascii_alphanumeric(),
        |c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'),
    )
}

/// Checks a DNS-1123 label (at most 63 characters, lower-case alphanumerics and '-',
/// alphanumeric at both ends), e.g. a namespace name.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_characters(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// The longest IANA service name (a port name).
const IANA_SVC_NAME_MAX_LENGTH: usize = 15;

/// Checks a port name (an IANA_SVC_NAME) as upstream's IsValidPortName does: at most 15
/// lower-case alphanumerics and '-', with a letter, no "--", no '-' at either end. The empty
/// name fails both the character and the letter rules; callers that allow no name check
/// for it first, as upstream's do.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > IANA_SVC_NAME_MAX_LENGTH {
        errs.push(max_len_characters(IANA_SVC_NAME_MAX_LENGTH));
    }
    let charset = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if port.is_empty() || !port.bytes().all(charset) {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// Checks a DNS-1123 subdomain (at most 253 characters, dot-separated labels), the rule for
/// most object names.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    subdomain_errors(value, max_len_characters)
}

/// The subdomain check, with the length message of the caller's family.
fn subdomain_errors(value: &str, max_len: fn(usize) -> String) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Checks a DNS-1035 label (like a DNS-1123 label but starting with a letter), e.g. a
/// service name.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_characters(DNS1123_LABEL_MAX_LENGTH));
    }
    let ok = bracketed(value, lower_alnum, |c| lower_alnum(c) || c == b'-')
        && value.as_bytes()[0].is_ascii_lowercase();
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Checks a qualified name (a label key, annotation key or finalizer): an optional DNS
/// subdomain prefix and '/', then a name of at most 63 bytes.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                let msgs = subdomain_errors(prefix, max_len_bytes);
                errs.extend(msgs.into_iter().map(|m| format!("prefix part {m}")));
            }
            name
        }
        _ => {
            let pattern = regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"],
            );
            errs.push(format!(
                "a valid label key {pattern} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_bytes(DNS1123_LABEL_MAX_LENGTH)
        ));
    }
    if !matches_label_key_name(name) {
        let pattern = regex_error(
            LABEL_KEY_ERR,
            LABEL_KEY_FMT,
            &["MyName", "my.name", "123-abc"],
        );
        errs.push(format!("name part {pattern}"));
    }
    errs
}

/// Checks a label value: empty, or at most 63 bytes shaped like a label key name.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_bytes(DNS1123_LABEL_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Checks a ConfigMap or Secret data key: at most 253 characters of alphanumerics, '-', '_'
/// and '.', and not `.`, `..` or starting with `..`.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_characters(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !ok {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if value == "." {
        errs.push("must not be '.'".to_string());
    } else if value == ".." {
        errs.push("must not be '..'".to_string());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// Checks a name that becomes one segment of a URL path, the rule for names of objects
/// that have no stricter one: not `.` or `..`, no `/` or `%`.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    is_valid_path_segment_prefix(name)
}

/// Checks a prefix of a path segment name (a generateName): no `/` or `%`.
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Replaces a generateName's trailing dash so that the prefix can be checked as a name, as
/// upstream does (which also drops the character before the dash).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let kept = String::from_utf8_lossy(&name.as_bytes()[..name.len() - 2]);
        return format!("{kept}a");
    }
    name.to_string()
}

/// The name rule of most resources: a DNS-1123 subdomain (`prefix` is true when checking a
/// generateName, which may end in '-').
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1123_subdomain(&mask_trailing_dash(name));
    }
    is_dns1123_subdomain(name)
}

/// The name rule of resources named by a DNS-1123 label (namespaces, ...).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1123_label(&mask_trailing_dash(name));
    }
    is_dns1123_label(name)
}

/// The name rule of resources named by a DNS-1035 label (services).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1035_label(&mask_trailing_dash(name));
    }
    is_dns1035_label(name)
}

/// The rule for namespace names (a DNS-1123 label), also applied to `metadata.namespace`.
pub fn validate_namespace_name(name: &str, prefix: bool) -> Vec<String> {
    name_is_dns_label(name, prefix)
}

/// The name rule of resources with no stricter one: a valid URL path segment.
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_valid_path_segment_prefix(name);
    }
    is_valid_path_segment_name(name)
}

/// A string field of a JSON object; empty when absent or not a string.
fn str_field<'a>(object: &'a Value, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A list-of-strings field of a JSON object.
fn string_list<'a>(object: &'a Value, key: &str) -> Vec<&'a str> {
    let Some(list) = object.get(key).and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter().filter_map(Value::as_str).collect()
}

/// Invalid-value errors for each message of a check.
fn invalid_each(path: &Path, value: &str, msgs: Vec<String>) -> impl Iterator<Item = FieldError> {
    let path = path.clone();
    let value = value.to_string();
    msgs.into_iter()
        .map(move |m| FieldError::invalid(&path, value.as_str(), m))
}

/// Checks a label key (upstream's ValidateLabelName).
pub fn validate_label_name(name: &str, path: &Path) -> FieldErrors {
    invalid_each(path, name, is_qualified_name(name)).collect()
}

/// Checks the labels of `metadata.labels` (a JSON object of strings); errors name the map's
/// path, not the key, as upstream's do.
pub fn validate_labels(labels: &Map<String, Value>, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (key, value) in labels {
        errs.extend(validate_label_name(key, path));
        let value = value.as_str().unwrap_or("");
        errs.extend(invalid_each(path, value, is_valid_label_value(value)));
    }
    errs
}

/// Checks a metav1 `LabelSelector` (upstream's ValidateLabelSelector, rejecting invalid
/// values and unknown operators): matchLabels as labels, and each matchExpressions entry's
/// operator (`In`, `NotIn`, `Exists`, `DoesNotExist`), values and key. `null` is valid.
pub fn validate_label_selector(selector: &Value, path: &Path) -> FieldErrors {
    let mut errs = validate_labels(
        &map_field(selector, "matchLabels"),
        &path.child("matchLabels"),
    );
    for (i, expression) in list_field(selector, "matchExpressions").iter().enumerate() {
        let path = path.child("matchExpressions").index(i);
        errs.extend(validate_label_selector_requirement(
            expression, false, &path,
        ));
    }
    errs
}

/// Checks one `matchExpressions` entry of a label selector (upstream's
/// ValidateLabelSelectorRequirement); `allow_unknown_operator` as its option of that name
/// (access reviews from newer clients may use operators this server does not know).
pub fn validate_label_selector_requirement(
    expression: &Value,
    allow_unknown_operator: bool,
    path: &Path,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let values = string_list(expression, "values");
    let values_path = path.child("values");
    match str_field(expression, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        _ if allow_unknown_operator => {}
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(
        str_field(expression, "key"),
        &path.child("key"),
    ));
    for (i, value) in values.into_iter().enumerate() {
        errs.extend(invalid_each(
            &values_path.index(i),
            value,
            is_valid_label_value(value),
        ));
    }
    errs
}

/// Checks one field selector requirement (upstream's ValidateFieldSelectorRequirement with
/// unknown operators allowed, as access reviews validate them): a key, and values as the
/// operator needs them.
pub fn validate_field_selector_requirement(requirement: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if str_field(requirement, "key").is_empty() {
        errs.push(FieldError::required(
            &path.child("key"),
            "must be specified",
        ));
    }
    let values = string_list(requirement, "values");
    match str_field(requirement, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &path.child("values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        _ => {}
    }
    errs
}

/// Checks annotations: keys are qualified names (checked in lower case) and keys plus values
/// total at most 256 KiB.
pub fn validate_annotations(annotations: &Map<String, Value>, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut total = 0;
    for (key, value) in annotations {
        errs.extend(invalid_each(
            path,
            key,
            is_qualified_name(&key.to_lowercase()),
        ));
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(
            path,
            TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
        ));
    }
    errs
}

/// Checks finalizer names (qualified names) and that `orphan` and `foregroundDeletion` are
/// not both set. Errors name the list's path, not the index, as upstream's do.
pub fn validate_finalizers(finalizers: &[&str], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for name in finalizers {
        errs.extend(invalid_each(path, name, is_qualified_name(name)));
    }
    if finalizers.contains(&"orphan") && finalizers.contains(&"foregroundDeletion") {
        errs.push(FieldError::invalid(
            path,
            finalizers.to_vec(),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// The finalizers that built-in (core) types accept without a domain prefix.
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// The extra finalizer check that built-in types (kubernetes/pkg/apis/core/validation) run
/// after `validate_object_meta` and `validate_object_meta_update`: a finalizer in `meta`
/// without a '/' must be one of the standard ones. Errors name the indexed path,
/// `metadata.finalizers[i]`.
pub fn validate_kube_finalizers(meta: &Value, path: &Path) -> FieldErrors {
    let path = path.child("finalizers");
    let mut errs = FieldErrors::new();
    for (i, name) in string_list(meta, "finalizers").into_iter().enumerate() {
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
            errs.push(FieldError::invalid(
                &path.index(i),
                name,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

/// An owner reference as upstream prints it in messages: its JSON with fields in the Go
/// struct's order.
fn owner_reference_json(reference: &Value) -> String {
    let mut fields = Vec::new();
    for key in [
        "apiVersion",
        "kind",
        "name",
        "uid",
        "controller",
        "blockOwnerDeletion",
    ] {
        let value = match reference.get(key) {
            None | Some(Value::Null) if matches!(key, "controller" | "blockOwnerDeletion") => {
                continue;
            }
            None | Some(Value::Null) => Value::String(String::new()),
            Some(v) => v.clone(),
        };
        fields.push(format!("\"{key}\":{}", gofmt::json(&value)));
    }
    format!("{{{}}}", fields.join(","))
}

/// Checks one owner reference: apiVersion with a version, kind, name and uid present, and
/// not an Event (which may not own anything).
fn validate_owner_reference(reference: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let api_version = str_field(reference, "apiVersion");
    let kind = str_field(reference, "kind");
    let gvk = GroupVersionKind::from_api_version_and_kind(api_version, kind);
    if gvk.version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            api_version,
            "version must not be empty",
        ));
    }
    if gvk.kind.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("kind"),
            kind,
            "must not be empty",
        ));
    }
    for key in ["name", "uid"] {
        let value = str_field(reference, key);
        if value.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(key),
                value,
                "must not be empty",
            ));
        }
    }
    if gvk == GroupVersionKind::new("", "v1", "Event") {
        errs.push(FieldError {
            error_type: ErrorType::Invalid,
            field: path.to_string(),
            bad_value: Some(owner_reference_json(reference)),
            detail: format!("{gvk} is disallowed from being an owner"),
        });
    }
    errs
}

/// Checks owner references: each one, and that at most one is the controller. Errors name
/// the list's path, not the index, as upstream's do.
pub fn validate_owner_references(references: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut first_controller: Option<String> = None;
    for reference in references {
        errs.extend(validate_owner_reference(reference, path));
        if reference.get("controller").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let name = format!(
            "{}/{}",
            str_field(reference, "kind"),
            str_field(reference, "name")
        );
        match &first_controller {
            None => first_controller = Some(name),
            Some(first) => {
                let all: Vec<String> = references.iter().map(owner_reference_json).collect();
                errs.push(FieldError {
                    error_type: ErrorType::Invalid,
                    field: path.to_string(),
                    bad_value: Some(format!("[{}]", all.join(","))),
                    detail: format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {name}"
                    ),
                });
            }
        }
    }
    errs
}

/// Checks a field manager name: at most 128 bytes, printable characters only.
pub fn validate_field_manager(manager: &str, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if manager.len() > 128 {
        errs.push(FieldError::too_long(path, 128));
    }
    for (i, c) in manager.char_indices() {
        if !gofmt::is_printable(c) {
            let detail = format!("invalid character U+{:04X} (at position {i})", c as u32);
            errs.push(FieldError::invalid(path, manager, detail));
        }
    }
    errs
}

/// Checks `metadata.managedFields` entries: operation, fieldsType, manager, subresource.
fn validate_managed_fields(entries: &[Value], path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = path.index(i);
        let operation = str_field(entry, "operation");
        if operation != "Apply" && operation != "Update" {
            errs.push(FieldError::invalid(
                &path.child("operation"),
                operation,
                "must be `Apply` or `Update`",
            ));
        }
        let fields_type = str_field(entry, "fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errs.push(FieldError::invalid(
                &path.child("fieldsType"),
                fields_type,
                "must be `FieldsV1`",
            ));
        }
        errs.extend(validate_field_manager(
            str_field(entry, "manager"),
            &path.child("manager"),
        ));
        if str_field(entry, "subresource").len() > 256 {
            errs.push(FieldError::too_long(&path.child("subresource"), 256));
        }
    }
    errs
}

/// An integer field of a JSON object; 0 when absent.
fn int_field(object: &Value, key: &str) -> i64 {
    object.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// A JSON object field, or an empty map.
fn map_field(object: &Value, key: &str) -> Map<String, Value> {
    object
        .get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// A JSON array field, or an empty list.
fn list_field<'a>(object: &'a Value, key: &str) -> &'a [Value] {
    object
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The checks of metadata that creates and updates share: labels, annotations, owner
/// references and managed fields.
fn validate_meta_common(meta: &Value, path: &Path) -> FieldErrors {
    let mut errs = validate_labels(&map_field(meta, "labels"), &path.child("labels"));
    errs.extend(validate_annotations(
        &map_field(meta, "annotations"),
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        list_field(meta, "ownerReferences"),
        &path.child("ownerReferences"),
    ));
    errs
}

/// Validates the `metadata` of an object being created (upstream's ValidateObjectMeta):
/// generateName and name by `name_fn` (its bool is true for the generateName prefix), a
/// name is required, the namespace is required for namespaced resources and forbidden for
/// cluster-scoped ones, generation non-negative, then labels, annotations, owner
/// references, finalizers and managed fields.
///
/// The metadata is expected to have been type-checked: values of the wrong JSON type are
/// treated as absent.
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_fn: fn(&str, bool) -> Vec<String>,
    path: &Path,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        let msgs = name_fn(generate_name, true);
        errs.extend(invalid_each(
            &path.child("generateName"),
            generate_name,
            msgs,
        ));
    }
    let name = str_field(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        errs.extend(invalid_each(
            &path.child("name"),
            name,
            name_fn(name, false),
        ));
    }
    let namespace = str_field(meta, "namespace");
    let namespace_path = path.child("namespace");
    if !namespaced {
        if !namespace.is_empty() {
            errs.push(FieldError::forbidden(
                &namespace_path,
                "not allowed on this type",
            ));
        }
    } else if namespace.is_empty() {
        errs.push(FieldError::required(&namespace_path, ""));
    } else {
        let msgs = validate_namespace_name(namespace, false);
        errs.extend(invalid_each(&namespace_path, namespace, msgs));
    }
    let generation = int_field(meta, "generation");
    if generation < 0 {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            generation,
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
    errs.extend(validate_meta_common(meta, path));
    errs.extend(validate_finalizers(
        &string_list(meta, "finalizers"),
        &path.child("finalizers"),
    ));
    errs.extend(validate_managed_fields(
        list_field(meta, "managedFields"),
        &path.child("managedFields"),
    ));
    errs
}

/// A metadata field compared for immutability: absent and `null` are the same.
fn immutable_value(meta: &Value, key: &str) -> Value {
    meta.get(key).cloned().unwrap_or(Value::Null)
}

/// The value of a string field for immutability checks: absent, `null` and `""` are the
/// same (Go's zero value).
fn immutable_string(meta: &Value, key: &str) -> Value {
    Value::String(str_field(meta, key).to_string())
}

/// Validates the `metadata` of an object being updated against the stored one (upstream's
/// ValidateObjectMetaUpdate): no new finalizers while deleting, resourceVersion present,
/// generation not decremented, name, namespace, uid, creationTimestamp, deletionTimestamp
/// and deletionGracePeriodSeconds unchanged, then labels, annotations, owner references and
/// managed fields of the new metadata. generateName is not checked.
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !immutable_value(old, "deletionTimestamp").is_null() {
        let old_finalizers: BTreeSet<&str> = string_list(old, "finalizers").into_iter().collect();
        let extra: BTreeSet<&str> = string_list(new, "finalizers")
            .into_iter()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        if !extra.is_empty() {
            let listed: Vec<String> = extra.iter().map(|f| gofmt::quote(f)).collect();
            errs.push(FieldError::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    listed.join(", ")
                ),
            ));
        }
    }
    let resource_version = str_field(new, "resourceVersion");
    if resource_version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion"),
            resource_version,
            "must be specified for an update",
        ));
    }
    let generation = int_field(new, "generation");
    if generation < int_field(old, "generation") {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            generation,
            "must not be decremented",
        ));
    }
    let immutable = [
        ("name", immutable_string as fn(&Value, &str) -> Value),
        ("namespace", immutable_string),
        ("uid", immutable_string),
        ("creationTimestamp", immutable_value),
        ("deletionTimestamp", immutable_value),
        ("deletionGracePeriodSeconds", immutable_value),
    ];
    for (key, read) in immutable {
        let new_value = read(new, key);
        if new_value != read(old, key) {
            errs.push(FieldError::invalid(
                &path.child(key),
                new_value,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    errs.extend(validate_meta_common(new, path));
    errs.extend(validate_managed_fields(
        list_field(new, "managedFields"),
        &path.child("managedFields"),
    ));
    errs
}

#[cfg(test)]
mod tests;
