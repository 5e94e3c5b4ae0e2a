//! The options of kapi's servers, with kube-apiserver's flag names, defaults and Go duration
//! syntax, as upstream's options packages bind theirs to flags: `kapi serve`'s
//! ([`ServeOptions`]) and `kapi store`'s ([`StoreCommand`]).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Subcommand};
use kapi_server::storage_codec::StorageMediaType;

/// `kapi store`: what `etcdctl snapshot save`, `etcdutl snapshot restore` and an integrity
/// check give etcd, for the embedded store.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Verify the store offline (no kapi may be serving the data directory): every page and
    /// every value against its checksum. Exits non-zero, naming the damage, if any.
    Check(StoreOptions),
    /// Save a snapshot of the store, consistent at one revision: from the kapi serving the
    /// data directory while it serves, or from the store file when none does.
    Snapshot(SnapshotOptions),
    /// Restore a snapshot as the store of a data directory that holds none (move a damaged
    /// store file away first). The snapshot is verified whole before the store is in place.
    Restore(SnapshotOptions),
}

/// The flags of `kapi store check`.
#[derive(Debug, Args)]
pub struct StoreOptions {
    /// The data directory, as given to `kapi serve`.
    #[arg(long, default_value = "./kapi-data")]
    pub data_dir: PathBuf,
}

/// The flags of `kapi store snapshot` and `kapi store restore`.
#[derive(Debug, Args)]
pub struct SnapshotOptions {
    /// The data directory, as given to `kapi serve`.
    #[arg(long, default_value = "./kapi-data")]
    pub data_dir: PathBuf,

    /// The snapshot file: written (through `<file>.part`, renamed once verified) or read.
    pub file: PathBuf,
}

/// The flags of `kapi serve`.
#[derive(Debug, Args)]
pub struct ServeOptions {
    /// The IP address to listen on; 0.0.0.0 or :: for all interfaces.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// The port to serve HTTPS on.
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,

    /// The directory for the embedded store, the PKI and the admin kubeconfig.
    #[arg(long, default_value = "./kapi-data")]
    pub data_dir: PathBuf,

    /// etcd servers to store in instead of the embedded store (scheme://ip:port, comma
    /// separated).
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,

    /// SSL certification file used to secure etcd communication.
    #[arg(long)]
    pub etcd_certfile: Option<PathBuf>,

    /// SSL key file used to secure etcd communication.
    #[arg(long)]
    pub etcd_keyfile: Option<PathBuf>,

    /// The prefix to prepend to all resource paths in storage.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,

    /// The form built-in objects are written in: application/json, application/yaml or
    /// application/vnd.kubernetes.protobuf. Default: protobuf on etcd (as kube-apiserver),
    /// JSON on the embedded store (kapi's fastest: responses are spliced from stored JSON).
    /// Reads take any of them; custom resources, CRDs and APIServices are always JSON.
    #[arg(long)]
    pub storage_media_type: Option<StorageMediaType>,

    /// How many MiB of protobuf encodings the watch caches keep, so that protobuf LISTs of
    /// objects already sent in protobuf copy them as JSON LISTs copy stored JSON; 0 keeps
    /// none. kapi's own (kube-apiserver encodes each response).
    #[arg(long, default_value_t = kapi_server::cacher::DEFAULT_BUDGET >> 20)]
    pub watch_cache_protobuf_mb: usize,

    /// The file (an EncryptionConfiguration) saying how resources are encrypted in storage:
    /// identity, aescbc, aesgcm, secretbox and KMS v2 providers, values in kube-apiserver's
    /// format.
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,

    /// Reads --encryption-provider-config again every minute and uses it when it changed,
    /// is valid and its KMS plugins are healthy, without a restart.
    #[arg(long)]
    pub encryption_provider_config_automatic_reload: bool,

    /// The interval of compaction requests; 0s disables compaction.
    #[arg(long, default_value = "5m0s", value_parser = go_duration)]
    pub etcd_compaction_interval: Duration,

