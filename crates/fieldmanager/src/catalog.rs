//! `kapi-schema`'s catalog nodes as the field manager's schemas (the built-in kinds', and a
//! CRD's).

use kapi_schema::{ListType, MapType, NodeType, SchemaRef};

use crate::schema::{ListShape, Schema, Shape};

/// A list-map's key fields with the defaults their schemas declare (upstream's OpenAPI
/// defaults `protocol` to TCP in container and service ports, so an applied port without
/// `protocol` is the live one with `protocol: TCP`).
fn keys_with_defaults(
    list: SchemaRef<'_>,
    keys: Vec<String>,
) -> Vec<(String, Option<serde_json::Value>)> {
    let item = list.items();
    keys.into_iter()
        .map(|key| {
            let default = item
                .and_then(|item| item.property(&key))
                .and_then(|field| field.default_value().cloned());
            (key, default)
        })
        .collect()
}

impl Schema for SchemaRef<'_> {
    /// Objects with properties are structs, with `additionalProperties` maps; objects with
    /// neither (free-form JSON such as RawExtension) and untyped nodes are deduced.
    fn shape(self) -> Shape {
        match self.node_type() {
            NodeType::Object => {
                let has_fields = self.properties().next().is_some();
                if !has_fields && self.additional_properties().is_none() {
                    return Shape::Deduced;
                }
                Shape::Map {
                    atomic: self.map_type() == MapType::Atomic,
                }
            }
            NodeType::Array => Shape::List(match self.list_type() {
                ListType::Atomic => ListShape::Atomic,
                ListType::Set => ListShape::Set,
                ListType::Map(keys) => ListShape::Map(keys_with_defaults(self, keys)),
            }),
            NodeType::Unknown => Shape::Deduced,
            NodeType::String
            | NodeType::Integer
            | NodeType::Number
            | NodeType::Boolean
            | NodeType::IntOrString => Shape::Scalar,
        }
    }

    fn field(self, name: &str) -> Option<Self> {
        self.property(name)
    }

    fn values(self) -> Option<Self> {
        self.additional_properties()
    }

    fn items(self) -> Option<Self> {
        SchemaRef::items(&self)
    }

    fn keeps_unknown_fields(self) -> bool {
        self.preserves_unknown_fields()
    }
}

#[cfg(test)]
mod tests {
    /// A built-in kind's root schema, from kapi-api's catalog.
    fn builtin_schema(group: &str, version: &str, kind: &str) -> Option<SchemaRef<'static>> {
        let schema = kapi_api::kind_schema(group, version, kind)?;
        Some(Box::leak(Box::new(schema)).schema())
    }

    use serde_json::json;

    use super::*;
    use crate::typed::to_field_set;

    /// A port without `protocol` is the port with the protocol's default, TCP.
    #[test]
    fn list_map_keys_take_their_defaults() {
        let schema = builtin_schema("", "v1", "Pod");
        let with = json!({"spec": {"containers": [{"name": "c", "ports": [
            {"containerPort": 80, "protocol": "TCP"}]}]}});
        let without = json!({"spec": {"containers": [{"name": "c", "ports": [
            {"containerPort": 80}]}]}});
        let with = to_field_set(&with, schema).to_fields_v1();
        let without = to_field_set(&without, schema).to_fields_v1();
        let ports = &without["f:spec"]["f:containers"][r#"k:{"name":"c"}"#]["f:ports"];
        assert!(
            ports
                .get(r#"k:{"containerPort":80,"protocol":"TCP"}"#)
                .is_some(),
            "{ports}"
        );
        assert_eq!(
            with["f:spec"]["f:containers"][r#"k:{"name":"c"}"#]["f:ports"]
                .as_object()
                .map(|keys| keys.keys().collect::<Vec<_>>()),
            ports
                .as_object()
                .map(|keys| keys.keys().collect::<Vec<_>>())
        );
    }

    #[test]
    fn deployment_field_set() {
        let schema = builtin_schema("apps", "v1", "Deployment");
        assert!(schema.is_some(), "the catalog has apps/v1 Deployment");
        let deployment = json!({
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"containers": [{
                    "name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]
                }]}}
            }
        });
        let want = json!({"f:spec": {
            "f:selector": {},
            "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                ".": {}, "f:image": {}, "f:name": {},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                    ".": {}, "f:containerPort": {}, "f:protocol": {}
                }}
            }}}}
        }});
        assert_eq!(to_field_set(&deployment, schema).to_fields_v1(), want);
    }

    #[test]
    fn undeclared_fields_are_found() {
        let schema = builtin_schema("apps", "v1", "Deployment");
        let config = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "i", "bogus": 1}
        ]}}}});
        assert_eq!(
            crate::typed::conversion_error(&config, schema),
            Some(
                ".spec.template.spec.containers[name=\"c\"].bogus: field not declared in schema"
                    .to_string()
            )
        );
        let fine = json!({"metadata": {"labels": {"any": "x"}}, "spec": {"replicas": 1}});
        assert_eq!(crate::typed::conversion_error(&fine, schema), None);
        // A list map may not repeat a key.
        let twice = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "i"}, {"name": "c", "image": "j"}
        ]}}}});
        assert_eq!(
            crate::typed::conversion_error(&twice, schema),
            Some(
                ".spec.template.spec.containers: duplicate entries for key [name=\"c\"]"
                    .to_string()
            )
        );
    }

    #[test]
    fn configmap_data_is_a_granular_map() {
        let schema = builtin_schema("", "v1", "ConfigMap");
        let configmap = json!({"data": {"a": "1"}, "metadata": {"labels": {"l": "v"}}});
        let want = json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:l": {}}}});
        assert_eq!(to_field_set(&configmap, schema).to_fields_v1(), want);
    }
}
