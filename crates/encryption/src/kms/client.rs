//! The gRPC client of a KMS v2 plugin: plaintext HTTP/2 over the Unix socket of the
//! provider's `endpoint` (`unix:///path`, or `unix:///@name` for an abstract socket), the
//! `:authority` `localhost`, each call bounded by the provider's `timeout`, as
//! kube-apiserver's `kmsv2/grpc_service.go` calls it. Every call is timed in
//! `apiserver_envelope_encryption_kms_operations_latency_seconds`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http::uri::PathAndQuery;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint};

use super::proto;
use crate::metrics::Metrics;

/// A failed call, as Go's gRPC prints it (`rpc error: code = ... desc = ...`), with the
/// code's name for the metrics' `status` label.
#[derive(Debug, Clone)]
pub(crate) struct CallError {
    pub message: String,
    pub code: &'static str,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A connection (made on first use, remade when lost) to one plugin.
#[derive(Clone)]
pub(crate) struct Client {
    channel: Channel,
    timeout: Duration,
    provider: String,
    metrics: Metrics,
}

/// The socket path of a `unix://` endpoint, as upstream's `ParseEndpoint`: the URL's path,
/// an abstract socket's name keeping its `@`.
pub(crate) fn socket_path(endpoint: &str) -> Result<String, String> {
    let rest = endpoint
        .strip_prefix("unix://")
        .ok_or_else(|| format!("unsupported scheme for remote KMS provider: {endpoint:?}"))?;
    // `unix://host/path`: the path starts at the first slash.
    let path = match rest.find('/') {
        Some(at) => &rest[at..],
        None => "",
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    if path.is_empty() {
        return Err(format!("invalid endpoint {endpoint:?}: it names no socket"));
    }
    Ok(match path.strip_prefix("/@") {
        Some(name) => format!("@{name}"),
        None => path.to_string(),
    })
}

impl Client {
    /// A client of the plugin listening at `socket` (a path, or `@name`).
    pub(crate) fn new(
        socket: String,
        timeout: Duration,
        provider: &str,
        metrics: Metrics,
    ) -> Client {
        let channel = Endpoint::from_static("http://localhost")
            .connect_timeout(timeout)
            .connect_with_connector_lazy(tower::service_fn(move |_: http::Uri| {
                let socket = socket.clone();
                async move { connect(&socket).await.map(TokioIo::new) }
            }));
        Client {
            channel,
            timeout,
            provider: provider.to_string(),
            metrics,
        }
    }

    /// How long each call may take.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) async fn status(&self) -> Result<proto::StatusResponse, CallError> {
        self.call(proto::STATUS, proto::StatusRequest {}).await
    }

    pub(crate) async fn encrypt(
        &self,
        uid: String,
        plaintext: Vec<u8>,
    ) -> Result<proto::EncryptResponse, CallError> {
        self.call(proto::ENCRYPT, proto::EncryptRequest { plaintext, uid })
            .await
    }

    pub(crate) async fn decrypt(
        &self,
        request: proto::DecryptRequest,
    ) -> Result<proto::DecryptResponse, CallError> {
        self.call(proto::DECRYPT, request).await
    }

    /// One unary call, waiting for the connection (gRPC's `WaitForReady`) within the
    /// deadline.
    async fn call<Req, Resp>(&self, method: &'static str, request: Req) -> Result<Resp, CallError>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let started = Instant::now();
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        let call = async {
            grpc.ready()
                .await
                .map_err(|err| tonic::Status::unavailable(err.to_string()))?;
            let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
            let mut request = tonic::Request::new(request);
            request.set_timeout(self.timeout);
            grpc.unary(request, PathAndQuery::from_static(method), codec)
                .await
        };
        let outcome = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(status),
            Err(_) => Err(tonic::Status::deadline_exceeded(
                "context deadline exceeded",
            )),
        };
        let code = match &outcome {
            Ok(_) => "OK",
            Err(status) => code_name(status.code()),
        };
        self.metrics
            .kms_operation(&self.provider, method, code, started.elapsed());
        outcome.map_err(|status| CallError {
            message: format!(
                "rpc error: code = {} desc = {}",
                code_name(status.code()),
                status.message()
            ),
            code: code_name(status.code()),
        })
    }
}

/// A connection to `socket`: a path, or `@name` for Linux's abstract namespace.
async fn connect(socket: &str) -> std::io::Result<UnixStream> {
    match socket.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt as _;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            let stream = std::os::unix::net::UnixStream::connect_addr(&address)?;
            stream.set_nonblocking(true)?;
            UnixStream::from_std(stream)
        }
        None => UnixStream::connect(PathBuf::from(socket)).await,
    }
}

/// A gRPC code's name as Go prints it.
pub(crate) fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "Canceled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_name_sockets_as_upstream_parses_them() {
        assert_eq!(
            socket_path("unix:///tmp/kms.sock").unwrap(),
            "/tmp/kms.sock"
        );
        assert_eq!(
            socket_path("unix:///@kms-provider.sock").unwrap(),
            "@kms-provider.sock"
        );
        assert_eq!(
            socket_path("unix://localhost/tmp/k.sock").unwrap(),
            "/tmp/k.sock"
        );
        assert!(socket_path("unix://").is_err());
        assert!(socket_path("tcp://x").is_err());
    }
}
