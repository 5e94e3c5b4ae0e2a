//! kapi, a Kubernetes API server: the binary (`src/main.rs`) parses its [`flags`] and calls
//! the control plane ([`kapi_controlplane`]), which integration tests also start in-process
//! through [`serve`].

pub mod allocator;
pub mod flags;
pub mod logging;
pub mod startup_code;

pub use kapi_controlplane::{serve, store_command};
