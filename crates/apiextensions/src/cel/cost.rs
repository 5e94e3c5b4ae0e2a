//! The static cost limits of `x-kubernetes-validations`, as upstream enforces them when a CRD
//! is written: every rule's worst-case cost (its estimated cost per evaluation times the most
//! times it can be evaluated in one object) must stay within [`PER_EXPRESSION_LIMIT`], and the
//! sum over the schema within [`CRD_LIMIT`].
//!
//! The estimate follows cel-go's cost model (the one upstream uses) over the parsed rule:
//! selects and identifiers cost 1, constants 0, comprehensions their range's maximum size
//! times their loop's cost, string functions a tenth of the strings' maximum lengths, regular
//! expressions the product of string and pattern lengths, and so on. Sizes come from the
//! schema as upstream derives them (`maxLength`, `maxItems`, `maxProperties`, or the most that
//! fits in a 3 MiB request). cel-rust does not type-check, so where cel-go would know a size
//! from types alone and this model does not, the model assumes the smallest size: it may pass
//! a rule upstream refuses, never the reverse.

use std::collections::HashMap;
use std::sync::LazyLock;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue, operators};
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

/// The largest estimated cost of one rule (times its cardinality) or one messageExpression
/// (upstream's StaticEstimatedCostLimit).
pub(crate) const PER_EXPRESSION_LIMIT: u64 = 10_000_000;
/// The largest estimated cost of all the rules of a schema (StaticEstimatedCRDCostLimit).
pub(crate) const CRD_LIMIT: u64 = 100_000_000;
/// The largest request upstream accepts, which bounds unbounded lists, maps and strings.
const MAX_REQUEST_SIZE: u64 = 3 * 1024 * 1024;
/// cel-go's cost of traversing one character of a string.
const STRING_TRAVERSAL: f64 = 0.1;
/// cel-go's cost per regular expression character.
const REGEX_LENGTH: f64 = 0.25;