    /// How long Events are kept after their last write (on etcd through leases, as
    /// kube-apiserver keeps them; in the embedded store by its own expiry); 0s keeps them
    /// until deleted.
    #[arg(long, default_value = "1h0m0s", value_parser = go_duration)]
    pub event_ttl: Duration,

    /// File with the default x509 serving certificate (chain) for HTTPS; generated in the
    /// data directory when not given.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// File with the default x509 private key matching --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// Client certificates signed by one of these authorities authenticate as their common
    /// name; kapi's own CA when not given.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// Front-proxy authentication: client certificates of this CA may name the request's
    /// user in the `--requestheader-*-headers`. When neither this nor
    /// `--proxy-client-cert-file` is given, the front-proxy CA kapi generates in its data
    /// directory, with the allowed name front-proxy-client and the X-Remote-* headers, as
    /// kubeadm sets a cluster up.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Common names the front proxies' certificates may have (any when empty); comma
    /// separated or repeatable.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// Headers naming the user of a front proxy's request, the first present wins
    /// (usually X-Remote-User).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,

    /// Headers naming the user's uid (usually X-Remote-Uid).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,

    /// Headers naming the user's groups, every value counting (usually X-Remote-Group).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,

    /// Prefixes of the headers holding the user's extra (usually X-Remote-Extra-).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// The client certificate the aggregator presents to extension API servers; the
    /// front-proxy-client certificate kapi generates in its data directory when not given.
    #[arg(long, requires = "proxy_client_key_file")]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// The key of --proxy-client-cert-file.
    #[arg(long, requires = "proxy_client_cert_file")]
    pub proxy_client_key_file: Option<PathBuf>,

    /// Proxy requests for aggregated APIs to an endpoint of their Service (from its
    /// EndpointSlices, else its Endpoints) rather than to its ClusterIP. True by default,
    /// unlike kube-apiserver: kapi runs without kube-proxy, so a ClusterIP leads nowhere
    /// unless the host kapi runs on routes the service network.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true")]
    pub enable_aggregator_routing: bool,

    /// Extra subject alternative names (DNS names or IPs) for the generated serving
    /// certificate; repeatable or comma separated.
    #[arg(long, value_delimiter = ',')]
    pub tls_san: Vec<String>,

    /// If true, replace the max-in-flight handler with an enhanced one that queues and
    /// dispatches with priority and fairness.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true")]
    pub enable_priority_and_fairness: bool,

    /// The maximum number of non-mutating requests in flight at a given time; 0 for no limit.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// The maximum number of mutating requests in flight at a given time; 0 for no limit.
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// The longest a non-long-running request may take before it times out.
    #[arg(long, default_value = "1m0s", value_parser = go_duration)]
    pub request_timeout: Duration,

    /// The IP address to advertise to members of the cluster; defaults to --bind-address, or
    /// the first non-loopback address when bound to all interfaces.
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,

    /// Serve requests without credentials as system:anonymous.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub anonymous_auth: bool,

    /// Authenticate bootstrap tokens (`<id>.<secret>`, kept as `bootstrap.kubernetes.io/token`
    /// Secrets in kube-system) as `system:bootstrap:<id>` in `system:bootstrappers`.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_bootstrap_token_auth: bool,

    /// A CSV file of static bearer tokens: `token,user,uid[,"group1,group2"]` per line.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,

    /// An AuthenticationConfiguration file (apiserver.config.k8s.io): JWT issuers whose
    /// tokens authenticate, with their audiences and claim mappings.
    #[arg(long)]
    pub authentication_config: Option<PathBuf>,

    /// The authorizers to ask, in order, comma separated (AlwaysAllow, AlwaysDeny, Node,
    /// RBAC, Webhook); RBAC when neither this nor `--authorization-config` is given. Members of
    /// system:masters are always allowed.
    #[arg(long, value_delimiter = ',', value_parser = crate::authorization::Mode::parse)]
    pub authorization_mode: Vec<crate::authorization::Mode>,

