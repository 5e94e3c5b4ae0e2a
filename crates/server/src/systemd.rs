//! Telling a service manager how the server is doing, over systemd's notify protocol
//! (`$NOTIFY_SOCKET`), as upstream's generic server tells it with go-systemd: `READY=1` once
//! `/readyz` first passes (the post-start hooks have finished and every readiness check
//! holds), `STOPPING=1` when shutdown begins. Without `$NOTIFY_SOCKET` nothing is sent.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio_util::sync::CancellationToken;

use crate::healthz::HealthEndpoint;

/// The first wait between two looks at `/readyz`'s checks; it doubles up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(5);
/// The longest wait between two looks.
const MAX_WAIT: Duration = Duration::from_millis(200);

/// Whether a service manager is listening.
fn managed() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// Sends `READY=1` once every check of `readyz` passes, unless `stopping` comes first. The
/// checks (storage, post-start hooks, boot sequences) have no common signal, so they are
/// looked at again, soon at first and then less often.
pub(crate) fn notify_ready(readyz: HealthEndpoint, stopping: CancellationToken) {
    if !managed() {
        return;
    }
    tokio::spawn(async move {
        let mut wait = FIRST_WAIT;
        while !readyz.passes().await {
            tokio::select! {
                _ = stopping.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(MAX_WAIT);
        }
        send(NotifyState::Ready);
    });
}

/// Sends `STOPPING=1`.
pub(crate) fn notify_stopping() {
    if managed() {
        send(NotifyState::Stopping);
    }
}

fn send(state: NotifyState<'_>) {
    if let Err(err) = sd_notify::notify(std::slice::from_ref(&state)) {
        tracing::warn!("telling the service manager {state}: {err}");
    }
}
