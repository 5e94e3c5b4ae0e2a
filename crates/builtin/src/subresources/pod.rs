//! The pod subresources that write: pods/binding (and the core `bindings` resource),
//! pods/eviction, pods/ephemeralcontainers and pods/resize, as upstream's pod storage
//! (pkg/registry/core/pod/storage) and strategies.

use std::sync::Arc;

use kapi_apimachinery::labels::{self, Selector};
use kapi_apimachinery::meta::now_rfc3339;
use kapi_apimachinery::quote;
use kapi_apimachinery::schema::GroupResource;
use kapi_apimachinery::status::{ApiError, Status, StatusCause, StatusDetails};
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::endpoints::Served;
use kapi_server::object;
use kapi_server::registry::{DeleteParams, ListParams, ReadVersion, Write};
use kapi_server::resource::{CreateHandler, CreateRequest, Creater, PartWrite, SubresourceKind};
use serde_json::{Value, json};

use crate::util::str_of;

/// The pods resource, which every hook here writes.
fn pods_resource() -> GroupResource {
    GroupResource::new("", "pods")
}

/// The served pods (their registry and definition), or a 500 when kapi does not serve them.
fn pods(request: &CreateRequest<'_>) -> Result<Served, ApiError> {
    served(request, "", "pods")
}

fn served(request: &CreateRequest<'_>, group: &str, resource: &str) -> Result<Served, ApiError> {
    request
        .api
        .resource(group, resource)
        .ok_or_else(|| ApiError::internal(format!("the resource {resource} is not served")))
}

/// The body of a successful binding or eviction: a Success Status with code 201, as upstream's
/// create handler fills in the code of a returned Status.
fn created_status() -> Value {
    let mut status = Status::success();
    status.code = 201;
    serde_json::to_value(status).unwrap_or_default()
}

/// A plain Go error from a subresource's validation (upstream returns the field errors'
/// aggregate, which is answered as a 500 without a reason).
fn aggregate_error(errors: &FieldErrors) -> ApiError {
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let message = match messages.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    ApiError::new_generic(500, "", message)
}

/// Answers pods/binding and the core `bindings` resource: assigns a pod to a node.
pub(crate) struct BindingCreater;

#[async_trait::async_trait]
impl Creater for BindingCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        let binding = &request.object;
        let name = object::name(binding);
        // The core `bindings` resource names the pod in the body only.
        let pod_name = if request.name.is_empty() {
            name
        } else {
            if name != request.name {
                return Err(ApiError::bad_request(
                    "name in URL does not match name in Binding object",
                ));
            }
            request.name
        };
        let errors = validate_binding(binding);
        if !errors.is_empty() {
            return Err(aggregate_error(&errors));
        }
        let node = str_of(&binding["target"], "name").to_string();
        let annotations = binding["metadata"]["annotations"].clone();
        let labels = binding["metadata"]["labels"].clone();
        let preconditions = (
            object::uid(binding).to_string(),
            object::resource_version(binding).to_string(),
        );
        let pods = pods(&request)?;
        let kind = SubresourceKind::Create(CreateHandler(Arc::new(BindingCreater)));
        let write = Write {
            subresource: Some(&kind),
            dry_run: request.dry_run,
            admission: None,
            manager: None,
        };
        pods.registry
            .update(
                &pods.definition,
                request.namespace,
                pod_name,
                write,
                |pod| {
                    let pod = pod.ok_or_else(|| ApiError::not_found(&pods_resource(), pod_name))?;
                    bind(pod, &preconditions, &node, (&annotations, &labels))
                },
            )
            .await?;
        Ok(created_status())
    }
}

/// Checks a Binding as upstream's ValidatePodBinding: its target is a Node, named.
fn validate_binding(binding: &Value) -> FieldErrors {
    let target = Path::root("target");
    let mut errors = FieldErrors::new();
    let kind = str_of(&binding["target"], "kind");
    if !kind.is_empty() && kind != "Node" {
        errors.push(FieldError::not_supported(
            &target.child("kind"),
            kind,
            ["Node", "<empty>"],
        ));
    }
    if str_of(&binding["target"], "name").is_empty() {
        errors.push(FieldError::required(&target.child("name"), ""));
    }
    errors
}