    /// An AuthorizationConfiguration file (apiserver.config.k8s.io/v1): the authorizers in
    /// order, webhooks with their timeouts, caching, failure policies and match conditions.
    #[arg(long)]
    pub authorization_config: Option<PathBuf>,

    /// An audit Policy file (audit.k8s.io/v1): which requests are audited, at what level.
    /// Without it nothing is audited.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,

    /// Where the log backend writes audit events, one JSON object per line (`-`: standard
    /// output). Without it there is no log backend.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,

    /// Days to keep rotated audit logs (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,

    /// How many rotated audit logs to keep (0: all).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,

    /// Megabytes an audit log may grow to before it is rotated (0: never rotated).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,

    /// The audit log's format: `json` (one event per line) or `legacy` (a line of text
    /// per event).
    #[arg(long, default_value = "json")]
    pub audit_log_format: String,

    /// The log backend's mode: `blocking` (each event is written before its request goes
    /// on), `blocking-strict` (and a request fails when its first event cannot be written)
    /// or `batch` (a writer thread writes events in order; requests never wait on the disk).
    #[arg(long, default_value = "blocking")]
    pub audit_log_mode: String,

    /// A kubeconfig naming the audit webhook, which receives batches of events
    /// (audit.k8s.io/v1 EventList).
    #[arg(long)]
    pub audit_webhook_config_file: Option<PathBuf>,

    /// The webhook backend's mode: `batch` (batches sent from a task of their own),
    /// `blocking` (each event sent before its request goes on) or `blocking-strict` (and a
    /// request fails when its first event cannot be sent).
    #[arg(long, default_value = "batch")]
    pub audit_webhook_mode: String,

    /// Events per batch sent to the audit webhook.
    #[arg(long, default_value_t = 400)]
    pub audit_webhook_batch_max_size: usize,

    /// How long a batch waits to fill before it is sent.
    #[arg(long, default_value = "30s", value_parser = go_duration)]
    pub audit_webhook_batch_max_wait: Duration,

    /// The wait before retrying a failed webhook batch (doubled for each retry).
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    pub audit_webhook_initial_backoff: Duration,

    /// A kubeconfig naming a webhook that authenticates bearer tokens no other authenticator
    /// knows (TokenReview).
    #[arg(long)]
    pub authentication_token_webhook_config_file: Option<PathBuf>,

    /// How long the token webhook's users are cached.
    #[arg(long, default_value = "2m0s", value_parser = go_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,

    /// The TokenReview version sent to the token webhook: `v1` or `v1beta1`.
    #[arg(long, default_value = "v1")]
    pub authentication_token_webhook_version: String,

    /// A kubeconfig naming the authorization webhook (`--authorization-mode=Webhook`).
    #[arg(long)]
    pub authorization_webhook_config_file: Option<PathBuf>,

    /// How long the webhook's allowed answers are cached.
    #[arg(long, default_value = "5m0s", value_parser = go_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,

    /// How long the webhook's other answers are cached.
    #[arg(long, default_value = "30s", value_parser = go_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,

    /// The kube-controller-manager controllers kapi runs in process, as kube-controller-
    /// manager's flag names them: `*` for all (the default), `name` to enable, `-name` to
    /// disable (serviceaccount-controller: each namespace's `default` ServiceAccount;
    /// serviceaccount-token-controller: legacy tokens in service-account-token Secrets;
    /// root-ca-certificate-publisher-controller: each namespace's `kube-root-ca.crt`;
    /// persistentvolumeclaim-protection-controller and persistentvolume-protection-controller:
    /// deleted claims and volumes released once unused).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// Run the controllers only while this replica holds kube-system's
    /// `kube-controller-manager` Lease, as kube-controller-manager's leader election: of
    /// several kapi replicas on one etcd (or a kube-controller-manager beside kapi), one runs
    /// them.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true")]
    pub leader_elect: bool,

