//! PATCH bodies, applied as kube-apiserver applies them: JSON patch (RFC 6902), JSON merge
//! patch (RFC 7386) and strategic merge patch, over `serde_json::Value`.
//!
//! The caller's part (k8s.io/apiserver's patch handler), in upstream's order:
//! 1. pick the [`PatchType`] from the `Content-Type` (415 for anything else);
//! 2. check the body is JSON with [`validate_body`] — before looking the object up, so a
//!    malformed body is a 400 even for an object that does not exist;
//! 3. answer 404 if the object does not exist (every patch type here needs one);
//! 4. [`apply`] the patch to the object as stored (its versioned JSON form);
//! 5. decode the result into the type, which rejects unknown or mistyped fields, and go on
//!    as an update.
//!
//! Errors carry upstream's status code, reason and message: see [`PatchError`].

mod error;
mod jsonpatch;
mod mergepatch;
mod schema;
mod strategic;

use serde_json::Value;

pub use error::{Cause, PatchError, UNPROCESSABLE_MESSAGE};
pub use jsonpatch::{JsonPatch, MAX_JSON_PATCH_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS};
pub use schema::{ListStrategy, MapStrategy, MetadataSchema, NoSchema, PatchSchema};

/// The patch formats of `PATCH` requests handled here. Server-side apply
/// (`application/apply-patch+yaml`) is not one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`: RFC 6902.
    Json,
    /// `application/merge-patch+json`: RFC 7386.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
}

impl PatchType {
    /// The patch type of a `Content-Type` header value; parameters (`; charset=utf-8`) are
    /// ignored. Matching is exact otherwise, as upstream's.
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let content_type = content_type.trim();
        let media_type = match content_type.find(';') {
            Some(idx) if idx > 0 => &content_type[..idx],
            _ => content_type,
        };
        match media_type {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            _ => None,
        }
    }

    /// The media type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
        }
    }
}

/// Options of [`apply_with_options`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyOptions {
    /// The request asked for `fieldValidation=Strict` or `Warn`: upstream then decodes the
    /// body strictly first, which turns some shapes of JSON and merge patches into 400s
    /// prefixed "error decoding patch: ". (Unknown and duplicate fields, which strict
    /// decoding also reports, are not detected here.)
    pub strict: bool,
    /// The most operations a JSON patch may have ([`MAX_JSON_PATCH_OPERATIONS`]).
    pub max_json_patch_operations: usize,
    /// The most bytes JSON patch `copy` operations may add ([`MAX_JSON_PATCH_COPY_BYTES`];
    /// 0 for no limit).
    pub max_json_patch_copy_bytes: usize,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            strict: false,
            max_json_patch_operations: MAX_JSON_PATCH_OPERATIONS,
            max_json_patch_copy_bytes: MAX_JSON_PATCH_COPY_BYTES,
        }
    }
}

/// Checks that a patch body is JSON, as upstream does before anything else
/// (400 "invalid JSON patch" otherwise), and returns it decoded.
pub fn validate_body(patch: &[u8]) -> Result<Value, PatchError> {
    serde_json::from_slice(patch).map_err(|_| PatchError::BadRequest("invalid JSON patch".into()))
}

/// Applies `patch` to `original` with the default [`ApplyOptions`] (no strict decoding).
/// `schema` is only used by strategic merge patches.
pub fn apply(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    schema: &dyn PatchSchema,
) -> Result<Value, PatchError> {
    apply_with_options(
        patch_type,
        original,
        patch,
        schema,
        &ApplyOptions::default(),
    )
}

/// Applies `patch` to `original`. The result is always a JSON object; anything else is
/// [`PatchError::NotAnObject`].
pub fn apply_with_options(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    schema: &dyn PatchSchema,
    options: &ApplyOptions,
) -> Result<Value, PatchError> {
    let body = validate_body(patch)?;
    let patched = match patch_type {
        PatchType::Json => {
            if options.strict {
                jsonpatch::strict_check(&body)?;
            }
            let ops = jsonpatch::decode(&body)?;
            if ops.len() > options.max_json_patch_operations {
                return Err(PatchError::TooManyOperations {
                    max: options.max_json_patch_operations,
                    got: ops.len(),
                });
            }
            jsonpatch::apply_ops(original, &ops, options.max_json_patch_copy_bytes)
                .map_err(PatchError::Unprocessable)?
        }
        PatchType::Merge => mergepatch::apply(original, body, options.strict)?,
        PatchType::StrategicMerge => strategic::apply(original, body, schema)?,
    };
    if patched.is_object() {
        Ok(patched)
    } else {
        Err(PatchError::NotAnObject { patched })
    }
}
