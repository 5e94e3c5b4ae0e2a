//! The garbage collector's dependency graph, upstream's GraphBuilder: a node per object
//! observed that takes part in ownership (and a "virtual" node per owner referenced but not
//! observed yet), each knowing its owners and dependents, kept from the monitors' events; the
//! other objects observed are kept as plain (`plain.rs`) until a dependent names one. Each
//! change puts the nodes that need a decision on the collector's queues.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::plain::{Plain, uid_number};

/// An object's coordinates: its kind, name, uid and namespace (upstream's objectReference).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Identity {
    pub(crate) kind: Arc<str>,
    pub(crate) api_version: Arc<str>,
    pub(crate) namespace: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) uid: Arc<str>,
}

impl std::fmt::Display for Identity {
    /// Upstream's `[apps/v1/ReplicaSet, namespace: ns, name: n, uid: u]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OwnerRef {
    pub(crate) api_version: Arc<str>,
    pub(crate) kind: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) uid: Arc<str>,
    pub(crate) controller: Option<bool>,
    pub(crate) block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    /// Whether it blocks its owner's foreground deletion.
    pub(crate) fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }

    /// The entry as JSON, its unset fields left out as Go leaves them out.
    pub(crate) fn to_json(&self) -> Value {
        let mut entry = serde_json::json!({"apiVersion": &*self.api_version, "kind": &*self.kind,
            "name": &*self.name, "uid": &*self.uid});
        if let Some(controller) = self.controller {
            entry["controller"] = controller.into();
        }
        if let Some(block) = self.block_owner_deletion {
            entry["blockOwnerDeletion"] = block.into();
        }
        entry
    }

    /// The owner's identity as seen from a dependent in `namespace`.
    fn identity(&self, namespace: &Arc<str>) -> Identity {
        Identity {
            kind: self.kind.clone(),
            api_version: self.api_version.clone(),
            namespace: namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
        }
    }

    /// Whether it names `identity`'s kind, name and uid (upstream's
    /// ownerReferenceMatchesCoordinates).
    fn matches(&self, identity: &Identity) -> bool {
        self.uid == identity.uid
            && self.name == identity.name
            && self.kind == identity.kind
            && self.api_version == identity.api_version
    }
}

/// What the collector needs of an object's metadata.
#[derive(Clone, Debug, Default)]
pub(crate) struct Meta {
    pub(crate) uid: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) namespace: Arc<str>,
    pub(crate) resource_version: String,
    pub(crate) owners: Vec<OwnerRef>,
    pub(crate) finalizers: Vec<String>,
    pub(crate) being_deleted: bool,
}

impl Meta {
    /// The metadata of an object or PartialObjectMetadata.
    pub(crate) fn of(object: &Value) -> Meta {
        let meta = &object["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let shared = |v: &Value| Arc::from(v.as_str().unwrap_or_default());
        Meta {
            uid: shared(&meta["uid"]),
            name: shared(&meta["name"]),
            namespace: shared(&meta["namespace"]),
            resource_version: text(&meta["resourceVersion"]),
            owners: meta["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| OwnerRef {
                    api_version: shared(&r["apiVersion"]),
                    kind: shared(&r["kind"]),
                    name: shared(&r["name"]),
                    uid: shared(&r["uid"]),
                    controller: r["controller"].as_bool(),
                    block_owner_deletion: r["blockOwnerDeletion"].as_bool(),
                })
                .collect(),
            finalizers: meta["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect(),
            being_deleted: !meta["deletionTimestamp"].is_null(),
        }
    }

    /// Whether it carries `finalizer`.
    pub(crate) fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// Whether nothing in it makes the object take part in ownership: no owners, not being
    /// deleted, neither of the collector's finalizers (its dependents the graph knows).
    fn is_plain(&self) -> bool {
        self.owners.is_empty()
            && !self.being_deleted
            && !self.has_finalizer(ORPHAN)
            && !self.has_finalizer(FOREGROUND)
    }
}

/// The finalizer of an object whose dependents are orphaned before it goes.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer of an object whose blocking dependents are deleted before it goes.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// One object in the graph.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) identity: Identity,
    pub(crate) owners: Box<[OwnerRef]>,
    /// The uids of the objects naming it as owner.
    pub(crate) dependents: Dependents,
    pub(crate) being_deleted: bool,
    /// Whether it carried the `orphan` and the `foregroundDeletion` finalizer when last
    /// observed.
    pub(crate) orphan: bool,
    pub(crate) foreground: bool,
    /// Being deleted in the foreground: waiting for its blocking dependents.
    pub(crate) deleting_dependents: bool,
    /// Known only from owner references, not observed by a monitor.
    pub(crate) virtual_: bool,
}

