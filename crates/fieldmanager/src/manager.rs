//! The field manager: keeps `metadata.managedFields` on every write (updates) and runs
//! server-side apply, as kube-apiserver's FieldManager and structured-merge-diff's Updater.

use kapi_apimachinery::status::{ApiError, Status, StatusCause, StatusDetails};
use serde_json::{Map, Value};

use crate::fieldpath::{Path, PathElement, Set, path_string};
use crate::managed::{self, Entry, Managed, Manager, Operation};
use crate::schema::{Schema, Shape};
use crate::{lastapplied, typed};

/// The most update managers an object keeps; older ones merge into `ancient-changes`.
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager older update managers merge into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";
/// The update manager that takes the fields of an object applied to for the first time.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The longest field manager name.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// One field another manager owns with a different value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub manager: Manager,
    pub path: Path,
}

/// Why an apply failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The applied configuration is not acceptable (400).
    #[error("{0}")]
    BadRequest(String),
    /// The live object's managedFields cannot be read, or the configuration has fields its
    /// schema does not declare (500, as upstream answers both).
    #[error("{0}")]
    Internal(String),
}

impl From<ApplyError> for ApiError {
    /// The Status upstream answers: 409 Conflict with one `FieldManagerConflict` cause per
    /// conflicting field, 400 BadRequest, or a bare 500.
    fn from(err: ApplyError) -> ApiError {
        match &err {
            ApplyError::Conflicts(conflicts) => {
                let causes = conflicts
                    .iter()
                    .map(|conflict| StatusCause {
                        reason: "FieldManagerConflict".to_string(),
                        message: format!("conflict with {}", conflict.manager.describe()),
                        field: path_string(&conflict.path),
                    })
                    .collect();
                let details = StatusDetails {
                    causes,
                    ..StatusDetails::default()
                };
                ApiError::from(
                    Status::failure(409, "Conflict", err.to_string()).with_details(details),
                )
            }
            ApplyError::BadRequest(message) => ApiError::bad_request(message.clone()),
            // Upstream's plain (non-Status) errors: 500 with no reason.
            ApplyError::Internal(message) => ApiError::from(Status::failure(500, "", message)),
        }
    }
}

