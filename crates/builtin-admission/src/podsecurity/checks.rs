//! The checks of the Pod Security Standards (k8s.io/pod-security-admission/policy), each a
//! function of a pod's metadata and spec that names what it forbids and why, with the
//! wording kube-apiserver uses. A check applies from the version that introduced it; the
//! later refinements of a check (Windows pods, user-namespaced pods, the sysctls and SELinux
//! types allowed later) apply at every version, and the pre-1.19 seccomp annotations are not
//! checked.

use std::collections::BTreeSet;

use serde_json::Value;

/// The levels a check belongs to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

/// A forbidden reason and its detail.
pub struct Violation {
    pub reason: String,
    pub detail: String,
}

/// One check: its ID (which orders it), level, the minor version of 1.x it applies from, the
/// baseline checks it replaces at the restricted level, and the check itself.
pub struct Check {
    pub id: &'static str,
    pub level: Level,
    pub since: u32,
    pub overrides: &'static [&'static str],
    pub check: fn(&Value, &Value) -> Option<Violation>,
}

/// Every check, baseline then restricted, each group in upstream's ID order.
pub const CHECKS: &[Check] = &[
    check("appArmorProfile", Level::Baseline, 0, &[], app_armor),
    check(
        "capabilities_baseline",
        Level::Baseline,
        0,
        &[],
        capabilities_baseline,
    ),
    check("hostNamespaces", Level::Baseline, 0, &[], host_namespaces),
    check(
        "hostPathVolumes",
        Level::Baseline,
        0,
        &[],
        host_path_volumes,
    ),
    check("hostPorts", Level::Baseline, 0, &[], host_ports),
    check(
        "hostProbesAndHostLifecycle",
        Level::Baseline,
        34,
        &[],
        host_probes,
    ),
    check("privileged", Level::Baseline, 0, &[], privileged),
    check("procMount", Level::Baseline, 0, &[], proc_mount),
    check("seLinuxOptions", Level::Baseline, 0, &[], se_linux_options),
    check(
        "seccompProfile_baseline",
        Level::Baseline,
        0,
        &[],
        seccomp_baseline,
    ),
    check("sysctls", Level::Baseline, 0, &[], sysctls),
    check("windowsHostProcess", Level::Baseline, 0, &[], host_process),
    check(
        "allowPrivilegeEscalation",
        Level::Restricted,
        8,
        &[],
        allow_privilege_escalation,
    ),
    check(
        "capabilities_restricted",
        Level::Restricted,
        22,
        &["capabilities_baseline"],
        capabilities_restricted,
    ),
    check(
        "restrictedVolumes",
        Level::Restricted,
        0,
        &["hostPathVolumes"],
        restricted_volumes,
    ),
    check("runAsNonRoot", Level::Restricted, 0, &[], run_as_non_root),
    check("runAsUser", Level::Restricted, 23, &[], run_as_user),
    check(
        "seccompProfile_restricted",
        Level::Restricted,
        19,
        &["seccompProfile_baseline"],
        seccomp_restricted,
    ),
];

const fn check(
    id: &'static str,
    level: Level,
    since: u32,
    overrides: &'static [&'static str],
    check: fn(&Value, &Value) -> Option<Violation>,
) -> Check {
    Check {
        id,
        level,
        since,
        overrides,
        check,
    }
}

fn violation(reason: &str, detail: String) -> Option<Violation> {
    Some(Violation {
        reason: reason.to_string(),
        detail,
    })
}

/// `"a", "b"`.
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|i| format!("\"{}\"", i.as_ref()))
        .collect();
    quoted.join(", ")
}

