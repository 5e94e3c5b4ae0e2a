//! The audit policy (`--audit-policy-file`, audit.k8s.io/v1 `Policy`): an ordered list of
//! rules; the first rule a request matches gives its level, the stages to omit and whether
//! managed fields are left out. A request no rule matches is not audited (level `None`),
//! as upstream's policy checker decides.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::authn::UserInfo;

/// How much of a request an audit event records (ordered: each level includes the ones
/// before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    fn parse(text: &str) -> Option<Level> {
        Some(match text {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            _ => return None,
        })
    }

    /// The level as events spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// The stages of a request at which events are emitted.
pub const STAGES: [&str; 4] = [
    "RequestReceived",
    "ResponseStarted",
    "ResponseComplete",
    "Panic",
];

/// What the policy decides for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestAuditConfig {
    pub level: Level,
    pub omit_stages: BTreeSet<String>,
    pub omit_managed_fields: bool,
}

/// A group and the resources of it a rule names (`resource`, `resource/sub`, `*`,
/// `*/sub`, `resource/*`), optionally only some objects.
#[derive(Clone, Debug, Default)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

#[derive(Clone, Debug)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    omit_stages: Vec<String>,
    omit_managed_fields: Option<bool>,
}

/// The request attributes rules look at.
pub struct RequestAttributes<'a> {
    /// `None` for a request that failed authentication.
    pub user: Option<&'a UserInfo>,
    pub verb: &'a str,
    pub resource_request: bool,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub path: &'a str,
}

/// A parsed audit policy.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<String>,
    omit_managed_fields: bool,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn stages(value: &Value, at: &str) -> Result<Vec<String>, String> {
    let stages = strings(value);
    match stages.iter().find(|s| !STAGES.contains(&s.as_str())) {
        Some(bad) => Err(format!(
            "{at}: Unsupported value: \"{bad}\": supported values: \"{}\"",
            STAGES.join("\", \"")
        )),
        None => Ok(stages),
    }
}

impl Policy {
    /// Parses a policy file's content (YAML or JSON), refusing what upstream's loader
    /// refuses: another kind or version, an unknown level or stage, a rule that names both
    /// resources and non-resource URLs.
    pub fn parse(content: &str) -> Result<Policy, String> {
        let value: Value = serde_yaml_ng::from_str(content).map_err(|e| e.to_string())?;
        let api_version = value["apiVersion"].as_str().unwrap_or_default();
        if value["kind"] != "Policy" || !api_version.starts_with("audit.k8s.io/") {
            return Err(format!(
                "expected an audit.k8s.io/v1 Policy, found {api_version} {}",
                value["kind"].as_str().unwrap_or_default()
            ));
        }
        let mut policy = Policy {
            rules: Vec::new(),
            omit_stages: stages(&value["omitStages"], "omitStages")?,
            omit_managed_fields: value["omitManagedFields"] == true,
        };
        for (i, rule) in value["rules"].as_array().into_iter().flatten().enumerate() {
            policy.rules.push(parse_rule(rule, &format!("rules[{i}]"))?);
        }
        Ok(policy)
    }

    /// What the policy decides for a request: its first matching rule's level, or `None`.
    pub fn evaluate(&self, attributes: &RequestAttributes<'_>) -> RequestAuditConfig {
        let Some(rule) = self.rules.iter().find(|r| r.matches(attributes)) else {
            return RequestAuditConfig {
                level: Level::None,
                omit_stages: BTreeSet::new(),
                omit_managed_fields: false,
            };
        };
        RequestAuditConfig {
            level: rule.level,
            omit_stages: self
                .omit_stages
                .iter()
                .chain(&rule.omit_stages)
                .cloned()
                .collect(),
            omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
        }
    }
}

fn parse_rule(rule: &Value, at: &str) -> Result<Rule, String> {
    let level_text = rule["level"].as_str().unwrap_or_default();
    let level = Level::parse(level_text).ok_or_else(|| {
        format!(
            "{at}.level: Unsupported value: \"{level_text}\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\""
        )
    })?;
    let resources: Vec<GroupResources> = rule["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|gr| GroupResources {
            group: gr["group"].as_str().unwrap_or_default().to_string(),
            resources: strings(&gr["resources"]),
            resource_names: strings(&gr["resourceNames"]),
        })
        .collect();
    let non_resource_urls = strings(&rule["nonResourceURLs"]);
    let namespaces = strings(&rule["namespaces"]);
    if !non_resource_urls.is_empty() && (!resources.is_empty() || !namespaces.is_empty()) {
        return Err(format!(
            "{at}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"
        ));
    }
    Ok(Rule {
        level,
        users: strings(&rule["users"]),
        user_groups: strings(&rule["userGroups"]),
        verbs: strings(&rule["verbs"]),
        resources,
        namespaces,
        non_resource_urls,
        omit_stages: stages(&rule["omitStages"], &format!("{at}.omitStages"))?,
        omit_managed_fields: rule["omitManagedFields"].as_bool(),
    })
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|s| s == item)
}

