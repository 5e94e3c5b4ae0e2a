//! Resource lists as quota and limit plugins read them: exact quantities by resource name.

use std::collections::BTreeMap;

use kapi_apimachinery::{Format, Quantity};
use serde_json::Value;

/// The quantities of a resource list (`{"cpu": "500m", ...}`), those that parse.
pub fn amounts(list: &Value) -> BTreeMap<String, Quantity> {
    list.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), Quantity::of_field(value)?)))
        .collect()
}

/// A count of objects, as quota counts them.
pub fn count(n: i64) -> Quantity {
    Quantity::new(n, Format::DecimalSI)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_add_and_print_canonically() {
        let parse = |text: &str| Quantity::parse(text).unwrap();
        let sum = |a: &str, b: &str| (parse(a) + parse(b)).to_string();
        assert_eq!(sum("250m", "250m"), "500m");
        assert_eq!(sum("500m", "500m"), "1");
        assert_eq!(sum("64Mi", "64Mi"), "128Mi");
        assert_eq!(sum("512Mi", "512Mi"), "1Gi");
        assert_eq!(sum("1", "999"), "1k");
        assert_eq!(count(0).to_string(), "0");
        assert!(parse("2") > parse("1500m"));
        assert!(Quantity::parse("x").is_err());
    }

    #[test]
    fn amounts_read_strings_and_numbers() {
        let list = serde_json::json!({"cpu": " 100m ", "pods": 2, "bad": "x", "none": null});
        let read = amounts(&list);
        assert_eq!(read.keys().collect::<Vec<_>>(), ["cpu", "pods"]);
        assert_eq!(read["cpu"].to_string(), "100m");
        assert_eq!(read["pods"], count(2));
    }
}
