//! How custom resources print as Tables and what field selectors see of them: a CRD
//! version's `additionalPrinterColumns` (upstream's tableconvertor: Name, then each column's
//! JSONPath result formatted by the column's type; `Age` when a version declares none) and
//! its `selectableFields`.

use std::sync::Arc;

use kapi_apimachinery::gotime::{Timestamp, human_duration, parse_rfc3339};
use kapi_server::endpoints::NAME_DESCRIPTION;
use kapi_server::resource::{PrinterColumn, TableConvertor};
use serde_json::{Value, json};

use crate::jsonpath::JsonPath;

/// The description upstream gives the default Age column (creationTimestamp's).
const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The Table of one CRD version.
pub(crate) fn table(version: &Value) -> TableConvertor {
    let declared = version["additionalPrinterColumns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let declared = match declared.is_empty() {
        true => vec![json!({"name": "Age", "type": "date",
            "description": CREATION_TIMESTAMP_DESCRIPTION,
            "jsonPath": ".metadata.creationTimestamp"})],
        false => declared,
    };
    let mut columns = vec![PrinterColumn {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: NAME_DESCRIPTION.into(),
        priority: 0,
    }];
    let mut paths = Vec::new();
    for column in &declared {
        let text = |key: &str| column[key].as_str().unwrap_or_default();
        let json_path = text("jsonPath");
        let description = match text("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            given => given.to_string(),
        };
        columns.push(PrinterColumn {
            name: text("name").to_string().into(),
            type_: text("type").to_string().into(),
            format: text("format").to_string().into(),
            description: description.into(),
            priority: column["priority"].as_i64().unwrap_or(0) as i32,
        });
        paths.push((JsonPath::parse(json_path).ok(), text("type").to_string()));
    }
    TableConvertor {
        order: None,
        columns,
        cells: Arc::new(move |object: &Value| {
            let name = object["metadata"]["name"].clone();
            let cells = paths
                .iter()
                .map(|(path, type_)| cell(path.as_ref(), type_, object));
            std::iter::once(name).chain(cells).collect()
        }),
    }
}

/// One cell: the first result of the column's path, as upstream's tableconvertor formats it.
fn cell(path: Option<&JsonPath>, type_: &str, object: &Value) -> Value {
    let Some(value) = path.and_then(|p| p.find(object).into_iter().next()) else {
        return Value::Null;
    };
    match (type_, value) {
        ("string", Value::String(s)) => Value::String(s.clone()),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => match parse_rfc3339(s) {
            Some(then) => Value::String(human_duration(Timestamp::now().nanos_since(then))),
            None => Value::String("<invalid>".to_string()),
        },
        _ => Value::Null,
    }
}

/// A selectable field of a CRD version: its JSONPath.
pub(crate) struct SelectableField(JsonPath);

impl SelectableField {
    /// The field's value as field selectors compare it: strings as they are, integers and
    /// booleans as text; `None` if the object has no such field.
    pub(crate) fn value(&self, object: &Value) -> Option<String> {
        match self.0.find(object).into_iter().next()? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

/// The `selectableFields` of a CRD version, by field selector name (`spec.color` for the
/// path `.spec.color`).
pub(crate) fn selectable_fields(version: &Value) -> Vec<(String, SelectableField)> {
    version["selectableFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|field| {
            let path = field["jsonPath"].as_str()?;
            let parsed = JsonPath::parse(path).ok()?;
            Some((
                path.trim_start_matches('.').to_string(),
                SelectableField(parsed),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_cells_follow_the_crd() {
        let version = json!({"name": "v1", "additionalPrinterColumns": [
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Ready", "type": "string", "priority": 1,
             "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "Spec", "type": "string", "jsonPath": ".spec"},
            {"name": "Missing", "type": "boolean", "jsonPath": ".spec.nope"},
        ]});
        let table = table(&version);
        let names: Vec<&str> = table.columns.iter().map(|c| &*c.name).collect();
        assert_eq!(names, ["Name", "Replicas", "Ready", "Spec", "Missing"]);
        assert_eq!(table.columns[2].priority, 1);
        assert_eq!(
            table.columns[1].description,
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        let object = json!({"metadata": {"name": "x"}, "spec": {"replicas": 2},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            (table.cells)(&object),
            [
                json!("x"),
                json!(2),
                json!("True"),
                json!("{\"replicas\":2}"),
                Value::Null
            ]
        );
    }

    #[test]
    fn versions_without_columns_print_their_age() {
        let table = table(&json!({"name": "v1"}));
        assert_eq!(table.columns[1].name, "Age");
        let old = json!({"metadata": {"name": "x", "creationTimestamp": "2000-01-01T00:00:00Z"}});
        let cells = (table.cells)(&old);
        assert!(
            cells[1].as_str().is_some_and(|age| age.ends_with('y')),
            "{cells:?}"
        );
        let bad = json!({"metadata": {"name": "x", "creationTimestamp": "yesterday"}});
        assert_eq!((table.cells)(&bad)[1], "<invalid>");
    }

    #[test]
    fn selectable_fields_read_strings_numbers_and_booleans() {
        let version = json!({"selectableFields": [
            {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.on"}]});
        let fields = selectable_fields(&version);
        let object = json!({"spec": {"color": "blue", "size": 3, "on": true}});
        let values: Vec<(&str, Option<String>)> = fields
            .iter()
            .map(|(n, f)| (n.as_str(), f.value(&object)))
            .collect();
        assert_eq!(
            values,
            [
                ("spec.color", Some("blue".into())),
                ("spec.size", Some("3".into())),
                ("spec.on", Some("true".into()))
            ]
        );
    }
}
