//! The catalog of the built-in resources kube-apiserver 1.35 serves (generated from upstream's
//! facts by tools/gen_builtin_catalog.py) and the builder that turns it into one
//! [`ResourceDefinition`] per served group-version-resource.
//!
//! Each entry takes its strategy and printer columns from [`crate::kinds`], falling back to the
//! [`generic`] strategy and the NAME/AGE table; its subresources from
//! [`crate::subresources::subresource`] (only those served are listed); and, for versions that
//! are not the stored one, its converter (from [`crate::kinds`] too). The versions of one resource share one
//! [`StorageDefinition`], so they share one registry and watch cache.

mod generated;
mod generic;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kapi_apimachinery::schema::{GroupVersion, GroupVersionKind};
use kapi_server::resource::{
    ApiServicePriority, Capabilities, Name, ResourceDefinition, StorageDefinition, Subresource,
    TableConvertor, Verbs,
};

use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, name_cell, name_column};

pub(crate) use generated::CATALOG;

/// One served group-version-resource, as upstream's discovery describes it, with where and in
/// which version it is stored.
#[derive(Debug)]
pub(crate) struct CatalogEntry {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
    pub namespaced: bool,
    /// Discovery's verbs (`create`, `delete`, ...), sorted.
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub subresources: &'static [CatalogSubresource],
    /// Upstream's etcd key prefix; empty for resources computed per request (reviews,
    /// bindings, componentstatuses), which are never stored.
    pub key_prefix: &'static str,
    /// The group and version objects are written in (the kind is the same).
    pub storage_group: &'static str,
    pub storage_version: &'static str,
}

/// Names of the catalog as a definition's.
fn names(names: &'static [&'static str]) -> Vec<Name> {
    names.iter().copied().map(Cow::Borrowed).collect()
}

/// A subresource of a [`CatalogEntry`] with upstream's verbs.
#[derive(Debug)]
pub(crate) struct CatalogSubresource {
    pub name: &'static str,
    pub verbs: &'static [&'static str],
}

impl CatalogEntry {
    /// Whether this version is the one objects are stored in.
    fn is_storage_version(&self) -> bool {
        self.group == self.storage_group && self.version == self.storage_version
    }

    /// Whether objects of this resource are stored at all.
    fn is_stored(&self) -> bool {
        !self.key_prefix.is_empty()
    }

    fn has_subresource(&self, name: &str) -> bool {
        self.subresources.iter().any(|sub| sub.name == name)
    }
}

/// A catalog entry kapi does not serve, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unserved {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub reason: &'static str,
}

/// Why an entry is not served: it is computed per request and nothing answers its creates.
pub(crate) const NO_CREATER: &str = "computed per request, and no hook answers it";
/// Why an entry is not served: it is served in a version that is not stored and nothing
/// converts between the two.
pub(crate) const NO_CONVERTER: &str = "stored in another version, and no converter is registered";
/// Why an entry is not served: it is read-only and computed per request (componentstatuses).
pub(crate) const NO_READER: &str = "computed per request on reads, which kapi does not implement";

/// The discovery verbs by name (the catalog lists at least one for every resource).
fn verbs_of(names: &[&str]) -> Verbs {
    let verb = |name: &&str| match *name {
        "create" => Verbs::CREATE,
        "delete" => Verbs::DELETE,
        "deletecollection" => Verbs::DELETECOLLECTION,
        "get" => Verbs::GET,
        "list" => Verbs::LIST,
        "patch" => Verbs::PATCH,
        "update" => Verbs::UPDATE,
        "watch" => Verbs::WATCH,
        other => unreachable!("the generated catalog has no verb {other:?}"),
    };
    names
        .iter()
        .map(verb)
        .reduce(|a, b| a | b)
        .expect("every catalog entry has verbs")
}

/// The served subresources of `entry`, in the catalog's (alphabetical) order, with upstream's
/// verbs.
fn subresources(entry: &CatalogEntry) -> Vec<Subresource> {
    entry
        .subresources
        .iter()
        .filter_map(|sub| {
            let served = crate::subresources::subresource(entry.group, entry.plural, sub.name)?;
            Some(Subresource {
                verbs: verbs_of(sub.verbs),
                ..served
            })
        })
        .collect()
}

