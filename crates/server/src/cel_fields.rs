//! The one type check of cel-go's compiler that matters most to authors of CEL rules and
//! policies, for cel-rust (which does not type-check): an expression may only select the
//! fields its variables' types declare (`undefined field 'foo'`).
//!
//! The types come from a [`Declarations`]: a CRD's structural schema for validation rules
//! (`self`, `oldSelf`), an OpenAPI schema for ValidatingAdmissionPolicy (`object`,
//! `oldObject`, `params`). Only selects on objects whose fields are known are checked (not
//! maps, not objects that preserve unknown fields), so an expression upstream accepts is
//! never refused.

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, operators};

/// A step of a path from a variable into its declared type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Field(String),
    Elements,
    Keys,
}

/// What the check knows of the declared types of an expression's variables.
pub trait Declarations {
    /// Whether `name` is a variable whose type is declared.
    fn is_variable(&self, name: &str) -> bool;

    /// Whether the object reached by `path` from `variable` declares `field` (a CEL,
    /// escaped name); `None` when its fields are not fixed or its type is unknown.
    fn declares(&self, variable: &str, path: &[Step], field: &str) -> Option<bool>;

    /// Whether the value reached by `path` from `variable` is a list; `None` if unknown.
    fn is_list(&self, variable: &str, path: &[Step]) -> Option<bool>;
}

/// The first field `expr` selects that its type does not declare.
pub fn undefined_field(expr: &Expr, declarations: &dyn Declarations) -> Option<String> {
    let mut checker = Checker {
        declarations,
        locals: Vec::new(),
        undefined: None,
    };
    checker.visit(expr);
    checker.undefined
}

/// cel-go's report of an undefined field, pointing at the first `.field` of the source.
pub fn undefined_field_message(source: &str, field: &str) -> String {
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

/// CEL's reserved words: a property so named is read as `__name__` (upstream's escaping),
/// and, as Kubernetes also recognises keywords as field names, by its own name.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Whether `name` is one of CEL's reserved words.
pub fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
}

/// The CEL name of a property, as upstream escapes property names.
pub fn escape(name: &str) -> String {
    if is_reserved(name) {
        return format!("__{name}__");
    }
    let mut escaped = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                escaped.push_str("__underscores__");
            }
            '.' => escaped.push_str("__dot__"),
            '-' => escaped.push_str("__dash__"),
            '/' => escaped.push_str("__slash__"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// Where an expression points: a variable and a path into its type.
type Place = (String, Vec<Step>);

/// The walk over an expression.
struct Checker<'a> {
    declarations: &'a dyn Declarations,
    /// Comprehension variables in scope and where they point.
    locals: Vec<(String, Option<Place>)>,
    undefined: Option<String>,
}

impl Checker<'_> {
    fn visit(&mut self, expr: &Expr) {
        if self.undefined.is_some() {
            return;
        }
        match expr {
            Expr::Select(select) => {
                let declared = self
                    .place(&select.operand.expr)
                    .and_then(|(v, path)| self.declarations.declares(&v, &path, &select.field));
                if declared == Some(false) {
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
        let range = self.place(&c.iter_range.expr);
        let is_list = range
            .as_ref()
            .and_then(|(v, path)| self.declarations.is_list(v, path))
            .unwrap_or(true);
        let element = |step: Step| {
            range.clone().map(|(v, mut path)| {
                path.push(step);
                (v, path)
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

    /// Where `expr` points, if it does.
    fn place(&self, expr: &Expr) -> Option<Place> {
        match expr {
            Expr::Ident(name) => match self.locals.iter().rev().find(|(n, _)| n == name) {
                Some((_, place)) => place.clone(),
                None => self
                    .declarations
                    .is_variable(name)
                    .then(|| (name.clone(), Vec::new())),
            },
            Expr::Select(select) if !select.test => {
                let (variable, mut path) = self.place(&select.operand.expr)?;
                path.push(Step::Field(select.field.clone()));
                Some((variable, path))
            }
            Expr::Call(call) if call.func_name == operators::INDEX => {
                let (variable, mut path) = self.place(&call.args.first()?.expr)?;
                path.push(Step::Elements);
                Some((variable, path))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_are_escaped_as_upstream() {
        assert_eq!(escape("foo-bar"), "foo__dash__bar");
        assert_eq!(escape("a.b/c"), "a__dot__b__slash__c");
        assert_eq!(escape("x__y"), "x__underscores__y");
        assert_eq!(escape("namespace"), "__namespace__");
    }
}
