//! ServiceAccount (kubernetes/plugin/pkg/admission/serviceaccount): a new pod runs as a
//! service account (`default` unless it names one), which must exist; unless the pod or the
//! account opts out, every container mounts the `kube-api-access-*` projected volume (a bound
//! token, the cluster CA of `kube-root-ca.crt` and the namespace) at
//! `/var/run/secrets/kubernetes.io/serviceaccount`; a pod without image pull secrets gets the
//! account's; and an account annotated `kubernetes.io/enforce-mountable-secrets: "true"`
//! limits the secrets its pods (and their ephemeral containers) may reference.

use std::time::Duration;

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::cacher::CacheNotification;
use kapi_server::endpoints::Served;
use kapi_server::registry::Item;
use serde_json::{Value, json};

/// The service account of pods that name none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// Where the token volume is mounted.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the token volume's generated name.
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The annotation of accounts that limit the secrets of their pods.
const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";
/// The annotation of mirror pods (made by a kubelet from a static pod).
const MIRROR_POD: &str = "kubernetes.io/config.mirror";
/// The lifetime of the projected token (upstream's WarnOnlyBoundTokenExpirationSeconds).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// How long a pod waits for its namespace's `default` account, which the service account
/// controller creates right after the namespace (upstream retries for up to about 2 s).
const DEFAULT_ACCOUNT_WAIT: Duration = Duration::from_secs(2);

/// The ServiceAccount admission plugin.
pub struct ServiceAccount {
    accounts: Served,
}

impl ServiceAccount {
    /// Reads accounts from the served `serviceaccounts` collection.
    pub fn new(accounts: Served) -> ServiceAccount {
        ServiceAccount { accounts }
    }

    /// The account `name` of `namespace`: from the cache, else from storage, else (for the
    /// `default` account) once it is created, within [`DEFAULT_ACCOUNT_WAIT`].
    async fn account(&self, namespace: &str, name: &str) -> Result<Value, String> {
        let registry = &self.accounts.registry;
        let key = registry.key(namespace, name);
        let decode = |item: Item| item.decode().map_err(|err| err.to_string());
        if let (Some(cached), _) = registry.cacher().get(&key) {
            return decode(Item::from(&*cached));
        }
        let prefix = registry.collection_prefix(Some(namespace));
        let subscription = registry.cacher().subscribe(None, &prefix);
        let live = registry.cacher().get_live(&key).await;
        if let Some(found) = live.map_err(|err| err.to_string())? {
            return decode(Item::from(&found));
        }
        let not_found = format!("serviceaccount \"{name}\" not found");
        let Ok(mut subscription) = subscription else {
            return Err(not_found);
        };
        if name != DEFAULT_SERVICE_ACCOUNT {
            return Err(not_found);
        }
        let created = tokio::time::timeout(DEFAULT_ACCOUNT_WAIT, async {
            while let Ok(notification) = subscription.receiver.recv().await {
                let CacheNotification::Events(events) = notification else {
                    continue;
                };
                if let Some(event) = events.iter().find(|e| *e.object.key == *key) {
                    return Some(event.object.clone());
                }
            }
            None
        })
        .await;
        match created {
            Ok(Some(object)) => decode(Item::from(&*object)),
            _ => Err(not_found),
        }
    }

