//! The compile-time checks of a CRD's rules that cel-rust lacks: the undeclared-field check
//! (kapi-server's `cel_fields`) of rules and messageExpressions (only fields the schema
//! declares, `undefined field 'foo'`, and of a resource's `metadata` only `name` and
//! `generateName`), and `optionalOldSelf` only on rules that use `oldSelf`. cel-rust does not
//! type-check, so without these a rule with a misspelt field would install and then fail on
//! every write.

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::cel_fields::{Declarations, Step, undefined_field, undefined_field_message};
use serde_json::Value;

use super::cost::{Decl, escape};

/// What cel-go's compilation would refuse in the rules of `schema` (an `openAPIV3Schema` at
/// `path`), as upstream's errors.
pub(crate) fn check(schema: &Value, path: &Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    node(schema, &Decl::of(schema, true), path, &mut errors);
    errors
}

/// What cel-go's compilation would refuse in one rule (at `at`) that cel-rust lets through:
/// selects of undeclared fields in its rule and its messageExpression, and an
/// `optionalOldSelf` set on a rule that does not use `oldSelf`. Each error's value is the
/// whole rule, as upstream prints it.
fn rule_errors(rule: &Value, decl: &Decl, at: &Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let printed = || crate::crd::gojson::validation_rule(rule);
    let undeclared = |source: &str| {
        let program = cel::Program::compile(source).ok()?;
        let field = undefined_field(&program.expression().expr, &SelfDecl(decl))?;
        Some(undefined_field_message(source, &field))
    };
    let source = rule["rule"].as_str().unwrap_or_default();
    if let Some(message) = undeclared(source) {
        let detail = format!("compilation failed: {message}");
        errors.push(FieldError::invalid_rendered(
            &at.child("rule"),
            printed(),
            detail,
        ));
    }
    let message_expression = rule["messageExpression"].as_str().unwrap_or_default();
    if let Some(message) = undeclared(message_expression).filter(|_| !message_expression.is_empty())
    {
        let detail = format!("messageExpression compilation failed: {message}");
        let path = at.child("messageExpression");
        errors.push(FieldError::invalid_rendered(&path, printed(), detail));
    }
    let uses_old_self = cel::Program::compile(source)
        .is_ok_and(|program| program.references().has_variable("oldSelf"));
    if let Some(optional) = rule["optionalOldSelf"].as_bool().filter(|_| !uses_old_self) {
        errors.push(FieldError::invalid(
            &at.child("optionalOldSelf"),
            optional,
            "may not be set if oldSelf is not used in rule",
        ));
    }
    errors
}

/// The types a rule at one node sees: `self` and `oldSelf` are the node's.
struct SelfDecl<'a>(&'a Decl);

impl Declarations for SelfDecl<'_> {
    fn is_variable(&self, name: &str) -> bool {
        matches!(name, "self" | "oldSelf")
    }

    fn declares(&self, _: &str, path: &[Step], field: &str) -> Option<bool> {
        let decl = self.0.at(path)?;
        decl.fixed_fields.then(|| decl.fields.contains_key(field))
    }

    fn is_list(&self, _: &str, path: &[Step]) -> Option<bool> {
        self.0.at(path).map(Decl::is_list)
    }
}

fn node(schema: &Value, decl: &Decl, path: &Path, errors: &mut FieldErrors) {
    let rules = schema["x-kubernetes-validations"].as_array();
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let at = path.child("x-kubernetes-validations").index(i);
        errors.extend(rule_errors(rule, decl, &at));
    }
    for (name, child) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(child_decl) = decl.fields.get(&escape(name)) {
            node(
                child,
                child_decl,
                &path.child("properties").key(name),
                errors,
            );
        }
    }
    if let Some(elements) = &decl.elements {
        let key = if schema["items"].is_object() {
            "items"
        } else {
            "additionalProperties"
        };
        if schema[key].is_object() {
            node(&schema[key], elements, &path.child(key), errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(rule: &str) -> Vec<String> {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "ports": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "x-kubernetes-validations": [{"rule": rule}]}}});
        check(&schema, &Path::root("openAPIV3Schema"))
            .iter()
            .map(|e| e.detail.clone())
            .collect()
    }

    #[test]
    fn declared_fields_pass() {
        for rule in [
            "self.replicas > 0",
            "has(self.replicas)",
            "self.ports.all(p, p.name != '')",
            "self.labels.app == 'x'",
            "self.labels.all(k, k.startsWith('a'))",
            "self.config.anything == 1",
            "self.ports[0].name == 'a'",
        ] {
            assert_eq!(errors(rule), Vec::<String>::new(), "{rule}");
        }
    }

    #[test]
    fn undeclared_fields_are_compile_errors_worded_as_cel_go() {
        assert_eq!(
            errors("self.replica > 0"),
            [
                "compilation failed: ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 0\n | ....^"
            ]
        );
        assert_eq!(
            errors("self.ports.all(p, p.nmae != '')"),
            [
                "compilation failed: ERROR: <input>:1:20: undefined field 'nmae'\n | self.ports.all(p, p.nmae != '')\n | ...................^"
            ]
        );
        assert_eq!(errors("has(self.replicaz)").len(), 1);
    }

    #[test]
    fn a_resources_metadata_offers_only_its_names() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('a')"},
            {"rule": "self.metadata.labels.size() > 0"}]});
        let found = check(&schema, &Path::root("openAPIV3Schema"));
        assert_eq!(found.len(), 1);
        assert_eq!(
            found.iter().next().unwrap().field,
            "openAPIV3Schema.x-kubernetes-validations[1].rule"
        );
    }
}
