//! Field paths and field errors (k8s.io/apimachinery/pkg/util/validation/field).
//!
//! A `FieldError` prints exactly as upstream's `field.Error.Error()`, e.g.
//! `metadata.name: Required value: name or generateName is required`; its type's name
//! (`FieldValueRequired`) is the `reason` of the matching `StatusCause`.

use std::fmt;

use serde_json::Value;

use crate::gofmt;

/// A path to a field, e.g. `metadata.name`, `spec.containers[0]`, `metadata.labels[x]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path(String);

impl Path {
    /// A path starting at a top-level field, e.g. `Path::root("metadata")`.
    pub fn root(name: &str) -> Self {
        Path(name.to_string())
    }

    /// The path to a named child field: `metadata` → `metadata.name`.
    pub fn child(&self, name: &str) -> Self {
        Path(format!("{}.{name}", self.0))
    }

    /// The path to a list element: `spec.containers` → `spec.containers[0]`.
    pub fn index(&self, index: usize) -> Self {
        Path(format!("{}[{index}]", self.0))
    }

    /// The path to a map entry: `metadata.labels` → `metadata.labels[x]`.
    pub fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind of a field error. Its `as_str()` is the `StatusCause` reason and its
/// `Display` the words that start the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// A referenced value does not exist (`FieldValueNotFound`, "Not found").
    NotFound,
    /// A required value is missing (`FieldValueRequired`, "Required value").
    Required,
    /// A value that must be unique is repeated (`FieldValueDuplicate`, "Duplicate value").
    Duplicate,
    /// A value is malformed (`FieldValueInvalid`, "Invalid value").
    Invalid,
    /// A value is not one of the supported ones (`FieldValueNotSupported`,
    /// "Unsupported value").
    NotSupported,
    /// A value may not be set here (`FieldValueForbidden`, "Forbidden").
    Forbidden,
    /// A value is too long (`FieldValueTooLong`, "Too long").
    TooLong,
    /// A list has too many items (`FieldValueTooMany`, "Too many").
    TooMany,
    /// The server failed while validating (`InternalError`, "Internal error").
    Internal,
    /// A value has the wrong type (`FieldValueTypeInvalid`, "Invalid value").
    TypeInvalid,
}

impl ErrorType {
    /// Upstream's `ErrorType` string, used as the `reason` of status causes.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words that start an error's body.
    fn words(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// One validation error of one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// What is wrong.
    pub error_type: ErrorType,
    /// The path of the field, e.g. `metadata.name`.
    pub field: String,
    /// The offending value as upstream prints it (`"Foo"`, `5`, `["a"]`); `None` when the
    /// message leaves it out.
    pub bad_value: Option<String>,
    /// The explanation after the value.
    pub detail: String,
}

impl FieldError {
    /// An error whose value is printed.
    fn with_value(error_type: ErrorType, path: &Path, value: &Value, detail: String) -> Self {
        FieldError {
            error_type,
            field: path.to_string(),
            bad_value: Some(gofmt::value(value)),
            detail,
        }
    }

    /// An error whose value is not printed.
    fn without_value(error_type: ErrorType, path: &Path, detail: String) -> Self {
        FieldError {
            error_type,
            field: path.to_string(),
            bad_value: None,
            detail,
        }
    }

    /// `<path>: Required value[: detail]`.
    pub fn required(path: &Path, detail: impl Into<String>) -> Self {
        FieldError::without_value(ErrorType::Required, path, detail.into())
    }

    /// `<path>: Invalid value: <value>: <detail>`.
    pub fn invalid(path: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        FieldError::with_value(ErrorType::Invalid, path, &value.into(), detail.into())
    }

    /// `<path>: Invalid value: <rendered>: <detail>`, the value already printed as upstream
    /// prints it (an internal struct's JSON, `gostruct`).
    pub fn invalid_rendered(path: &Path, rendered: String, detail: impl Into<String>) -> Self {
        FieldError {
            error_type: ErrorType::Invalid,
            field: path.to_string(),
            bad_value: Some(rendered),
            detail: detail.into(),
        }
    }