/// The table of kinds without printer columns of their own: NAME and AGE, as upstream's
/// printers show for most kinds.
fn default_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![name_column(0), age_column()],
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            vec![name_cell(object), age_cell(object)]
        }),
    }
}

/// The stored collection of `entry`, shared by every version of its resource. Events
/// expire `event_ttl` after their last write, as kube-apiserver stores them.
fn storage(
    entry: &CatalogEntry,
    shared: &mut HashMap<(&'static str, &'static str), Arc<StorageDefinition>>,
    event_ttl: Option<Duration>,
) -> Arc<StorageDefinition> {
    let key = if entry.is_stored() {
        ("", entry.key_prefix)
    } else {
        (entry.group, entry.plural)
    };
    shared
        .entry(key)
        .or_insert_with(|| {
            Arc::new(StorageDefinition {
                key_prefix: Cow::Borrowed(entry.key_prefix),
                storage_version: GroupVersionKind::new(
                    entry.storage_group,
                    entry.storage_version,
                    entry.kind,
                ),
                namespaced: entry.namespaced,
                ttl: event_ttl.filter(|_| (entry.storage_group, entry.kind) == ("", "Event")),
                earlier_versions: Some(crate::earlier::read),
            })
        })
        .clone()
}

/// The definition of `entry`, or why it is not served.
fn build(
    entry: &CatalogEntry,
    shared: &mut HashMap<(&'static str, &'static str), Arc<StorageDefinition>>,
    event_ttl: Option<Duration>,
) -> Result<ResourceDefinition, &'static str> {
    let kind =
        crate::kinds::strategies(entry.group, entry.kind).unwrap_or_else(|| KindStrategies {
            strategy: Arc::new(generic::GenericStrategy::for_entry(entry)),
            table: None,
        });
    if !entry.is_stored() && kind.strategy.creater().is_none() {
        return Err(if entry.verbs.contains(&"create") {
            NO_CREATER
        } else {
            NO_READER
        });
    }
    let converter = if entry.is_storage_version() {
        None
    } else {
        let converter = crate::kinds::converter(entry.group, entry.version, entry.kind);
        Some(converter.ok_or(NO_CONVERTER)?)
    };
    Ok(ResourceDefinition {
        group_version: GroupVersion::new(entry.group, entry.version),
        kind: Cow::Borrowed(entry.kind),
        list_kind: Cow::Borrowed(entry.list_kind),
        plural: Cow::Borrowed(entry.plural),
        singular: Cow::Borrowed(entry.singular),
        namespaced: entry.namespaced,
        short_names: names(entry.short_names),
        categories: names(entry.categories),
        verbs: verbs_of(entry.verbs),
        subresources: subresources(entry),
        table: Some(kind.table.unwrap_or_else(default_table)),
        strategy: kind.strategy,
        storage: storage(entry, shared, event_ttl),
        converter,
        deprecation: None,
        capabilities: Capabilities::TYPED,
        priority: kapi_api::api_service_priority(entry.group, entry.version)
            .map_or(ApiServicePriority::DEFAULT, Into::into),
    })
}

/// Every servable catalog entry as a definition, and the entries that are not served;
/// Events expire after `event_ttl`, if given.
pub(crate) fn build_all(event_ttl: Option<Duration>) -> (Vec<ResourceDefinition>, Vec<Unserved>) {
    let mut shared = HashMap::new();
    let mut served = Vec::new();
    let mut unserved = Vec::new();
    for entry in CATALOG {
        match build(entry, &mut shared, event_ttl) {
            Ok(definition) => served.push(definition),
            Err(reason) => unserved.push(Unserved {
                group: entry.group,
                version: entry.version,
                plural: entry.plural,
                reason,
            }),
        }
    }
    (served, unserved)
}

/// Whether `entry` has a status subresource (its main resource's writes keep the status).
pub(crate) fn has_status(entry: &CatalogEntry) -> bool {
    entry.has_subresource("status")
}

#[cfg(test)]
mod tests;
