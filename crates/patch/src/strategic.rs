//! Strategic merge patch (`application/strategic-merge-patch+json`), applied as
//! kube-apiserver applies it (k8s.io/apimachinery/pkg/util/strategicpatch, server side:
//! parallel lists merged, unmatched `null`s ignored).
//!
//! Objects merge member by member, a `null` member deletes. Lists follow the field's
//! [`ListStrategy`]: atomic lists are replaced by the patch's list as it is; merging lists
//! of objects merge elements with equal merge keys and append the others; merging lists of
//! primitives are sets. The order of a merged list is the patch's order for the elements
//! the patch names, interleaved with the others in their old order.
//!
//! Directives:
//! - `$patch: replace` in an object replaces it with the rest of the patch object; in a
//!   list element it replaces the list with the patch's other elements;
//! - `$patch: delete` in an object deletes its content (leaves `{}`); in a list element it
//!   deletes the elements with its merge key value;
//! - `$patch: merge` is refused, as upstream does (an error in an object; "merging lists
//!   cannot yet be specified in the patch" in a list element);
//! - `$retainKeys: [...]` drops the object's members not listed;
//! - `$setElementOrder/<list>: [...]` gives the order of the merged list;
//! - `$deleteFromPrimitiveList/<list>: [...]` deletes values from a list of primitives.
//!
//! Other keys that start with `$` are not directives: upstream merges them as ordinary
//! members (and the typed decoding after the patch drops or rejects them).

use serde_json::{Map, Value};

use crate::error::{PatchError, smp};
use crate::schema::{ListStrategy, MapStrategy, PatchSchema};
use kapi_apimachinery::gofmt;

const DIRECTIVE: &str = "$patch";
const DELETE: &str = "delete";
const REPLACE: &str = "replace";
const MERGE: &str = "merge";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

static NULL: Value = Value::Null;

/// Applies a strategic merge patch (already decoded) to `original`.
pub(crate) fn apply(
    original: &Value,
    patch: Value,
    schema: &dyn PatchSchema,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(patch) => patch,
        Value::Null => return Ok(original.clone()),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                gofmt::json_kind(&other)
            )));
        }
    };
    let original = match original {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return Err(PatchError::BadRequest(smp::BAD_JSON_DOC.to_string())),
    };
    let mut merger = Merger {
        schema,
        path: Vec::new(),
    };
    merger.merge_map(original, patch).map(Value::Object)
}

/// The go type of a list's elements, as far as merging cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Map,
    Scalar,
}

/// How the list being merged is tagged.
struct ListMeta {
    merge: bool,
    key: String,
}

struct Merger<'a> {
    schema: &'a dyn PatchSchema,
    /// The field path of the object being merged.
    path: Vec<String>,
}

