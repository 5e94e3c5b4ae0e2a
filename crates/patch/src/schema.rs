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
/// A later, OpenAPI-driven implementation answers for every built-in type; the ones here
/// cover ObjectMeta and the few resources whose lists need it.
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

/// Patch metadata from a table of field paths, on top of [`MetadataSchema`]. Fields not in
/// the table are atomic lists and merging objects.
#[derive(Clone, Debug, Default)]
pub struct TableSchema {
    lists: Vec<(Vec<String>, ListStrategy)>,
    maps: Vec<(Vec<String>, MapStrategy)>,
}

impl TableSchema {
    /// ObjectMeta's metadata only.
    pub fn new() -> Self {
        TableSchema::default()
    }

    /// Sets the strategy of the list at `path`.
    pub fn with_list(mut self, path: &[&str], strategy: ListStrategy) -> Self {
        self.lists
            .push((path.iter().map(|s| s.to_string()).collect(), strategy));
        self
    }

    /// Sets the strategy of the object at `path`.
    pub fn with_map(mut self, path: &[&str], strategy: MapStrategy) -> Self {
        self.maps
            .push((path.iter().map(|s| s.to_string()).collect(), strategy));
        self
    }
}

fn path_is(entry: &[String], path: &[&str]) -> bool {
    entry.len() == path.len() && entry.iter().zip(path).all(|(a, b)| a == b)
}

impl PatchSchema for TableSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        self.lists
            .iter()
            .find(|(p, _)| path_is(p, path))
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| MetadataSchema.list_strategy(path))
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        self.maps
            .iter()
            .find(|(p, _)| path_is(p, path))
            .map(|(_, s)| *s)
            .unwrap_or_default()
    }
}
