//! The runtime cost limits of `x-kubernetes-validations`: one evaluation of a rule may cost
//! at most [`PER_CALL_LIMIT`], and all evaluations for one object at most [`RUNTIME_BUDGET`]
//! (upstream's PerCallLimit and RuntimeCELCostBudget).
//!
//! cel-rust does not count the cost of an evaluation as cel-go does, so each rule is charged,
//! before anything is evaluated, the cost model of [`super::cost`] with the sizes of the
//! values in the object instead of the schema's bounds: the most an evaluation over these
//! values can cost. An object whose rules could exceed a limit is refused with upstream's
//! message, and none of its rules is evaluated.

use serde_json::Value;

use super::cost::{Node, Sizes, Step, cost_of};
use super::tree::RuleNode;

/// The most one evaluation of one rule may cost.
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most all the rules' evaluations for one object may cost.
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;

/// A rule over a limit: the field path of its schema node and upstream's message.
pub(crate) struct Exceeded {
    pub field_path: String,
    pub message: String,
}

/// The first rule of `rules` whose evaluation on `object` could exceed a limit.
pub(super) fn check(rules: &RuleNode, object: &Value) -> Option<Exceeded> {
    let mut remaining = RUNTIME_BUDGET;
    walk(rules, object, String::new(), &mut remaining)
}

fn walk(node: &RuleNode, value: &Value, path: String, remaining: &mut u64) -> Option<Exceeded> {
    if value.is_null() {
        return None;
    }
    let own = node
        .own
        .iter()
        .flat_map(|own| own.validations.iter().flatten());
    for result in own {
        let cost = cost_of(&result.program.expression().expr, &Values(value));
        let exceeded = |message: String| Exceeded {
            field_path: path.clone(),
            message,
        };
        if cost > PER_CALL_LIMIT {
            let rule = result.rule.message.as_deref().filter(|m| !m.is_empty());
            let rule = rule.unwrap_or(&result.rule.rule).trim();
            return Some(exceeded(format!(
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"
            )));
        }
        if cost > *remaining {
            return Some(exceeded(
                "validation failed due to running out of cost budget, no further validation rules will be run".into(),
            ));
        }
        *remaining -= cost;
    }
    let at = |key: &str| match path.as_str() {
        "" => key.to_string(),
        path => format!("{path}.{key}"),
    };
    match value {
        Value::Object(map) => {
            for (name, child) in &node.properties {
                if let Some(v) = map.get(name)
                    && let Some(exceeded) = walk(child, v, at(name), remaining)
                {
                    return Some(exceeded);
                }
            }
            if let Some(values) = &node.values {
                for (key, v) in map {
                    if let Some(exceeded) = walk(values, v, format!("{path}[{key}]"), remaining) {
                        return Some(exceeded);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(schema) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    if let Some(exceeded) = walk(schema, item, format!("{path}[{i}]"), remaining) {
                        return Some(exceeded);
                    }
                }
            }
        }
        _ => {}
    }
    None
}

/// Sizes read off a value: at each path, the largest of the values found there.
struct Values<'a>(&'a Value);

impl Sizes for Values<'_> {
    fn node(&self, path: &[Step]) -> Option<Node> {
        let mut found = vec![self.0];
        for (i, step) in path.iter().enumerate() {
            found = match step {
                Step::Field(name) => found.iter().filter_map(|v| v.get(name)).collect(),
                Step::Elements => found.iter().flat_map(|v| elements(v)).collect(),
                Step::Keys if i + 1 == path.len() => {
                    let longest = found
                        .iter()
                        .filter_map(|v| v.as_object())
                        .flat_map(|m| m.keys())
                        .map(|k| k.len() as u64)
                        .max()?;
                    return Some(Node {
                        max_elements: longest,
                        string: true,
                        list: false,
                    });
                }
                Step::Keys => return None,
            };
        }
        let first = found.first()?;
        Some(Node {
            max_elements: found.iter().map(|v| size(v)).max().unwrap_or(0),
            string: first.is_string(),
            list: first.is_array(),
        })
    }
}

/// The elements of a list or the values of a map.
fn elements(value: &Value) -> Box<dyn Iterator<Item = &Value> + '_> {
    match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => Box::new(std::iter::empty()),
    }
}

/// The size CEL's `size()` gives a value (bytes for strings, an upper bound of characters).
fn size(value: &Value) -> u64 {
    match value {
        Value::Array(items) => items.len() as u64,
        Value::Object(map) => map.len() as u64,
        Value::String(text) => text.len() as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(rule: &str) -> RuleNode {
        RuleNode::build(
            &json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": rule}]}}}}}),
        )
        .expect("rules")
    }

    fn names(n: usize) -> Value {
        let names: Vec<String> = (0..n).map(|i| format!("name-{i}")).collect();
        json!({"spec": {"names": names}})
    }

    #[test]
    fn small_objects_pass() {
        let compiled = schema("self.all(a, self.exists_one(b, a == b))");
        assert!(check(&compiled, &names(100)).is_none());
    }

    #[test]
    fn an_evaluation_over_the_call_limit_is_refused() {
        let compiled = schema("self.all(a, self.exists_one(b, a == b))");
        let exceeded = check(&compiled, &names(2_000)).expect("over the limit");
        assert_eq!(exceeded.field_path, "spec.names");
        assert_eq!(
            exceeded.message,
            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(a, self.exists_one(b, a == b))"
        );
    }

    #[test]
    fn evaluations_share_one_budget() {
        let compiled = RuleNode::build(&json!({"type": "object", "properties": {"items": {
            "type": "array", "items": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(a, self.all(b, a.size() + b.size() < 100))"}]}}}}))
            .expect("rules");
        let row: Vec<String> = (0..300).map(|i| i.to_string()).collect();
        let one = json!({"items": [row]});
        assert!(check(&compiled, &one).is_none());
        let many = json!({"items": vec![row; 40]});
        let exceeded = check(&compiled, &many).expect("over the budget");
        assert!(
            exceeded
                .message
                .starts_with("validation failed due to running out of cost budget")
        );
    }
}
