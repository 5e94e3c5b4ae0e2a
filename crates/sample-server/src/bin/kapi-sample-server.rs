//! The sample extension API server as a program: the wardle.example.com group on an embedded
//! store, authenticating and authorizing through the API server that aggregates it.
//!
//! ```text
//! kapi-sample-server --kubeconfig <data-dir>/admin.kubeconfig --data-dir /tmp/wardle \
//!     --tls-cert-file serving.crt --tls-private-key-file serving.key --secure-port 8443
//! ```

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use kapi_sample_server::delegated::{self, Delegation};
use kapi_server::{ServerConfig, TlsConfig};
use kapi_storage::{EmbeddedConfig, EmbeddedStore, Store};

/// The sample extension API server (wardle.example.com Flunders and Fischers).
#[derive(Debug, Parser)]
#[command(name = "kapi-sample-server")]
struct Flags {
    /// The kubeconfig of the API server that authenticates and authorizes requests
    /// (upstream's --authentication-kubeconfig and --authorization-kubeconfig in one).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Where the embedded store lives.
    #[arg(long)]
    data_dir: PathBuf,
    /// The serving certificate (for `<service>.<namespace>.svc`, as the aggregator verifies).
    #[arg(long)]
    tls_cert_file: PathBuf,
    /// Its key.
    #[arg(long)]
    tls_private_key_file: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// The port to listen on.
    #[arg(long, default_value_t = 8443)]
    secure_port: u16,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let flags = Flags::parse();
    let delegation = Delegation::fetch(&flags.kubeconfig)
        .await
        .map_err(anyhow::Error::msg)
        .context("reading extension-apiserver-authentication")?;
    let tls = TlsConfig::from_pem_files(&flags.tls_cert_file, &flags.tls_private_key_file, None)?;
    let mut config = ServerConfig::new(tls);
    config.bind_address = flags.bind_address;
    config.secure_port = flags.secure_port;
    delegation.configure(&mut config);
    std::fs::create_dir_all(&flags.data_dir)?;
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(EmbeddedConfig::new(
        flags.data_dir.join("wardle.redb"),
    ))?);
    let mut server = kapi_sample_server::server(config, store, "/registry")?;
    server.add_authenticator(
        delegated::authenticator(&flags.kubeconfig).map_err(anyhow::Error::msg)?,
    );
    server.set_authorizer(delegated::authorizer(&flags.kubeconfig).map_err(anyhow::Error::msg)?);
    let listening = server.bind().await?;
    tracing::info!("wardle serving securely on {}", listening.local_addr()?);
    listening.serve(shutdown()).await?;
    Ok(())
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
