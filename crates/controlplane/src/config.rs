//! The control plane's config, completed from its options: what every server of the chain
//! shares (the data directory's lock, the PKI and service-account tokens, the storage, the
//! Service resolver, the advertised address), prepared before any server is built.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use kapi_builtin::token::ServiceAccountTokens;

use crate::addresses::{advertise_address, local_url, serving_names};
use crate::data_dir::{self, DataDirLock};
use crate::options::ServeOptions;
use crate::pki::{self, PkiFiles};
use crate::resolver::EndpointsResolver;
use crate::storage::Storage;
use crate::store_command::{self, SnapshotSocket};

/// The completed config of the server chain.
pub(crate) struct Config {
    pub options: ServeOptions,
    /// When the start began, for the startup log line.
    pub started: Instant,
    /// Held while the server runs: a second kapi on the data directory fails at once.
    pub data_dir_lock: DataDirLock,
    /// The address other members of the cluster reach this server at.
    pub advertise: IpAddr,
    pub pki: PkiFiles,
    pub tokens: Arc<ServiceAccountTokens>,
    pub storage: Storage,
    /// The embedded store's snapshot socket, if the store is embedded.
    pub snapshots: Option<SnapshotSocket>,
    /// Finds Services' endpoints for webhooks (admission, conversion).
    pub resolver: Arc<EndpointsResolver>,
}

impl Config {
    /// Completes the config of `options`: locks the data directory, then prepares the PKI,
    /// the service-account tokens and the storage.
    pub(crate) async fn complete(mut options: ServeOptions) -> Result<Config> {
        let started = Instant::now();
        // Before anything in the data directory is read or written: a second kapi on it must
        // fail without touching what the running one uses (its kubeconfig above all).
        let data_dir_lock = data_dir::lock(&options.data_dir)?;
        let advertise = advertise_address(&options);
        let pki = pki::ensure(
            &options.data_dir,
            &serving_names(&options, advertise),
            &local_url(&options),
        )
        .context("preparing the PKI")?;
        default_front_proxy(&mut options, &pki);
        let tokens = Arc::new(pki::service_account_tokens(
            &pki,
            &options.service_account_issuer,
            &options.api_audiences,
            options.service_account_signing_key_file.as_deref(),
            &options.service_account_key_file,
        )?);
        let storage = Storage::open(&options).await?;
        let snapshots = storage
            .embedded
            .clone()
            .and_then(|store| store_command::serve_snapshots(&options.data_dir, store));
        Ok(Config {
            options,
            started,
            data_dir_lock,
            advertise,
            pki,
            tokens,
            storage,
            snapshots,
            resolver: EndpointsResolver::new(),
        })
    }
}

/// The aggregator's front-proxy identity, as kubeadm sets a cluster up: without
/// `--proxy-client-cert-file` it is the PKI's front-proxy-client certificate, and without
/// `--requestheader-client-ca-file` too, front proxies are trusted by the PKI's front-proxy
/// CA, with that certificate's name allowed and the standard X-Remote-* headers (unless the
/// flags name others). Extension API servers read this from the
/// `extension-apiserver-authentication` ConfigMap.
fn default_front_proxy(options: &mut ServeOptions, pki: &PkiFiles) {
    if options.proxy_client_cert_file.is_some() {
        return;
    }
    options.proxy_client_cert_file = Some(pki.front_proxy_client_cert.clone());
    options.proxy_client_key_file = Some(pki.front_proxy_client_key.clone());
    if options.requestheader_client_ca_file.is_some() {
        return;
    }
    options.requestheader_client_ca_file = Some(pki.front_proxy_ca.clone());
    let standard = kapi_server::authn::RequestHeaderConfig::standard_headers();
    for (flag, default) in [
        (
            &mut options.requestheader_allowed_names,
            vec![pki::FRONT_PROXY_CLIENT.to_string()],
        ),
        (
            &mut options.requestheader_username_headers,
            standard.username_headers,
        ),
        (&mut options.requestheader_uid_headers, standard.uid_headers),
        (
            &mut options.requestheader_group_headers,
            standard.group_headers,
        ),
        (
            &mut options.requestheader_extra_headers_prefix,
            standard.extra_header_prefixes,
        ),
    ] {
        if flag.is_empty() {
            *flag = default;
        }
    }
}
