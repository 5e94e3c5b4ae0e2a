//! kapi's control plane as a library, the role kube-apiserver's `app` and `controlplane`
//! packages play upstream: from [`options::ServeOptions`] it assembles the server chain
//! (kube-apiserver's built-in API delegating to apiextensions, which delegates to the final
//! 404) with its PKI, storage, authentication, authorization, admission and audit, registers
//! each server's post-start hooks and in-process controllers, and serves it
//! ([`serve::start`], [`serve::run`]). The `kapi` binary parses flags and calls it; tests
//! start servers in-process with it.

mod addresses;
mod admission;
mod audit;
mod authentication;
mod authorization;
mod builtin_resources;
mod chain;
mod config;
mod controllers;
mod data_dir;
mod kube_apiserver;
pub mod options;
mod pki;
mod resolver;
pub mod serve;
mod storage;
pub mod store_command;
