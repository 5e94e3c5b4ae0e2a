//! [`KindSchema`]: an owned handle on the schema of one kind, for servers that keep it
//! per request (the built-in catalog is static; a CRD's catalog is shared), and the strategic
//! merge patch metadata it gives.

use std::sync::Arc;

use kapi_patch::{ListStrategy, MapStrategy, PatchSchema};

use crate::{Catalog, NodeType, SchemaRef};

/// The catalog a [`KindSchema`] points into.
#[derive(Clone, Debug)]
enum SharedCatalog {
    Static(&'static Catalog),
    Shared(Arc<Catalog>),
}

/// Drops the unknown fields of an object of an untyped kind (a custom resource, pruned by its
/// structural schema), returning their paths (`spec.foo`).
pub type Pruner = Arc<dyn Fn(&mut serde_json::Value) -> Vec<String> + Send + Sync>;

/// The schema of one kind: a catalog and the node of the kind's root type.
#[derive(Clone)]
pub struct KindSchema {
    catalog: SharedCatalog,
    name: Option<String>,
    /// Set for untyped kinds: their objects are pruned, never refused for a field's type.
    pruner: Option<Pruner>,
}

impl std::fmt::Debug for KindSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindSchema")
            .field("name", &self.name)
            .field("untyped", &self.pruner.is_some())
            .finish_non_exhaustive()
    }
}

impl KindSchema {
    /// The kind `group`/`version`/`kind` of a catalog that lives for the whole program (a
    /// built-in API's, or a server's own), if the catalog has it.
    pub fn of_kind(
        catalog: &'static Catalog,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Option<KindSchema> {
        let name = catalog.kind(group, version, kind)?.definition_name()?;
        Some(KindSchema {
            catalog: SharedCatalog::Static(catalog),
            name: Some(name.to_string()),
            pruner: None,
        })
    }

    /// A typed kind whose schema is the definition `name` of `catalog` (a catalog of that
    /// definition and what it references), if the catalog has it.
    pub fn typed(catalog: Arc<Catalog>, name: &str) -> Option<KindSchema> {
        catalog.definition(name)?;
        Some(KindSchema {
            catalog: SharedCatalog::Shared(catalog),
            name: Some(name.to_string()),
            pruner: None,
        })
    }

    /// The kind whose schema is the root of `catalog` (made by [`Catalog::from_schema`]).
    pub fn root(catalog: Arc<Catalog>) -> Option<KindSchema> {
        catalog.root()?;
        Some(KindSchema {
            catalog: SharedCatalog::Shared(catalog),
            name: None,
            pruner: None,
        })
    }

    /// An untyped kind (a custom resource) whose schema is the definition `name` of
    /// `catalog` (with the meta/v1 definitions it references) and whose unknown fields
    /// `pruner` drops.
    pub fn untyped(catalog: Arc<Catalog>, name: &str, pruner: Pruner) -> Option<KindSchema> {
        catalog.definition(name)?;
        Some(KindSchema {
            catalog: SharedCatalog::Shared(catalog),
            name: Some(name.to_string()),
            pruner: Some(pruner),
        })
    }

    /// Whether objects of this kind decode into Go types (built-in kinds) rather than being
    /// unstructured (custom resources).
    pub fn is_typed(&self) -> bool {
        self.pruner.is_none()
    }

    /// Drops the unknown fields of a decoded `object`, returning them; for typed kinds also
    /// checks the fields' types as Go's decoder does ([`crate::decode`]).
    pub fn decode(
        &self,
        object: &mut serde_json::Value,
    ) -> Result<Vec<crate::StrictError>, crate::TypeError> {
        match &self.pruner {
            Some(prune) => Ok(prune(object)
                .into_iter()
                .map(|path| crate::StrictError {
                    kind: crate::StrictKind::Unknown,
                    path,
                })
                .collect()),
            None => crate::decode(object, self.schema()),
        }
    }

    /// The fields given more than once in a JSON `body` of this kind.
    pub fn duplicate_fields(&self, body: &[u8]) -> Vec<crate::StrictError> {
        match &self.pruner {
            Some(_) => crate::duplicate_fields_untyped(body),
            None => crate::duplicate_fields(body, self.schema()),
        }
    }

    /// The schema of the kind's root type.
    pub fn schema(&self) -> SchemaRef<'_> {
        let catalog = match &self.catalog {
            SharedCatalog::Static(catalog) => catalog,
            SharedCatalog::Shared(catalog) => &**catalog,
        };
        let found = match &self.name {
            Some(name) => catalog.definition(name),
            None => catalog.root(),
        };
        found.expect("a KindSchema is made only for a node its catalog has")
    }
}

/// The node a strategic-merge-patch field path leads to (list elements add nothing to the
/// path, map entries add their key: see [`kapi_patch::PatchSchema`]).
fn at_path<'a>(root: SchemaRef<'a>, path: &[&str]) -> Option<SchemaRef<'a>> {
    let mut node = root;
    for segment in path {
        while node.node_type() == NodeType::Array {
            node = node.items()?;
        }
        node = node
            .property(segment)
            .or_else(|| node.additional_properties())?;
    }
    Some(node)
}

/// The patch metadata of a schema node: `x-kubernetes-patch-strategy` and
/// `x-kubernetes-patch-merge-key`, as upstream's patch meta from OpenAPI reads them.
fn list_strategy(node: Option<SchemaRef<'_>>) -> ListStrategy {
    let Some(node) = node else {
        return ListStrategy::Replace;
    };
    let merges = node
        .patch_strategy()
        .is_some_and(|s| s.split(',').any(|part| part == "merge"));
    match merges {
        true => ListStrategy::Merge {
            key: node.patch_merge_key().map(str::to_string),
        },
        false => ListStrategy::Replace,
    }
}

fn map_strategy(node: Option<SchemaRef<'_>>) -> MapStrategy {
    let replaces = node
        .and_then(|n| n.patch_strategy())
        .is_some_and(|s| s.split(',').any(|part| part == "replace"));
    match replaces {
        true => MapStrategy::Replace,
        false => MapStrategy::Merge,
    }
}

impl PatchSchema for SchemaRef<'_> {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        list_strategy(at_path(*self, path))
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        map_strategy(at_path(*self, path))
    }
}

impl PatchSchema for KindSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        self.schema().list_strategy(path)
    }

    fn map_strategy(&self, path: &[&str]) -> MapStrategy {
        self.schema().map_strategy(path)
    }
}
