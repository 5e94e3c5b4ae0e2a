//! kapi's end-to-end tests: the real `kapi` binary, served on loopback and driven by real
//! clients (kubectl, kube-rs, raw HTTP/2 and HTTP/1.1), on the embedded store and on etcd.
//!
//! One test binary for all of them, so the workspace links the server into a test once
//! instead of once per file: that keeps `cargo test` fast and its target directory small.
//! Select one area with its module name, e.g. `cargo test -p kapi --test e2e crds::`.

#[macro_use]
mod common;

mod aggregated;
mod aggregator;
mod apply;
mod audit;
mod authn;
mod authorization;
mod bootstrap_tokens;
mod builtin_admission;
mod builtin_api;
mod certificates;
mod controllers;
mod crd_conversion;
mod crds;
mod discovery;
mod encryption;
mod endpoints;
mod errors;
mod event_ttl;
mod flowcontrol;
mod kms;
mod kube_rs;
mod kubectl;
mod openapi;
mod pod_lifecycle;
mod policies;
mod protobuf;
mod reliability;
mod replicas;
mod resources;
mod round_trip;
mod serve;
mod services;
mod storage_media;
mod subresources;
mod webhooks;
mod workloads;
mod yaml;
