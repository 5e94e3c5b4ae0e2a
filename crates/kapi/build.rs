//! Links the `kapi` binary as Go links kube-apiserver, and packs its start-up code.
//!
//! - **Position-dependent** (`-no-pie`): a position-independent kapi carries some 70,000
//!   relative relocations, one for each pointer in its static tables (the built-in catalog,
//!   the protobuf schema, the OpenAPI extensions): the dynamic loader applies them at every
//!   exec, dirtying about 1 MiB of `.data.rel.ro` and reading 1.7 MB of relocation records.
//!   Linked at a fixed address there are none, and kapi idles about 3 MiB smaller
//!   (docs/PERFORMANCE.md, "Footprint: a position-dependent binary"). The cost is that the
//!   binary's own code and data are not placed at a random address; shared libraries, the
//!   heap and the stacks still are.
//! - **Start-up code first** (`--symbol-ordering-file=link-order.txt`): the kernel maps an
//!   executable's code in 64 KiB windows around each page it faults in, and the functions a
//!   start runs are spread over the whole text, so nearly all of it became resident. The
//!   linker places the functions `tools/gen_link_order.py` recorded first, together
//!   (docs/PERFORMANCE.md, "Footprint: start-up code packed"). The names stay true as code
//!   changes because release builds make one code unit per crate (the workspace's
//!   Cargo.toml); names the binary no longer has (after a toolchain or dependency update)
//!   are ignored, and the script's `--check` says how stale the file is.
//! - **Start-up code released once started**: the functions only a start runs come first,
//!   between two marker functions; when the link order has both, this sets the
//!   `kapi_startup_code_packed` cfg, under which `src/startup_code.rs` drops their pages
//!   once the server's post-start hooks have finished.

use std::path::Path;

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    // Linux only: elsewhere (macOS) executables must be position-independent.
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("link-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo::rustc-check-cfg=cfg(kapi_startup_code_packed)");
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    if release && links_with_default_lld() && order.exists() {
        if has_startup_markers(&order) {
            println!("cargo:rustc-cfg=kapi_startup_code_packed");
        }
        // -Xlinker passes each argument whole: `-Wl,` would split a path at its commas.
        let file = format!("--symbol-ordering-file={}", order.display());
        for arg in [file.as_str(), "--no-warn-symbol-ordering"] {
            println!("cargo:rustc-link-arg-bins=-Xlinker");
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}

/// Whether the link order bounds the start-up code with `src/startup_code.rs`'s markers.
fn has_startup_markers(order: &Path) -> bool {
    let names = std::fs::read_to_string(order).unwrap_or_default();
    let listed = |marker: &str| names.lines().any(|line| line.trim() == marker);
    listed("kapi_startup_code_begin") && listed("kapi_startup_code_end")
}

/// Whether the binary is linked by the toolchain's own LLD, which knows
/// `--symbol-ordering-file`: rustc's default for x86_64-unknown-linux-gnu since 1.90 (the
/// workspace's minimum), unless the flags or cargo's configuration (`RUSTC_LINKER`, set
/// from `target.<triple>.linker`) choose another linker.
fn links_with_default_lld() -> bool {
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu")
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !["fuse-ld", "linker", "link-self-contained"]
            .iter()
            .any(|flag| flags.contains(flag))
}