    /// `<path>: Invalid value: <value>: <detail>`, for a value of the wrong type.
    pub fn type_invalid(path: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        FieldError::with_value(ErrorType::TypeInvalid, path, &value.into(), detail.into())
    }

    /// `<path>: Not found: <value>`.
    pub fn not_found(path: &Path, value: impl Into<Value>) -> Self {
        FieldError::with_value(ErrorType::NotFound, path, &value.into(), String::new())
    }

    /// `<path>: Duplicate value: <value>`.
    pub fn duplicate(path: &Path, value: impl Into<Value>) -> Self {
        FieldError::with_value(ErrorType::Duplicate, path, &value.into(), String::new())
    }

    /// `<path>: Unsupported value: <value>: supported values: "a", "b"` (no detail when
    /// `valid` is empty).
    pub fn not_supported<S: AsRef<str>>(
        path: &Path,
        value: impl Into<Value>,
        valid: impl IntoIterator<Item = S>,
    ) -> Self {
        let quoted: Vec<String> = valid
            .into_iter()
            .map(|v| gofmt::quote(v.as_ref()))
            .collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError::with_value(ErrorType::NotSupported, path, &value.into(), detail)
    }

    /// `<path>: Forbidden[: detail]`.
    pub fn forbidden(path: &Path, detail: impl Into<String>) -> Self {
        FieldError::without_value(ErrorType::Forbidden, path, detail.into())
    }

    /// `<path>: Too long: may not be more than <max> bytes` (the value is never printed).
    pub fn too_long(path: &Path, max_bytes: usize) -> Self {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        let detail = format!("may not be more than {max_bytes} {unit}");
        FieldError::without_value(ErrorType::TooLong, path, detail)
    }

    /// `<path>: Too many: <actual>: must have at most <max> items`; the count is left out
    /// when unknown.
    pub fn too_many(path: &Path, actual: Option<usize>, max_items: usize) -> Self {
        let unit = if max_items == 1 { "item" } else { "items" };
        let detail = format!("must have at most {max_items} {unit}");
        FieldError {
            error_type: ErrorType::TooMany,
            field: path.to_string(),
            bad_value: actual.map(|n| n.to_string()),
            detail,
        }
    }

    /// `<path>: Internal error: <err>`.
    pub fn internal(path: &Path, err: impl fmt::Display) -> Self {
        FieldError::without_value(ErrorType::Internal, path, err.to_string())
    }

