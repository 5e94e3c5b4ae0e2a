//! Upstream's ValidateDefaults: every `default` of a structural schema must be a valid value
//! of its node (pruned: no unknown fields; the node's OpenAPI validations; its CEL rules), so
//! that defaulting never writes an object its own schema refuses.

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::Value;

use crate::schema::{self, Structural};

/// The errors of the defaults in `schema` (an `openAPIV3Schema` at `path`); with
/// `require_pruned`, a default with fields its node does not specify is an error too.
pub(crate) fn validate_defaults(schema: &Value, path: &Path, require_pruned: bool) -> FieldErrors {
    let mut errors = FieldErrors::new();
    walk(schema, path, true, require_pruned, &mut errors);
    errors
}

/// Whether any default in `schema` has fields its node does not specify.
pub(crate) fn has_unpruned_defaults(schema: &Value) -> bool {
    let root = Path::root("");
    let mut errors = FieldErrors::new();
    walk(schema, &root, true, true, &mut errors);
    errors.iter().any(|e| e.detail == UNKNOWN_FIELDS)
}

const UNKNOWN_FIELDS: &str = "must not have unknown fields";

/// Checks the default of `node` and of the nodes below it, as upstream does: through
/// `properties` and `items` (not `additionalProperties`), skipping a resource's `metadata`.
fn walk(node: &Value, path: &Path, resource: bool, require_pruned: bool, errors: &mut FieldErrors) {
    if let Some(default) = node.get("default") {
        errors.extend(check_default(
            node,
            default,
            &path.child("default"),
            require_pruned,
        ));
    }
    if let Some(items) = node.get("items").filter(|i| i.is_object()) {
        let embedded = items["x-kubernetes-embedded-resource"] == Value::Bool(true);
        walk(
            items,
            &path.child("items"),
            embedded,
            require_pruned,
            errors,
        );
    }
    let properties = node.get("properties").and_then(Value::as_object);
    for (name, child) in properties.into_iter().flatten() {
        if resource && name == "metadata" {
            continue;
        }
        let embedded = child["x-kubernetes-embedded-resource"] == Value::Bool(true);
        let at = path.child("properties").key(name);
        walk(child, &at, embedded, require_pruned, errors);
    }
}

/// One default: pruned, then its node's OpenAPI validations, then its CEL rules (with the
/// default as `self` and `oldSelf`, then as `self` alone for transition rules).
fn check_default(node: &Value, default: &Value, at: &Path, require_pruned: bool) -> FieldErrors {
    let mut errors = FieldErrors::new();
    if require_pruned && schema::prune_node(&mut default.clone(), node) {
        errors.push(FieldError::invalid(at, default.clone(), UNKNOWN_FIELDS));
    }
    let invalid = schema::validate(default, None, &Structural::node(node));
    if !invalid.is_empty() {
        errors.extend(invalid.into_iter().map(|e| rerooted(e, at)));
        return errors;
    }
    let Ok(rules) = crate::cel::Validator::compile(node, at) else {
        return errors;
    };
    let mut failed = rules.validate(default, Some(default));
    if failed.is_empty() {
        failed = rules.validate(default, None);
    }
    errors.extend(failed.into_iter().map(|e| rerooted(e, at)));
    errors
}

/// An error about a value, moved under `at` (the root, `<nil>`, becomes `at` itself).
fn rerooted(mut error: FieldError, at: &Path) -> FieldError {
    error.field = match error.field.as_str() {
        "<nil>" | "" => at.as_str().to_string(),
        field => format!("{}.{field}", at.as_str()),
    };
    error
}
