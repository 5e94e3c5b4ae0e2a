//! The one type check upstream's CEL compiler makes that matters most to CRD authors: a rule
//! may only select fields its schema declares (`undefined field 'foo'`), and of a resource's
//! `metadata` only `name` and `generateName`. cel-rust does not type-check, so without this
//! a rule with a misspelt field would install and then fail on every write.
//!
//! Only selects on objects whose fields are known are checked (not maps, not objects that
//! preserve unknown fields), so a rule upstream accepts is never refused here.

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, operators};
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use super::cost::{Decl, Step, escape};

/// The rules of `schema` (an `openAPIV3Schema` at `path`) that select undeclared fields, as
/// upstream's compilation errors.
pub(crate) fn check(schema: &Value, path: &Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    node(schema, &Decl::of(schema, true), path, &mut errors);
    errors
}

fn node(schema: &Value, decl: &Decl, path: &Path, errors: &mut FieldErrors) {
    let rules = schema["x-kubernetes-validations"].as_array();
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let Some(source) = rule["rule"].as_str() else {
            continue;
        };
        let Ok(program) = cel::Program::compile(source) else {
            continue;
        };
        let mut checker = Checker {
            root: decl,
            locals: Vec::new(),
            undefined: None,
        };
        checker.visit(&program.expression().expr);
        if let Some(field) = checker.undefined {
            let at = path
                .child("x-kubernetes-validations")
                .index(i)
                .child("rule");
            let message = format!("compilation failed: {}", undefined(source, &field));
            errors.push(FieldError::invalid(&at, Value::from(source), message));
        }
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

/// cel-go's report of an undefined field, at the first `.field` of the source.
fn undefined(source: &str, field: &str) -> String {
    let at = source
        .match_indices(&format!(".{field}"))
        .find(|(i, _)| {
            let after = source[i + 1 + field.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
        .map_or(0, |(i, _)| i);
    let line_start = source[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = source[..at].matches('\n').count() + 1;
    let column = source[line_start..at].chars().count() + 1;
    let text = source[line_start..].lines().next().unwrap_or_default();
    format!(
        "ERROR: <input>:{line}:{column}: undefined field '{field}'\n | {text}\n | {}^",
        ".".repeat(column - 1)
    )
}

/// The walk over a rule: where each expression points into `self`'s declared type.
struct Checker<'a> {
    root: &'a Decl,
    /// Comprehension variables in scope and where they point.
    locals: Vec<(String, Option<Vec<Step>>)>,
    undefined: Option<String>,
}

impl Checker<'_> {
    fn visit(&mut self, expr: &Expr) {
        if self.undefined.is_some() {
            return;
        }
        match expr {
            Expr::Select(select) => {
                let operand = self.path(&select.operand.expr);
                let declared = operand.as_deref().and_then(|p| self.root.at(p));
                if declared.is_some_and(|d| d.fixed_fields && !d.fields.contains_key(&select.field))
                {
                    self.undefined = Some(select.field.clone());
                    return;
                }
                self.visit(&select.operand.expr);
            }
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    self.visit(&target.expr);
                }
                call.args.iter().for_each(|arg| self.visit(&arg.expr));
            }
            Expr::Comprehension(comprehension) => self.comprehension(comprehension),
            Expr::List(list) => list.elements.iter().for_each(|e| self.visit(&e.expr)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        self.visit(&entry.key.expr);
                        self.visit(&entry.value.expr);
                    }
                }
            }
            Expr::Struct(object) => {
                for entry in &object.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        self.visit(&field.value.expr);
                    }
                }
            }
            _ => {}
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) {
        self.visit(&c.iter_range.expr);
        self.visit(&c.accu_init.expr);
        let range = self.path(&c.iter_range.expr);
        let is_list = range
            .as_deref()
            .and_then(|p| self.root.at(p))
            .is_none_or(Decl::is_list);
        let element = |step: Step| {
            range.clone().map(|mut path| {
                path.push(step);
                path
            })
        };
        let scoped = self.locals.len();
        self.locals.push((c.accu_var.clone(), None));
        match &c.iter_var2 {
            Some(value) => {
                let key = if is_list { None } else { element(Step::Keys) };
                self.locals.push((c.iter_var.clone(), key));
                self.locals.push((value.clone(), element(Step::Elements)));
            }
            None => {
                let step = if is_list { Step::Elements } else { Step::Keys };
                self.locals.push((c.iter_var.clone(), element(step)));
            }
        }
        self.visit(&c.loop_cond.expr);
        self.visit(&c.loop_step.expr);
        self.locals.truncate(scoped + 1);
        self.visit(&c.result.expr);
        self.locals.truncate(scoped);
    }

    /// Where `expr` points into `self`, if it does.
    fn path(&self, expr: &Expr) -> Option<Vec<Step>> {
        match expr {
            Expr::Ident(name) => match self.locals.iter().rev().find(|(n, _)| n == name) {
                Some((_, path)) => path.clone(),
                None => matches!(name.as_str(), "self" | "oldSelf").then(Vec::new),
            },
            Expr::Select(select) if !select.test => {
                let mut path = self.path(&select.operand.expr)?;
                path.push(Step::Field(select.field.clone()));
                Some(path)
            }
            Expr::Call(call) if call.func_name == operators::INDEX => {
                let mut path = self.path(&call.args.first()?.expr)?;
                path.push(Step::Elements);
                Some(path)
            }
            _ => None,
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
