//! apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision and core/v1
//! ReplicationController: defaults (pkg/apis/apps/v1/defaults.go, SetDefaults_
//! ReplicationController), strategies (pkg/registry/apps/*, core/replicationcontroller) and
//! validation (pkg/apis/apps/validation, core ValidateReplicationController).

use kapi_apimachinery::labels::{Selector, from_label_selector};
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    validate_annotations, validate_label_selector, validate_labels,
};
use kapi_server::resource::Name;
use kapi_server::resource::{GarbageCollectionPolicy, Strategy};
use serde_json::{Value, json};

use super::defaults::{default_claim_template, default_pod_template, each_item, set_default};
use super::podspec::{nonnegative, validate_pod_template_spec};
use super::selectable_replicas;
use crate::strategy::{carry_status, reset_for_create};
use crate::util::{child_mut, fields_mut, int_of, map_value, str_of, validate_immutable};
use kapi_server::object::bump_generation_on_spec_change;

/// The annotation apps/v1 DaemonSets carry their template generation in.
pub(crate) const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// Sets a DaemonSet's template generation annotation.
pub(crate) fn set_template_generation(object: &mut Value, generation: i64) {
    let meta = child_mut(object, "metadata");
    let annotations = fields_mut(meta.entry("annotations").or_insert_with(|| json!({})));
    annotations.insert(
        TEMPLATE_GENERATION_ANNOTATION.into(),
        json!(generation.to_string()),
    );
}

/// The largest percentage a maxUnavailable or maxSurge may be.
const PERCENT_MESSAGE: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// The `spec` of an object, made an object if needed.
fn spec_mut(object: &mut Value) -> &mut serde_json::Map<String, Value> {
    child_mut(object, "spec")
}

/// Defaults the pod template under `spec.template`.
fn default_spec_template(object: &mut Value) {
    let spec = spec_mut(object);
    default_pod_template(spec.entry("template").or_insert_with(|| json!({})));
}

/// `selector does not match template labels` for a template whose labels `selector` does
/// not match (a non-empty selector; a missing one matches nothing).
fn template_labels_match(selector: &Selector, template: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let labels = &template["metadata"]["labels"];
    if !selector.is_empty() && !selector.matches(labels) {
        errs.push(FieldError::invalid(
            &path.child("metadata").child("labels"),
            labels.clone(),
            "`selector` does not match template `labels`",
        ));
    }
    errs
}

/// The checks of a controller's template that every replicated controller shares
/// (ValidatePodTemplateSpecForReplicaSet and its RC form): matching labels, a valid pod
/// template, restartPolicy Always and no activeDeadlineSeconds.
fn validate_replicated_template(
    selector: &Selector,
    template: &Value,
    path: &Path,
    kind: &str,
) -> FieldErrors {
    let mut errs = template_labels_match(selector, template, path);
    errs.extend(validate_pod_template_spec(template, path));
    errs.extend(restart_always(template, path));
    errs.extend(no_active_deadline(template, path, kind));
    errs
}