impl Merger<'_> {
    fn field_path<'p>(&'p self, key: &'p str) -> Vec<&'p str> {
        let mut path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        path.push(key);
        path
    }

    fn list_meta(&self, key: &str) -> ListMeta {
        match self.schema.list_strategy(&self.field_path(key)) {
            ListStrategy::Replace => ListMeta {
                merge: false,
                key: String::new(),
            },
            ListStrategy::Merge { key } => ListMeta {
                merge: true,
                key: key.unwrap_or_default(),
            },
        }
    }

    fn map_strategy(&self, key: &str) -> MapStrategy {
        self.schema.map_strategy(&self.field_path(key))
    }

    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE) {
            return map_directive(directive.clone(), patch);
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_ordered_lists(&mut original, &mut patch)?;

        let keys: Vec<String> = patch.keys().cloned().collect();
        for k in keys {
            let Some(patch_v) = patch.remove(&k) else {
                continue;
            };
            let (key, delete_list) = if k.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                (extract_key(&k, DELETE_FROM_PRIMITIVE_LIST)?, true)
            } else {
                (k, false)
            };
            if patch_v.is_null() {
                original.remove(&key);
                continue;
            }
            let Some(slot) = original.get_mut(&key) else {
                if !delete_list {
                    let mut v = patch_v;
                    discard_nulls(&mut v);
                    if let Some(v) = remove_directives(v) {
                        original.insert(key, v);
                    }
                }
                continue;
            };
            let current = std::mem::take(slot);
            let merged = match (current, patch_v) {
                (Value::Object(o), Value::Object(p)) => {
                    let merged = if self.map_strategy(&key) == MapStrategy::Replace {
                        p
                    } else {
                        self.path.push(key.clone());
                        let merged = self.merge_map(o, p);
                        self.path.pop();
                        merged?
                    };
                    Some(Value::Object(merged))
                }
                (Value::Array(o), Value::Array(p)) => {
                    let meta = self.list_meta(&key);
                    self.path.push(key.clone());
                    let merged = self.merge_list_field(o, p, &meta, delete_list);
                    self.path.pop();
                    Some(Value::Array(merged?.merged))
                }
                (current, patch_v) => {
                    if same_scalar_type(&current, &patch_v) {
                        remove_directives(patch_v)
                    } else if delete_list {
                        Some(current)
                    } else {
                        let mut v = patch_v;
                        discard_nulls(&mut v);
                        remove_directives(v)
                    }
                }
            };
            match merged {
                Some(v) => {
                    if let Some(slot) = original.get_mut(&key) {
                        *slot = v;
                    }
                }
                None => {
                    original.remove(&key);
                }
            }
        }
        Ok(original)
    }

    /// Merges a list field: merging lists (and every `$deleteFromPrimitiveList`) merge,
    /// others take the patch's list as it is.
    fn merge_list_field(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        meta: &ListMeta,
        delete_list: bool,
    ) -> Result<MergedList, PatchError> {
        if meta.merge || delete_list {
            self.merge_list(original, patch, &meta.key, delete_list)
        } else {
            Ok(MergedList {
                merged: patch,
                original_after: original,
            })
        }
    }

    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: &str,
        delete_list: bool,
    ) -> Result<MergedList, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(MergedList {
                merged: original.clone(),
                original_after: original,
            });
        }
        let kind = element_kind(&[&original, &patch])?;
        if kind == Kind::Scalar {
            if delete_list {
                return Ok(MergedList {
                    merged: delete_from_list(original.clone(), &patch),
                    original_after: original,
                });
            }
            let both: Vec<Value> = original.iter().chain(patch.iter()).cloned().collect();
            let merged = dedup_scalars(both);
            let (patch_items, server_only) = if merge_key.is_empty() {
                partition_primitives(merged, &patch)?
            } else {
                partition_maps(merged, &patch, merge_key)?
            };
            let merged = normalize_element_order(
                patch_items,
                server_only,
                &patch,
                &original,
                merge_key,
                kind,
            )?;
            return Ok(MergedList {
                merged,
                original_after: original,
            });
        }
        if merge_key.is_empty() {
            return Err(PatchError::Internal(
                "cannot merge lists without merge key for struct".to_string(),
            ));
        }
        let directed = apply_element_directives(original, patch, merge_key)?;
        let (merged, order, original_after) = match directed.replacement {
            Some(replacement) => (replacement.clone(), replacement, directed.storage),
            None => {
                let live = directed.storage[..directed.live].to_vec();
                let merged = self.merge_elements(live, &directed.patch, merge_key)?;
                let order = merged[..directed.live].to_vec();
                let original_after = (0..directed.storage.len())
                    .map(|i| merged.get(i).unwrap_or(&directed.storage[i]).clone())
                    .collect();
                (merged, order, original_after)
            }
        };
        let (patch_items, server_only) = partition_maps(merged, &directed.patch, merge_key)?;
        let merged = normalize_element_order(
            patch_items,
            server_only,
            &directed.patch,
            &order,
            merge_key,
            kind,
        )?;
        Ok(MergedList {
            merged,
            original_after,
        })
    }

    /// Merges patch elements into the elements with the same merge key value, appending
    /// the ones without a match.
    fn merge_elements(
        &mut self,
        mut original: Vec<Value>,
        patch: &[Value],
        merge_key: &str,
    ) -> Result<Vec<Value>, PatchError> {
        for element in patch {
            let Value::Object(element) = element else {
                return Err(smp::expected_map(element));
            };
            let Some(key_value) = element.get(merge_key) else {
                return Err(smp::no_merge_key(element, merge_key));
            };
            match find_by_key(&original, merge_key, key_value)? {
                Some(idx) => {
                    let Value::Object(current) = std::mem::take(&mut original[idx]) else {
                        unreachable!("find_by_key only matches objects");
                    };
                    original[idx] = Value::Object(self.merge_map(current, element.clone())?);
                }
                None => original.push(Value::Object(element.clone())),
            }
        }
        Ok(original)
    }

    /// Handles the `$setElementOrder/<list>` directives of one object: merges each such
    /// list with its patch list (removed from the patch) and orders the result.
    fn merge_ordered_lists(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
    ) -> Result<(), PatchError> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for key in keys {
            let Some(order) = patch.remove(&key) else {
                continue;
            };
            let Value::Array(order) = order else {
                return Err(smp::expected_list(&order));
            };
            let list_key = extract_key(&key, SET_ELEMENT_ORDER)?;
            let original_list = match original.get(&list_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(smp::expected_list(other)),
            };
            let patch_list = match patch.get(&list_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(smp::expected_list(other)),
            };
            let meta = self.list_meta(&list_key);
            let patch_items = patch_list.clone().unwrap_or_default();
            validate_order(&patch_items, &order, &meta.key)?;

            let (merged, original_items) = match (original_list, patch_list) {
                (Some(o), None) => (o.clone(), o),
                (None, Some(p)) => match remove_directives(Value::Array(p)) {
                    Some(Value::Array(p)) => (p, Vec::new()),
                    _ => continue,
                },
                (Some(o), Some(p)) => {
                    self.path.push(list_key.clone());
                    let merged = self.merge_list_field(o, p, &meta, false);
                    self.path.pop();
                    let merged = merged?;
                    (merged.merged, merged.original_after)
                }
                (None, None) => continue,
            };
            let (in_order, server_only) = if meta.key.is_empty() {
                partition_primitives(merged, &order)?
            } else {
                partition_maps(merged, &order, &meta.key)?
            };
            let kind = element_kind(&[&original_items, &patch_items])?;
            let ordered = normalize_element_order(
                in_order,
                server_only,
                &order,
                &original_items,
                &meta.key,
                kind,
            )?;
            original.insert(list_key.clone(), Value::Array(ordered));
            patch.remove(&list_key);
        }
        Ok(())
    }
}

