//! The command line: `kapi serve` and `kapi store`, whose options the control plane defines.

use clap::{Parser, Subcommand};
pub use kapi_controlplane::options::{ServeOptions, StoreCommand};

/// kapi, a Kubernetes API server.
#[derive(Debug, Parser)]
#[command(name = "kapi", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
// Parsed once per process: boxing the serve flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Kubernetes API.
    Serve(ServeOptions),
    /// Check, snapshot or restore a data directory's embedded store.
    #[command(subcommand)]
    Store(StoreCommand),
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    #[test]
    fn defaults_are_kube_apiservers() {
        let cli = Cli::try_parse_from(["kapi", "serve"]).unwrap();
        let Command::Serve(options) = cli.command else {
            panic!("kapi serve flags")
        };
        assert_eq!(options.secure_port, 6443);
        assert_eq!(options.etcd_compaction_interval, Duration::from_secs(300));
        assert_eq!(options.request_timeout, Duration::from_secs(60));
        assert!(options.anonymous_auth);
        assert!(options.etcd_servers.is_empty());
        assert_eq!(options.service_cluster_ip_range.to_string(), "10.96.0.0/12");
        assert_eq!(options.service_node_port_range.to_string(), "30000-32767");
    }

    #[test]
    fn parses_service_ranges() {
        let cli = Cli::try_parse_from([
            "kapi",
            "serve",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--service-node-port-range=31000-31009",
        ])
        .unwrap();
        let Command::Serve(options) = cli.command else {
            panic!("kapi serve flags")
        };
        assert_eq!(options.service_cluster_ip_range.to_string(), "10.0.0.0/24");
        assert_eq!(options.service_node_port_range.size, 10);
        for bad in [
            "--service-cluster-ip-range=10.0.0.0",
            "--service-node-port-range=9-1",
        ] {
            assert!(
                Cli::try_parse_from(["kapi", "serve", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn service_account_flags_are_kube_apiservers() {
        let Command::Serve(defaults) = Cli::try_parse_from(["kapi", "serve"]).unwrap().command
        else {
            panic!("kapi serve flags")
        };
        assert_eq!(
            defaults.service_account_issuer,
            "https://kubernetes.default.svc.cluster.local"
        );
        assert!(defaults.service_account_key_file.is_empty());
        assert!(defaults.service_account_signing_key_file.is_none());
        let cli = Cli::try_parse_from([
            "kapi",
            "serve",
            "--service-account-issuer=https://issuer.example",
            "--service-account-signing-key-file=/k/sa.key",
            "--service-account-key-file=/k/a.pub",
            "--service-account-key-file=/k/b.pub",
        ])
        .unwrap();
        let Command::Serve(options) = cli.command else {
            panic!("kapi serve flags")
        };
        assert_eq!(options.service_account_issuer, "https://issuer.example");
        assert_eq!(
            options.service_account_signing_key_file,
            Some(PathBuf::from("/k/sa.key"))
        );
        assert_eq!(
            options.service_account_key_file,
            [PathBuf::from("/k/a.pub"), PathBuf::from("/k/b.pub")]
        );
    }

    #[test]
    fn parses_go_style_values() {
        let cli = Cli::try_parse_from([
            "kapi",
            "serve",
            "--request-timeout=1m30s",
            "--etcd-servers=https://a:2379,https://b:2379",
            "--tls-san",
            "a.example",
            "--tls-san=b.example,10.0.0.1",
            "--anonymous-auth=false",
            "--v=4",
        ])
        .unwrap();
        let Command::Serve(options) = cli.command else {
            panic!("kapi serve flags")
        };
        assert_eq!(options.request_timeout, Duration::from_secs(90));
        assert_eq!(options.etcd_servers, ["https://a:2379", "https://b:2379"]);
        assert_eq!(options.tls_san, ["a.example", "b.example", "10.0.0.1"]);
        assert!(!options.anonymous_auth);
        assert_eq!(options.verbosity, 4);
        assert!(Cli::try_parse_from(["kapi", "serve", "--request-timeout=5"]).is_err());
    }
}