/// The errors of the cost limits for the schema at `path` (an `openAPIV3Schema`):
/// per-rule and per-messageExpression limits (skipped with `suppress_per_expression`, as
/// upstream skips them for a version whose schema an update leaves unchanged) and the total.
pub(crate) fn check(schema: &Value, path: &Path, suppress_per_expression: bool) -> FieldErrors {
    let root = Decl::of(schema, true);
    let mut walk = Walk {
        suppress_per_expression,
        errors: FieldErrors::new(),
        total: 0,
        most_expensive: Vec::new(),
    };
    walk.node(schema, &root, Some(1), path);
    let mut errors = walk.errors;
    if walk.total > CRD_LIMIT {
        for (at, _) in &walk.most_expensive {
            errors.push(FieldError::forbidden(
                at,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errors.push(FieldError::forbidden(
            path,
            exceeds(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                walk.total,
                CRD_LIMIT,
            ),
        ));
    }
    errors
}

/// Upstream's message for a cost over its limit.
fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The walk over a schema and its declared types, accumulating costs.
struct Walk {
    suppress_per_expression: bool,
    errors: FieldErrors,
    total: u64,
    /// The (at most four) costliest expressions of at least 1% of [`CRD_LIMIT`].
    most_expensive: Vec<(Path, u64)>,
}

impl Walk {
    /// Checks the rules of `schema` (declared as `decl`, evaluated at most `cardinality`
    /// times per object; `None` when under an unbounded list or map), then its children.
    fn node(&mut self, schema: &Value, decl: &Decl, cardinality: Option<u64>, path: &Path) {
        let rules = schema["x-kubernetes-validations"].as_array();
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            let at = path.child("x-kubernetes-validations").index(i);
            let times = cardinality.unwrap_or(MAX_REQUEST_SIZE / (decl.min_size.saturating_add(1)));
            if let Some(cost) = rule["rule"].as_str().and_then(|r| estimate(r, decl)) {
                let cost = if cost == 0 {
                    0
                } else {
                    cost.saturating_mul(times)
                };
                self.observe(&at.child("rule"), cost, "estimated rule cost");
            }
            let message = rule["messageExpression"].as_str().filter(|m| !m.is_empty());
            if let Some(cost) = message.and_then(|m| estimate(m, decl)) {
                let at = at.child("messageExpression");
                self.observe(&at, cost, "estimated messageExpression cost");
            }
        }
        let within = |max: Option<u64>| cardinality.zip(max).map(|(c, m)| c.saturating_mul(m));
        if let Some(properties) = schema["properties"].as_object() {
            for (name, child) in properties {
                let Some(child_decl) = decl.fields.get(&escape(name)) else {
                    continue;
                };
                let at = path.child("properties").key(name);
                self.node(child, child_decl, within(Some(1)), &at);
            }
        }
        let Some(elements) = &decl.elements else {
            return;
        };
        let limit = |key: &str| schema[key].as_u64();
        let (key, max) = if schema["items"].is_object() {
            ("items", limit("maxItems"))
        } else {
            ("additionalProperties", limit("maxProperties"))
        };
        if schema[key].is_object() {
            self.node(&schema[key], elements, within(max), &path.child(key));
        }
    }

    /// Records one expression's cost: its own limit, then towards the total.
    fn observe(&mut self, at: &Path, cost: u64, what: &str) {
        if !self.suppress_per_expression && cost > PER_EXPRESSION_LIMIT {
            self.errors.push(FieldError::forbidden(
                at,
                exceeds(what, cost, PER_EXPRESSION_LIMIT),
            ));
        }
        self.total = self.total.saturating_add(cost);
        if cost >= CRD_LIMIT / 100 {
            self.most_expensive.push((at.clone(), cost));
            self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
            self.most_expensive.truncate(4);
        }
    }
}

/// The declared type of a schema node, as far as costs need it (upstream's DeclType):
/// its named fields, its elements (of a list or map), the most elements (characters of a
/// string, items of a list, entries of a map) and its smallest JSON size.
#[derive(Default)]
pub(super) struct Decl {
    list: bool,
    string: bool,
    /// An object whose fields are only those declared (CEL's object type: a select of
    /// another field does not compile).
    pub fixed_fields: bool,
    pub fields: HashMap<String, Decl>,
    pub elements: Option<Box<Decl>>,
    max_elements: u64,
    min_size: u64,
}

impl Decl {
    /// The declared type of `schema`; `resource_root` adds `apiVersion`, `kind` and
    /// `metadata.name`/`generateName`, as upstream declares them for the root and embedded
    /// resources.
    pub(super) fn of(schema: &Value, resource_root: bool) -> Decl {
        if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
            let max = schema["maxLength"]
                .as_u64()
                .map_or(MAX_REQUEST_SIZE - 2, |m| m * 4);
            return Decl::scalar(max, 1);
        }
        let embedded = |s: &Value| s["x-kubernetes-embedded-resource"] == Value::Bool(true);
        match schema["type"].as_str().unwrap_or_default() {
            "array" => {
                let items = Decl::of(&schema["items"], embedded(&schema["items"]));
                let max = schema["maxItems"]
                    .as_u64()
                    .unwrap_or((MAX_REQUEST_SIZE - 2) / (items.min_size + 1));
                Decl::container(true, items, max)
            }
            "object" if schema["additionalProperties"].is_object() => {
                let values = &schema["additionalProperties"];
                let values = Decl::of(values, embedded(values));
                let max = schema["maxProperties"]
                    .as_u64()
                    .unwrap_or((MAX_REQUEST_SIZE - 2) / (values.min_size + 6));
                Decl::container(false, values, max)
            }
            "object" => Decl::object(schema, resource_root),
            "string" => Decl::string(schema),
            "boolean" => Decl::scalar(0, 4),
            _ => Decl::scalar(0, 1),
        }
    }

    fn scalar(max_elements: u64, min_size: u64) -> Decl {
        Decl {
            max_elements,
            min_size,
            ..Decl::default()
        }
    }

    fn container(list: bool, elements: Decl, max_elements: u64) -> Decl {
        Decl {
            list,
            elements: Some(Box::new(elements)),
            max_elements,
            min_size: 2,
            ..Decl::default()
        }
    }

    fn string(schema: &Value) -> Decl {
        let unbounded = MAX_REQUEST_SIZE - 2;
        let (max, min) = match schema["format"].as_str().unwrap_or_default() {
            "byte" => (schema["maxLength"].as_u64().unwrap_or(unbounded), 2),
            "duration" => (32, 3),
            "date" => (12, 12),
            "date-time" => (32, 21),
            _ => {
                let longest_enum = schema["enum"].as_array().map(|values| {
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as u64)
                        .max()
                        .unwrap_or(0)
                });
                let max = schema["maxLength"].as_u64().map(|m| m * 4);
                (max.or(longest_enum).unwrap_or(unbounded), 2)
            }
        };
        Decl {
            string: true,
            ..Decl::scalar(max, min)
        }
    }

    fn object(schema: &Value, resource_root: bool) -> Decl {
        let required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut decl = Decl::scalar(0, 2);
        decl.fixed_fields = schema["x-kubernetes-preserve-unknown-fields"] != Value::Bool(true);
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            let embedded = property["x-kubernetes-embedded-resource"] == Value::Bool(true);
            let field = Decl::of(property, embedded);
            if required.contains(&name.as_str()) && property.get("default").is_none() {
                decl.min_size += name.len() as u64 + field.min_size + 4;
            }
            decl.fields.insert(escape(name), field);
        }
        if resource_root {
            decl.with_type_and_object_meta(&schema["properties"]["metadata"]["properties"]);
        }
        decl
    }

    /// Declares `apiVersion`, `kind` and `metadata` with only `name` (at most 253 characters,
    /// or the schema's `maxLength` if smaller) and `generateName` (252), as upstream does for
    /// resources.
    fn with_type_and_object_meta(&mut self, metadata: &Value) {
        for name in ["apiVersion", "kind"] {
            self.fields.insert(name.into(), Decl::string(&Value::Null));
        }
        let capped = |schema: &Value, cap: u64| {
            let max = schema["maxLength"].as_u64().map_or(cap, |m| m.min(cap));
            Decl::string(&serde_json::json!({"type": "string", "maxLength": max}))
        };
        let mut object = Decl::scalar(0, 2);
        object.fixed_fields = true;
        object
            .fields
            .insert("name".into(), capped(&metadata["name"], 253));
        object.fields.insert(
            "generateName".into(),
            capped(&metadata["generateName"], 252),
        );
        self.fields.insert("metadata".into(), object);
    }

    /// Whether this is a list (a map's elements are its values).
    pub(super) fn is_list(&self) -> bool {
        self.list
    }

    /// The type at `path` below this one.
    pub(super) fn at(&self, path: &[Step]) -> Option<&Decl> {
        path.iter().try_fold(self, |decl, step| match step {
            Step::Field(name) => decl.fields.get(name),
            Step::Elements => decl.elements.as_deref(),
            Step::Keys => Some(&*KEY),
        })
    }
}

