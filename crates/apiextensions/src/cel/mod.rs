//! `x-kubernetes-validations`: the CEL rules of a CRD version's schema, compiled once per CRD
//! version and evaluated on every write of its custom resources, with `kube-cel` (the `cel`
//! crate with Kubernetes' CEL libraries: lists, sets, regex, urls, quantity, ip/cidr, format,
//! semver). Errors are worded as upstream's CEL validator words them: the rule's message (or
//! its messageExpression's result, or `failed rule: <rule>`) on the rule's field path, as a
//! field error of the rule's `reason`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kube_cel::compilation::{CompilationError, CompiledSchema, compile_schema};
use kube_cel::validation::ValidationError;
use serde_json::Value;

mod budget;
pub(crate) mod cost;
pub(crate) mod fields;
#[cfg(test)]
mod tests;
mod tree;

/// The compiled `x-kubernetes-validations` rules of one schema tree.
pub struct Validator {
    rules: Option<tree::RuleNode>,
    /// The schema, to name the type of a failing field as upstream's errors do.
    schema: Value,
}

impl Validator {
    /// Compiles every rule in `schema` (at `path` in the CRD, e.g.
    /// `spec.versions[0].schema.openAPIV3Schema`); a rule that does not compile is an error at
    /// its `x-kubernetes-validations[i].rule`, as upstream's CRD validation reports it.
    pub fn compile(schema: &Value, path: &Path) -> Result<Validator, FieldErrors> {
        if !has_rules(schema) {
            return Ok(Validator {
                rules: None,
                schema: Value::Null,
            });
        }
        let compiled = catch_unwind(|| compile_schema(schema)).map_err(|_| {
            let mut errors = FieldErrors::new();
            errors.push(FieldError::internal(path, "compiling the rules panicked"));
            errors
        })?;
        let mut errors = FieldErrors::new();
        collect_compile_errors(&compiled, schema, path, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Validator {
            rules: tree::RuleNode::build(schema),
            schema: schema.clone(),
        })
    }

    /// Whether the schema has no rules (the walk can be skipped).
    pub fn is_empty(&self) -> bool {
        self.rules.is_none()
    }

    /// Evaluates the rules on `new` (and transition rules against `old` on updates).
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> FieldErrors {
        let Some(rules) = &self.rules else {
            return FieldErrors::new();
        };
        if let Some(exceeded) = budget::check(rules, new) {
            let path = match exceeded.field_path.as_str() {
                "" => Path::root("<nil>"),
                field => Path::root(field),
            };
            let type_ = type_at(&self.schema, &exceeded.field_path);
            return FieldErrors::from(FieldError::invalid(
                &path,
                Value::from(type_),
                exceeded.message,
            ));
        }
        let evaluated = catch_unwind(AssertUnwindSafe(|| {
            let mut failed = Vec::new();
            rules.validate(new, old, "", &mut failed);
            failed
        }));
        let mut errors = FieldErrors::new();
        match evaluated {
            Ok(failures) => {
                for failure in failures {
                    errors.push(self.field_error(&failure));
                }
            }
            Err(_) => errors.push(FieldError::internal(
                &Path::root("<nil>"),
                "evaluating the validation rules failed",
            )),
        }
        errors
    }

    /// One failed rule as upstream's field error.
    fn field_error(&self, failure: &ValidationError) -> FieldError {
        let path = match failure.field_path.as_str() {
            "" => Path::root("<nil>"),
            field => Path::root(field),
        };
        let type_ = type_at(&self.schema, &failure.field_path);
        let message = failure.message.clone();
        match failure.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(&path, message),
            Some("FieldValueRequired") => FieldError::required(&path, message),
            Some("FieldValueDuplicate") => FieldError::duplicate(&path, Value::from(type_)),
            _ => FieldError::invalid(&path, Value::from(type_), message),
        }
    }
}

/// Whether any node of `schema` has `x-kubernetes-validations`.
fn has_rules(schema: &Value) -> bool {
    let Some(node) = schema.as_object() else {
        return false;
    };
    if node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|rules| !rules.is_empty())
    {
        return true;
    }
    let children = node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values());
    let nested = ["items", "additionalProperties"]
        .iter()
        .filter_map(|key| node.get(*key));
    let branches = ["allOf", "anyOf", "oneOf"]
        .iter()
        .filter_map(|key| node.get(*key).and_then(Value::as_array))
        .flatten();
    children.chain(nested).chain(branches).any(has_rules)
}

/// The compile errors of `compiled` (the tree of `schema` at `path`).
fn collect_compile_errors(
    compiled: &CompiledSchema,
    schema: &Value,
    path: &Path,
    errors: &mut FieldErrors,
) {
    for (i, result) in compiled.validations.iter().enumerate() {
        let at = path.child("x-kubernetes-validations").index(i);
        match result {
            Err(CompilationError::Parse { source, .. }) => {
                errors.push(FieldError::invalid_rendered(
                    &at.child("rule"),
                    crate::crd::gojson::validation_rule(&schema["x-kubernetes-validations"][i]),
                    format!("compilation failed: {source}"),
                ))
            }
            Err(CompilationError::InvalidRule(err)) => {
                errors.push(FieldError::invalid(&at, Value::Null, err.to_string()))
            }
            Ok(_) => {}
        }
    }
    for (name, child) in &compiled.properties {
        let schema = &schema["properties"][name];
        collect_compile_errors(child, schema, &path.child("properties").key(name), errors);
    }
    if let Some(items) = &compiled.items {
        collect_compile_errors(items, &schema["items"], &path.child("items"), errors);
    }
    if let Some(additional) = &compiled.additional_properties {
        let schema = &schema["additionalProperties"];
        collect_compile_errors(
            additional,
            schema,
            &path.child("additionalProperties"),
            errors,
        );
    }
    let branches = [
        ("allOf", &compiled.all_of),
        ("anyOf", &compiled.any_of),
        ("oneOf", &compiled.one_of),
    ];
    for (key, compiled) in branches {
        for (i, branch) in compiled.iter().enumerate() {
            collect_compile_errors(branch, &schema[key][i], &path.child(key).index(i), errors);
        }
    }
}

/// The schema type at a field path such as `spec.items[0].name` or `spec.labels[key]`
/// (`object` when unknown), as upstream's errors name the failing value.
fn type_at(schema: &Value, field_path: &str) -> String {
    let mut node = schema;
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('[') {
            let end = inner.find(']').unwrap_or(inner.len());
            node = match node.get("items") {
                Some(items) => items,
                None => &node["additionalProperties"],
            };
            rest = inner.get(end + 1..).unwrap_or_default();
        } else {
            let name_part = rest.trim_start_matches('.');
            let end = name_part.find(['.', '[']).unwrap_or(name_part.len());
            let name = &name_part[..end];
            node = match node["properties"].get(name) {
                Some(child) => child,
                None => &node["additionalProperties"],
            };
            rest = &name_part[end..];
        }
    }
    node["type"].as_str().unwrap_or("object").to_string()
}
