//! Where audit events go: the log backend (`--audit-log-path`, one JSON event per line,
//! rotated by size, age and count as upstream's lumberjack writer does) and the webhook
//! backend (`--audit-webhook-config-file`, batches of events POSTed as an `EventList`).
//!
//! Both have upstream's modes (`--audit-log-mode`, `--audit-webhook-mode`): `blocking`
//! writes (or sends) each event before the request goes on, so an event is stored before
//! its response is sent; `blocking-strict` also fails the request when its RequestReceived
//! event is lost; `batch` hands events to a writer thread (log) or task (webhook), in
//! order, and never makes a request wait. The log defaults to `blocking`, the webhook to
//! `batch`.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc as async_mpsc;

use kapi_apimachinery::quote;

use super::AuditMetrics;
use crate::webhook_client::WebhookClient;

/// Receives every audit event of the server, as one serialized JSON object.
pub trait Backend: Send + Sync {
    /// Stores or queues `event`; false when it was lost and the backend's mode says the
    /// request should fail for it (`blocking-strict`).
    fn process(&self, event: &[u8]) -> bool;

    /// For a backend whose mode makes requests wait on a remote write: that write, to be
    /// awaited where the request can wait, with [`Backend::process`]'s answer. `None`
    /// when `process` is all there is to it.
    fn process_waiting(&self, _event: &[u8]) -> Option<BoxFuture<'static, bool>> {
        None
    }
}

/// A backend's mode (`--audit-log-mode`, `--audit-webhook-mode`), as upstream names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Batch,
    Blocking,
    BlockingStrict,
}

impl Mode {
    /// Every mode, by its flag value.
    pub const ALLOWED: [&str; 3] = ["batch", "blocking", "blocking-strict"];
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(mode: &str) -> Result<Mode, String> {
        match mode {
            "batch" => Ok(Mode::Batch),
            "blocking" => Ok(Mode::Blocking),
            "blocking-strict" => Ok(Mode::BlockingStrict),
            _ => Err(format!(
                "invalid audit mode {mode:?}, allowed modes are {:?}",
                Mode::ALLOWED
            )),
        }
    }
}

/// How the log writes events (`--audit-log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// One JSON event per line.
    #[default]
    Json,
    /// Upstream's one-line text summary of an event (`legacy`).
    Legacy,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(format: &str) -> Result<Format, String> {
        match format {
            "json" => Ok(Format::Json),
            "legacy" => Ok(Format::Legacy),
            _ => Err(format!(
                "invalid audit log format {format:?}, allowed formats are \"json,legacy\""
            )),
        }
    }
}

/// The log backend's settings (`--audit-log-*`).
#[derive(Clone, Copy, Debug)]
pub struct LogConfig {
    pub rotation: Rotation,
    pub mode: Mode,
    pub format: Format,
}

/// How the log file is rotated (`--audit-log-maxsize`, `-maxbackup`, `-maxage`); zero
/// means no limit.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rotation {
    pub max_size_mb: u64,
    pub max_backups: usize,
    pub max_age_days: u64,
}

/// Writes events as JSON lines to a file, or to standard output for `-`.
pub struct LogBackend {
    writer: LogWriter,
    strict: bool,
    format: Format,
    /// Events lost to write errors (`apiserver_audit_error_total{plugin="log"}`).
    errors: Counter,
}

enum LogWriter {
    /// `blocking` modes: the request's own thread writes and flushes its event.
    Direct(Mutex<Sink>),
    /// `batch`: a writer thread takes the lines in order.
    Thread(mpsc::Sender<Vec<u8>>),
}

