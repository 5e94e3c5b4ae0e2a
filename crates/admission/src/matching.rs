//! Which requests a webhook or an admission policy applies to (upstream's admission
//! predicates): rules on operations, groups, versions, resources and scope, namespace and
//! object label selectors, and the admission configuration resources no webhook or policy
//! ever sees.

use std::borrow::Cow;
use std::sync::Arc;

use kapi_apimachinery::labels;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{Attributes, Operation};
use kapi_server::endpoints::{Served, WeakApiHandler};
use kapi_server::resource::ResourceDefinition;
use serde_json::{Value, json};

/// The group of the admission configuration resources.
const ADMISSION_GROUP: &str = "admissionregistration.k8s.io";

/// Whether webhooks and policies see the request: not a write of an admission
/// configuration (webhook configurations, policies and their bindings), not a CONNECT.
pub fn intercepted(attributes: &Attributes<'_>) -> bool {
    attributes.definition.group_version.group != ADMISSION_GROUP
        && attributes.operation != Operation::Connect
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn has_or_all(list: &Value, wanted: &str) -> bool {
    strings(list).any(|item| item == "*" || item == wanted)
}

/// Whether one rule (`operations`, `apiGroups`, `apiVersions`, `resources`, `scope`, and
/// for policies `resourceNames`) matches the request.
pub fn rule_matches(rule: &Value, attributes: &Attributes<'_>) -> bool {
    let definition = attributes.definition;
    let gv = &definition.group_version;
    let operations_match = rule
        .get("operations")
        .is_none_or(|ops| has_or_all(ops, attributes.operation.as_str()));
    operations_match
        && has_or_all(&rule["apiGroups"], &gv.group)
        && has_or_all(&rule["apiVersions"], &gv.version)
        && resource_matches(
            &rule["resources"],
            &definition.plural,
            attributes.subresource,
        )
        && scope_matches(rule["scope"].as_str().unwrap_or("*"), attributes)
        && names_match(&rule["resourceNames"], attributes.name)
}

/// `*`, `resource`, `resource/subresource`, `resource/*`, `*/subresource` and `*/*`.
fn resource_matches(resources: &Value, resource: &str, subresource: &str) -> bool {
    strings(resources).any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry, ""));
        (res == "*" || res == resource) && (sub == "*" || sub == subresource)
    })
}

/// `Cluster`, `Namespaced` or `*`; Namespace objects are cluster-scoped.
fn scope_matches(scope: &str, attributes: &Attributes<'_>) -> bool {
    let is_namespace_object = attributes.definition.group_version.group.is_empty()
        && attributes.definition.plural == "namespaces"
        && attributes.subresource.is_empty();
    match scope {
        "Cluster" => is_namespace_object || attributes.namespace.is_empty(),
        "Namespaced" => !is_namespace_object && !attributes.namespace.is_empty(),
        _ => true,
    }
}

/// An empty `resourceNames` matches every name.
fn names_match(names: &Value, name: &str) -> bool {
    let mut names = strings(names).peekable();
    names.peek().is_none() || names.any(|n| n == name)
}

/// Whether any rule of `rules` matches.
pub fn any_rule_matches(rules: &Value, attributes: &Attributes<'_>) -> bool {
    rules
        .as_array()
        .into_iter()
        .flatten()
        .any(|rule| rule_matches(rule, attributes))
}

/// Which resource `rules` select the request as: its own (`Some(None)`), or, when
/// `equivalent` (`matchPolicy: Equivalent`), the first of `equivalents` a rule names,
/// earlier rules first, as upstream's matcher picks it.
pub fn matched_resource(
    rules: &Value,
    equivalent: bool,
    attributes: &Attributes<'_>,
    equivalents: &[Arc<ResourceDefinition>],
) -> Option<Option<Arc<ResourceDefinition>>> {
    if any_rule_matches(rules, attributes) {
        return Some(None);
    }
    if !equivalent {
        return None;
    }
    let rules = rules.as_array().map_or(&[][..], Vec::as_slice);
    rules.iter().find_map(|rule| {
        equivalents
            .iter()
            .find(|other| {
                let attributes = Attributes {
                    definition: other,
                    ..*attributes
                };
                rule_matches(rule, &attributes)
            })
            .map(|other| Some(other.clone()))
    })
}

/// The other served versions of the request's resource, for `matchPolicy: Equivalent`
/// (none for subresources with kinds of their own, such as scale).
pub fn equivalents(
    api: &WeakApiHandler,
    attributes: &Attributes<'_>,
) -> Vec<Arc<ResourceDefinition>> {
    match (attributes.subresource, api.upgrade()) {
        ("" | "status", Some(api)) => api.equivalents(attributes.definition),
        _ => Vec::new(),
    }
}

/// What one webhook or policy is given: the request's objects and AdmissionReview request,
/// in the version of the resource its rules matched (borrowed when that is the request's
/// own, so matching the request's version copies nothing).
pub struct Invocation<'a> {
    /// The equivalent resource the webhook registered for, when not the request's own.
    equivalent: Option<Arc<ResourceDefinition>>,
    request: Cow<'a, Value>,
    object: Option<Cow<'a, Value>>,
    old: Option<Cow<'a, Value>>,
}