    /// The CA certificate (PEM) the CSR signing controller signs every `kubernetes.io`
    /// signer's requests with; the data directory's CA when neither this nor a signer's
    /// own file is given.
    #[arg(long)]
    pub cluster_signing_cert_file: Option<PathBuf>,

    /// The CA key (PEM) that goes with `--cluster-signing-cert-file`.
    #[arg(long)]
    pub cluster_signing_key_file: Option<PathBuf>,

    /// The CA certificate and key of the `kubernetes.io/kube-apiserver-client` signer.
    #[arg(long)]
    pub cluster_signing_kube_apiserver_client_cert_file: Option<PathBuf>,
    #[arg(long)]
    pub cluster_signing_kube_apiserver_client_key_file: Option<PathBuf>,

    /// The CA certificate and key of the `kubernetes.io/kube-apiserver-client-kubelet`
    /// signer.
    #[arg(long)]
    pub cluster_signing_kubelet_client_cert_file: Option<PathBuf>,
    #[arg(long)]
    pub cluster_signing_kubelet_client_key_file: Option<PathBuf>,

    /// The CA certificate and key of the `kubernetes.io/kubelet-serving` signer.
    #[arg(long)]
    pub cluster_signing_kubelet_serving_cert_file: Option<PathBuf>,
    #[arg(long)]
    pub cluster_signing_kubelet_serving_key_file: Option<PathBuf>,

    /// The CA certificate and key of the `kubernetes.io/legacy-unknown` signer.
    #[arg(long)]
    pub cluster_signing_legacy_unknown_cert_file: Option<PathBuf>,
    #[arg(long)]
    pub cluster_signing_legacy_unknown_key_file: Option<PathBuf>,

    /// The longest validity of certificates the CSR signing controller issues (a
    /// request's `spec.expirationSeconds` can ask for less).
    #[arg(long, default_value = "8760h0m0s", value_parser = go_duration)]
    pub cluster_signing_duration: Duration,

    /// How long an auto-generated legacy service account token Secret must go unused
    /// before it is invalidated, and stay invalid before it is deleted.
    #[arg(long, default_value = "8760h0m0s", value_parser = go_duration)]
    pub legacy_service_account_token_clean_up_period: Duration,

    /// How many terminated pods may exist before the pod garbage collector deletes the
    /// oldest; 0 keeps them all.
    #[arg(long, default_value_t = 12500)]
    pub terminated_pod_gc_threshold: usize,

    /// How long the controllers' lease lasts unrenewed before another replica takes it.
    #[arg(long, default_value = "15s", value_parser = go_duration)]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew before it stops its controllers.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    pub leader_elect_renew_deadline: Duration,

    /// The wait between attempts to take or renew the lease.
    #[arg(long, default_value = "2s", value_parser = go_duration)]
    pub leader_elect_retry_period: Duration,

    /// An AdmissionConfiguration file (apiserver.config.k8s.io/v1): per-plugin configuration,
    /// inline or by path. kapi reads PodSecurity's.
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,

    /// Admission plugins to enable besides the default ones, comma separated; they run in
    /// kube-apiserver's order whatever the order here.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// Admission plugins to disable, even default ones, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,

    /// Seconds new pods tolerate a `node.kubernetes.io/not-ready` NoExecute taint
    /// (DefaultTolerationSeconds admission).
    #[arg(long, default_value_t = 300)]
    pub default_not_ready_toleration_seconds: i64,

    /// Seconds new pods tolerate a `node.kubernetes.io/unreachable` NoExecute taint.
    #[arg(long, default_value_t = 300)]
    pub default_unreachable_toleration_seconds: i64,

    /// How long to keep serving, with /readyz failing, after a shutdown signal.
    #[arg(long, default_value = "0s", value_parser = go_duration)]
    pub shutdown_delay_duration: Duration,