/// A controller's pods may not set activeDeadlineSeconds.
fn no_active_deadline(template: &Value, path: &Path, kind: &str) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if template["spec"]
        .get("activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// A controller's pods must restart Always.
fn restart_always(template: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let policy = str_of(&template["spec"], "restartPolicy");
    if policy != "Always" {
        errs.push(FieldError::not_supported(
            &path.child("spec").child("restartPolicy"),
            policy,
            ["Always"],
        ));
    }
    errs
}

/// A required, non-empty, valid metav1 LabelSelector; returns the selector it means.
fn validate_selector(
    spec: &Value,
    path: &Path,
    empty_message: &str,
) -> (Result<Selector, String>, FieldErrors) {
    let mut errs = FieldErrors::new();
    let selector = &spec["selector"];
    let selector_path = path.child("selector");
    if selector.is_null() {
        errs.push(FieldError::required(&selector_path, ""));
    } else {
        errs.extend(validate_label_selector(selector, &selector_path));
        if map_value(selector, "matchLabels").is_empty()
            && selector["matchExpressions"]
                .as_array()
                .is_none_or(Vec::is_empty)
        {
            errs.push(FieldError::invalid(
                &selector_path,
                selector.clone(),
                empty_message,
            ));
        }
    }
    (from_label_selector(selector), errs)
}

/// The selector of apps/v1 objects may not change.
fn selector_immutable(new: &Value, old: &Value) -> FieldErrors {
    validate_immutable(
        &new["spec"]["selector"],
        &old["spec"]["selector"],
        &Path::root("spec").child("selector"),
    )
}

/// Deployments (SetDefaults_Deployment, deploymentStrategy, ValidateDeploymentSpec).
pub(crate) struct DeploymentStrategy;

impl DeploymentStrategy {
    fn default(object: &mut Value) {
        let spec = spec_mut(object);
        set_default(spec, "replicas", json!(1));
        let strategy = fields_mut(spec.entry("strategy").or_insert_with(|| json!({})));
        set_default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate" {
            let rolling = fields_mut(strategy.entry("rollingUpdate").or_insert_with(|| json!({})));
            set_default(rolling, "maxUnavailable", json!("25%"));
            set_default(rolling, "maxSurge", json!("25%"));
        }
        set_default(spec, "revisionHistoryLimit", json!(10));
        set_default(spec, "progressDeadlineSeconds", json!(600));
        default_spec_template(object);
    }

    fn validate_spec(spec: &Value) -> FieldErrors {
        let path = Path::root("spec");
        let mut errs = nonnegative(int_of(spec, "replicas"), &path.child("replicas"));
        let (selector, selector_errs) =
            validate_selector(spec, &path, "empty selector is invalid for deployment");
        errs.extend(selector_errs);
        match selector {
            Ok(selector) => errs.extend(validate_replicated_template(
                &selector,
                &spec["template"],
                &path.child("template"),
                "ReplicaSet",
            )),
            Err(_) => errs.push(FieldError::invalid(
                &path.child("selector"),
                spec["selector"].clone(),
                "invalid label selector",
            )),
        }
        errs.extend(validate_deployment_strategy(
            &spec["strategy"],
            &path.child("strategy"),
        ));
        let min_ready = int_of(spec, "minReadySeconds");
        errs.extend(nonnegative(min_ready, &path.child("minReadySeconds")));
        if let Some(limit) = spec.get("revisionHistoryLimit").and_then(Value::as_i64) {
            errs.extend(nonnegative(limit, &path.child("revisionHistoryLimit")));
        }
        if let Some(deadline) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
            let deadline_path = path.child("progressDeadlineSeconds");
            errs.extend(nonnegative(deadline, &deadline_path));
            if deadline <= min_ready {
                errs.push(FieldError::invalid(
                    &deadline_path,
                    deadline,
                    "must be greater than minReadySeconds",
                ));
            }
        }
        errs
    }
}