/// `$patch` in an object: `replace` keeps the patch object without the directive,
/// `delete` leaves an empty object; anything else is an error.
fn map_directive(
    directive: Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, PatchError> {
    match directive.as_str() {
        Some(REPLACE) => {
            patch.remove(DIRECTIVE);
            Ok(patch)
        }
        Some(DELETE) => Ok(Map::new()),
        _ => Err(smp::bad_patch_type(&directive, &patch)),
    }
}

/// The `$retainKeys` directive: every member the patch sets must be listed, and the
/// original's members that are not listed are dropped.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::BadRequest(smp::BAD_RETAIN_KEYS.to_string()));
    };
    if let Some(bad) = retain.iter().find(|v| v.is_object() || v.is_array()) {
        return Err(unhashable(bad));
    }
    let retained = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !retained(k) {
            return Err(PatchError::BadRequest(smp::BAD_RETAIN_KEYS.to_string()));
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// The list name after `<prefix>/`.
fn extract_key(key: &str, prefix: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_string()),
        _ => Err(PatchError::BadRequest(
            if prefix == DELETE_FROM_PRIMITIVE_LIST {
                smp::BAD_PRIMITIVE_LIST
            } else {
                smp::BAD_SET_ELEMENT_ORDER
            }
            .to_string(),
        )),
    }
}