impl Node {
    /// The node of an object observed with no owners and no dependents yet.
    fn observed(identity: Identity) -> Node {
        Node {
            identity,
            owners: Box::default(),
            dependents: Dependents::default(),
            being_deleted: false,
            orphan: false,
            foreground: false,
            deleting_dependents: false,
            virtual_: false,
        }
    }

    /// Whether it no longer takes part in ownership (see [`Meta::is_plain`]).
    fn is_plain(&self) -> bool {
        !self.virtual_
            && self.owners.is_empty()
            && self.dependents.is_empty()
            && !self.being_deleted
            && !self.orphan
            && !self.foreground
            && !self.deleting_dependents
    }

    /// Whether it was being deleted with `finalizer` when last observed.
    fn was_deleting_with(&self, finalizer: &str) -> bool {
        let carried = match finalizer {
            ORPHAN => self.orphan,
            _ => self.foreground,
        };
        !self.virtual_ && self.being_deleted && carried
    }
}

/// The uids of the objects naming a node as owner. Most nodes have none, so the set is
/// allocated with the first (a node is one of the graph's largest per-object costs).
#[derive(Clone, Debug, Default)]
#[expect(
    clippy::box_collection,
    reason = "a boxed set is one pointer in every node; an empty HashSet is 48 bytes"
)]
pub(crate) struct Dependents(Option<Box<HashSet<Arc<str>>>>);

impl Dependents {
    fn insert(&mut self, uid: Arc<str>) {
        self.0.get_or_insert_default().insert(uid);
    }

