//! Values in CRD validation messages as upstream prints them: since 1.34 field errors render
//! a non-scalar value as its JSON, and the internal apiextensions types carry no JSON tags,
//! so the JSON has Go's field names, every field (nil ones as `null`), in declaration order.

use kapi_apimachinery::validation::field::{ErrorType, FieldError, Path};
use serde_json::Value;

/// A `[]string` (`status.storedVersions`, `conversionReviewVersions`, list map keys):
/// `["a","b"]`, or `null` when absent.
pub(crate) fn string_slice(value: &Value) -> String {
    let mut out = Json::default();
    out.strings(value);
    out.0
}

/// The internal `spec.versions`, without the per-version fields that conversion hoisted to
/// the top level (`hoisted`: schema, subresources, columns, selectable fields).
pub(crate) fn versions(versions: &Value, hoisted: [bool; 4]) -> String {
    let mut out = Json::default();
    out.list(versions, |out, item| out.version(item, hoisted));
    out.0
}

/// One internal `ValidationRule` of `x-kubernetes-validations`.
pub(crate) fn validation_rule(rule: &Value) -> String {
    let mut out = Json::default();
    out.rule(rule);
    out.0
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

/// A JSON text being written, field by field.
#[derive(Default)]
struct Json(String);

/// The internal JSONSchemaProps' fields in declaration order, each with its v1 JSON key and
/// how it is written.
const SCHEMA_FIELDS: [(&str, &str, Field); 44] = [
    ("ID", "id", Field::Text),
    ("Schema", "$schema", Field::Text),
    ("Ref", "$ref", Field::Raw),
    ("Description", "description", Field::Text),
    ("Type", "type", Field::Text),
    ("Nullable", "nullable", Field::Flag),
    ("Format", "format", Field::Text),
    ("Title", "title", Field::Text),
    ("Default", "default", Field::Raw),
    ("Maximum", "maximum", Field::Number),
    ("ExclusiveMaximum", "exclusiveMaximum", Field::Flag),
    ("Minimum", "minimum", Field::Number),
    ("ExclusiveMinimum", "exclusiveMinimum", Field::Flag),
    ("MaxLength", "maxLength", Field::Number),
    ("MinLength", "minLength", Field::Number),
    ("Pattern", "pattern", Field::Text),
    ("MaxItems", "maxItems", Field::Number),
    ("MinItems", "minItems", Field::Number),
    ("UniqueItems", "uniqueItems", Field::Flag),
    ("MultipleOf", "multipleOf", Field::Number),
    ("Enum", "enum", Field::Raw),
    ("MaxProperties", "maxProperties", Field::Number),
    ("MinProperties", "minProperties", Field::Number),
    ("Required", "required", Field::Raw),
    ("Items", "items", Field::Items),
    ("AllOf", "allOf", Field::Schemas),
    ("OneOf", "oneOf", Field::Schemas),
    ("AnyOf", "anyOf", Field::Schemas),
    ("Not", "not", Field::Schema),
    ("Properties", "properties", Field::SchemaMap),
    (
        "AdditionalProperties",
        "additionalProperties",
        Field::SchemaOrBool,
    ),
    ("PatternProperties", "patternProperties", Field::SchemaMap),
    ("Dependencies", "dependencies", Field::Dependencies),
    ("AdditionalItems", "additionalItems", Field::SchemaOrBool),
    ("Definitions", "definitions", Field::SchemaMap),
    ("ExternalDocs", "externalDocs", Field::ExternalDocs),
    ("Example", "example", Field::Raw),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
        Field::Raw,
    ),
    (
        "XEmbeddedResource",
        "x-kubernetes-embedded-resource",
        Field::Flag,
    ),
    ("XIntOrString", "x-kubernetes-int-or-string", Field::Flag),
    ("XListMapKeys", "x-kubernetes-list-map-keys", Field::Raw),
    ("XListType", "x-kubernetes-list-type", Field::Raw),
    ("XMapType", "x-kubernetes-map-type", Field::Raw),
    ("XValidations", "x-kubernetes-validations", Field::Rules),
];

/// How a schema field is written.
#[derive(Clone, Copy)]
enum Field {
    /// A string (`""` when absent).
    Text,
    /// A bool (`false` when absent).
    Flag,
    /// A pointer to a number (`null` when absent), printed as Go prints a float64.
    Number,
    /// A pointer or slice of plain JSON (`null` when absent).
    Raw,
    /// `*JSONSchemaPropsOrArray`.
    Items,
    /// `[]JSONSchemaProps`.
    Schemas,
    /// `*JSONSchemaProps`.
    Schema,
    /// `map[string]JSONSchemaProps`.
    SchemaMap,
    /// `*JSONSchemaPropsOrBool`.
    SchemaOrBool,
    /// `map[string]JSONSchemaPropsOrStringArray`.
    Dependencies,
    /// `*ExternalDocumentation`.
    ExternalDocs,
    /// `ValidationRules`.
    Rules,
}

