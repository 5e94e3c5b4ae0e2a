//! [`GenericApiServer`]: the handler chain around a route, served over TLS, with health
//! checks, post-start hooks and a graceful shutdown.
//!
//! Shutdown, as kube-apiserver's: when the shutdown future resolves, `/readyz` fails at once;
//! after the shutdown delay the listener closes, connections drain (HTTP/2 GOAWAY, HTTP/1.1
//! without keep-alive), long-running responses end, and requests in flight finish, for at most
//! the shutdown timeout; then [`ListeningServer::serve`] returns.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use http::Response;
use kapi_apimachinery::request_info::RequestInfoFactory;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceBuilder;
use tower::util::BoxCloneService;

use crate::audit::Auditor;
use crate::authn::{Authentication, Authenticator, RequestHeaderAuthenticator, X509Authenticator};
use crate::authz::{AuthenticatedAuthorizer, Authorizer};
use crate::body::{Body, BoxError};
use crate::config::ServerConfig;
use crate::filters::audit::AuditLayer;
use crate::filters::authentication::AuthenticationLayer;
use crate::filters::authorization::AuthorizationLayer;
use crate::filters::flow_control::{FlowControl, FlowControlLayer};
use crate::filters::impersonation::ImpersonationLayer;
use crate::filters::max_inflight::MaxInFlightLayer;
use crate::filters::metrics::MetricsLayer;
use crate::filters::panic::PanicRecoveryLayer;
use crate::filters::pretty::PrettyJsonLayer;
use crate::filters::request_info::RequestInfoLayer;
use crate::filters::request_log::RequestLogLayer;
use crate::filters::timeout::TimeoutLayer;
use crate::healthz::{HealthCheck, HealthChecks, HealthEndpoint};
use crate::loopback::Loopback;
use crate::metrics::Metrics;
pub use crate::nonresource::NonResourceHandler;
use crate::nonresource::{Endpoints, NonResourceRouter};
use crate::responses::not_found;
use crate::serving::{TlsError, accept_loop, wait_for_connections};
use crate::version::VersionInfo;

/// The service at the end of the chain: the REST handlers and everything not served by this
/// crate. Requests reach it authenticated, authorized and with their `RequestInfo`.
pub type Route = BoxCloneService<http::Request<Body>, Response<Body>, Infallible>;

/// The response of `route` to `request`, as a boxed future: a future that named the request
/// body type would trip rustc's check that it is `Send` for every lifetime.
pub(crate) fn call_route(
    route: Route,
    request: http::Request<Body>,
) -> BoxFuture<'static, Result<Response<Body>, Infallible>> {
    Box::pin(tower::ServiceExt::oneshot(route, request))
}

/// A route that answers every request with upstream's `404 page not found`.
pub fn not_found_route() -> Route {
    BoxCloneService::new(tower::service_fn(|_: http::Request<Body>| async {
        Ok::<_, Infallible>(not_found())
    }))
}

/// The server could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("failed to listen on {address}: {source}")]
    Bind {
        address: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("unable to add post-start hook {0:?}: it is already registered")]
    DuplicatePostStartHook(String),
    #[error("PostStartHook {name:?} failed: {reason}")]
    PostStartHook { name: String, reason: String },
}

/// What a post-start hook is given.
#[derive(Clone, Debug)]
pub struct PostStartHookContext {
    /// Cancelled when the server begins to shut down; long hooks should stop then.
    pub stopping: CancellationToken,
    /// Clients of this server's own chain (upstream's `LoopbackClientConfig`).
    pub loopback: Loopback,
    /// Where a hook spawns work that must finish its shutdown steps (upstream's
    /// pre-shutdown hooks): once `stopping` is cancelled the server waits for these tasks,
    /// up to [`PRE_SHUTDOWN_TIMEOUT`], before it stops serving and its storage closes.
    pub tasks: TaskTracker,
    /// Cancelled once every post-start hook has finished: what readiness waits for. Work a
    /// hook starts that upstream runs only once `/readyz` passes waits for it.
    pub started: CancellationToken,
}

/// How long a shutdown waits for the hooks' tasks to finish their shutdown steps.
pub const PRE_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// A post-start hook's function.
type HookFn =
    Box<dyn FnOnce(PostStartHookContext) -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// A named post-start hook.
struct PostStartHook {
    name: String,
    run: HookFn,
}