    /// The CIDR Service ClusterIPs are allocated from; its first IP is the `kubernetes`
    /// Service's.
    #[arg(long, default_value = "10.96.0.0/12", value_parser = service_cidr)]
    pub service_cluster_ip_range: kapi_builtin::Cidr,

    /// The range of ports NodePort and LoadBalancer Services are given (`first-last`).
    #[arg(long, default_value = "30000-32767", value_parser = port_range)]
    pub service_node_port_range: kapi_builtin::PortRange,

    /// How the `kubernetes` Service's Endpoints are kept: `lease` (every live server, by
    /// the leases servers renew), `master-count` (each server adds itself, the list cut to
    /// `--apiserver-count`) or `none`.
    #[arg(long, default_value = "lease", value_parser = ["master-count", "lease", "none"])]
    pub endpoint_reconciler_type: String,

    /// The number of API servers running, with `--endpoint-reconciler-type=master-count`.
    #[arg(long, default_value_t = 1, value_parser = apiserver_count)]
    pub apiserver_count: usize,

    /// Files with PEM public (or private) keys that verify service-account tokens;
    /// repeatable. The data directory's `pki/sa.pub` when not given.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,

    /// File with the PEM private key service-account tokens are signed with; the data
    /// directory's `pki/sa.key` (made on first start) when not given.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// The issuer (`iss` claim) of service-account tokens, also their default audience.
    #[arg(long, default_value = kapi_builtin::token::DEFAULT_ISSUER)]
    pub service_account_issuer: String,

    /// The audiences API requests' tokens must be for (comma separated); the issuer when
    /// not given.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// The `jwks_uri` the issuer discovery document names; this server's
    /// `/openid/v1/jwks` at its advertised address when not given.
    #[arg(long)]
    pub service_account_jwks_uri: Option<String>,

    /// Log verbosity, as klog's: 0-2 info, 3-4 debug (access logs), 5 and up trace.
    /// RUST_LOG, when set, takes precedence.
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    pub verbosity: u8,
}

impl ServeOptions {
    /// How the `kubernetes` Endpoints are kept, from `--endpoint-reconciler-type` and
    /// `--apiserver-count`.
    pub fn endpoint_reconciler(&self) -> kapi_builtin::EndpointReconciler {
        match self.endpoint_reconciler_type.as_str() {
            "master-count" => kapi_builtin::EndpointReconciler::MasterCount(self.apiserver_count),
            "none" => kapi_builtin::EndpointReconciler::None,
            _ => kapi_builtin::EndpointReconciler::Lease,
        }
    }

    /// The form built-in objects are written in: the flag's, else the backend's default.
    pub fn storage_media_type(&self) -> StorageMediaType {
        match self.storage_media_type {
            Some(media_type) => media_type,
            None if self.etcd_servers.is_empty() => StorageMediaType::Json,
            None => StorageMediaType::Protobuf,
        }
    }
}

/// Parses `--apiserver-count`: a positive number.
fn apiserver_count(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(count) if count > 0 => Ok(count),
        _ => Err(format!(
            "--apiserver-count should be a positive number, but value '{value}' provided"
        )),
    }
}

/// Parses `--service-cluster-ip-range`.
fn service_cidr(value: &str) -> Result<kapi_builtin::Cidr, String> {
    kapi_builtin::Cidr::parse(value).map_err(|err| err.to_string())
}

/// Parses `--service-node-port-range`.
fn port_range(value: &str) -> Result<kapi_builtin::PortRange, String> {
    kapi_builtin::PortRange::parse(value).map_err(|err| err.to_string())
}

/// Parses a flag value in Go's duration syntax (`60s`, `1m30s`).
fn go_duration(value: &str) -> Result<Duration, String> {
    kapi_apimachinery::goduration::parse(value).map_err(|err| err.to_string())
}
