//! The objects the collector has observed that take no part in ownership: no owner
//! references, no dependents, not being deleted, neither the `orphan` nor the
//! `foregroundDeletion` finalizer. Upstream's graph keeps a node for every object it
//! observes; most objects are plain, and a node (with its table slot and strings) costs
//! several hundred bytes, so the graph keeps only their uid (as the number the UUID spells),
//! name and namespace, by group and kind. The first dependent naming one as its owner makes
//! it a node again, with the identity it was observed with.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_apimachinery::schema::split_api_version;

use super::graph::Identity;

/// The plain objects of every kind followed.
#[derive(Default)]
pub(super) struct Plain {
    /// A few dozen kinds: a list is as quick to search as a table, and smaller.
    kinds: Vec<Kind>,
}

/// The plain objects of one group and kind.
struct Kind {
    group: Box<str>,
    kind: Arc<str>,
    /// The apiVersion its monitor follows (the group's preferred version), which the
    /// identities it gives back carry.
    api_version: Arc<str>,
    objects: HashMap<u128, Coordinates>,
}

/// Where a plain object is; its namespace is the string its monitor shares among the
/// objects there.
struct Coordinates {
    namespace: Arc<str>,
    name: Box<str>,
}

impl Plain {
    /// Keeps the object `identity` as plain.
    pub(super) fn insert(&mut self, identity: &Identity, uid: u128) {
        let kind = self.kind_mut(&identity.api_version, &identity.kind);
        if kind.api_version != identity.api_version {
            kind.api_version = identity.api_version.clone();
        }
        let coordinates = Coordinates {
            namespace: identity.namespace.clone(),
            name: (*identity.name).into(),
        };
        kind.objects.insert(uid, coordinates);
    }

    /// Forgets the plain object `uid` of `kind` in `api_version`'s group.
    pub(super) fn remove(&mut self, api_version: &str, kind: &str, uid: u128) {
        if let Some(kind) = self.kind_of(api_version, kind)
            && kind.objects.remove(&uid).is_some()
        {
            shrink(&mut kind.objects);
        }
    }

    /// Forgets every plain object of `kind` in `api_version`'s group (before a new list of
    /// them).
    pub(super) fn clear(&mut self, api_version: &str, kind: &str) {
        if let Some(kind) = self.kind_of(api_version, kind) {
            kind.objects = HashMap::new();
        }
    }

    /// Takes out the plain object whose uid is `uid` (the string `uid` spells), of whatever
    /// kind: its identity as it was observed.
    pub(super) fn take(&mut self, uid: &Arc<str>) -> Option<Identity> {
        let number = uid_number(uid)?;
        self.kinds.iter_mut().find_map(|kind| {
            let coordinates = kind.objects.remove(&number)?;
            shrink(&mut kind.objects);
            Some(Identity {
                kind: kind.kind.clone(),
                api_version: kind.api_version.clone(),
                namespace: coordinates.namespace,
                name: coordinates.name.into(),
                uid: uid.clone(),
            })
        })
    }

    /// Where the plain objects of `kind` in `api_version`'s group are in `kinds`.
    fn position(&self, api_version: &str, kind: &str) -> Option<usize> {
        let (group, _) = split_api_version(api_version);
        self.kinds
            .iter()
            .position(|k| *k.group == *group && *k.kind == *kind)
    }

    /// The plain objects of `kind` in `api_version`'s group, if any were kept.
    fn kind_of(&mut self, api_version: &str, kind: &str) -> Option<&mut Kind> {
        let index = self.position(api_version, kind)?;
        Some(&mut self.kinds[index])
    }

    /// The plain objects of `kind` in `api_version`'s group, made if new.
    fn kind_mut(&mut self, api_version: &Arc<str>, kind: &Arc<str>) -> &mut Kind {
        let index = self.position(api_version, kind).unwrap_or_else(|| {
            self.kinds.push(Kind {
                group: split_api_version(api_version).0.into(),
                kind: kind.clone(),
                api_version: api_version.clone(),
                objects: HashMap::new(),
            });
            self.kinds.len() - 1
        });
        &mut self.kinds[index]
    }
}

/// Gives back a table's memory once it is a quarter full (tables do not shrink by
/// themselves: a kind whose objects were deleted would keep the slots of its largest size).
fn shrink(objects: &mut HashMap<u128, Coordinates>) {
    if objects.capacity() > 64 && objects.len() * 4 < objects.capacity() {
        objects.shrink_to_fit();
    }
}

/// The number a uid spells when it is a UUID in the canonical form the server gives every
/// object (hyphenated, lowercase); an object with any other uid keeps a node.
pub(super) fn uid_number(uid: &str) -> Option<u128> {
    let parsed = uuid::Uuid::try_parse(uid).ok()?;
    let mut canonical = [0; uuid::fmt::Hyphenated::LENGTH];
    (parsed.hyphenated().encode_lower(&mut canonical) == uid).then(|| parsed.as_u128())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(api_version: &str, kind: &str, name: &str, uid: &str) -> Identity {
        Identity {
            kind: kind.into(),
            api_version: api_version.into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: uid.into(),
        }
    }

    const UID: &str = "0f0f0f0f-0000-4000-8000-00000000000a";

    #[test]
    fn only_canonical_uuids_are_numbers() {
        assert_eq!(
            uid_number(UID),
            Some(0x0f0f0f0f_0000_4000_8000_00000000000a)
        );
        for other in [
            "0F0F0F0F-0000-4000-8000-00000000000A",
            "0f0f0f0f00004000800000000000000a",
            "{0f0f0f0f-0000-4000-8000-00000000000a}",
            "owner",
            "",
        ] {
            assert_eq!(uid_number(other), None, "{other}");
        }
    }

    #[test]
    fn a_plain_object_is_taken_back_with_the_identity_it_was_observed_with() {
        let mut plain = Plain::default();
        let observed = identity("apps/v1", "Deployment", "web", UID);
        plain.insert(&observed, uid_number(UID).unwrap());
        assert_eq!(plain.take(&Arc::from(UID)), Some(observed));
        assert_eq!(plain.take(&Arc::from(UID)), None);
    }

    #[test]
    fn kinds_are_kept_by_group_whatever_the_version() {
        let mut plain = Plain::default();
        let uid = uid_number(UID).unwrap();
        plain.insert(&identity("example.com/v1", "Widget", "w", UID), uid);
        plain.remove("example.com/v2", "Widget", uid);
        assert_eq!(plain.take(&Arc::from(UID)), None);
        plain.insert(&identity("example.com/v1", "Widget", "w", UID), uid);
        plain.insert(&identity("example.com/v2", "Other", "o", UID), uid + 1);
        plain.clear("example.com/v2", "Widget");
        assert_eq!(plain.take(&Arc::from(UID)), None);
        let other = "0f0f0f0f-0000-4000-8000-00000000000b";
        let taken = plain.take(&Arc::from(other)).unwrap();
        assert_eq!((&*taken.kind, &*taken.name), ("Other", "o"));
    }
}