    /// The account of a pod being created or given ephemeral containers, as a 403 when it
    /// cannot be found.
    async fn account_of(
        &self,
        attributes: &Attributes<'_>,
        pod: &Value,
    ) -> Result<Value, ApiError> {
        let name = pod["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or_default();
        if name.is_empty() {
            return Err(forbidden(
                attributes,
                pod,
                format!(
                    "no service account specified for pod {}/{}",
                    attributes.namespace,
                    pod["metadata"]["name"].as_str().unwrap_or_default()
                ),
            ));
        }
        self.account(attributes.namespace, name)
            .await
            .map_err(|err| {
                let namespace = attributes.namespace;
                forbidden(
                    attributes,
                    pod,
                    format!("error looking up service account {namespace}/{name}: {err}"),
                )
            })
    }
}

/// Whether the write is one this plugin looks at: pods, or their ephemeral containers.
fn applies(attributes: &Attributes<'_>) -> bool {
    let definition = attributes.definition;
    definition.group_version.group.is_empty()
        && definition.plural == "pods"
        && (attributes.subresource.is_empty() || attributes.subresource == "ephemeralcontainers")
}

fn is_mirror_pod(pod: &Value) -> bool {
    pod["metadata"]["annotations"].get(MIRROR_POD).is_some()
}

/// 403 for `pod`, as upstream's admission.NewForbidden words it.
fn forbidden(attributes: &Attributes<'_>, pod: &Value, reason: String) -> ApiError {
    let name = match attributes.name {
        "" => pod["metadata"]["name"].as_str().unwrap_or_default(),
        name => name,
    };
    ApiError::forbidden(&attributes.definition.group_resource(), name, reason)
}

/// Whether the token is mounted: the pod's choice, else the account's, else yes.
fn automount(account: &Value, pod: &Value) -> bool {
    pod["spec"]["automountServiceAccountToken"]
        .as_bool()
        .or_else(|| account["automountServiceAccountToken"].as_bool())
        .unwrap_or(true)
}

/// Mounts the token volume into every init container and container that has nothing at
/// [`TOKEN_MOUNT_PATH`], adding the volume (named `kube-api-access-<random>`, or the pod's
/// existing one) if any container needs it.
fn mount_token(pod: &mut Value) {
    let existing = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .find(|name| name.starts_with(VOLUME_PREFIX))
        .map(String::from);
    let name = existing
        .clone()
        .unwrap_or_else(|| kapi_apimachinery::meta::generate_name(VOLUME_PREFIX));
    let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = pod
            .get_mut("spec")
            .and_then(|spec| spec.get_mut(list))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for container in containers {
            let mounted = container["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["mountPath"] == TOKEN_MOUNT_PATH);
            if !mounted {
                push(&mut container["volumeMounts"], mount.clone());
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        push(&mut pod["spec"]["volumes"], token_volume(&name));
    }
}

/// The projected token volume: a bound token, the cluster CA and the namespace.
fn token_volume(name: &str) -> Value {
    json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}})
}

/// Appends to a JSON list, creating it.
fn push(list: &mut Value, item: Value) {
    match list.as_array_mut() {
        Some(items) => items.push(item),
        None => *list = Value::Array(vec![item]),
    }
}

/// Whether the account limits its pods' secrets to its own `secrets`.
fn enforces_mountable_secrets(account: &Value) -> bool {
    account["metadata"]["annotations"][ENFORCE_MOUNTABLE_SECRETS]
        .as_str()
        .is_some_and(|v| matches!(v, "true" | "1" | "t" | "T" | "TRUE" | "True"))
}

/// The names listed in a list of references (`[{name}]`).
fn names(references: &Value) -> Vec<&str> {
    references
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect()
}

/// The first secret reference of `containers` (of `what` kind) the account does not allow.
fn container_secret_refs(
    containers: &Value,
    what: &str,
    allowed: &[&str],
    account: &str,
) -> Option<String> {
    for container in containers.as_array().into_iter().flatten() {
        let container_name = container["name"].as_str().unwrap_or_default();
        for env in container["env"].as_array().into_iter().flatten() {
            let secret = env["valueFrom"]["secretKeyRef"]["name"].as_str();
            if let Some(secret) = secret.filter(|s| !allowed.contains(s)) {
                let env_name = env["name"].as_str().unwrap_or_default();
                return Some(format!(
                    "{what} {container_name} with envVar {env_name} referencing secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
                ));
            }
        }
        for from in container["envFrom"].as_array().into_iter().flatten() {
            let secret = from["secretRef"]["name"].as_str();
            if let Some(secret) = secret.filter(|s| !allowed.contains(s)) {
                return Some(format!(
                    "{what} {container_name} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
                ));
            }
        }
    }
    None
}

