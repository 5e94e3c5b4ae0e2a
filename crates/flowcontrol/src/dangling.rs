//! The `Dangling` condition of FlowSchemas (upstream's config consumer writes it): `True`
//! with reason `NotFound` when the priority level a FlowSchema names does not exist,
//! `False` with reason `Found` when it does; written to the status only when status, reason
//! or message changes, as field manager `api-priority-and-fairness-config-consumer-v1`.

use std::collections::BTreeSet;

use kapi_apimachinery::meta;
use kapi_apimachinery::status::ApiError;
use kapi_server::registry::Write;
use kapi_server::resource::SubresourceKind;
use serde_json::{Value, json};

use crate::ensurer::FlowControlResources;

/// How long a pass waits for the caches to catch up with the store.
const FRESH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The field manager of the condition's writes.
pub const CONFIG_CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Brings every FlowSchema's `Dangling` condition up to date with the priority levels the
/// cache has; the first error, after trying every FlowSchema.
pub async fn mark_dangling(resources: &FlowControlResources) -> Result<(), ApiError> {
    // The caches must have the writes just made (the producer's creations), or a
    // FlowSchema would be marked dangling for a moment.
    for served in [&resources.priority_levels, &resources.flow_schemas] {
        let _ = served.registry.cacher().wait_fresh(FRESH_TIMEOUT).await;
    }
    let levels: BTreeSet<String> = resources
        .priority_levels
        .cached_list(None)
        .iter()
        .filter_map(|level| level["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let mut first_error = None;
    for schema in resources.flow_schemas.cached_list(None) {
        let wanted = condition(&schema, &levels);
        let current = conditions(&schema)
            .iter()
            .find(|c| c["type"] == "Dangling")
            .cloned();
        let same = current.is_some_and(|current| {
            ["status", "reason", "message"]
                .iter()
                .all(|field| current[field] == wanted[field])
        });
        if same {
            continue;
        }
        if let Err(err) = write(resources, &schema, wanted).await {
            // Gone meanwhile, or changed: its own change brings another pass.
            if !err.is_not_found() && err.code() != 409 {
                first_error.get_or_insert(err);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn conditions(schema: &Value) -> &[Value] {
    schema["status"]["conditions"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// The `Dangling` condition `schema` should have, its transition time now.
fn condition(schema: &Value, levels: &BTreeSet<String>) -> Value {
    let level = schema["spec"]["priorityLevelConfiguration"]["name"]
        .as_str()
        .unwrap_or_default();
    let (status, reason, message) = match levels.contains(level) {
        true => (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"
            ),
        ),
        false => (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"
            ),
        ),
    };
    json!({
        "type": "Dangling",
        "status": status,
        "lastTransitionTime": meta::now_rfc3339(),
        "reason": reason,
        "message": message,
    })
}

/// Sets `condition` in `schema`'s status (in place of its `Dangling` condition, if any).
async fn write(
    resources: &FlowControlResources,
    schema: &Value,
    condition: Value,
) -> Result<(), ApiError> {
    let served = &resources.flow_schemas;
    let name = schema["metadata"]["name"].as_str().unwrap_or_default();
    let write = Write {
        subresource: Some(&SubresourceKind::Status),
        dry_run: false,
        admission: None,
        manager: Some(CONFIG_CONSUMER),
    };
    let resource = served.definition.group_resource();
    let version = schema["metadata"]["resourceVersion"].clone();
    served
        .registry
        .update(&served.definition, "", name, write, |stored| {
            let mut object = match stored {
                Some(stored) if stored["metadata"]["resourceVersion"] == version => stored.clone(),
                _ => return Err(ApiError::conflict(&resource, name, "changed meanwhile")),
            };
            let mut kept: Vec<Value> = conditions(&object)
                .iter()
                .filter(|c| c["type"] != "Dangling")
                .cloned()
                .collect();
            kept.push(condition.clone());
            object["status"]["conditions"] = Value::Array(kept);
            Ok(object)
        })
        .await
        .map(drop)
}