/// Post-start hooks gathered before the server that runs them exists: each server of a
/// delegation chain collects its own, and the server at the head of the chain runs them all,
/// as upstream's delegation merges its servers' hooks.
#[derive(Default)]
pub struct PostStartHooks(Vec<PostStartHook>);

impl PostStartHooks {
    /// Adds a hook (see [`GenericApiServer::add_post_start_hook`]); a name may be used once.
    pub fn add<F, Fut>(&mut self, name: &str, hook: F) -> Result<(), ServerError>
    where
        F: FnOnce(PostStartHookContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        let run: HookFn = Box::new(move |context| Box::pin(hook(context)));
        self.push(PostStartHook {
            name: name.into(),
            run,
        })
    }

    /// Adds every hook of `other`, failing on a name used twice.
    pub fn extend(&mut self, other: PostStartHooks) -> Result<(), ServerError> {
        other.0.into_iter().try_for_each(|hook| self.push(hook))
    }

    fn push(&mut self, hook: PostStartHook) -> Result<(), ServerError> {
        if self.0.iter().any(|h| h.name == hook.name) {
            return Err(ServerError::DuplicatePostStartHook(hook.name));
        }
        self.0.push(hook);
        Ok(())
    }
}

/// A generic API server; see the module documentation.
pub struct GenericApiServer {
    config: ServerConfig,
    tls: Arc<rustls::ServerConfig>,
    route: Route,
    authentication: Authentication,
    authorizer: Arc<dyn Authorizer>,
    auditor: Option<Arc<Auditor>>,
    health: HealthChecks,
    /// API Priority and Fairness, when on.
    flow_control: Option<Arc<dyn FlowControl>>,
    hooks: PostStartHooks,
    metrics: Metrics,
    version: VersionInfo,
    documents: Vec<(String, &'static str, bytes::Bytes)>,
    handlers: Vec<(String, NonResourceHandler)>,
}

impl GenericApiServer {
    /// A server for `route`: client certificates authenticate when the config has a client
    /// CA, other requests are anonymous (if allowed), and [`AuthenticatedAuthorizer`]
    /// authorizes.
    pub fn new(config: ServerConfig, route: Route) -> Result<Self, ServerError> {
        let proxy_ca = config
            .request_header
            .as_ref()
            .map(|r| r.client_ca.as_slice());
        let tls = config.tls.server_config(proxy_ca.unwrap_or_default())?;
        let mut authenticators: Vec<Arc<dyn Authenticator>> = Vec::new();
        if let Some(request_header) = &config.request_header {
            let proxy =
                RequestHeaderAuthenticator::new(request_header.clone()).map_err(TlsError::from)?;
            authenticators.push(Arc::new(proxy));
        }
        if !config.tls.client_ca.is_empty() {
            let x509 = X509Authenticator::new(&config.tls.client_ca).map_err(TlsError::from)?;
            authenticators.push(Arc::new(x509));
        }
        let mut authentication = Authentication::new(authenticators, config.anonymous_auth);
        if let Some(request_header) = &config.request_header {
            authentication.set_identity_headers(request_header.clone());
        }
        Ok(GenericApiServer {
            authentication,
            config,
            tls,
            route,
            authorizer: Arc::new(AuthenticatedAuthorizer),
            auditor: None,
            health: HealthChecks::default(),
            flow_control: None,
            hooks: PostStartHooks::default(),
            metrics: Metrics::new(),
            version: VersionInfo::current(),
            documents: Vec::new(),
            handlers: Vec::new(),
        })
    }

    /// Serves a fixed document on GET `path` (a non-resource path, authorized as one).
    pub fn add_document(&mut self, path: &str, content_type: &'static str, body: Vec<u8>) {
        self.documents
            .push((path.to_string(), content_type, body.into()));
    }

    /// Serves `path` (a non-resource path, authorized as one, unlisted) by `handler`, for
    /// every method: what upstream's unlisted non-go-restful handlers are (the debug
    /// endpoints).
    pub fn add_non_resource_handler(&mut self, path: &str, handler: NonResourceHandler) {
        self.handlers.push((path.to_string(), handler));
    }

    /// Adds an authenticator, tried after the ones there (client certificates first).
    pub fn add_authenticator(&mut self, authenticator: Arc<dyn Authenticator>) {
        self.authentication.push(authenticator);
    }

    /// Replaces how requests are authenticated.
    pub fn set_authentication(&mut self, authentication: Authentication) {
        self.authentication = authentication;
    }

