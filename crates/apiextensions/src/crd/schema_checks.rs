//! The checks of a CRD version's schema: structural-ness (the structural-schema module's),
//! its defaults ([`super::schema_defaults`]), the OpenAPI rules of [`super::schema_rules`],
//! and the compilation of the `x-kubernetes-validations` rules (the CEL module's) with their
//! cost limits, in upstream's order.

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use super::schema_rules::{self, Strictness};

/// The errors of a version's `openAPIV3Schema` at `path`: the structural errors (when a
/// structural schema is required), then the OpenAPI rules' errors; the CEL rules are
/// compiled only when both found nothing, as upstream compiles them only on a valid
/// structural schema; then their selects must name declared fields, and they are held to the
/// cost limits (`unchanged`: an update leaves this schema as it was, so neither the fields
/// nor the per-rule cost are checked again, only the total cost).
pub(crate) fn structural_and_rules(
    schema: &Value,
    path: &Path,
    strictness: Strictness,
    unchanged: bool,
) -> FieldErrors {
    let mut errs = if strictness.structural {
        crate::schema::validate_structural(schema, path)
    } else {
        FieldErrors::new()
    };
    let structural = strictness.structural && errs.is_empty();
    let default_errs = if structural {
        super::schema_defaults::validate_defaults(schema, path, strictness.pruned_defaults)
    } else {
        FieldErrors::new()
    };
    let rule_errs = schema_rules::validate(schema, path, strictness);
    let compile = structural && default_errs.is_empty() && rule_errs.is_empty();
    errs.extend(default_errs);
    errs.extend(rule_errs);
    if !compile {
        return errs;
    }
    let mut cel_errs: Vec<FieldError> = match crate::cel::Validator::compile(schema, path) {
        Err(compile_errs) => compile_errs.into_iter().collect(),
        Ok(_) => Vec::new(),
    };
    if !unchanged {
        cel_errs.extend(crate::cel::fields::check(schema, path));
    }
    cel_errs.retain(|err| !errs.iter().any(|known| known == err));
    if cel_errs.is_empty() {
        errs.extend(crate::cel::cost::check(schema, path, unchanged));
    }
    // Per node, per rule, as upstream reports each rule's compilation result in turn.
    cel_errs.sort_by_key(|err| rule_order(&err.field));
    errs.extend(cel_errs);
    errs
}

/// Where an error of a rule sorts: by its node, its rule's index, then the rule's field
/// (rule, messageExpression, optionalOldSelf).
fn rule_order(field: &str) -> (String, usize, usize) {
    const MARK: &str = "x-kubernetes-validations[";
    let Some((node, rest)) = field.split_once(MARK) else {
        return (field.to_string(), 0, 0);
    };
    let (index, member) = rest.split_once(']').unwrap_or((rest, ""));
    let member = ["", ".rule", ".messageExpression", ".optionalOldSelf"]
        .iter()
        .position(|m| *m == member)
        .unwrap_or(4);
    (node.to_string(), index.parse().unwrap_or(0), member)
}
