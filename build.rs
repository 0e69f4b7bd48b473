//! Records which rustc built labelfuzz, and compiles the comparison interceptors
//! (`src/cmp_interceptors.c`) and SanitizerCoverage's comparison callbacks (`src/sancov_cmp.c`).
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

    // The comparison interceptors go into every fuzzer whole: nothing refers to them by name,
    // they replace libc's routines by being linked into the executable.
    println!("cargo:rerun-if-changed=src/cmp_interceptors.c");
    println!("cargo:rerun-if-changed=src/sancov_cmp.c");
    println!("cargo:rerun-if-changed=src/mine_trace.c");
    cc::Build::new()
        .file("src/cmp_interceptors.c")
        .file("src/sancov_cmp.c")
        .file("src/mine_trace.c")
        .flag("-fno-omit-frame-pointer")
        .flag("-Wno-frame-address")
        .opt_level(3)
        .flag("-fno-builtin")
        .link_lib_modifier("+whole-archive")
        .compile("labelfuzz_cmp_interceptors");
}