impl Json {
    fn push(&mut self, text: &str) {
        self.0.push_str(text);
    }

    /// `{"Name":<value>,...}`: each field written by `write` after its name.
    fn object<'a>(
        &mut self,
        fields: impl IntoIterator<Item = &'a str>,
        mut write: impl FnMut(&mut Self, &str),
    ) {
        self.push("{");
        for (i, name) in fields.into_iter().enumerate() {
            if i > 0 {
                self.push(",");
            }
            self.raw(&Value::from(name));
            self.push(":");
            write(self, name);
        }
        self.push("}");
    }

    /// `[...]` of a JSON array's items, or `null` when it is not one.
    fn list(&mut self, value: &Value, item: impl FnMut(&mut Self, &Value)) {
        match value.as_array() {
            Some(items) => self.entries(("[", "]"), items.iter().map(|v| (None, v)), item),
            None => self.push("null"),
        }
    }

    /// `{"key":...}` of a JSON object's entries (Go sorts map keys), or `null`.
    fn map(&mut self, value: &Value, item: impl FnMut(&mut Self, &Value)) {
        match value.as_object() {
            Some(map) => self.entries(("{", "}"), map.iter().map(|(k, v)| (Some(k), v)), item),
            None => self.push("null"),
        }
    }

    /// Entries between `brackets`, separated by commas, each after its key when it has one.
    fn entries<'a>(
        &mut self,
        (open, close): (&str, &str),
        entries: impl Iterator<Item = (Option<&'a String>, &'a Value)>,
        mut item: impl FnMut(&mut Self, &Value),
    ) {
        self.push(open);
        for (i, (key, value)) in entries.enumerate() {
            if i > 0 {
                self.push(",");
            }
            if let Some(key) = key {
                self.raw(&Value::from(key.as_str()));
                self.push(":");
            }
            item(self, value);
        }
        self.push(close);
    }

    fn raw(&mut self, value: &Value) {
        match value {
            Value::Number(number) => self.number(number.as_f64()),
            _ => self.push(&serde_json::to_string(value).unwrap_or_default()),
        }
    }

    /// A float64 as Go's encoding/json writes it (`1`, `1.5`, `1e+21`).
    fn number(&mut self, number: Option<f64>) {
        match number {
            None => self.push("null"),
            Some(n) if n.fract() == 0.0 && n.abs() < 1e21 => self.push(&format!("{}", n as i64)),
            Some(n) => self.push(&n.to_string()),
        }
    }

    fn text(&mut self, value: &Value) {
        self.raw(&Value::from(value.as_str().unwrap_or_default()));
    }

    fn flag(&mut self, value: &Value) {
        self.push(if value.as_bool().unwrap_or(false) {
            "true"
        } else {
            "false"
        });
    }

    fn strings(&mut self, value: &Value) {
        self.list(value, Json::text);
    }

    fn schema(&mut self, schema: &Value) {
        if !schema.is_object() {
            return self.push("null");
        }
        self.object(
            SCHEMA_FIELDS.iter().map(|(name, _, _)| *name),
            |out, name| {
                let (_, key, field) = SCHEMA_FIELDS
                    .iter()
                    .find(|(field_name, _, _)| *field_name == name)
                    .expect("a schema field");
                out.schema_field(&schema[*key], *field);
            },
        );
    }

    fn schema_field(&mut self, value: &Value, field: Field) {
        match field {
            Field::Text => self.text(value),
            Field::Flag => self.flag(value),
            Field::Number => self.number(value.as_f64()),
            Field::Raw => self.raw(value),
            Field::Schemas => self.list(value, Json::schema),
            Field::Schema => self.schema(value),
            Field::SchemaMap => self.map(value, Json::schema),
            Field::Items => match value {
                Value::Array(_) => self.object(["Schema", "JSONSchemas"], |out, name| match name {
                    "Schema" => out.push("null"),
                    _ => out.list(value, Json::schema),
                }),
                Value::Object(_) => {
                    self.object(["Schema", "JSONSchemas"], |out, name| match name {
                        "Schema" => out.schema(value),
                        _ => out.push("null"),
                    })
                }
                _ => self.push("null"),
            },
            Field::SchemaOrBool => match value {
                Value::Bool(allows) => self.object(["Allows", "Schema"], |out, name| match name {
                    "Allows" => out.flag(&Value::Bool(*allows)),
                    _ => out.push("null"),
                }),
                Value::Object(_) => self.object(["Allows", "Schema"], |out, name| match name {
                    "Allows" => out.push("true"),
                    _ => out.schema(value),
                }),
                _ => self.push("null"),
            },
            Field::Dependencies => self.map(value, |out, dependency| {
                out.object(["Schema", "Property"], |out, name| {
                    match (name, dependency) {
                        ("Schema", Value::Object(_)) => out.schema(dependency),
                        ("Property", Value::Array(_)) => out.strings(dependency),
                        _ => out.push("null"),
                    }
                });
            }),
            Field::ExternalDocs => match value.is_object() {
                true => self.object(["Description", "URL"], |out, name| match name {
                    "Description" => out.text(&value["description"]),
                    _ => out.text(&value["url"]),
                }),
                false => self.push("null"),
            },
            Field::Rules => self.list(value, Json::rule),
        }
    }

    fn rule(&mut self, rule: &Value) {
        let fields = [
            "Rule",
            "Message",
            "MessageExpression",
            "Reason",
            "FieldPath",
            "OptionalOldSelf",
        ];
        self.object(fields, |out, name| match name {
            "Rule" => out.text(&rule["rule"]),
            "Message" => out.text(&rule["message"]),
            "MessageExpression" => out.text(&rule["messageExpression"]),
            "Reason" => out.raw(&rule["reason"]),
            "FieldPath" => out.text(&rule["fieldPath"]),
            _ => out.raw(&rule["optionalOldSelf"]),
        });
    }

    fn version(&mut self, version: &Value, [schema, subresources, columns, selectable]: [bool; 4]) {
        let fields = [
            "Name",
            "Served",
            "Storage",
            "Deprecated",
            "DeprecationWarning",
            "Schema",
            "Subresources",
            "AdditionalPrinterColumns",
            "SelectableFields",
        ];
        let nil = Value::Null;
        let unless = |hoisted: bool, key: &str| if hoisted { &nil } else { &version[key] };
        self.object(fields, |out, name| match name {
            "Name" => out.text(&version["name"]),
            "Served" => out.flag(&version["served"]),
            "Storage" => out.flag(&version["storage"]),
            "Deprecated" => out.flag(&version["deprecated"]),
            "DeprecationWarning" => out.raw(&version["deprecationWarning"]),
            "Schema" => match unless(schema, "schema") {
                Value::Object(validation) => out.object(["OpenAPIV3Schema"], |out, _| {
                    out.schema(validation.get("openAPIV3Schema").unwrap_or(&Value::Null));
                }),
                _ => out.push("null"),
            },
            "Subresources" => out.subresources(unless(subresources, "subresources")),
            "AdditionalPrinterColumns" => {
                out.list(unless(columns, "additionalPrinterColumns"), Json::column)
            }
            _ => out.list(unless(selectable, "selectableFields"), |out, field| {
                out.object(["JSONPath"], |out, _| out.text(&field["jsonPath"]));
            }),
        });
    }

    fn subresources(&mut self, subresources: &Value) {
        if !subresources.is_object() {
            return self.push("null");
        }
        self.object(["Status", "Scale"], |out, name| match name {
            "Status" if subresources["status"].is_object() => out.push("{}"),
            "Scale" if subresources["scale"].is_object() => {
                let scale = &subresources["scale"];
                let fields = [
                    "SpecReplicasPath",
                    "StatusReplicasPath",
                    "LabelSelectorPath",
                ];
                out.object(fields, |out, name| match name {
                    "SpecReplicasPath" => out.text(&scale["specReplicasPath"]),
                    "StatusReplicasPath" => out.text(&scale["statusReplicasPath"]),
                    _ => out.raw(&scale["labelSelectorPath"]),
                });
            }
            _ => out.push("null"),
        });
    }

    fn column(&mut self, column: &Value) {
        let fields = [
            "Name",
            "Type",
            "Format",
            "Description",
            "Priority",
            "JSONPath",
        ];
        self.object(fields, |out, name| match name {
            "Priority" => out.number(Some(column["priority"].as_f64().unwrap_or(0.0))),
            "JSONPath" => out.text(&column["jsonPath"]),
            other => out.text(&column[other.to_lowercase().as_str()]),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn internal_types_print_with_go_field_names() {
        assert_eq!(string_slice(&json!(["v1", "v2"])), r#"["v1","v2"]"#);
        assert_eq!(string_slice(&Value::Null), "null");
        assert_eq!(
            validation_rule(&json!({"rule": "self.a == "})),
            r#"{"Rule":"self.a == ","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}"#
        );
        let version = json!([{"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]);
        assert_eq!(
            versions(&version, [true, false, false, true]),
            r#"[{"Name":"v1","Served":true,"Storage":true,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":{"Status":{},"Scale":null},"AdditionalPrinterColumns":[{"Name":"Age","Type":"date","Format":"","Description":"","Priority":0,"JSONPath":".metadata.creationTimestamp"}],"SelectableFields":null}]"#
        );
        let with_schema = json!([{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
            "maximum": 1.0, "additionalProperties": true}}}]);
        let printed = versions(&with_schema, [false; 4]);
        assert!(
            printed.contains(r#""Schema":{"OpenAPIV3Schema":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false"#)
                && printed.contains(r#""Maximum":1,"#)
                && printed.contains(r#""AdditionalProperties":{"Allows":true,"Schema":null}"#)
                && printed.contains(r#""XValidations":null}}"#),
            "{printed}"
        );
    }
}