/// ValidateDeploymentStrategy.
fn validate_deployment_strategy(strategy: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let rolling = &strategy["rollingUpdate"];
    match str_of(strategy, "type") {
        "Recreate" if !rolling.is_null() => errs.push(FieldError::forbidden(
            &path.child("rollingUpdate"),
            "may not be specified when strategy `type` is 'Recreate'",
        )),
        "Recreate" => {}
        "RollingUpdate" if rolling.is_null() => errs.push(FieldError::required(
            &path.child("rollingUpdate"),
            "this should be defaulted and never be nil",
        )),
        "RollingUpdate" => {
            let rolling_path = path.child("rollingUpdate");
            let unavailable = &rolling["maxUnavailable"];
            let surge = &rolling["maxSurge"];
            errs.extend(positive_int_or_percent(
                unavailable,
                &rolling_path.child("maxUnavailable"),
            ));
            errs.extend(positive_int_or_percent(
                surge,
                &rolling_path.child("maxSurge"),
            ));
            if int_or_percent(unavailable) == 0 && int_or_percent(surge) == 0 {
                errs.push(FieldError::invalid(
                    &rolling_path.child("maxUnavailable"),
                    unavailable.clone(),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            errs.extend(not_more_than_100_percent(
                unavailable,
                &rolling_path.child("maxUnavailable"),
            ));
        }
        _ => errs.push(rendered(
            FieldError::not_supported(path, Value::Null, ["Recreate", "RollingUpdate"]),
            internal_strategy(strategy, &rolling_update_fields()),
        )),
    }
    errs
}

/// An error whose bad value is the given rendering.
fn rendered(mut error: FieldError, value: String) -> FieldError {
    error.bad_value = Some(value);
    error
}

/// A struct of the internal API types as upstream prints it in messages: JSON with the Go
/// field names (the internal types have no JSON tags), in declaration order. Each field is
/// its Go name and what an absent value prints as (0 for values, `null` for pointers); its
/// JSON name is the Go name in lower camel case.
fn internal_struct(object: &Value, fields: &[(&str, Value)]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(go_name, zero)| {
            let json_name = format!("{}{}", go_name[..1].to_lowercase(), &go_name[1..]);
            let value = match &object[json_name.as_str()] {
                Value::Null => zero,
                value => value,
            };
            format!("\"{go_name}\":{}", kapi_apimachinery::go_json(value))
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// The fields of the internal RollingUpdateDeployment and RollingUpdateDaemonSet.
fn rolling_update_fields() -> [(&'static str, Value); 2] {
    [("MaxUnavailable", json!(0)), ("MaxSurge", json!(0))]
}

/// The fields of the internal RollingUpdateStatefulSetStrategy.
fn stateful_rolling_fields() -> [(&'static str, Value); 2] {
    [("Partition", json!(0)), ("MaxUnavailable", Value::Null)]
}

/// An internal update strategy (`Type` and a `RollingUpdate` pointer) as upstream prints it.
fn internal_strategy(strategy: &Value, rolling_fields: &[(&str, Value)]) -> String {
    let rolling = &strategy["rollingUpdate"];
    let rolling = if rolling.is_object() {
        internal_struct(rolling, rolling_fields)
    } else {
        "null".to_string()
    };
    format!(
        "{{\"Type\":{},\"RollingUpdate\":{rolling}}}",
        kapi_apimachinery::go_json(&strategy["type"].as_str().map_or(json!(""), |t| json!(t)))
    )
}

/// The number of an IntOrString: the integer, or the percentage's number.
fn int_or_percent(value: &Value) -> i64 {
    match value {
        Value::String(text) => text.trim_end_matches('%').parse().unwrap_or(0),
        other => other.as_i64().unwrap_or(0),
    }
}

/// Whether `text` is a percentage (`[0-9]+%`).
fn is_percent(text: &str) -> bool {
    text.strip_suffix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// ValidatePositiveIntOrPercent.
fn positive_int_or_percent(value: &Value, path: &Path) -> FieldErrors {
    match value {
        Value::String(text) if !is_percent(text) => {
            FieldError::invalid(path, value.clone(), PERCENT_MESSAGE).into()
        }
        Value::String(_) | Value::Null => FieldErrors::new(),
        other => nonnegative(other.as_i64().unwrap_or(0), path),
    }
}

/// IsNotMoreThan100Percent.
fn not_more_than_100_percent(value: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Value::String(text) = value
        && is_percent(text)
        && int_or_percent(value) > 100
    {
        errs.push(FieldError::invalid(
            path,
            value.clone(),
            "must not be greater than 100%",
        ));
    }
    errs
}

impl Strategy for DeploymentStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        Self::default(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        Self::default(object);
        reset_for_create(object, json!({}));
    }

    /// Annotation changes bump the generation too: they are copied to the ReplicaSets.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Self::default(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
        if new["metadata"]["annotations"] != old["metadata"]["annotations"]
            && new["spec"] == old["spec"]
        {
            let generation = int_of(&old["metadata"], "generation") + 1;
            kapi_server::object::set_meta(new, "generation", json!(generation));
        }
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        Self::validate_spec(&object["spec"])
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = Self::validate_spec(&new["spec"]);
        errs.extend(selector_immutable(new, old));
        errs
    }
}

/// ReplicaSets (SetDefaults_ReplicaSet, rsStrategy, ValidateReplicaSetSpec).
pub(crate) struct ReplicaSetStrategy;

impl ReplicaSetStrategy {
    fn validate_spec(spec: &Value) -> FieldErrors {
        let path = Path::root("spec");
        let mut errs = nonnegative(int_of(spec, "replicas"), &path.child("replicas"));
        errs.extend(nonnegative(
            int_of(spec, "minReadySeconds"),
            &path.child("minReadySeconds"),
        ));
        let (selector, selector_errs) =
            validate_selector(spec, &path, "empty selector is invalid for deployment");
        errs.extend(selector_errs);
        match selector {
            Ok(selector) => errs.extend(validate_replicated_template(
                &selector,
                &spec["template"],
                &path.child("template"),
                "ReplicaSet",
            )),
            Err(_) => errs.push(FieldError::invalid(
                &path.child("selector"),
                spec["selector"].clone(),
                "invalid label selector",
            )),
        }
        errs
    }
}

impl Strategy for ReplicaSetStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        set_default(spec_mut(object), "replicas", json!(1));
        default_spec_template(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        set_default(spec_mut(object), "replicas", json!(1));
        default_spec_template(object);
        reset_for_create(object, json!({"replicas": 0}));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        set_default(spec_mut(new), "replicas", json!(1));
        default_spec_template(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        Self::validate_spec(&object["spec"])
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = Self::validate_spec(&new["spec"]);
        errs.extend(selector_immutable(new, old));
        errs
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        selectable_replicas(object)
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "status.replicas"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("status")])
    }
}

/// ReplicationControllers (SetDefaults_ReplicationController, rcStrategy,
/// ValidateReplicationControllerSpec).
pub(crate) struct ReplicationControllerStrategy;

impl ReplicationControllerStrategy {
    /// Replicas 1; selector and the controller's labels from the template's labels.
    fn default(object: &mut Value) {
        let template_labels = object["spec"]["template"]["metadata"]["labels"].clone();
        if template_labels.is_object() {
            let spec = spec_mut(object);
            if map_value(&Value::Object(spec.clone()), "selector").is_empty() {
                spec.insert("selector".into(), template_labels.clone());
            }
            let meta = child_mut(object, "metadata");
            if meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(|l| l.is_empty())
            {
                meta.insert("labels".into(), template_labels);
            }
        }
        set_default(spec_mut(object), "replicas", json!(1));
        if object["spec"]["template"].is_object() {
            default_spec_template(object);
        }
    }

    fn validate_spec(spec: &Value) -> FieldErrors {
        let path = Path::root("spec");
        let mut errs = nonnegative(
            int_of(spec, "minReadySeconds"),
            &path.child("minReadySeconds"),
        );
        let selector_map = map_value(spec, "selector");
        if selector_map.is_empty() {
            errs.push(FieldError::required(&path.child("selector"), ""));
        }
        errs.extend(nonnegative(
            int_of(spec, "replicas"),
            &path.child("replicas"),
        ));
        let template = &spec["template"];
        let template_path = path.child("template");
        if template.is_null() {
            errs.push(FieldError::required(&template_path, ""));
            return errs;
        }
        let labels = &template["metadata"]["labels"];
        let matches = selector_map
            .iter()
            .all(|(k, v)| labels.get(k).is_some_and(|l| l == v));
        if !selector_map.is_empty() && !matches {
            errs.push(FieldError::invalid(
                &template_path.child("metadata").child("labels"),
                labels.clone(),
                "`selector` does not match template `labels`",
            ));
        }
        errs.extend(validate_pod_template_spec(template, &template_path));
        errs.extend(restart_always(template, &template_path));
        errs.extend(no_active_deadline(
            template,
            &template_path,
            "ReplicationController",
        ));
        errs
    }
}

impl Strategy for ReplicationControllerStrategy {
    /// batch/v1 Jobs and v1 ReplicationControllers orphan their dependents unless told
    /// otherwise, as upstream keeps them for backward compatibility.
    fn garbage_collection_policy(&self) -> GarbageCollectionPolicy {
        GarbageCollectionPolicy::OrphanDependents
    }

    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        Self::default(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        Self::default(object);
        reset_for_create(object, json!({"replicas": 0}));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Self::default(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        Self::validate_spec(&object["spec"])
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        selectable_replicas(object)
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "status.replicas"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("status")])
    }
}

/// StatefulSets (SetDefaults_StatefulSet, statefulSetStrategy, ValidateStatefulSetSpec).
pub(crate) struct StatefulSetStrategy;

impl StatefulSetStrategy {
    fn default(object: &mut Value) {
        let spec = spec_mut(object);
        set_default(spec, "podManagementPolicy", json!("OrderedReady"));
        let strategy = fields_mut(spec.entry("updateStrategy").or_insert_with(|| json!({})));
        if str_of(&Value::Object(strategy.clone()), "type").is_empty() {
            strategy.insert("type".into(), json!("RollingUpdate"));
            set_default(strategy, "rollingUpdate", json!({}));
        }
        if strategy["type"] == "RollingUpdate"
            && let Some(rolling) = strategy
                .get_mut("rollingUpdate")
                .and_then(Value::as_object_mut)
        {
            set_default(rolling, "partition", json!(0));
        }
        let retention = fields_mut(
            spec.entry("persistentVolumeClaimRetentionPolicy")
                .or_insert_with(|| json!({})),
        );
        set_default(retention, "whenDeleted", json!("Retain"));
        set_default(retention, "whenScaled", json!("Retain"));
        set_default(spec, "replicas", json!(1));
        set_default(spec, "revisionHistoryLimit", json!(10));
        each_item(spec, "volumeClaimTemplates", default_claim_template);
        default_spec_template(object);
    }

    fn validate_spec(spec: &Value) -> FieldErrors {
        let path = Path::root("spec");
        let mut errs = FieldErrors::new();
        match str_of(spec, "podManagementPolicy") {
            "" => errs.push(FieldError::required(&path.child("podManagementPolicy"), "")),
            "OrderedReady" | "Parallel" => {}
            other => errs.push(FieldError::invalid(
                &path.child("podManagementPolicy"),
                other,
                "must be 'OrderedReady' or 'Parallel'",
            )),
        }
        errs.extend(validate_stateful_update_strategy(
            &spec["updateStrategy"],
            &path.child("updateStrategy"),
        ));
        errs.extend(validate_retention_policy(
            &spec["persistentVolumeClaimRetentionPolicy"],
            &path.child("persistentVolumeClaimRetentionPolicy"),
        ));
        if spec["ordinals"].is_object() {
            errs.extend(nonnegative(
                int_of(&spec["ordinals"], "start"),
                &path.child("ordinals.start"),
            ));
        }
        errs.extend(nonnegative(
            int_of(spec, "replicas"),
            &path.child("replicas"),
        ));
        errs.extend(nonnegative(
            int_of(spec, "minReadySeconds"),
            &path.child("minReadySeconds"),
        ));
        let (selector, selector_errs) =
            validate_selector(spec, &path, "empty selector is invalid for statefulset");
        errs.extend(selector_errs);
        let template_path = path.child("template");
        match selector {
            Ok(selector) => {
                errs.extend(template_labels_match(
                    &selector,
                    &spec["template"],
                    &template_path,
                ));
                errs.extend(validate_template_metadata(
                    &spec["template"],
                    &template_path,
                ));
            }
            Err(_) => errs.push(FieldError::invalid(
                &path.child("selector"),
                spec["selector"].clone(),
                "",
            )),
        }
        errs.extend(restart_always(&spec["template"], &template_path));
        errs.extend(no_active_deadline(
            &spec["template"],
            &template_path,
            "StatefulSet",
        ));
        errs
    }
}

/// The update strategy of a StatefulSet.
fn validate_stateful_update_strategy(strategy: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let rolling = &strategy["rollingUpdate"];
    match str_of(strategy, "type") {
        "" => errs.push(FieldError::required(path, "")),
        "OnDelete" if !rolling.is_null() => errs.push(rendered(
            FieldError::invalid(
                &path.child("rollingUpdate"),
                Value::Null,
                "only allowed for updateStrategy 'RollingUpdate'",
            ),
            internal_struct(rolling, &stateful_rolling_fields()),
        )),
        "OnDelete" => {}
        "RollingUpdate" if rolling.is_object() => {
            errs.extend(validate_stateful_rolling_update(
                rolling,
                &path.child("rollingUpdate"),
            ));
        }
        "RollingUpdate" => {}
        _ => errs.push(rendered(
            FieldError::invalid(path, Value::Null, "must be 'RollingUpdate' or 'OnDelete'"),
            internal_strategy(strategy, &stateful_rolling_fields()),
        )),
    }
    errs
}

/// validateRollingUpdateStatefulSet: a non-negative partition and, when set, a
/// maxUnavailable that is a non-zero count or percentage of at most 100%.
fn validate_stateful_rolling_update(rolling: &Value, path: &Path) -> FieldErrors {
    let mut errs = nonnegative(int_of(rolling, "partition"), &path.child("partition"));
    let unavailable = &rolling["maxUnavailable"];
    if !unavailable.is_null() {
        let unavailable_path = path.child("maxUnavailable");
        errs.extend(positive_int_or_percent(unavailable, &unavailable_path));
        if int_or_percent(unavailable) == 0 {
            errs.push(FieldError::invalid(
                &unavailable_path,
                unavailable.clone(),
                "cannot be 0",
            ));
        }
        errs.extend(not_more_than_100_percent(unavailable, &unavailable_path));
    }
    errs
}

/// ValidatePodTemplateSpecForStatefulSet checks only the template's labels and
/// annotations: its pod spec is not validated (its volumes come from volumeClaimTemplates).
fn validate_template_metadata(template: &Value, path: &Path) -> FieldErrors {
    let meta = &template["metadata"];
    let mut errs = validate_labels(&map_value(meta, "labels"), &path.child("labels"));
    errs.extend(validate_annotations(
        &map_value(meta, "annotations"),
        &path.child("annotations"),
    ));
    errs
}

/// The PVC retention policy: each of whenDeleted and whenScaled is Retain or Delete.
fn validate_retention_policy(policy: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !policy.is_object() {
        return errs;
    }
    for key in ["whenDeleted", "whenScaled"] {
        let value = str_of(policy, key);
        if !["Retain", "Delete"].contains(&value) {
            errs.push(FieldError::not_supported(
                &path.child(key),
                value,
                ["Retain", "Delete"],
            ));
        }
    }
    errs
}

impl Strategy for StatefulSetStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        Self::default(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        Self::default(object);
        reset_for_create(object, json!({"replicas": 0, "availableReplicas": 0}));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Self::default(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        Self::validate_spec(&object["spec"])
    }

    /// Only replicas, ordinals, template, updateStrategy, revisionHistoryLimit,
    /// persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = Self::validate_spec(&new["spec"]);
        let updatable = [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "revisionHistoryLimit",
            "persistentVolumeClaimRetentionPolicy",
        ];
        let strip = |spec: &Value| {
            let mut spec = spec.as_object().cloned().unwrap_or_default();
            for key in updatable {
                spec.remove(key);
            }
            spec
        };
        if strip(&new["spec"]) != strip(&old["spec"]) {
            errs.push(FieldError::forbidden(
                &Path::root("spec"),
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
        errs
    }

    /// StatefulSet names are DNS labels: they become the pods' hostnames.
    fn name_validator(&self) -> kapi_server::resource::NameValidator {
        kapi_apimachinery::validation::name_is_dns_label
    }
}

/// DaemonSets (SetDefaults_DaemonSet, daemonSetStrategy, ValidateDaemonSetSpec).
pub(crate) struct DaemonSetStrategy;

impl DaemonSetStrategy {
    fn default(object: &mut Value) {
        let spec = spec_mut(object);
        let strategy = fields_mut(spec.entry("updateStrategy").or_insert_with(|| json!({})));
        set_default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate" {
            let rolling = fields_mut(strategy.entry("rollingUpdate").or_insert_with(|| json!({})));
            set_default(rolling, "maxUnavailable", json!(1));
            set_default(rolling, "maxSurge", json!(0));
        }
        set_default(spec, "revisionHistoryLimit", json!(10));
        default_spec_template(object);
    }

    fn validate_spec(spec: &Value) -> FieldErrors {
        let path = Path::root("spec");
        let selector = &spec["selector"];
        let mut errs = validate_label_selector(selector, &path.child("selector"));
        let template_path = path.child("template");
        if let Ok(parsed) = from_label_selector(selector)
            && !parsed.matches(&spec["template"]["metadata"]["labels"])
        {
            errs.push(FieldError::invalid(
                &template_path.child("metadata").child("labels"),
                spec["template"]["metadata"]["labels"].clone(),
                "`selector` does not match template `labels`",
            ));
        }
        if selector.is_object()
            && map_value(selector, "matchLabels").is_empty()
            && selector["matchExpressions"]
                .as_array()
                .is_none_or(Vec::is_empty)
        {
            errs.push(FieldError::invalid(
                &path.child("selector"),
                selector.clone(),
                "empty selector is invalid for daemonset",
            ));
        }
        errs.extend(validate_pod_template_spec(
            &spec["template"],
            &template_path,
        ));
        errs.extend(restart_always(&spec["template"], &template_path));
        errs.extend(no_active_deadline(
            &spec["template"],
            &template_path,
            "DaemonSet",
        ));
        errs.extend(nonnegative(
            int_of(spec, "minReadySeconds"),
            &path.child("minReadySeconds"),
        ));
        errs.extend(validate_daemon_update_strategy(
            &spec["updateStrategy"],
            &path.child("updateStrategy"),
        ));
        if let Some(limit) = spec.get("revisionHistoryLimit").and_then(Value::as_i64) {
            errs.extend(nonnegative(limit, &path.child("revisionHistoryLimit")));
        }
        errs
    }
}

/// ValidateDaemonSetUpdateStrategy.
fn validate_daemon_update_strategy(strategy: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let rolling = &strategy["rollingUpdate"];
    match str_of(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" if rolling.is_null() => {
            errs.push(FieldError::required(&path.child("rollingUpdate"), ""));
        }
        "RollingUpdate" => {
            let rolling_path = path.child("rollingUpdate");
            let unavailable = &rolling["maxUnavailable"];
            let surge = &rolling["maxSurge"];
            errs.extend(positive_int_or_percent(
                unavailable,
                &rolling_path.child("maxUnavailable"),
            ));
            errs.extend(positive_int_or_percent(
                surge,
                &rolling_path.child("maxSurge"),
            ));
            errs.extend(not_more_than_100_percent(
                unavailable,
                &rolling_path.child("maxUnavailable"),
            ));
            errs.extend(not_more_than_100_percent(
                surge,
                &rolling_path.child("maxSurge"),
            ));
            match (int_or_percent(unavailable) != 0, int_or_percent(surge) != 0) {
                (true, true) => errs.push(FieldError::invalid(
                    &rolling_path.child("maxSurge"),
                    surge.clone(),
                    "may not be set when maxUnavailable is non-zero",
                )),
                (false, false) => errs.push(FieldError::required(
                    &rolling_path.child("maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                )),
                _ => {}
            }
        }
        _ => errs.push(rendered(
            FieldError::not_supported(path, Value::Null, ["RollingUpdate", "OnDelete"]),
            internal_strategy(strategy, &rolling_update_fields()),
        )),
    }
    errs
}

impl Strategy for DaemonSetStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        Self::default(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        Self::default(object);
        set_template_generation(object, 1);
        reset_for_create(
            object,
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                   "desiredNumberScheduled": 0, "numberReady": 0}),
        );
    }

    /// The template generation (and the generation) move with template changes; other spec
    /// changes move only the generation.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Self::default(new);
        carry_status(new, old);
        let old_generation: i64 = str_of(
            &old["metadata"]["annotations"],
            TEMPLATE_GENERATION_ANNOTATION,
        )
        .parse()
        .unwrap_or(0);
        let template_changed = new["spec"]["template"] != old["spec"]["template"];
        let generation = old_generation + i64::from(template_changed);
        if generation > 0 {
            set_template_generation(new, generation);
        }
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        Self::validate_spec(&object["spec"])
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = Self::validate_spec(&new["spec"]);
        errs.extend(selector_immutable(new, old));
        errs
    }
}

/// ControllerRevisions (ValidateControllerRevision): data is required and immutable,
/// revision is non-negative.
pub(crate) struct ControllerRevisionStrategy;

impl Strategy for ControllerRevisionStrategy {
    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = FieldErrors::new();
        if object["data"].is_null() {
            errs.push(FieldError::required(
                &Path::root("data"),
                "data is mandatory",
            ));
        }
        errs.extend(nonnegative(
            int_of(object, "revision"),
            &Path::root("revision"),
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = self.validate(new);
        errs.extend(validate_immutable(
            &new["data"],
            &old["data"],
            &Path::root("data"),
        ));
        errs
    }
}
