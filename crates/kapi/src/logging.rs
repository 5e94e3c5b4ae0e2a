//! Logging to stderr in tracing-subscriber's compact format, at the level `--v` asks for
//! (klog's scale), or as `RUST_LOG` says when it is set.

use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// kapi's own crates, which `--v` raises; dependencies stay at info until `--v=5`.
const KAPI_TARGETS: [&str; 8] = [
    "kapi",
    "kapi_controlplane",
    "kapi_server",
    "kapi_storage",
    "kapi_apimachinery",
    "kapi_builtin",
    "kapi_apiextensions",
    "kapi_admission",
];

/// Installs the global subscriber.
pub fn init(verbosity: u8) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| Targets::from_str(&spec).ok())
        .unwrap_or_else(|| targets(verbosity));
    let format = tracing_subscriber::fmt::layer()
        .compact()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    tracing_subscriber::registry()
        .with(format)
        .with(filter)
        .init();
}

/// The levels for a klog verbosity: 0-2 info, 3-4 debug for kapi (its access log is at
/// debug, as upstream's is at 3), 5 and up trace for kapi and debug for the rest.
fn targets(verbosity: u8) -> Targets {
    use tracing::level_filters::LevelFilter;
    let (own, others) = match verbosity {
        0..=2 => (LevelFilter::INFO, LevelFilter::INFO),
        3..=4 => (LevelFilter::DEBUG, LevelFilter::INFO),
        _ => (LevelFilter::TRACE, LevelFilter::DEBUG),
    };
    KAPI_TARGETS
        .iter()
        .fold(Targets::new().with_default(others), |targets, target| {
            targets.with_target(*target, own)
        })
}