/// The pod assigned to `node`: upstream's conditions (not being deleted, not assigned yet,
/// no scheduling gates, the binding's uid and resourceVersion preconditions), the binding's
/// annotations and labels (PodTopologyLabels puts the node's topology there) added,
/// overwriting, and the PodScheduled condition set.
fn bind(
    pod: &Value,
    (uid, version): &(String, String),
    node: &str,
    (annotations, labels): (&Value, &Value),
) -> Result<Value, ApiError> {
    let name = object::name(pod);
    let conflict = |message: String| {
        ApiError::conflict(&GroupResource::new("", "pods/binding"), name, message)
    };
    if !uid.is_empty() && uid != object::uid(pod) {
        return Err(ApiError::conflict(
            &pods_resource(),
            name,
            format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                object::uid(pod)
            ),
        ));
    }
    if object::is_deleting(pod) {
        return Err(conflict(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    let assigned = str_of(&pod["spec"], "nodeName");
    if !assigned.is_empty() {
        return Err(conflict(format!(
            "pod {name} is already assigned to node {}",
            quote(assigned)
        )));
    }
    if pod["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|gates| !gates.is_empty())
    {
        return Err(conflict(format!(
            "pod {name} has non-empty .spec.schedulingGates"
        )));
    }
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = Value::from(node);
    for (field, added) in [("annotations", annotations), ("labels", labels)] {
        let Some(added) = added.as_object().filter(|a| !a.is_empty()) else {
            continue;
        };
        let meta = object::metadata_mut(&mut bound).expect("a stored pod has metadata");
        let existing = meta.entry(field).or_insert_with(|| json!({}));
        for (key, value) in added {
            existing[key] = value.clone();
        }
    }
    set_condition(&mut bound, "PodScheduled", "True", None);
    if !version.is_empty() {
        object::set_meta(&mut bound, "resourceVersion", Value::from(version.as_str()));
    }
    Ok(bound)
}

/// Sets a pod condition as upstream's UpdatePodCondition: a new condition, or a changed
/// status, gets the current time as its lastTransitionTime.
fn set_condition(pod: &mut Value, type_: &str, status: &str, reason: Option<(&str, &str)>) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conditions = pod["status"]
        .as_object_mut()
        .expect("made an object above")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("made an array above");
    let mut condition = json!({ "type": type_, "status": status, "lastProbeTime": null });
    if let Some((reason, message)) = reason {
        condition["reason"] = reason.into();
        condition["message"] = message.into();
    }
    match list.iter_mut().find(|c| c["type"] == type_) {
        Some(existing) => {
            let transition = if existing["status"] == status {
                existing["lastTransitionTime"].clone()
            } else {
                Value::from(now_rfc3339())
            };
            condition["lastTransitionTime"] = transition;
            *existing = condition;
        }
        None => {
            condition["lastTransitionTime"] = Value::from(now_rfc3339());
            list.push(condition);
        }
    }
}

/// Answers pods/eviction: deletes the pod if its PodDisruptionBudget allows it, as upstream's
/// EvictionREST.
pub(crate) struct EvictionCreater;

#[async_trait::async_trait]
impl Creater for EvictionCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        // The server decoded the body as a policy/v1 or v1beta1 Eviction.
        let eviction = &request.object;
        let name = object::name(eviction);
        if !name.is_empty() && name != request.name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
        let pods = pods(&request)?;
        let pod = pods
            .registry
            .get(
                &pods_resource(),
                request.namespace,
                request.name,
                &ReadVersion::MostRecent,
            )
            .await?
            .decode()?;
        let options = delete_options(eviction, request.dry_run);
        if can_ignore_budget(&pod) {
            evict(&request, &pods, &pod, options).await?;
            return Ok(created_status());
        }
        let budgets = matching_budgets(&request, &pod).await?;
        match budgets.as_slice() {
            [] => {}
            [budget] => {
                if !skips_budget(&pod, budget) {
                    decrement_budget(&request, budget, object::name(&pod)).await?;
                }
            }
            _ => {
                return Err(ApiError::too_many_requests(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                    0,
                ));
            }
        }
        evict(&request, &pods, &pod, options).await?;
        Ok(created_status())
    }

    /// Upstream's `EvictionREST.AcceptsGroupVersion`: policy/v1beta1 Evictions too.
    fn also_accepted(&self) -> &'static [&'static str] {
        &["policy/v1beta1"]
    }
}