/// Map keys: strings without a declared bound (upstream's StringType).
static KEY: LazyLock<Decl> = LazyLock::new(|| Decl::scalar(0, 2));

pub(super) use kapi_server::cel_fields::{Step, escape};

/// What a cost estimate knows of the values at a path below `self`: their most elements
/// (characters, items or entries), and whether they are strings or lists.
#[derive(Clone, Copy)]
pub(super) struct Node {
    pub max_elements: u64,
    pub string: bool,
    pub list: bool,
}

/// Where sizes come from: the declared types (the static estimate) or the values of an
/// object (the runtime bound).
pub(super) trait Sizes {
    fn node(&self, path: &[Step]) -> Option<Node>;
}

impl Sizes for Decl {
    fn node(&self, path: &[Step]) -> Option<Node> {
        self.at(path).map(|decl| Node {
            max_elements: decl.max_elements,
            string: decl.string,
            list: decl.list,
        })
    }
}

/// The estimated worst-case cost of `expression` evaluated with `self` of type `decl`; `None`
/// when it does not parse (compilation reports that).
fn estimate(expression: &str, decl: &Decl) -> Option<u64> {
    let program = cel::Program::compile(expression).ok()?;
    Some(cost_of(&program.expression().expr, decl))
}

/// The estimated cost of `expr` with sizes from `sizes`.
pub(super) fn cost_of(expr: &Expr, sizes: &dyn Sizes) -> u64 {
    let mut coster = Coster {
        sizes,
        locals: Vec::new(),
    };
    coster.cost(expr).cost
}