/// Why `pod` may not be created under `account`'s mountable-secrets limit, if it may not.
fn limit_secret_references(account: &Value, pod: &Value) -> Option<String> {
    let name = account["metadata"]["name"].as_str().unwrap_or_default();
    let allowed = names(&account["secrets"]);
    for volume in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        if let Some(secret) = volume["secret"]["secretName"].as_str()
            && !allowed.contains(&secret)
        {
            return Some(format!(
                "volume with secret.secretName=\"{secret}\" is not allowed because service account {name} does not reference that secret"
            ));
        }
    }
    let spec = &pod["spec"];
    container_secret_refs(&spec["initContainers"], "init container", &allowed, name)
        .or_else(|| container_secret_refs(&spec["containers"], "container", &allowed, name))
        .or_else(|| {
            let pull = names(&account["imagePullSecrets"]);
            names(&spec["imagePullSecrets"])
                .iter()
                .enumerate()
                .find(|(_, secret)| !pull.contains(secret))
                .map(|(i, secret)| format!(
                    "imagePullSecrets[{i}].name=\"{secret}\" is not allowed because service account {name} does not reference that imagePullSecret"
                ))
        })
}

/// Whether a pod spec references a secret anywhere (volumes of every kind, projected
/// volumes, env and envFrom): upstream's VisitPodSecretNames.
pub(super) fn has_secret_reference(value: &Value) -> bool {
    const KEYS: [&str; 4] = [
        "secretName",
        "secretKeyRef",
        "secretRef",
        "nodePublishSecretRef",
    ];
    match value {
        Value::Object(map) => {
            let projected_secret = map.get("secret").is_some_and(|s| s.get("name").is_some());
            projected_secret
                || map.keys().any(|k| KEYS.contains(&k.as_str()))
                || map.values().any(has_secret_reference)
        }
        Value::Array(items) => items.iter().any(has_secret_reference),
        _ => false,
    }
}

/// Why a mirror pod may not be created, if it may not.
fn mirror_pod_problem(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    if spec["serviceAccountName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
    {
        return Some("a mirror pod may not reference service accounts");
    }
    let references_secrets =
        has_secret_reference(spec) || !names(&spec["imagePullSecrets"]).is_empty();
    if references_secrets {
        return Some("a mirror pod may not reference secrets");
    }
    let projects_tokens = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|v| v["projected"]["sources"].as_array().into_iter().flatten())
        .any(|source| source.get("serviceAccountToken").is_some());
    projects_tokens.then_some("a mirror pod may not use ServiceAccountToken volume projections")
}

