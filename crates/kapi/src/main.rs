//! `kapi`: a Kubernetes API server. `kapi serve` starts it; see `kapi serve --help`.

use std::process::ExitCode;

use clap::Parser;
use kapi::flags::{Cli, Command};
use kapi::{logging, serve};

/// mimalloc rather than the system allocator: a request builds and drops many small JSON
/// values on every worker thread, where glibc's malloc spent about a third of the CPU time
/// of the create benchmarks (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let Command::Serve(options) = Cli::parse().command;
    logging::init(options.verbosity);
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
    match runtime.block_on(serve::run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
