//! Compiles the C parts: the sanitizer hooks (C, because they refer weakly to the sanitizer
//! runtime, which only fuzzers built with `-fsanitize=address` link) and the weak default of the
//! typed-target hook (which only Rust fuzz crates with an `Arbitrary` target define).

fn main() {
    // Where the sources are, for cargo-labelfuzz's build script (DEP_LABELFUZZ_HARNESS_SOURCE).
    let source = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:source={source}");
    // By absolute path: a build directory shared with another checkout (CI's clean clone)
    // must not keep handing out that checkout's path once it is gone.
    println!("cargo:rerun-if-changed={source}/Cargo.toml");
    println!("cargo:rerun-if-changed=src/sanitizers.c");
    println!("cargo:rerun-if-changed=src/typed_target.c");
    cc::Build::new()
        .file("src/sanitizers.c")
        .file("src/typed_target.c")
        .compile("labelfuzz_sanitizer_hooks");
}
