//! The rule resolver: which rules apply to a user in a namespace (upstream's
//! `DefaultRuleResolver`), read from an in-memory index of roles and bindings that follows
//! their watch caches, as upstream's RBAC authorizer follows its informers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kapi_apimachinery::status::ApiError;
use kapi_server::authn::UserInfo;
use kapi_server::cacher::{CacheEvent, CacheNotification, EventType};
use kapi_server::endpoints::Served;
use kapi_server::registry::ListParams;
use kapi_storage::Revision;
use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::{Notify, broadcast::error::RecvError};
use tokio_util::sync::CancellationToken;

use super::rules::{Binding, PolicyRule, RoleRef};

/// How long a request waits for the index's first load before being decided on what it has.
const SYNC_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a follower waits before listing again after a failed list.
const RELIST_DELAY: Duration = Duration::from_millis(500);

/// The four RBAC collections the index follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collection {
    Roles,
    ClusterRoles,
    RoleBindings,
    ClusterRoleBindings,
}

/// Objects of one collection by (namespace, name), with the revision each was read at.
type Entries<T> = BTreeMap<(String, String), (Revision, Arc<T>)>;

/// The index: the rules of each role and the bindings, as of the caches' last events.
#[derive(Default)]
struct Index {
    roles: Entries<Vec<PolicyRule>>,
    cluster_roles: Entries<Vec<PolicyRule>>,
    role_bindings: BindingIndex,
    cluster_role_bindings: BindingIndex,
}

/// Who a binding names, as the index looks bindings up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SubjectKey {
    User(String),
    Group(String),
    /// A service account: namespace and name.
    ServiceAccount(String, String),
}

