//! kube-controller-manager's `legacy-serviceaccount-token-cleaner` controller: once a day
//! (and at start) it finds the auto-generated legacy service account token Secrets (of
//! type `kubernetes.io/service-account-token`, listed by their ServiceAccount) that nothing
//! has used for `--legacy-service-account-token-clean-up-period` (one year): not used
//! since (`kubernetes.io/legacy-token-last-used`, which the token authenticator keeps), not
//! created since, and mounted by no pod. It first labels such a Secret
//! `kubernetes.io/legacy-token-invalid-since: <today>` (the authenticator then refuses its
//! token), and deletes it once it has been invalid for the period too. Nothing is done
//! before usage has been tracked for a whole period (kube-system's
//! `kube-apiserver-legacy-service-account-token-tracking` ConfigMap says since when).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use kapi_apimachinery::gotime;
use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::token_tracking::{LEGACY_TOKEN_TRACKING_CONFIG_MAP, is_date};

/// The controller's name (`--controllers`).
pub const LEGACY_TOKEN_CLEANER_CONTROLLER: &str = "legacy-serviceaccount-token-cleaner-controller";
/// How often the Secrets are looked at.
const SYNC_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// How long the first pass waits for the caches to catch up with the store.
const CACHE_WAIT: Duration = Duration::from_secs(30);
/// How soon a pass that could not write everything (a Secret changed under it, the
/// server refused) is run again, rather than a day later.
const RETRY_AFTER: Duration = Duration::from_secs(5);
const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

/// What the cleaner follows and how long a token must go unused.
#[derive(Clone)]
pub struct LegacyTokenCleaner {
    pub secrets: Served,
    pub service_accounts: Served,
    pub pods: Served,
    pub config_maps: Served,
    /// `--legacy-service-account-token-clean-up-period`.
    pub clean_up_period: Duration,
}

/// Starts the controller, writing through `client` (kube-system's
/// `legacy-service-account-token-cleaner`) until `stopping`.
pub fn start_legacy_token_cleaner(
    cleaner: LegacyTokenCleaner,
    client: LoopbackClient,
    stopping: CancellationToken,
) {
    tokio::spawn(async move {
        // The first pass is a day's only one: it must see the store, not a cache still
        // filling (upstream waits for its informers to sync).
        for served in [
            &cleaner.config_maps,
            &cleaner.secrets,
            &cleaner.service_accounts,
            &cleaner.pods,
        ] {
            let fresh = served.registry.cacher().wait_fresh(CACHE_WAIT);
            if fresh.await.is_err() {
                tracing::warn!("the legacy token cleaner starts before its caches caught up");
            }
        }
        let mut next = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = stopping.cancelled() => return,
                () = tokio::time::sleep_until(next) => {}
            }
            let settled = cleaner
                .evaluate(&client, gotime::Timestamp::now().seconds)
                .await;
            next = tokio::time::Instant::now() + if settled { SYNC_INTERVAL } else { RETRY_AFTER };
        }
    });
}

/// The date (`YYYY-MM-DD`, UTC) of `seconds` since the epoch.
fn date_of(seconds: i64) -> String {
    gotime::format_rfc3339(seconds)[..10].to_string()
}

/// The start (seconds since the epoch) of the date `date`.
fn start_of(date: &str) -> Option<i64> {
    gotime::parse_rfc3339(&format!("{date}T00:00:00Z")).map(|t| t.seconds)
}

impl LegacyTokenCleaner {
    /// One pass at `now` (seconds since the epoch); whether every write it wanted was made
    /// (a Secret changed since the cache showed it, e.g. by the token controller filling it
    /// in at start, makes its deletion conflict, and it is looked at again soon).
    async fn evaluate(&self, client: &LoopbackClient, now: i64) -> bool {
        let period = i64::try_from(self.clean_up_period.as_secs()).unwrap_or(i64::MAX);
        // Usage is known from the day after tracking started.
        let tracking = self
            .config_maps
            .cached("kube-system", LEGACY_TOKEN_TRACKING_CONFIG_MAP);
        let since = tracking
            .as_ref()
            .and_then(|cm| cm["data"]["since"].as_str());
        let Some(tracked_from) = since.filter(|d| is_date(d)).and_then(start_of) else {
            return true;
        };
        if now < (tracked_from + 86_400).saturating_add(period) {
            return true;
        }
        let mut settled = true;
        let preserve_from = now.saturating_sub(period);
        let preserve_used_from = date_of(preserve_from);
        let mut mounted: HashMap<String, BTreeSet<String>> = HashMap::new();
        for secret in self.secrets.cached_list(None) {
            if !self.unused_auto_generated(&secret, preserve_from, &preserve_used_from) {
                continue;
            }
            let namespace = secret["metadata"]["namespace"].as_str().unwrap_or_default();
            let in_use = mounted
                .entry(namespace.to_string())
                .or_insert_with(|| mounted_secrets(&self.pods, namespace));
            let name = secret["metadata"]["name"].as_str().unwrap_or_default();
            if in_use.contains(name) {
                continue;
            }
            let invalid_since = secret["metadata"]["labels"][INVALID_SINCE_LABEL].as_str();
            let outcome = match invalid_since.filter(|d| is_date(d)) {
                None => invalidate(client, &secret, &date_of(now)).await,
                Some(since) if *since < *preserve_used_from => delete(client, &secret).await,
                Some(_) => Ok(()),
            };
            if let Err(err) = outcome {
                tracing::warn!("{LEGACY_TOKEN_CLEANER_CONTROLLER}: {namespace}/{name}: {err}");
                settled = false;
            }
        }
        settled
    }

