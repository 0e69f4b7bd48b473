//! Links the labelfuzz runtime: `LABELFUZZ_RUNTIME` names the directory that `cargo labelfuzz`
//! (or `labelfuzz_build::Runtime`) built it into, holding `liblabelfuzz_rt.a` and
//! `native-libs.txt` (the system libraries it needs, one `-l` flag each).

use std::path::PathBuf;

fn main() {
    // Where the sources are, for cargo-labelfuzz's build script (DEP_LABELFUZZ_SYS_SOURCE).
    let source = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:source={source}");
    // By absolute path: a build directory shared with another checkout (CI's clean clone)
    // must not keep handing out that checkout's path once it is gone.
    println!("cargo:rerun-if-changed={source}/Cargo.toml");
    println!("cargo:rerun-if-env-changed=LABELFUZZ_RUNTIME");
    if std::env::var_os("CARGO_FEATURE_LINK_RUNTIME").is_none() {
        return;
    }
    // Unset outside fuzz builds (this crate's own tests and lints, cargo-labelfuzz embedding
    // its sources): nothing to link then. A fuzz binary built by hand without it fails to link
    // with `labelfuzz_rt_panicked` undefined: build it with `cargo labelfuzz build`.
    let Some(dir) = std::env::var_os("LABELFUZZ_RUNTIME").map(PathBuf::from) else {
        return;
    };
    let archive = dir.join("liblabelfuzz_rt.a");
    if !archive.is_file() {
        panic!(
            "labelfuzz-sys: LABELFUZZ_RUNTIME={} holds no liblabelfuzz_rt.a",
            dir.display()
        );
    }
    println!("cargo:rerun-if-changed={}", archive.display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static:+whole-archive=labelfuzz_rt");
    let native = dir.join("native-libs.txt");
    println!("cargo:rerun-if-changed={}", native.display());
    let libs = std::fs::read_to_string(&native).unwrap_or_default();
    for lib in libs
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-l"))
    {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}
