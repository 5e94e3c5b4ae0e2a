//! A KMS v2 plugin for the tests, served over gRPC on a Unix socket as real plugins are.
//! Like upstream's test plugin it "encrypts" by base64 (so kube-apiserver's recorded
//! values, made with that plugin, can be read), and it checks what a plugin may rely on: a
//! UID on every call, the `:authority` `localhost`, and that Decrypt names a key ID the
//! plugin knows. Its key ID and health can be changed, and its calls are counted.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use base64::Engine as _;
use futures::future::BoxFuture;
use kapi_encryption::kms::proto::{
    DECRYPT, DecryptRequest, DecryptResponse, ENCRYPT, EncryptRequest, EncryptResponse, SERVICE,
    STATUS, StatusRequest, StatusResponse,
};
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::body::Body;
use tonic::{Request, Response, Status};

/// The annotation the plugin adds to what it encrypts, as upstream's test plugin.
pub const ANNOTATION: &str = "local-kek.kms.kubernetes.io";

/// What the plugin answers and has been asked.
#[derive(Debug)]
struct State {
    key_id: String,
    /// Key IDs the plugin has encrypted with, or been told of: Decrypt refuses others.
    known: Vec<String>,
    healthz: String,
    calls: BTreeMap<&'static str, usize>,
}

/// A running plugin; stopped when dropped.
pub struct KmsPlugin {
    socket: PathBuf,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl KmsPlugin {
    /// A plugin listening on `socket` (created; removed when the plugin stops), encrypting
    /// with key ID `key_id`.
    pub fn start(socket: &Path, key_id: &str) -> KmsPlugin {
        let state = Arc::new(Mutex::new(State {
            key_id: key_id.to_string(),
            known: vec![key_id.to_string()],
            healthz: "ok".to_string(),
            calls: BTreeMap::new(),
        }));
        let mut plugin = KmsPlugin {
            socket: socket.to_path_buf(),
            state,
            stop: None,
        };
        plugin.resume();
        plugin
    }

    /// Serves again after [`KmsPlugin::pause`].
    pub fn resume(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let listener = UnixListener::bind(&self.socket).expect("bind the plugin's socket");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = PluginService(self.state.clone());
        tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
                    let _ = stopped.await;
                })
                .await;
            served.expect("the KMS plugin serves");
        });
        self.stop = Some(stop);
    }

    /// Stops serving (the socket removed), as a plugin that died.
    pub fn pause(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// The endpoint to configure: `unix://<socket>`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Encrypts with `key_id` from now on (the previous one still decrypts).
    pub fn rotate(&self, key_id: &str) {
        let mut state = self.state.lock().unwrap();
        state.key_id = key_id.to_string();
        state.known.push(key_id.to_string());
    }

    /// Decrypts values of `key_id` too (one the plugin never encrypted with).
    pub fn know(&self, key_id: &str) {
        self.state.lock().unwrap().known.push(key_id.to_string());
    }

    /// What Status reports as health (`ok` when healthy).
    pub fn set_healthz(&self, healthz: &str) {
        self.state.lock().unwrap().healthz = healthz.to_string();
    }

    /// How many times `method` (`Status`, `Encrypt`, `Decrypt`) was called.
    pub fn calls(&self, method: &str) -> usize {
        let state = self.state.lock().unwrap();
        let path = format!("/{SERVICE}/{method}");
        state
            .calls
            .iter()
            .find(|(p, _)| **p == path)
            .map_or(0, |(_, n)| *n)
    }
}

impl Drop for KmsPlugin {
    fn drop(&mut self) {
        self.pause();
    }
}

/// The gRPC service over the plugin's state.
#[derive(Clone)]
struct PluginService(Arc<Mutex<State>>);

impl tonic::server::NamedService for PluginService {
    const NAME: &'static str = SERVICE;
}

impl tower::Service<http::Request<Body>> for PluginService {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            let path = request.uri().path().to_string();
            let localhost = request.uri().host() == Some("localhost");
            let method = [STATUS, ENCRYPT, DECRYPT].into_iter().find(|m| *m == path);
            if let Some(method) = method {
                *state.lock().unwrap().calls.entry(method).or_default() += 1;
            }
            Ok(match method {
                _ if !localhost => {
                    Status::invalid_argument("the authority must be localhost").into_http()
                }
                Some(STATUS) => unary(request, move |_: StatusRequest| status(&state)).await,
                Some(ENCRYPT) => unary(request, move |req| encrypt(&state, req)).await,
                Some(DECRYPT) => unary(request, move |req| decrypt(&state, req)).await,
                _ => Status::unimplemented(path).into_http(),
            })
        })
    }
}

/// Answers a unary call with `answer`.
async fn unary<Req, Resp>(
    request: http::Request<Body>,
    answer: impl FnOnce(Req) -> Result<Resp, Status> + Send + 'static,
) -> http::Response<Body>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
{
    let mut answer = Some(answer);
    let service = tower::service_fn(move |request: Request<Req>| {
        let answer = answer.take().expect("one call");
        std::future::ready(answer(request.into_inner()).map(Response::new))
    });
    let codec = tonic_prost::ProstCodec::<Resp, Req>::default();
    tonic::server::Grpc::new(codec)
        .unary(service, request)
        .await
}

fn status(state: &Mutex<State>) -> Result<StatusResponse, Status> {
    let state = state.lock().unwrap();
    Ok(StatusResponse {
        version: "v2".into(),
        healthz: state.healthz.clone(),
        key_id: state.key_id.clone(),
    })
}

fn encrypt(state: &Mutex<State>, request: EncryptRequest) -> Result<EncryptResponse, Status> {
    if request.uid.is_empty() {
        return Err(Status::invalid_argument("uid is required"));
    }
    let state = state.lock().unwrap();
    let ciphertext = base64::engine::general_purpose::STANDARD.encode(&request.plaintext);
    Ok(EncryptResponse {
        ciphertext: ciphertext.into_bytes(),
        key_id: state.key_id.clone(),
        annotations: BTreeMap::from([(ANNOTATION.to_string(), b"encrypted-local-kek".to_vec())]),
    })
}

fn decrypt(state: &Mutex<State>, request: DecryptRequest) -> Result<DecryptResponse, Status> {
    if request.uid.is_empty() {
        return Err(Status::invalid_argument("uid is required"));
    }
    if !state.lock().unwrap().known.contains(&request.key_id) {
        return Err(Status::not_found(format!(
            "unknown key ID {:?}",
            request.key_id
        )));
    }
    let plaintext = base64::engine::general_purpose::STANDARD
        .decode(&request.ciphertext)
        .map_err(|err| Status::invalid_argument(err.to_string()))?;
    Ok(DecryptResponse { plaintext })
}