fn plural<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` or `containers "a", "b"`.
fn containers_named(names: &[String]) -> String {
    format!(
        "{} {}",
        plural("container", "containers", names.len()),
        join_quote(names)
    )
}

/// Init containers, containers and ephemeral containers, in that order.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| spec[list].as_array().into_iter().flatten())
}

fn name(container: &Value) -> String {
    container["name"].as_str().unwrap_or_default().to_string()
}

/// The names of the containers for which `bad` holds.
fn bad_containers(spec: &Value, mut bad: impl FnMut(&Value) -> bool) -> Vec<String> {
    containers(spec).filter(|c| bad(c)).map(name).collect()
}

fn is_windows(spec: &Value) -> bool {
    spec["os"]["name"] == "windows"
}

/// A pod in its own user namespace (`hostUsers: false`) is allowed some root-looking settings.
fn user_namespaced(spec: &Value) -> bool {
    spec["hostUsers"] == Value::Bool(false)
}

/// `pod and containers "a"`-style list of setters, from the pod's flag and container names.
fn setters(pod: bool, containers: &[String]) -> Vec<String> {
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_string());
    }
    if !containers.is_empty() {
        setters.push(containers_named(containers));
    }
    setters
}

fn app_armor(meta: &Value, spec: &Value) -> Option<Violation> {
    let allowed = |t: &Value| matches!(t.as_str(), Some("RuntimeDefault" | "Localhost"));
    let mut bad_values = BTreeSet::new();
    let profile = &spec["securityContext"]["appArmorProfile"];
    let pod = profile.is_object() && !allowed(&profile["type"]);
    if pod {
        bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
    }
    let containers = bad_containers(spec, |c| {
        let profile = &c["securityContext"]["appArmorProfile"];
        let bad = profile.is_object() && !allowed(&profile["type"]);
        if bad {
            bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
        }
        bad
    });
    let prefix = "container.apparmor.security.beta.kubernetes.io/";
    let annotations: BTreeSet<String> = meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| {
            let v = v.as_str().unwrap_or_default();
            k.starts_with(prefix)
                && !(v.is_empty() || v == "runtime/default" || v.starts_with("localhost/"))
        })
        .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or_default()))
        .collect();
    let mut setters = setters(pod, &containers);
    let mut values: Vec<String> = bad_values.into_iter().collect();
    if !annotations.is_empty() {
        setters.push(plural("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    if setters.is_empty() {
        return None;
    }
    let reason = plural(
        "forbidden AppArmor profile",
        "forbidden AppArmor profiles",
        values.len(),
    );
    violation(
        reason,
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    )
}

/// Capabilities a baseline container may add.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_capabilities(container: &Value) -> impl Iterator<Item = &str> {
    container["securityContext"]["capabilities"]["add"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn capabilities_baseline(_: &Value, spec: &Value) -> Option<Violation> {
    let mut forbidden = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        let extra: Vec<&str> = added_capabilities(c)
            .filter(|cap| !BASELINE_CAPABILITIES.contains(cap))
            .collect();
        forbidden.extend(extra.iter().map(|c| c.to_string()));
        !extra.is_empty()
    });
    if bad.is_empty() {
        return None;
    }
    let forbidden: Vec<String> = forbidden.into_iter().collect();
    violation(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&bad),
            join_quote(&forbidden)
        ),
    )
}

fn capabilities_restricted(_: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    let missing_drop = bad_containers(spec, |c| {
        let drops = c["securityContext"]["capabilities"]["drop"].as_array();
        !drops.is_some_and(|d| d.iter().any(|cap| cap == "ALL"))
    });
    let mut forbidden = BTreeSet::new();
    let adding = bad_containers(spec, |c| {
        let extra: Vec<&str> = added_capabilities(c)
            .filter(|c| *c != "NET_BIND_SERVICE")
            .collect();
        forbidden.extend(extra.iter().map(|c| c.to_string()));
        !extra.is_empty()
    });
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_named(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        let forbidden: Vec<String> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&adding),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    violation("unrestricted capabilities", details.join("; "))
}

fn host_namespaces(_: &Value, spec: &Value) -> Option<Violation> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|field| spec[*field] == Value::Bool(true))
        .map(|field| format!("{field}=true"))
        .collect();
    if set.is_empty() {
        return None;
    }
    violation("host namespaces", set.join(", "))
}

/// The volumes for which `bad` holds.
fn bad_volumes(spec: &Value, mut bad: impl FnMut(&Value) -> bool) -> Vec<String> {
    spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| bad(v))
        .map(name)
        .collect()
}

fn host_path_volumes(_: &Value, spec: &Value) -> Option<Violation> {
    let bad = bad_volumes(spec, |v| v.get("hostPath").is_some());
    if bad.is_empty() {
        return None;
    }
    violation(
        "hostPath volumes",
        format!(
            "{} {}",
            plural("volume", "volumes", bad.len()),
            join_quote(&bad)
        ),
    )
}

fn host_ports(_: &Value, spec: &Value) -> Option<Violation> {
    let mut ports = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        let used: Vec<String> = c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["hostPort"].as_i64())
            .filter(|port| *port != 0)
            .map(|port| port.to_string())
            .collect();
        ports.extend(used.iter().cloned());
        !used.is_empty()
    });
    if bad.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    violation(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_named(&bad),
            plural("uses", "use", bad.len()),
            plural("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

fn host_probes(_: &Value, spec: &Value) -> Option<Violation> {
    let mut bad = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for container in containers(spec) {
        let handlers = ["livenessProbe", "readinessProbe", "startupProbe"]
            .map(|probe| &container[probe])
            .into_iter()
            .chain(["postStart", "preStop"].map(|hook| &container["lifecycle"][hook]));
        for handler in handlers {
            for kind in ["httpGet", "tcpSocket"] {
                if let Some(host) = handler[kind]["host"].as_str().filter(|h| !h.is_empty()) {
                    bad.insert(name(container));
                    hosts.insert(host.to_string());
                }
            }
        }
    }
    if bad.is_empty() {
        return None;
    }
    let (bad, hosts): (Vec<String>, Vec<String>) =
        (bad.into_iter().collect(), hosts.into_iter().collect());
    violation(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers_named(&bad),
            plural("uses", "use", bad.len()),
            plural(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
    )
}

fn privileged(_: &Value, spec: &Value) -> Option<Violation> {
    let bad = bad_containers(spec, |c| {
        c["securityContext"]["privileged"] == Value::Bool(true)
    });
    if bad.is_empty() {
        return None;
    }
    violation(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_named(&bad)
        ),
    )
}

fn proc_mount(_: &Value, spec: &Value) -> Option<Violation> {
    if user_namespaced(spec) {
        return None;
    }
    let mut kinds = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        let mount = c["securityContext"]["procMount"].as_str();
        let bad = mount.is_some_and(|m| m != "Default");
        if bad {
            kinds.insert(mount.unwrap_or_default().to_string());
        }
        bad
    });
    if bad.is_empty() {
        return None;
    }
    let kinds: Vec<String> = kinds.into_iter().collect();
    violation(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_named(&bad),
            join_quote(&kinds)
        ),
    )
}

fn se_linux_options(_: &Value, spec: &Value) -> Option<Violation> {
    const TYPES: [&str; 5] = [
        "",
        "container_t",
        "container_init_t",
        "container_kvm_t",
        "container_engine_t",
    ];
    let mut bad_types = BTreeSet::new();
    let (mut user, mut role) = (false, false);
    let mut invalid = |options: &Value| {
        if !options.is_object() {
            return false;
        }
        let text = |field: &str| options[field].as_str().unwrap_or_default().to_string();
        let mut bad = false;
        if !TYPES.contains(&text("type").as_str()) {
            bad_types.insert(text("type"));
            bad = true;
        }
        if !text("user").is_empty() {
            user = true;
            bad = true;
        }
        if !text("role").is_empty() {
            role = true;
            bad = true;
        }
        bad
    };
    let pod = invalid(&spec["securityContext"]["seLinuxOptions"]);
    let containers: Vec<String> = containers(spec)
        .filter(|c| invalid(&c["securityContext"]["seLinuxOptions"]))
        .map(name)
        .collect();
    let setters = setters(pod, &containers);
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        let types: Vec<String> = bad_types.into_iter().collect();
        data.push(format!(
            "{} {}",
            plural("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if user {
        data.push("user may not be set".to_string());
    }
    if role {
        data.push("role may not be set".to_string());
    }
    violation(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    )
}

fn seccomp_type(context: &Value) -> Option<&str> {
    let profile = &context["seccompProfile"];
    profile
        .is_object()
        .then(|| profile["type"].as_str().unwrap_or_default())
}

fn seccomp_baseline(_: &Value, spec: &Value) -> Option<Violation> {
    let mut bad_values = BTreeSet::new();
    let mut invalid = |t: Option<&str>| match t {
        Some(t) if t == "Unconfined" => {
            bad_values.insert(t.to_string());
            true
        }
        _ => false,
    };
    let pod = invalid(seccomp_type(&spec["securityContext"]));
    let containers: Vec<String> = containers(spec)
        .filter(|c| invalid(seccomp_type(&c["securityContext"])))
        .map(name)
        .collect();
    let setters = setters(pod, &containers);
    if setters.is_empty() {
        return None;
    }
    let values: Vec<String> = bad_values.into_iter().collect();
    violation(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    )
}

fn seccomp_restricted(_: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    let valid = |t: &str| matches!(t, "RuntimeDefault" | "Localhost");
    let mut bad_values = BTreeSet::new();
    let pod_type = seccomp_type(&spec["securityContext"]);
    let pod_bad = pod_type.is_some_and(|t| !valid(t));
    if pod_bad {
        bad_values.insert(pod_type.unwrap_or_default().to_string());
    }
    let pod_set = pod_type.is_some_and(valid);
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for container in containers(spec) {
        match seccomp_type(&container["securityContext"]) {
            Some(t) if !valid(t) => {
                bad_values.insert(t.to_string());
                explicit.push(name(container));
            }
            Some(_) => {}
            None if !pod_set => implicit.push(name(container)),
            None => {}
        }
    }
    let setters = setters(pod_bad, &explicit);
    if !setters.is_empty() {
        let values: Vec<String> = bad_values.into_iter().collect();
        return violation(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&values)
            ),
        );
    }
    if implicit.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers_named(&implicit)
        ),
    )
}

/// The sysctls a baseline pod may set (as of 1.32).
const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

fn sysctls(_: &Value, spec: &Value) -> Option<Violation> {
    let forbidden: Vec<&str> = spec["securityContext"]["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .filter(|name| !SAFE_SYSCTLS.contains(name))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    violation("forbidden sysctls", forbidden.join(", "))
}

fn host_process(_: &Value, spec: &Value) -> Option<Violation> {
    let set = |context: &Value| context["windowsOptions"]["hostProcess"] == Value::Bool(true);
    let pod = set(&spec["securityContext"]);
    let containers = bad_containers(spec, |c| set(&c["securityContext"]));
    let setters = setters(pod, &containers);
    if setters.is_empty() {
        return None;
    }
    violation(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    )
}

fn allow_privilege_escalation(_: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    let bad = bad_containers(spec, |c| {
        c["securityContext"]["allowPrivilegeEscalation"] != Value::Bool(false)
    });
    if bad.is_empty() {
        return None;
    }
    violation(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_named(&bad)
        ),
    )
}

/// The volume sources a restricted pod may use.
const RESTRICTED_VOLUME_SOURCES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

fn restricted_volumes(_: &Value, spec: &Value) -> Option<Violation> {
    let mut types = BTreeSet::new();
    let bad = bad_volumes(spec, |volume| {
        let sources: Vec<&String> = volume
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .filter(|k| *k != "name")
            .collect();
        let allowed = sources
            .iter()
            .any(|k| RESTRICTED_VOLUME_SOURCES.contains(&k.as_str()));
        if !allowed {
            types.extend(sources.iter().map(|k| k.to_string()));
        }
        !allowed
    });
    if bad.is_empty() {
        return None;
    }
    let types: Vec<String> = types.into_iter().collect();
    violation(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            plural("volume", "volumes", bad.len()),
            join_quote(&bad),
            plural("uses", "use", bad.len()),
            plural(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
    )
}

fn run_as_non_root(_: &Value, spec: &Value) -> Option<Violation> {
    if user_namespaced(spec) {
        return None;
    }
    let pod_value = &spec["securityContext"]["runAsNonRoot"];
    let pod_false = *pod_value == Value::Bool(false);
    let pod_true = *pod_value == Value::Bool(true);
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for container in containers(spec) {
        match container["securityContext"]["runAsNonRoot"].as_bool() {
            Some(false) => explicit.push(name(container)),
            Some(true) => {}
            None if !pod_true => implicit.push(name(container)),
            None => {}
        }
    }
    let setters = setters(pod_false, &explicit);
    if !setters.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        );
    }
    if implicit.is_empty() {
        return None;
    }
    violation(
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_named(&implicit)
        ),
    )
}

fn run_as_user(_: &Value, spec: &Value) -> Option<Violation> {
    if user_namespaced(spec) {
        return None;
    }
    let root = |context: &Value| context["runAsUser"] == 0;
    let pod = root(&spec["securityContext"]);
    let containers = bad_containers(spec, |c| root(&c["securityContext"]));
    let setters = setters(pod, &containers);
    if setters.is_empty() {
        return None;
    }
    violation(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    )
}
