//! Defaulting of pod specs as upstream's core/v1 defaulters apply it to every PodSpec
//! (pkg/apis/core/v1/defaults.go and the generated defaulters): the spec's own fields, every
//! container, probe, lifecycle handler, port, env source and volume. Pods get a little more
//! (requests from limits, `enableServiceLinks`, host ports with host networking) that pod
//! templates do not.

use serde_json::{Map, Value, json};

use crate::util::fields_mut;

/// The default grace period of a pod's termination, in seconds.
const DEFAULT_TERMINATION_GRACE_PERIOD: i64 = 30;

/// The default file mode (0644) of secret, configMap, downwardAPI and projected volumes.
const DEFAULT_VOLUME_MODE: i64 = 0o644;

/// Sets `key` to `value` when it is absent or `null` (an unset pointer or empty string in Go).
pub(crate) fn set_default(fields: &mut Map<String, Value>, key: &str, value: Value) {
    let unset = match fields.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        _ => false,
    };
    if unset {
        fields.insert(key.to_string(), value);
    }
}

/// Applies `f` to each object in the list under `key`.
pub(crate) fn each_item(fields: &mut Map<String, Value>, key: &str, mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = fields.get_mut(key) {
        for item in items.iter_mut().filter(|item| item.is_object()) {
            f(item);
        }
    }
}

/// Applies `f` to the object under `key`, when there is one.
fn with_object(
    fields: &mut Map<String, Value>,
    key: &str,
    f: impl FnOnce(&mut Map<String, Value>),
) {
    if let Some(Value::Object(child)) = fields.get_mut(key) {
        f(child);
    }
}

/// The defaults of a PodSpec (SetDefaults_PodSpec and the defaulters of its parts).
pub(crate) fn default_pod_spec(spec: &mut Value) {
    let spec = fields_mut(spec);
    sync_service_account(spec);
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "securityContext", json!({}));
    set_default(
        spec,
        "terminationGracePeriodSeconds",
        json!(DEFAULT_TERMINATION_GRACE_PERIOD),
    );
    set_default(spec, "schedulerName", json!("default-scheduler"));
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        each_item(spec, key, default_container);
    }
    each_item(spec, "volumes", default_volume);
}

/// The defaults of a pod template (`metadata` and `spec`), as every controller's template
/// gets them.
pub(crate) fn default_pod_template(template: &mut Value) {
    let fields = fields_mut(template);
    let spec = fields.entry("spec").or_insert_with(|| json!({}));
    default_pod_spec(spec);
}

/// The defaults only a Pod gets (SetDefaults_Pod), then the PodSpec's.
pub(crate) fn default_pod(pod: &mut Value) {
    let fields = fields_mut(pod);
    let spec = fields_mut(fields.entry("spec").or_insert_with(|| json!({})));
    for key in ["containers", "initContainers"] {
        each_item(spec, key, requests_from_limits);
    }
    set_default(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for key in ["containers", "initContainers"] {
            each_item(spec, key, host_ports_from_container_ports);
        }
    }
    default_pod_spec(fields.get_mut("spec").expect("just inserted"));
}

/// The internal PodSpec keeps one service account name; the v1 form writes it to both the
/// deprecated `serviceAccount` and `serviceAccountName`.
fn sync_service_account(spec: &mut Map<String, Value>) {
    let name = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .or_else(|| spec.get("serviceAccount").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        spec.remove("serviceAccount");
        spec.remove("serviceAccountName");
    } else {
        spec.insert("serviceAccountName".into(), json!(name));
        spec.insert("serviceAccount".into(), json!(name));
    }
}

/// A container's requests default to its limits (per resource).
fn requests_from_limits(container: &mut Value) {
    let Some(resources) = container
        .get_mut("resources")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    let requests = fields_mut(resources.entry("requests").or_insert_with(|| json!({})));
    for (name, quantity) in limits {
        requests.entry(name).or_insert(quantity);
    }
}

