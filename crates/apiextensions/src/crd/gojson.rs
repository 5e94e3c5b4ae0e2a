//! Values in CRD validation messages as upstream prints them: the internal apiextensions
//! types' layouts, written with [`StructJson`] (Go's field names, every field in declaration
//! order, nil ones as `null`).

use kapi_apimachinery::gostruct::StructJson;
use serde_json::Value;

/// A `[]string` (`status.storedVersions`, `conversionReviewVersions`, list map keys):
/// `["a","b"]`, or `null` when absent.
pub(crate) fn string_slice(value: &Value) -> String {
    let mut out = StructJson::default();
    out.strings(value);
    out.finish()
}

/// The internal `spec.versions`, without the per-version fields that conversion hoisted to
/// the top level (`hoisted`: schema, subresources, columns, selectable fields).
pub(crate) fn versions(versions: &Value, hoisted: [bool; 4]) -> String {
    let mut out = StructJson::default();
    out.list(versions, |out, item| version(out, item, hoisted));
    out.finish()
}

/// One internal `ValidationRule` of `x-kubernetes-validations`.
pub(crate) fn validation_rule(rule: &Value) -> String {
    let mut out = StructJson::default();
    write_rule(&mut out, rule);
    out.finish()
}

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

/// A `*JSONSchemaProps`.
fn schema(out: &mut StructJson, props: &Value) {
    out.pointer(props, |out, props| {
        // The fields are written in SCHEMA_FIELDS' order, one by one.
        let mut fields = SCHEMA_FIELDS.iter();
        out.object(SCHEMA_FIELDS.iter().map(|(name, _, _)| *name), |out, _| {
            if let Some((_, key, field)) = fields.next() {
                schema_field(out, &props[*key], *field);
            }
        });
    });
}

/// One JSONSchemaProps field, written as `field` says.
fn schema_field(out: &mut StructJson, value: &Value, field: Field) {
    match field {
        Field::Text => out.text(value),
        Field::Flag => out.flag(value),
        Field::Number => out.number(value.as_f64()),
        Field::Raw => out.raw(value),
        Field::Schemas => out.list(value, schema),
        Field::Schema => schema(out, value),
        Field::SchemaMap => out.map(value, schema),
        Field::Items => match value {
            Value::Array(_) => out.object(["Schema", "JSONSchemas"], |out, name| match name {
                "Schema" => out.null(),
                _ => out.list(value, schema),
            }),
            Value::Object(_) => out.object(["Schema", "JSONSchemas"], |out, name| match name {
                "Schema" => schema(out, value),
                _ => out.null(),
            }),
            _ => out.null(),
        },
        Field::SchemaOrBool => match value {
            Value::Bool(allows) => out.object(["Allows", "Schema"], |out, name| match name {
                "Allows" => out.flag(&Value::Bool(*allows)),
                _ => out.null(),
            }),
            Value::Object(_) => out.object(["Allows", "Schema"], |out, name| match name {
                "Allows" => out.flag(&Value::Bool(true)),
                _ => schema(out, value),
            }),
            _ => out.null(),
        },
        Field::Dependencies => out.map(value, |out, dependency| {
            out.object(["Schema", "Property"], |out, name| {
                match (name, dependency) {
                    ("Schema", Value::Object(_)) => schema(out, dependency),
                    ("Property", Value::Array(_)) => out.strings(dependency),
                    _ => out.null(),
                }
            });
        }),
        Field::ExternalDocs => out.pointer(value, |out, docs| {
            out.object(["Description", "URL"], |out, name| match name {
                "Description" => out.text(&docs["description"]),
                _ => out.text(&docs["url"]),
            })
        }),
        Field::Rules => out.list(value, write_rule),
    }
}

/// A `ValidationRule`.
fn write_rule(out: &mut StructJson, rule: &Value) {
    let fields = [
        "Rule",
        "Message",
        "MessageExpression",
        "Reason",
        "FieldPath",
        "OptionalOldSelf",
    ];
    out.object(fields, |out, name| match name {
        "Rule" => out.text(&rule["rule"]),
        "Message" => out.text(&rule["message"]),
        "MessageExpression" => out.text(&rule["messageExpression"]),
        "Reason" => out.raw(&rule["reason"]),
        "FieldPath" => out.text(&rule["fieldPath"]),
        _ => out.raw(&rule["optionalOldSelf"]),
    });
}

/// A `CustomResourceDefinitionVersion`, its `hoisted` fields nil.
fn version(
    out: &mut StructJson,
    version: &Value,
    [in_schema, in_subresources, in_columns, in_selectable]: [bool; 4],
) {
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
    out.object(fields, |out, name| match name {
        "Name" => out.text(&version["name"]),
        "Served" => out.flag(&version["served"]),
        "Storage" => out.flag(&version["storage"]),
        "Deprecated" => out.flag(&version["deprecated"]),
        "DeprecationWarning" => out.raw(&version["deprecationWarning"]),
        "Schema" => match unless(in_schema, "schema") {
            Value::Object(validation) => out.object(["OpenAPIV3Schema"], |out, _| {
                schema(
                    out,
                    validation.get("openAPIV3Schema").unwrap_or(&Value::Null),
                );
            }),
            _ => out.null(),
        },
        "Subresources" => subresources(out, unless(in_subresources, "subresources")),
        "AdditionalPrinterColumns" => {
            out.list(unless(in_columns, "additionalPrinterColumns"), column)
        }
        _ => out.list(unless(in_selectable, "selectableFields"), |out, field| {
            out.object(["JSONPath"], |out, _| out.text(&field["jsonPath"]));
        }),
    });
}

/// A `*CustomResourceSubresources`.
fn subresources(out: &mut StructJson, subresources: &Value) {
    out.pointer(subresources, subresources_fields);
}

fn subresources_fields(out: &mut StructJson, subresources: &Value) {
    out.object(["Status", "Scale"], |out, name| match name {
        "Status" if subresources["status"].is_object() => out.empty(),
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
        _ => out.null(),
    });
}

/// A `CustomResourceColumnDefinition`.
fn column(out: &mut StructJson, column: &Value) {
    let fields = [
        "Name",
        "Type",
        "Format",
        "Description",
        "Priority",
        "JSONPath",
    ];
    out.object(fields, |out, name| match name {
        "Priority" => out.number(Some(column["priority"].as_f64().unwrap_or(0.0))),
        "JSONPath" => out.text(&column["jsonPath"]),
        other => out.text(&column[other.to_lowercase().as_str()]),
    });
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
