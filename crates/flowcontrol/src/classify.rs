//! Classification (upstream's `apf_controller.go` digest and `rule.go` matching): the
//! FlowSchemas whose priority level exists, in matching order (precedence, then name), with
//! the mandatory `exempt` first and `catch-all` last when the store lacks them; a request
//! goes to the first FlowSchema one of whose rules matches its user and its resource or
//! non-resource request, and to that schema's priority level, with its flow distinguisher.

use std::collections::HashMap;

use http::HeaderValue;
use kapi_apimachinery::request_info::RequestInfo;
use kapi_server::UserInfo;
use serde_json::Value;

use crate::bootstrap;
use crate::limits::Shares;
use crate::queueset::{Kind, Queuing};

/// What a request was classified as: the names and UIDs its response headers carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    pub flow_schema: String,
    pub flow_schema_uid: String,
    pub priority_level: String,
    pub priority_level_uid: String,
    /// The flow within the level: the user's name or the namespace, as the schema says
    /// (empty for exempt levels and levels without queues).
    pub flow_distinguisher: String,
}

/// The FlowSchemas and priority levels requests are classified by (always with an `exempt`
/// and a `catch-all` FlowSchema, see [`Digest::new`]).
#[derive(Debug)]
pub struct Digest {
    pub(crate) schemas: Vec<Schema>,
    pub(crate) levels: HashMap<String, Level>,
}

#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) name: String,
    uid: String,
    pub(crate) uid_header: HeaderValue,
    pub(crate) level: String,
    distinguisher: Distinguisher,
    rules: Vec<Rule>,
}

/// One rule of a FlowSchema (`PolicyRulesWithSubjects`), parsed once per digest.
#[derive(Debug)]
struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Debug)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount {
        namespace: String,
        name: String,
    },
    /// A kind this server does not know: matches nobody.
    Other,
}

#[derive(Debug)]
struct ResourceRule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    cluster_scope: bool,
    namespaces: Vec<String>,
}

#[derive(Debug)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

#[derive(Debug)]
pub(crate) struct Level {
    uid: String,
    pub(crate) uid_header: HeaderValue,
    /// Exempt, or Limited without several queues: no flows.
    no_flows: bool,
    pub(crate) kind: Kind,
    pub(crate) shares: Shares,
}

impl Digest {
    /// The digest of the stored objects: FlowSchemas naming a level that does not exist are
    /// left out; the bootstrap `exempt` and `catch-all` stand in (without a UID) for those
    /// the store lacks.
    pub fn new(schemas: &[Value], levels: &[Value]) -> Digest {
        let mut digest = Digest {
            schemas: Vec::new(),
            levels: HashMap::new(),
        };
        for level in levels {
            digest.add_level(level, true);
        }
        let mut kept: Vec<(i64, Schema)> = schemas
            .iter()
            .filter(|s| {
                digest
                    .levels
                    .contains_key(text(&s["spec"]["priorityLevelConfiguration"]["name"]))
            })
            .map(|s| (precedence(s), schema(s)))
            .collect();
        kept.sort_by(|(pa, a), (pb, b)| pa.cmp(pb).then_with(|| a.name.cmp(&b.name)));
        digest.schemas = kept.into_iter().map(|(_, schema)| schema).collect();
        for level in bootstrap::mandatory_priority_levels() {
            let name = bootstrap::name_of(&level).to_string();
            if !digest.levels.contains_key(&name) {
                digest.add_level(&level, false);
            }
        }
        let mandatory = bootstrap::mandatory_flow_schemas();
        if !digest.schemas.iter().any(|s| s.name == "exempt") {
            digest.schemas.insert(0, imagined(&mandatory[0]));
        }
        if !digest.schemas.iter().any(|s| s.name == "catch-all") {
            digest.schemas.push(imagined(&mandatory[1]));
        }
        digest
    }

    fn add_level(&mut self, level: &Value, stored: bool) {
        let spec = &level["spec"];
        let no_flows = spec["type"] == "Exempt"
            || spec["limited"]["limitResponse"]["type"] != "Queue"
            || spec["limited"]["limitResponse"]["queuing"]["queues"]
                .as_i64()
                .unwrap_or(0)
                <= 1;
        let uid = match stored {
            true => text(&level["metadata"]["uid"]).to_string(),
            false => String::new(),
        };
        let uid_header = uid_header(&uid);
        let (kind, shares) = admission(spec);
        let state = Level {
            uid,
            uid_header,
            no_flows,
            kind,
            shares,
        };
        self.levels
            .insert(bootstrap::name_of(level).to_string(), state);
    }