impl LogBackend {
    /// Opens (creating) `path` for appending; in `batch` mode, starts the writer thread.
    /// Events lost to write errors are counted in `metrics`.
    pub fn open(path: &Path, config: LogConfig, metrics: &AuditMetrics) -> io::Result<LogBackend> {
        let errors = metrics.errors_of("log");
        let sink = Sink::open(path, config.rotation)?;
        let writer = if config.mode == Mode::Batch {
            let (lines, received) = mpsc::channel::<Vec<u8>>();
            let lost = errors.clone();
            std::thread::Builder::new()
                .name("audit-log".into())
                .spawn(move || write_lines(sink, &received, &lost))?;
            LogWriter::Thread(lines)
        } else {
            LogWriter::Direct(Mutex::new(sink))
        };
        Ok(LogBackend {
            writer,
            strict: config.mode == Mode::BlockingStrict,
            format: config.format,
            errors,
        })
    }
}

impl Backend for LogBackend {
    fn process(&self, event: &[u8]) -> bool {
        let mut line = match self.format {
            Format::Json => event.to_vec(),
            Format::Legacy => legacy_line(event).into_bytes(),
        };
        line.push(b'\n');
        match &self.writer {
            // The writer only stops when the process does.
            LogWriter::Thread(lines) => lines.send(line).is_ok(),
            LogWriter::Direct(sink) => {
                let mut sink = sink.lock().unwrap_or_else(|e| e.into_inner());
                let written = sink.write(&line).and_then(|()| sink.flush());
                if let Err(err) = &written {
                    self.errors.inc();
                    tracing::error!(%err, "Unable to write the audit log");
                }
                written.is_ok() || !self.strict
            }
        }
    }
}

/// An event as upstream's `legacy` format summarizes it: the request's time, then its
/// id, stage, source, user, impersonation, namespace, URI and response code, Go-quoted.
fn legacy_line(event: &[u8]) -> String {
    let event: serde_json::Value = serde_json::from_slice(event).unwrap_or_default();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let or = |value: String, none: &str| {
        if value.is_empty() {
            none.to_string()
        } else {
            value
        }
    };
    let quoted_list = |groups: &serde_json::Value| {
        let groups = groups.as_array().into_iter().flatten();
        let quoted: Vec<String> = groups
            .map(|g| quote(g.as_str().unwrap_or_default()))
            .collect();
        quoted.join(",")
    };
    let username = text(&event["user"]["username"]);
    let groups = if username.is_empty() {
        String::new()
    } else {
        quoted_list(&event["user"]["groups"])
    };
    let impersonated = &event["impersonatedUser"];
    let (as_user, as_groups) = if impersonated.is_object() {
        let groups = &impersonated["groups"];
        let groups = if groups.is_array() {
            quoted_list(groups)
        } else {
            "<lookup>".into()
        };
        (text(&impersonated["username"]), groups)
    } else {
        ("<self>".into(), "<lookup>".into())
    };
    let response = event["responseStatus"]["code"]
        .as_i64()
        .map_or("<deferred>".to_string(), |code| code.to_string());
    format!(
        "{} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} \
         user-agent={} namespace={} uri={} response=\"{response}\"",
        rfc3339_nano(&text(&event["requestReceivedTimestamp"])),
        quote(&text(&event["auditID"])),
        quote(&text(&event["stage"])),
        quote(&or(text(&event["sourceIPs"][0]), "<unknown>")),
        quote(&text(&event["verb"])),
        quote(&or(username, "<none>")),
        quote(&or(groups, "<none>")),
        quote(&as_user),
        quote(&as_groups),
        quote(&text(&event["userAgent"])),
        quote(&or(text(&event["objectRef"]["namespace"]), "<none>")),
        quote(&text(&event["requestURI"])),
    )
}

/// A MicroTime as Go's RFC3339Nano layout prints it: no trailing zeros in the fraction.
fn rfc3339_nano(micro_time: &str) -> String {
    let Some((seconds, fraction)) = micro_time.strip_suffix('Z').and_then(|t| t.split_once('.'))
    else {
        return micro_time.to_string();
    };
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{seconds}Z")
    } else {
        format!("{seconds}.{fraction}Z")
    }
}

enum Sink {
    Stdout,
    File {
        path: PathBuf,
        file: BufWriter<File>,
        size: u64,
        rotation: Rotation,
    },
}

fn open_append(path: &Path) -> io::Result<BufWriter<File>> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    Ok(BufWriter::with_capacity(64 * 1024, file))
}