    /// Replaces the authorizer.
    pub fn set_authorizer(&mut self, authorizer: Arc<dyn Authorizer>) {
        self.authorizer = authorizer;
    }

    /// Admits requests by API Priority and Fairness instead of the max-in-flight limits.
    pub fn set_flow_control(&mut self, flow_control: Arc<dyn FlowControl>) {
        self.flow_control = Some(flow_control);
    }

    /// Audits requests with `auditor` (none are audited without one).
    pub fn set_auditor(&mut self, auditor: Arc<Auditor>) {
        auditor.metrics().register(self.metrics.registry_mut());
        self.auditor = Some(auditor);
    }

    /// The health checks, to add to before the server runs.
    pub fn health_checks_mut(&mut self) -> &mut HealthChecks {
        &mut self.health
    }

    /// The metrics registry, to register metrics in before the server runs.
    pub fn metrics_mut(&mut self) -> &mut Metrics {
        &mut self.metrics
    }

    /// Adds a hook run once the server is listening, with a `poststarthook/<name>` check on
    /// every health endpoint that fails until the hook has finished. A hook that fails stops
    /// the server (`serve` returns its error), as a failed hook is fatal upstream.
    pub fn add_post_start_hook<F, Fut>(&mut self, name: &str, hook: F) -> Result<(), ServerError>
    where
        F: FnOnce(PostStartHookContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.hooks.add(name, hook)
    }

    /// Adds the hooks gathered for this server (see [`PostStartHooks`]).
    pub fn add_post_start_hooks(&mut self, hooks: PostStartHooks) -> Result<(), ServerError> {
        self.hooks.extend(hooks)
    }

    /// Listens on the configured address; serving starts with [`ListeningServer::serve`].
    pub async fn bind(self) -> Result<ListeningServer, ServerError> {
        let address = self.config.listen_address();
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| ServerError::Bind { address, source })?;
        Ok(ListeningServer {
            server: self,
            listener,
            started: CancellationToken::new(),
        })
    }

    /// Builds the handler chain, the health endpoints included, and hands back the hooks and
    /// the `/readyz` endpoint.
    fn into_chain(
        self,
        stopping: CancellationToken,
        drain: CancellationToken,
    ) -> (
        Route,
        Vec<(PostStartHook, CancellationToken)>,
        HealthEndpoint,
    ) {
        let hooks: Vec<_> = self
            .hooks
            .0
            .into_iter()
            .map(|h| (h, CancellationToken::new()))
            .collect();
        let hook_checks: Vec<HealthCheck> = hooks
            .iter()
            .map(|(h, done)| HealthCheck::post_start_hook(&h.name, done.clone()))
            .collect();
        let health = self
            .health
            .endpoints(&hook_checks, HealthCheck::shutdown(stopping));
        let readyz = health[2].clone();
        let metrics = Arc::new(self.metrics);
        let endpoints = Endpoints {
            health,
            version: self.version,
            metrics: metrics.clone(),
            documents: self.documents,
            handlers: self.handlers,
        };
        let config = &self.config;
        // Flow control replaces the max-in-flight limits (0 is no limit).
        let max_in_flight = match self.flow_control {
            Some(_) => (0, 0),
            None => (
                config.max_requests_inflight,
                config.max_mutating_requests_inflight,
            ),
        };
        let chain = ServiceBuilder::new()
            .layer(RequestLogLayer::default())
            .layer(PanicRecoveryLayer::default())
            .layer(RequestInfoLayer::new(RequestInfoFactory::default()))
            .layer(PrettyJsonLayer::default())
            .layer(AuthenticationLayer::new(
                self.authentication.with_loopback(),
                self.auditor.clone(),
            ))
            .layer(AuditLayer::new(self.auditor))
            .layer(ImpersonationLayer::new(self.authorizer.clone()))
            .layer(FlowControlLayer::new(
                self.flow_control,
                config.request_timeout,
                metrics.clone(),
            ))
            .layer(MaxInFlightLayer::new(
                max_in_flight.0,
                max_in_flight.1,
                metrics.clone(),
            ))
            .layer(AuthorizationLayer::new(self.authorizer))
            .layer(MetricsLayer::new(metrics))
            .layer(TimeoutLayer::new(config.request_timeout, drain))
            .layer(NonResourceRouter::layer(endpoints))
            .service(self.route);
        (BoxCloneService::new(chain), hooks, readyz)
    }
}