    /// The FlowSchema a request by `user` described by `info` matches: the first whose rule
    /// matches, else `catch-all`.
    pub(crate) fn matching(&self, user: &UserInfo, info: &RequestInfo) -> &Schema {
        self.schemas
            .iter()
            .find(|schema| {
                schema
                    .rules
                    .iter()
                    .any(|rule| rule_matches(rule, user, info))
            })
            .or_else(|| self.schemas.iter().find(|s| s.name == "catch-all"))
            .expect("the digest always has a catch-all FlowSchema")
    }

    /// The flow distinguisher of a request matching `schema`: the user's name or the
    /// namespace, as the schema says, when its level has flows; else empty.
    pub(crate) fn distinguisher<'a>(
        &self,
        schema: &Schema,
        user: &'a UserInfo,
        info: &'a RequestInfo,
    ) -> &'a str {
        let level = self.levels.get(&schema.level);
        match (
            level.is_none_or(|level| level.no_flows),
            schema.distinguisher,
        ) {
            (false, Distinguisher::ByUser) => &user.name,
            (false, Distinguisher::ByNamespace) => &info.namespace,
            _ => "",
        }
    }

    /// The classification of a request by `user` described by `info`.
    pub fn classify(&self, user: &UserInfo, info: &RequestInfo) -> Classification {
        let schema = self.matching(user, info);
        let level = self.levels.get(&schema.level);
        let flow_distinguisher = self.distinguisher(schema, user, info).to_string();
        Classification {
            flow_schema: schema.name.clone(),
            flow_schema_uid: schema.uid.clone(),
            priority_level: schema.level.clone(),
            priority_level_uid: level.map(|l| l.uid.clone()).unwrap_or_default(),
            flow_distinguisher,
        }
    }
}

/// The header value of an empty UID (the stand-ins for missing mandatory objects).
const EMPTY_HEADER: HeaderValue = HeaderValue::from_static("");

/// A UID as a header value (UIDs are ASCII; anything else is left empty).
fn uid_header(uid: &str) -> HeaderValue {
    HeaderValue::from_str(uid).unwrap_or(EMPTY_HEADER)
}

/// The largest value of the API's int32 fields.
const MAX_INT32: u64 = i32::MAX as u64;
/// The most queues and the largest hand validation lets a level have (a hand of 60 needs
/// 60 bits even from two queues).
const MAX_QUEUES: u64 = 10_000_000;
const MAX_HAND: usize = 60;

