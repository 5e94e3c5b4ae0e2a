//! The built-in kinds' catalogs, each built when its kind is first asked for, from the
//! lines of `structure.json` its definition reaches. A server's start writes a few kinds
//! (its lease, its endpoints), so it resolves the few dozen definitions those reach rather
//! than all 735: resolving the whole catalog was an eighth of a restart's CPU and about
//! 1 MiB of heap held for as long as the server ran.
//!
//! Definitions two kinds share (ObjectMeta, PodSpec) are resolved once per kind; a server
//! that writes every built-in kind holds a few times the one catalog's nodes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use kapi_schema::{Catalog, KindSchema};

use crate::STRUCTURE;

/// One definition of `structure.json`, and its kind's catalog once built.
struct Definition {
    name: &'static str,
    /// The definition's schema, as JSON text.
    schema: &'static str,
    catalog: OnceLock<Arc<Catalog>>,
}

/// Where each definition of `structure.json` is, by name and by kind.
struct Index {
    definitions: Vec<Definition>,
    by_name: HashMap<&'static str, usize>,
    /// Kind → the `(group, version)`s that have it, with the definition of each.
    by_kind: HashMap<String, Vec<(String, String, usize)>>,
}

/// The schema of the built-in kind `group`/`version`/`kind`, if Kubernetes has it.
pub fn kind_schema(group: &str, version: &str, kind: &str) -> Option<KindSchema> {
    let index = index();
    let at = index.find(group, version, kind)?;
    let definition = &index.definitions[at];
    let catalog = definition
        .catalog
        .get_or_init(|| Arc::new(index.catalog_of(at)));
    KindSchema::typed(catalog.clone(), definition.name)
}

/// The index of `structure.json`, made on first use (it reads each line's name, and parses
/// only the kinds' definitions, for their group-version-kinds).
fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| Index::of(STRUCTURE))
}

impl Index {
    /// The index of `structure`: a JSON object with one definition per line.
    fn of(structure: &'static str) -> Index {
        let definitions: Vec<Definition> = structure.lines().filter_map(definition).collect();
        let by_name = definitions
            .iter()
            .enumerate()
            .map(|(at, d)| (d.name, at))
            .collect();
        let mut by_kind: HashMap<String, Vec<(String, String, usize)>> = HashMap::new();
        for (at, d) in definitions.iter().enumerate() {
            for (group, version, kind) in group_version_kinds(d.schema) {
                by_kind.entry(kind).or_default().push((group, version, at));
            }
        }
        Index {
            definitions,
            by_name,
            by_kind,
        }
    }

    /// The definition of the kind `group`/`version`/`kind`.
    fn find(&self, group: &str, version: &str, kind: &str) -> Option<usize> {
        self.by_kind
            .get(kind)?
            .iter()
            .find(|(g, v, _)| g == group && v == version)
            .map(|&(_, _, at)| at)
    }

    /// A catalog of the definition `root` and every definition it reaches.
    fn catalog_of(&self, root: usize) -> Catalog {
        let mut reached = Map::new();
        let mut pending = vec![root];
        let mut seen = HashSet::from([root]);
        while let Some(at) = pending.pop() {
            let definition = &self.definitions[at];
            let schema: Value =
                serde_json::from_str(definition.schema).expect("structure.json's schemas are JSON");
            let mut names = Vec::new();
            references(&schema, &mut names);
            for name in names {
                if let Some(&next) = self.by_name.get(name)
                    && seen.insert(next)
                {
                    pending.push(next);
                }
            }
            reached.insert(definition.name.to_string(), schema);
        }
        Catalog::from_definitions(&reached)
    }
}

/// The definition on one line of `structure.json` (`"name":{...},`); `None` for the lines
/// that open and close the object.
fn definition(line: &'static str) -> Option<Definition> {
    let line = line.strip_suffix(',').unwrap_or(line);
    let (name, schema) = line.strip_prefix('"')?.split_once("\":")?;
    Some(Definition {
        name,
        schema,
        catalog: OnceLock::new(),
    })
}

/// The `(group, version, kind)`s a definition's schema names. Only the value of its last
/// `x-kubernetes-group-version-kind` is parsed: the generator writes keys in order, so in a
/// kind's definition that is the last top-level key (no nested schema has one; a test checks
/// that these are all the kinds a whole parse finds).
fn group_version_kinds(schema: &str) -> Vec<(String, String, String)> {
    const KEY: &str = "\"x-kubernetes-group-version-kind\":";
    let Some(at) = schema.rfind(KEY) else {
        return Vec::new();
    };
    let value = serde_json::Deserializer::from_str(&schema[at + KEY.len()..])
        .into_iter::<Value>()
        .next();
    let Some(Ok(gvks)) = value else {
        return Vec::new();
    };
    let definition = serde_json::json!({ "x-kubernetes-group-version-kind": gvks });
    kapi_schema::group_version_kinds(&definition).collect()
}