/// A server that listens but does not serve yet.
pub struct ListeningServer {
    server: GenericApiServer,
    listener: TcpListener,
    /// Cancelled once every post-start hook has finished.
    started: CancellationToken,
}

impl ListeningServer {
    /// The address it listens on (the port the system chose, when the config asked for 0).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Resolves once every post-start hook [`serve`](Self::serve) starts has finished: the
    /// start is over (`/readyz` passes once its other checks hold too). Never, if the server
    /// stops first.
    pub fn started(&self) -> impl Future<Output = ()> + Send + use<> {
        self.started.clone().cancelled_owned()
    }

    /// Serves until `shutdown` resolves, then shuts down gracefully (see the module
    /// documentation). Post-start hooks start now.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServerError> {
        let ListeningServer {
            server,
            listener,
            started,
        } = self;
        let config = &server.config;
        let (shutdown_delay, shutdown_timeout) = (config.shutdown_delay, config.shutdown_timeout);
        let tls = server.tls.clone();
        let stopping = CancellationToken::new();
        let drain = CancellationToken::new();
        let (chain, hooks, readyz) = server.into_chain(stopping.clone(), drain.clone());
        if let Ok(address) = listener.local_addr() {
            tracing::debug!(%address, "Serving securely");
        }
        let loopback = Loopback::new(chain.clone(), drain.clone());
        let accepting = tokio::spawn(accept_loop(listener, tls, chain, drain.clone()));
        let tasks = TaskTracker::new();
        let hooks_done: Vec<_> = hooks.iter().map(|(_, done)| done.clone()).collect();
        let context = PostStartHookContext {
            stopping: stopping.clone(),
            loopback,
            tasks: tasks.clone(),
            started: started.clone(),
        };
        let mut running_hooks = start_hooks(hooks, &context);
        tokio::spawn(mark_started(hooks_done.clone(), stopping.clone(), started));
        crate::systemd::notify_ready(readyz, hooks_done, stopping.clone());
        let result = tokio::select! {
            () = shutdown => Ok(()),
            failure = first_hook_failure(&mut running_hooks) => Err(failure),
        };
        tracing::info!("Shutting down");
        crate::systemd::notify_stopping();
        stopping.cancel();
        // The hooks' shutdown steps, while the shutdown delay runs.
        tasks.close();
        let pre_shutdown = tokio::time::timeout(PRE_SHUTDOWN_TIMEOUT, tasks.wait());
        let (finished, ()) = tokio::join!(pre_shutdown, tokio::time::sleep(shutdown_delay));
        if finished.is_err() {
            tracing::warn!("post-start hooks' tasks did not finish their shutdown in time");
        }
        drain.cancel();
        if let Ok(connections) = accepting.await {
            wait_for_connections(connections, shutdown_timeout).await;
        }
        running_hooks.shutdown().await;
        result
    }
}

/// Cancels `started` once every hook has finished, unless `stopping` comes first.
async fn mark_started(
    hooks: Vec<CancellationToken>,
    stopping: CancellationToken,
    started: CancellationToken,
) {
    for done in &hooks {
        tokio::select! {
            _ = stopping.cancelled() => return,
            _ = done.cancelled() => {}
        }
    }
    started.cancel();
}

/// Starts every hook in its own task; each marks its health check done when it succeeds.
fn start_hooks(
    hooks: Vec<(PostStartHook, CancellationToken)>,
    context: &PostStartHookContext,
) -> JoinSet<Result<(), ServerError>> {
    let mut running = JoinSet::new();
    for (hook, done) in hooks {
        let context = context.clone();
        running.spawn(async move {
            let outcome = AssertUnwindSafe((hook.run)(context)).catch_unwind().await;
            let reason = match outcome {
                Ok(Ok(())) => {
                    done.cancel();
                    tracing::debug!(hook = hook.name, "post-start hook finished");
                    return Ok(());
                }
                Ok(Err(err)) => err.to_string(),
                Err(_) => "panicked".to_string(),
            };
            Err(ServerError::PostStartHook {
                name: hook.name,
                reason,
            })
        });
    }
    running
}

/// Resolves with the first hook failure; never resolves if every hook succeeds.
async fn first_hook_failure(running: &mut JoinSet<Result<(), ServerError>>) -> ServerError {
    while let Some(joined) = running.join_next().await {
        if let Ok(Err(failure)) = joined {
            return failure;
        }
    }
    std::future::pending().await
}