/// Checks that the patch list names its elements in the order of the `$setElementOrder`
/// list (ignoring deletions and other directive elements), and names no others.
fn validate_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<(), PatchError> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let kept: Vec<Value> = if merge_key.is_empty() {
        patch.to_vec()
    } else {
        split_deletions(patch.to_vec())?.0
    };
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if has_directive(&kept[p]) {
            p += 1;
            continue;
        }
        if merge_key_equal(&kept[p], &order[o], merge_key)? {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() && o >= order.len() {
        return Err(PatchError::Internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            gofmt::list_v(patch),
            gofmt::list_v(order)
        )));
    }
    Ok(())
}

fn has_directive(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.contains_key(DIRECTIVE))
}

fn merge_key_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(left) = left else {
        return Err(smp::expected_map(left));
    };
    let Value::Object(right) = right else {
        return Err(smp::expected_map(right));
    };
    let l = left
        .get(merge_key)
        .ok_or_else(|| smp::no_merge_key(left, merge_key))?;
    let r = right
        .get(merge_key)
        .ok_or_else(|| smp::no_merge_key(right, merge_key))?;
    Ok(l == r)
}

/// Splits list elements into the kept ones and those with `$patch: delete`.
fn split_deletions(items: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut kept = Vec::new();
    let mut deleted = Vec::new();
    for item in items {
        let Value::Object(map) = &item else {
            return Err(smp::expected_map(&item));
        };
        if map.get(DIRECTIVE).and_then(Value::as_str) == Some(DELETE) {
            deleted.push(item);
        } else {
            kept.push(item);
        }
    }
    Ok((kept, deleted))
}

/// A merged list, and what upstream's caller still sees through its own reference to the
/// original list afterwards. Upstream deletes list elements by shifting the rest left in
/// the original list's storage and then appends new elements into the room that freed;
/// the `$setElementOrder` step orders by that storage, so we reproduce it.
struct MergedList {
    merged: Vec<Value>,
    original_after: Vec<Value>,
}

/// A list of objects after its patch's `$patch` elements were handled.
struct DirectedList {
    /// The original list's storage after deletions: `live` elements, then stale ones.
    storage: Vec<Value>,
    live: usize,
    /// The patch elements without directives.
    patch: Vec<Value>,
    /// With `$patch: replace`, the list that replaces the original (and no patch is left).
    replacement: Option<Vec<Value>>,
}

