//! Values in CRD validation messages as upstream prints them: Go's `%#v` of the internal
//! apiextensions types (field.Invalid falls back to it for slices and structs).

use kapi_apimachinery::quote;
use kapi_apimachinery::validation::field::{ErrorType, FieldError, Path};
use serde_json::Value;

/// A `[]string` (`status.storedVersions`, `conversionReviewVersions`): `[]string{"a", "b"}`,
/// or `[]string(nil)` when absent.
pub(crate) fn string_slice(value: &Value) -> String {
    match value.as_array() {
        None => "[]string(nil)".to_string(),
        Some(items) => {
            let quoted: Vec<String> = items
                .iter()
                .map(|v| quote(v.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
    }
}

/// Where a non-nil pointer nested in a printed struct points: Go prints the address, which
/// says nothing about the value; kapi prints this fixed one.
const POINTER: &str = "0xc000000000";

/// The internal `spec.versions` (`[]apiextensions.CustomResourceDefinitionVersion{...}`),
/// without the per-version fields that conversion hoisted to the top level (`hoisted`:
/// schema, subresources, columns, selectable fields).
pub(crate) fn versions(versions: &Value, hoisted: [bool; 4]) -> String {
    let Some(items) = versions.as_array() else {
        return "[]apiextensions.CustomResourceDefinitionVersion(nil)".to_string();
    };
    let printed: Vec<String> = items.iter().map(|v| version(v, hoisted)).collect();
    format!(
        "[]apiextensions.CustomResourceDefinitionVersion{{{}}}",
        printed.join(", ")
    )
}

fn version(version: &Value, [schema, subresources, columns, selectable]: [bool; 4]) -> String {
    let text = |key: &str| quote(version[key].as_str().unwrap_or_default());
    let flag = |key: &str| version[key].as_bool().unwrap_or(false);
    let pointer = |key: &str, type_name: &str, hoisted: bool| {
        let target = if hoisted || version[key].is_null() {
            "nil"
        } else {
            POINTER
        };
        format!("(*{type_name})({target})")
    };
    let column_list = if columns {
        "[]apiextensions.CustomResourceColumnDefinition(nil)".to_string()
    } else {
        slice(
            &version["additionalPrinterColumns"],
            "apiextensions.CustomResourceColumnDefinition",
            column,
        )
    };
    let field_list = if selectable {
        "[]apiextensions.SelectableField(nil)".to_string()
    } else {
        slice(
            &version["selectableFields"],
            "apiextensions.SelectableField",
            selectable_field,
        )
    };
    format!(
        "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{}, SelectableFields:{}}}",
        text("name"),
        flag("served"),
        flag("storage"),
        flag("deprecated"),
        pointer("deprecationWarning", "string", false),
        pointer("schema", "apiextensions.CustomResourceValidation", schema),
        pointer(
            "subresources",
            "apiextensions.CustomResourceSubresources",
            subresources
        ),
        column_list,
        field_list,
    )
}

/// A slice of structs: `[]T{T{...}, ...}`, `[]T(nil)` when absent.
fn slice(value: &Value, type_name: &str, item: fn(&Value) -> String) -> String {
    match value.as_array() {
        None => format!("[]{type_name}(nil)"),
        Some(items) => {
            let printed: Vec<String> = items.iter().map(item).collect();
            format!("[]{type_name}{{{}}}", printed.join(", "))
        }
    }
}

fn column(column: &Value) -> String {
    let text = |key: &str| quote(column[key].as_str().unwrap_or_default());
    format!(
        "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
        text("name"),
        text("type"),
        text("format"),
        text("description"),
        column["priority"].as_i64().unwrap_or(0),
        text("jsonPath"),
    )
}

fn selectable_field(field: &Value) -> String {
    format!(
        "apiextensions.SelectableField{{JSONPath:{}}}",
        quote(field["jsonPath"].as_str().unwrap_or_default())
    )
}

/// An Invalid error whose value is already printed (by the functions above).
pub(crate) fn invalid(path: &Path, rendered: String, detail: impl Into<String>) -> FieldError {
    FieldError {
        error_type: ErrorType::Invalid,
        field: path.to_string(),
        bad_value: Some(rendered),
        detail: detail.into(),
    }
}