/// The writer thread: writes the lines waiting, then flushes, so a burst of events costs
/// few writes and an event is on disk as soon as the burst ends. A failed flush loses the
/// burst (counted as one error per line).
fn write_lines(mut sink: Sink, received: &mpsc::Receiver<Vec<u8>>, errors: &Counter) {
    while let Ok(first) = received.recv() {
        let mut line = Some(first);
        let mut burst = 0;
        while let Some(next) = line {
            burst += 1;
            if let Err(err) = sink.write(&next) {
                errors.inc();
                tracing::error!(%err, "Unable to write the audit log");
            }
            line = received.try_recv().ok();
        }
        if let Err(err) = sink.flush() {
            errors.inc_by(burst);
            tracing::error!(%err, "Unable to write the audit log");
        }
    }
}

impl Sink {
    fn open(path: &Path, rotation: Rotation) -> io::Result<Sink> {
        if path == Path::new("-") {
            return Ok(Sink::Stdout);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.get_ref().metadata()?.len();
        Ok(Sink::File {
            path: path.to_path_buf(),
            file,
            size,
            rotation,
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().flush(),
            Sink::File { file, .. } => file.flush(),
        }
    }

    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().lock().write_all(line),
            Sink::File {
                path,
                file,
                size,
                rotation,
            } => {
                let limit = rotation.max_size_mb * 1024 * 1024;
                if limit > 0 && *size > 0 && *size + line.len() as u64 > limit {
                    file.flush()?;
                    *file = rotate(path, *rotation)?;
                    *size = 0;
                }
                file.write_all(line)?;
                *size += line.len() as u64;
                Ok(())
            }
        }
    }
}

/// Moves the full log aside as `<name>-<timestamp><.ext>`, removes backups beyond the
/// limits, and opens a fresh log.
fn rotate(path: &Path, rotation: Rotation) -> io::Result<BufWriter<File>> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let stamp =
        kapi_apimachinery::gotime::format_rfc3339_micro(now.as_secs() as i64, now.subsec_micros());
    // lumberjack's 2006-01-02T15-04-05.000 layout: colons are not portable in file names.
    let stamp = stamp[..23].replace(':', "-");
    let backup = path.with_file_name(format!("{stem}-{stamp}{ext}"));
    std::fs::rename(path, &backup)?;
    prune(path, &stem, &ext, rotation);
    open_append(path)
}

/// Removes the oldest backups beyond `max_backups` and those older than `max_age_days`.
fn prune(path: &Path, stem: &str, ext: &str, rotation: Rotation) {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let Ok(entries) = std::fs::read_dir(dir.unwrap_or(Path::new("."))) else {
        return;
    };
    let prefix = format!("{stem}-");
    let mut backups: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(ext) && p != path
        })
        .collect();
    // The timestamps sort as the backups were made: newest last.
    backups.sort();
    let max_age = Duration::from_secs(rotation.max_age_days * 86_400);
    let too_old = |p: &PathBuf| {
        rotation.max_age_days > 0
            && p.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > max_age)
    };
    let excess = if rotation.max_backups > 0 {
        backups.len().saturating_sub(rotation.max_backups)
    } else {
        0
    };
    for (i, backup) in backups.iter().enumerate() {
        if i < excess || too_old(backup) {
            let _ = std::fs::remove_file(backup);
        }
    }
}

/// How the webhook backend batches (`--audit-webhook-batch-max-size`, `-max-wait`,
/// `--audit-webhook-initial-backoff`).
#[derive(Clone, Copy, Debug)]
pub struct Batching {
    pub max_size: usize,
    pub max_wait: Duration,
    pub initial_backoff: Duration,
}

impl Default for Batching {
    fn default() -> Self {
        Batching {
            max_size: 400,
            max_wait: Duration::from_secs(30),
            initial_backoff: Duration::from_secs(10),
        }
    }
}

