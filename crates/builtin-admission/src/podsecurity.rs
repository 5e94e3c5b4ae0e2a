//! PodSecurity (k8s.io/pod-security-admission): the Pod Security Standards, chosen per
//! namespace by its `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels.
//! Pods that violate the enforce level are refused with upstream's message; the warn level
//! (defaulting to a stricter enforce level) answers with Warning headers, for pods and for
//! the pod templates of workload controllers; changing a namespace's enforce level warns
//! about its existing pods; invalid labels are refused on namespaces. The audit level's
//! violations and the enforced policy are recorded as audit annotations; there are no
//! exemptions (upstream's default configuration has none).

mod checks;

use std::collections::BTreeMap;

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::Value;

use checks::{CHECKS, Level, Violation};

/// The newest version whose checks kapi knows (Kubernetes 1.35); later ones evaluate as it.
const LATEST_MINOR: u32 = 35;
const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
/// Pod subresources that cannot change what the standards look at.
const IGNORED_POD_SUBRESOURCES: [&str; 8] = [
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];
/// How many existing pods a new enforce level is checked against (upstream's default).
const MAX_PODS_CHECKED: usize = 3000;

/// A level and the version of the standards it is read at (`None`: latest).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct LevelVersion {
    level: Level,
    version: Option<u32>,
}

impl LevelVersion {
    const PRIVILEGED: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: None,
    };

    /// `restricted:latest`, `baseline:v1.30`.
    fn text(&self) -> String {
        let level = match self.level {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        };
        match self.version {
            None => format!("{level}:latest"),
            Some(minor) => format!("{level}:v1.{minor}"),
        }
    }

    /// The violations of a pod's metadata and spec.
    fn evaluate(&self, meta: &Value, spec: &Value) -> Vec<Violation> {
        if self.level == Level::Privileged {
            return Vec::new();
        }
        let minor = self.version.unwrap_or(LATEST_MINOR).min(LATEST_MINOR);
        let active = |level: Level| {
            CHECKS
                .iter()
                .filter(move |c| c.level == level && c.since <= minor)
        };
        let overridden: Vec<&str> = if self.level == Level::Restricted {
            active(Level::Restricted)
                .flat_map(|c| c.overrides.iter().copied())
                .collect()
        } else {
            Vec::new()
        };
        let mut run: Vec<_> = active(Level::Baseline)
            .filter(|c| !overridden.contains(&c.id))
            .collect();
        if self.level == Level::Restricted {
            run.extend(active(Level::Restricted));
        }
        run.iter().filter_map(|c| (c.check)(meta, spec)).collect()
    }
}

/// `reason (detail), reason (detail)`.
fn detail(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| match v.detail.as_str() {
            "" => v.reason.clone(),
            detail => format!("{} ({detail})", v.reason),
        })
        .collect();
    parts.join(", ")
}

/// A namespace's policy: what is enforced, audited and warned about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Policy {
    enforce: LevelVersion,
    audit: LevelVersion,
    warn: LevelVersion,
}

/// The audit annotations PodSecurity adds: the enforced policy of every pod evaluated, and
/// what the audit level would refuse.
const ENFORCE_POLICY_ANNOTATION: &str = "pod-security.kubernetes.io/enforce-policy";
const AUDIT_VIOLATIONS_ANNOTATION: &str = "pod-security.kubernetes.io/audit-violations";

fn parse_level(text: &str) -> Result<Level, &'static str> {
    match text {
        "privileged" => Ok(Level::Privileged),
        "baseline" => Ok(Level::Baseline),
        "restricted" => Ok(Level::Restricted),
        _ => Err("must be one of privileged, baseline, restricted"),
    }
}

