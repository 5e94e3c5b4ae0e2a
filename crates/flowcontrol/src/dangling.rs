//! The `Dangling` condition of FlowSchemas (upstream's config consumer writes it): `True`
//! with reason `NotFound` when the priority level a FlowSchema names does not exist,
//! `False` with reason `Found` when it does; applied to the status (server-side apply,
//! forced, as upstream's consumer applies it) only when status, reason or message changes,
//! as field manager `api-priority-and-fairness-config-consumer-v1`, through a loopback
//! client of the server's own API.

use std::collections::BTreeSet;

use kapi_apimachinery::meta;
use kapi_apimachinery::status::ApiError;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};

use crate::ensurer::FlowControlResources;

/// The field manager of the condition's writes.
pub const CONFIG_CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Brings every FlowSchema's `Dangling` condition up to date with the priority levels the
/// cache has, applying it through `client`; the first error, after trying every FlowSchema.
pub async fn mark_dangling(
    resources: &FlowControlResources,
    client: &LoopbackClient,
) -> Result<(), ApiError> {
    // The caches must have the writes just made (the producer's creations), or a
    // FlowSchema would be marked dangling for a moment.
    crate::ensurer::caught_up(resources).await;
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
        if let Err(err) = apply(resources, client, &schema, wanted).await {
            // Gone meanwhile: its deletion brings another pass.
            if !err.is_not_found() {
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

/// Applies `condition` as the `Dangling` condition of `schema`'s status. The conditions are
/// a list keyed by type, so the apply owns this one and leaves the others to their
/// managers.
async fn apply(
    resources: &FlowControlResources,
    client: &LoopbackClient,
    schema: &Value,
    condition: Value,
) -> Result<(), ApiError> {
    let definition = &resources.flow_schemas.definition;
    let name = schema["metadata"]["name"].as_str().unwrap_or_default();
    let path = format!(
        "/apis/{}/{}/{name}/status?fieldManager={CONFIG_CONSUMER}&force=true",
        definition.group_version.api_version(),
        definition.plural,
    );
    let patch = json!({
        "apiVersion": definition.group_version.api_version(),
        "kind": definition.kind,
        "metadata": {"name": name},
        "status": {"conditions": [condition]},
    });
    client
        .patch(&path, "application/apply-patch+yaml", &patch)
        .await
        .map(drop)
}
