//! Type checking of ValidatingAdmissionPolicies, and the controller that reports it in their
//! status (kube-controller-manager's `validatingadmissionpolicy-status-controller`).
//!
//! As upstream: the kinds checked are those `spec.matchConstraints.resourceRules` name
//! without wildcards (at most 10 per rule, subresources left out); `object` and `oldObject`
//! have each kind's schema, `params` the schema of `spec.paramKind`; each validation's
//! `expression` and `messageExpression` is checked, and what fails is reported in
//! `status.typeChecking.expressionWarnings` as `<group>/<version>, Kind=<kind>: <error>`.
//! Once a generation is checked, `status.observedGeneration` says so.
//!
//! cel-rust does not type-check, so kapi reports cel-go's most common finding: the
//! selection of a field the schema does not declare (kapi-server's `cel_fields`).

use std::collections::BTreeSet;

use kapi_schema::{KindSchema, NodeType, SchemaRef};
use kapi_server::cel_fields::{
    Declarations, Step, escape, undefined_field, undefined_field_message,
};
use kapi_server::endpoints::{ApiHandler, Served, WeakApiHandler};
use kapi_server::informer::{self, Change};
use kapi_server::registry::{Item, Write};
use kapi_server::resource::SubresourceKind;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Upstream's limit of kinds checked per resource rule.
const MAX_TYPES_PER_RULE: usize = 10;

/// A group, version and kind, ordered as upstream orders the kinds it checks.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl std::fmt::Display for Gvk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

fn strings(value: &Value) -> Vec<String> {
    let mut list: Vec<String> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    list.sort();
    list
}

/// The kinds (with their schemas) the policy's resource rules name exactly.
fn checked_kinds(policy: &Value, api: &ApiHandler) -> Vec<(Gvk, KindSchema)> {
    let mut kinds = BTreeSet::new();
    let rules = policy["spec"]["matchConstraints"]["resourceRules"].as_array();
    for rule in rules.into_iter().flatten() {
        let (groups, versions) = (strings(&rule["apiGroups"]), strings(&rule["apiVersions"]));
        let wildcard = |list: &[String]| list.is_empty() || list.iter().any(|s| s == "*");
        if wildcard(&groups) || wildcard(&versions) {
            continue;
        }
        let resources: Vec<String> = strings(&rule["resources"])
            .into_iter()
            .filter(|r| !r.contains('*') && !r.contains('/'))
            .collect();
        let mut found = 0;
        'rule: for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some((kind, _)) = api.resource_schema(group, version, resource) else {
                        continue;
                    };
                    kinds.insert(Gvk {
                        group: group.clone(),
                        version: version.clone(),
                        kind: kind.to_string(),
                    });
                    found += 1;
                    if found >= MAX_TYPES_PER_RULE {
                        break 'rule;
                    }
                }
            }
        }
    }
    kinds
        .into_iter()
        .filter_map(|gvk| {
            let schema = api.kind_schema(&gvk.group, &gvk.version, &gvk.kind)?;
            schema.is_typed().then_some((gvk, schema))
        })
        .collect()
}

/// The schema of the policy's params, if it names a typed kind.
fn params_schema(policy: &Value, api: &ApiHandler) -> Option<KindSchema> {
    let kind = &policy["spec"]["paramKind"];
    let api_version = kind["apiVersion"].as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let schema = api.kind_schema(group, version, kind["kind"].as_str()?)?;
    schema.is_typed().then_some(schema)
}

/// The declared types of a policy's variables for one checked kind.
struct PolicyTypes<'a> {
    object: SchemaRef<'a>,
    params: Option<SchemaRef<'a>>,
}

impl<'a> PolicyTypes<'a> {
    fn at(&self, variable: &str, path: &[Step]) -> Option<SchemaRef<'a>> {
        let root = match variable {
            "object" | "oldObject" => self.object,
            "params" => self.params?,
            _ => return None,
        };
        path.iter().try_fold(root, |node, step| match step {
            Step::Field(field) => node
                .properties()
                .find(|(name, _)| escape(name) == *field)
                .map(|(_, child)| child),
            Step::Elements => node.items().or_else(|| node.additional_properties()),
            Step::Keys => None,
        })
    }
}