/// Sends events to the server of a kubeconfig as audit.k8s.io/v1 EventLists: in batches
/// from its own task (`batch`), or one event per request that the request waits for
/// (`blocking`; `blocking-strict` also fails a request whose RequestReceived event could
/// not be sent).
pub struct WebhookBackend {
    sender: WebhookSender,
}

enum WebhookSender {
    Batched(async_mpsc::UnboundedSender<Vec<u8>>),
    Blocking(Arc<BlockingWebhook>),
}

/// A webhook called for each event.
struct BlockingWebhook {
    client: WebhookClient,
    initial_backoff: Duration,
    strict: bool,
    errors: Counter,
}

/// Attempts per batch before it is dropped (with an error in the log).
const WEBHOOK_ATTEMPTS: u32 = 3;
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

impl WebhookBackend {
    /// Starts sending on the current runtime; events it gives up on are counted in
    /// `metrics`.
    pub fn start(
        client: WebhookClient,
        batching: Batching,
        mode: Mode,
        metrics: &AuditMetrics,
    ) -> WebhookBackend {
        let errors = metrics.errors_of("webhook");
        let sender = if mode == Mode::Batch {
            let (events, received) = async_mpsc::unbounded_channel();
            tokio::spawn(send_batches(client, batching, received, errors));
            WebhookSender::Batched(events)
        } else {
            WebhookSender::Blocking(Arc::new(BlockingWebhook {
                client,
                initial_backoff: batching.initial_backoff,
                strict: mode == Mode::BlockingStrict,
                errors,
            }))
        };
        WebhookBackend { sender }
    }
}

impl Backend for WebhookBackend {
    fn process(&self, event: &[u8]) -> bool {
        match &self.sender {
            WebhookSender::Batched(events) => events.send(event.to_vec()).is_ok(),
            WebhookSender::Blocking(webhook) => {
                // Where nothing can wait (a response body dropped): sent in the background.
                tokio::spawn(webhook.clone().send(event.to_vec()));
                true
            }
        }
    }

    fn process_waiting(&self, event: &[u8]) -> Option<BoxFuture<'static, bool>> {
        match &self.sender {
            WebhookSender::Batched(_) => None,
            WebhookSender::Blocking(webhook) => {
                let webhook = webhook.clone();
                let event = event.to_vec();
                Some(Box::pin(async move {
                    let strict = webhook.strict;
                    webhook.send(event).await || !strict
                }))
            }
        }
    }
}

impl BlockingWebhook {
    /// Sends one event; false when every attempt failed.
    async fn send(self: Arc<Self>, event: Vec<u8>) -> bool {
        let body = event_list(&[event]);
        post_with_retries(&self.client, &body, 1, self.initial_backoff, &self.errors).await
    }
}

async fn send_batches(
    client: WebhookClient,
    batching: Batching,
    mut received: async_mpsc::UnboundedReceiver<Vec<u8>>,
    errors: Counter,
) {
    while let Some(first) = received.recv().await {
        let mut items = vec![first];
        let deadline = tokio::time::Instant::now() + batching.max_wait;
        while items.len() < batching.max_size {
            match tokio::time::timeout_at(deadline, received.recv()).await {
                Ok(Some(event)) => items.push(event),
                Ok(None) | Err(_) => break,
            }
        }
        let body = event_list(&items);
        post_with_retries(
            &client,
            &body,
            items.len(),
            batching.initial_backoff,
            &errors,
        )
        .await;
    }
}