/// Handles `$patch` elements of a patch list of objects: deletions remove the matching
/// original elements, `replace` makes the patch's other elements the whole list.
fn apply_element_directives(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<DirectedList, PatchError> {
    let mut live = original.len();
    let mut storage = original;
    let mut plain = Vec::new();
    let mut replace = false;
    for element in patch {
        let Value::Object(map) = &element else {
            return Err(smp::expected_map(&element));
        };
        let Some(directive) = map.get(DIRECTIVE) else {
            plain.push(element);
            continue;
        };
        match directive.as_str() {
            Some(DELETE) => {
                let Some(key_value) = map.get(merge_key) else {
                    return Err(smp::no_merge_key(map, merge_key));
                };
                while let Some(idx) = find_by_key(&storage[..live], merge_key, key_value)? {
                    for j in idx..live - 1 {
                        storage[j] = storage[j + 1].clone();
                    }
                    live -= 1;
                }
            }
            Some(REPLACE) => replace = true,
            Some(MERGE) => {
                return Err(PatchError::Internal(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            _ => return Err(smp::bad_patch_type(directive, map)),
        }
    }
    Ok(if replace {
        DirectedList {
            storage,
            live,
            patch: Vec::new(),
            replacement: Some(plain),
        }
    } else {
        DirectedList {
            storage,
            live,
            patch: plain,
            replacement: None,
        }
    })
}

/// The index of the first object whose `key` member equals `value`.
fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, PatchError> {
    for (idx, item) in list.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(smp::not_a_map(idx));
        };
        if map.get(key) == Some(value) {
            return Ok(Some(idx));
        }
    }
    Ok(None)
}

/// Removes the values of `to_delete` from a list of primitives.
fn delete_from_list(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current
        .into_iter()
        .filter(|v| !to_delete.contains(v))
        .collect()
}

/// Removes duplicates the way upstream does: a later duplicate is overwritten by the last
/// element, so the order changes (it is restored by the ordering step).
fn dedup_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut last = s.len() - 1;
    let mut i = 0;
    while i < last {
        let mut j = i + 1;
        while j <= last {
            if s[i] == s[j] {
                s[j] = s[last].clone();
                s.truncate(last);
                last -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// The error Go's runtime raises when a map or list is used as a map key.
fn unhashable(v: &Value) -> PatchError {
    PatchError::Internal(format!(
        "runtime error: hash of unhashable type {}",
        gofmt::type_string(v)
    ))
}

/// Splits primitives into those present in `by` and the others.
fn partition_primitives(
    items: Vec<Value>,
    by: &[Value],
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    if let Some(bad) = by
        .iter()
        .chain(items.iter())
        .find(|v| v.is_object() || v.is_array())
    {
        return Err(unhashable(bad));
    }
    Ok(items.into_iter().partition(|v| by.contains(v)))
}

/// Splits objects into those whose merge key value is in `by` and the others.
fn partition_maps(
    items: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for item in items {
        let Value::Object(map) = &item else {
            return Err(smp::expected_map(&item));
        };
        let Some(key_value) = map.get(merge_key) else {
            return Err(smp::no_merge_key(map, merge_key));
        };
        if find_by_key(by, merge_key, key_value)?.is_some() {
            present.push(item);
        } else {
            absent.push(item);
        }
    }
    Ok((present, absent))
}

/// The value an element is ordered by: its merge key value, or itself.
fn order_value<'v>(item: &'v Value, merge_key: &str, kind: Kind) -> &'v Value {
    match kind {
        Kind::Map => item
            .as_object()
            .and_then(|m| m.get(merge_key))
            .unwrap_or(&NULL),
        Kind::Scalar => item,
    }
}

/// The position of `item` in `list` by order value, if any.
fn position(list: &[Value], item: &Value, merge_key: &str, kind: Kind) -> Option<usize> {
    let wanted = order_value(item, merge_key, kind);
    list.iter()
        .position(|v| order_value(v, merge_key, kind) == wanted)
}

/// Orders the patch's elements by `patch_order` and the others by `server_order`, then
/// interleaves them.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = sort_by_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = sort_by_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

/// Sorts `items` by their positions in `order` with upstream's comparison (an element not
/// in `order` compares as smaller than anything), deletions last.
fn sort_by_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let (items, deleted) = if kind == Kind::Map {
        for item in items.iter().chain(order.iter()) {
            let Value::Object(map) = item else {
                return Err(smp::expected_map(item));
            };
            if !map.contains_key(merge_key) {
                return Err(smp::no_merge_key(map, merge_key));
            }
        }
        split_deletions(items)?
    } else {
        (items, Vec::new())
    };
    let mut keyed: Vec<(Option<usize>, Value)> = items
        .into_iter()
        .map(|item| (position(order, &item, merge_key, kind), item))
        .collect();
    go_stable_sort(&mut keyed, |a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x < y,
        _ => true,
    });
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    sorted.extend(deleted);
    Ok(sorted)
}

/// Interleaves `left` (server-only elements) into `right` (patch elements): an element of
/// `left` comes first only when both are in `server_order` and it is earlier there.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Vec<Value> {
    let left_pos: Vec<Option<usize>> = left
        .iter()
        .map(|v| position(server_order, v, merge_key, kind))
        .collect();
    let right_pos: Vec<Option<usize>> = right
        .iter()
        .map(|v| position(server_order, v, merge_key, kind))
        .collect();
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().zip(left_pos).peekable();
    let mut right = right.into_iter().zip(right_pos).peekable();
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => out.push(left.next().expect("peeked").0),
            (None, Some(_)) => out.push(right.next().expect("peeked").0),
            (Some((_, l)), Some((_, r))) => {
                let left_first = matches!((l, r), (Some(l), Some(r)) if l < r);
                if left_first {
                    out.push(left.next().expect("peeked").0);
                } else {
                    out.push(right.next().expect("peeked").0);
                }
            }
        }
    }
    out
}