/// With host networking, a port's hostPort defaults to its containerPort.
fn host_ports_from_container_ports(container: &mut Value) {
    each_item(fields_mut(container), "ports", |port| {
        let port = fields_mut(port);
        let host = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host == 0
            && let Some(container_port) = port.get("containerPort").cloned()
        {
            port.insert("hostPort".into(), container_port);
        }
    });
}

/// SetDefaults_Container plus the defaults of its ports, probes, lifecycle and env; the
/// `resources` struct is always written, as the v1 form serializes it.
pub(crate) fn default_container(container: &mut Value) {
    let fields = fields_mut(container);
    if fields
        .get("imagePullPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let image = fields.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = pull_policy_for(image);
        fields.insert("imagePullPolicy".into(), json!(policy));
    }
    set_default(
        fields,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    set_default(fields, "terminationMessagePolicy", json!("File"));
    set_default(fields, "resources", json!({}));
    each_item(fields, "ports", |port| {
        set_default(fields_mut(port), "protocol", json!("TCP"));
    });
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        with_object(fields, probe, default_probe);
    }
    with_object(fields, "lifecycle", |lifecycle| {
        for hook in ["postStart", "preStop"] {
            with_object(lifecycle, hook, default_handler);
        }
    });
    each_item(fields, "env", |env| {
        with_object(fields_mut(env), "valueFrom", |from| {
            with_object(from, "fieldRef", default_field_ref);
        });
    });
}

/// `Always` for images tagged (or defaulting to) `latest`, `IfNotPresent` otherwise.
pub(crate) fn pull_policy_for(image: &str) -> &'static str {
    if image_tag(image).as_deref() == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// The tag of an image reference as upstream's ParseImageName finds it: `latest` when there
/// is neither a tag nor a digest; `None` when the reference does not parse.
fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.trim() != image {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if !valid_repository(repository) {
        return None;
    }
    match (tag, digest) {
        (Some(tag), _) if valid_tag(tag) => Some(tag.to_string()),
        (Some(_), _) => None,
        (None, Some(_)) => Some(String::new()),
        (None, None) => Some("latest".to_string()),
    }
}

/// A repository path: an optional registry host, then lower-case path components.
fn valid_repository(repository: &str) -> bool {
    let mut components: Vec<&str> = repository.split('/').collect();
    if components.len() > 1 {
        let first = components[0];
        if first.contains(['.', ':']) || first == "localhost" {
            components.remove(0);
        }
    }
    !components.is_empty()
        && components.iter().all(|c| {
            !c.is_empty()
                && c.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
                })
                && c.as_bytes()[0].is_ascii_alphanumeric()
                && c.as_bytes()[c.len() - 1].is_ascii_alphanumeric()
        })
}

/// A tag: 1 to 128 word characters, dots and dashes, not starting with a dot or dash.
fn valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= 128
        && !tag.starts_with(['.', '-'])
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// SetDefaults_Probe and its handler's defaults.
fn default_probe(probe: &mut Map<String, Value>) {
    for (key, value) in [
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ] {
        if probe.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
            probe.insert(key.into(), json!(value));
        }
    }
    default_handler(probe);
    with_object(probe, "grpc", |grpc| {
        set_default(grpc, "service", json!(""));
    });
}

/// The defaults of an httpGet action (path `/`, scheme `HTTP`).
fn default_handler(handler: &mut Map<String, Value>) {
    with_object(handler, "httpGet", |get| {
        set_default(get, "path", json!("/"));
        set_default(get, "scheme", json!("HTTP"));
    });
}

/// An ObjectFieldSelector's apiVersion defaults to `v1`.
fn default_field_ref(selector: &mut Map<String, Value>) {
    set_default(selector, "apiVersion", json!("v1"));
}

/// The volume source fields upstream knows, in the order its validation checks them; a
/// volume without any of them is an emptyDir.
const VOLUME_SOURCES: [&str; 30] = [
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

/// The names of the volume source fields, in the order validation checks them.
pub(crate) fn volume_sources() -> &'static [&'static str] {
    &VOLUME_SOURCES
}

