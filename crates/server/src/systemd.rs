//! Telling a service manager how the server is doing, over systemd's notify protocol
//! (`$NOTIFY_SOCKET`), as upstream's generic server tells it with go-systemd: `READY=1` once
//! `/readyz` first passes (the post-start hooks have finished and every readiness check
//! holds), `STOPPING=1` when shutdown begins. Without `$NOTIFY_SOCKET` nothing is sent.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio_util::sync::CancellationToken;

use crate::healthz::HealthEndpoint;

/// The first wait between two looks at `/readyz`'s checks once the post-start hooks have
/// finished; it doubles up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(1);
/// The longest wait between two looks.
const MAX_WAIT: Duration = Duration::from_millis(200);

/// Whether a service manager is listening.
fn managed() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// Sends `READY=1` once every check of `readyz` passes, unless `stopping` comes first. The
/// post-start hooks, which readiness waits for longest, say when each finishes (`hooks`);
/// the other checks (storage, boot sequences) have no common signal, so once the hooks are
/// done they are looked at, soon at first and then less often. Looking every 5, 10, 20...
/// ms from the start instead sent `READY=1` up to 20 ms after `/readyz` first passed
/// (docs/PERFORMANCE.md, "Readiness: READY=1 when the hooks finish").
pub(crate) fn notify_ready(
    readyz: HealthEndpoint,
    hooks: Vec<CancellationToken>,
    stopping: CancellationToken,
) {
    if !managed() {
        return;
    }
    tokio::spawn(async move {
        for done in &hooks {
            tokio::select! {
                _ = stopping.cancelled() => return,
                _ = done.cancelled() => {}
            }
        }
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
