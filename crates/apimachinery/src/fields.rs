//! Field selectors (k8s.io/apimachinery/pkg/fields): the `fieldSelector` query syntax
//! (`field=value`, `field==value`, `field!=value`, joined by `,`, with `\` escaping `\`, `,`
//! and `=` in values), matching, and printing back.
//!
//! Which fields a resource supports is the resource's business: callers check
//! `requirements()` (or `transform`) and answer with `field_label_not_supported` or
//! `unknown_field_selector`, the two texts upstream uses.

use std::fmt;

use crate::gofmt::quote;
pub use crate::selection::Operator;

/// One term of a field selector: `field=value` (operator `Equals`) or `field!=value`
/// (`NotEquals`); `==` parses as `Equals`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The field, e.g. `metadata.name`.
    pub field: String,
    /// `Equals` or `NotEquals`.
    pub operator: Operator,
    /// The unescaped value.
    pub value: String,
}

impl Requirement {
    /// Whether the field's value satisfies the term; a missing field has the value `""`.
    fn matches(&self, value: Option<String>) -> bool {
        let value = value.unwrap_or_default();
        (value == self.value) == (self.operator == Operator::Equals)
    }
}

/// `field=value` or `field!=value`, the value escaped.
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.operator == Operator::NotEquals {
            "!="
        } else {
            "="
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A field selector: terms that must all hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// The selector that matches everything (the empty selector).
    pub fn everything() -> Self {
        Selector::default()
    }

    /// The selector that matches nothing.
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses the `fieldSelector` syntax (upstream's `fields.ParseSelector`). Terms are
    /// kept in the sorted order of their text; terms with neither field nor value (`=`) are
    /// dropped. The error is upstream's text.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((field, op, raw)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            let value = unescape_value(raw)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            let operator = if op == "!=" {
                Operator::NotEquals
            } else {
                Operator::Equals
            };
            requirements.push(Requirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// A selector of one `field=value` term.
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        let term = Requirement {
            field: field.into(),
            operator: Operator::Equals,
            value: value.into(),
        };
        Selector {
            requirements: vec![term],
            nothing: false,
        }
    }

    /// True for the empty (match-everything) selector.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// The terms.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether an object satisfies every term; `get` returns a field's value, `None` (which
    /// counts as `""`) when the object has none.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(get(&r.field)))
    }

    /// The value a field must have for this selector to match, when a `=` term pins it.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == Operator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Rewrites every term's field and value (upstream's `Transform`, through which the
    /// server converts and rejects field labels); terms that become empty are dropped.
    pub fn transform(
        &self,
        f: impl Fn(&str, &str) -> Result<(String, String), String>,
    ) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for r in &self.requirements {
            let (field, value) = f(&r.field, &r.value)?;
            if !(field.is_empty() && value.is_empty()) {
                requirements.push(Requirement {
                    field,
                    operator: r.operator,
                    value,
                });
            }
        }
        Ok(Selector {
            requirements,
            nothing: self.nothing,
        })
    }
}

/// The canonical form, terms joined by `,`; empty for everything and nothing.
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

/// The error of resources whose supported fields are listed explicitly (all core types and
/// custom resources): `field label not supported: <field>`.
pub fn field_label_not_supported(field: &str) -> String {
    format!("field label not supported: {field}")
}

/// The error of resources that support only the default fields:
/// `"<field>" is not a known field selector: only "metadata.name", "metadata.namespace"`.
pub fn unknown_field_selector(field: &str) -> String {
    format!(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        quote(field)
    )
}

/// The field conversion of resources without their own (upstream's
/// `DefaultMetaV1FieldSelectorConversion`): `metadata.name` and `metadata.namespace` only.
pub fn default_field_label_conversion(
    field: &str,
    value: &str,
) -> Result<(String, String), String> {
    match field {
        "metadata.name" | "metadata.namespace" => Ok((field.to_string(), value.to_string())),
        _ => Err(unknown_field_selector(field)),
    }
}

/// Escapes `\`, `,` and `=` in a value with a backslash.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Undoes `escape_value`; an unescaped `,` or `=` or another escape is an error, with
/// upstream's texts (which print the offending character as its code point number).
pub fn unescape_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ));
                }
                None => return Err("invalid field selector: invalid escape sequence: \\".into()),
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Splits on commas that are not escaped.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its first operator (`!=`, `==` or `=`, tried in that order at each
/// position).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        ["!=", "==", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .map(|op| (&term[..i], op, &rest[op.len()..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn fields(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |f| map.get(f).cloned()
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
            r"x=a\,b",
            r"x=a\=b",
            r"x=a\\b",
            "a=b,b=c",
        ];
        for s in good {
            assert_eq!(Selector::parse(s).unwrap().to_string(), s, "{s}");
        }
        assert_eq!(Selector::parse("x==a").unwrap().to_string(), "x=a");
        assert_eq!(Selector::parse("z=c,a=b").unwrap().to_string(), "a=b,z=c");
        assert!(Selector::parse("=").unwrap().is_empty());
        assert_eq!(
            Selector::parse(r"x=a\,b").unwrap().requirements()[0].value,
            "a,b"
        );
    }

    #[test]
    fn parse_errors() {
        let err = |s: &str| Selector::parse(s).unwrap_err();
        assert_eq!(err("x"), "invalid selector: 'x'; can't understand 'x'");
        assert_eq!(
            err("a=b,x"),
            "invalid selector: 'a=b,x'; can't understand 'x'"
        );
        assert_eq!(
            err("x=a||y=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            err("x==a==b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            err(r"x=a\b"),
            r"invalid field selector: invalid escape sequence: \b"
        );
        assert_eq!(
            err(r"x=a\"),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            err(r"x=\!"),
            r"invalid field selector: invalid escape sequence: \!"
        );
    }

    #[test]
    fn matching() {
        let yes = |s: &str, f: &[(&str, &str)]| {
            assert!(Selector::parse(s).unwrap().matches(fields(f)), "{s}")
        };
        let no = |s: &str, f: &[(&str, &str)]| {
            assert!(!Selector::parse(s).unwrap().matches(fields(f)), "{s}")
        };
        yes("", &[("x", "y")]);
        yes("x=y", &[("x", "y")]);
        yes("x=y,z=w", &[("x", "y"), ("z", "w")]);
        yes("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
        yes("x=", &[]);
        yes("x!=y", &[]);
        no("x=y", &[("x", "z")]);
        no("x=y,z=w", &[("x", "w"), ("z", "w")]);
        no("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
        no("x=y", &[]);
        assert!(!Selector::nothing().matches(fields(&[])));
    }

    #[test]
    fn exact_match_and_transform() {
        let sel = Selector::parse("metadata.name=x,status.phase!=Running").unwrap();
        assert_eq!(sel.requires_exact_match("metadata.name"), Some("x"));
        assert_eq!(sel.requires_exact_match("status.phase"), None);
        assert_eq!(
            sel.transform(default_field_label_conversion).unwrap_err(),
            r#""status.phase" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        let renamed = Selector::parse("spec.host=n1").unwrap();
        let renamed =
            renamed.transform(|f, v| Ok((f.replace("spec.host", "spec.nodeName"), v.into())));
        assert_eq!(renamed.unwrap().to_string(), "spec.nodeName=n1");
        assert_eq!(
            field_label_not_supported("spec.foo"),
            "field label not supported: spec.foo"
        );
        assert_eq!(
            Selector::one_term_equal("metadata.name", "a,b").to_string(),
            r"metadata.name=a\,b"
        );
    }
}
