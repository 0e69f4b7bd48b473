//! Builds the weak no-op SanitizerCoverage callbacks linked into instrumented programs that are
//! not fuzzers (configure probes, a library's own tools), so ordinary builds keep linking.

fn main() {
    println!("cargo:rerun-if-changed=src/sancov_stubs.c");
    cc::Build::new()
        .file("src/sancov_stubs.c")
        // Not linked into the wrapper itself: the wrapper passes the archive to clang.
        .cargo_metadata(false)
        .compile("labelfuzz_sancov_stubs");
}
