//! What a strategic merge patch needs to know about a type: how each list merges and
//! whether a nested object merges or is replaced — upstream's `patchStrategy` and
//! `patchMergeKey` struct tags (`x-kubernetes-patch-strategy` and
//! `x-kubernetes-patch-merge-key` in the OpenAPI schema).
//!
//! Fields are named by their path from the object's root: the JSON field names, where the
//! elements of a list add nothing (the list `spec.containers` and the list of ports in
//! each container are `["spec", "containers"]` and `["spec", "containers", "ports"]`) and
//! the entries of a map-typed field add their key (a list in the entry `k` of the map
//! `spec.m` is `["spec", "m", "k", "list"]`).

/// How a list field merges in a strategic merge patch.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ListStrategy {
    /// Atomic: the patch's list replaces the whole list (no `patchStrategy` tag).
    #[default]
    Replace,
    /// `patchStrategy:"merge"`: elements are merged by the value of the merge key
    /// (`patchMergeKey`) when elements are objects, or kept as a set when they are
    /// primitives (`key: None`).
    Merge {
        /// The merge key, e.g. `name`; `None` for lists of primitives.
        key: Option<String>,
    },
}

impl ListStrategy {
    /// A list of objects merged by `key`.
    pub fn merge_by(key: &str) -> Self {
        ListStrategy::Merge {
            key: Some(key.to_string()),
        }
    }

    /// A list of primitives merged as a set.
    pub fn set() -> Self {
        ListStrategy::Merge { key: None }
    }
}

/// How a nested object field merges in a strategic merge patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MapStrategy {
    /// Merged key by key (the default, also for `patchStrategy:"retainKeys"`, which only
    /// matters to the client that builds the patch).
    #[default]
    Merge,
    /// `patchStrategy:"replace"`: the patch's object replaces the field.
    Replace,
}

/// The patch metadata of a type, looked up by field path (see the module documentation).
///
/// kapi-schema answers it for every kind from the OpenAPI schema; the ones here serve kinds
/// without a schema.
pub trait PatchSchema {
    /// How the list at `path` merges.
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;

    /// How the object at `path` merges; [`MapStrategy::Merge`] unless overridden.
    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        let _ = path;
        MapStrategy::Merge
    }
}

impl<T: PatchSchema + ?Sized> PatchSchema for &T {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        (**self).list_strategy(path)
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        (**self).map_strategy(path)
    }
}

impl<T: PatchSchema + ?Sized> PatchSchema for Box<T> {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        (**self).list_strategy(path)
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        (**self).map_strategy(path)
    }
}

impl<T: PatchSchema + ?Sized> PatchSchema for std::sync::Arc<T> {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        (**self).list_strategy(path)
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        (**self).map_strategy(path)
    }
}

/// A type without patch metadata: every list is atomic, every object merges.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSchema;

impl PatchSchema for NoSchema {
    fn list_strategy(&self, _path: &[&str]) -> ListStrategy {
        ListStrategy::Replace
    }
}

/// ObjectMeta's patch metadata at `metadata` (meta/v1 types.go): `finalizers` is a set,
/// `ownerReferences` merges by `uid`; every other list (`managedFields`) is atomic.
#[derive(Clone, Copy, Debug, Default)]
pub struct MetadataSchema;

impl PatchSchema for MetadataSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match path {
            ["metadata", "finalizers"] => ListStrategy::set(),
            ["metadata", "ownerReferences"] => ListStrategy::merge_by("uid"),
            _ => ListStrategy::Replace,
        }
    }
}
