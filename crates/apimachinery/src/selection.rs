//! The operators of label and field selectors (k8s.io/apimachinery/pkg/selection).

/// How a requirement relates a key or field to its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `!key`
    DoesNotExist,
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key in (a,b)`
    In,
    /// `key!=value`
    NotEquals,
    /// `key notin (a,b)`
    NotIn,
    /// `key`
    Exists,
    /// `key>5`
    GreaterThan,
    /// `key<5`
    LessThan,
}

impl Operator {
    /// Upstream's operator string (`!`, `=`, `==`, `in`, `!=`, `notin`, `exists`, `gt`,
    /// `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::DoesNotExist => "!",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::In => "in",
            Operator::NotEquals => "!=",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}