/// Upstream's conflict message: one conflict inline, several grouped by manager.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager.describe(),
            path_string(&only.path)
        );
    }
    let mut by_manager: Vec<(String, Vec<String>)> = Vec::new();
    for conflict in conflicts {
        let name = conflict.manager.describe();
        let path = format!("- {}", path_string(&conflict.path));
        match by_manager.iter_mut().find(|(known, _)| *known == name) {
            Some((_, paths)) => paths.push(path),
            None => by_manager.push((name, vec![path])),
        }
    }
    by_manager.sort_by(|a, b| a.0.cmp(&b.0));
    let lines: Vec<String> = by_manager
        .into_iter()
        .flat_map(|(name, paths)| std::iter::once(format!("conflicts with {name}:")).chain(paths))
        .collect();
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The manager of a write: `?fieldManager=`, else the User-Agent up to its first `/`,
/// printable characters only, at most 128 bytes (upstream's managerOrUserAgent).
pub fn manager_or_user_agent(field_manager: &str, user_agent: &str) -> String {
    if !field_manager.is_empty() {
        return field_manager.to_string();
    }
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// The fields no manager owns: type and system metadata (upstream's stripMeta set).
fn stripped_fields() -> Set {
    let field = |name: &str| PathElement::Field(name.to_string());
    let mut set = Set::new();
    set.insert(&[field("apiVersion")]);
    set.insert(&[field("kind")]);
    set.insert(&[field("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[field("metadata"), field(name)]);
    }
    set
}

/// The field manager of one resource version (and subresource).
#[derive(Clone, Debug)]
pub struct FieldManager<S> {
    schema: Option<S>,
    api_version: String,
    kind: String,
    subresource: String,
    ignored: Set,
    stripped: Set,
    /// What a create is compared with: `{}`, or a typed kind's zero value.
    zero: Value,
}

impl<S: Schema> FieldManager<S> {
    /// The manager of objects of `kind` in `api_version` (`group/version`, or `v1`),
    /// written through `subresource` ("" for the resource itself). `schema` is the kind's
    /// root schema (`None`: deduced).
    pub fn new(schema: Option<S>, api_version: &str, kind: &str, subresource: &str) -> Self {
        FieldManager {
            schema,
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            subresource: subresource.to_string(),
            ignored: Set::new(),
            stripped: stripped_fields(),
            zero: Value::Object(Map::new()),
        }
    }

    /// For kinds that are Go structs upstream: creates are compared with the type's zero
    /// value, whose `metadata`, `spec` and `status` structs are present and empty, so that
    /// upstream's creators do not own those fields themselves (no `.` under `f:spec`).
    pub fn typed(mut self) -> Self {
        let mut zero = Map::new();
        for name in ["metadata", "spec", "status"] {
            let field = self.schema.and_then(|schema| schema.field(name));
            let is_struct = field.is_some_and(|field| {
                matches!(field.shape(), Shape::Map { .. }) && field.values().is_none()
            });
            if is_struct {
                zero.insert(name.to_string(), Value::Object(Map::new()));
            }
        }
        self.zero = Value::Object(zero);
        self
    }

    /// Top-level fields this endpoint does not change and no one here comes to own
    /// (upstream's reset fields: `status` for a resource with a status subresource, `spec`
    /// for the status subresource).
    pub fn ignoring(mut self, fields: &[&str]) -> Self {
        for name in fields {
            self.ignored.insert(&[PathElement::Field(name.to_string())]);
        }
        self
    }

    /// Records an update (create, update, or a non-apply patch) of `live` (`None`: a
    /// create) into `new`'s managedFields, as upstream's UpdateNoErrors: managedFields in
    /// `new` are kept if valid and not a reset, else the live ones are; an object that no
    /// one manages is not tracked on update.
    pub fn update(&self, live: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
        let live = live.unwrap_or(&self.zero);
        let mut managed = self.managed_for_update(live, new);
        managed::remove_managed_fields(new);
        let exists = live
            .get("metadata")
            .and_then(|meta| meta.get("uid"))
            .and_then(Value::as_str)
            .is_some_and(|uid| !uid.is_empty());
        if managed.is_empty() && exists {
            return;
        }
        let identity = Manager::update(manager_name(manager), &self.api_version, &self.subresource);
        self.record_update(live, new, &mut managed, identity, now);
        cap_update_managers(&mut managed);
        managed::set_managed_fields(new, &managed);
    }

    fn managed_for_update(&self, live: &Value, new: &Value) -> Managed {
        if !self.subresource.is_empty() {
            return managed::decode(live).unwrap_or_default();
        }
        if managed::is_reset(new) {
            return Managed::new();
        }
        match managed::decode(new) {
            Ok(managed) if !managed.is_empty() => managed,
            _ => managed::decode(live).unwrap_or_default(),
        }
    }

    /// Compares `live` with `new`: other managers lose what changed, `identity` gains
    /// what was added or modified.
    fn record_update(
        &self,
        live: &Value,
        new: &Value,
        managed: &mut Managed,
        identity: Manager,
        now: &str,
    ) {
        let comparison = self.compare(live, new);
        let changed = comparison.added.union(&comparison.modified);
        for entry in managed.values_mut() {
            entry.set = entry
                .set
                .difference(&changed)
                .difference(&comparison.removed);
        }
        managed.retain(|_, entry| !entry.set.is_empty());
        let owned = changed.difference(&self.stripped);
        if owned.is_empty() {
            return;
        }
        let set = match managed.get(&identity) {
            Some(previous) => owned.union(&previous.set),
            None => owned,
        };
        let entry = Entry {
            set,
            api_version: self.api_version.clone(),
            time: Some(now.to_string()),
        };
        managed.insert(identity, entry);
    }

    /// The comparison of two objects without their managedFields and ignored fields.
    fn compare(&self, live: &Value, new: &Value) -> typed::Comparison {
        let (mut live, mut new) = (live.clone(), new.clone());
        managed::remove_managed_fields(&mut live);
        managed::remove_managed_fields(&mut new);
        typed::compare(&live, &new, self.schema).excluding(&self.ignored)
    }

    /// Applies `config` for `manager` to `live` (`None`: the object does not exist yet),
    /// returning the new object with its managedFields. Without `force`, changing a field
    /// another manager owns is a conflict; for `kubectl` moving from client-side apply,
    /// conflicts on fields its last-applied annotation still describes are not, and that
    /// annotation follows the applied configuration (upstream's lastAppliedManager and
    /// lastAppliedUpdater).
    pub fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        let applied = match self.apply_once(live, config, manager, force, now) {
            Err(ApplyError::Conflicts(conflicts)) if manager == lastapplied::KUBECTL => {
                let allowed = live.and_then(|live| {
                    lastapplied::unchanged_fields(live, &self.api_version, self.schema)
                });
                let Some(allowed) = allowed else {
                    return Err(ApplyError::Conflicts(conflicts));
                };
                let remaining: Vec<Conflict> = conflicts
                    .into_iter()
                    .filter(|conflict| !allowed.has(&conflict.path))
                    .collect();
                if !remaining.is_empty() {
                    return Err(ApplyError::Conflicts(remaining));
                }
                self.apply_once(live, config, manager, true, now)
            }
            other => other,
        };
        let mut applied = applied?;
        if manager == lastapplied::KUBECTL {
            lastapplied::follow(&mut applied, config);
        }
        Ok(applied)
    }

    fn apply_once(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        self.check_config(config)?;
        let empty = Value::Object(Map::new());
        let live = live.unwrap_or(&empty);
        let mut managed = managed::decode(live).map_err(|err| {
            ApplyError::Internal(format!("failed to decode managed fields: {err}"))
        })?;
        if managed.is_empty() {
            let identity =
                Manager::update(BEFORE_FIRST_APPLY, &self.api_version, &self.subresource);
            self.record_update(&self.zero, live, &mut managed, identity, now);
        }
        let mut live = live.clone();
        managed::remove_managed_fields(&mut live);
        let identity = Manager::apply(manager, &self.subresource);
        let merged = typed::merge(&live, config, self.schema);
        let previous = managed.remove(&identity);
        let applied = typed::to_field_set(config, self.schema).recursive_difference(&self.ignored);
        let entry = Entry {
            set: applied,
            api_version: self.api_version.clone(),
            time: previous.as_ref().and_then(|entry| entry.time.clone()),
        };
        managed.insert(identity.clone(), entry);
        let mut new = match &previous {
            Some(previous) => self.prune(merged, &managed, &previous.set),
            None => merged,
        };
        self.take_ownership(&live, &new, &mut managed, &identity, force)?;
        if let Some(entry) = managed.get_mut(&identity) {
            entry.set = entry.set.difference(&self.stripped);
            if new != live {
                entry.time = Some(now.to_string());
            }
        }
        managed.retain(|_, entry| !entry.set.is_empty());
        managed::set_managed_fields(&mut new, &managed);
        Ok(new)
    }

    /// Upstream's checks of an applied configuration: its type, and no managedFields.
    fn check_config(&self, config: &Value) -> Result<(), ApplyError> {
        let text = |key: &str| config.get(key).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version != self.api_version || kind != self.kind {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(ApplyError::BadRequest(format!(
                "invalid object type: {group}/{version}, Kind={kind}"
            )));
        }
        if managed::managed_fields_of(config).is_some() {
            return Err(ApplyError::BadRequest(
                "metadata.managedFields must be nil".to_string(),
            ));
        }
        if let Some(refused) = typed::conversion_error(config, self.schema) {
            let meta = |key: &str| {
                config
                    .get("metadata")
                    .and_then(|meta| meta.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(ApplyError::Internal(format!(
                "failed to create typed patch object ({}/{}; {group}/{version}, Kind={kind}): \
                 {refused}",
                meta("namespace"),
                meta("name"),
            )));
        }
        Ok(())
    }

    /// Removes from `merged` the fields the applier applied before and no longer applies,
    /// unless some manager (the applier included) still owns them.
    fn prune(&self, merged: Value, managed: &Managed, previous: &Set) -> Value {
        let owned = managed
            .values()
            .fold(Set::new(), |all, entry| all.union(&entry.set));
        let owned = typed::with_named_fields_as_members(&owned, self.schema);
        let previous = typed::with_named_fields_as_members(previous, self.schema);
        let dropped = previous.difference(&owned);
        if dropped.is_empty() {
            return merged;
        }
        typed::remove_items(&merged, &dropped, self.schema)
    }

    /// The ownership part of an apply (upstream's Updater.update): other managers owning a
    /// field the apply adds or modifies conflict (or, forced, lose it); removed fields leave
    /// every other manager.
    fn take_ownership(
        &self,
        live: &Value,
        new: &Value,
        managed: &mut Managed,
        identity: &Manager,
        force: bool,
    ) -> Result<(), ApplyError> {
        let comparison = self.compare(live, new);
        let changed = comparison.added.union(&comparison.modified);
        let mut conflicts = Vec::new();
        for (manager, entry) in managed.iter() {
            if manager == identity {
                continue;
            }
            let paths = entry.set.intersection(&changed).paths();
            conflicts.extend(paths.into_iter().map(|path| Conflict {
                manager: manager.clone(),
                path,
            }));
        }
        if !force && !conflicts.is_empty() {
            return Err(ApplyError::Conflicts(conflicts));
        }
        for (manager, entry) in managed.iter_mut() {
            if manager != identity {
                entry.set = entry
                    .set
                    .difference(&changed)
                    .difference(&comparison.removed);
            }
        }
        managed.retain(|_, entry| !entry.set.is_empty());
        Ok(())
    }
}

/// An update manager's recorded name: "unknown" when there is none.
fn manager_name(manager: &str) -> &str {
    if manager.is_empty() {
        "unknown"
    } else {
        manager
    }
}

/// Keeps at most [`MAX_UPDATE_MANAGERS`] update managers: the oldest ones (by time, then
/// identity) merge into `ancient-changes`, one per API version, as upstream's
/// capManagersManager.
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<(Option<String>, Manager)> = managed
        .iter()
        .filter(|(manager, _)| manager.operation == Operation::Update)
        .map(|(manager, entry)| (entry.time.clone(), manager.clone()))
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort();
    let mut remaining = updaters.len();
    let mut first_by_version: Vec<(String, Manager)> = Vec::new();
    for (time, manager) in updaters {
        if remaining <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.get(&manager).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let Some((_, first)) = first_by_version.iter().find(|(v, _)| *v == version) else {
            first_by_version.push((version, manager));
            continue;
        };
        let bucket = Manager::update(ANCIENT_CHANGES, &version, "");
        if !managed.contains_key(&bucket)
            && let Some(moved) = managed.remove(first)
        {
            managed.insert(bucket.clone(), moved);
        }
        managed.remove(&manager);
        if let Some(bucket_entry) = managed.get_mut(&bucket) {
            bucket_entry.set = entry.set.union(&bucket_entry.set);
            bucket_entry.time = time;
        }
        remaining -= 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::LAST_APPLIED_ANNOTATION;
    use crate::schema::testing::{Node, leak, map, object};

    const T1: &str = "2024-01-01T00:00:01Z";
    const T2: &str = "2024-01-01T00:00:02Z";
    const T3: &str = "2024-01-01T00:00:03Z";

    fn schema() -> &'static Node {
        leak(object(vec![
            ("apiVersion", Node::Scalar),
            ("kind", Node::Scalar),
            (
                "metadata",
                object(vec![
                    ("name", Node::Scalar),
                    ("uid", Node::Scalar),
                    ("labels", map(Node::Scalar)),
                    ("annotations", map(Node::Scalar)),
                    ("managedFields", Node::Deduced),
                ]),
            ),
            (
                "spec",
                object(vec![("replicas", Node::Scalar), ("image", Node::Scalar)]),
            ),
            ("data", map(Node::Scalar)),
        ]))
    }

    fn manager() -> FieldManager<&'static Node> {
        FieldManager::new(Some(schema()), "apps/v1", "Thing", "")
    }

    fn entries(object: &Value) -> Vec<Value> {
        object["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn entry(manager: &str, operation: &str, time: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "apps/v1",
               "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    /// `config` applied (not forced) by `applier` at `time` to `live`; the apply must succeed.
    fn applied(live: Option<&Value>, config: &Value, applier: &str, time: &str) -> Value {
        manager()
            .apply(live, config, applier, false, time)
            .unwrap_or_else(|err| panic!("{applier} applies: {err}"))
    }

    /// The managedFields entry of an apply by `manager` at `time` that owns `spec.replicas`.
    fn replicas_applied_by(manager: &str, time: &str) -> Value {
        entry(
            manager,
            "Apply",
            time,
            json!({"f:spec": {"f:replicas": {}}}),
        )
    }

    fn thing(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Thing",
               "metadata": {"name": "x", "uid": "u"}, "spec": spec})
    }

    #[test]
    fn create_records_an_update_manager() {
        let mut new = thing(json!({"replicas": 1}));
        new["data"] = json!({"a": "1"});
        manager().update(None, &mut new, "kubectl-create", T1);
        let fields = json!({"f:data": {".": {}, "f:a": {}}, "f:spec": {".": {}, "f:replicas": {}}});
        assert_eq!(
            entries(&new),
            [entry("kubectl-create", "Update", T1, fields)]
        );
    }

    #[test]
    fn typed_creates_compare_with_the_zero_value() {
        let mut new = thing(json!({"replicas": 1}));
        manager()
            .typed()
            .update(None, &mut new, "kubectl-create", T1);
        let fields = json!({"f:spec": {"f:replicas": {}}});
        assert_eq!(
            entries(&new),
            [entry("kubectl-create", "Update", T1, fields)]
        );
    }

    #[test]
    fn updates_move_ownership_of_changed_fields() {
        let mut live = thing(json!({"replicas": 1, "image": "a"}));
        manager().update(None, &mut live, "creator", T1);
        let mut new = live.clone();
        new["spec"]["replicas"] = json!(2);
        manager().update(Some(&live), &mut new, "scaler", T2);
        assert_eq!(
            entries(&new),
            [
                entry(
                    "creator",
                    "Update",
                    T1,
                    json!({"f:spec": {".": {}, "f:image": {}}})
                ),
                entry(
                    "scaler",
                    "Update",
                    T2,
                    json!({"f:spec": {"f:replicas": {}}})
                ),
            ]
        );
    }

    #[test]
    fn untracked_objects_stay_untracked_and_empty_lists_reset() {
        let live = thing(json!({"replicas": 1}));
        let mut new = thing(json!({"replicas": 2}));
        manager().update(Some(&live), &mut new, "m", T1);
        assert!(new["metadata"].get("managedFields").is_none());

        let mut tracked = thing(json!({"replicas": 1}));
        manager().update(None, &mut tracked, "m", T1);
        let mut reset = tracked.clone();
        reset["metadata"]["managedFields"] = json!([]);
        manager().update(Some(&tracked), &mut reset, "m", T2);
        assert!(reset["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn invalid_request_managed_fields_fall_back_to_live_ones() {
        let mut live = thing(json!({"replicas": 1}));
        manager().update(None, &mut live, "m", T1);
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([{"operation": "Bogus"}]);
        manager().update(Some(&live), &mut new, "m", T2);
        assert_eq!(entries(&new), entries(&live));
    }

    #[test]
    fn apply_creates_and_owns_the_applied_fields() {
        let config = thing(json!({"replicas": 1}));
        let created = applied(None, &config, "ssa", T1);
        assert_eq!(created["spec"], json!({"replicas": 1}));
        assert_eq!(entries(&created), [replicas_applied_by("ssa", T1)]);
    }

    #[test]
    fn apply_conflicts_with_other_managers_unless_forced() {
        let config = thing(json!({"replicas": 1}));
        let live = applied(None, &config, "a", T1);
        let other = thing(json!({"replicas": 2}));
        let err = manager()
            .apply(Some(&live), &other, "b", false, T2)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        let status = ApiError::from(err).into_status();
        assert_eq!(status.code, 409);
        assert_eq!(status.reason, "Conflict");
        let cause = &status.details.expect("details").causes[0];
        assert_eq!(
            (
                cause.reason.as_str(),
                cause.message.as_str(),
                cause.field.as_str()
            ),
            (
                "FieldManagerConflict",
                "conflict with \"a\"",
                ".spec.replicas"
            )
        );

        let forced = manager()
            .apply(Some(&live), &other, "b", true, T2)
            .expect("forced");
        assert_eq!(forced["spec"]["replicas"], json!(2));
        assert_eq!(entries(&forced), [replicas_applied_by("b", T2)]);
    }

    #[test]
    fn appliers_of_the_same_value_share_it() {
        let config = thing(json!({"replicas": 1}));
        let live = applied(None, &config, "a", T1);
        let shared = applied(Some(&live), &config, "b", T2);
        // The second apply changes nothing, so it records no time (and sorts first).
        assert_eq!(
            entries(&shared),
            [
                json!({"manager": "b", "operation": "Apply", "apiVersion": "apps/v1",
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}),
                replicas_applied_by("a", T1),
            ]
        );
    }

    #[test]
    fn apply_removes_fields_it_no_longer_applies_unless_owned_elsewhere() {
        let first = thing(json!({"replicas": 1, "image": "i"}));
        let live = applied(None, &first, "a", T1);
        let mut shared = thing(json!({"image": "i"}));
        shared["metadata"]
            .as_object_mut()
            .map(|meta| meta.remove("uid"));
        let live = applied(Some(&live), &shared, "b", T2);
        let last = thing(json!({}));
        let pruned = applied(Some(&live), &last, "a", T3);
        assert_eq!(pruned["spec"], json!({"image": "i"}));
        let b = json!({"manager": "b", "operation": "Apply", "apiVersion": "apps/v1",
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:image": {}}}});
        // `spec: {}` is applied as an empty map, which `a` now owns.
        assert_eq!(
            entries(&pruned),
            [b, entry("a", "Apply", T3, json!({"f:spec": {}}))]
        );
    }

    #[test]
    fn first_apply_to_an_untracked_object_records_before_first_apply() {
        let live = thing(json!({"replicas": 1, "image": "i"}));
        let config = thing(json!({"replicas": 3}));
        let err = manager()
            .apply(Some(&live), &config, "a", false, T2)
            .unwrap_err();
        let ApplyError::Conflicts(conflicts) = &err else {
            panic!("expected conflicts, got {err:?}");
        };
        assert_eq!(
            conflicts[0].manager,
            Manager::update(BEFORE_FIRST_APPLY, "apps/v1", "")
        );
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn reset_fields_are_neither_owned_nor_conflicting() {
        let status_manager = FieldManager::new(Some(schema()), "apps/v1", "Thing", "status");
        let mut live = thing(json!({"replicas": 1}));
        manager().update(None, &mut live, "creator", T1);
        let mut new = live.clone();
        new["data"] = json!({"s": "1"});
        new["spec"]["replicas"] = json!(5);
        status_manager
            .ignoring(&["spec"])
            .update(Some(&live), &mut new, "ctl", T2);
        let mut status_entry = entry("ctl", "Update", T2, json!({"f:data": {".": {}, "f:s": {}}}));
        status_entry["subresource"] = json!("status");
        let creator = entry(
            "creator",
            "Update",
            T1,
            json!({"f:spec": {".": {}, "f:replicas": {}}}),
        );
        assert_eq!(entries(&new), [creator, status_entry]);
    }

    /// An object last written by client-side apply of `spec` (which recorded
    /// `last_replicas` in the annotation) whose replicas are now `live_replicas`.
    fn client_side_applied(last_replicas: u32, live_replicas: u32) -> Value {
        let last = format!(
            r#"{{"apiVersion":"apps/v1","kind":"Thing","metadata":{{"name":"x"}},"spec":{{"replicas":{last_replicas}}}}}"#
        );
        let mut live = thing(json!({"replicas": live_replicas}));
        live["metadata"]["annotations"] = json!({ LAST_APPLIED_ANNOTATION: last });
        manager().update(None, &mut live, "kubectl-client-side-apply", T1);
        live
    }

    #[test]
    fn kubectl_takes_over_what_client_side_apply_last_applied() {
        let live = client_side_applied(1, 1);
        let mut config = thing(json!({"replicas": 2}));
        config["metadata"]
            .as_object_mut()
            .map(|meta| meta.remove("uid"));
        let err = manager()
            .apply(Some(&live), &config, "other", false, T2)
            .unwrap_err();
        assert!(matches!(err, ApplyError::Conflicts(_)), "{err:?}");

        // kubectl may take over what it last applied client-side: no conflict.
        let taken_over = applied(Some(&live), &config, "kubectl", T2);
        assert_eq!(taken_over["spec"]["replicas"], json!(2));
        assert_eq!(
            taken_over["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
            json!(format!("{config}\n"))
        );

        let changed_since = client_side_applied(1, 5);
        let err = manager()
            .apply(Some(&changed_since), &config, "kubectl", false, T2)
            .unwrap_err();
        assert!(matches!(err, ApplyError::Conflicts(_)), "{err:?}");
    }

    #[test]
    fn apply_checks_the_configuration() {
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "Thing"}),
                "invalid object type: /v1, Kind=Thing",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Other"}),
                "invalid object type: apps/v1, Kind=Other",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Thing",
                       "metadata": {"managedFields": []}}),
                "metadata.managedFields must be nil",
            ),
        ];
        for (config, want) in cases {
            let err = manager().apply(None, &config, "a", false, T1).unwrap_err();
            assert_eq!(err, ApplyError::BadRequest(want.to_string()));
        }
    }

    #[test]
    fn undeclared_fields_fail_as_upstream() {
        let config = thing(json!({"bogus": 1}));
        let err = manager().apply(None, &config, "a", false, T1).unwrap_err();
        let status = ApiError::from(err).into_status();
        assert_eq!((status.code, status.reason.as_str()), (500, ""));
        assert_eq!(
            status.message,
            "failed to create typed patch object (/x; apps/v1, Kind=Thing): .spec.bogus: field \
             not declared in schema"
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let conflicts = vec![
            Conflict {
                manager: Manager::apply("b", ""),
                path: vec![PathElement::Field("x".to_string())],
            },
            Conflict {
                manager: Manager::apply("a", ""),
                path: vec![PathElement::Field("y".to_string())],
            },
            Conflict {
                manager: Manager::apply("b", ""),
                path: vec![PathElement::Field("z".to_string())],
            },
        ];
        assert_eq!(
            ApplyError::Conflicts(conflicts).to_string(),
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .y\nconflicts with \"b\":\n- .x\n- .z"
        );
    }

    #[test]
    fn update_managers_are_capped() {
        let mut live = thing(json!({}));
        live["data"] = json!({});
        manager().update(None, &mut live, "m0", "2024-01-01T00:00:00Z");
        for i in 1..=12 {
            let mut new = live.clone();
            new["data"][format!("k{i}")] = json!("v");
            let time = format!("2024-01-01T00:00:{i:02}Z");
            manager().update(Some(&live), &mut new, &format!("m{i}"), &time);
            live = new;
        }
        let names: Vec<String> = entries(&live)
            .iter()
            .map(|e| e["manager"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(names.len(), MAX_UPDATE_MANAGERS);
        assert!(names.contains(&ANCIENT_CHANGES.to_string()), "{names:?}");
        assert!(names.contains(&"m12".to_string()));
    }

    #[test]
    fn managers_from_user_agents() {
        let cases = [
            (
                "",
                "kubectl/v1.32.0 (linux/amd64) kubernetes/abc",
                "kubectl",
            ),
            ("mine", "kubectl/v1.32.0", "mine"),
            ("", "", ""),
            ("", "a\u{7}b/c", "ab"),
        ];
        for (field_manager, user_agent, want) in cases {
            assert_eq!(manager_or_user_agent(field_manager, user_agent), want);
        }
        let long = "x".repeat(200);
        assert_eq!(
            manager_or_user_agent("", &long).len(),
            FIELD_MANAGER_MAX_LENGTH
        );
    }
}
