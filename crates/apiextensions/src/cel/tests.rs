//! The CEL corpus: rules of every kind CRDs use, with upstream's accept/reject and messages.

use kapi_apimachinery::validation::field::Path;
use serde_json::{Value, json};

use super::Validator;

/// A root schema whose `spec` has the given properties and rules.
fn schema(properties: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": properties, "x-kubernetes-validations": rules}}})
}

fn check(schema: &Value, new: Value, old: Option<Value>) -> Vec<String> {
    let validator = Validator::compile(schema, &Path::root("openAPIV3Schema"))
        .unwrap_or_else(|errors| panic!("{errors}"));
    validator
        .validate(
            &json!({"spec": new}),
            old.map(|old| json!({"spec": old})).as_ref(),
        )
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn props() -> Value {
    json!({
        "replicas": {"type": "integer"},
        "maxReplicas": {"type": "integer"},
        "name": {"type": "string"},
        "url": {"type": "string"},
        "ip": {"type": "string"},
        "memory": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "port": {"type": "integer"}}}},
        "mode": {"type": "string"},
    })
}

/// (rule, spec, old spec, expected errors).
fn cases() -> Vec<(Value, Value, Option<Value>, Vec<&'static str>)> {
    vec![
        (
            json!({"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}),
            json!({"replicas": 3, "maxReplicas": 5}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}),
            json!({"replicas": 6, "maxReplicas": 5}),
            None,
            vec![r#"spec: Invalid value: "object": replicas must not exceed maxReplicas"#],
        ),
        (
            json!({"rule": "self.replicas >= 0"}),
            json!({"replicas": -1}),
            None,
            vec![r#"spec: Invalid value: "object": failed rule: self.replicas >= 0"#],
        ),
        (
            json!({"rule": "self.replicas < 10", "messageExpression": "'replicas is ' + string(self.replicas)"}),
            json!({"replicas": 12}),
            None,
            vec![r#"spec: Invalid value: "object": replicas is 12"#],
        ),
        (
            json!({"rule": "has(self.name)", "message": "name is required", "reason": "FieldValueRequired"}),
            json!({}),
            None,
            vec!["spec: Required value: name is required"],
        ),
        (
            json!({"rule": "!has(self.mode)", "message": "mode is not allowed", "reason": "FieldValueForbidden"}),
            json!({"mode": "x"}),
            None,
            vec!["spec: Forbidden: mode is not allowed"],
        ),
        (
            json!({"rule": "self.name.startsWith('app-')", "message": "bad name", "fieldPath": ".name"}),
            json!({"name": "web"}),
            None,
            vec![r#"spec.name: Invalid value: "string": bad name"#],
        ),
        (
            json!({"rule": "self.name == oldSelf.name", "message": "name is immutable"}),
            json!({"name": "b"}),
            Some(json!({"name": "a"})),
            vec![r#"spec: Invalid value: "object": name is immutable"#],
        ),
        (
            json!({"rule": "self.name == oldSelf.name", "message": "name is immutable"}),
            json!({"name": "b"}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.name == oldSelf.name", "message": "name is immutable"}),
            json!({"name": "a"}),
            Some(json!({"name": "a"})),
            vec![],
        ),
        (
            json!({"rule": "self.replicas >= oldSelf.replicas", "message": "cannot scale down"}),
            json!({"replicas": 1}),
            Some(json!({"replicas": 2})),
            vec![r#"spec: Invalid value: "object": cannot scale down"#],
        ),
        (
            json!({"rule": "!has(oldSelf.mode) || self.mode == oldSelf.mode", "optionalOldSelf": true,
                "message": "mode is immutable once set"}),
            json!({"mode": "a"}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.tags.all(t, t.size() <= 5)", "message": "tags are short"}),
            json!({"tags": ["a", "toolong"]}),
            None,
            vec![r#"spec: Invalid value: "object": tags are short"#],
        ),
        (
            json!({"rule": "self.tags.exists(t, t == 'prod')"}),
            json!({"tags": ["dev", "prod"]}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.tags.size() == self.tags.distinct().size()", "message": "tags are unique"}),
            json!({"tags": ["a", "a"]}),
            None,
            vec![r#"spec: Invalid value: "object": tags are unique"#],
        ),
        (
            json!({"rule": "self.labels.all(k, k.size() < 10)"}),
            json!({"labels": {"short": "x"}}),
            None,
            vec![],
        ),
        (
            json!({"rule": "'app' in self.labels", "message": "app label required"}),
            json!({"labels": {"tier": "web"}}),
            None,
            vec![r#"spec: Invalid value: "object": app label required"#],
        ),
        (
            json!({"rule": "self.ports.all(p, p.port > 0 && p.port < 65536)", "message": "ports in range"}),
            json!({"ports": [{"name": "http", "port": 80}, {"name": "bad", "port": 70000}]}),
            None,
            vec![r#"spec: Invalid value: "object": ports in range"#],
        ),
        (
            json!({"rule": "self.ports.map(p, p.port).sum() < 100"}),
            json!({"ports": [{"name": "a", "port": 10}, {"name": "b", "port": 20}]}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.name.matches('^[a-z]+$')", "message": "lowercase only"}),
            json!({"name": "Web"}),
            None,
            vec![r#"spec: Invalid value: "object": lowercase only"#],
        ),
        (
            json!({"rule": "self.name.find('[0-9]+') == '42'"}),
            json!({"name": "abc42"}),
            None,
            vec![],
        ),
        (
            json!({"rule": "isURL(self.url) && url(self.url).getScheme() == 'https'", "message": "https url"}),
            json!({"url": "http://example.com"}),
            None,
            vec![r#"spec: Invalid value: "object": https url"#],
        ),
        (
            json!({"rule": "url(self.url).getHost() == 'example.com'"}),
            json!({"url": "https://example.com/path"}),
            None,
            vec![],
        ),
        (
            json!({"rule": "isIP(self.ip) && ip(self.ip).family() == 4", "message": "an IPv4 address"}),
            json!({"ip": "fd00::1"}),
            None,
            vec![r#"spec: Invalid value: "object": an IPv4 address"#],
        ),
        (
            json!({"rule": "cidr('10.0.0.0/8').containsIP(self.ip)", "message": "inside 10/8"}),
            json!({"ip": "192.168.0.1"}),
            None,
            vec![r#"spec: Invalid value: "object": inside 10/8"#],
        ),
        (
            json!({"rule": "quantity(string(self.memory)).isLessThan(quantity('1Gi'))", "message": "under 1Gi"}),
            json!({"memory": "2Gi"}),
            None,
            vec![r#"spec: Invalid value: "object": under 1Gi"#],
        ),
        (
            json!({"rule": "isQuantity(string(self.memory))"}),
            json!({"memory": "512Mi"}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.name.lowerAscii() == self.name", "message": "lowercase"}),
            json!({"name": "ABC"}),
            None,
            vec![r#"spec: Invalid value: "object": lowercase"#],
        ),
        (
            json!({"rule": "self.name.split('-').size() == 2"}),
            json!({"name": "a-b"}),
            None,
            vec![],
        ),
        (
            json!({"rule": "self.mode in ['Always', 'Never']", "message": "mode is Always or Never"}),
            json!({"mode": "Sometimes"}),
            None,
            vec![r#"spec: Invalid value: "object": mode is Always or Never"#],
        ),
        (
            json!({"rule": "!has(self.replicas) || self.replicas % 2 == 1", "message": "odd replicas"}),
            json!({"replicas": 4}),
            None,
            vec![r#"spec: Invalid value: "object": odd replicas"#],
        ),
        (
            json!({"rule": "size(self.tags) <= 2", "message": "at most two tags", "reason": "FieldValueInvalid"}),
            json!({"tags": ["a", "b", "c"]}),
            None,
            vec![r#"spec: Invalid value: "object": at most two tags"#],
        ),
    ]
}

#[test]
fn cel_corpus() {
    let cases = cases();
    assert!(cases.len() >= 30, "{}", cases.len());
    for (rule, new, old, want) in cases {
        let schema = schema(props(), json!([rule.clone()]));
        assert_eq!(check(&schema, new, old), want, "{rule}");
    }
}

#[test]
fn rules_on_nested_fields_name_their_type() {
    let schema = schema(
        json!({"replicas": {"type": "integer",
            "x-kubernetes-validations": [{"rule": "self > 0", "message": "positive"}]}}),
        json!([]),
    );
    assert_eq!(
        check(&schema, json!({"replicas": 0}), None),
        [r#"spec.replicas: Invalid value: "integer": positive"#]
    );
}

#[test]
fn rules_that_do_not_compile_are_crd_errors() {
    let schema = schema(props(), json!([{"rule": "self.replicas >"}]));
    let errors = Validator::compile(&schema, &Path::root("openAPIV3Schema"))
        .err()
        .expect("a compile error");
    let error = errors.iter().next().expect("one error").to_string();
    assert!(
        error.starts_with(
            r#"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.replicas \u003e","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: "#
        ),
        "{error}"
    );
}

#[test]
fn schemas_without_rules_compile_to_nothing() {
    let validator = Validator::compile(&json!({"type": "object"}), &Path::root("s")).unwrap();
    assert!(validator.is_empty());
    assert!(validator.validate(&json!({"a": 1}), None).is_empty());
}

/// Old values are paired as upstream pairs them: list-map items by key, map entries by key,
/// and items of other lists not at all.
#[test]
fn transition_rules_see_the_correlated_old_values() {
    let immutable_port =
        json!([{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]);
    let mut ports = props()["ports"].clone();
    ports["items"]["x-kubernetes-validations"] = immutable_port.clone();
    let schema = schema(json!({"ports": ports}), json!([]));
    let old = json!({"ports": [{"name": "http", "port": 80}, {"name": "grpc", "port": 90}]});
    // A new item in front and the others reordered: nothing changed per key.
    let reordered = json!({"ports": [{"name": "new", "port": 1}, {"name": "grpc", "port": 90},
        {"name": "http", "port": 80}]});
    assert_eq!(
        check(&schema, reordered, Some(old.clone())),
        Vec::<String>::new()
    );
    let changed = json!({"ports": [{"name": "grpc", "port": 91}, {"name": "http", "port": 80}]});
    assert_eq!(
        check(&schema, changed, Some(old)),
        vec![r#"spec.ports[0]: Invalid value: "object": port is immutable"#]
    );

    // Items of an atomic list have no old value: their transition rules do not run.
    let atomic = json!({"type": "array", "items": {"type": "object",
        "properties": {"port": {"type": "integer"}}, "x-kubernetes-validations": immutable_port}});
    let schema_atomic = super::tests::schema(json!({"ports": atomic}), json!([]));
    let old = json!({"ports": [{"port": 80}]});
    assert_eq!(
        check(&schema_atomic, json!({"ports": [{"port": 81}]}), Some(old)),
        Vec::<String>::new()
    );

    // Map entries pair by key, and are named `map[key]`.
    let values = json!({"type": "object", "additionalProperties": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}});
    let schema_map = super::tests::schema(json!({"labels": values}), json!([]));
    let old = json!({"labels": {"a": "1", "b": "2"}});
    assert_eq!(
        check(
            &schema_map,
            json!({"labels": {"a": "1", "b": "3", "c": "4"}}),
            Some(old)
        ),
        vec![r#"spec.labels[b]: Invalid value: "string": immutable"#]
    );
}