    fn remove(&mut self, uid: &str) {
        if let Some(set) = &mut self.0 {
            set.remove(uid);
            if set.is_empty() {
                self.0 = None;
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|set| set.is_empty())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<str>> {
        self.0.iter().flat_map(|set| set.iter())
    }
}

/// Whether an event comes from a monitor or stands for an object the collector found gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Add,
    Update,
    Delete,
}

/// A change to the graph.
pub(crate) struct Event {
    pub(crate) type_: EventType,
    /// A delete the collector derived from a lookup, not one a monitor observed.
    pub(crate) virtual_: bool,
    pub(crate) api_version: Arc<str>,
    pub(crate) kind: Arc<str>,
    pub(crate) meta: Meta,
}

impl Event {
    fn identity(&self) -> Identity {
        Identity {
            kind: self.kind.clone(),
            api_version: self.api_version.clone(),
            namespace: self.meta.namespace.clone(),
            name: self.meta.name.clone(),
            uid: self.meta.uid.clone(),
        }
    }
}

/// What processing events asks of the collector.
#[derive(Default)]
pub(crate) struct Work {
    /// Nodes (uids) to decide on.
    pub(crate) attempt_to_delete: Vec<Arc<str>>,
    /// The same, after a backoff.
    pub(crate) attempt_to_delete_later: Vec<Arc<str>>,
    /// Owners (uids) whose dependents are to be orphaned.
    pub(crate) attempt_to_orphan: Vec<Arc<str>>,
    /// Owner identities now known to be absent.
    pub(crate) absent: Vec<Identity>,
    /// Dependents whose owner reference names an owner in another namespace, and that
    /// reference (for the `OwnerRefInvalidNamespace` event).
    pub(crate) invalid_namespace: Vec<(Identity, OwnerRef)>,
}

impl Work {
    /// Adds what `other` asks for.
    fn extend(&mut self, other: Work) {
        self.attempt_to_delete.extend(other.attempt_to_delete);
        self.attempt_to_delete_later
            .extend(other.attempt_to_delete_later);
        self.attempt_to_orphan.extend(other.attempt_to_orphan);
        self.absent.extend(other.absent);
        self.invalid_namespace.extend(other.invalid_namespace);
    }
}

/// The graph: every node by uid, and the plain objects. Nodes are boxed: the table keeps
/// about 40% of its slots empty, and an empty slot of a boxed node is a pointer, not a
/// 112-byte node.
#[derive(Default)]
pub(crate) struct Graph {
    nodes: HashMap<Arc<str>, Box<Node>>,
    /// The objects observed with no node; a uid is in one of the two at most.
    plain: Plain,
}

impl Graph {
    /// The node of `uid`.
    pub(crate) fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid).map(|node| &**node)
    }

    /// The nodes of the dependents of `node`.
    pub(crate) fn dependents(&self, node: &Node) -> Vec<Node> {
        node.dependents
            .iter()
            .filter_map(|uid| self.nodes.get(uid).map(|node| (**node).clone()))
            .collect()
    }

    /// Applies one event (upstream's processGraphChanges).
    pub(crate) fn process(&mut self, event: &Event) -> Work {
        let mut work = Work::default();
        let uid = &event.meta.uid;
        let found = self.nodes.contains_key(uid);
        if !found && !event.virtual_ && self.plain_event(event) {
            return work;
        }
        let was = |finalizer| {
            self.nodes
                .get(uid)
                .is_some_and(|node| node.was_deleting_with(finalizer))
        };
        let was = Deleting {
            orphan: was(ORPHAN),
            foreground: was(FOREGROUND),
        };
        if found && !event.virtual_ && self.nodes[uid].virtual_ {
            self.observe(uid, event.identity(), &mut work);
        }
        // Owners this object stopped naming: each may no longer take part in ownership.
        let released = match (event.type_, found) {
            (EventType::Add | EventType::Update, false) => {
                let mut node = Node::observed(event.identity());
                node.owners = event.meta.owners.clone().into();
                // As upstream: a node first observed being deleted with `foregroundDeletion`
                // waits for its dependents, whatever else its finalizers ask.
                node.deleting_dependents =
                    event.meta.being_deleted && event.meta.has_finalizer(FOREGROUND);
                let owners = node.owners.clone();
                self.nodes.insert(uid.clone(), Box::new(node));
                self.add_dependent_to_owners(uid, &owners, &mut work);
                Vec::new()
            }
            (EventType::Add | EventType::Update, true) => {
                let old_owners = self.nodes[uid].owners.clone();
                let (added, removed, changed) = owner_diffs(&old_owners, &event.meta.owners);
                if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
                    self.unblocked_owners(&removed, &changed, &mut work);
                    self.nodes.get_mut(uid).expect("found").owners =
                        event.meta.owners.clone().into();
                    self.add_dependent_to_owners(uid, &added, &mut work);
                    for owner in &removed {
                        self.remove_dependent(&owner.uid, uid);
                    }
                }
                removed
            }
            (EventType::Delete, false) => return work,
            (EventType::Delete, true) => {
                self.delete(uid, event, &mut work);
                return work;
            }
        };
        self.observed_deletion(uid, &event.meta);
        self.transitions(uid, event, was, &mut work);
        // The object on its new state first: it may have named itself as owner.
        self.demote(uid);
        for owner in &released {
            self.demote(&owner.uid);
        }
        work
    }

    /// Forgets, before a monitor's new list of the objects of `kind` in `api_version` is
    /// applied (each as an update), what the list lacks: a delete for each node observed
    /// in that version but not listed (upstream's informer deletes what its own store holds
    /// and the list lacks), and every plain object of the kind, which the list's objects
    /// then replace. In one step, so that no dependent can name a plain object the list
    /// lacks in between; a dependent naming a listed object before it is applied makes a
    /// virtual node, which its update then observes.
    pub(crate) fn forget_unlisted(
        &mut self,
        api_version: &Arc<str>,
        kind: &Arc<str>,
        listed: &HashSet<&str>,
    ) -> Work {
        let gone: Vec<Identity> = self
            .nodes
            .values()
            .filter(|node| !node.virtual_ && !listed.contains(&*node.identity.uid))
            .map(|node| &node.identity)
            .filter(|identity| identity.kind == *kind && identity.api_version == *api_version)
            .cloned()
            .collect();
        let mut work = Work::default();
        for identity in gone {
            let meta = Meta {
                uid: identity.uid,
                name: identity.name,
                namespace: identity.namespace,
                ..Meta::default()
            };
            let api_version = identity.api_version;
            let kind = identity.kind;
            work.extend(self.process(&Event {
                type_: EventType::Delete,
                virtual_: false,
                api_version,
                kind,
                meta,
            }));
        }
        self.plain.clear(api_version, kind);
        work
    }

    /// Forgets every plain object of `kind` in `api_version`'s group, whose monitor stopped.
    pub(crate) fn forget_plain(&mut self, api_version: &str, kind: &str) {
        self.plain.clear(api_version, kind);
    }

    /// An event for an object without a node: a plain object is kept as plain (or
    /// forgotten, when deleted), and needs nothing more; `false` when it needs a node.
    fn plain_event(&mut self, event: &Event) -> bool {
        let Some(number) = uid_number(&event.meta.uid) else {
            return false;
        };
        if event.type_ != EventType::Delete && event.meta.is_plain() {
            self.plain.insert(&event.identity(), number);
            return true;
        }
        self.plain.remove(&event.api_version, &event.kind, number);
        event.type_ == EventType::Delete
    }

    /// Records what an event says of the node's deletion: whether it is being deleted (which
    /// cannot be undone), and with which of the collector's finalizers.
    fn observed_deletion(&mut self, uid: &Arc<str>, meta: &Meta) {
        let node = self.nodes.get_mut(uid).expect("in the graph");
        node.being_deleted |= meta.being_deleted;
        node.orphan = meta.has_finalizer(ORPHAN);
        node.foreground = meta.has_finalizer(FOREGROUND);
    }

    /// Removes `dependent` from the dependents of `owner` (whose node the caller then
    /// demotes, once nothing else it applies can change it).
    fn remove_dependent(&mut self, owner: &str, dependent: &str) {
        if let Some(node) = self.nodes.get_mut(owner) {
            node.dependents.remove(dependent);
        }
    }

    /// Keeps a node that no longer takes part in ownership as plain.
    fn demote(&mut self, uid: &Arc<str>) {
        if !self.nodes.get(uid).is_some_and(|node| node.is_plain()) {
            return;
        }
        let Some(number) = uid_number(uid) else {
            return;
        };
        if let Some(node) = self.nodes.remove(uid) {
            self.plain.insert(&node.identity, number);
        }
    }

    /// A virtual node is observed: its identity is now the observed one, and dependents
    /// that named it otherwise are looked at again.
    fn observe(&mut self, uid: &Arc<str>, observed: Identity, work: &mut Work) {
        let node = self.nodes.get(uid).expect("found").clone();
        if node.identity != observed {
            let (_, mismatched) = self.partition_dependents(&node, &observed);
            for dependent in mismatched {
                if !observed.namespace.is_empty()
                    && dependent.identity.namespace != observed.namespace
                    && let Some(reference) = dependent.owners.iter().find(|o| o.uid == observed.uid)
                {
                    work.invalid_namespace
                        .push((dependent.identity.clone(), reference.clone()));
                }
                work.attempt_to_delete.push(dependent.identity.uid);
            }
        }
        let node = self.nodes.get_mut(uid).expect("found");
        node.identity = observed;
        node.virtual_ = false;
    }

    /// Removes the node of a delete event (or, for a virtual delete that disagrees with what
    /// the graph knows, only marks the identity absent for the dependents that agree).
    fn delete(&mut self, uid: &Arc<str>, event: &Event, work: &mut Work) {
        let existing = self.nodes[uid].clone();
        let deleted = event.identity();
        if event.virtual_ {
            let (matching, mismatched) = self.partition_dependents(&existing, &deleted);
            if existing.virtual_ && !mismatched.is_empty() {
                if !matching.is_empty() {
                    work.absent.push(deleted.clone());
                    work.attempt_to_delete
                        .extend(matching.into_iter().map(|d| d.identity.uid));
                }
                if existing.identity == deleted
                    && let Some(replacement) = alternate_identity(&mismatched, &deleted)
                {
                    self.nodes.get_mut(uid).expect("found").identity = replacement;
                    work.attempt_to_delete_later.push(uid.clone());
                }
                return;
            }
            if !existing.virtual_ && existing.identity != deleted {
                if !matching.is_empty() {
                    work.absent.push(deleted);
                    work.attempt_to_delete
                        .extend(matching.into_iter().map(|d| d.identity.uid));
                }
                return;
            }
        }
        self.nodes.remove(uid);
        for owner in &existing.owners {
            self.remove_dependent(&owner.uid, uid);
            self.demote(&owner.uid);
        }
        if !existing.dependents.is_empty() {
            work.absent.push(deleted);
        }
        work.attempt_to_delete
            .extend(existing.dependents.iter().cloned());
        for owner in &existing.owners {
            if self
                .nodes
                .get(&owner.uid)
                .is_some_and(|o| o.deleting_dependents)
            {
                work.attempt_to_delete.push(owner.uid.clone());
            }
        }
    }

    /// Adds the node `uid` to the dependents of each of `owners`, creating a virtual node
    /// for an owner not in the graph (to be checked), and queueing the dependent when one of
    /// its references may be invalid (another namespace, other coordinates).
    fn add_dependent_to_owners(&mut self, uid: &Arc<str>, owners: &[OwnerRef], work: &mut Work) {
        let dependent = self.nodes[uid].identity.clone();
        let mut potentially_invalid = false;
        for reference in owners {
            if !self.nodes.contains_key(&reference.uid)
                && let Some(observed) = self.plain.take(&reference.uid)
            {
                self.nodes
                    .insert(reference.uid.clone(), Box::new(Node::observed(observed)));
            }
            let Some(owner) = self.nodes.get_mut(&reference.uid) else {
                let mut node = Node::observed(reference.identity(&dependent.namespace));
                node.dependents.insert(uid.clone());
                node.virtual_ = true;
                self.nodes.insert(reference.uid.clone(), Box::new(node));
                work.attempt_to_delete.push(reference.uid.clone());
                continue;
            };
            owner.dependents.insert(uid.clone());
            let owner_namespaced = !owner.identity.namespace.is_empty();
            if owner_namespaced && owner.identity.namespace != dependent.namespace {
                if !owner.virtual_ {
                    work.invalid_namespace
                        .push((dependent.clone(), reference.clone()));
                }
                potentially_invalid = true;
            } else if !reference.matches(&owner.identity)
                || (!owner_namespaced
                    && owner.identity.namespace != dependent.namespace
                    && owner.virtual_)
            {
                potentially_invalid = true;
            }
        }
        if potentially_invalid {
            work.attempt_to_delete.push(uid.clone());
        }
    }

    /// Owners a removed or no longer blocking reference stops blocking are looked at again.
    fn unblocked_owners(
        &self,
        removed: &[OwnerRef],
        changed: &[(OwnerRef, OwnerRef)],
        work: &mut Work,
    ) {
        let unblocked = removed.iter().filter(|r| r.blocks()).chain(
            changed
                .iter()
                .filter(|(old, new)| old.blocks() && !new.blocks())
                .map(|(_, new)| new),
        );
        for reference in unblocked {
            if self.nodes.contains_key(&reference.uid) {
                work.attempt_to_delete.push(reference.uid.clone());
            }
        }
    }

    /// The deletion of the node starts waiting for its dependents: orphaned (the `orphan`
    /// finalizer) or deleted first (`foregroundDeletion`); `was` is what the graph knew
    /// before the event.
    fn transitions(&mut self, uid: &Arc<str>, event: &Event, was: Deleting, work: &mut Work) {
        let starts = |finalizer: &str, before: bool| {
            event.meta.being_deleted && event.meta.has_finalizer(finalizer) && !before
        };
        if starts(ORPHAN, was.orphan) {
            work.attempt_to_orphan.push(uid.clone());
            return;
        }
        if starts(FOREGROUND, was.foreground) {
            let node = self.nodes.get_mut(uid).expect("in the graph");
            node.deleting_dependents = true;
            work.attempt_to_delete
                .extend(node.dependents.iter().cloned());
            work.attempt_to_delete.push(uid.clone());
        }
    }

    /// The dependents of `owner` whose reference to its uid names `identity`, and those
    /// naming it otherwise (a dependent can be in both).
    fn partition_dependents(&self, owner: &Node, identity: &Identity) -> (Vec<Node>, Vec<Node>) {
        let (mut matching, mut mismatched) = (Vec::new(), Vec::new());
        for dependent in self.dependents(owner) {
            let (mut found, mut other) = (false, false);
            if !identity.namespace.is_empty() && identity.namespace != dependent.identity.namespace
            {
                other = true;
            } else {
                for reference in dependent.owners.iter().filter(|r| r.uid == identity.uid) {
                    if reference.matches(identity) {
                        found = true;
                    } else {
                        other = true;
                    }
                }
            }
            if found {
                matching.push(dependent.clone());
            }
            if other {
                mismatched.push(dependent);
            }
        }
        (matching, mismatched)
    }
}

