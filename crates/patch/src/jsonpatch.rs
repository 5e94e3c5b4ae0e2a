//! JSON patch (RFC 6902, `application/json-patch+json`) as kube-apiserver applies it.
//!
//! Upstream applies these with gopkg.in/evanphx/json-patch.v4, which differs from the RFC
//! in ways clients can see, and kapi follows upstream:
//! - `replace` of a missing object member adds it instead of failing;
//! - array indexes may be negative (counted from the end; `-1` in `add` appends), and are
//!   parsed leniently (`+1`, `01`);
//! - `add` and `remove` of the whole document (`""`) fail; `replace` of it must give an
//!   object or an array;
//! - a path is split at every `/` and its first segment is ignored, so `a/b` acts as `/b`;
//! - `copy` from a missing object member copies `null`;
//! - `test` of a missing member or a `null` passes when the value is `null` or absent;
//! - a missing `value` means `null`; unknown members of an operation are ignored.
//!
//! The PATCH endpoint answers any failure while applying with upstream's fixed 422 message,
//! but admission webhooks' patches ([`JsonPatch`]) report the library's error text itself,
//! so the texts here are the library's.

use serde_json::{Map, Value};

use crate::error::PatchError;
use kapi_apimachinery::gofmt;

/// How many operations upstream accepts in one JSON patch (`maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// How many bytes `copy` operations may add to a document, in total (kube-apiserver's
/// default `JSONPatchMaxCopyBytes`, 3 MiB).
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// A JSON patch as upstream's mutating admission webhooks apply theirs: decoded with
/// `jsonpatch.DecodePatch` and applied with `Patch.Apply`, under the server's copy limit
/// ([`MAX_JSON_PATCH_COPY_BYTES`]) but no limit on the number of operations.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPatch(Value);

impl JsonPatch {
    /// Decodes a patch; the error is Go's (`invalid character ...`, `json: cannot unmarshal
    /// object into Go value of type jsonpatch.Patch`, ...).
    pub fn decode(body: &[u8]) -> Result<JsonPatch, PatchError> {
        kapi_apimachinery::gojson::check_valid(body).map_err(PatchError::BadRequest)?;
        let body: Value =
            serde_json::from_slice(body).map_err(|err| PatchError::BadRequest(err.to_string()))?;
        decode(&body)?;
        Ok(JsonPatch(body))
    }

    /// Whether the patch has no operations (it is `[]` or `null`).
    pub fn is_empty(&self) -> bool {
        self.0.as_array().is_none_or(Vec::is_empty)
    }

    /// The operations as decoded: what upstream's audit annotation of the patch holds.
    pub fn operations(&self) -> &Value {
        &self.0
    }

    /// `doc` patched; [`PatchError::Unprocessable`] with the library's message when an
    /// operation does not apply.
    pub fn apply(&self, doc: &Value) -> Result<Value, PatchError> {
        let ops = decode(&self.0)?;
        apply_ops(doc, &ops, MAX_JSON_PATCH_COPY_BYTES).map_err(PatchError::Unprocessable)
    }
}

/// Checks the shape the apiserver's strict decoding (`fieldValidation=Strict|Warn`)
/// requires before it decodes the patch again for applying.
pub(crate) fn strict_check(body: &Value) -> Result<(), PatchError> {
    let bad = |what: String| PatchError::BadRequest(format!("error decoding patch: {what}"));
    let items = match body {
        Value::Null => return Ok(()),
        Value::Array(items) => items,
        other => {
            return Err(bad(format!(
                "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                gofmt::json_kind(other)
            )));
        }
    };
    for item in items {
        let op = match item {
            Value::Null => continue,
            Value::Object(op) => op,
            other => {
                return Err(bad(format!(
                    "json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    gofmt::json_kind(other)
                )));
            }
        };
        for field in ["op", "path", "from"] {
            match op.get(field) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(bad(format!(
                        "json: cannot unmarshal {} into Go struct field jsonPatchOp.{field} of type string",
                        gofmt::json_kind(other)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Decodes the operations as upstream's `jsonpatch.DecodePatch` does: `null` is an empty
/// patch, a `null` element an operation without members.
pub(crate) fn decode(body: &Value) -> Result<Vec<Option<&Map<String, Value>>>, PatchError> {
    match body {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => Ok(None),
                Value::Object(op) => Ok(Some(op)),
                other => Err(PatchError::BadRequest(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    gofmt::json_kind(other)
                ))),
            })
            .collect(),
        other => Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            gofmt::json_kind(other)
        ))),
    }
}

