//! Structural schemas (a CRD version's `openAPIV3Schema`), as upstream's
//! apiextensions-apiserver uses them for custom resources:
//!
//! - [`validate_structural`]: the structural check (every specified field has a type, value
//!   validations in `allOf`/`anyOf`/`oneOf`/`not` only, `metadata` restricted to name and
//!   generateName), required of every v1 CRD;
//! - [`prune`]: unknown fields dropped (unless `x-kubernetes-preserve-unknown-fields`), with
//!   the root's and embedded resources' `apiVersion`, `kind` and `metadata` kept;
//! - [`default`]: `default`s applied and non-nullable nulls dropped, on writes and on reads;
//! - [`validate`]: the OpenAPI value validations, worded as kube-openapi words them and turned
//!   into field errors as upstream does, with ratcheting on updates (errors in parts of the
//!   object the update did not change are dropped).

mod defaulting;
mod pruning;
mod structural;
mod validation;

#[cfg(test)]
mod tests;

use kapi_apimachinery::validation::field::{FieldErrors, Path};
use serde_json::Value;

pub use defaulting::default;
pub use pruning::{prune, prune_node};
pub use structural::validate_structural;
pub use validation::validate;

/// A structural schema: checked once per CRD version, then used for every object.
#[derive(Clone, Debug)]
pub struct Structural {
    root: Value,
}

impl Structural {
    /// The structural schema of `schema`, or the reasons it is not structural.
    pub fn new(schema: &Value) -> Result<Structural, FieldErrors> {
        let errors = validate_structural(schema, &Path::root("openAPIV3Schema"));
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Structural {
            root: schema.clone(),
        })
    }

    /// A node of a structural schema (already checked with the whole schema), as a schema of
    /// its own: to validate a value of that node.
    pub fn node(node: &Value) -> Structural {
        Structural { root: node.clone() }
    }

    /// The schema as JSON.
    pub fn json(&self) -> &Value {
        &self.root
    }
}

/// The `properties` of a schema node, if any.
fn properties(node: &Value) -> Option<&serde_json::Map<String, Value>> {
    node.get("properties").and_then(Value::as_object)
}

/// Whether a node has the boolean extension `key` set.
fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The schema of a map's values (`additionalProperties` as a schema), if any.
fn additional_properties(node: &Value) -> Option<&Value> {
    node.get("additionalProperties").filter(|a| a.is_object())
}

/// `parent.name`, or `name` at the root, as kube-openapi names fields.
fn join(parent: &str, name: &str) -> String {
    match parent {
        "" => name.to_string(),
        _ => format!("{parent}.{name}"),
    }
}