/// POSTs an EventList of `count` events, retrying with a doubling backoff; false (the events
/// counted as lost) when every attempt failed.
async fn post_with_retries(
    client: &WebhookClient,
    body: &[u8],
    count: usize,
    initial_backoff: Duration,
    errors: &Counter,
) -> bool {
    let mut backoff = initial_backoff;
    for attempt in 1..=WEBHOOK_ATTEMPTS {
        match client.post(body.to_vec(), WEBHOOK_TIMEOUT).await {
            Ok(_) => return true,
            Err(err) if attempt == WEBHOOK_ATTEMPTS => {
                errors.inc_by(count as u64);
                tracing::error!(%err, count, "Unable to send audit events; dropped");
            }
            Err(err) => {
                tracing::warn!(%err, attempt, "Unable to send audit events; retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
    }
    false
}

/// An audit.k8s.io/v1 EventList of serialized events.
fn event_list(items: &[Vec<u8>]) -> Vec<u8> {
    let mut body =
        br#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#.to_vec();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_event_lists() {
        let list = event_list(&[br#"{"a":1}"#.to_vec(), br#"{"b":2}"#.to_vec()]);
        let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
        assert_eq!(list["kind"], "EventList");
        assert_eq!(list["items"], serde_json::json!([{"a": 1}, {"b": 2}]));
    }

    #[test]
    fn blocking_modes_write_before_returning_and_strict_reports_losses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let open = |path: &Path, mode| {
            let config = LogConfig {
                rotation: Rotation::default(),
                mode,
                format: Format::Json,
            };
            LogBackend::open(path, config, &AuditMetrics::default()).unwrap()
        };
        let log = open(&path, Mode::Blocking);
        assert!(log.process(br#"{"a":1}"#));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        // /dev/full refuses every write: only blocking-strict says the event was lost.
        let full = Path::new("/dev/full");
        let blocking = open(full, Mode::Blocking);
        assert!(blocking.process(b"{}"));
        assert_eq!(blocking.errors.get(), 1);
        let strict = open(full, Mode::BlockingStrict);
        assert!(!strict.process(b"{}"));
    }

    #[test]
    fn the_legacy_format_is_upstreams_one_line_summary() {
        let event = serde_json::json!({
            "auditID": "a1", "stage": "ResponseComplete", "verb": "get",
            "requestURI": "/api/v1/namespaces/ns/pods/p",
            "user": {"username": "jane", "groups": ["dev", "system:authenticated"]},
            "impersonatedUser": {"username": "bob"},
            "sourceIPs": ["10.0.0.1"], "userAgent": "kubectl/v1.35",
            "objectRef": {"namespace": "ns"}, "responseStatus": {"code": 200},
            "requestReceivedTimestamp": "2026-11-23T08:10:53.123400Z",
        });
        assert_eq!(
            legacy_line(event.to_string().as_bytes()),
            r#"2026-11-23T08:10:53.1234Z AUDIT: id="a1" stage="ResponseComplete" ip="10.0.0.1" method="get" user="jane" groups="\"dev\",\"system:authenticated\"" as="bob" asgroups="<lookup>" user-agent="kubectl/v1.35" namespace="ns" uri="/api/v1/namespaces/ns/pods/p" response="200""#
        );
        let anonymous = serde_json::json!({"stage": "RequestReceived",
            "requestReceivedTimestamp": "2026-11-23T08:10:53.000000Z"});
        assert_eq!(
            legacy_line(anonymous.to_string().as_bytes()),
            r#"2026-11-23T08:10:53Z AUDIT: id="" stage="RequestReceived" ip="<unknown>" method="" user="<none>" groups="<none>" as="<self>" asgroups="<lookup>" user-agent="" namespace="<none>" uri="" response="<deferred>""#
        );
    }

    #[test]
    fn modes_parse_as_upstream_names_them() {
        assert_eq!("blocking-strict".parse(), Ok(Mode::BlockingStrict));
        assert_eq!(
            "sometimes".parse::<Mode>(),
            Err(r#"invalid audit mode "sometimes", allowed modes are ["batch", "blocking", "blocking-strict"]"#.to_string())
        );
    }

    #[test]
    fn the_log_rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 1,
            max_age_days: 0,
        };
        let mut sink = Sink::File {
            file: open_append(&path).unwrap(),
            path: path.clone(),
            size: 0,
            rotation,
        };
        let line = vec![b'x'; 700 * 1024];
        for _ in 0..3 {
            sink.write(&line).unwrap();
            sink.flush().unwrap();
            // Backups are named by the millisecond.
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(names[1], "audit.log");
        assert!(
            names[0].starts_with("audit-") && names[0].ends_with(".log"),
            "{names:?}"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), line.len() as u64);
    }
}
