//! Links the `kapi` binary as a position-dependent executable (`-no-pie`), as Go links
//! kube-apiserver by default.
//!
//! A position-independent kapi carries some 70,000 relative relocations, one for each
//! pointer in its static tables (the built-in catalog, the protobuf schema, the OpenAPI
//! extensions): the dynamic loader applies them at every exec, dirtying about 1 MiB of
//! `.data.rel.ro` and reading 1.7 MB of relocation records. Linked at a fixed address there
//! are none, and kapi idles about 3 MiB smaller (docs/PERFORMANCE.md, "Footprint: a
//! position-dependent binary"). The cost is that the binary's own code and data are not
//! placed at a random address; shared libraries, the heap and the stacks still are.

fn main() {
    // Linux only: elsewhere (macOS) executables must be position-independent.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
