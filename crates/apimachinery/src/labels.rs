//! Label selectors (k8s.io/apimachinery/pkg/labels): parsing the `labelSelector` query
//! syntax, converting a metav1 `LabelSelector`, matching, and printing back.
//!
//! The grammar, the canonical form and every error text are upstream's, including its
//! quirks: a malformed key reports the field `<nil>`, `gt`/`lt` are spelled `>`/`<`, and
//! `in (a,a)` keeps each value once, sorted.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde_json::{Map, Value};

pub use crate::selection::Operator;
use crate::validation::field::{FieldError, FieldErrors, Path};
use crate::validation::{is_qualified_name, is_valid_label_value};

/// Something that has labels: a key lookup.
pub trait Labels {
    /// The value of a label, if present.
    fn get_label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Labels for HashMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// A JSON `metadata.labels` object; entries that are not strings are ignored.
impl Labels for Map<String, Value> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// A possibly absent JSON `metadata.labels` object.
impl Labels for Option<&Map<String, Value>> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.and_then(|m| m.get_label(key))
    }
}

/// A JSON value holding `metadata.labels`; anything but an object has no labels.
impl Labels for Value {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.as_object().and_then(|m| m.get_label(key))
    }
}

/// An object's labels as caches hold them, in two allocations whatever their number: every
/// key and value, sorted by key, in one string, and where each ends. A cache holds one set
/// per object; a slice of `String` pairs costs an allocation per key and per value besides the
/// slice (about 150 bytes for two short labels, against about 70).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSet {
    /// The keys and values in key order: key, value, key, value...
    text: Box<str>,
    /// Where each key and each value ends in `text`.
    ends: Box<[u32]>,
}

impl LabelSet {
    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let (mut low, mut high) = (0, self.ends.len() / 2);
        while low < high {
            let mid = (low + high) / 2;
            match self.part(2 * mid).cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(self.part(2 * mid + 1)),
            }
        }
        None
    }

    /// The labels, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.ends.len() / 2).map(|i| (self.part(2 * i), self.part(2 * i + 1)))
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The string labels of a JSON `metadata.labels` (anything else has none).
    pub fn of(labels: &Value) -> LabelSet {
        let Some(map) = labels.as_object() else {
            return LabelSet::default();
        };
        let pairs = map
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)));
        LabelSet::sorted(pairs.collect())
    }

    /// The `n`th key or value.
    fn part(&self, n: usize) -> &str {
        let start = match n {
            0 => 0,
            n => self.ends[n - 1] as usize,
        };
        &self.text[start..self.ends[n] as usize]
    }

    /// The set of `pairs`, sorted by key; of pairs with the same key, the last.
    fn sorted<K: AsRef<str>, V: AsRef<str>>(mut pairs: Vec<(K, V)>) -> LabelSet {
        pairs.reverse();
        pairs.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        pairs.dedup_by(|later, kept| later.0.as_ref() == kept.0.as_ref());
        let mut text = String::new();
        let mut ends = Vec::with_capacity(2 * pairs.len());
        for part in pairs.iter().flat_map(|(k, v)| [k.as_ref(), v.as_ref()]) {
            text.push_str(part);
            // Labels are far shorter than 4 GiB: an object is at most a few MiB.
            ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
        }
        LabelSet {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }
}

impl FromIterator<(String, String)> for LabelSet {
    /// The pairs sorted by key; of pairs with the same key, the last.
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        LabelSet::sorted(pairs.into_iter().collect())
    }
}