impl<'a> Invocation<'a> {
    /// The objects (in the request's version) converted for `equivalent`, and the request
    /// naming its kind and resource (`requestKind` and `requestResource` stay the
    /// request's own).
    pub fn new(
        attributes: &Attributes<'_>,
        equivalent: Option<Arc<ResourceDefinition>>,
        request: &'a Value,
        object: Option<&'a Value>,
        old: Option<&'a Value>,
    ) -> Result<Invocation<'a>, ApiError> {
        let Some(target) = &equivalent else {
            return Ok(Invocation {
                equivalent,
                request: Cow::Borrowed(request),
                object: object.map(Cow::Borrowed),
                old: old.map(Cow::Borrowed),
            });
        };
        let convert = |o: &Value| {
            let converted = target.served_form(attributes.definition.stored_form(o.clone())?)?;
            Ok::<_, ApiError>(Cow::Owned(converted))
        };
        let gv = &target.group_version;
        let mut request = request.clone();
        request["kind"] = json!({"group": gv.group, "version": gv.version, "kind": target.kind});
        request["resource"] =
            json!({"group": gv.group, "version": gv.version, "resource": target.plural});
        Ok(Invocation {
            object: object.map(convert).transpose()?,
            old: old.map(convert).transpose()?,
            equivalent,
            request: Cow::Owned(request),
        })
    }

    /// The AdmissionReview request as this invocation sees it.
    pub fn request(&self) -> &Value {
        &self.request
    }

    /// The new object, in this invocation's version.
    pub fn object(&self) -> Option<&Value> {
        self.object.as_deref()
    }

    /// The old object, in this invocation's version.
    pub fn old(&self) -> Option<&Value> {
        self.old.as_deref()
    }

    /// `object` (as a webhook patched it, in this invocation's version) in the request's
    /// version.
    pub fn as_requested(
        &self,
        attributes: &Attributes<'_>,
        object: Value,
    ) -> Result<Value, ApiError> {
        match &self.equivalent {
            Some(target) => attributes
                .definition
                .served_form(target.stored_form(object)?),
            None => Ok(object),
        }
    }
}

/// Whether `labels` pass a LabelSelector (absent: everything).
fn selector_matches(selector: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    if selector.is_null() {
        return true;
    }
    labels::from_label_selector(selector).is_ok_and(|selector| selector.matches(labels))
}

fn labels_of(object: Option<&Value>) -> serde_json::Map<String, Value> {
    object
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `objectSelector`: the new or the old object's labels match.
pub fn object_selector_matches(
    selector: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    if selector.is_null() {
        return true;
    }
    [object, old]
        .into_iter()
        .flatten()
        .any(|o| selector_matches(selector, &labels_of(Some(o))))
}

/// The labels `namespaceSelector` is checked against: a Namespace object's own, the
/// request's namespace's (from its cache); `None` for other cluster-scoped requests, which
/// every namespace selector matches.
pub fn namespace_labels(
    attributes: &Attributes<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    namespaces: &Served,
) -> Option<serde_json::Map<String, Value>> {
    let definition = attributes.definition;
    if definition.group_version.group.is_empty() && definition.plural == "namespaces" {
        return Some(labels_of(object.or(old)));
    }
    if attributes.namespace.is_empty() {
        return None;
    }
    let key = namespaces.registry.key("", attributes.namespace);
    let (cached, _) = namespaces.registry.cacher().get(&key);
    Some(
        cached
            .map(|ns| {
                ns.labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// `namespaceSelector` against the labels [`namespace_labels`] found.
pub fn namespace_selector_matches(
    selector: &Value,
    labels: Option<&serde_json::Map<String, Value>>,
) -> bool {
    match labels {
        None => true,
        Some(labels) => selector_matches(selector, labels),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_match_with_wildcards() {
        let rules = json!(["pods", "deployments/scale"]);
        assert!(resource_matches(&rules, "pods", ""));
        assert!(!resource_matches(&rules, "pods", "status"));
        assert!(resource_matches(&rules, "deployments", "scale"));
        assert!(!resource_matches(&rules, "deployments", ""));
        assert!(resource_matches(&json!(["*"]), "pods", ""));
        assert!(!resource_matches(&json!(["*"]), "pods", "status"));
        assert!(resource_matches(&json!(["*/*"]), "pods", "status"));
        assert!(resource_matches(&json!(["pods/*"]), "pods", "log"));
        assert!(resource_matches(
            &json!(["*/scale"]),
            "replicasets",
            "scale"
        ));
        assert!(names_match(&json!([]), "x"));
        assert!(names_match(&json!(["x"]), "x"));
        assert!(!names_match(&json!(["y"]), "x"));
    }

    #[test]
    fn selectors_match_labels() {
        let object = json!({"metadata": {"labels": {"app": "web"}}});
        let selector = json!({"matchLabels": {"app": "web"}});
        assert!(object_selector_matches(&selector, Some(&object), None));
        assert!(!object_selector_matches(
            &json!({"matchLabels": {"app": "db"}}),
            Some(&object),
            None
        ));
        assert!(object_selector_matches(&Value::Null, None, None));
        let expressions =
            json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]});
        assert!(namespace_selector_matches(
            &expressions,
            Some(&labels_of(Some(&object)))
        ));
        assert!(namespace_selector_matches(&expressions, None));
    }
}
