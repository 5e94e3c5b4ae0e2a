//! [`ApiExtensionsServer`]: the second server of the delegation chain. It serves the
//! CustomResourceDefinition resource and, once each CRD is Established, its custom
//! resources, through the generic REST handlers; unknown resource paths answer 503 until its
//! CRD informer has synced, then go to its delegate (the end of the chain).

use std::sync::Arc;

use kapi_server::admission::AdmissionPlugin;
use kapi_server::encryption::EncryptionConfig;
use kapi_server::endpoints::{ApiHandler, Served};
use kapi_server::{PostStartHooks, ServerError};
use kapi_storage::Store;
use tokio::sync::watch;

use crate::admission::ForbidCreateWhileTerminating;
use crate::controller::{Controllers, Finalizer};
use crate::conversion::ServiceResolver;
use crate::schemas::CrdSchemas;

/// The apiextensions server: its handler and its controllers.
pub struct ApiExtensionsServer {
    handler: ApiHandler,
    controllers: Arc<Controllers>,
    synced: watch::Receiver<bool>,
}

impl ApiExtensionsServer {
    /// The server over `store` (keys under `storage_prefix`), encrypting the resources
    /// `encryption` names (custom resources by group and plural). `resolver` finds the
    /// conversion webhooks that CRDs name by Service.
    pub fn new(
        store: Arc<dyn Store>,
        storage_prefix: &str,
        encryption: Option<Arc<EncryptionConfig>>,
        resolver: Arc<dyn ServiceResolver>,
    ) -> ApiExtensionsServer {
        let (synced_tx, synced) = watch::channel(false);
        let schemas = Arc::new(CrdSchemas::default());
        let handler = ApiHandler::builder(store, storage_prefix)
            .encryption(encryption)
            .resources([crate::crd::definition()])
            .schemas(schemas.clone())
            .unserved_unavailable_until(synced.clone())
            .build();
        let crds = handler
            .served("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .expect("the apiextensions handler serves customresourcedefinitions");
        let finalizer = Finalizer {
            crds: crds.clone(),
            handler: handler.clone(),
            running: Arc::default(),
        };
        let controllers = Arc::new(Controllers {
            crds,
            handler: handler.clone(),
            finalizer,
            schemas,
            resolver,
            synced: synced_tx,
        });
        ApiExtensionsServer {
            handler,
            controllers,
            synced,
        }
    }

    /// The handler to give the built-in server as its delegate.
    pub fn handler(&self) -> ApiHandler {
        self.handler.clone()
    }

    /// The served CustomResourceDefinitions (for other in-process users).
    pub fn crds(&self) -> Served {
        self.controllers.crds.clone()
    }

    /// Sets the admission plugins custom resources and CRDs go through (those of the
    /// chain, e.g. NamespaceLifecycle), followed by this server's own step (no creates while
    /// a CRD is terminating).
    pub fn set_admission(&self, mut plugins: Vec<Arc<dyn AdmissionPlugin>>) {
        plugins.push(Arc::new(ForbidCreateWhileTerminating {
            crds: self.controllers.crds.clone(),
        }));
        self.handler.set_admission(plugins);
    }

    /// This server's post-start hooks, with upstream's names: `start-apiextensions-controllers`
    /// starts the CRD controllers; `crd-informer-synced` finishes once the CRDs stored at
    /// start are served (so `/readyz` waits for them, and unknown paths stop answering 503).
    pub fn post_start_hooks(&self) -> Result<PostStartHooks, ServerError> {
        let mut hooks = PostStartHooks::default();
        let controllers = self.controllers.clone();
        hooks.add(
            "start-apiextensions-controllers",
            move |context| async move {
                tokio::spawn(controllers.run(context.stopping.clone()));
                Ok(())
            },
        )?;
        let mut synced = self.synced.clone();
        hooks.add("crd-informer-synced", move |_| async move {
            synced
                .wait_for(|synced| *synced)
                .await
                .map_err(|_| "the CRD controllers stopped before syncing")?;
            Ok(())
        })?;
        Ok(hooks)
    }
}
