//! RBAC's data as the authorizer reads it (policy rules, role references, subjects) and its
//! two questions about rules: does a rule allow a request, and do some rules cover others
//! (upstream's rbac/v1 helpers and the escalation check's policy comparator).

use kapi_server::authn::UserInfo;
use kapi_server::{Attributes, Decision};
use serde_json::Value;

use kapi_apimachinery::value::{str_of, strings_of};

/// Matches every verb, group, resource or non-resource URL.
const ALL: &str = "*";
/// The prefix of service accounts' user names.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// One rule of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A rule from its JSON form.
    pub fn from_value(rule: &Value) -> PolicyRule {
        PolicyRule {
            verbs: owned(rule, "verbs"),
            api_groups: owned(rule, "apiGroups"),
            resources: owned(rule, "resources"),
            resource_names: owned(rule, "resourceNames"),
            non_resource_urls: owned(rule, "nonResourceURLs"),
        }
    }

    /// The rules of a role (its `rules` list).
    pub fn of_role(role: &Value) -> Vec<PolicyRule> {
        role["rules"]
            .as_array()
            .map(|rules| rules.iter().map(PolicyRule::from_value).collect())
            .unwrap_or_default()
    }

    /// The rule's JSON form (empty lists left out).
    pub fn to_value(&self) -> Value {
        let mut rule = serde_json::Map::new();
        for (field, values) in [
            ("verbs", &self.verbs),
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !values.is_empty() {
                rule.insert(field.to_string(), serde_json::json!(values));
            }
        }
        Value::Object(rule)
    }

    /// Whether the rule allows the request (upstream's `RuleAllows`).
    pub fn allows(&self, request: &Attributes<'_>) -> bool {
        if !has_or_all(&self.verbs, request.verb) {
            return false;
        }
        if !request.resource_request {
            return self
                .non_resource_urls
                .iter()
                .any(|url| url_covers(url, request.path));
        }
        let combined = if request.subresource.is_empty() {
            request.resource.to_string()
        } else {
            format!("{}/{}", request.resource, request.subresource)
        };
        has_or_all(&self.api_groups, request.api_group)
            && self
                .resources
                .iter()
                .any(|resource| resource_matches(resource, &combined, request.subresource))
            && (self.resource_names.is_empty() || has(&self.resource_names, request.name))
    }

    /// Whether this rule grants everything `sub` (one atomic rule) grants (upstream's
    /// `ruleCovers`).
    fn covers(&self, sub: &PolicyRule) -> bool {
        let names = if sub.resource_names.is_empty() {
            self.resource_names.is_empty()
        } else {
            self.resource_names.is_empty() || has_all(&self.resource_names, &sub.resource_names)
        };
        (has(&self.verbs, ALL) || has_all(&self.verbs, &sub.verbs))
            && (has(&self.api_groups, ALL) || has_all(&self.api_groups, &sub.api_groups))
            && resources_cover(&self.resources, &sub.resources)
            && sub.non_resource_urls.iter().all(|url| {
                self.non_resource_urls
                    .iter()
                    .any(|own| url_covers(own, url))
            })
            && names
    }

    /// The rule split into atomic rules of one group, resource, verb and name (or one
    /// non-resource URL and verb), as upstream's `BreakdownRule`.
    fn breakdown(&self) -> Vec<PolicyRule> {
        let one = |value: &String| vec![value.clone()];
        let mut atoms = Vec::new();
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    let atom = PolicyRule {
                        verbs: one(verb),
                        api_groups: one(group),
                        resources: one(resource),
                        ..PolicyRule::default()
                    };
                    if self.resource_names.is_empty() {
                        atoms.push(atom);
                        continue;
                    }
                    for name in &self.resource_names {
                        atoms.push(PolicyRule {
                            resource_names: one(name),
                            ..atom.clone()
                        });
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                atoms.push(PolicyRule {
                    verbs: one(verb),
                    non_resource_urls: one(url),
                    ..PolicyRule::default()
                });
            }
        }
        atoms
    }

    /// The rule as escalation errors print it (upstream's `CompactString`): only the
    /// non-empty lists, each in Go's `%q` form, e.g. `{APIGroups:[""], Resources:["pods"],
    /// Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let fields = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        let parts: Vec<String> = fields
            .iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(name, values)| format!("{name}:{}", go_quoted_list(values)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// A list of strings as Go's `%q` prints a `[]string`: `["a" "b"]`.
pub fn go_quoted_list(values: &[String]) -> String {
    let quoted: Vec<String> = values
        .iter()
        .map(|value| kapi_apimachinery::quote(value))
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// The rules in `servant` that no rule of `owner` covers, broken down into atomic rules
/// (empty when `owner` covers them all), as upstream's `Covers`.
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(PolicyRule::breakdown)
        .filter(|atom| !owner.iter().any(|rule| rule.covers(atom)))
        .collect()
}

/// Merges atomic rules that differ only by verb (one group and resource, no names), as
/// upstream's `CompactRules` does before printing them.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut merged: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty();
        let existing = merged.iter_mut().find(|other| {
            simple
                && other.api_groups == rule.api_groups
                && other.resources == rule.resources
                && other.resource_names.is_empty()
                && other.non_resource_urls.is_empty()
        });
        match existing {
            Some(other) => {
                for verb in rule.verbs {
                    if !other.verbs.contains(&verb) {
                        other.verbs.push(verb);
                    }
                }
            }
            None => merged.push(rule),
        }
    }
    merged
}

