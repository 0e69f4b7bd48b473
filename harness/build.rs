//! Compiles the sanitizer hooks (C, because they refer weakly to the sanitizer runtime, which
//! only fuzzers built with `-fsanitize=address` link).

fn main() {
    println!("cargo:rerun-if-changed=src/sanitizers.c");
    cc::Build::new()
        .file("src/sanitizers.c")
        .compile("labelfuzz_sanitizer_hooks");
}