/// The delete options of an eviction (its `deleteOptions`), dry run if the request is.
fn delete_options(eviction: &Value, dry_run: bool) -> DeleteParams {
    let options = &eviction["deleteOptions"];
    let precondition = |field: &str| {
        options["preconditions"][field]
            .as_str()
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    DeleteParams {
        options: options.clone(),
        precondition_uid: precondition("uid"),
        precondition_resource_version: precondition("resourceVersion"),
        propagation_policy: options["propagationPolicy"].as_str().map(str::to_string),
        grace_period_seconds: options["gracePeriodSeconds"].as_i64(),
        dry_run: dry_run || options["dryRun"].as_array().is_some_and(|d| !d.is_empty()),
    }
}

/// Whether the pod's phase lets it be evicted without asking its budget: it is not running
/// yet (Pending) or any more (Succeeded, Failed).
fn ignores_budget_by_phase(pod: &Value) -> bool {
    matches!(
        str_of(&pod["status"], "phase"),
        "Pending" | "Succeeded" | "Failed"
    )
}

/// Upstream's canIgnorePDB: the phase allows it, or the pod is being deleted already.
fn can_ignore_budget(pod: &Value) -> bool {
    ignores_budget_by_phase(pod) || object::is_deleting(pod)
}

/// Whether the pod is Ready (upstream's IsPodReady).
fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// Whether an unready pod may go without taking from its budget: the budget is met without
/// it (IfHealthyBudget, the default) or says AlwaysAllow.
fn skips_budget(pod: &Value, budget: &Value) -> bool {
    if is_ready(pod) {
        return false;
    }
    let status = &budget["status"];
    let number = |field: &str| status[field].as_i64().unwrap_or(0);
    let always = budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow";
    always || (number("currentHealthy") >= number("desiredHealthy") && number("desiredHealthy") > 0)
}

/// The PodDisruptionBudgets of the pod's namespace whose selector matches it (an empty or
/// invalid selector matches nothing).
async fn matching_budgets(
    request: &CreateRequest<'_>,
    pod: &Value,
) -> Result<Vec<Value>, ApiError> {
    let budgets = served(request, "policy", "poddisruptionbudgets")?;
    let params = ListParams {
        namespace: Some(object::namespace(pod).to_string()),
        ..ListParams::default()
    };
    let resource = GroupResource::new("policy", "poddisruptionbudgets");
    let listed = budgets.registry.list(&resource, &params).await?;
    let labels = pod["metadata"]["labels"].clone();
    let mut matching = Vec::new();
    for item in &listed.items {
        let budget = item.decode()?;
        let selector = labels::from_label_selector(&budget["spec"]["selector"])
            .unwrap_or_else(|_| Selector::nothing());
        if selector.is_empty() || !selector.matches(&label_map(&labels)) {
            continue;
        }
        matching.push(budget);
    }
    Ok(matching)
}

/// A pod's labels as a map of strings.
fn label_map(labels: &Value) -> std::collections::BTreeMap<String, String> {
    labels
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The 429 of a budget that allows no disruption now, with its DisruptionBudget cause.
fn budget_violation(message: String, retry_after_seconds: i32) -> ApiError {
    let details = StatusDetails {
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message,
            field: String::new(),
        }],
        retry_after_seconds,
        ..StatusDetails::default()
    };
    let status = Status::failure(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_details(details);
    ApiError::from(status)
}

/// Checks a budget allows one more disruption, as upstream's checkAndDecrement.
fn check_budget(budget: &Value) -> Result<(), ApiError> {
    let name = object::name(budget);
    let status = &budget["status"];
    let number = |field: &str| status[field].as_i64().unwrap_or(0);
    let generation = budget["metadata"]["generation"].as_i64().unwrap_or(0);
    let forbidden = |reason: &str| {
        let resource = GroupResource::new("policy", "poddisruptionbudget");
        ApiError::forbidden(&resource, name, reason)
    };
    if number("observedGeneration") < generation {
        return Err(budget_violation(
            format!("The disruption budget {name} is still being processed by the server."),
            10,
        ));
    }
    if number("disruptionsAllowed") < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    let disrupted = status["disruptedPods"].as_object().map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if number("disruptionsAllowed") == 0 {
        return Err(budget_violation(
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                number("desiredHealthy"),
                number("currentHealthy")
            ),
            0,
        ));
    }
    Ok(())
}

