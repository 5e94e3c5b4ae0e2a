//! kube-controller-manager's serviceaccount-token controller, run in process: a Secret of
//! type `kubernetes.io/service-account-token` naming a service account (annotation
//! `kubernetes.io/service-account.name`) is filled with a legacy token for that account,
//! the cluster CA and the namespace; one whose account does not exist (or was recreated
//! with another uid) is deleted, as are an account's token Secrets when it goes.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kapi_server::endpoints::Served;
use kapi_server::registry::{DeleteParams, Item, Write};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use kapi_builtin::token::ServiceAccountTokens;
use kapi_server::informer::{self, Change};

/// The Secret type of legacy tokens.
const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
const ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
const ACCOUNT_UID: &str = "kubernetes.io/service-account.uid";
/// How often every namespace is looked at again.
const RESYNC: Duration = Duration::from_secs(60);

/// What the token controller signs with and where it reads and writes.
#[derive(Clone)]
pub struct LegacyTokens {
    pub tokens: Arc<ServiceAccountTokens>,
    pub secrets: Served,
    pub accounts: Served,
    /// The cluster CA written as `ca.crt`.
    pub ca_pem: String,
}

/// Starts the token controller, until `stopping`.
pub fn start_token_controller(legacy: LegacyTokens, stopping: CancellationToken) {
    let (dirty, work) = mpsc::unbounded_channel();
    for served in [legacy.secrets.clone(), legacy.accounts.clone()] {
        tokio::spawn(follow(served, dirty.clone(), stopping.clone()));
    }
    tokio::spawn(run(legacy, work, stopping));
}

async fn run(
    legacy: LegacyTokens,
    mut work: mpsc::UnboundedReceiver<Option<String>>,
    stopping: CancellationToken,
) {
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        let namespace = tokio::select! {
            _ = stopping.cancelled() => return,
            _ = resync.tick() => None,
            dirty = work.recv() => match dirty {
                Some(namespace) => namespace,
                None => return,
            },
        };
        let secrets = legacy.secrets.cached_list(namespace.as_deref());
        for secret in secrets.iter().filter(|s| s["type"] == TOKEN_SECRET_TYPE) {
            if let Err(err) = legacy.reconcile(secret).await {
                let name = secret["metadata"]["name"].as_str().unwrap_or_default();
                tracing::warn!(%name, "keeping a service account token secret: {err}");
            }
        }
    }
}

impl LegacyTokens {
    /// Fills, keeps or deletes one token Secret.
    async fn reconcile(&self, secret: &Value) -> Result<(), kapi_apimachinery::status::ApiError> {
        let meta = &secret["metadata"];
        if kapi_server::object::is_deleting(secret) {
            return Ok(());
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let (namespace, name) = (text(&meta["namespace"]), text(&meta["name"]));
        let account_name = text(&meta["annotations"][ACCOUNT_NAME]);
        let key = self.accounts.registry.key(&namespace, &account_name);
        let live = self.accounts.registry.cacher().get_live(&key).await;
        let account = live
            .ok()
            .flatten()
            .and_then(|o| Item::from(&o).decode().ok());
        let uid_annotation = text(&meta["annotations"][ACCOUNT_UID]);
        let account = match account {
            Some(account)
                if uid_annotation.is_empty()
                    || uid_annotation == kapi_server::object::uid(&account) =>
            {
                account
            }
            _ => {
                let params = DeleteParams::default();
                let definition = &self.secrets.definition;
                let deleted = self
                    .secrets
                    .registry
                    .delete(definition, &namespace, &name, &params, None)
                    .await;
                return match deleted {
                    Err(err) if !err.is_not_found() => Err(err),
                    _ => Ok(()),
                };
            }
        };
        if !secret["data"]["token"].is_null() && !uid_annotation.is_empty() {
            return Ok(());
        }
        let uid = kapi_server::object::uid(&account).to_string();
        let token = self
            .tokens
            .issue_legacy(&namespace, &account_name, &uid, &name)
            .map_err(|err| kapi_apimachinery::status::ApiError::internal(err.to_string()))?;
        let data = json!({
            "token": STANDARD.encode(token),
            "ca.crt": STANDARD.encode(&self.ca_pem),
            "namespace": STANDARD.encode(&namespace),
        });
        let write = Write::own(kapi_server::registry::KUBE_CONTROLLER_MANAGER);
        let definition = &self.secrets.definition;
        self.secrets
            .registry
            .update(definition, &namespace, &name, write, |current| {
                let mut secret = current.cloned().ok_or_else(|| {
                    kapi_apimachinery::status::ApiError::not_found(
                        &definition.group_resource(),
                        &name,
                    )
                })?;
                for (key, value) in data.as_object().into_iter().flatten() {
                    if secret["data"][key].is_null() {
                        secret["data"][key] = value.clone();
                    }
                }
                secret["metadata"]["annotations"][ACCOUNT_UID] = json!(uid);
                Ok(secret)
            })
            .await
            .map(drop)
    }
}

/// Sends the namespace of every change of one collection (`None` to look at everything,
/// after falling behind).
async fn follow(
    served: Served,
    dirty: mpsc::UnboundedSender<Option<String>>,
    stopping: CancellationToken,
) {
    informer::follow(served, stopping, |change| {
        let namespace = match change {
            Change::Event(event) => Some(event.object.namespace().to_string()),
            Change::Resync => None,
        };
        dirty.send(namespace).is_ok()
    })
    .await;
}
