//! The JSONPath subset CRDs use in `additionalPrinterColumns` and `selectableFields`
//! (client-go's jsonpath inside `{}`): fields (`.spec.replicas`, `['a.b']`), indexes
//! (`[0]`, `[-1]`), wildcards (`[*]`) and filters comparing a field with a literal
//! (`[?(@.type=="Ready")]`, `==`, `!=`, `<`, `>`, `<=`, `>=`). Parsed once per CRD;
//! evaluation never fails, missing keys give no result (upstream allows missing keys).

use serde_json::Value;

/// A parsed path.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath(Vec<Step>);

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter {
        field: Vec<String>,
        op: String,
        literal: Value,
    },
}

impl JsonPath {
    /// Parses `path` (e.g. `.status.conditions[?(@.type=="Ready")].status`).
    pub fn parse(path: &str) -> Result<JsonPath, String> {
        let mut steps = Vec::new();
        let mut rest = path.trim();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                if end == 0 {
                    return Err(format!("invalid field name in {path:?}"));
                }
                steps.push(Step::Field(after[..end].to_string()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end =
                    closing_bracket(after).ok_or_else(|| format!("unclosed [ in {path:?}"))?;
                steps.push(bracket(&after[..end])?);
                rest = &after[end + 1..];
            } else {
                return Err(format!("unrecognized character in {path:?} at {rest:?}"));
            }
        }
        Ok(JsonPath(steps))
    }

    /// The values the path leads to in `value`.
    pub fn find<'a>(&self, value: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![value];
        for step in &self.0 {
            current = current.into_iter().flat_map(|v| apply(step, v)).collect();
        }
        current
    }
}

/// The index of the `]` closing a bracket, skipping quoted text.
fn closing_bracket(text: &str) -> Option<usize> {
    let mut quote = None;
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ']') if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str) -> Result<Step, String> {
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        return parse_filter(filter);
    }
    if let Some(name) = unquote(inner) {
        return Ok(Step::Field(name));
    }
    inner
        .parse()
        .map(Step::Index)
        .map_err(|_| format!("invalid array index {inner:?}"))
}

fn unquote(text: &str) -> Option<String> {
    let quoted = (text.starts_with('\'') && text.ends_with('\''))
        || (text.starts_with('"') && text.ends_with('"'));
    (quoted && text.len() >= 2).then(|| text[1..text.len() - 1].to_string())
}

fn parse_filter(filter: &str) -> Result<Step, String> {
    let ops = ["==", "!=", "<=", ">=", "<", ">"];
    let (at, op) = ops
        .iter()
        .filter_map(|op| filter.find(op).map(|at| (at, *op)))
        .min_by_key(|(at, _)| *at)
        .ok_or_else(|| format!("unsupported filter {filter:?}"))?;
    let left = filter[..at].trim();
    let right = filter[at + op.len()..].trim();
    let field = left
        .strip_prefix('@')
        .ok_or_else(|| format!("unsupported filter {filter:?}"))?
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let literal = match unquote(right) {
        Some(text) => Value::String(text),
        None => serde_json::from_str(right).map_err(|_| format!("invalid literal {right:?}"))?,
    };
    Ok(Step::Filter {
        field,
        op: op.to_string(),
        literal,
    })
}

fn apply<'a>(step: &Step, value: &'a Value) -> Vec<&'a Value> {
    match step {
        Step::Field(name) => value.get(name).into_iter().collect(),
        Step::Index(i) => {
            let Some(items) = value.as_array() else {
                return Vec::new();
            };
            let index = if *i < 0 { items.len() as i64 + i } else { *i };
            usize::try_from(index)
                .ok()
                .and_then(|i| items.get(i))
                .into_iter()
                .collect()
        }
        Step::All => match value {
            Value::Array(items) => items.iter().collect(),
            Value::Object(fields) => fields.values().collect(),
            _ => Vec::new(),
        },
        Step::Filter { field, op, literal } => value
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| {
                let found = field.iter().try_fold(*item, |v, key| v.get(key));
                found.is_some_and(|found| compare(found, op, literal))
            })
            .collect(),
    }
}

fn compare(found: &Value, op: &str, literal: &Value) -> bool {
    match op {
        "==" => found == literal,
        "!=" => found != literal,
        _ => {
            let ordering = match (found.as_f64(), literal.as_f64()) {
                (Some(a), Some(b)) => a.partial_cmp(&b),
                _ => match (found.as_str(), literal.as_str()) {
                    (Some(a), Some(b)) => Some(a.cmp(b)),
                    _ => None,
                },
            };
            ordering.is_some_and(|o| match op {
                "<" => o.is_lt(),
                ">" => o.is_gt(),
                "<=" => o.is_le(),
                _ => o.is_ge(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_find_what_client_go_finds() {
        let object = json!({
            "metadata": {"labels": {"app": "web", "a.b/c": "x"}},
            "spec": {"replicas": 3, "items": [{"name": "a", "n": 1}, {"name": "b", "n": 5}]},
            "status": {"conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True"},
            ]},
        });
        let cases: &[(&str, Value)] = &[
            (".spec.replicas", json!([3])),
            (".metadata.labels.app", json!(["web"])),
            (".metadata.labels['a.b/c']", json!(["x"])),
            (".spec.items[0].name", json!(["a"])),
            (".spec.items[-1].name", json!(["b"])),
            (".spec.items[*].name", json!(["a", "b"])),
            (".spec.items[?(@.n > 2)].name", json!(["b"])),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                json!(["True"]),
            ),
            (
                ".status.conditions[?(@.type=='Synced')].status",
                json!(["False"]),
            ),
            (".spec.missing", json!([])),
            (".spec.items[7]", json!([])),
        ];
        for (path, want) in cases {
            let found: Vec<Value> = JsonPath::parse(path)
                .unwrap()
                .find(&object)
                .into_iter()
                .cloned()
                .collect();
            assert_eq!(Value::from(found), *want, "{path}");
        }
        for bad in ["spec", ".spec[", ".spec[x]", ".a[?(b)]"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }
}