/// How many pods a budget may list as disrupted before evictions stop (upstream's
/// MaxDisruptedPodSize).
const MAX_DISRUPTED_PODS: usize = 2000;

/// Takes one disruption from the budget and records the pod as disrupted (status write),
/// retried on conflicts with the budget's newest state.
async fn decrement_budget(
    request: &CreateRequest<'_>,
    budget: &Value,
    pod_name: &str,
) -> Result<(), ApiError> {
    check_budget(budget)?;
    let budgets = served(request, "policy", "poddisruptionbudgets")?;
    let write = Write {
        subresource: Some(&SubresourceKind::Status),
        dry_run: request.dry_run,
        admission: None,
        manager: None,
    };
    let resource = GroupResource::new("policy", "poddisruptionbudgets");
    let name = object::name(budget);
    budgets
        .registry
        .update(
            &budgets.definition,
            request.namespace,
            name,
            write,
            |current| {
                let current = current.ok_or_else(|| ApiError::not_found(&resource, name))?;
                check_budget(current)?;
                Ok(decremented(current, pod_name))
            },
        )
        .await?;
    Ok(())
}

/// The budget with one disruption less allowed and the pod listed as disrupted now.
fn decremented(budget: &Value, pod_name: &str) -> Value {
    let mut budget = budget.clone();
    let allowed = budget["status"]["disruptionsAllowed"].as_i64().unwrap_or(0) - 1;
    budget["status"]["disruptionsAllowed"] = allowed.into();
    if !budget["status"]["disruptedPods"].is_object() {
        budget["status"]["disruptedPods"] = json!({});
    }
    budget["status"]["disruptedPods"][pod_name] = Value::from(now_rfc3339());
    if allowed == 0 {
        set_budget_condition(&mut budget);
    }
    budget
}

/// Marks a budget that allows no more disruptions (upstream's UpdateDisruptionAllowedCondition).
fn set_budget_condition(budget: &mut Value) {
    let generation = budget["status"]["observedGeneration"].clone();
    let condition = json!({
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "message": "",
        "observedGeneration": generation,
        "lastTransitionTime": now_rfc3339(),
    });
    let conditions = &mut budget["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("made an array above");
    match list.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
        Some(existing) if existing["status"] == "False" => {}
        Some(existing) => *existing = condition,
        None => list.push(condition),
    }
}

/// Marks the pod with the DisruptionTarget condition, then deletes it with the eviction's
/// options (its resourceVersion as the precondition unless the eviction gave one).
async fn evict(
    request: &CreateRequest<'_>,
    pods: &Served,
    pod: &Value,
    mut options: DeleteParams,
) -> Result<(), ApiError> {
    let name = object::name(pod);
    let has_target = pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "DisruptionTarget"));
    let mut version = object::resource_version(pod).to_string();
    if !has_target && !object::is_deleting(pod) && !options.dry_run {
        let write = Write {
            subresource: Some(&SubresourceKind::Status),
            dry_run: false,
            admission: None,
            manager: None,
        };
        let (marked, _) = pods
            .registry
            .update(
                &pods.definition,
                request.namespace,
                name,
                write,
                |current| {
                    let mut marked = current
                        .ok_or_else(|| ApiError::not_found(&pods_resource(), name))?
                        .clone();
                    let reason = ("EvictionByEvictionAPI", "Eviction API: evicting");
                    set_condition(&mut marked, "DisruptionTarget", "True", Some(reason));
                    Ok(marked)
                },
            )
            .await?;
        version = object::resource_version(&marked).to_string();
    }
    if options.precondition_resource_version.is_none() {
        options.precondition_resource_version = Some(version);
    }
    pods.registry
        .delete(&pods.definition, request.namespace, name, &options, None)
        .await?;
    Ok(())
}

