//! kapi, a Kubernetes API server, as a library: the binary (`src/main.rs`) parses its flags
//! and calls [`serve::run`]; integration tests start servers in-process with [`serve::start`].

mod admission;
mod audit;
mod authentication;
pub mod authorization;
mod data_dir;
pub mod flags;
pub mod logging;
mod pki;
mod resolver;
pub mod serve;
mod storage;
pub mod store_command;