    /// The message without the field (upstream's `ErrorBody()`), used as the message of the
    /// matching status cause.
    pub fn body(&self) -> String {
        let mut body = self.error_type.words().to_string();
        if let Some(value) = &self.bad_value {
            body.push_str(": ");
            body.push_str(value);
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

/// `<field>: <body>`.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A list of field errors (upstream's `field.ErrorList`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldErrors(Vec<FieldError>);

impl FieldErrors {
    /// An empty list.
    pub fn new() -> Self {
        FieldErrors::default()
    }

    /// True when there are no errors.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds an error.
    pub fn push(&mut self, error: FieldError) {
        self.0.push(error);
    }

    /// The errors in order.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// The message of all errors together, as upstream's aggregate error prints it: repeated
    /// messages once, a single message alone, several as `[a, b]`; `None` when empty.
    pub fn aggregate_message(&self) -> Option<String> {
        let mut seen: Vec<String> = Vec::new();
        for error in &self.0 {
            let message = error.to_string();
            if !seen.contains(&message) {
                seen.push(message);
            }
        }
        match seen.len() {
            0 => None,
            1 => seen.pop(),
            _ => Some(format!("[{}]", seen.join(", "))),
        }
    }
}

impl Extend<FieldError> for FieldErrors {
    fn extend<I: IntoIterator<Item = FieldError>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl FromIterator<FieldError> for FieldErrors {
    fn from_iter<I: IntoIterator<Item = FieldError>>(iter: I) -> Self {
        FieldErrors(iter.into_iter().collect())
    }
}

impl IntoIterator for FieldErrors {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a FieldErrors {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl From<Vec<FieldError>> for FieldErrors {
    fn from(errors: Vec<FieldError>) -> Self {
        FieldErrors(errors)
    }
}

impl From<FieldError> for FieldErrors {
    fn from(error: FieldError) -> Self {
        FieldErrors(vec![error])
    }
}

/// The aggregate message; empty for no errors.
impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.aggregate_message().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let meta = Path::root("metadata");
        assert_eq!(meta.child("name").to_string(), "metadata.name");
        assert_eq!(
            Path::root("spec").child("containers").index(0).to_string(),
            "spec.containers[0]"
        );
        assert_eq!(
            meta.child("labels").key("x").to_string(),
            "metadata.labels[x]"
        );
        assert_eq!(
            Path::root("spec")
                .child("a")
                .index(2)
                .child("b")
                .key("k")
                .as_str(),
            "spec.a[2].b[k]"
        );
    }

    #[test]
    fn messages() {
        let p = Path::root("f");
        assert_eq!(
            FieldError::required(&p, "").to_string(),
            "f: Required value"
        );
        assert_eq!(
            FieldError::required(&p, "x").to_string(),
            "f: Required value: x"
        );
        assert_eq!(
            FieldError::invalid(&p, "Foo", "bad").to_string(),
            r#"f: Invalid value: "Foo": bad"#
        );
        assert_eq!(
            FieldError::invalid(&p, -1, "neg").to_string(),
            "f: Invalid value: -1: neg"
        );
        assert_eq!(
            FieldError::invalid(&p, json!(null), "").to_string(),
            "f: Invalid value: null"
        );
        assert_eq!(
            FieldError::invalid(&p, json!(["a", "b"]), "d").to_string(),
            r#"f: Invalid value: ["a","b"]: d"#
        );
        assert_eq!(
            FieldError::not_found(&p, "x").to_string(),
            r#"f: Not found: "x""#
        );
        assert_eq!(
            FieldError::duplicate(&p, 3).to_string(),
            "f: Duplicate value: 3"
        );
        assert_eq!(
            FieldError::not_supported(&p, "c", ["a", "b"]).to_string(),
            r#"f: Unsupported value: "c": supported values: "a", "b""#
        );
        assert_eq!(
            FieldError::not_supported(&p, "c", Vec::<String>::new()).to_string(),
            r#"f: Unsupported value: "c""#
        );
        assert_eq!(
            FieldError::forbidden(&p, "no").to_string(),
            "f: Forbidden: no"
        );
        assert_eq!(
            FieldError::too_long(&p, 1).to_string(),
            "f: Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::too_long(&p, 262144).to_string(),
            "f: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::too_many(&p, Some(5), 1).to_string(),
            "f: Too many: 5: must have at most 1 item"
        );
        assert_eq!(
            FieldError::too_many(&p, None, 4).to_string(),
            "f: Too many: must have at most 4 items"
        );
        assert_eq!(
            FieldError::internal(&p, "boom").to_string(),
            "f: Internal error: boom"
        );
        assert_eq!(
            FieldError::required(&p, "").error_type.as_str(),
            "FieldValueRequired"
        );
    }

    #[test]
    fn aggregate() {
        let p = Path::root("f");
        let mut errs = FieldErrors::new();
        assert_eq!(errs.aggregate_message(), None);
        errs.push(FieldError::required(&p, ""));
        assert_eq!(errs.to_string(), "f: Required value");
        errs.push(FieldError::required(&p, ""));
        assert_eq!(errs.to_string(), "f: Required value");
        errs.push(FieldError::forbidden(&p, "x"));
        assert_eq!(errs.to_string(), "[f: Required value, f: Forbidden: x]");
        assert_eq!(errs.len(), 3);
    }
}