/// Applies decoded operations to a copy of `doc`.
pub(crate) fn apply_ops(
    doc: &Value,
    ops: &[Option<&Map<String, Value>>],
    max_copy_bytes: usize,
) -> Result<Value, String> {
    let mut doc = doc.clone();
    let mut copied = 0usize;
    let empty = Map::new();
    for op in ops {
        let op = Operation(op.unwrap_or(&empty));
        match op.kind() {
            "add" => add(&mut doc, &op)?,
            "remove" => remove(&mut doc, &op)?,
            "replace" => replace(&mut doc, &op)?,
            "move" => move_op(&mut doc, &op)?,
            "copy" => copy(&mut doc, &op, &mut copied, max_copy_bytes)?,
            "test" => test(&mut doc, &op)?,
            other => return Err(format!("Unexpected kind: {other}")),
        }
    }
    Ok(doc)
}

const MISSING: &str = "missing value";

/// One operation, members looked up as upstream does: a `null` member is absent.
struct Operation<'a>(&'a Map<String, Value>);

impl Operation<'_> {
    fn kind(&self) -> &str {
        match self.0.get("op") {
            Some(Value::String(s)) => s,
            _ => "unknown",
        }
    }

    fn string_member(&self, name: &str) -> Result<&str, String> {
        match self.0.get(name) {
            Some(Value::String(s)) => Ok(s),
            None | Some(Value::Null) => Err(format!("operation missing {name} field: {MISSING}")),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                gofmt::json_kind(other)
            )),
        }
    }

    fn path(&self) -> Result<&str, String> {
        self.string_member("path")
    }

    fn from(&self) -> Result<&str, String> {
        self.string_member("from")
    }

    /// The value, `null` when absent.
    fn value(&self) -> Value {
        self.0.get("value").cloned().unwrap_or(Value::Null)
    }
}

/// Decodes `~1` and `~0` in one path segment.
fn unescape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    chars.next();
                    out.push('/');
                    continue;
                }
                Some('0') => {
                    chars.next();
                    out.push('~');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, no spaces, no overflow.
fn atoi(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude: i128 = digits.parse().ok()?;
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).ok()
}

/// An index into an existing element of an array of `len` elements; negative indexes
/// count from the end.
fn existing_index(key: &str, len: usize) -> Result<usize, String> {
    let idx = atoi(key).ok_or_else(|| {
        format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            gofmt::quote(key)
        )
    })?;
    let len = len as i64;
    let resolved = if idx < 0 { idx + len } else { idx };
    if idx < -len || resolved >= len {
        return Err(format!(
            "Unable to access invalid index: {idx}: invalid index referenced"
        ));
    }
    Ok(resolved as usize)
}

/// The container (object or array) holding the last segment of `path`, and that segment.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let key = unescape(segments[segments.len() - 1]);
    let mut current = doc;
    for part in &segments[1..segments.len() - 1] {
        let part = unescape(part);
        let next = match current {
            Value::Object(map) => map.get_mut(&part)?,
            Value::Array(items) => {
                let idx = existing_index(&part, items.len()).ok()?;
                &mut items[idx]
            }
            _ => return None,
        };
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        current = next;
    }
    if current.is_object() || current.is_array() {
        Some((current, key))
    } else {
        None
    }
}

fn container_get(container: &Value, key: &str) -> Result<Value, String> {
    match container {
        Value::Object(map) => Ok(map.get(key).cloned().unwrap_or(Value::Null)),
        Value::Array(items) => Ok(items[existing_index(key, items.len())?].clone()),
        _ => Err(format!("unknown object type: {MISSING}")),
    }
}