/// Whether an object was being deleted with the `orphan` and with the `foregroundDeletion`
/// finalizer, as the graph last observed it.
#[derive(Clone, Copy)]
struct Deleting {
    orphan: bool,
    foreground: bool,
}

/// The owner references added, removed and changed (old, new) between two lists, by uid.
fn owner_diffs(
    old: &[OwnerRef],
    new: &[OwnerRef],
) -> (Vec<OwnerRef>, Vec<OwnerRef>, Vec<(OwnerRef, OwnerRef)>) {
    let (mut added, mut changed) = (Vec::new(), Vec::new());
    for reference in new {
        match old.iter().find(|o| o.uid == reference.uid) {
            Some(before) if before != reference => {
                changed.push((before.clone(), reference.clone()))
            }
            Some(_) => {}
            None => added.push(reference.clone()),
        }
    }
    let removed = old
        .iter()
        .filter(|o| !new.iter().any(|n| n.uid == o.uid))
        .cloned()
        .collect();
    (added, removed, changed)
}

/// Another identity the dependents give the owner whose `absent` identity was verified
/// gone: the first that follows it in upstream's order, else the first (its
/// getAlternateOwnerIdentity).
fn alternate_identity(dependents: &[Node], absent: &Identity) -> Option<Identity> {
    let mut alternates: Vec<Identity> = dependents
        .iter()
        .flat_map(|d| {
            d.owners
                .iter()
                .filter(|r| r.uid == absent.uid)
                .filter(|r| {
                    !(r.matches(absent)
                        && (absent.namespace.is_empty()
                            || absent.namespace == d.identity.namespace))
                })
                .map(|r| {
                    let namespace = if absent.namespace.is_empty() {
                        Arc::from("")
                    } else {
                        d.identity.namespace.clone()
                    };
                    r.identity(&namespace)
                })
        })
        .filter(|identity| identity != absent)
        .collect();
    alternates.sort();
    alternates.dedup();
    alternates
        .iter()
        .find(|identity| *identity > absent)
        .or(alternates.first())
        .cloned()
}