fn parse_version(text: &str) -> Result<Option<u32>, &'static str> {
    if text == "latest" {
        return Ok(None);
    }
    let minor = text.strip_prefix("v1.").filter(|m| {
        !m.is_empty()
            && m.chars().all(|c| c.is_ascii_digit())
            && (m.len() == 1 || !m.starts_with('0'))
    });
    minor
        .and_then(|m| m.parse().ok())
        .map(Some)
        .ok_or(r#"must be "latest" or "v1.x""#)
}

/// The policy of a namespace's labels, and the errors of invalid ones (upstream's
/// PolicyToEvaluate: what a label does not say is the configured default; an invalid enforce
/// level enforces restricted; invalid warn levels warn of nothing).
fn policy(labels: &Value, defaults: &Policy) -> (Policy, FieldErrors) {
    let mut errors = FieldErrors::new();
    let label = |mode: &str| labels[format!("{LABEL_PREFIX}{mode}")].as_str();
    let mut check = |mode: &str, value: &str, problem: &'static str| {
        let at = Path::root("metadata")
            .child("labels")
            .key(&format!("{LABEL_PREFIX}{mode}"));
        errors.push(FieldError::invalid(&at, Value::from(value), problem));
    };
    let mut read = |level_mode: &str, fallback: Level, default: LevelVersion| {
        let mut lv = default;
        let mut valid_level = false;
        if let Some(text) = label(level_mode) {
            match parse_level(text) {
                Ok(level) => {
                    lv.level = level;
                    valid_level = true;
                }
                Err(problem) => {
                    lv.level = fallback;
                    check(level_mode, text, problem);
                }
            }
        }
        let version_mode = format!("{level_mode}-version");
        if let Some(text) = label(&version_mode) {
            match parse_version(text) {
                Ok(version) => lv.version = version,
                Err(problem) => check(&version_mode, text, problem),
            }
        }
        (lv, valid_level)
    };
    let (enforce, enforce_set) = read("enforce", Level::Restricted, defaults.enforce);
    let (audit, _) = read("audit", Level::Privileged, defaults.audit);
    let (mut warn, _) = read("warn", Level::Privileged, defaults.warn);
    if label("warn").is_none() && enforce_set && enforce.level > warn.level {
        warn.level = enforce.level;
        if label("warn-version").is_none() {
            warn.version = enforce.version;
        }
    }
    (
        Policy {
            enforce,
            audit,
            warn,
        },
        errors,
    )
}

/// Where a workload keeps its pod template (metadata and spec).
fn pod_template<'a>(group: &str, plural: &str, object: &'a Value) -> Option<&'a Value> {
    let template = match (group, plural) {
        ("", "podtemplates") => &object["template"],
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => &object["spec"]["template"],
        ("batch", "cronjobs") => &object["spec"]["jobTemplate"]["spec"]["template"],
        _ => return None,
    };
    template.is_object().then_some(template)
}

/// Whether a pod update changes what the standards look at: containers added or removed,
/// their images, or new ephemeral containers (upstream's isSignificantPodUpdate).
fn significant_update(new: &Value, old: &Value) -> bool {
    let images = |pod: &Value, list: &str| -> Vec<Value> {
        pod["spec"][list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["image"].clone())
            .collect()
    };
    let ephemeral = |pod: &Value| -> BTreeMap<String, Value> {
        pod["spec"]["ephemeralContainers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default().to_string(),
                    c["image"].clone(),
                )
            })
            .collect()
    };
    let old_ephemeral = ephemeral(old);
    ["containers", "initContainers"]
        .iter()
        .any(|list| images(new, list) != images(old, list))
        || ephemeral(new)
            .iter()
            .any(|(name, image)| old_ephemeral.get(name) != Some(image))
}

/// The audit level's annotation for a pod or pod template that violates it.
fn audit(attributes: &Attributes<'_>, policy: &Policy, meta: &Value, spec: &Value) {
    if policy.audit.level == Level::Privileged {
        return;
    }
    let violations = policy.audit.evaluate(meta, spec);
    if !violations.is_empty() {
        let text = format!(
            "would violate PodSecurity \"{}\": {}",
            policy.audit.text(),
            detail(&violations)
        );
        attributes.audit.add(AUDIT_VIOLATIONS_ANNOTATION, &text);
    }
}