/// Go's `sort.SliceStable` (insertion sort of blocks of 20, then SymMerge), reproduced
/// step for step: upstream's comparison is not a strict order, so the result depends on
/// the algorithm.
fn go_stable_sort<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let less = |d: &[T], i: usize, j: usize| less(&d[i], &d[j]);
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, &less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, &less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(
    data: &mut [T],
    a: usize,
    b: usize,
    less: &impl Fn(&[T], usize, usize) -> bool,
) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(data, j, j - 1) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(
    data: &mut [T],
    a: usize,
    m: usize,
    b: usize,
    less: &impl Fn(&[T], usize, usize) -> bool,
) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(data, h, a) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = a;
        while k + 1 < i {
            data.swap(k, k + 1);
            k += 1;
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(data, m, h) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(data, p - c, c) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        data[start..end].rotate_left(m - start);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

/// The kind of the elements of the given lists, which must all have the same Go type.
fn element_kind(lists: &[&[Value]]) -> Result<Kind, PatchError> {
    let mut first: Option<&Value> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        match first {
            None => {
                if item.is_null() {
                    return Err(PatchError::Internal(
                        "runtime error: invalid memory address or nil pointer dereference"
                            .to_string(),
                    ));
                }
                if item.is_array() {
                    return Err(PatchError::Unprocessable(smp::NO_LIST_OF_LISTS.to_string()));
                }
                first = Some(item);
            }
            Some(first) => {
                if gofmt::type_name(first) != gofmt::type_name(item) {
                    let lists: Vec<Value> =
                        lists.iter().map(|l| Value::Array(l.to_vec())).collect();
                    return Err(PatchError::Internal(format!(
                        "list element types are not identical: {}",
                        gofmt::list_v(&lists)
                    )));
                }
            }
        }
    }
    match first {
        Some(Value::Object(_)) => Ok(Kind::Map),
        Some(_) => Ok(Kind::Scalar),
        None => Err(PatchError::Internal(
            "no elements in any of the given slices".to_string(),
        )),
    }
}

/// Whether two non-composite values have the same Go type (`null` has none).
fn same_scalar_type(a: &Value, b: &Value) -> bool {
    !a.is_null() && gofmt::type_name(a) == gofmt::type_name(b)
}

/// Drops `null` members of objects, recursively through objects and lists.
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Removes objects carrying `$patch` (as members and as list elements), recursively;
/// `None` when `v` itself carries one.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            let mut out = Map::new();
            for (k, v) in map {
                if let Some(v) = remove_directives(v) {
                    out.insert(k, v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn go_sort_ints(v: &mut [i32]) {
        go_stable_sort(v, |a, b| a < b);
    }

    #[test]
    fn go_stable_sort_sorts() {
        let mut v: Vec<i32> = (0..100).map(|i| (i * 37) % 101).collect();
        let mut expected = v.clone();
        expected.sort();
        go_sort_ints(&mut v);
        assert_eq!(v, expected);
    }

    #[test]
    fn go_stable_sort_with_always_true_reverses_small_blocks() {
        // Go's insertion sort moves every element to the front when less is always true.
        let mut v = vec![1, 2, 3, 4];
        go_stable_sort(&mut v, |_, _| true);
        assert_eq!(v, vec![4, 3, 2, 1]);
    }

    #[test]
    fn dedup_matches_upstream_order() {
        let v = dedup_scalars(vec![json!(1), json!(2), json!(1), json!(3)]);
        assert_eq!(v, vec![json!(1), json!(2), json!(3)]);
        let v = dedup_scalars(vec![json!("a"), json!("a"), json!("b"), json!("c")]);
        assert_eq!(v, vec![json!("a"), json!("c"), json!("b")]);
    }

    #[test]
    fn order_uses_merge_key() {
        let order = vec![json!({"name": "b"}), json!({"name": "a"})];
        assert_eq!(
            position(&order, &json!({"name": "a", "x": 1}), "name", Kind::Map),
            Some(1)
        );
        assert_eq!(
            position(&order, &json!({"name": "c"}), "name", Kind::Map),
            None
        );
    }
}