impl Rule {
    fn matches(&self, a: &RequestAttributes<'_>) -> bool {
        if !self.users.is_empty() && !a.user.is_some_and(|u| has(&self.users, &u.name)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !a
                .user
                .is_some_and(|u| u.groups.iter().any(|g| has(&self.user_groups, g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return !a.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(a.path, spec));
        }
        true
    }

    fn matches_resource(&self, a: &RequestAttributes<'_>) -> bool {
        if !a.resource_request {
            return false;
        }
        // Cluster-scoped resources have the namespace "".
        if !self.namespaces.is_empty() && !has(&self.namespaces, a.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if a.subresource.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == a.api_group)
            .any(|gr| {
                gr.resources.is_empty()
                    || (gr.resource_names.is_empty() || has(&gr.resource_names, a.name))
                        && gr.resources.iter().any(|r| {
                            r == "*"
                                || *r == combined
                                || (!a.subresource.is_empty()
                                    && r.strip_prefix("*/") == Some(a.subresource))
                                || r.strip_suffix("/*") == Some(a.resource)
                        })
            })
    }
}

/// A non-resource URL rule: `*`, the path itself, or a `prefix*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
  - level: Request
    resources:
      - group: ""
        resources: ["pods/log", "*/status"]
  - level: RequestResponse
    namespaces: ["audited"]
    omitStages: ["ResponseStarted"]
    omitManagedFields: true
  - level: Metadata
    userGroups: ["system:authenticated"]
"#;

    fn attributes<'a>(user: &'a UserInfo, verb: &'a str, path: &'a str) -> RequestAttributes<'a> {
        RequestAttributes {
            user: Some(user),
            verb,
            resource_request: false,
            api_group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path,
        }
    }

    fn level(policy: &Policy, a: &RequestAttributes<'_>) -> Level {
        policy.evaluate(a).level
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = Policy::parse(POLICY).unwrap();
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        assert_eq!(
            level(&policy, &attributes(&alice, "get", "/healthz/etcd")),
            Level::None
        );
        assert_eq!(
            level(&policy, &attributes(&alice, "get", "/metrics")),
            Level::Metadata
        );
        let resource = |resource, subresource, namespace| RequestAttributes {
            resource_request: true,
            resource,
            subresource,
            namespace,
            ..attributes(&alice, "get", "")
        };
        assert_eq!(
            level(&policy, &resource("secrets", "", "audited")),
            Level::Metadata
        );
        assert_eq!(
            level(&policy, &resource("pods", "log", "x")),
            Level::Request
        );
        assert_eq!(
            level(&policy, &resource("deployments", "status", "x")),
            Level::Request
        );
        let audited = policy.evaluate(&resource("pods", "", "audited"));
        assert_eq!(audited.level, Level::RequestResponse);
        assert!(audited.omit_managed_fields);
        assert_eq!(
            audited.omit_stages.into_iter().collect::<Vec<_>>(),
            ["RequestReceived", "ResponseStarted"]
        );
        let anonymous = RequestAttributes {
            user: None,
            ..attributes(&alice, "get", "/metrics")
        };
        assert_eq!(level(&policy, &anonymous), Level::None);
    }

    #[test]
    fn bad_policies_are_refused() {
        for (policy, error) in [
            (
                "apiVersion: v1\nkind: ConfigMap",
                "expected an audit.k8s.io/v1 Policy",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]",
                "rules[0].level: Unsupported value: \"Everything\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Sometimes]",
                "omitStages: Unsupported value: \"Sometimes\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ['/x'], resources: [{group: ''}]}]",
                "rules cannot apply to both",
            ),
        ] {
            let err = Policy::parse(policy).unwrap_err();
            assert!(err.contains(error), "{err}");
        }
    }
}
