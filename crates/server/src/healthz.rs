//! Health checks and the `/healthz`, `/livez` and `/readyz` endpoints, in the exact format of
//! upstream's healthz package: `ok`, or with `?verbose` one `[+]name ok` line per check and
//! `<endpoint> check passed`; failures answer 500 with every line and `<endpoint> check failed`;
//! `?exclude=<name>` skips a check; `/<endpoint>/<name>` runs one check.

use std::fmt::Write as _;
use std::future::Future;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use kapi_storage::Store;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::body::{Body, BoxError, full};
use crate::query;
use crate::responses::{TEXT_PLAIN_UTF8, X_CONTENT_TYPE_OPTIONS, text_error};

/// How long the storage check waits for the store before it fails.
const STORAGE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the log check proves that logging is not blocked.
const LOG_PROBE_INTERVAL: Duration = Duration::from_secs(60);
/// How old the log check's last proof may be before the check fails.
const LOG_PROBE_MAX_AGE: Duration = Duration::from_secs(120);

/// The function behind a check: resolves to `Err(reason)` while unhealthy.
type CheckFn = dyn Fn() -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync;

/// One named health check (upstream's `HealthChecker`).
#[derive(Clone)]
pub struct HealthCheck {
    name: Arc<str>,
    check: Arc<CheckFn>,
}

impl std::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthCheck")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl HealthCheck {
    /// A check named `name` that runs `check` each time an endpoint is asked.
    pub fn new<F, Fut>(name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        let check = move || -> BoxFuture<'static, Result<(), BoxError>> { Box::pin(check()) };
        HealthCheck {
            name: Arc::from(name.into()),
            check: Arc::new(check),
        }
    }

    /// The check's name, as it appears in the output and in `/<endpoint>/<name>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the check.
    pub async fn run(&self) -> Result<(), BoxError> {
        (self.check)().await
    }

    /// `ping`: always healthy; proves the server answers.
    pub fn ping() -> Self {
        HealthCheck::new("ping", || async { Ok(()) })
    }

    /// `log`: fails when writing to the log (stderr) has been blocked for two minutes. A
    /// background task takes the stderr lock every minute, as upstream flushes klog.
    pub fn log() -> Self {
        let probe = Arc::new(LogProbe::default());
        HealthCheck::new("log", move || {
            let probe = probe.clone();
            async move { probe.check() }
        })
    }

    /// A storage check (upstream's `etcd` and `etcd-readiness`): a cheap store call that must
    /// answer within two seconds.
    pub fn storage(name: impl Into<String>, store: Arc<dyn Store>) -> Self {
        HealthCheck::new(name, move || {
            let store = store.clone();
            async move {
                match tokio::time::timeout(STORAGE_CHECK_TIMEOUT, store.current_revision()).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(err)) => Err(err.into()),
                    Err(_) => Err("the storage did not answer within 2s".into()),
                }
            }
        })
    }

    /// `shutdown` (readyz only): fails once the server has started to shut down.
    pub(crate) fn shutdown(shutdown: CancellationToken) -> Self {
        HealthCheck::new("shutdown", move || {
            let stopping = shutdown.is_cancelled();
            async move {
                if stopping {
                    Err("process is shutting down".into())
                } else {
                    Ok(())
                }
            }
        })
    }

    /// `poststarthook/<name>`: fails until the hook has finished.
    pub(crate) fn post_start_hook(name: &str, done: CancellationToken) -> Self {
        HealthCheck::new(format!("poststarthook/{name}"), move || {
            let finished = done.is_cancelled();
            async move {
                if finished {
                    Ok(())
                } else {
                    Err("not finished".into())
                }
            }
        })
    }
}

/// The state of the log check.
#[derive(Default)]
struct LogProbe {
    /// When stderr was last writable; `None` until the first check starts the probe.
    last_verified: Mutex<Option<Instant>>,
}

impl LogProbe {
    /// Starts the probe on first use, then reports whether its last proof is recent.
    fn check(self: &Arc<Self>) -> Result<(), BoxError> {
        let last = *self.last_verified.lock().get_or_insert_with(|| {
            tokio::spawn(self.clone().run());
            Instant::now()
        });
        if last.elapsed() < LOG_PROBE_MAX_AGE {
            Ok(())
        } else {
            Err("logging blocked".into())
        }
    }

