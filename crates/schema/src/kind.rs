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
    /// The built-in kind of this group-version-kind, if Kubernetes has it.
    pub fn builtin(group: &str, version: &str, kind: &str) -> Option<KindSchema> {
        let catalog = Catalog::builtin();
        let name = catalog.kind(group, version, kind)?.definition_name()?;
        Some(KindSchema {
            catalog: SharedCatalog::Static(catalog),
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

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_patch::PatchType;
    use serde_json::{Value, json};

    fn smp(kind: (&str, &str), original: Value, patch: Value) -> Value {
        let schema = KindSchema::builtin(kind.0, "v1", kind.1).unwrap();
        let body = serde_json::to_vec(&patch).unwrap();
        kapi_patch::apply(PatchType::StrategicMerge, &original, &body, &schema).unwrap()
    }

    fn deployment(containers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"template": {"spec": {"containers": containers}}}})
    }

    fn containers(object: &Value) -> &Value {
        &object["spec"]["template"]["spec"]["containers"]
    }

    #[test]
    fn strategies_come_from_the_schema() {
        let pod = KindSchema::builtin("", "v1", "Pod").unwrap();
        let cases: &[(&[&str], ListStrategy)] = &[
            (&["spec", "containers"], ListStrategy::merge_by("name")),
            (
                &["spec", "containers", "ports"],
                ListStrategy::merge_by("containerPort"),
            ),
            (
                &["spec", "containers", "env"],
                ListStrategy::merge_by("name"),
            ),
            (&["spec", "containers", "args"], ListStrategy::Replace),
            (&["spec", "tolerations"], ListStrategy::Replace),
            (&["metadata", "finalizers"], ListStrategy::set()),
            (
                &["metadata", "ownerReferences"],
                ListStrategy::merge_by("uid"),
            ),
            (&["spec", "volumes"], ListStrategy::merge_by("name")),
            (&["spec", "nothing"], ListStrategy::Replace),
        ];
        for (path, strategy) in cases {
            assert_eq!(&pod.list_strategy(path), strategy, "{path:?}");
        }
        assert_eq!(pod.map_strategy(&["spec", "volumes"]), MapStrategy::Merge);
        let deployment = KindSchema::builtin("apps", "v1", "Deployment").unwrap();
        assert_eq!(
            deployment.list_strategy(&["spec", "template", "spec", "containers", "volumeMounts"]),
            ListStrategy::merge_by("mountPath")
        );
    }

    #[test]
    fn containers_merge_by_name() {
        let original = deployment(json!([
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}, {"containerPort": 81}]},
            {"name": "b", "image": "b:1"}
        ]));
        let patched = smp(
            ("apps", "Deployment"),
            original,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "b", "image": "b:2"},
                {"name": "a", "ports": [{"containerPort": 81, "protocol": "UDP"}]}
            ]}}}}),
        );
        // Without $setElementOrder the patch's elements come first, in the patch's order.
        assert_eq!(
            containers(&patched),
            &json!([
                {"name": "b", "image": "b:2"},
                {"name": "a", "image": "a:1", "ports": [
                    {"containerPort": 80}, {"containerPort": 81, "protocol": "UDP"}
                ]}
            ])
        );
    }

    #[test]
    fn delete_directive_removes_a_container() {
        let original =
            deployment(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]));
        let patched = smp(
            ("apps", "Deployment"),
            original,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "a", "$patch": "delete"}
            ]}}}}),
        );
        assert_eq!(containers(&patched), &json!([{"name": "b", "image": "b"}]));
    }

    #[test]
    fn set_element_order_orders_the_merged_list() {
        let original =
            deployment(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]));
        let patched = smp(
            ("apps", "Deployment"),
            original,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "a:2"}]
            }}}}),
        );
        assert_eq!(
            containers(&patched),
            &json!([{"name": "b", "image": "b"}, {"name": "a", "image": "a:2"}])
        );
    }

    #[test]
    fn retain_keys_on_the_deployment_strategy() {
        let original = json!({"spec": {"strategy": {
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}
        }}});
        let patched = smp(
            ("apps", "Deployment"),
            original,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(patched["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn delete_from_primitive_list_on_pod_finalizers() {
        let original = json!({"metadata": {"name": "p", "finalizers": ["a", "b", "c"]},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let patched = smp(
            ("", "Pod"),
            original,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["d"]}}),
        );
        assert_eq!(patched["metadata"]["finalizers"], json!(["d", "a", "c"]));
    }

    #[test]
    fn pod_volumes_and_env_merge_by_name() {
        let original = json!({"spec": {
            "volumes": [{"name": "v1", "emptyDir": {}}],
            "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]
        }});
        let patched = smp(
            ("", "Pod"),
            original,
            json!({"spec": {
                "volumes": [{"name": "v2", "emptyDir": {}}],
                "containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]
            }}),
        );
        assert_eq!(
            patched["spec"]["volumes"],
            json!([{"name": "v2", "emptyDir": {}}, {"name": "v1", "emptyDir": {}}])
        );
        assert_eq!(
            patched["spec"]["containers"][0]["env"],
            json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
        );
    }
}