/// How a level's spec says it admits requests, and its shares of the server's
/// concurrency (with the v1 defaults for what is not set).
fn admission(spec: &Value) -> (Kind, Shares) {
    // Validation keeps stored values in these bounds; values beyond them (an object written
    // by something that did not validate) are clamped rather than trusted.
    let number = |value: &Value, default: u64| value.as_u64().unwrap_or(default).min(MAX_INT32);
    if spec["type"] == "Exempt" {
        let exempt = &spec["exempt"];
        let shares = Shares {
            exempt: true,
            nominal_shares: number(&exempt["nominalConcurrencyShares"], 0),
            lendable_percent: number(&exempt["lendablePercent"], 0),
            borrowing_limit_percent: None,
        };
        return (Kind::Exempt, shares);
    }
    let limited = &spec["limited"];
    let shares = Shares {
        exempt: false,
        nominal_shares: number(&limited["nominalConcurrencyShares"], 30),
        lendable_percent: number(&limited["lendablePercent"], 0),
        borrowing_limit_percent: limited["borrowingLimitPercent"].as_u64(),
    };
    let response = &limited["limitResponse"];
    let queuing = &response["queuing"];
    let queues = number(&queuing["queues"], 64).min(MAX_QUEUES) as usize;
    let queuing = Queuing {
        queues,
        hand_size: (number(&queuing["handSize"], 8) as usize).clamp(1, queues.clamp(1, MAX_HAND)),
        queue_length_limit: number(&queuing["queueLengthLimit"], 50) as usize,
    };
    let kind = match response["type"] == "Queue" && queuing.queues > 0 {
        true => Kind::Queue(queuing),
        false => Kind::Reject,
    };
    (kind, shares)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn precedence(schema: &Value) -> i64 {
    schema["spec"]["matchingPrecedence"]
        .as_i64()
        .unwrap_or(1000)
}

fn schema(object: &Value) -> Schema {
    let spec = &object["spec"];
    let distinguisher = match text(&spec["distinguisherMethod"]["type"]) {
        "ByUser" => Distinguisher::ByUser,
        "ByNamespace" => Distinguisher::ByNamespace,
        _ => Distinguisher::None,
    };
    let uid = text(&object["metadata"]["uid"]);
    Schema {
        name: bootstrap::name_of(object).to_string(),
        uid: uid.to_string(),
        uid_header: uid_header(uid),
        level: text(&spec["priorityLevelConfiguration"]["name"]).to_string(),
        distinguisher,
        rules: items(&spec["rules"]).iter().map(rule).collect(),
    }
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

fn strings(value: &Value) -> Vec<String> {
    items(value)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn rule(value: &Value) -> Rule {
    Rule {
        subjects: items(&value["subjects"]).iter().map(subject).collect(),
        resource_rules: items(&value["resourceRules"])
            .iter()
            .map(|r| ResourceRule {
                verbs: strings(&r["verbs"]),
                api_groups: strings(&r["apiGroups"]),
                resources: strings(&r["resources"]),
                cluster_scope: r["clusterScope"].as_bool().unwrap_or(false),
                namespaces: strings(&r["namespaces"]),
            })
            .collect(),
        non_resource_rules: items(&value["nonResourceRules"])
            .iter()
            .map(|r| NonResourceRule {
                verbs: strings(&r["verbs"]),
                urls: strings(&r["nonResourceURLs"]),
            })
            .collect(),
    }
}

fn subject(value: &Value) -> Subject {
    match text(&value["kind"]) {
        "User" => Subject::User(text(&value["user"]["name"]).to_string()),
        "Group" => Subject::Group(text(&value["group"]["name"]).to_string()),
        "ServiceAccount" => Subject::ServiceAccount {
            namespace: text(&value["serviceAccount"]["namespace"]).to_string(),
            name: text(&value["serviceAccount"]["name"]).to_string(),
        },
        _ => Subject::Other,
    }
}

/// A bootstrap FlowSchema standing in for a missing mandatory one (no UID).
fn imagined(object: &Value) -> Schema {
    let mut schema = schema(object);
    schema.uid = String::new();
    schema.uid_header = EMPTY_HEADER;
    schema
}

/// Whether a list (verbs, groups, resources, namespaces) holds `value` or is `["*"]`.
fn listed(list: &[String], value: &str) -> bool {
    (list.len() == 1 && list[0] == "*") || list.iter().any(|item| item == value)
}

/// Whether one of the rule's subjects is the user, and then one of its resource rules (for
/// a resource request) or non-resource rules (otherwise) matches.
fn rule_matches(rule: &Rule, user: &UserInfo, info: &RequestInfo) -> bool {
    if !rule
        .subjects
        .iter()
        .any(|subject| subject_matches(subject, user))
    {
        return false;
    }
    match info.is_resource_request {
        true => rule
            .resource_rules
            .iter()
            .any(|r| resource_rule_matches(r, info)),
        false => rule
            .non_resource_rules
            .iter()
            .any(|r| non_resource_rule_matches(r, info)),
    }
}

fn subject_matches(subject: &Subject, user: &UserInfo) -> bool {
    match subject {
        Subject::User(name) => name == "*" || *name == user.name,
        Subject::Group(name) => name == "*" || user.groups.iter().any(|group| group == name),
        Subject::ServiceAccount { namespace, name } => {
            let Some(rest) = user.name.strip_prefix("system:serviceaccount:") else {
                return false;
            };
            let Some(account) = rest
                .strip_prefix(namespace.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
            else {
                return false;
            };
            name == "*" || account == name
        }
        Subject::Other => false,
    }
}

fn resource_rule_matches(rule: &ResourceRule, info: &RequestInfo) -> bool {
    if !listed(&rule.verbs, &info.verb) || !listed(&rule.api_groups, &info.api_group) {
        return false;
    }
    let resource_listed = match info.subresource.as_str() {
        "" => listed(&rule.resources, &info.resource),
        sub => listed(&rule.resources, &format!("{}/{sub}", info.resource)),
    };
    if !resource_listed {
        return false;
    }
    match info.namespace.as_str() {
        "" => rule.cluster_scope,
        namespace => listed(&rule.namespaces, namespace),
    }
}

/// Non-resource URLs match exactly, as `*`, or as a prefix: `/healthz` matches
/// `/healthz/etcd`, `/apis/*` matches `/apis/x`.
fn non_resource_rule_matches(rule: &NonResourceRule, info: &RequestInfo) -> bool {
    if !listed(&rule.verbs, &info.verb) {
        return false;
    }
    rule.urls.iter().any(|url| {
        if url == "*" || *url == info.path {
            return true;
        }
        let prefix = url.strip_suffix('*').unwrap_or(url);
        match prefix.ends_with('/') {
            true => info.path.starts_with(prefix),
            false => info
                .path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/')),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..RequestInfo::default()
        }
    }

    fn path(verb: &str, path: &str) -> RequestInfo {
        RequestInfo {
            verb: verb.into(),
            path: path.into(),
            ..RequestInfo::default()
        }
    }

    /// The bootstrap as the store has it (UIDs from names).
    fn stored() -> Digest {
        let with_uid = |mut objects: Vec<Value>| {
            for object in &mut objects {
                let uid = format!("uid-{}", bootstrap::name_of(object));
                object["metadata"]["uid"] = Value::from(uid);
            }
            objects
        };
        let schemas = [
            bootstrap::mandatory_flow_schemas(),
            bootstrap::suggested_flow_schemas(),
        ]
        .concat();
        let levels = [
            bootstrap::mandatory_priority_levels(),
            bootstrap::suggested_priority_levels(),
        ]
        .concat();
        Digest::new(&with_uid(schemas), &with_uid(levels))
    }

    fn schema_of(digest: &Digest, user: &UserInfo, info: &RequestInfo) -> (String, String) {
        let c = digest.classify(user, info);
        (c.flow_schema, c.flow_distinguisher)
    }

    #[test]
    fn requests_go_to_the_first_matching_schema_as_upstreams_bootstrap_sends_them() {
        let digest = stored();
        let admin = user("admin", &["system:masters", "system:authenticated"]);
        let pods = resource("list", "", "pods", "default");
        assert_eq!(schema_of(&digest, &admin, &pods).0, "exempt");
        let probe = path("get", "/readyz");
        let anonymous = user("system:anonymous", &["system:unauthenticated"]);
        assert_eq!(schema_of(&digest, &anonymous, &probe).0, "probes");
        assert_eq!(
            schema_of(&digest, &anonymous, &path("get", "/livez/ping")).0,
            "probes"
        );
        assert_eq!(
            schema_of(&digest, &anonymous, &path("get", "/livezz")).0,
            "global-default"
        );
        let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
        let node_status = RequestInfo {
            subresource: "status".into(),
            ..resource("patch", "", "nodes", "")
        };
        assert_eq!(
            schema_of(&digest, &node, &node_status),
            ("system-node-high".into(), "system:node:n1".into())
        );
        assert_eq!(schema_of(&digest, &node, &pods).0, "system-nodes");
        let kcm = user("system:kube-controller-manager", &["system:authenticated"]);
        let lease = resource("update", "coordination.k8s.io", "leases", "kube-system");
        assert_eq!(schema_of(&digest, &kcm, &lease).0, "system-leader-election");
        assert_eq!(
            schema_of(&digest, &kcm, &pods),
            ("kube-controller-manager".into(), "default".into())
        );
        let kube_system_sa = user(
            "system:serviceaccount:kube-system:x",
            &["system:serviceaccounts"],
        );
        assert_eq!(
            schema_of(&digest, &kube_system_sa, &pods).0,
            "kube-system-service-accounts"
        );
        let sa = user("system:serviceaccount:team:x", &["system:serviceaccounts"]);
        assert_eq!(schema_of(&digest, &sa, &pods).0, "service-accounts");
        let alice = user("alice", &["system:authenticated"]);
        let classified = digest.classify(&alice, &pods);
        assert_eq!(classified.flow_schema, "global-default");
        assert_eq!(classified.flow_schema_uid, "uid-global-default");
        assert_eq!(classified.priority_level_uid, "uid-global-default");
        assert_eq!(classified.flow_distinguisher, "alice");
        // An exempt level has no flows.
        assert_eq!(digest.classify(&admin, &pods).flow_distinguisher, "");
    }

    #[test]
    fn before_any_configuration_requests_go_to_the_mandatory_schemas() {
        let digest = Digest::new(&[], &[]);
        let admin = user("admin", &["system:masters"]);
        let version = path("get", "/version");
        assert_eq!(digest.classify(&admin, &version).flow_schema, "exempt");
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(digest.classify(&alice, &version).flow_schema, "catch-all");
    }

    #[test]
    fn missing_mandatory_objects_are_imagined_and_dangling_schemas_skipped() {
        let mut lost = bootstrap::suggested_flow_schemas()[0].clone();
        lost["spec"]["priorityLevelConfiguration"]["name"] = Value::from("nowhere");
        lost["spec"]["matchingPrecedence"] = Value::from(1);
        let digest = Digest::new(&[lost], &[]);
        let alice = user("alice", &["system:authenticated", "system:nodes"]);
        let classified = digest.classify(&alice, &path("get", "/version"));
        assert_eq!(classified.flow_schema, "catch-all");
        assert_eq!(classified.flow_schema_uid, "");
        assert_eq!(classified.priority_level, "catch-all");
        // catch-all rejects: no queues, so no flows.
        assert_eq!(classified.flow_distinguisher, "");
        let admin = user("admin", &["system:masters"]);
        assert_eq!(
            digest
                .classify(&admin, &path("get", "/version"))
                .flow_schema,
            "exempt"
        );
    }
}