impl SubjectKey {
    /// The keys a binding is found under.
    fn of_binding(binding: &Binding) -> Vec<SubjectKey> {
        binding
            .subjects
            .iter()
            .filter_map(|subject| match subject.kind.as_str() {
                "User" => Some(SubjectKey::User(subject.name.clone())),
                "Group" => Some(SubjectKey::Group(subject.name.clone())),
                "ServiceAccount" => {
                    let namespace = if subject.namespace.is_empty() {
                        &binding.namespace
                    } else {
                        &subject.namespace
                    };
                    (!namespace.is_empty()).then(|| {
                        SubjectKey::ServiceAccount(namespace.clone(), subject.name.clone())
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The keys a user's bindings are found under: its name, its groups and, for a service
    /// account, the account.
    fn of_user(user: &UserInfo) -> Vec<SubjectKey> {
        let mut keys = vec![SubjectKey::User(user.name.clone())];
        keys.extend(user.groups.iter().map(|g| SubjectKey::Group(g.clone())));
        if let Some((namespace, name)) = user
            .name
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'))
        {
            keys.push(SubjectKey::ServiceAccount(namespace.into(), name.into()));
        }
        keys
    }
}

/// Bindings by (namespace, name), and the keys of those naming each subject in each
/// namespace ("" for cluster role bindings), so a request looks at its user's bindings only.
#[derive(Default)]
struct BindingIndex {
    entries: Entries<Binding>,
    by_subject: HashMap<(String, SubjectKey), BTreeSet<(String, String)>>,
}

impl BindingIndex {
    fn clear(&mut self) {
        self.entries.clear();
        self.by_subject.clear();
    }

    /// Sets a binding unless the index has a newer state of it.
    fn upsert(&mut self, key: (String, String), revision: Revision, binding: Binding) {
        if self
            .entries
            .get(&key)
            .is_some_and(|(seen, _)| *seen > revision)
        {
            return;
        }
        self.unlink(&key);
        for subject in SubjectKey::of_binding(&binding) {
            self.by_subject
                .entry((binding.namespace.clone(), subject))
                .or_default()
                .insert(key.clone());
        }
        self.entries.insert(key, (revision, Arc::new(binding)));
    }

    /// Removes a binding unless the index has a newer state of it.
    fn remove(&mut self, key: &(String, String), revision: Revision) {
        if self
            .entries
            .get(key)
            .is_some_and(|(seen, _)| *seen <= revision)
        {
            self.unlink(key);
            self.entries.remove(key);
        }
    }

    /// Drops the subject entries of the binding stored under `key`.
    fn unlink(&mut self, key: &(String, String)) {
        let Some((_, old)) = self.entries.get(key) else {
            return;
        };
        for subject in SubjectKey::of_binding(old) {
            let index_key = (old.namespace.clone(), subject);
            if let Some(keys) = self.by_subject.get_mut(&index_key) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_subject.remove(&index_key);
                }
            }
        }
    }

    /// The bindings of `namespace` ("" for cluster role bindings) that name `user`, in key
    /// order.
    fn for_user(&self, user: &UserInfo, namespace: &str) -> Vec<Arc<Binding>> {
        let mut keys = BTreeSet::new();
        for subject in SubjectKey::of_user(user) {
            if let Some(found) = self.by_subject.get(&(namespace.to_string(), subject)) {
                keys.extend(found.iter());
            }
        }
        keys.into_iter()
            .filter_map(|key| self.entries.get(key).map(|(_, binding)| binding.clone()))
            .collect()
    }
}

/// Where a rule came from, for the visitor.
pub enum RuleSource<'a> {
    ClusterRoleBinding(&'a Binding),
    RoleBinding(&'a Binding),
}

/// Resolves users' rules from the RBAC objects of one server.
pub struct RuleResolver {
    index: RwLock<Index>,
    /// Collections not loaded yet; requests wait for 0 (up to [`SYNC_TIMEOUT`]).
    unsynced: AtomicUsize,
    synced: Notify,
    /// Cancelled when the resolver is dropped, which ends its followers.
    stop: CancellationToken,
}

impl Drop for RuleResolver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl RuleResolver {
    /// A resolver following the served roles, cluster roles, role bindings and cluster role
    /// bindings (their storage versions). Its followers run on the current runtime until the
    /// resolver is dropped.
    pub fn start(
        roles: Served,
        cluster_roles: Served,
        role_bindings: Served,
        cluster_role_bindings: Served,
    ) -> Arc<RuleResolver> {
        let resolver = Arc::new(RuleResolver {
            index: RwLock::new(Index::default()),
            unsynced: AtomicUsize::new(4),
            synced: Notify::new(),
            stop: CancellationToken::new(),
        });
        for (served, collection) in [
            (roles, Collection::Roles),
            (cluster_roles, Collection::ClusterRoles),
            (role_bindings, Collection::RoleBindings),
            (cluster_role_bindings, Collection::ClusterRoleBindings),
        ] {
            let follower = follow(Arc::downgrade(&resolver), served, collection);
            let stop = resolver.stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = follower => {}
                }
            });
        }
        resolver
    }

    /// Waits (a bounded time) until every collection has been loaded once.
    pub async fn wait_synced(&self) {
        if self.unsynced.load(Ordering::Acquire) == 0 {
            return;
        }
        let waiting = async {
            loop {
                let notified = self.synced.notified();
                if self.unsynced.load(Ordering::Acquire) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(SYNC_TIMEOUT, waiting).await;
    }

    /// Visits the rules that apply to `user` in `namespace` ("" for cluster-wide rules only):
    /// those of the cluster role bindings, then those of the namespace's role bindings, until
    /// `visit` returns false. Bindings to roles that do not exist add an error in upstream's
    /// words to `errors`.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        errors: &mut Vec<String>,
        mut visit: impl FnMut(RuleSource<'_>, &PolicyRule) -> bool,
    ) {
        let index = self.index.read();
        for binding in index.cluster_role_bindings.for_user(user, "") {
            let Some(rules) = index.rules_of(&binding.role_ref, "", errors) else {
                continue;
            };
            for rule in rules.iter() {
                if !visit(RuleSource::ClusterRoleBinding(&binding), rule) {
                    return;
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        for binding in index.role_bindings.for_user(user, namespace) {
            let Some(rules) = index.rules_of(&binding.role_ref, namespace, errors) else {
                continue;
            };
            for rule in rules.iter() {
                if !visit(RuleSource::RoleBinding(&binding), rule) {
                    return;
                }
            }
        }
    }

    /// Every rule that applies to `user` in `namespace` (upstream's `RulesFor`), with the
    /// errors of bindings to missing roles.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut errors = Vec::new();
        let mut rules = Vec::new();
        self.visit_rules_for(user, namespace, &mut errors, |_, rule| {
            rules.push(rule.clone());
            true
        });
        (rules, errors)
    }

    /// The rules of the role `role_ref` names, a binding in `namespace` would grant
    /// (upstream's `GetRoleReferenceRules`); `None` when the role does not exist.
    pub fn role_reference_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Option<Arc<Vec<PolicyRule>>> {
        self.index
            .read()
            .rules_of(role_ref, namespace, &mut Vec::new())
    }

    /// Applies a change of one collection.
    fn apply(&self, collection: Collection, event: &CacheEvent) {
        let object = &event.object;
        let key = (object.namespace().to_string(), object.name().to_string());
        let revision = event.revision();
        let mut index = self.index.write();
        if event.type_ == EventType::Deleted {
            index.remove(collection, &key, revision);
            return;
        }
        let Ok(value) = indexed_parts(&kapi_server::registry::Item::from(&**object)) else {
            return;
        };
        index.insert(collection, key, revision, &value);
    }

    /// Replaces one collection with a fresh list.
    fn replace(&self, collection: Collection, items: Vec<(Revision, Value)>) {
        let mut index = self.index.write();
        index.clear(collection);
        for (revision, value) in items {
            let meta = &value["metadata"];
            let text = |field: &str| meta[field].as_str().unwrap_or_default().to_string();
            index.insert(
                collection,
                (text("namespace"), text("name")),
                revision,
                &value,
            );
        }
    }

    /// Marks one collection loaded.
    fn mark_synced(&self) {
        let left = self
            .unsynced
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if left == Ok(1) {
            self.synced.notify_waiters();
        }
    }
}

impl Index {
    /// The rules of a referenced role, or `None` (with upstream's not-found error).
    fn rules_of(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
        errors: &mut Vec<String>,
    ) -> Option<Arc<Vec<PolicyRule>>> {
        let (entries, key, resource) = match role_ref.kind.as_str() {
            "ClusterRole" => (
                &self.cluster_roles,
                (String::new(), role_ref.name.clone()),
                "clusterrole",
            ),
            "Role" => (
                &self.roles,
                (namespace.to_string(), role_ref.name.clone()),
                "role",
            ),
            _ => return None,
        };
        let found = entries.get(&key).map(|(_, rules)| rules.clone());
        if found.is_none() {
            errors.push(format!(
                "{resource}.rbac.authorization.k8s.io {} not found",
                kapi_apimachinery::quote(&role_ref.name)
            ));
        }
        found
    }

    fn clear(&mut self, collection: Collection) {
        match collection {
            Collection::Roles => self.roles.clear(),
            Collection::ClusterRoles => self.cluster_roles.clear(),
            Collection::RoleBindings => self.role_bindings.clear(),
            Collection::ClusterRoleBindings => self.cluster_role_bindings.clear(),
        }
    }

    /// Sets an object unless the index has a newer state of it.
    fn insert(
        &mut self,
        collection: Collection,
        key: (String, String),
        revision: Revision,
        value: &Value,
    ) {
        match collection {
            Collection::Roles => upsert(&mut self.roles, key, revision, PolicyRule::of_role(value)),
            Collection::ClusterRoles => upsert(
                &mut self.cluster_roles,
                key,
                revision,
                PolicyRule::of_role(value),
            ),
            Collection::RoleBindings => {
                self.role_bindings
                    .upsert(key, revision, Binding::from_value(value))
            }
            Collection::ClusterRoleBindings => {
                self.cluster_role_bindings
                    .upsert(key, revision, Binding::from_value(value))
            }
        }
    }

    /// Removes an object unless the index has a newer state of it.
    fn remove(&mut self, collection: Collection, key: &(String, String), revision: Revision) {
        match collection {
            Collection::Roles => remove_older(&mut self.roles, key, revision),
            Collection::ClusterRoles => remove_older(&mut self.cluster_roles, key, revision),
            Collection::RoleBindings => self.role_bindings.remove(key, revision),
            Collection::ClusterRoleBindings => self.cluster_role_bindings.remove(key, revision),
        }
    }
}

fn upsert<T>(entries: &mut Entries<T>, key: (String, String), revision: Revision, value: T) {
    if entries.get(&key).is_some_and(|(seen, _)| *seen > revision) {
        return;
    }
    entries.insert(key, (revision, Arc::new(value)));
}

fn remove_older<T>(entries: &mut Entries<T>, key: &(String, String), revision: Revision) {
    if entries.get(key).is_some_and(|(seen, _)| *seen <= revision) {
        entries.remove(key);
    }
}

/// What the index reads of a role or binding: its name, namespace, rules, roleRef and
/// subjects, decoded without the rest of the object.
fn indexed_parts(item: &kapi_server::registry::Item) -> Result<Value, ApiError> {
    item.decode_parts(&["rules", "roleRef", "subjects"], &["name", "namespace"])
}

/// Keeps one collection of the index current: subscribes to its watch cache, lists it from
/// storage (so nothing between is missed), then applies every event; lists again when the
/// subscription falls behind. Ends when the resolver is gone.
async fn follow(resolver: Weak<RuleResolver>, served: Served, collection: Collection) {
    let registry = served.registry.clone();
    let resource = served.definition.group_resource();
    let prefix = registry.collection_prefix(None);
    let mut first = true;
    loop {
        let subscription = registry.cacher().subscribe(None, &prefix);
        let listed = registry.list(&resource, &ListParams::default()).await;
        let (Ok(mut subscription), Ok(listed)) = (subscription, listed) else {
            tokio::time::sleep(RELIST_DELAY).await;
            continue;
        };
        let items = listed
            .items
            .iter()
            .filter_map(|item| Some((item.revision, indexed_parts(item).ok()?)))
            .collect();
        {
            let Some(resolver) = resolver.upgrade() else {
                return;
            };
            resolver.replace(collection, items);
            if std::mem::take(&mut first) {
                resolver.mark_synced();
            }
        }
        loop {
            let notification = subscription.receiver.recv().await;
            let Some(resolver) = resolver.upgrade() else {
                return;
            };
            match notification {
                Ok(CacheNotification::Events(events)) => {
                    for event in events.iter() {
                        resolver.apply(collection, event);
                    }
                }
                Ok(CacheNotification::Progress(_)) => {}
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => break,
            }
        }
    }
}