/// The owners verified absent, most recent first, at most [`ABSENT_OWNERS`] (upstream's
/// absentOwnerCache, an LRU of 500).
#[derive(Default)]
pub(crate) struct AbsentOwners {
    known: HashSet<Identity>,
    order: VecDeque<Identity>,
}

/// How many absent owners are remembered.
const ABSENT_OWNERS: usize = 500;

impl AbsentOwners {
    /// Remembers `identity` as absent.
    pub(crate) fn add(&mut self, identity: Identity) {
        if self.known.insert(identity.clone()) {
            self.order.push_back(identity);
            if self.order.len() > ABSENT_OWNERS
                && let Some(oldest) = self.order.pop_front()
            {
                self.known.remove(&oldest);
            }
        }
    }

    /// Whether `identity` is known to be absent.
    pub(crate) fn has(&self, identity: &Identity) -> bool {
        self.known.contains(identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An event of the `kind` object `object` in `v1`.
    pub(super) fn event(type_: EventType, kind: &str, object: Value) -> Event {
        Event {
            type_,
            virtual_: false,
            api_version: "v1".into(),
            kind: kind.into(),
            meta: Meta::of(&object),
        }
    }

    fn owned(name: &str, uid: &str, owner_uid: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner_uid,
             "blockOwnerDeletion": true}]}})
    }

    #[test]
    fn owners_not_observed_yet_are_virtual_and_checked() {
        let mut graph = Graph::default();
        let work = graph.process(&event(EventType::Add, "Secret", owned("s", "d1", "o1")));
        assert_eq!(work.attempt_to_delete, [Arc::from("o1")]);
        let owner = graph.node("o1").unwrap();
        assert!(owner.virtual_);
        assert_eq!(&*owner.identity.namespace, "ns");
        assert!(owner.dependents.iter().any(|uid| &**uid == "d1"));
        let observed = json!({"metadata": {"name": "owner", "namespace": "ns", "uid": "o1"}});
        let work = graph.process(&event(EventType::Add, "ConfigMap", observed));
        assert!(work.attempt_to_delete.is_empty());
        assert!(!graph.node("o1").unwrap().virtual_);
    }

    #[test]
    fn a_deleted_owner_sends_its_dependents_to_be_deleted() {
        let mut graph = Graph::default();
        let owner = json!({"metadata": {"name": "owner", "namespace": "ns", "uid": "o1"}});
        graph.process(&event(EventType::Add, "ConfigMap", owner.clone()));
        graph.process(&event(EventType::Add, "Secret", owned("s", "d1", "o1")));
        let work = graph.process(&event(EventType::Delete, "ConfigMap", owner));
        assert_eq!(work.attempt_to_delete, [Arc::from("d1")]);
        assert_eq!(work.absent.len(), 1);
        assert!(graph.node("o1").is_none());
    }

    #[test]
    fn deletions_waiting_for_dependents_are_queued() {
        let mut graph = Graph::default();
        graph.process(&event(EventType::Add, "Secret", owned("s", "d1", "o1")));
        let orphaning = json!({"metadata": {"name": "owner", "namespace": "ns", "uid": "o1",
            "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan"]}});
        let work = graph.process(&event(EventType::Update, "ConfigMap", orphaning));
        assert_eq!(work.attempt_to_orphan, [Arc::from("o1")]);
        let foreground = json!({"metadata": {"name": "other", "namespace": "ns", "uid": "o2",
            "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]}});
        let work = graph.process(&event(EventType::Add, "ConfigMap", foreground));
        assert_eq!(work.attempt_to_delete, [Arc::from("o2")]);
        assert!(graph.node("o2").unwrap().deleting_dependents);
    }

    #[test]
    fn a_reference_into_another_namespace_is_reported() {
        let mut graph = Graph::default();
        let owner = json!({"metadata": {"name": "owner", "namespace": "elsewhere", "uid": "o1"}});
        graph.process(&event(EventType::Add, "ConfigMap", owner));
        let work = graph.process(&event(EventType::Add, "Secret", owned("s", "d1", "o1")));
        assert_eq!(work.attempt_to_delete, [Arc::from("d1")]);
        assert_eq!(work.invalid_namespace.len(), 1);
        assert_eq!(
            work.invalid_namespace[0]
                .1
                .identity(&Arc::from("ns"))
                .to_string(),
            "[v1/ConfigMap, namespace: ns, name: owner, uid: o1]"
        );
    }
}

#[cfg(test)]
mod plain_tests {
    use super::*;
    use serde_json::json;

    const OWNER: &str = "0f0f0f0f-0000-4000-8000-000000000001";
    const DEPENDENT: &str = "0f0f0f0f-0000-4000-8000-000000000002";
    const OTHER: &str = "0f0f0f0f-0000-4000-8000-000000000003";

    /// An event of the `kind` object whose metadata is `meta`.
    fn event(type_: EventType, kind: &str, meta: Value) -> Event {
        super::tests::event(type_, kind, json!({ "metadata": meta }))
    }

    /// A graph that has observed the plain ConfigMap `owner` (uid [`OWNER`]) in `ns`.
    fn with_owner() -> Graph {
        let mut graph = Graph::default();
        graph.process(&event(
            EventType::Add,
            "ConfigMap",
            owner("owner", OWNER, "ns"),
        ));
        graph
    }

    fn owner(name: &str, uid: &str, namespace: &str) -> Value {
        json!({"name": name, "namespace": namespace, "uid": uid})
    }

    fn dependent(owner_uid: &str) -> Value {
        json!({"name": "dep", "namespace": "ns", "uid": DEPENDENT, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner_uid}]})
    }

    #[test]
    fn plain_objects_become_nodes_when_named_and_plain_again_when_not() {
        let mut graph = with_owner();
        assert!(graph.node(OWNER).is_none());
        let work = graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        assert!(work.attempt_to_delete.is_empty());
        let node = graph.node(OWNER).expect("a node once named");
        assert!(!node.virtual_);
        assert_eq!(
            node.identity.to_string(),
            format!("[v1/ConfigMap, namespace: ns, name: owner, uid: {OWNER}]")
        );
        assert!(node.dependents.iter().any(|uid| &**uid == DEPENDENT));

        // The dependent gone, the owner is plain again; named again, a node again.
        graph.process(&event(EventType::Delete, "Secret", dependent(OWNER)));
        assert!(graph.node(OWNER).is_none());
        graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        assert!(graph.node(OWNER).is_some_and(|n| !n.virtual_));

        // Its reference removed, the dependent is plain, and so is the owner.
        let released = json!({"name": "dep", "namespace": "ns", "uid": DEPENDENT});
        graph.process(&event(EventType::Update, "Secret", released));
        assert!(graph.node(OWNER).is_none());
        assert!(graph.node(DEPENDENT).is_none());

        // Deleted while plain, it is forgotten: a reference to it now makes a virtual node.
        graph.process(&event(
            EventType::Delete,
            "ConfigMap",
            owner("owner", OWNER, "ns"),
        ));
        let work = graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        assert_eq!(work.attempt_to_delete, [Arc::from(OWNER)]);
        assert!(graph.node(OWNER).is_some_and(|n| n.virtual_));
    }

    #[test]
    fn a_plain_owner_deleted_sends_its_dependents_to_be_deleted() {
        let mut graph = with_owner();
        graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        let work = graph.process(&event(
            EventType::Delete,
            "ConfigMap",
            owner("owner", OWNER, "ns"),
        ));
        assert_eq!(work.attempt_to_delete, [Arc::from(DEPENDENT)]);
        assert_eq!(work.absent.len(), 1);
    }

    #[test]
    fn a_plain_object_deleted_in_the_foreground_becomes_a_node_waiting() {
        let mut graph = with_owner();
        let deleting = json!({"name": "owner", "namespace": "ns", "uid": OWNER,
            "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]});
        let work = graph.process(&event(EventType::Update, "ConfigMap", deleting.clone()));
        assert_eq!(work.attempt_to_delete, [Arc::from(OWNER)]);
        assert!(graph.node(OWNER).is_some_and(|n| n.deleting_dependents));
        // The same state again is no new transition.
        let work = graph.process(&event(EventType::Update, "ConfigMap", deleting));
        assert!(work.attempt_to_delete.is_empty());
    }

    #[test]
    fn an_object_that_stops_naming_itself_as_owner_becomes_plain() {
        let mut graph = Graph::default();
        let itself = json!({"name": "self", "namespace": "ns", "uid": OWNER, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "self", "uid": OWNER}]});
        graph.process(&event(EventType::Add, "ConfigMap", itself));
        assert!(graph.node(OWNER).is_some());
        graph.process(&event(
            EventType::Update,
            "ConfigMap",
            owner("self", OWNER, "ns"),
        ));
        assert!(graph.node(OWNER).is_none());
        // Plain, it is promoted again when named.
        graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        assert!(graph.node(OWNER).is_some_and(|n| !n.virtual_));
    }

    #[test]
    fn an_object_first_seen_orphaning_and_in_the_foreground_waits_for_its_dependents() {
        let mut graph = Graph::default();
        let both = json!({"name": "owner", "namespace": "ns", "uid": OWNER,
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["orphan", "foregroundDeletion"]});
        let work = graph.process(&event(EventType::Add, "ConfigMap", both));
        assert_eq!(work.attempt_to_orphan, [Arc::from(OWNER)]);
        assert!(graph.node(OWNER).is_some_and(|n| n.deleting_dependents));
    }

    #[test]
    fn a_new_list_forgets_only_the_nodes_of_its_own_version() {
        let mut graph = with_owner();
        graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        let work =
            graph.forget_unlisted(&Arc::from("v2"), &Arc::from("ConfigMap"), &HashSet::new());
        assert!(work.attempt_to_delete.is_empty());
        assert!(graph.node(OWNER).is_some());
    }

    #[test]
    fn a_plain_owner_in_another_namespace_is_reported() {
        let mut graph = Graph::default();
        graph.process(&event(
            EventType::Add,
            "ConfigMap",
            owner("owner", OWNER, "elsewhere"),
        ));
        let work = graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        assert_eq!(work.attempt_to_delete, [Arc::from(DEPENDENT)]);
        assert_eq!(work.invalid_namespace.len(), 1);
    }

    #[test]
    fn a_new_list_deletes_the_nodes_it_lacks_and_replaces_the_plain_objects() {
        let mut graph = with_owner();
        graph.process(&event(
            EventType::Add,
            "ConfigMap",
            owner("other", OTHER, "ns"),
        ));
        graph.process(&event(EventType::Add, "Secret", dependent(OWNER)));
        // Both config maps went while the watch was down; a third came.
        let third = "0f0f0f0f-0000-4000-8000-000000000004";
        const FIFTH: &str = "0f0f0f0f-0000-4000-8000-000000000005";
        let work = graph.forget_unlisted(
            &Arc::from("v1"),
            &Arc::from("ConfigMap"),
            &HashSet::from([third]),
        );
        assert_eq!(work.attempt_to_delete, [Arc::from(DEPENDENT)]);
        graph.process(&event(
            EventType::Update,
            "ConfigMap",
            owner("third", third, "ns"),
        ));
        assert!(graph.node(OWNER).is_none());
        // The dependent's node stays: secrets were not listed again.
        assert!(graph.node(DEPENDENT).is_some());
        // The config map not listed is forgotten; the listed one is plain.
        let mut named = |uid: &str| {
            let reference = json!({"name": "d", "namespace": "ns", "uid": FIFTH,
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": uid}]});
            graph.process(&event(EventType::Update, "Secret", reference));
            graph.node(uid).map(|n| n.virtual_)
        };
        assert_eq!(named(OTHER), Some(true));
        assert_eq!(named(third), Some(false));
    }
}
