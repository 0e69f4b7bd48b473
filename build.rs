//! Records which rustc built labelfuzz (the C parts are `labelfuzz-runtime`'s).
//!
//! SanitizerCoverage instrumentation of a Rust target is done by the same rustc (and so the same
//! LLVM) that compiles labelfuzz; when coverage looks wrong, the first question is which
//! toolchain produced the binary. `labelfuzz::BUILD_INFO` carries the answer into every fuzzer's
//! `--version` output.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown rustc".into());
    println!("cargo:rustc-env=LABELFUZZ_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
    // Where the sources are, for cargo-labelfuzz's build script (DEP_LABELFUZZ_SOURCE): the tool
    // carries them to build the runtime wherever it is installed.
    let source = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:source={source}");
    // By absolute path: a build directory shared with another checkout (CI's clean clone)
    // must not keep handing out that checkout's path once it is gone.
    println!("cargo:rerun-if-changed={source}/Cargo.toml");
}