fn container_add(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let idx = atoi(key).ok_or_else(|| {
                format!("value was not a proper array index: '{key}': strconv.Atoi: parsing {}: invalid syntax", gofmt::quote(key))
            })?;
            let size = items.len() as i64 + 1;
            if idx >= size || idx < -size {
                return Err(format!(
                    "Unable to access invalid index: {idx}: invalid index referenced"
                ));
            }
            let idx = if idx < 0 { idx + size } else { idx };
            items.insert(idx as usize, value);
            Ok(())
        }
        _ => Err(format!("unknown object type: {MISSING}")),
    }
}

fn container_remove(container: &mut Value, key: &str) -> Result<(), String> {
    match container {
        Value::Object(map) => match map.remove(key) {
            Some(_) => Ok(()),
            None => Err(format!(
                "Unable to remove nonexistent key: {key}: {MISSING}"
            )),
        },
        Value::Array(items) => {
            let idx = existing_index(key, items.len())?;
            items.remove(idx);
            Ok(())
        }
        _ => Err(format!("unknown object type: {MISSING}")),
    }
}

fn container_set(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let idx = existing_index(key, items.len())?;
            items[idx] = value;
            Ok(())
        }
        _ => Err(format!("unknown object type: {MISSING}")),
    }
}

fn add(doc: &mut Value, op: &Operation) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
    let (container, key) = find_container(doc, path).ok_or_else(|| {
        format!("add operation does not apply: doc is missing path: \"{path}\": {MISSING}")
    })?;
    container_add(container, &key, op.value())
        .map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn remove(doc: &mut Value, op: &Operation) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
    let (container, key) = find_container(doc, path).ok_or_else(|| {
        format!("remove operation does not apply: doc is missing path: \"{path}\": {MISSING}")
    })?;
    container_remove(container, &key)
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn replace(doc: &mut Value, op: &Operation) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        let value = op.value();
        if !(value.is_object() || value.is_array()) {
            return Err("replace operation value must be object or array".to_string());
        }
        *doc = value;
        return Ok(());
    }
    let (container, key) = find_container(doc, path).ok_or_else(|| {
        format!("replace operation does not apply: doc is missing path: {path}: {MISSING}")
    })?;
    container_get(container, &key).map_err(|_| {
        format!("replace operation does not apply: doc is missing key: {path}: {MISSING}")
    })?;
    container_set(container, &key, op.value())
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn move_op(doc: &mut Value, op: &Operation) -> Result<(), String> {
    let from = op
        .from()
        .map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let (container, key) = find_container(doc, from).ok_or_else(|| {
        format!("move operation does not apply: doc is missing from path: {from}: {MISSING}")
    })?;
    let value = container_get(container, &key)
        .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    container_remove(container, &key)
        .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = op
        .path()
        .map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let (container, key) = find_container(doc, path).ok_or_else(|| {
        format!("move operation does not apply: doc is missing destination path: {path}: {MISSING}")
    })?;
    container_add(container, &key, value)
        .map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn copy(doc: &mut Value, op: &Operation, copied: &mut usize, limit: usize) -> Result<(), String> {
    let from = op
        .from()
        .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let (container, key) = find_container(doc, from).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing from path: {from}: {MISSING}")
    })?;
    let value = container_get(container, &key)
        .map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
    let path = op
        .path()
        .map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
    let (container, key) = find_container(doc, path).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing destination path: {path}: {MISSING}")
    })?;
    if !value.is_null() {
        *copied += gofmt::json(&value).len();
    }
    if limit > 0 && *copied > limit {
        return Err(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {limit}"
        ));
    }
    container_add(container, &key, value)
        .map_err(|e| format!("error while adding value during copy: {e}"))
}

fn test(doc: &mut Value, op: &Operation) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        let expected = op.0.get("value").ok_or_else(failed)?;
        return if doc == expected {
            Ok(())
        } else {
            Err(failed())
        };
    }
    let (container, key) = find_container(doc, path).ok_or_else(|| {
        format!("test operation does not apply: is missing path: {path}: {MISSING}")
    })?;
    let actual = container_get(container, &key)
        .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    let expected = op.value();
    if actual.is_null() {
        return if expected.is_null() {
            Ok(())
        } else {
            Err(failed())
        };
    }
    if actual == expected {
        Ok(())
    } else {
        Err(failed())
    }
}