/// The role a binding grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleRef {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    pub name: String,
}

/// Who a binding grants its role to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

/// A RoleBinding or ClusterRoleBinding as the authorizer reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    /// Empty for a ClusterRoleBinding.
    pub namespace: String,
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// A binding from its JSON form.
    pub fn from_value(binding: &Value) -> Binding {
        let role_ref = &binding["roleRef"];
        let subjects = binding["subjects"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        Binding {
            name: str_of(&binding["metadata"], "name").to_string(),
            namespace: str_of(&binding["metadata"], "namespace").to_string(),
            role_ref: RoleRef {
                kind: str_of(role_ref, "kind").to_string(),
                name: str_of(role_ref, "name").to_string(),
            },
            subjects: subjects
                .iter()
                .map(|subject| Subject {
                    kind: str_of(subject, "kind").to_string(),
                    name: str_of(subject, "name").to_string(),
                    namespace: str_of(subject, "namespace").to_string(),
                })
                .collect(),
        }
    }

    /// Whether the binding grants its role to `user` (upstream's `appliesTo`). A service
    /// account subject without a namespace is in the binding's namespace.
    pub fn applies_to(&self, user: &UserInfo) -> bool {
        self.subject_of(user).is_some()
    }

    /// The first of the binding's subjects that `user` is.
    pub fn subject_of(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|subject| match subject.kind.as_str() {
                "User" => subject.name == user.name,
                "Group" => user.in_group(&subject.name),
                "ServiceAccount" => {
                    let namespace = if subject.namespace.is_empty() {
                        &self.namespace
                    } else {
                        &subject.namespace
                    };
                    !namespace.is_empty()
                        && is_service_account(&user.name, namespace, &subject.name)
                }
                _ => false,
            })
    }
}

/// The strings of a list field, owned.
fn owned(object: &Value, key: &str) -> Vec<String> {
    strings_of(object, key)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Whether `user` is the service account `namespace/name`.
fn is_service_account(user: &str, namespace: &str, name: &str) -> bool {
    user.strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(ns, sa)| ns == namespace && sa == name)
}

/// Whether `set` holds `value` or `*`.
fn has_or_all(set: &[String], value: &str) -> bool {
    set.iter().any(|item| item == ALL || item == value)
}

fn has(set: &[String], value: &str) -> bool {
    set.iter().any(|item| item == value)
}

fn has_all(set: &[String], values: &[String]) -> bool {
    values.iter().all(|value| has(set, value))
}

/// Whether the rule resource `rule` matches the requested `resource/subresource`
/// (`combined`): `*`, an exact match, or `*/subresource`.
fn resource_matches(rule: &str, combined: &str, subresource: &str) -> bool {
    rule == ALL
        || rule == combined
        || (!subresource.is_empty() && rule.strip_prefix("*/") == Some(subresource))
}