/// pods/ephemeralcontainers: only `spec.ephemeralContainers` is taken from the written pod.
pub(super) fn ephemeral_containers_part() -> PartWrite {
    PartWrite {
        merge: |current, written| {
            let mut pod = current.clone();
            pod["spec"]["ephemeralContainers"] = written["spec"]["ephemeralContainers"].clone();
            if pod["spec"]["ephemeralContainers"].is_null()
                && let Some(spec) = pod["spec"].as_object_mut()
            {
                spec.remove("ephemeralContainers");
            }
            pod
        },
        validate: validate_ephemeral_containers,
    }
}

/// Upstream's rules for an ephemeral containers update: existing ones may be neither removed
/// nor changed; new ones need a name unique among all the pod's containers and an image.
fn validate_ephemeral_containers(new: &Value, old: &Value) -> FieldErrors {
    let path = Path::root("spec").child("ephemeralContainers");
    let list = |pod: &Value| {
        pod["spec"]["ephemeralContainers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let (new_list, old_list) = (list(new), list(old));
    let mut errors = FieldErrors::new();
    for existing in &old_list {
        let name = str_of(existing, "name");
        match new_list.iter().find(|c| str_of(c, "name") == name) {
            None => errors.push(FieldError::forbidden(
                &path,
                format!(
                    "existing ephemeral containers {} may not be removed\n",
                    quote(name)
                ),
            )),
            Some(current) if current != existing => errors.push(FieldError::forbidden(
                &path,
                format!(
                    "existing ephemeral containers {} may not be changed\n",
                    quote(name)
                ),
            )),
            Some(_) => {}
        }
    }
    let mut names: Vec<String> = ["containers", "initContainers"]
        .iter()
        .flat_map(|field| new["spec"][field].as_array().cloned().unwrap_or_default())
        .map(|c| str_of(&c, "name").to_string())
        .collect();
    for (i, container) in new_list.iter().enumerate() {
        let at = path.index(i);
        let name = str_of(container, "name");
        if name.is_empty() {
            errors.push(FieldError::required(&at.child("name"), ""));
        } else if names.iter().any(|n| n == name) {
            errors.push(FieldError::duplicate(&at.child("name"), name));
        }
        names.push(name.to_string());
        if str_of(container, "image").is_empty() {
            errors.push(FieldError::required(&at.child("image"), ""));
        }
    }
    errors
}

/// pods/resize: only the containers' `resources` and `resizePolicy` are taken from the
/// written pod (matched by name; init containers too).
pub(super) fn resize_part() -> PartWrite {
    PartWrite {
        merge: |current, written| {
            let mut pod = current.clone();
            for field in ["containers", "initContainers"] {
                let Some(containers) = pod
                    .get_mut("spec")
                    .and_then(|spec| spec.get_mut(field))
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                let wanted = written["spec"][field].as_array();
                for container in containers {
                    let name = str_of(container, "name").to_string();
                    let Some(from) =
                        wanted.and_then(|w| w.iter().find(|c| str_of(c, "name") == name))
                    else {
                        continue;
                    };
                    for part in ["resources", "resizePolicy"] {
                        match from.get(part) {
                            Some(value) => container[part] = value.clone(),
                            None => {
                                if let Some(map) = container.as_object_mut() {
                                    map.remove(part);
                                }
                            }
                        }
                    }
                }
            }
            pod
        },
        validate: validate_resize,
    }
}

/// Upstream's resize rules kapi checks: a pod's containers cannot change in number, and
/// only running pods' requests are resized (not those of terminated pods).
fn validate_resize(new: &Value, old: &Value) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let phase = str_of(&old["status"], "phase");
    if matches!(phase, "Succeeded" | "Failed") {
        errors.push(FieldError::forbidden(
            &Path::root("spec"),
            "pod resize may not be performed on terminated pods",
        ));
    }
    let count = |pod: &Value| pod["spec"]["containers"].as_array().map_or(0, Vec::len);
    if count(new) != count(old) {
        errors.push(FieldError::forbidden(
            &Path::root("spec").child("containers"),
            "containers may not be added or removed",
        ));
    }
    errors
}

#[cfg(test)]
mod tests;