impl Labels for LabelSet {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// One condition of a selector: a key, an operator and values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

/// Collects field errors into upstream's aggregate message.
fn aggregate(errs: FieldErrors) -> Result<(), String> {
    errs.aggregate_message().map_or(Ok(()), Err)
}

impl Requirement {
    /// Builds a validated requirement (upstream's `NewRequirement`): the key must be a
    /// qualified name, the values valid label values, and their number fit the operator.
    /// The error is upstream's aggregate message, e.g.
    /// `values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, String> {
        let mut errs = FieldErrors::new();
        let key_errs = is_qualified_name(key);
        if !key_errs.is_empty() {
            errs.push(FieldError::invalid(
                &Path::root("key"),
                key,
                key_errs.join("; "),
            ));
        }
        let values_path = Path::root("values");
        let as_json = || -> Value {
            if values.is_empty() {
                Value::Null
            } else {
                values.clone().into()
            }
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(FieldError::invalid(
                &values_path,
                as_json(),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(FieldError::invalid(
                    &values_path,
                    as_json(),
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(FieldError::invalid(
                    &values_path,
                    as_json(),
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid(
                        &values_path,
                        as_json(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid(
                            &values_path.index(i),
                            v.as_str(),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                let path = values_path.index(i).key(key);
                errs.push(FieldError::invalid(&path, v.as_str(), msgs.join("; ")));
            }
        }
        aggregate(errs)?;
        Ok(Requirement {
            key: key.to_string(),
            operator,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a set of labels satisfies this requirement. A missing label fails `=`, `in`,
    /// `>` and `<` and satisfies `!=` and `notin`; `>`/`<` compare 64-bit integers and fail
    /// on anything else.
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        let value = labels.get_label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn | Operator::NotEquals => {
                value.is_none_or(|v| !self.values.iter().any(|x| x == v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [bound]) = (value, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(actual), Ok(bound)) = (actual.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

/// The canonical form: `!k`, `k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
/// `k>5`, `k<5`, with several values sorted.
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        let mut values = self.values.clone();
        values.sort();
        let values = values.join(",");
        match self.operator {
            Operator::In | Operator::NotIn => write!(f, "{op}({values})"),
            _ => write!(f, "{op}{values}"),
        }
    }
}

/// A label selector: requirements that must all hold, sorted by key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// The selector that matches everything (the empty selector).
    pub fn everything() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: false,
        }
    }

    /// The selector that matches nothing (what a missing metav1 LabelSelector means).
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// A selector of the given requirements, sorted by key.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector {
            requirements,
            nothing: false,
        }
    }

    /// Parses the `labelSelector` syntax (upstream's `labels.Parse`), e.g.
    /// `env in (prod,qa),tier!=web,!legacy,release`. The error is upstream's text.
    pub fn parse(s: &str) -> Result<Self, String> {
        Parser::new(s).parse().map(Selector::from_requirements)
    }

    /// True for the empty (match-everything) selector.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a set of labels satisfies every requirement.
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The value a label must have for this selector to match, when it pins one (upstream's
    /// `RequiresExactMatch`): the first requirement on the key is `=`, `==` or a
    /// single-valued `in`.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl Default for Selector {
    fn default() -> Self {
        Selector::everything()
    }
}

/// The canonical form, requirements joined by `,`; empty for everything and nothing.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Converts a metav1 `LabelSelector` (`{"matchLabels":{..},"matchExpressions":[..]}`) to a
/// selector, as upstream's `LabelSelectorAsSelector`: `null` matches nothing, an empty
/// selector matches everything, operators are `In`, `NotIn`, `Exists`, `DoesNotExist`.
pub fn from_label_selector(selector: &Value) -> Result<Selector, String> {
    if selector.is_null() {
        return Ok(Selector::nothing());
    }
    let empty = Map::new();
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    let expressions = expressions.map_or(&[][..], Vec::as_slice);
    if match_labels.is_empty() && expressions.is_empty() {
        return Ok(Selector::everything());
    }
    let mut requirements = Vec::new();
    for (key, value) in match_labels {
        let value = value.as_str().unwrap_or_default().to_string();
        requirements.push(Requirement::new(key, Operator::Equals, vec![value])?);
    }
    for expression in expressions {
        let text = |k: &str| {
            expression
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let operator = match text("operator") {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(format!(
                    "{} is not a valid label selector operator",
                    crate::gofmt::quote(other)
                ));
            }
        };
        let values = expression.get("values").and_then(Value::as_array);
        let values = values.map_or(&[][..], Vec::as_slice);
        let values = values
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect();
        requirements.push(Requirement::new(text("key"), operator, values)?);
    }
    Ok(Selector::from_requirements(requirements))
}

/// The lexer's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The token a literal spells, if any.
fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// Whitespace between tokens.
fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Characters that form operators and punctuation.
fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens. A NUL byte ends the input, as upstream's lexer does.
fn lex(s: &str) -> Vec<(Token, String)> {
    let b = s.as_bytes();
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let mut pos = 0;
    let mut items = Vec::new();
    loop {
        while pos < end && is_whitespace(b[pos]) {
            pos += 1;
        }
        if pos == end {
            items.push((Token::EndOfString, String::new()));
            return items;
        }
        let start = pos;
        if is_special(b[pos]) {
            // The longest run of special characters that is still a keyword.
            let mut best = None;
            while pos < end && is_special(b[pos]) {
                match keyword(&s[start..=pos]) {
                    Some(t) => best = Some((t, pos + 1)),
                    None if best.is_some() => break,
                    None => {}
                }
                pos += 1;
            }
            let (token, stop) = best.expect("every single special character is a keyword");
            pos = stop;
            items.push((token, s[start..stop].to_string()));
        } else {
            while pos < end && !is_special(b[pos]) && !is_whitespace(b[pos]) {
                pos += 1;
            }
            let literal = &s[start..pos];
            items.push((
                keyword(literal).unwrap_or(Token::Identifier),
                literal.to_string(),
            ));
        }
    }
}

/// Whether `in`/`notin` read as operators (after a key) or as plain identifiers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// Upstream's recursive-descent parser over the token list.
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(s: &str) -> Self {
        Parser {
            items: lex(s),
            position: 0,
        }
    }

    /// The token at `i` as seen in `context`.
    fn token_at(&self, i: usize, context: Context) -> (Token, String) {
        let (token, literal) = self.items[i].clone();
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.token_at(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        self.position += 1;
        self.token_at(self.position - 1, context)
    }

    /// The whole selector: requirements separated by commas.
    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(&key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, operator, values.into_iter().collect())
    }

    /// The key and, when it alone makes the requirement, its operator: `DoesNotExist` after
    /// a `!`, `Exists` when a comma or the end follows.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errs = is_qualified_name(&literal);
        if !errs.is_empty() {
            // Upstream validates the key against a nil path here, which prints as `<nil>`.
            let path = Path::root("<nil>");
            return Err(FieldError::invalid(&path, literal.as_str(), errs.join("; ")).to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(a,b,...)`: a set, so sorted and without repeats; empty entries are empty strings.
    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// The single value after `=`, `==`, `!=`, `>` or `<`; empty when none follows.
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if token == Token::EndOfString || token == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            return Ok(BTreeSet::from([literal]));
        }
        Err(format!("found '{literal}', expected: identifier"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_label_set_keeps_the_last_value_of_a_key_and_finds_by_key() {
        let set: LabelSet = [("b", "1"), ("a", "2"), ("b", "3")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(set.iter().collect::<Vec<_>>(), [("a", "2"), ("b", "3")]);
        assert_eq!(
            (set.get("a"), set.get("b"), set.get("c")),
            (Some("2"), Some("3"), None)
        );
        let of = LabelSet::of(&json!({"x": "y", "n": 1}));
        assert_eq!(of.iter().collect::<Vec<_>>(), [("x", "y")]);
        assert!(LabelSet::of(&Value::Null).is_empty());
        let keys = ["a", "b/c", "d", "e.f/g", "h", "i", "j"];
        let many = LabelSet::of(&Value::Object(
            keys.iter().map(|k| (k.to_string(), json!(""))).collect(),
        ));
        for key in keys {
            assert_eq!(many.get(key), Some(""), "{key}");
        }
        for missing in ["", "0", "b", "dd", "z"] {
            assert_eq!(many.get(missing), None, "{missing}");
        }
        let selector = Selector::parse("x=y").unwrap();
        assert!(selector.matches(&of));
    }

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement::new(key, op, values.iter().map(|v| v.to_string()).collect()).unwrap()
    }

    #[test]
    fn parse_round_trips() {
        let good = [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ];
        for s in good {
            assert_eq!(
                Selector::parse(s).unwrap().to_string(),
                s.replace(' ', ""),
                "{s}"
            );
        }
        for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(Selector::parse(s).is_err(), "{s}");
        }
        assert_eq!(
            Selector::parse("x=a,a=x").unwrap().to_string(),
            Selector::parse("a=x,x=a").unwrap().to_string()
        );
    }

    #[test]
    fn lexer() {
        use Token::*;
        let cases: &[(&str, &[Token])] = &[
            ("", &[EndOfString]),
            ("~", &[Identifier, EndOfString]),
            ("||", &[Identifier, EndOfString]),
            ("!=", &[NotEquals, EndOfString]),
            (
                "key in ( value1, value2 )",
                &[
                    Identifier,
                    In,
                    OpenPar,
                    Identifier,
                    Comma,
                    Identifier,
                    ClosedPar,
                    EndOfString,
                ],
            ),
            ("!key", &[DoesNotExist, Identifier, EndOfString]),
            (
                "x in (),y",
                &[
                    Identifier,
                    In,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Identifier,
                    EndOfString,
                ],
            ),
            (
                "== != (), = notin",
                &[
                    DoubleEquals,
                    NotEquals,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Equals,
                    NotIn,
                    EndOfString,
                ],
            ),
            ("key>2", &[Identifier, GreaterThan, Identifier, EndOfString]),
            ("key<1", &[Identifier, LessThan, Identifier, EndOfString]),
            ("a\0=b", &[Identifier, EndOfString]),
        ];
        for (s, tokens) in cases {
            let got: Vec<Token> = lex(s).into_iter().map(|(t, _)| t).collect();
            assert_eq!(&got, tokens, "{s:?}");
        }
    }

    #[test]
    fn matching() {
        let yes = |s: &str, l: &[(&str, &str)]| {
            assert!(Selector::parse(s).unwrap().matches(&set(l)), "{s}")
        };
        let no = |s: &str, l: &[(&str, &str)]| {
            assert!(!Selector::parse(s).unwrap().matches(&set(l)), "{s}")
        };
        yes("", &[("x", "y")]);
        yes("x=y", &[("x", "y")]);
        yes("x=y,z=w", &[("x", "y"), ("z", "w")]);
        yes("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
        yes("notin=in", &[("notin", "in")]);
        yes("x", &[("x", "z")]);
        yes("!x", &[("y", "z")]);
        yes("x>1", &[("x", "2")]);
        yes("x<1", &[("x", "0")]);
        no("x=z", &[]);
        no("x=y", &[("x", "z")]);
        no("x=y,z=w", &[("x", "w"), ("z", "w")]);
        no("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
        no("x", &[("y", "z")]);
        no("!x", &[("x", "z")]);
        no("x>1", &[("x", "0")]);
        no("x<1", &[("x", "2")]);
        no("z>1", &[("z", "v2")]);
        yes("x notin (),y", &[("y", "")]);
        no("x in ()", &[("y", "baz")]);
        yes("env in (prod, qa)", &[("env", "qa")]);
    }

    #[test]
    fn matching_json_labels() {
        let sel = Selector::parse("app=web,!legacy").unwrap();
        let meta = json!({"labels": {"app": "web", "n": 1}});
        assert!(sel.matches(&meta["labels"]));
        assert!(sel.matches(&meta["labels"].as_object()));
        assert!(!sel.matches(&json!({})["labels"]));
        assert!(
            Selector::parse("!app")
                .unwrap()
                .matches(&None::<&Map<String, Value>>)
        );
        assert!(!Selector::parse("n").unwrap().matches(&meta["labels"]));
        assert!(Selector::everything().matches(&Value::Null));
        assert!(!Selector::nothing().matches(&set(&[])));
    }

    #[test]
    fn parsed_structure() {
        let cases: Vec<(&str, Vec<Requirement>)> = vec![
            ("\rx", vec![req("x", Operator::Exists, &[])]),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                vec![req(
                    "0.1.2.domain/99",
                    Operator::NotIn,
                    &["10.10.100.1", "tick.tack.clock"],
                )],
            ),
            ("foo  in\t (abc)", vec![req("foo", Operator::In, &["abc"])]),
            ("x notin\n (abc)", vec![req("x", Operator::NotIn, &["abc"])]),
            ("x in (abc,)", vec![req("x", Operator::In, &["", "abc"])]),
            ("x in (abc,abc)", vec![req("x", Operator::In, &["abc"])]),
            ("x in ()", vec![req("x", Operator::In, &[""])]),
            (
                "x in (a,,a,,a,,a,,)",
                vec![req("x", Operator::In, &["", "a"])],
            ),
            ("x notin (, a)", vec![req("x", Operator::NotIn, &["", "a"])]),
            (
                "x notin (abc,,def),bar,z in (),w",
                vec![
                    req("bar", Operator::Exists, &[]),
                    req("w", Operator::Exists, &[]),
                    req("x", Operator::NotIn, &["", "abc", "def"]),
                    req("z", Operator::In, &[""]),
                ],
            ),
            ("a ", vec![req("a", Operator::Exists, &[])]),
            (
                "a in (x,y,notin, z,in)",
                vec![req("a", Operator::In, &["in", "notin", "x", "y", "z"])],
            ),
            ("x==a", vec![req("x", Operator::DoubleEquals, &["a"])]),
        ];
        for (s, want) in cases {
            assert_eq!(
                Selector::parse(s).unwrap().requirements(),
                want.as_slice(),
                "{s}"
            );
        }
        for s in [
            "x,,y",
            ",x,y",
            "x nott in (y)",
            "a in (xyz),",
            "a in (xyz)b notin ()",
            "a in (xyz abc)",
            "a notin(",
            "a (",
            "(",
        ] {
            assert!(Selector::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn parse_error_texts() {
        let err = |s: &str| Selector::parse(s).unwrap_err();
        assert_eq!(
            err("x=a||y=b"),
            "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            err("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            err("x==a==b"),
            "found '==', expected: ',' or 'end of string'"
        );
        assert_eq!(err("!x=a"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(err("x,,y"), "found ',', expected: identifier after ','");
        assert_eq!(
            err(",x"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            err("x<a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            err("a in (xyz abc)"),
            "unable to parse requirement: found 'abc', expected: ',' or ')'"
        );
        assert_eq!(
            err("a notin("),
            "unable to parse requirement: found '', expected: ',', ')' or identifier"
        );
        assert_eq!(
            err("a in x"),
            "unable to parse requirement: found 'x' expected: '('"
        );
        assert_eq!(
            err("a in (x,=)"),
            "unable to parse requirement: found '=', expected: ',', or identifier"
        );
        assert_eq!(
            err("a==("),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert!(Selector::parse("a==").is_ok());
        assert!(err("a/b/c=x").starts_with("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist"));
        assert_eq!(
            err("!=x"),
            "found '!=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            err("!!x"),
            "unable to parse requirement: found '!', expected: identifier"
        );
    }

    #[test]
    fn requirement_constructor() {
        let err = |k: &str, op, v: &[&str]| {
            Requirement::new(k, op, v.iter().map(|s| s.to_string()).collect()).unwrap_err()
        };
        assert_eq!(
            err("x1", Operator::In, &[]),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            err("x5", Operator::Equals, &["bar", "foo"]),
            r#"values: Invalid value: ["bar","foo"]: exact-match compatibility requires one single value"#
        );
        assert_eq!(
            err("x8", Operator::Exists, &["foo"]),
            r#"values: Invalid value: ["foo"]: values set must be empty for exists and does not exist"#
        );
        assert_eq!(
            err("x13", Operator::GreaterThan, &[]),
            "values: Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is required"
        );
        assert_eq!(
            err("x14", Operator::GreaterThan, &["bar"]),
            r#"values[0]: Invalid value: "bar": for 'Gt', 'Lt' operators, the value must be an integer"#
        );
        assert!(
            err(&"a".repeat(254), Operator::Exists, &[]).starts_with(r#"key: Invalid value: "aaa"#)
        );
        assert!(
            err("x17", Operator::Equals, &["a b"])
                .starts_with(r#"values[0][x17]: Invalid value: "a b": a valid label"#)
        );
        let two = err("x", Operator::Equals, &["a b", "c"]);
        assert!(two.starts_with(r#"[values: Invalid value: ["a b","c"]: exact-match compatibility requires one single value, values[0][x]: Invalid value: "a b""#));
        for (k, op, v) in [
            ("x3", Operator::In, &["foo"][..]),
            ("x6", Operator::Exists, &[]),
            ("x7", Operator::DoesNotExist, &[]),
            ("x12", Operator::LessThan, &["6"]),
        ] {
            assert!(Requirement::new(k, op, v.iter().map(|s| s.to_string()).collect()).is_ok());
        }
    }

    #[test]
    fn to_string() {
        let cases = [
            (
                vec![
                    req("x", Operator::In, &["def", "abc"]),
                    req("y", Operator::NotIn, &["jkl"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x in (abc,def),y notin (jkl),z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc", "def"]),
                    req("y", Operator::NotEquals, &["jkl"]),
                    req("z", Operator::DoesNotExist, &[]),
                ],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc"]),
                    req("y", Operator::In, &["jkl", "mno"]),
                    req("z", Operator::NotIn, &[""]),
                ],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                vec![
                    req("x", Operator::Equals, &["abc"]),
                    req("y", Operator::DoubleEquals, &["jkl"]),
                    req("z", Operator::NotEquals, &["a"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x=abc,y==jkl,z!=a,z",
            ),
            (
                vec![
                    req("x", Operator::GreaterThan, &["2"]),
                    req("y", Operator::LessThan, &["8"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x>2,y<8,z",
            ),
        ];
        for (reqs, want) in cases {
            assert_eq!(Selector::from_requirements(reqs).to_string(), want);
        }
        assert!(Selector::everything().is_empty());
        assert!(Selector::parse("").unwrap().is_empty());
        assert!(!Selector::nothing().is_empty());
    }

    #[test]
    fn exact_match() {
        let sel = Selector::parse("a=1,b in (2),c in (3,4),d!=5").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("2"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        assert_eq!(sel.requires_exact_match("e"), None);
    }

    #[test]
    fn metav1_label_selector() {
        assert!(from_label_selector(&Value::Null).unwrap().matches_nothing());
        assert!(from_label_selector(&json!({})).unwrap().is_empty());
        assert!(
            from_label_selector(&json!({"matchLabels": {}, "matchExpressions": []}))
                .unwrap()
                .is_empty()
        );
        let sel = from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "app", "operator": "Exists"},
            ],
        }))
        .unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,app,!canary,env notin (dev),tier in (be,fe)"
        );
        assert!(sel.matches(&set(&[("app", "web"), ("tier", "fe")])));
        assert!(!sel.matches(&set(&[("app", "web"), ("tier", "fe"), ("env", "dev")])));
        assert_eq!(
            from_label_selector(
                &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
            )
            .unwrap_err(),
            r#""Gt" is not a valid label selector operator"#
        );
        assert_eq!(
            from_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))
                .unwrap_err(),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
        );
        assert!(
            from_label_selector(&json!({"matchLabels": {"k": "-bad"}}))
                .unwrap_err()
                .starts_with("values[0][k]: Invalid value: \"-bad\"")
        );
    }
}
