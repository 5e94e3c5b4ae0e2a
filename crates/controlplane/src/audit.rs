//! The audit flags: the policy (`--audit-policy-file`) and the log and webhook backends,
//! checked as kube-apiserver checks them.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use kapi_server::audit::{
    AuditMetrics, Auditor, Backend, Batching, Format, LogBackend, LogConfig, Mode, Policy,
    Rotation, WebhookBackend,
};
use kapi_server::webhook_client::WebhookClient;

use crate::options::ServeOptions as Options;

/// The auditor the flags ask for; `None` without a policy file or a backend.
pub fn auditor(options: &Options) -> anyhow::Result<Option<Arc<Auditor>>> {
    let (log_mode, log_format, webhook_mode) = check_modes(options)?;
    let Some(policy_file) = &options.audit_policy_file else {
        return Ok(None);
    };
    let metrics = AuditMetrics::default();
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    if let Some(path) = &options.audit_log_path {
        backends.push(Arc::new(log_backend(
            options, path, log_mode, log_format, &metrics,
        )?));
    }
    if let Some(config) = &options.audit_webhook_config_file {
        let client = WebhookClient::from_kubeconfig(config)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("--audit-webhook-config-file {}", config.display()))?;
        let batching = Batching {
            max_size: options.audit_webhook_batch_max_size.max(1),
            max_wait: options.audit_webhook_batch_max_wait,
            initial_backoff: options.audit_webhook_initial_backoff,
        };
        backends.push(Arc::new(WebhookBackend::start(
            client,
            batching,
            webhook_mode,
            &metrics,
        )));
    }
    if backends.is_empty() {
        tracing::warn!("--audit-policy-file is set, but no audit backend is: nothing is audited");
        return Ok(None);
    }
    let text = std::fs::read_to_string(policy_file)
        .with_context(|| format!("--audit-policy-file {}", policy_file.display()))?;
    let policy = Policy::parse(&text)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("--audit-policy-file {}", policy_file.display()))?;
    Ok(Some(Arc::new(Auditor::new(policy, backends, metrics))))
}

fn log_backend(
    options: &Options,
    path: &Path,
    mode: Mode,
    format: Format,
    metrics: &AuditMetrics,
) -> anyhow::Result<LogBackend> {
    let rotation = Rotation {
        max_size_mb: options.audit_log_maxsize,
        max_backups: options.audit_log_maxbackup,
        max_age_days: options.audit_log_maxage,
    };
    let config = LogConfig {
        rotation,
        mode,
        format,
    };
    LogBackend::open(path, config, metrics)
        .with_context(|| format!("--audit-log-path {}", path.display()))
}

/// Checks the log's format and both modes: the log's mode and format, the webhook's mode.
fn check_modes(options: &Options) -> anyhow::Result<(Mode, Format, Mode)> {
    let format = options
        .audit_log_format
        .parse::<Format>()
        .map_err(|err| anyhow::anyhow!("--audit-log-format: {err}"))?;
    let webhook_mode = options
        .audit_webhook_mode
        .parse::<Mode>()
        .map_err(|err| anyhow::anyhow!("--audit-webhook-mode: {err}"))?;
    let mode = options
        .audit_log_mode
        .parse::<Mode>()
        .map_err(|err| anyhow::anyhow!("--audit-log-mode: {err}"))?;
    Ok((mode, format, webhook_mode))
}