/// Whether the resources `owner` lists cover every one of `wanted` (`*`, exact, or
/// `*/subresource` for a subresource).
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) {
        return true;
    }
    wanted.iter().all(|resource| {
        has(owner, resource)
            || resource
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// Whether the non-resource URL rule `own` covers `url`: equal, or a `prefix*` of it.
fn url_covers(own: &str, url: &str) -> bool {
    own == ALL
        || own == url
        || own
            .strip_suffix('*')
            .is_some_and(|prefix| url.starts_with(prefix.trim_end_matches('*')))
}

impl Binding {
    /// What upstream's allow reasons call the binding that granted `user` a request:
    /// `ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`, or
    /// `RoleBinding "b/ns" of Role "r" to ServiceAccount "sa/ns"`.
    pub fn describe(&self, user: &UserInfo) -> String {
        let subject = match self.subject_of(user) {
            Some(s) if s.kind == "ServiceAccount" => {
                let namespace = if s.namespace.is_empty() {
                    &self.namespace
                } else {
                    &s.namespace
                };
                format!("{} \"{}/{namespace}\"", s.kind, s.name)
            }
            Some(s) => format!("{} \"{}\"", s.kind, s.name),
            None => String::new(),
        };
        let (kind, name) = if self.namespace.is_empty() {
            ("ClusterRoleBinding", self.name.clone())
        } else {
            ("RoleBinding", format!("{}/{}", self.name, self.namespace))
        };
        let role = &self.role_ref;
        format!(
            "{kind} \"{name}\" of {} \"{}\" to {subject}",
            role.kind, role.name
        )
    }
}

/// The first decisive answer of visiting rules: allowed by the binding `allowed_by`
/// describes, if one did.
pub fn decide(allowed_by: Option<String>, errors: &[String]) -> Decision {
    if let Some(binding) = allowed_by {
        return Decision::Allow(format!("RBAC: allowed by {binding}"));
    }
    let reason = match errors {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    };
    Decision::NoOpinion(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_apimachinery::request_info::{RequestInfo, RequestInfoFactory};
    use serde_json::json;

    fn rule(value: Value) -> PolicyRule {
        PolicyRule::from_value(&value)
    }

    #[test]
    fn allow_reasons_name_the_binding_as_upstream() {
        let user = UserInfo {
            name: "system:serviceaccount:team:robot".into(),
            groups: vec!["system:serviceaccounts".into()],
            ..UserInfo::default()
        };
        let binding = Binding::from_value(&json!({"metadata": {"name": "b", "namespace": "team"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "x"}, {"kind": "ServiceAccount", "name": "robot"}]}));
        assert_eq!(
            binding.describe(&user),
            r#"RoleBinding "b/team" of Role "r" to ServiceAccount "robot/team""#
        );
        let binding = Binding::from_value(&json!({"metadata": {"name": "admins"},
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": "system:serviceaccounts"}]}));
        assert_eq!(
            decide(Some(binding.describe(&user)), &[]),
            Decision::Allow(
                r#"RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "cluster-admin" to Group "system:serviceaccounts""#
                    .into()
            )
        );
    }

    fn info(method: &str, path: &str) -> RequestInfo {
        RequestInfoFactory::default()
            .resolve(method, path, None)
            .unwrap()
    }

    fn allows(rule: &PolicyRule, method: &str, path: &str) -> bool {
        let user = UserInfo::default();
        let info = info(method, path);
        rule.allows(&Attributes::of_request(&user, &info))
    }

    #[test]
    fn rules_allow_as_upstream() {
        let pods =
            rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(allows(&pods, "GET", "/api/v1/namespaces/a/pods/p"));
        assert!(allows(&pods, "GET", "/api/v1/pods"));
        assert!(!allows(&pods, "DELETE", "/api/v1/namespaces/a/pods/p"));
        assert!(!allows(&pods, "GET", "/api/v1/namespaces/a/pods/p/log"));
        assert!(!allows(
            &pods,
            "GET",
            "/apis/apps/v1/namespaces/a/deployments"
        ));
        let status = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}));
        assert!(allows(
            &status,
            "PUT",
            "/apis/apps/v1/namespaces/a/deployments/d/status"
        ));
        assert!(!allows(
            &status,
            "PUT",
            "/apis/apps/v1/namespaces/a/deployments/d"
        ));
        let named = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"]}),
        );
        assert!(allows(&named, "GET", "/api/v1/namespaces/a/configmaps/one"));
        assert!(!allows(
            &named,
            "GET",
            "/api/v1/namespaces/a/configmaps/two"
        ));
        assert!(!allows(&named, "GET", "/api/v1/namespaces/a/configmaps"));
        let urls = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
        assert!(allows(&urls, "GET", "/healthz"));
        assert!(allows(&urls, "GET", "/apis/apps"));
        assert!(!allows(&urls, "GET", "/api"));
        assert!(!allows(&urls, "GET", "/healthz/etcd"));
        assert!(!allows(&pods, "GET", "/healthz"));
    }

    #[test]
    fn covering_breaks_rules_down() {
        let owner = vec![
            rule(
                json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"]}),
            ),
            rule(
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
            ),
            rule(json!({"verbs": ["get"], "nonResourceURLs": ["/logs/*"]})),
        ];
        let fine = vec![
            rule(
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "services/status"]}),
            ),
            rule(
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
            ),
            rule(json!({"verbs": ["get"], "nonResourceURLs": ["/logs/kapi"]})),
        ];
        assert!(uncovered(&owner, &fine).is_empty());
        let too_much = vec![
            rule(
                json!({"verbs": ["get", "delete", "watch"], "apiGroups": [""], "resources": ["pods"]}),
            ),
            rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]})),
        ];
        let missing: Vec<String> = compact(uncovered(&owner, &too_much))
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        assert_eq!(
            missing,
            [
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete" "watch"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#,
            ]
        );
    }

    #[test]
    fn bindings_apply_to_their_subjects() {
        let binding = Binding::from_value(&json!({
            "metadata": {"name": "b", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "builder"},
                {"kind": "ServiceAccount", "name": "deployer", "namespace": "ci"},
            ],
        }));
        let user = |name: &str, groups: &[&str]| UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        assert!(binding.applies_to(&user("alice", &[])));
        assert!(binding.applies_to(&user("bob", &["devs"])));
        assert!(binding.applies_to(&user("system:serviceaccount:team:builder", &[])));
        assert!(binding.applies_to(&user("system:serviceaccount:ci:deployer", &[])));
        assert!(!binding.applies_to(&user("system:serviceaccount:ci:builder", &[])));
        assert!(!binding.applies_to(&user("bob", &["ops"])));
    }
}
