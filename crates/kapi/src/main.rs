//! `kapi`: a Kubernetes API server. `kapi serve` starts it; see `kapi serve --help`.

use std::process::ExitCode;

use clap::Parser;
use kapi::flags::{Cli, Command, ServeOptions};
use kapi::{logging, serve, startup_code, store_command};

/// mimalloc rather than the system allocator: a request builds and drops many small JSON
/// values on every worker thread, where glibc's malloc spent about a third of the CPU time
/// of the create benchmarks (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator's settings, applied before the runtime's first allocation.
#[used]
#[unsafe(link_section = ".init_array")]
static CONFIGURE_ALLOCATOR: extern "C" fn() = kapi::allocator::configure;

/// Raises the soft limit on open files to the hard limit, as Go's runtime does for
/// kube-apiserver at start: every connection is a descriptor, and systemd's default soft
/// limit of 1,024 would let a thousand idle clients lock everyone out.
fn raise_open_file_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(err) => tracing::warn!(%err, "raising the open-file limit"),
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(options) => run_server(options),
        Command::Store(command) => {
            logging::init(0);
            match store_command::run(command) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("error: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// `kapi serve`.
fn run_server(options: ServeOptions) -> ExitCode {
    logging::init(options.verbosity);
    raise_open_file_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            tracing::error!(%err, "starting the runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve::run(options, startup_code::release_soon())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