impl Declarations for PolicyTypes<'_> {
    fn is_variable(&self, name: &str) -> bool {
        match name {
            "object" | "oldObject" => true,
            "params" => self.params.is_some(),
            _ => false,
        }
    }

    fn declares(&self, variable: &str, path: &[Step], field: &str) -> Option<bool> {
        let node = self.at(variable, path)?;
        let fixed = node.node_type() == NodeType::Object
            && !node.preserves_unknown_fields()
            && node.additional_properties().is_none()
            && node.properties().next().is_some();
        fixed.then(|| node.properties().any(|(name, _)| escape(name) == field))
    }

    fn is_list(&self, variable: &str, path: &[Step]) -> Option<bool> {
        Some(self.at(variable, path)?.node_type() == NodeType::Array)
    }
}

/// The type-checking warnings of a policy (`{fieldRef, warning}` objects).
pub fn check(policy: &Value, api: &ApiHandler) -> Vec<Value> {
    let kinds = checked_kinds(policy, api);
    if kinds.is_empty() {
        return Vec::new();
    }
    let params = params_schema(policy, api);
    let mut warnings = Vec::new();
    let validations = policy["spec"]["validations"].as_array();
    for (i, validation) in validations.into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(source) = validation[field].as_str().filter(|s| !s.is_empty()) else {
                continue;
            };
            let Ok(program) = cel::Program::compile(source) else {
                continue;
            };
            let expr = &program.expression().expr;
            let found: Vec<String> = kinds
                .iter()
                .filter_map(|(gvk, schema)| {
                    let types = PolicyTypes {
                        object: schema.schema(),
                        params: params.as_ref().map(KindSchema::schema),
                    };
                    let undefined = undefined_field(expr, &types)?;
                    Some(format!(
                        "{gvk}: {}\n",
                        undefined_field_message(source, &undefined)
                    ))
                })
                .collect();
            if !found.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": found.join("\n"),
                }));
            }
        }
    }
    warnings
}

/// Reports type checking in the status of every policy whose generation has not been
/// checked yet, until `stopping`.
pub async fn run_status_controller(
    policies: Served,
    api: WeakApiHandler,
    stopping: CancellationToken,
) {
    let (dirty, mut pending) = mpsc::unbounded_channel::<String>();
    let followed = policies.clone();
    let all = policies.clone();
    tokio::spawn(informer::follow(
        followed,
        stopping.clone(),
        move |change| {
            let names = match change {
                Change::Resync => {
                    let registry = &all.registry;
                    let snapshot = registry
                        .cacher()
                        .list(&registry.collection_prefix(None), |_| true);
                    snapshot
                        .objects
                        .iter()
                        .map(|o| o.name().to_string())
                        .collect()
                }
                Change::Event(event) => vec![event.object.name().to_string()],
            };
            names.into_iter().all(|name| dirty.send(name).is_ok())
        },
    ));
    loop {
        let name = tokio::select! {
            _ = stopping.cancelled() => return,
            name = pending.recv() => match name {
                Some(name) => name,
                None => return,
            },
        };
        let Some(api) = api.upgrade() else {
            return;
        };
        if let Err(err) = reconcile(&policies, &api, &name).await {
            tracing::warn!(policy = name, %err, "Unable to report type checking");
        }
    }
}

/// Checks one policy if its generation is newer than its status says, and reports it.
async fn reconcile(
    policies: &Served,
    api: &ApiHandler,
    name: &str,
) -> Result<(), kapi_apimachinery::ApiError> {
    let key = policies.registry.key("", name);
    let Some(cached) = policies.registry.cacher().get(&key).0 else {
        return Ok(());
    };
    let policy = Item::from(&*cached).decode()?;
    let generation = policy["metadata"]["generation"].as_i64().unwrap_or(0);
    let observed = policy["status"]["observedGeneration"].as_i64().unwrap_or(0);
    if generation <= observed {
        return Ok(());
    }
    let warnings = check(&policy, api);
    let mut type_checking = json!({});
    if !warnings.is_empty() {
        type_checking["expressionWarnings"] = json!(warnings);
    }
    let write = Write {
        subresource: Some(&SubresourceKind::Status),
        dry_run: false,
        admission: None,
        manager: Some(kapi_server::registry::KUBE_APISERVER),
    };
    let definition = &policies.definition;
    let written = policies
        .registry
        .update(definition, "", name, write, |current| {
            let mut current = current.cloned().ok_or_else(|| {
                kapi_apimachinery::ApiError::not_found(&definition.group_resource(), name)
            })?;
            // A newer generation is checked when its own event arrives.
            if current["metadata"]["generation"].as_i64() != Some(generation) {
                return Ok(current);
            }
            current["status"]["observedGeneration"] = json!(generation);
            current["status"]["typeChecking"] = type_checking.clone();
            Ok(current)
        })
        .await;
    match written {
        Err(err) if err.is_not_found() => Ok(()),
        other => other.map(drop),
    }
}