/// SetDefaults_Volume and the defaults of each volume source.
fn default_volume(volume: &mut Value) {
    let fields = fields_mut(volume);
    let has_source = VOLUME_SOURCES
        .iter()
        .any(|key| fields.get(*key).is_some_and(|v| !v.is_null()));
    if !has_source {
        fields.insert("emptyDir".into(), json!({}));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        with_object(fields, key, |source| {
            set_default(source, "defaultMode", json!(DEFAULT_VOLUME_MODE));
        });
    }
    with_object(fields, "downwardAPI", default_downward_items);
    with_object(fields, "projected", |projected| {
        each_item(projected, "sources", |source| {
            let source = fields_mut(source);
            with_object(source, "downwardAPI", default_downward_items);
            with_object(source, "serviceAccountToken", |token| {
                set_default(token, "expirationSeconds", json!(3600));
            });
        });
    });
    with_object(fields, "hostPath", |host_path| {
        set_default(host_path, "type", json!(""));
    });
    default_legacy_sources(fields);
    with_object(fields, "ephemeral", |ephemeral| {
        with_object(ephemeral, "volumeClaimTemplate", |template| {
            with_object(template, "spec", |spec| {
                set_default(spec, "volumeMode", json!("Filesystem"));
            });
        });
    });
    with_object(fields, "image", |image| {
        if image
            .get("pullPolicy")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            let reference = image.get("reference").and_then(Value::as_str).unwrap_or("");
            let policy = pull_policy_for(reference);
            image.insert("pullPolicy".into(), json!(policy));
        }
    });
}

/// The declared defaults of the in-tree volume plugins' sources.
fn default_legacy_sources(fields: &mut Map<String, Value>) {
    with_object(fields, "iscsi", |iscsi| {
        set_default(iscsi, "iscsiInterface", json!("default"));
    });
    with_object(fields, "rbd", |rbd| {
        set_default(rbd, "pool", json!("rbd"));
        set_default(rbd, "user", json!("admin"));
        set_default(rbd, "keyring", json!("/etc/ceph/keyring"));
    });
    with_object(fields, "azureDisk", |disk| {
        set_default(disk, "cachingMode", json!("ReadWrite"));
        set_default(disk, "fsType", json!("ext4"));
        set_default(disk, "readOnly", json!(false));
        set_default(disk, "kind", json!("Shared"));
    });
    with_object(fields, "scaleIO", |scale| {
        set_default(scale, "storageMode", json!("ThinProvisioned"));
        set_default(scale, "fsType", json!("xfs"));
    });
}

/// The fieldRefs of downwardAPI items default their apiVersion.
fn default_downward_items(source: &mut Map<String, Value>) {
    each_item(source, "items", |item| {
        with_object(fields_mut(item), "fieldRef", default_field_ref);
    });
}

/// The defaults of a PersistentVolumeClaim template (a StatefulSet's volumeClaimTemplates):
/// volumeMode Filesystem and a Pending phase; and, as upstream's conversion writes every
/// template, `apiVersion: v1` and `kind: PersistentVolumeClaim` first.
pub(crate) fn default_claim_template(claim: &mut Value) {
    let rest = std::mem::take(fields_mut(claim));
    let fields = fields_mut(claim);
    fields.insert("apiVersion".into(), json!("v1"));
    fields.insert("kind".into(), json!("PersistentVolumeClaim"));
    fields.extend(
        rest.into_iter()
            .filter(|(k, _)| k != "apiVersion" && k != "kind"),
    );
    let spec = fields_mut(fields.entry("spec").or_insert_with(|| json!({})));
    set_default(spec, "volumeMode", json!("Filesystem"));
    let status = fields_mut(fields.entry("status").or_insert_with(|| json!({})));
    set_default(status, "phase", json!("Pending"));
}