/// The estimate of one expression: its cost, where it points into `self` (if it does) and the
/// most elements of its value (if known).
#[derive(Clone, Default)]
struct Estimate {
    cost: u64,
    path: Option<Vec<Step>>,
    size: Option<u64>,
    /// The value is a string (concatenations then cost their traversal).
    string: bool,
}

impl Estimate {
    fn cost(cost: u64) -> Estimate {
        Estimate {
            cost,
            ..Estimate::default()
        }
    }

    fn sized(cost: u64, size: Option<u64>) -> Estimate {
        Estimate {
            cost,
            size,
            ..Estimate::default()
        }
    }

    fn string(cost: u64, size: Option<u64>) -> Estimate {
        Estimate {
            string: true,
            ..Estimate::sized(cost, size)
        }
    }
}

/// cel-go's estimator over cel-rust's syntax tree.
struct Coster<'a> {
    sizes: &'a dyn Sizes,
    /// Comprehension variables in scope, with where they point.
    locals: Vec<(String, Option<Vec<Step>>, Option<u64>)>,
}

impl Coster<'_> {
    fn cost(&mut self, expr: &Expr) -> Estimate {
        match expr {
            Expr::Literal(LiteralValue::String(text)) => {
                Estimate::string(0, Some(text.chars().count() as u64))
            }
            Expr::Literal(literal) => Estimate::sized(0, Some(literal_size(literal))),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) => {
                let operand = self.cost(&select.operand.expr);
                if select.test {
                    return Estimate::cost(operand.cost.saturating_add(1));
                }
                let path = operand.path.map(|mut path| {
                    path.push(Step::Field(select.field.clone()));
                    path
                });
                self.pointing(operand.cost.saturating_add(1), path)
            }
            Expr::Call(call) => self.call(call),
            Expr::List(list) => {
                let cost = list.elements.iter().map(|e| self.cost(&e.expr).cost);
                let cost = cost.fold(10u64, u64::saturating_add);
                Estimate::sized(cost, Some(list.elements.len() as u64))
            }
            Expr::Map(map) => {
                let mut cost = 30u64;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        cost = cost
                            .saturating_add(self.cost(&entry.key.expr).cost)
                            .saturating_add(self.cost(&entry.value.expr).cost);
                    }
                }
                Estimate::sized(cost, Some(map.entries.len() as u64))
            }
            Expr::Struct(object) => {
                let mut cost = 40u64;
                for entry in &object.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        cost = cost.saturating_add(self.cost(&field.value.expr).cost);
                    }
                }
                Estimate::cost(cost)
            }
            Expr::Comprehension(comprehension) => self.comprehension(comprehension),
            _ => Estimate::default(),
        }
    }

    /// What is known at `path`, followed by `then` if given.
    fn node(&self, path: Option<&Vec<Step>>, then: Option<Step>) -> Option<Node> {
        let mut path = path?.clone();
        path.extend(then);
        self.sizes.node(&path)
    }

    /// An estimate pointing at `path` (its size is the declared type's).
    fn pointing(&self, cost: u64, path: Option<Vec<Step>>) -> Estimate {
        let node = self.node(path.as_ref(), None);
        Estimate {
            cost,
            size: node.map(|n| n.max_elements),
            string: node.is_some_and(|n| n.string),
            path,
        }
    }

    fn ident(&self, name: &str) -> Estimate {
        if let Some((_, path, size)) = self.locals.iter().rev().find(|(n, _, _)| n == name) {
            let mut estimate = self.pointing(1, path.clone());
            estimate.size = estimate.size.or(*size);
            return estimate;
        }
        match name {
            "self" | "oldSelf" => self.pointing(1, Some(Vec::new())),
            _ => Estimate::cost(1),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Estimate {
        let range = self.cost(&c.iter_range.expr);
        let init = self.cost(&c.accu_init.expr);
        let is_list = self.node(range.path.as_ref(), None).is_none_or(|n| n.list);
        let element = |step: Step| {
            range.path.clone().map(|mut path| {
                path.push(step);
                path
            })
        };
        let scoped = self.locals.len();
        self.locals
            .push((c.accu_var.clone(), init.path.clone(), init.size));
        match &c.iter_var2 {
            Some(value) => {
                let key = if is_list { None } else { element(Step::Keys) };
                self.locals.push((c.iter_var.clone(), key, None));
                self.locals
                    .push((value.clone(), element(Step::Elements), None));
            }
            None => {
                let step = if is_list { Step::Elements } else { Step::Keys };
                self.locals.push((c.iter_var.clone(), element(step), None));
            }
        }
        let per_element = self
            .cost(&c.loop_cond.expr)
            .cost
            .saturating_add(self.cost(&c.loop_step.expr).cost);
        self.locals.truncate(scoped + 1);
        let result = self.cost(&c.result.expr);
        self.locals.truncate(scoped);
        let count = range.size.unwrap_or(1);
        let cost = range
            .cost
            .saturating_add(init.cost)
            .saturating_add(result.cost)
            .saturating_add(count.saturating_mul(per_element));
        let size = match &c.accu_init.expr {
            Expr::List(_) | Expr::Map(_) => Some(count),
            _ => result.size,
        };
        Estimate::sized(cost, size)
    }

    fn call(&mut self, call: &CallExpr) -> Estimate {
        let target = call.target.as_ref().map(|t| self.cost(&t.expr));
        let args: Vec<Estimate> = call.args.iter().map(|a| self.cost(&a.expr)).collect();
        let args_cost = args.iter().map(|a| a.cost).fold(0u64, u64::saturating_add);
        let base = args_cost.saturating_add(target.as_ref().map_or(0, |t| t.cost));
        let size = |e: Option<&Estimate>| e.and_then(|e| e.size).unwrap_or(0);
        let target_size = size(target.as_ref());
        let name = call.func_name.as_str();
        let (own, result_size) = match name {
            operators::LOGICAL_AND | operators::LOGICAL_OR => (0, None),
            operators::CONDITIONAL => {
                let branches = args
                    .get(1)
                    .map_or(0, |a| a.cost)
                    .max(args.get(2).map_or(0, |a| a.cost));
                let condition = args.first().map_or(0, |a| a.cost);
                let sizes = args
                    .get(1)
                    .and_then(|a| a.size)
                    .max(args.get(2).and_then(|a| a.size));
                return Estimate::sized(condition.saturating_add(branches), sizes);
            }
            operators::INDEX => return self.index(&args, base),
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => {
                let smallest = size(args.first()).min(size(args.get(1)));
                (factor(smallest, STRING_TRAVERSAL), None)
            }
            operators::IN => (size(args.get(1)), None),
            operators::ADD => {
                let sum = size(args.first()).saturating_add(size(args.get(1)));
                if args.iter().any(|a| a.string) {
                    let cost = base.saturating_add(factor(sum, STRING_TRAVERSAL));
                    return Estimate::string(cost, Some(sum));
                }
                (1, Some(sum))
            }
            "startsWith" | "endsWith" => (factor(size(args.first()), STRING_TRAVERSAL), None),
            "contains" => {
                let text = factor(target_size, STRING_TRAVERSAL);
                (
                    text.saturating_mul(factor(size(args.first()), STRING_TRAVERSAL)),
                    None,
                )
            }
            "matches" | "find" | "findAll" => {
                let (text, pattern) = match &target {
                    Some(_) => (target_size, size(args.first())),
                    None => (size(args.first()), size(args.get(1))),
                };
                let cost = factor(text.saturating_add(1), STRING_TRAVERSAL)
                    .saturating_mul(factor(pattern, REGEX_LENGTH));
                (cost, (name != "matches").then_some(text))
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes"
                if target.is_some() =>
            {
                (self.list_traversal(target.as_ref()), None)
            }
            "url" | "jsonpatch.escapeKey" => {
                let text = size(args.first());
                (factor(text, STRING_TRAVERSAL), Some(text))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" | "replace" if target.is_some() => {
                let cost = base.saturating_add(factor(target_size, STRING_TRAVERSAL));
                return Estimate::string(cost, Some(target_size));
            }
            "split" if target.is_some() => (
                factor(target_size, 2.0 * STRING_TRAVERSAL),
                Some(target_size),
            ),
            "join" if target.is_some() => {
                let element = self.element_size(target.as_ref());
                let text = target_size.saturating_mul(element);
                let cost = base.saturating_add(factor(text, STRING_TRAVERSAL));
                return Estimate::string(cost, Some(text));
            }
            "dyn" => {
                let arg = args.first().cloned().unwrap_or_default();
                return Estimate {
                    cost: arg.cost.saturating_add(1),
                    ..arg
                };
            }
            _ => (1, None),
        };
        Estimate::sized(base.saturating_add(own), result_size)
    }

    /// `list[i]` or `map[key]`: points at the container's elements.
    fn index(&self, args: &[Estimate], base: u64) -> Estimate {
        let path = args.first().and_then(|a| a.path.clone()).map(|mut path| {
            path.push(Step::Elements);
            path
        });
        self.pointing(base.saturating_add(1), path)
    }

    /// The cost of comparing each element of a list once (strings cost their traversal).
    fn list_traversal(&self, list: Option<&Estimate>) -> u64 {
        let Some(list) = list else { return 0 };
        match self.node(list.path.as_ref(), Some(Step::Elements)) {
            Some(element) => {
                let each = 1 + factor(element.max_elements, STRING_TRAVERSAL);
                list.size.unwrap_or(0).saturating_mul(each)
            }
            None => factor(list.size.unwrap_or(0), STRING_TRAVERSAL),
        }
    }

    /// The most elements of one element of a list (its strings' length).
    fn element_size(&self, list: Option<&Estimate>) -> u64 {
        list.and_then(|l| self.node(l.path.as_ref(), Some(Step::Elements)))
            .map_or(0, |n| n.max_elements)
    }
}

/// `size × per_unit`, rounded up (cel-go's multiplyByCostFactor).
fn factor(size: u64, per_unit: f64) -> u64 {
    let cost = (size as f64 * per_unit).ceil();
    if cost >= u64::MAX as f64 {
        u64::MAX
    } else {
        cost as u64
    }
}

/// The size of a literal: a string's or bytes' length, else 1.
fn literal_size(literal: &LiteralValue) -> u64 {
    match literal {
        LiteralValue::Bytes(b) => b.len() as u64,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value) -> Vec<String> {
        check(&schema, &Path::root("openAPIV3Schema"), false)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    fn list_of_strings(max_items: Option<u64>, max_length: Option<u64>, rule: &str) -> Value {
        let mut items = json!({"type": "string"});
        if let Some(max) = max_length {
            items["maxLength"] = json!(max);
        }
        let mut list =
            json!({"type": "array", "items": items, "x-kubernetes-validations": [{"rule": rule}]});
        if let Some(max) = max_items {
            list["maxItems"] = json!(max);
        }
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"names": list}}}})
    }

    #[test]
    fn bounded_rules_pass() {
        let rule = "self.all(a, self.exists(b, a == b))";
        assert!(errors(list_of_strings(Some(100), Some(63), rule)).is_empty());
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.maxReplicas"},
                {"rule": "self.name.matches('^[a-z]+$')", "messageExpression": "'bad name ' + self.name"}],
            "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                "name": {"type": "string"}}}}});
        assert!(errors(schema).is_empty());
    }

    #[test]
    fn quadratic_rules_on_unbounded_lists_are_refused() {
        let rule = "self.all(a, self.exists(b, a == b))";
        let found = errors(list_of_strings(None, None, rule));
        assert_eq!(
            found[0],
            "openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(found.last().unwrap().starts_with(
            "openAPIV3Schema: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of"
        ));
    }

    #[test]
    fn cardinality_multiplies_rules_under_unbounded_lists() {
        let item_rule = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "hosts": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.matches('^[a-z.]+$')"}]}}}}}});
        let found = errors(item_rule.clone());
        assert!(
            found[0].contains("properties[hosts].items.x-kubernetes-validations[0].rule"),
            "{found:?}"
        );
        let mut bounded = item_rule;
        bounded["properties"]["spec"]["properties"]["hosts"]["maxItems"] = json!(16);
        bounded["properties"]["spec"]["properties"]["hosts"]["items"]["maxLength"] = json!(253);
        assert!(errors(bounded).is_empty());
    }

    #[test]
    fn unchanged_schemas_skip_the_per_rule_limit_only() {
        let schema = list_of_strings(
            Some(2000),
            Some(1000),
            "self.all(a, self.all(b, a.contains(b)))",
        );
        let path = Path::root("openAPIV3Schema");
        let all = check(&schema, &path, false);
        let suppressed = check(&schema, &path, true);
        assert!(all.len() > suppressed.len(), "{all:?} {suppressed:?}");
        assert!(
            suppressed
                .iter()
                .all(|e| !e.detail.contains("estimated rule cost exceeds"))
        );
    }

    /// The limits' cases of upstream's CRD validation tests, with their expected verdicts.
    #[test]
    fn upstream_cases() {
        let nested = |key: Value| {
            json!({"type": "object", "properties": {"value": {"type": "array",
            "items": {"type": "object", "additionalProperties": {"type": "object",
                "required": ["key"], "properties": {"key": key}}},
            "x-kubernetes-validations": [{"rule": "self.all(x, x.all(y, x[y].key == x[y].key))"}]}}})
        };
        let at = "openAPIV3Schema.properties[value].x-kubernetes-validations[0].rule";
        for key in [
            json!({"type": "string"}),
            json!({"type": "string", "maxLength": 10}),
        ] {
            let found = errors(nested(key));
            assert_eq!(found.len(), 3, "{found:?}");
            assert!(found[0].starts_with(&format!("{at}: estimated rule cost exceeds")));
            assert!(
                found[1].starts_with(&format!("{at}: contributed to estimated rule cost total"))
            );
        }
        let lower = json!({"type": "object", "properties": {"f": {"type": "array", "maxItems": 5,
            "items": {"type": "string", "maxLength": 5},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.exists_one(y, x.lowerAscii() == y.lowerAscii()))"}]}}});
        assert!(errors(lower).is_empty());
        let names = json!({"type": "object", "x-kubernetes-validations": [{"rule":
            "self.metadata.name.contains(self.metadata.name) && self.metadata.generateName.contains(self.metadata.generateName)"}]});
        assert!(errors(names).is_empty());
        let message = json!({"type": "object", "properties": {"f": {"type": "array",
            "items": {"type": "string"}, "x-kubernetes-validations": [{"rule": "true",
                "messageExpression": "self[0] + self[1] + self[2] + self[3] + self[4] + self[5] + self[6] + self[7]"}]}}});
        let found = errors(message);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression: estimated messageExpression cost exceeds budget"));
        let contains = json!({"type": "string", "maxLength": 5000,
            "x-kubernetes-validations": [{"rule": "self.contains('keyword')"}]});
        let total = json!({"type": "object", "properties": {
            "list": {"type": "array", "maxItems": 100000, "items": contains},
            "map": {"type": "object", "maxProperties": 1000, "additionalProperties": contains},
            "field": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 50 && self < 100"}]}}});
        let found = errors(total);
        let list = "openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule";
        let map =
            "openAPIV3Schema.properties[map].additionalProperties.x-kubernetes-validations[0].rule";
        let paths: Vec<&str> = found
            .iter()
            .map(|f| f.split(": ").next().unwrap())
            .collect();
        assert_eq!(paths, [list, list, map, "openAPIV3Schema"], "{found:?}");
    }

    #[test]
    fn factors_are_worded_as_upstream() {
        assert!(exceeds("x", 12_000_000, PER_EXPRESSION_LIMIT).contains("factor of 1.200000x"));
        assert!(exceeds("x", 25_000_000, PER_EXPRESSION_LIMIT).contains("factor of 2.5x"));
        assert!(exceeds("x", u64::MAX, PER_EXPRESSION_LIMIT).contains("factor of more than 100x"));
    }
}
