//! Resource quantities as quotas add and compare them: exact in thousandths, printed in
//! the canonical form resource.Quantity prints (`500m`, `2`, `128Mi`, `1k`).

use std::fmt;
use std::ops::{Add, Sub};

use crate::workloads::qos::parse_quantity;

/// A quantity, in thousandths of its unit, and whether it prints with binary suffixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Amount {
    millis: i128,
    binary: bool,
}

impl Amount {
    /// Parses `100m`, `2`, `1.5Gi`, `1e3`; `None` when it is not a quantity.
    pub fn parse(text: &str) -> Option<Amount> {
        let value = parse_quantity(text)?;
        Some(Amount {
            millis: (value * 1000.0).round() as i128,
            binary: text.trim().ends_with('i'),
        })
    }

    /// A count of objects.
    pub fn count(n: i128) -> Amount {
        Amount {
            millis: n * 1000,
            binary: false,
        }
    }

    /// The value in units (for ratios).
    pub fn as_f64(&self) -> f64 {
        self.millis as f64 / 1000.0
    }

    /// The amount rounded up to whole units (claims' storage counts whole bytes).
    pub fn round_up(self) -> Amount {
        Amount {
            millis: (self.millis + 999).div_euclid(1000) * 1000,
            ..self
        }
    }

    /// Zero, printed as `like` prints.
    pub fn zero_like(like: &Amount) -> Amount {
        Amount {
            millis: 0,
            binary: like.binary,
        }
    }
}

/// The quantities of a resource list (`{"cpu": "500m", ...}`), those that parse.
pub fn amounts(list: &serde_json::Value) -> std::collections::BTreeMap<String, Amount> {
    list.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str().and_then(Amount::parse)?)))
        .collect()
}

impl Add for Amount {
    type Output = Amount;

    fn add(self, other: Amount) -> Amount {
        Amount {
            millis: self.millis + other.millis,
            binary: self.binary || other.binary,
        }
    }
}

impl Sub for Amount {
    type Output = Amount;

    fn sub(self, other: Amount) -> Amount {
        Amount {
            millis: self.millis - other.millis,
            binary: self.binary || other.binary,
        }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.millis % 1000 != 0 {
            return write!(f, "{}m", self.millis);
        }
        let units = self.millis / 1000;
        let suffixes: &[(&str, i128)] = if self.binary {
            &[
                ("Ei", 1 << 60),
                ("Pi", 1 << 50),
                ("Ti", 1 << 40),
                ("Gi", 1 << 30),
                ("Mi", 1 << 20),
                ("Ki", 1 << 10),
            ]
        } else {
            &[
                ("E", 10i128.pow(18)),
                ("P", 10i128.pow(15)),
                ("T", 10i128.pow(12)),
                ("G", 10i128.pow(9)),
                ("M", 10i128.pow(6)),
                ("k", 1000),
            ]
        };
        match suffixes
            .iter()
            .find(|(_, size)| units != 0 && units % size == 0)
        {
            Some((suffix, size)) => write!(f, "{}{suffix}", units / size),
            None => write!(f, "{units}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_add_and_print_canonically() {
        let sum =
            |a: &str, b: &str| (Amount::parse(a).unwrap() + Amount::parse(b).unwrap()).to_string();
        assert_eq!(sum("250m", "250m"), "500m");
        assert_eq!(sum("500m", "500m"), "1");
        assert_eq!(sum("64Mi", "64Mi"), "128Mi");
        assert_eq!(sum("512Mi", "512Mi"), "1Gi");
        assert_eq!(sum("1", "999"), "1k");
        assert_eq!(Amount::count(0).to_string(), "0");
        assert!(Amount::parse("2").unwrap() > Amount::parse("1500m").unwrap());
        assert!(Amount::parse("x").is_none());
    }
}