#[async_trait]
impl AdmissionPlugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let creating =
            attributes.operation == Operation::Create && attributes.subresource.is_empty();
        let Some(pod) = object.filter(|_| applies(attributes) && creating) else {
            return Ok(());
        };
        if is_mirror_pod(pod) {
            return Ok(());
        }
        let spec = &mut pod["spec"];
        if spec["serviceAccountName"]
            .as_str()
            .is_none_or(str::is_empty)
        {
            spec["serviceAccountName"] = json!(DEFAULT_SERVICE_ACCOUNT);
            spec["serviceAccount"] = json!(DEFAULT_SERVICE_ACCOUNT);
        }
        let account = self.account_of(attributes, pod).await?;
        if automount(&account, pod) {
            mount_token(pod);
        }
        if names(&pod["spec"]["imagePullSecrets"]).is_empty() {
            let pull = &account["imagePullSecrets"];
            let references: Vec<Value> = names(pull).iter().map(|n| json!({"name": n})).collect();
            if !references.is_empty() {
                pod["spec"]["imagePullSecrets"] = Value::Array(references);
            }
        }
        Ok(())
    }

    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(pod) = object.filter(|_| applies(attributes)) else {
            return Ok(());
        };
        if attributes.operation == Operation::Update
            && attributes.subresource == "ephemeralcontainers"
        {
            let account = self.account_of(attributes, pod).await?;
            if !enforces_mountable_secrets(&account) {
                return Ok(());
            }
            let allowed = names(&account["secrets"]);
            let name = account["metadata"]["name"].as_str().unwrap_or_default();
            let containers = &pod["spec"]["ephemeralContainers"];
            return match container_secret_refs(containers, "ephemeral container", &allowed, name) {
                Some(problem) => Err(forbidden(attributes, pod, problem)),
                None => Ok(()),
            };
        }
        if attributes.operation != Operation::Create || !attributes.subresource.is_empty() {
            return Ok(());
        }
        if is_mirror_pod(pod) {
            return match mirror_pod_problem(pod) {
                Some(problem) => Err(forbidden(attributes, pod, problem.to_string())),
                None => Ok(()),
            };
        }
        let account = self.account_of(attributes, pod).await?;
        if enforces_mountable_secrets(&account)
            && let Some(problem) = limit_secret_references(&account, pod)
        {
            return Err(forbidden(attributes, pod, problem));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_one_token_volume() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [
                {"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}],
        }});
        mount_token(&mut pod);
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap().to_string();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        let expiration = &volumes[0]["projected"]["sources"][0]["serviceAccountToken"];
        assert_eq!(expiration["expirationSeconds"], 3607);
        for container in [
            &pod["spec"]["initContainers"][0],
            &pod["spec"]["containers"][0],
        ] {
            assert_eq!(
                container["volumeMounts"],
                json!([{"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}])
            );
        }
        assert_eq!(
            pod["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // Mounting again reuses the volume.
        pod["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "c"}));
        mount_token(&mut pod);
        assert_eq!(pod["spec"]["volumes"].as_array().unwrap().len(), 1);
        assert_eq!(
            pod["spec"]["containers"][2]["volumeMounts"][0]["name"],
            name
        );
    }

    #[test]
    fn absent_container_lists_stay_absent() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}]}});
        mount_token(&mut pod);
        let spec = pod["spec"].as_object().unwrap();
        assert_eq!(
            spec.keys().collect::<Vec<_>>(),
            ["containers", "volumes"],
            "{pod}"
        );
    }

    #[test]
    fn mountable_secrets_are_enforced_as_upstream_words_them() {
        let account = json!({"metadata": {"name": "robot",
            "annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"}},
            "secrets": [{"name": "allowed"}], "imagePullSecrets": [{"name": "pull"}]});
        assert!(enforces_mountable_secrets(&account));
        let pod = |spec: Value| json!({"spec": spec});
        assert_eq!(
            limit_secret_references(
                &account,
                &pod(json!({"volumes": [
            {"name": "v", "secret": {"secretName": "allowed"}}], "imagePullSecrets": [{"name": "pull"}]}))
            ),
            None
        );
        assert_eq!(
            limit_secret_references(
                &account,
                &pod(json!({"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}))
            )
            .unwrap(),
            "volume with secret.secretName=\"other\" is not allowed because service account robot does not reference that secret"
        );
        assert_eq!(
            limit_secret_references(
                &account,
                &pod(json!({"containers": [{"name": "c",
                "envFrom": [{"secretRef": {"name": "other"}}]}]}))
            )
            .unwrap(),
            "container c with envFrom referencing secret.secretName=\"other\" is not allowed because service account robot does not reference that secret"
        );
        assert_eq!(
            limit_secret_references(
                &account,
                &pod(json!({"imagePullSecrets": [{"name": "pull"}, {"name": "x"}]}))
            )
            .unwrap(),
            "imagePullSecrets[1].name=\"x\" is not allowed because service account robot does not reference that imagePullSecret"
        );
    }

    #[test]
    fn automount_prefers_the_pod_then_the_account() {
        let off = json!({"automountServiceAccountToken": false});
        assert!(automount(&json!({}), &json!({"spec": {}})));
        assert!(!automount(&off, &json!({"spec": {}})));
        assert!(automount(
            &off,
            &json!({"spec": {"automountServiceAccountToken": true}})
        ));
    }
}
