//! Compiles the sanitizer hooks (C, because they refer weakly to the sanitizer runtime, which
//! only fuzzers built with `-fsanitize=address` link).

fn main() {
    // Where the sources are, for cargo-labelfuzz's build script (DEP_LABELFUZZ_HARNESS_SOURCE).
    println!(
        "cargo:source={}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()
    );
    println!("cargo:rerun-if-changed=src/sanitizers.c");
    cc::Build::new()
        .file("src/sanitizers.c")
        .compile("labelfuzz_sanitizer_hooks");
}