    /// Every interval, takes the stderr lock (held by any log write in progress) and records
    /// the time it got it.
    async fn run(self: Arc<Self>) {
        loop {
            tokio::time::sleep(LOG_PROBE_INTERVAL).await;
            let flushed = tokio::task::spawn_blocking(|| std::io::stderr().lock().flush()).await;
            if flushed.is_ok() {
                *self.last_verified.lock() = Some(Instant::now());
            }
        }
    }
}

/// The checks of one endpoint, fixed when the server starts.
#[derive(Clone, Debug)]
pub(crate) struct HealthEndpoint {
    /// `healthz`, `livez` or `readyz`.
    name: &'static str,
    checks: Vec<HealthCheck>,
}

impl HealthEndpoint {
    /// An endpoint with its checks in order.
    pub(crate) fn new(name: &'static str, checks: Vec<HealthCheck>) -> Self {
        HealthEndpoint { name, checks }
    }

    /// Answers `path` if it is this endpoint (`/<name>`) or one of its checks
    /// (`/<name>/<check>`); `None` for any other path.
    pub(crate) async fn serve(&self, path: &str, query: &str) -> Option<Response<Body>> {
        let rest = path.strip_prefix('/')?.strip_prefix(self.name)?;
        if rest.is_empty() {
            return Some(self.serve_all(query).await);
        }
        let check_name = rest.strip_prefix('/')?;
        let check = self.checks.iter().find(|c| c.name() == check_name)?;
        Some(serve_one(check).await)
    }

    /// Whether every check passes now.
    pub(crate) async fn passes(&self) -> bool {
        for check in &self.checks {
            if check.run().await.is_err() {
                return false;
            }
        }
        true
    }

    /// Runs every check not excluded and writes the report.
    async fn serve_all(&self, query: &str) -> Response<Body> {
        let excluded: Vec<String> = query::pairs(query)
            .filter(|(k, _)| k == "exclude")
            .map(|(_, v)| v.into_owned())
            .collect();
        let mut report = String::new();
        let mut failed = Vec::new();
        for check in &self.checks {
            if excluded.iter().any(|e| e == check.name()) {
                let _ = writeln!(report, "[+]{} excluded: ok", check.name());
                continue;
            }
            match check.run().await {
                Ok(()) => {
                    let _ = writeln!(report, "[+]{} ok", check.name());
                }
                Err(err) => {
                    let _ = writeln!(report, "[-]{} failed: reason withheld", check.name());
                    tracing::debug!(endpoint = self.name, check = check.name(), %err, "health check failed");
                    failed.push(check.name());
                }
            }
        }
        self.write_unknown_exclusions(&mut report, &excluded);
        if !failed.is_empty() {
            report.push_str(&format!("{} check failed", self.name));
            return text_error(StatusCode::INTERNAL_SERVER_ERROR, &report);
        }
        if !query::has(query, "verbose") {
            return plain_ok(full("ok"));
        }
        report.push_str(&format!("{} check passed\n", self.name));
        plain_ok(full(report))
    }

    /// Notes the excluded names that match no check, sorted, as upstream warns.
    fn write_unknown_exclusions(&self, report: &mut String, excluded: &[String]) {
        let mut unknown: Vec<&String> = excluded
            .iter()
            .filter(|e| !self.checks.iter().any(|c| c.name() == *e))
            .collect();
        if unknown.is_empty() {
            return;
        }
        unknown.sort();
        unknown.dedup();
        let quoted: Vec<String> = unknown
            .iter()
            .map(|n| kapi_apimachinery::quote(n))
            .collect();
        let _ = writeln!(
            report,
            "warn: some health checks cannot be excluded: no matches for {}",
            quoted.join(",")
        );
    }
}

/// `/<endpoint>/<check>`: `ok`, or 500 `internal server error: <reason>`.
async fn serve_one(check: &HealthCheck) -> Response<Body> {
    match check.run().await {
        Ok(()) => {
            let mut response = Response::new(full("ok"));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_PLAIN_UTF8));
            response
        }
        Err(err) => text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("internal server error: {err}"),
        ),
    }
}