/// The PodSecurity admission plugin.
pub struct PodSecurity {
    namespaces: Served,
    pods: Served,
    config: PodSecurityConfiguration,
}

/// The plugin's configuration (pod-security.admission.config.k8s.io
/// `PodSecurityConfiguration`, from `--admission-control-config-file`): the levels of
/// namespaces without labels, and who and what is exempt.
#[derive(Clone, Debug)]
pub struct PodSecurityConfiguration {
    defaults: Policy,
    exempt_usernames: Vec<String>,
    exempt_namespaces: Vec<String>,
    exempt_runtime_classes: Vec<String>,
}

impl Default for PodSecurityConfiguration {
    /// Upstream's default: everything privileged, nothing exempt.
    fn default() -> Self {
        PodSecurityConfiguration {
            defaults: Policy {
                enforce: LevelVersion::PRIVILEGED,
                audit: LevelVersion::PRIVILEGED,
                warn: LevelVersion::PRIVILEGED,
            },
            exempt_usernames: Vec::new(),
            exempt_namespaces: Vec::new(),
            exempt_runtime_classes: Vec::new(),
        }
    }
}

impl PodSecurityConfiguration {
    /// Reads a PodSecurityConfiguration (v1, v1beta1 or v1alpha1), refusing invalid levels
    /// and versions with upstream's messages.
    pub fn parse(config: &Value) -> Result<PodSecurityConfiguration, String> {
        let api_version = config["apiVersion"].as_str().unwrap_or_default();
        let known = ["v1", "v1beta1", "v1alpha1"]
            .map(|v| format!("pod-security.admission.config.k8s.io/{v}"));
        if !known.contains(&api_version.to_string()) || config["kind"] != "PodSecurityConfiguration"
        {
            return Err(format!(
                "expected a pod-security.admission.config.k8s.io/v1 PodSecurityConfiguration, got {api_version} {}",
                config["kind"].as_str().unwrap_or_default()
            ));
        }
        let labels: serde_json::Map<String, Value> = config["defaults"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(mode, value)| (format!("{LABEL_PREFIX}{mode}"), value.clone()))
            .collect();
        let (defaults, errors) = policy(&Value::Object(labels), &Self::default().defaults);
        if !errors.is_empty() {
            let errors = errors
                .to_string()
                .replace("metadata.labels[pod-security.kubernetes.io/", "defaults.");
            return Err(errors.replace("]:", ":"));
        }
        let list = |key: &str| -> Vec<String> {
            config["exemptions"][key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        Ok(PodSecurityConfiguration {
            defaults,
            exempt_usernames: list("usernames"),
            exempt_namespaces: list("namespaces"),
            exempt_runtime_classes: list("runtimeClasses"),
        })
    }
}

/// The audit annotation naming why a pod was exempt (`namespace`, `user`, `runtimeClass`).
const EXEMPT_ANNOTATION: &str = "pod-security.kubernetes.io/exempt";

impl PodSecurity {
    /// Reads namespaces' labels and (for new enforce levels) their pods from the caches.
    pub fn new(namespaces: Served, pods: Served, config: PodSecurityConfiguration) -> PodSecurity {
        PodSecurity {
            namespaces,
            pods,
            config,
        }
    }

    /// The policy of `namespace`: its labels over the configured defaults.
    fn namespace_policy(&self, namespace: &str) -> Policy {
        policy(&self.namespace_labels(namespace), &self.config.defaults).0
    }

    /// Why the request's pod (or template with `spec`) is exempt, if it is: its namespace,
    /// its user, or its runtime class, checked in upstream's order.
    fn exemption(&self, attributes: &Attributes<'_>, spec: &Value) -> Option<&'static str> {
        let config = &self.config;
        let listed =
            |list: &[String], item: &str| !item.is_empty() && list.iter().any(|e| e == item);
        if listed(&config.exempt_namespaces, attributes.namespace) {
            return Some("namespace");
        }
        if listed(&config.exempt_usernames, &attributes.user.name) {
            return Some("user");
        }
        let runtime_class = spec["runtimeClassName"].as_str().unwrap_or_default();
        listed(&config.exempt_runtime_classes, runtime_class).then_some("runtimeClass")
    }

    fn namespace_labels(&self, namespace: &str) -> Value {
        self.namespaces
            .cached("", namespace)
            .map(|ns| ns["metadata"]["labels"].clone())
            .unwrap_or(Value::Null)
    }

    /// A pod create or update (or its ephemeral containers).
    fn pod(
        &self,
        attributes: &Attributes<'_>,
        pod: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if IGNORED_POD_SUBRESOURCES.contains(&attributes.subresource) {
            return Ok(());
        }
        if let Some(why) = self.exemption(attributes, &pod["spec"]) {
            attributes.audit.add(EXEMPT_ANNOTATION, why);
            return Ok(());
        }
        let policy = self.namespace_policy(attributes.namespace);
        attributes
            .audit
            .add(ENFORCE_POLICY_ANNOTATION, &policy.enforce.text());
        let privileged = |lv: &LevelVersion| lv.level == Level::Privileged;
        if privileged(&policy.enforce) && privileged(&policy.warn) && privileged(&policy.audit) {
            return Ok(());
        }
        if attributes.operation == Operation::Update
            && old.is_some_and(|old| !significant_update(pod, old))
        {
            return Ok(());
        }
        let (meta, spec) = (&pod["metadata"], &pod["spec"]);
        audit(attributes, &policy, meta, spec);
        let enforced = policy.enforce.evaluate(meta, spec);
        if !enforced.is_empty() {
            let name = match attributes.name {
                "" => meta["name"].as_str().unwrap_or_default(),
                name => name,
            };
            let reason = format!(
                "violates PodSecurity \"{}\": {}",
                policy.enforce.text(),
                detail(&enforced)
            );
            return Err(ApiError::forbidden(
                &attributes.definition.group_resource(),
                name,
                reason,
            ));
        }
        self.warn(attributes, &policy, meta, spec);
        Ok(())
    }

    /// The warn level's Warning for a pod or pod template.
    fn warn(&self, attributes: &Attributes<'_>, policy: &Policy, meta: &Value, spec: &Value) {
        let warned = policy.warn.evaluate(meta, spec);
        if !warned.is_empty() {
            attributes.warnings.add(format!(
                "would violate PodSecurity \"{}\": {}",
                policy.warn.text(),
                detail(&warned)
            ));
        }
    }

    /// A namespace create or update: valid labels; on a stricter enforce level, warnings
    /// about the existing pods that violate it.
    fn namespace(
        &self,
        attributes: &Attributes<'_>,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let defaults = &self.config.defaults;
        let (policy_new, errors) = policy(&new["metadata"]["labels"], defaults);
        let old_policy = old.map(|old| policy(&old["metadata"]["labels"], defaults));
        let changed_errors = match &old_policy {
            Some((_, old_errors)) => {
                !errors.is_empty()
                    && (old_errors.is_empty() || old_errors.to_string() != errors.to_string())
            }
            None => !errors.is_empty(),
        };
        if changed_errors {
            let name = new["metadata"]["name"].as_str().unwrap_or_default();
            let kind = attributes.definition.group_version_kind().group_kind();
            return Err(ApiError::invalid(&kind, name, &errors));
        }
        let Some((old_policy, _)) = old_policy else {
            return Ok(());
        };
        let enforce = policy_new.enforce;
        let relaxed = enforce.version == old_policy.enforce.version
            && enforce.level <= old_policy.enforce.level;
        if enforce == old_policy.enforce || enforce.level == Level::Privileged || relaxed {
            return Ok(());
        }
        let namespace = new["metadata"]["name"].as_str().unwrap_or_default();
        for warning in self.existing_pods(namespace, enforce) {
            attributes.warnings.add(warning);
        }
        Ok(())
    }

    /// Upstream's warnings about the pods of `namespace` that violate `enforce`: the count
    /// line, then one line per distinct set of reasons, naming the first pod and how many
    /// others share them.
    fn existing_pods(&self, namespace: &str, enforce: LevelVersion) -> Vec<String> {
        let mut pods = self.pods.cached_list(Some(namespace));
        pods.sort_by(|a, b| {
            a["metadata"]["name"]
                .as_str()
                .cmp(&b["metadata"]["name"].as_str())
        });
        let total = pods.len();
        pods.truncate(MAX_PODS_CHECKED);
        let mut by_reasons: BTreeMap<String, (String, usize)> = BTreeMap::new();
        for pod in &pods {
            let violations = enforce.evaluate(&pod["metadata"], &pod["spec"]);
            if violations.is_empty() {
                continue;
            }
            let reasons: Vec<&str> = violations.iter().map(|v| v.reason.as_str()).collect();
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let entry = by_reasons
                .entry(reasons.join(", "))
                .or_insert((name.clone(), 0));
            entry.1 += 1;
        }
        let mut warnings = Vec::new();
        if pods.len() < total {
            warnings.push(format!(
                "new PodSecurity enforce level only checked against the first {} of {total} existing pods",
                pods.len()
            ));
        }
        if by_reasons.is_empty() {
            return warnings;
        }
        warnings.push(format!(
            "existing pods in namespace \"{namespace}\" violate the new PodSecurity enforce level \"{}\"",
            enforce.text()
        ));
        let mut lines: Vec<String> = by_reasons
            .into_iter()
            .map(|(reasons, (pod, count))| match count {
                1 => format!("{pod}: {reasons}"),
                2 => format!("{pod} (and 1 other pod): {reasons}"),
                n => format!("{pod} (and {} other pods): {reasons}", n - 1),
            })
            .collect();
        lines.sort();
        warnings.extend(lines);
        warnings
    }
}

#[async_trait]
impl AdmissionPlugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(object) = object else {
            return Ok(());
        };
        if !matches!(attributes.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        let definition = attributes.definition;
        let group = definition.group_version.group.as_str();
        match (group, &*definition.plural) {
            ("", "namespaces") if attributes.subresource.is_empty() => {
                self.namespace(attributes, object, old)
            }
            ("", "pods") => self.pod(attributes, object, old),
            _ if attributes.subresource.is_empty() => {
                if let Some(template) = pod_template(group, &definition.plural, object) {
                    if let Some(why) = self.exemption(attributes, &template["spec"]) {
                        attributes.audit.add(EXEMPT_ANNOTATION, why);
                        return Ok(());
                    }
                    let policy = self.namespace_policy(attributes.namespace);
                    audit(
                        attributes,
                        &policy,
                        &template["metadata"],
                        &template["spec"],
                    );
                    self.warn(
                        attributes,
                        &policy,
                        &template["metadata"],
                        &template["spec"],
                    );
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn privileged() -> Policy {
        PodSecurityConfiguration::default().defaults
    }

    #[test]
    fn the_configuration_sets_defaults_and_exemptions() {
        let config = PodSecurityConfiguration::parse(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "baseline", "warn": "restricted", "warn-version": "v1.30"},
            "exemptions": {"namespaces": ["kube-system"]}}))
        .unwrap();
        let (unlabelled, _) = policy(&Value::Null, &config.defaults);
        assert_eq!(unlabelled.enforce.text(), "baseline:latest");
        assert_eq!(unlabelled.warn.text(), "restricted:v1.30");
        let (labelled, _) = policy(
            &json!({"pod-security.kubernetes.io/enforce": "privileged"}),
            &config.defaults,
        );
        assert_eq!(labelled.enforce.level, Level::Privileged);
        assert_eq!(config.exempt_namespaces, ["kube-system"]);
        let err = PodSecurityConfiguration::parse(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration", "defaults": {"enforce": "strict"}}))
        .unwrap_err();
        assert!(
            err.contains("defaults.enforce: Invalid value: \"strict\""),
            "{err}"
        );
    }

    fn restricted() -> LevelVersion {
        LevelVersion {
            level: Level::Restricted,
            version: None,
        }
    }

    #[test]
    fn a_plain_pod_violates_restricted_as_upstream_words_it() {
        let spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        assert_eq!(
            detail(&restricted().evaluate(&json!({}), &spec)),
            "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        let hardened = json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "busybox", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]});
        assert!(restricted().evaluate(&json!({}), &hardened).is_empty());
    }

    #[test]
    fn baseline_forbids_host_access_and_privilege() {
        let baseline = LevelVersion {
            level: Level::Baseline,
            version: Some(30),
        };
        let spec = json!({"hostNetwork": true, "hostPID": true,
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
            "containers": [{"name": "a", "securityContext": {"privileged": true,
                "capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}, "ports": [{"containerPort": 80, "hostPort": 8080}]}]});
        assert_eq!(
            detail(&baseline.evaluate(&json!({}), &spec)),
            "non-default capabilities (container \"a\" must not include \"NET_ADMIN\" in securityContext.capabilities.add), host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume \"root\"), hostPort (container \"a\" uses hostPort 8080), privileged (container \"a\" must not set securityContext.privileged=true), forbidden sysctls (kernel.msgmax)"
        );
        assert_eq!(baseline.text(), "baseline:v1.30");
        let probes = json!({"containers": [{"name": "b", "livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}},
            {"name": "a", "lifecycle": {"preStop": {"tcpSocket": {"host": "example.com", "port": 1}}}}]});
        let latest = LevelVersion {
            level: Level::Baseline,
            version: None,
        };
        assert_eq!(
            detail(&latest.evaluate(&json!({}), &probes)),
            "probe or lifecycle host (containers \"a\", \"b\" use probe or lifecycle hosts \"10.0.0.1\", \"example.com\")"
        );
        assert!(baseline.evaluate(&json!({}), &probes).is_empty());
    }

    #[test]
    fn labels_choose_the_policy() {
        let (policy_of, errors) = policy(
            &json!({"pod-security.kubernetes.io/enforce": "baseline"}),
            &privileged(),
        );
        assert!(errors.is_empty());
        assert_eq!(policy_of.enforce.text(), "baseline:latest");
        assert_eq!(policy_of.warn.text(), "baseline:latest");
        let (policy_of, errors) = policy(
            &json!({"pod-security.kubernetes.io/enforce": "strict",
            "pod-security.kubernetes.io/warn-version": "1.2"}),
            &privileged(),
        );
        assert_eq!(policy_of.enforce.level, Level::Restricted);
        let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"1.2\": must be \"latest\" or \"v1.x\"",
            ]
        );
        assert_eq!(parse_version("v1.31"), Ok(Some(31)));
        assert!(parse_version("v1.031").is_err());
    }

    #[test]
    fn only_image_changes_and_new_ephemeral_containers_are_reevaluated() {
        let pod = json!({"spec": {"containers": [{"name": "c", "image": "a"}]}});
        let mut labelled = pod.clone();
        labelled["metadata"] = json!({"labels": {"x": "y"}});
        assert!(!significant_update(&labelled, &pod));
        let mut image = pod.clone();
        image["spec"]["containers"][0]["image"] = json!("b");
        assert!(significant_update(&image, &pod));
        let mut debug = pod.clone();
        debug["spec"]["ephemeralContainers"] = json!([{"name": "d", "image": "busybox"}]);
        assert!(significant_update(&debug, &pod));
    }
}