/// The definition names of every `$ref` in `schema` (`#/definitions/<name>`).
fn references<'a>(schema: &'a Value, names: &mut Vec<&'a str>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("$ref", Value::String(reference)) => {
                        names.extend(reference.rsplit('/').next());
                    }
                    _ => references(value, names),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, names)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` names a definition the file has, so a kind's catalog lacks nothing.
    #[test]
    fn every_reference_is_defined() {
        let index = index();
        assert_eq!(index.definitions.len(), 735);
        for definition in &index.definitions {
            let schema: Value = serde_json::from_str(definition.schema).unwrap();
            let mut names = Vec::new();
            references(&schema, &mut names);
            for name in names {
                assert!(
                    index.by_name.contains_key(name),
                    "{} refers to {name}",
                    definition.name
                );
            }
        }
    }

    /// The kinds the index finds are those a whole parse of every definition finds.
    #[test]
    fn every_kind_is_found() {
        let structure: Map<String, Value> = serde_json::from_str(STRUCTURE).unwrap();
        let mut parsed: Vec<_> = structure
            .values()
            .flat_map(kapi_schema::group_version_kinds)
            .collect();
        let mut found: Vec<_> = index()
            .by_kind
            .iter()
            .flat_map(|(kind, at)| {
                at.iter()
                    .map(|(g, v, _)| (g.clone(), v.clone(), kind.clone()))
            })
            .collect();
        parsed.sort();
        found.sort();
        assert_eq!(found, parsed);
    }

    /// Each kind's own catalog gives the node the whole catalog gives, down to its fields.
    #[test]
    fn each_kind_is_as_in_the_whole_catalog() {
        let whole = crate::tests::whole_catalog();
        let kinds: Vec<_> = index()
            .by_kind
            .iter()
            .flat_map(|(kind, at)| at.iter().map(move |(g, v, _)| (g, v, kind)))
            .collect();
        assert!(kinds.len() > 150, "{}", kinds.len());
        for (group, version, kind) in kinds {
            let own = kind_schema(group, version, kind).unwrap();
            let theirs = whole.kind(group, version, kind).unwrap();
            assert_eq!(
                same_shape(own.schema(), theirs, 5),
                Ok(()),
                "{group}/{version} {kind}"
            );
        }
        assert!(kind_schema("apps", "v1", "Nothing").is_none());
        assert!(kind_schema("apps", "v9", "Deployment").is_none());
    }

    /// Whether two nodes agree, `depth` levels of fields down.
    fn same_shape(
        a: kapi_schema::SchemaRef<'_>,
        b: kapi_schema::SchemaRef<'_>,
        depth: usize,
    ) -> Result<(), String> {
        let describe = |n: kapi_schema::SchemaRef<'_>| {
            format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {}",
                n.node_type(),
                n.format(),
                n.definition_name(),
                n.list_type(),
                n.map_type(),
                n.patch_strategy(),
                n.default_value(),
                n.preserves_unknown_fields()
            )
        };
        if describe(a) != describe(b) {
            return Err(format!("{} != {}", describe(a), describe(b)));
        }
        if depth == 0 {
            return Ok(());
        }
        let fields = |n: kapi_schema::SchemaRef<'_>| {
            n.properties()
                .map(|(k, _)| k.to_string())
                .collect::<Vec<_>>()
        };
        if fields(a) != fields(b) {
            return Err(format!("fields {:?} != {:?}", fields(a), fields(b)));
        }
        for ((name, x), (_, y)) in a.properties().zip(b.properties()) {
            same_shape(x, y, depth - 1).map_err(|e| format!("{name}: {e}"))?;
        }
        match (a.items(), b.items()) {
            (Some(x), Some(y)) => same_shape(x, y, depth - 1)?,
            (None, None) => {}
            _ => return Err("items differ".into()),
        }
        match (a.additional_properties(), b.additional_properties()) {
            (Some(x), Some(y)) => same_shape(x, y, depth - 1),
            (None, None) => Ok(()),
            _ => Err("additionalProperties differ".into()),
        }
    }
}