/// A 200 plain-text answer with upstream's headers.
fn plain_ok(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_PLAIN_UTF8));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// The health checks a server is given before it starts, per endpoint. `ping` and `log` come
/// first on every endpoint, then these in the order added; the server appends one check per
/// post-start hook and, on `/readyz`, `shutdown`.
#[derive(Clone, Debug, Default)]
pub struct HealthChecks {
    healthz: Vec<HealthCheck>,
    livez: Vec<HealthCheck>,
    readyz: Vec<HealthCheck>,
}

impl HealthChecks {
    /// Adds a check to all three endpoints (upstream's `AddHealthChecks`).
    pub fn add_health_check(&mut self, check: HealthCheck) {
        self.healthz.push(check.clone());
        self.livez.push(check.clone());
        self.readyz.push(check);
    }

    /// Adds a check to `/healthz` only (with [`HealthChecks::add_readyz_check`], a check
    /// that `/livez` leaves out, as upstream's KMS checks).
    pub fn add_healthz_check(&mut self, check: HealthCheck) {
        self.healthz.push(check);
    }

    /// Adds a check to `/readyz` only.
    pub fn add_readyz_check(&mut self, check: HealthCheck) {
        self.readyz.push(check);
    }

    /// Adds a check to `/livez` only.
    pub fn add_livez_check(&mut self, check: HealthCheck) {
        self.livez.push(check);
    }

    /// The three endpoints, each with `ping` and `log`, its own checks, the post-start hooks'
    /// checks, and for `/readyz` the `shutdown` check last (upstream's order).
    pub(crate) fn endpoints(
        &self,
        hook_checks: &[HealthCheck],
        shutdown: HealthCheck,
    ) -> [HealthEndpoint; 3] {
        let endpoint = |name, checks: &[HealthCheck], last: Option<HealthCheck>| {
            let defaults = [HealthCheck::ping(), HealthCheck::log()];
            let all = defaults
                .into_iter()
                .chain(checks.iter().cloned())
                .chain(hook_checks.iter().cloned())
                .chain(last);
            HealthEndpoint::new(name, all.collect())
        };
        [
            endpoint("healthz", &self.healthz, None),
            endpoint("livez", &self.livez, None),
            endpoint("readyz", &self.readyz, Some(shutdown)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn text(response: Response<Body>) -> (u16, String) {
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    fn failing(name: &str) -> HealthCheck {
        HealthCheck::new(name, || async { Err("broken".into()) })
    }

    #[tokio::test]
    async fn reports_as_upstream() {
        let endpoint = HealthEndpoint::new("readyz", vec![HealthCheck::ping(), failing("etcd")]);
        let (code, body) = text(endpoint.serve("/readyz", "").await.unwrap()).await;
        assert_eq!(code, 500);
        assert_eq!(
            body,
            "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"
        );

        let response = endpoint
            .serve("/readyz", "exclude=etcd&exclude=nope")
            .await
            .unwrap();
        assert_eq!(text(response).await, (200, "ok".to_string()));

        let response = endpoint
            .serve("/readyz", "verbose&exclude=etcd")
            .await
            .unwrap();
        let expected = "[+]ping ok\n[+]etcd excluded: ok\nreadyz check passed\n";
        assert_eq!(text(response).await, (200, expected.to_string()));

        let response = endpoint
            .serve("/readyz", "verbose&exclude=etcd&exclude=x")
            .await
            .unwrap();
        let expected = "[+]ping ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"x\"\nreadyz check passed\n";
        assert_eq!(text(response).await, (200, expected.to_string()));
    }

    #[tokio::test]
    async fn serves_single_checks() {
        let endpoint = HealthEndpoint::new("livez", vec![HealthCheck::ping(), failing("etcd")]);
        let ok = endpoint.serve("/livez/ping", "").await.unwrap();
        assert_eq!(text(ok).await, (200, "ok".to_string()));
        let failed = endpoint.serve("/livez/etcd", "").await.unwrap();
        assert_eq!(
            text(failed).await,
            (500, "internal server error: broken\n".to_string())
        );
        assert!(endpoint.serve("/livez/", "").await.is_none());
        assert!(endpoint.serve("/livezz", "").await.is_none());
        assert!(endpoint.serve("/readyz", "").await.is_none());
    }
}
