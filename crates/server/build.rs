//! Records the compiler's version for `/version` (`goVersion`'s counterpart), the way Go
//! binaries know their toolchain.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=KAPI_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-changed=build.rs");
}