    /// Whether `secret` is an auto-generated legacy token, created before `preserve_from`,
    /// not used on or after `preserve_used_from`, and not being deleted.
    fn unused_auto_generated(
        &self,
        secret: &Value,
        preserve_from: i64,
        preserve_used_from: &str,
    ) -> bool {
        let meta = &secret["metadata"];
        if secret["type"] != "kubernetes.io/service-account-token"
            || !meta["deletionTimestamp"].is_null()
        {
            return false;
        }
        let created = meta["creationTimestamp"]
            .as_str()
            .and_then(gotime::parse_rfc3339);
        if created.is_none_or(|created| created.seconds >= preserve_from) {
            return false;
        }
        if let Some(last_used) = meta["labels"][LAST_USED_LABEL].as_str()
            && (!is_date(last_used) || last_used >= preserve_used_from)
        {
            return false;
        }
        let namespace = meta["namespace"].as_str().unwrap_or_default();
        let annotations = &meta["annotations"];
        let Some(account) = annotations["kubernetes.io/service-account.name"].as_str() else {
            return false;
        };
        let Some(account) = self.service_accounts.cached(namespace, account) else {
            return false;
        };
        let uid = annotations["kubernetes.io/service-account.uid"]
            .as_str()
            .unwrap_or_default();
        if !uid.is_empty() && account["metadata"]["uid"] != uid {
            return false;
        }
        account["secrets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|reference| reference["name"] == meta["name"])
    }
}

/// The Secrets the pods of `namespace` use (upstream's VisitPodSecretNames): image pull
/// secrets, environment references, and volumes (secret, projected and plugins' secret
/// references).
fn mounted_secrets(pods: &Served, namespace: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut add = |name: &Value| {
        if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
            names.insert(name.to_string());
        }
    };
    for pod in pods.cached_list(Some(namespace)) {
        let spec = &pod["spec"];
        for reference in spec["imagePullSecrets"].as_array().into_iter().flatten() {
            add(&reference["name"]);
        }
        let containers = ["containers", "initContainers", "ephemeralContainers"]
            .into_iter()
            .flat_map(|field| spec[field].as_array().into_iter().flatten());
        for container in containers {
            for from in container["envFrom"].as_array().into_iter().flatten() {
                add(&from["secretRef"]["name"]);
            }
            for env in container["env"].as_array().into_iter().flatten() {
                add(&env["valueFrom"]["secretKeyRef"]["name"]);
            }
        }
        for volume in spec["volumes"].as_array().into_iter().flatten() {
            add(&volume["secret"]["secretName"]);
            add(&volume["azureFile"]["secretName"]);
            add(&volume["csi"]["nodePublishSecretRef"]["name"]);
            for source in volume["projected"]["sources"]
                .as_array()
                .into_iter()
                .flatten()
            {
                add(&source["secret"]["name"]);
            }
            for (_, plugin) in volume.as_object().into_iter().flatten() {
                add(&plugin["secretRef"]["name"]);
            }
        }
    }
    names
}

/// Labels the Secret invalid from `today` (its uid guards against a replaced Secret).
async fn invalidate(client: &LoopbackClient, secret: &Value, today: &str) -> Result<(), String> {
    let meta = &secret["metadata"];
    let path = secret_path(secret);
    let patch = json!({"metadata": {"uid": meta["uid"], "labels": {INVALID_SINCE_LABEL: today}}});
    client
        .patch(&path, "application/merge-patch+json", &patch)
        .await
        .map(drop)
        .map_err(|err| format!("labelling the token invalid: {err}"))
}

/// Deletes the Secret if it has not changed since it was looked at (a conflict otherwise).
async fn delete(client: &LoopbackClient, secret: &Value) -> Result<(), String> {
    let options = json!({"apiVersion": "v1", "kind": "DeleteOptions",
        "preconditions": {"resourceVersion": secret["metadata"]["resourceVersion"]}});
    match client
        .json(
            http::Method::DELETE,
            &secret_path(secret),
            None,
            Some(&options),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.code() == 404 => Ok(()),
        Err(err) => Err(format!("deleting the token: {err}")),
    }
}

fn secret_path(secret: &Value) -> String {
    let meta = &secret["metadata"];
    format!(
        "/api/v1/namespaces/{}/secrets/{}",
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_whole_days() {
        assert_eq!(date_of(1_800_000_000), "2027-01-15");
        assert_eq!(start_of("2027-01-15"), Some(1_799_971_200));
        assert_eq!(start_of("2027-02-30"), None);
    }
}
